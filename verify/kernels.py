"""Per-kernel certificates (issue 12, part 4, in part): what the compiler relies on for one
compiled kernel, proved again and shown, with a digest.

``prove_kernel(jitfn, *examples)`` traces ``jitfn`` on the examples, plans the kernel the
compiler would build (the same ``Kernel`` as ``sf.jit``, with the proved rule instances and
the operator check) while recording every order question the planner asks
(``compiler.plan.order.recording``), and collects:

* ``entry ...``: for every shape operator in the compiled program, its entry's obligations
  on the node's structure with sizes abstracted (``verify.entries.prove_entry``: bijection
  between domain and image, bounds, disjoint pieces, cover, divisions, index magnitude) —
  built-in entries included, though CI proves them over their configurations;
* ``function NAME (KIND)``: for every elementwise function the program applies, its zero
  algebra (``verify.zero_algebra``) in the kind it computes in (``f``, ``i``, ``b``); a
  kind the C reading does not model (complex) is ``unknown``, never proved;
* ``coverage STAGE: VIEW``: per stage of the kernel (its temporaries, then ``result``) and
  per sparse view its plan streams, that the composed pieces write exactly the program's
  support: in bounds, no collisions, and forward and backward maps inverse on the owned
  coordinates (``verify.coverage``; a reducing stream: bounds only);
* ``reads STAGE``: every read of a located (dense) operand is within its bounds where the
  guards on its path hold (``verify.reads``);
* ``lattice STAGE``: the merge lattice a co-iteration iterates, relying on the functions'
  rows above (``not relied on`` for a dense-valued co-iteration);
* ``reorder STAGE (bucket|scatter)``: the counting-sort placement a bucket or scatter
  assembly makes is an injective, lexicographic map into ``[0, nnz)``
  (``verify.coverage.prove_reorder``, for all row counts);
* ``order ...``: every order question the planner asked while planning this kernel. An
  answer "proved" is one the plan may act on — appending a stream without sorting because
  its entries arrive in strictly increasing output storage order (which also means no two
  entries collide), or bucketing by the outer coordinate because they arrive in order
  within each — and it is proved again here without the planner's cache. An answer "not
  proved" is listed as ``not relied on``: the kernel sorts or buckets there, which needs no
  proof. (A proved answer the plan did not end up using is still listed: the list is a
  superset of what the plan relies on.)

Each obligation has its status and time; :attr:`KernelCertificate.digest` is a SHA-256 of
the program, the output format and every obligation's statement and status (no times), and
the certified kernel's header carries it: ``# certificate: sha256:<digest>`` in every
stage (``cert.source``; ``sf.jit(fn, certify=True)`` certifies the kernels it compiles).

Not covered: the lowering from the plan to loops (the generated C is not read back); the
exact variant a kernel falls back to when an operand is not finite (another plan, planned on
first need, uncertified); a contraction's row sort (library code). ``sparsefold prove
--kernel EXPR -i NAME=FORMAT:SHAPE`` prints a certificate from the shell.
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass, field

import numpy as np

from sparsefold.spec import sizes as sz
from sparsefold.spec.ir import ShapeOp
from sparsefold.spec.printer import show_program, topological
from sparsefold.verify.results import PROVED, REFUTED

__all__ = ["KernelObligation", "KernelCertificate", "prove_kernel", "certify_program",
           "NOT_RELIED_ON"]

NOT_RELIED_ON = "not relied on"


@dataclass
class KernelObligation:
    name: str
    statement: str
    status: str
    seconds: float


@dataclass
class KernelCertificate:
    program: str
    out: str
    strategy: str
    obligations: list[KernelObligation] = field(default_factory=list)
    kernel: object = field(default=None, repr=False, compare=False)
    values: dict = field(default_factory=dict, repr=False, compare=False)

    @property
    def status(self) -> str:
        relied = [o.status for o in self.obligations if o.status != NOT_RELIED_ON]
        for s in (REFUTED, "unknown", "bounded", "vacuous", "probed"):
            if s in relied:  # probed: a fact held on every sample, not proved
                return s
        return PROVED

    @property
    def digest(self) -> str:
        h = hashlib.sha256()
        h.update(self.program.encode())
        h.update(self.out.encode())
        for o in self.obligations:
            h.update(f"\0{o.name}\0{o.statement}\0{o.status}".encode())
        return h.hexdigest()

    @property
    def header_line(self) -> str:
        """The line every stage's kernel header carries."""
        return f"# certificate: sha256:{self.digest}"

    @property
    def source(self) -> str:
        """The Cython of the certified kernel (every stage), for the example arguments."""
        if self.kernel is None:
            raise ValueError("this certificate was not made by prove_kernel")
        return self.kernel.source_for(self.values)

    def __str__(self) -> str:
        lines = [f"kernel certificate: {self.status}  sha256:{self.digest[:16]}  "
                 f"out={self.out}  strategy={self.strategy}",
                 *("    " + line for line in self.program.splitlines())]
        for o in self.obligations:
            lines.append(f"  {o.name:<32} {o.status:<14} {o.seconds:6.3f}s  {o.statement}")
        return "\n".join(lines)


def _entry_obligations(program) -> list[KernelObligation]:
    from sparsefold.verify.entries import prove_entry
    out, seen = [], set()
    for n in topological(program):
        if not isinstance(n, ShapeOp):
            continue
        t0 = time.perf_counter()
        result = prove_entry(n)
        if result.name in seen:
            continue
        seen.add(result.name)
        names = ", ".join(o.name for o in result.obligations)
        failed = "; ".join(f"{o.name}: {o.status}" for o in result.obligations
                           if o.status != PROVED)
        out.append(KernelObligation(f"entry {type(n).__name__.lower()}",
                                    f"{result.name}: {names}" + (f" [{failed}]" if failed
                                                                 else ""),
                                    result.status, time.perf_counter() - t0))
    return out


def _function_obligations(program) -> list[KernelObligation]:
    """The zero algebra of every function the program applies, in the dtype kind the kernel
    computes it in: proved by Z3 where it reads that kind, ``probed`` (numerically) where it
    does not (``verify.zero_probe``), never proved on a guess."""
    from sparsefold.compiler.lower.values import loop_dtypes
    from sparsefold.spec.compute import Map
    from sparsefold.verify.zero_algebra import prove_function
    out, seen = [], set()
    for n in topological(program):
        if not isinstance(n, Map):
            continue
        kind = loop_dtypes(n)[0][0].kind
        if (n.fn.name, kind) in seen:
            continue
        seen.add((n.fn.name, kind))
        t0 = time.perf_counter()
        report = prove_function(n.fn)
        status = report.status_in(kind)
        facts = [f for f in report.facts if f.kind == kind]
        statement = ", ".join(f"{f.fact} {f.status}" for f in facts) or \
            f"kind {kind} not read: {report.unread.get(kind, 'no reading of this kind')}"
        out.append(KernelObligation(f"function {n.fn.name} ({kind})", statement, status,
                                    time.perf_counter() - t0))
    return out


def _views(stage) -> list[tuple[str, tuple, tuple, bool]]:
    """(name, pieces, shape, accumulated) of every sparse view the stage's plan streams (a
    reducing stream's pieces map to the reduction's output coordinates: accumulated)."""
    from sparsefold.compiler.plan.plans import CoiterPlan, ContractPlan, StreamPlan
    p = stage.plan
    if isinstance(p, StreamPlan):
        return [("stream", p.pieces, tuple(stage.program.shape), p.reduction is not None)]
    if isinstance(p, CoiterPlan):
        return [(f"operand[{i}] {o.name}", o.pieces, tuple(o.node.shape), False)
                for i, o in enumerate(p.operands)]
    if isinstance(p, ContractPlan):
        return [(f"{role} {o.name}", o.pieces, tuple(o.node.shape), False)
                for role, o in (("driver", p.driver), ("located", p.located))]
    return []


def _worst(statuses) -> str:
    statuses = set(statuses)
    for s in (REFUTED, "unknown", "probed"):  # probed: held numerically, not proved
        if s in statuses:
            return s
    return PROVED


def _reads_obligation(name: str, stage) -> KernelObligation | None:
    """Every located (dense) read of the stage within its guards (``verify.reads``)."""
    from sparsefold.compiler.plan.plans import CoiterPlan, StreamPlan
    from sparsefold.verify.reads import _broadcast, located_reads, prove_reads
    t0 = time.perf_counter()
    p, results = stage.plan, []
    if isinstance(p, StreamPlan):
        for piece in p.pieces:
            domain = [sz.lt(c, n) for c, n in zip(sz.in_coords(piece.leaf.ndim),
                                                 piece.leaf.shape)]
            domain += [sz.lt(sz.Sym(f), n) for f, n in piece.free] + [piece.guard]
            reads = [r for layer in piece.layers for d, arg in enumerate(layer.node.args)
                     if d != layer.driver
                     for r in located_reads(arg, _broadcast(arg, layer.node, layer.coords))]
            results += prove_reads(reads, tuple(domain), tuple(stage.assumed))
    elif isinstance(p, CoiterPlan):
        ks = sz.out_coords(len(p.space))
        reads = located_reads(p.root, ks, stop=frozenset(o.node for o in p.operands))
        results += prove_reads(reads, tuple(sz.lt(k, n) for k, n in zip(ks, p.space)),
                               tuple(stage.assumed))
    if not results:
        return None
    failed = [f"{o}: {s}" for o, s in results if s != PROVED]
    leaves = ", ".join(dict.fromkeys(o.split(" of ")[1] for o, _ in results))
    return KernelObligation(
        f"reads {name}", f"{len(results)} located read(s) of {leaves} within their guards' "
        f"bounds" + (f" [{'; '.join(failed)}]" if failed else ""),
        _worst(s for _, s in results), time.perf_counter() - t0)


def _plan_obligations(kernel, functions: dict[str, str]) -> list[KernelObligation]:
    """Per stage: the coverage of every streamed view (``verify.coverage``), the lattice the
    co-iteration relies on, and the reorder of a bucket or scatter assembly."""
    from sparsefold.compiler.plan.plans import CoiterPlan
    from sparsefold.spec.compute import Map
    from sparsefold.verify.coverage import REORDER_STATEMENT, prove_coverage, prove_reorder
    out = []
    stages = [(t.name, s) for t, s in kernel.stages] + [("result", kernel.final)]
    for name, stage in stages:
        if stage.plan is None:  # a gather stage (compiler/run/gather.py): its index-array facts
            t0 = time.perf_counter()
            from sparsefold.verify.gather import prove_facts
            facts = prove_facts()
            out.append(KernelObligation(
                f"gather {name}", "for any index array: " + ", ".join(
                    f"{fact} {status}" for fact, status in facts.items()),
                _worst(facts.values()), time.perf_counter() - t0))
            continue
        for view, pieces, shape, accumulated in _views(stage):
            t0 = time.perf_counter()
            with sz.assuming(stage.assumed):
                results = prove_coverage(tuple(pieces), shape, accumulated,
                                         tuple(stage.assumed))
            failed = [f"{o}: {s}" for o, s in results if s != PROVED]
            leaves = ", ".join(dict.fromkeys(p.leaf.name for p in pieces))
            out.append(KernelObligation(
                f"coverage {name}: {view}",
                f"{len(pieces)} piece(s) of {leaves} into ({', '.join(map(str, shape))}): "
                + ("bounds (accumulated by the reduction)" if accumulated else
                 "bounds, injective, round_trip") + (f" [{'; '.join(failed)}]" if failed
                                                     else ""),
                _worst(s for _, s in results), time.perf_counter() - t0))
        reads = _reads_obligation(name, stage)
        if reads is not None:
            out.append(reads)
        if isinstance(stage.plan, CoiterPlan):
            names = [o.name for o in stage.plan.operands]
            used = sorted({n.fn.name for n in topological(stage.plan.root)
                           if isinstance(n, Map)})
            status = NOT_RELIED_ON if stage.plan.lattice.universe else \
                _worst(functions.get(f, "unknown") for f in used)
            out.append(KernelObligation(
                f"lattice {name}", f"iterates {stage.plan.lattice.describe(names)} by the "
                f"zero algebra of {', '.join(used) or 'no function'}", status, 0.0))
        if stage.plan.assembly in ("bucket", "scatter"):
            t0 = time.perf_counter()
            results = prove_reorder()
            out.append(KernelObligation(
                f"reorder {name} ({stage.plan.assembly})", REORDER_STATEMENT,
                _worst(s for _, s in results), time.perf_counter() - t0))
    return out


def _int32_indices(stage) -> dict:
    """Index dtypes for lowering a stage's text (int32 everywhere: the decisions certified
    do not depend on them)."""
    out = {}
    for inp in stage.inputs:
        if inp.format.is_dense:
            continue
        out[inp.name] = {f"{part}{lv}": np.dtype(np.int32)
                         for lv, level in enumerate(inp.format.levels)
                         for part, has in (("pos", level.has_pos), ("crd", level.has_crd))
                         if has}
    return out


def _guard_obligations(queries) -> list[KernelObligation]:
    """Per row-driven piece, the guards its loop leaves untested: proved again (without the
    lowering's cache) to hold on every source row it reads. Every other conjunct of the
    piece's guard is tested in the kernel (``compiler.plan.order.implied_row_guards``)."""
    from sparsefold.compiler.plan.order import GuardQuery, decide_implied_guards
    out, seen = [], set()
    for q in queries:
        if not isinstance(q, GuardQuery) or (q.piece, q.row, q.rows) in seen:
            continue
        seen.add((q.piece, q.row, q.rows))
        t0 = time.perf_counter()
        again = set(decide_implied_guards(q.piece, q.row, q.rows))
        status = PROVED if set(q.implied) <= again else REFUTED
        tested = [str(g) for g in sz.conjuncts(q.piece.guard) if g not in q.implied]
        owned = [str(g) for g in sz.conjuncts(q.piece.out_guard)]
        out.append(KernelObligation(
            f"guards[{len(seen) - 1}] {q.piece.leaf.name}",
            f"row-driven piece of {q.piece.leaf.name}: rows owned where "
            f"{' and '.join(owned) or 'always'}; guards tested (per row or entry): "
            f"{', '.join(tested) or 'none'}; left untested (hold on every source row read "
            f"back from an owned row): {', '.join(map(str, q.implied)) or 'none'}",
            status, time.perf_counter() - t0))
    return out


def _order_statement(q) -> str:
    leaves = ", ".join(p.leaf.name for p in q.pieces)
    maps = "; ".join(f"({', '.join(map(str, p.coords))}) if {p.guard}"
                     for p in q.pieces)
    what = "in order within each outer coordinate" if q.same_outer else \
        "in strictly increasing storage order (no collisions)"
    return f"entries of {leaves} mapped by {maps} arrive {what}, storage order " \
           f"{tuple(q.out_order)}"


def certify_program(program, out: str, requires: tuple = ()):
    """(the kernel ``sf.jit`` compiles for ``program``, its certificate); the kernel's
    header carries the certificate's digest (:meth:`Kernel.certify`)."""
    from sparsefold.compiler import Kernel
    from sparsefold.compiler.plan.order import decide_order, recording
    from sparsefold.verify.entries import check_entry
    from sparsefold.verify.rules import instance_proved

    with recording() as queries:
        kernel = Kernel(program, out, proved=instance_proved, requires=tuple(requires),
                        operators=check_entry)
    cert = KernelCertificate(show_program(kernel.program), out, kernel.strategy)
    cert.obligations += _entry_obligations(kernel.program)
    functions = _function_obligations(kernel.program)
    cert.obligations += functions
    statuses: dict[str, list[str]] = {}
    for o in functions:
        statuses.setdefault(o.name.split()[1], []).append(o.status)
    cert.obligations += _plan_obligations(kernel, {f: _worst(s) for f, s in statuses.items()})
    with recording() as lowered:  # the lowering's own decisions (no build)
        kernel.sources(_int32_indices)
    cert.obligations += _guard_obligations(lowered)
    seen = set()
    for q in [q for q in queries if hasattr(q, "pieces")]:
        key = (q.pieces, q.out_order, q.same_outer)
        if key in seen:
            continue
        seen.add(key)
        t0 = time.perf_counter()
        again = decide_order(q) if q.answer else False
        status = (PROVED if again else "unknown") if q.answer else NOT_RELIED_ON
        cert.obligations.append(KernelObligation(
            f"order[{len(seen) - 1}]" + (" (row)" if q.same_outer else ""),
            _order_statement(q), status, time.perf_counter() - t0))
    kernel.certify(cert.digest)
    cert.kernel = kernel
    return kernel, cert


def prove_kernel(fn, *examples) -> KernelCertificate:
    """The certificate of the kernel ``fn`` (an ``sf.jit`` function) compiles for these
    example arguments. ``cert.source`` is that kernel's Cython, whose header has the line
    ``# certificate: sha256:<cert.digest>``."""
    program, out, requires, _ = fn.trace(*examples)  # the trace a call runs
    _, cert = certify_program(program, out, tuple(requires))
    cert.values = {f"a{p}": a for p, a in enumerate(examples)
                   if not isinstance(a, (bool, int, float, complex, np.generic))}
    return cert

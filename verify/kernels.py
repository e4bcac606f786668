"""Per-kernel certificates (issue 12, part 4, in part): what the compiler relies on for one
compiled kernel, proved again and shown, with a digest.

``prove_kernel(jitfn, *examples)`` traces ``jitfn`` on the examples, plans the kernel the
compiler would build (the same ``Kernel`` as ``sf.jit``, with the proved rule instances and
the operator check) while recording every order question the planner asks
(``compiler.order.recording``), and collects:

* ``entry ...``: for every shape operator in the compiled program, its entry's obligations
  on the node's structure with sizes abstracted (``verify.entries.prove_entry``: bijection
  between domain and image, bounds, disjoint pieces, cover, divisions, index magnitude) —
  built-in entries included, though CI proves them over their configurations;
* ``function ...``: for every elementwise function the program applies, its zero algebra
  on its C text (``verify.zero_algebra``: what the merge lattice intersects or unions on);
* ``order ...``: every order question the planner asked while planning this kernel. An
  answer "proved" is one the plan may act on — appending a stream without sorting because
  its entries arrive in strictly increasing output storage order (which also means no two
  entries collide), or bucketing by the outer coordinate because they arrive in order
  within each — and it is proved again here without the planner's cache. An answer "not
  proved" is listed as ``not relied on``: the kernel sorts or buckets there, which needs no
  proof. (A proved answer the plan did not end up using is still listed: the list is a
  superset of what the plan relies on.)

Each obligation has its status and time; :attr:`KernelCertificate.digest` is a SHA-256 of
the program, the output format and every obligation's statement and status.

Not covered (yet): that the plan's pieces produce *exactly* the program's output support
(it follows from the entries' bijection and cover obligations for a single operator, but is
not proved for the composed plan); read bounds of the generated loops beyond the entries'
bounds obligations; the digest in the kernel's header. ``sparsefold prove --kernel EXPR
-i NAME=FORMAT:SHAPE`` prints a certificate from the shell.
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass, field

from sparsefold.spec.ir import ShapeOp
from sparsefold.spec.printer import show_program, topological
from sparsefold.verify.results import PROVED, REFUTED

__all__ = ["KernelObligation", "KernelCertificate", "prove_kernel", "NOT_RELIED_ON"]

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

    @property
    def status(self) -> str:
        relied = [o.status for o in self.obligations if o.status != NOT_RELIED_ON]
        for s in (REFUTED, "unknown", "bounded", "vacuous"):
            if s in relied:
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

    def __str__(self) -> str:
        lines = [f"kernel certificate: {self.status}  sha256:{self.digest[:16]}  "
                 f"out={self.out}  strategy={self.strategy}",
                 *("    " + line for line in self.program.splitlines())]
        for o in self.obligations:
            lines.append(f"  {o.name:<28} {o.status:<14} {o.seconds:6.3f}s  {o.statement}")
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
    """Each function's zero algebra in the dtype kind this kernel computes it in."""
    from sparsefold.compiler.values import loop_dtypes
    from sparsefold.spec.compute import Map
    from sparsefold.verify.zero_algebra import prove_function
    out, seen = [], set()
    for n in topological(program):
        kind = loop_dtypes(n)[0][0].kind if isinstance(n, Map) else None
        if isinstance(n, Map) and (n.fn.name, kind) not in seen:
            seen.add((n.fn.name, kind))
            t0 = time.perf_counter()
            report = prove_function(n.fn)
            out.append(KernelObligation(f"function {n.fn.name}", f"[{kind}] {report.summary()}",
                                        report.status_in(kind), time.perf_counter() - t0))
    return out


def _order_statement(q) -> str:
    leaves = ", ".join(p.leaf.name for p in q.pieces)
    maps = "; ".join(f"({', '.join(map(str, p.coords))}) if {p.guard}"
                     for p in q.pieces)
    what = "in order within each outer coordinate" if q.same_outer else \
        "in strictly increasing storage order (no collisions)"
    return f"entries of {leaves} mapped by {maps} arrive {what}, storage order " \
           f"{tuple(q.out_order)}"


def prove_kernel(fn, *examples) -> KernelCertificate:
    """The certificate of the kernel ``fn`` (an ``sf.jit`` function) compiles for these
    example arguments."""
    from sparsefold.compiler import Kernel
    from sparsefold.compiler.order import decide_order, recording
    from sparsefold.verify.entries import check_entry
    from sparsefold.verify.rules import instance_proved

    program, out = fn.program_for(*examples)
    requires = tuple(getattr(fn, "_assumed", {}).get(program, ()))
    with recording() as queries:
        kernel = Kernel(program, out, proved=instance_proved, requires=requires,
                        operators=check_entry)
    cert = KernelCertificate(show_program(kernel.program), out, kernel.strategy)
    cert.obligations += _entry_obligations(kernel.program)
    cert.obligations += _function_obligations(kernel.program)
    seen = set()
    for q in queries:
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
    return cert

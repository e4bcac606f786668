"""The compiler's driver: one visible pipeline of small passes (DESIGN §3).

    program ─ optimize ─► normalize ─► plan ─► lower (loop IR) ─► emit (Cython) ─► build ─► call
                                        │
                                        └─ NeedsStage: compute a part first (a stage)

* **optimize** — catalog rules whose instances the given prover accepts (``optimize.py``;
  ``sf.jit`` passes ``sparsefold.verify``'s cached proofs).
* **normalize** — shape operators below elementwise maps; broadcasts explicit
  (``normalize.py``).
* **plan** — ``planner.py``: a stream, a co-iteration under a merge lattice, a contraction,
  or (all-dense programs only) a dense loop nest. A sparse input is never densified: a part
  of the program that cannot be read in the order the kernel needs becomes a *stage* — a
  kernel of its own whose O(nnz) result (a temporary, in the needed order) the next stage
  reads. The final kernel's header names its temporaries.
* **lower + emit + build + call** — ``kernel.py`` (per stage).

``Kernel`` runs the stages in order. When an operand that a plan relies on being finite
holds a NaN or an infinity, the exact variant (no annihilation that needs finiteness) runs
instead; it is planned and built on first need.

**Operator entries whose maps are not proved.** The compiler relies on every entry's maps
(bijection, bounds, disjoint pieces) but proves none of them: it is handed ``operators``, a
callable that says, for a shape-operator node, whether its entry is proved (``None``) or
trusted without a proof (the size conditions its maps need at run time), or refuses it
(raises ``IllFormedProgram``). ``sf.jit`` passes ``sparsefold.verify``'s. A trusted,
unproved operator is computed by a stage of its own whose every output coordinate and dense
read is range-checked in the kernel (``bounds.MapChecked``) and whose sorted result is
checked for collisions; its size conditions (divisors of its maps >= 1) are checked before
any stage runs. Without ``operators`` every entry is trusted as proved.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from sparsefold.compiler.emit.cnames import check_compilable_dtype
from sparsefold.compiler.kernel import NotFinite, StageKernel, check_extents, extents_function
from sparsefold.compiler.plan.cost import check_dense_work
from sparsefold.compiler.plan.normalize import normalize, replace_node, replace_operand
from sparsefold.compiler.plan.optimize import Prover, optimize
from sparsefold.compiler.plan.planner import NeedsStage, has_sparse_input, plan
from sparsefold.compiler.plan.planner import dense_valued as planner_dense_valued
from sparsefold.compiler.plan.plans import CoiterPlan
from sparsefold.compiler.run import threads
from sparsefold.compiler.run.build import load_module
from sparsefold.compiler.run.gather import GatherStage, load_gather_kernels, serves
from sparsefold.spec import sizes as sz
from sparsefold.spec.compute import Input, Map
from sparsefold.spec.errors import IllFormedProgram, InternalError, InvalidData
from sparsefold.spec.formats import Format, named_format
from sparsefold.spec.functions import cast_function
from sparsefold.spec.ir import Node, ShapeOp
from sparsefold.spec.ops_axes import ExpandDims, PermuteDims, Squeeze
from sparsefold.spec.ops_gather import Gather
from sparsefold.spec.printer import topological
from sparsefold.storage.binding import bind_sizes
from sparsefold.storage.levels import index_dtypes_of, sparse_levels
from sparsefold.storage.results import out_format

__all__ = ["Kernel", "dense_valued", "OperatorCheck"]

MAX_STAGES = 16

# None: the entry's maps are proved; else (condition on sizes, message) pairs its maps need
# at run time; raising IllFormedProgram refuses the operator.
OperatorCheck = Callable[[ShapeOp], "tuple[tuple[sz.Expr, str], ...] | None"]


def _natural_format(ndim: int, order: tuple[int, ...]) -> Format:
    """The format whose storage order is ``order``: csr/csc for matrices, a compressed
    vector, or row-major COO."""
    if ndim == 0:
        return named_format("dense", 0)
    if ndim == 1:
        return named_format("csr", 1)
    if ndim == 2:
        return named_format("csr" if order == (0, 1) else "csc", 2)
    return named_format("coo", ndim)


def dense_valued(program: Node, assumed: tuple[sz.Expr, ...] = ()) -> bool:
    """Is ``program``'s result dense-valued, as scipy's would be (``A @ x``, a reduction,
    ``A + 1``)? (The front end's default output format follows it.)"""
    with sz.assuming(tuple(assumed)):
        return planner_dense_valued(normalize(program))


class Kernel:
    """A compiled program for one output format: its stages, then the final kernel."""

    def __init__(self, program: Node, out_name: str, *, proved: Prover | None = None,
                 exact: bool = False, optimized: bool = False,
                 requires: tuple[sz.Expr, ...] = (), operators: OperatorCheck | None = None):
        self.source_program = program
        self.proved = proved  # which rule instances optimize may apply (none: no rewrite)
        self.operators = operators  # which operator entries are proved (none: all trusted)
        self.requires = tuple(requires)
        self._requires_fn = sz.python_function(self.requires)
        with sz.assuming(self.requires):
            self._compile(program, out_name, exact, optimized)

    def _compile(self, program: Node, out_name: str, exact: bool, optimized: bool) -> None:
        self.out_name = out_name
        self.exact = exact
        self.program = program if optimized else optimize(program, self.proved)
        for n in topological(self.program):
            check_compilable_dtype(n.dtype, f"{type(n).__name__} {n.dtype}")
        self.fmt = out_format(out_name, self.program.ndim)
        self.stages: list[tuple[Input, StageKernel]] = []
        self._names = {n.name for n in topological(self.program) if isinstance(n, Input)}
        self.unproved: dict[type, str] = {}   # operator class -> its name in checks
        self.map_requires: list[tuple[sz.Expr, str]] = []
        if self.operators is not None:
            for n in topological(self.program):
                if isinstance(n, ShapeOp):
                    need = self.operators(n)
                    if need is not None:
                        self.unproved[type(n)] = type(n).__name__.lower()
                        self.map_requires += [r for r in need if r not in self.map_requires]
        self._map_requires_fn = sz.python_function(tuple(e for e, _ in self.map_requires))
        self.final = self._build(normalize(self.program), self.fmt, "the result")
        self.plan = self.final.plan
        self.inputs = [n for n in topological(self.program) if isinstance(n, Input)]
        self._exact: Kernel | None = None
        self._lock = threading.Lock()
        # with stages: every node's element count, checked before the first stage runs (a
        # result overflowing int64 is that error, not a stage's temporary too large)
        self._extents = extents_function(self.program)
        # the stages' fast entries may take a call when no unproved map's size conditions
        # must be checked first (the trace's preconditions, requires, each entry checks
        # itself, declining the call when one fails). ``entry.fast`` runs them: the final
        # stage's own entry, or each stage's in turn (_StagedEntry)
        # the work of every stage (compiler/plan/cost.py); a dense-work plan takes the checked
        # path, which refuses it above the limit (check_dense_work)
        self.cost = sum((stage.cost for _, stage in self.stages), self.final.cost)
        # (the exact variant is exempt: with a NaN or an infinity among the operands, 0 * nan
        # is nan at every implicit coordinate, so visiting them is the semantics' price)
        self._dense_checked = self.cost.dense_work and not exact
        self._fast_ok = not self.map_requires and not self._dense_checked
        self.entry = _StagedEntry(self) if self.stages else self.final
        self._fast_names = tuple(inp.name for inp in (self.inputs if self.stages
                                                      else self.final.inputs))

    @property
    def strategy(self) -> str:
        return self.final.strategy

    @property
    def assembles_densely(self) -> bool | None:
        """Is the result computed densely and converted (``storage.results.from_dense``:
        a reduction, a dense-valued expression, a program of dense operands) rather than
        assembled from entries? None for a gather stage. (The fallback assembles its
        result the same way: ``compiler/fallback``.)"""
        plan = self.final.plan
        return None if plan is None else plan.assembly in ("dense", "accumulate")

    # --- stages ---------------------------------------------------------------------------
    def _unproved_below(self, program: Node) -> Node | None:
        """The first (innermost) operator below the root whose maps are not proved."""
        for n in topological(program):
            if n is not program and type(n) in self.unproved:
                return n
        return None

    def _build(self, program: Node, fmt: Format, what: str) -> StageKernel:
        for _ in range(MAX_STAGES):
            gather = next((n for n in topological(program) if isinstance(n, Gather)), None)
            if gather is not None and gather is program and serves(fmt):
                return self._gather(gather, fmt, what)  # the result itself, no copy after
            if gather is not None:  # its map reads data: a stage of its own (gather.py)
                program = replace_node(program, gather, self._gather(gather))
                continue
            below = self._unproved_below(program)
            if below is not None:  # computed on its own, with checks, into a temporary
                name = self.unproved[type(below)]
                need = NeedsStage(below, None, f"the maps of {name} are not proved; it is "
                                               f"computed with run-time checks",
                                  dense=not has_sparse_input(below))
                program = replace_node(program, below, self._temporary(need))
                continue
            checked = self.unproved.get(type(program), "")
            try:
                p = plan(program, fmt, exact=self.exact, checked=bool(checked))
            except NeedsStage as need:
                if need.node == program and need.collapsed is None:
                    raise IllFormedProgram(f"not supported yet by the compiler: {need.why}; "
                                           f"use .interpret()")
                program = replace_operand(program, need.node, self._temporary(need))
                continue
            stage = StageKernel(program, fmt, p, what=what, assumed=self.requires,
                                checked=checked)
            temps = [i.name for i in stage.inputs if i.name in self._temp_names()]
            if temps:
                stage.stage_notes = [f"Reads temporaries {', '.join(temps)} computed by "
                                     f"earlier stages (see the kernel's other stages)."]
            return stage
        raise InternalError(f"more than {MAX_STAGES} stages for one program")

    def _gather(self, node: Gather, fmt: Format | None = None, what: str = ""):
        """Compute ``node`` by a gather stage; its operand and index arrays first become
        inputs (temporaries) when they are expressions. Returns the temporary; with ``fmt``
        the stage itself (it computes ``what``, in ``fmt``)."""
        parts = []
        for part in node.operands():
            if not isinstance(part, Input) or (part is not node.arg and
                                               not part.format.is_dense):
                part = self._temporary(NeedsStage(
                    part, None, "a gather reads its operand's stored entries and dense "
                    "index arrays", dense=part is not node.arg or not has_sparse_input(part)))
            parts.append(part)
        arg = parts[0]
        if isinstance(arg, Map) and isinstance(arg.args[0], Input) and \
                arg.fn is cast_function(arg.dtype):
            # a temporary read back through a cast (float16 is stored as float32): the
            # gather moves values unchanged, so it reads the stored temporary and the cast
            # applies to what it gathered
            inner = self._gather(Gather(arg.args[0], tuple(parts[1:]), node.axes))
            result = Map(arg.fn, (inner,))
            return result if fmt is None else self._build(result, fmt, what)
        node = Gather(arg, tuple(parts[1:]), node.axes)
        if fmt is not None:
            return GatherStage(node, what, fmt)
        name = self._fresh_name()
        stage = GatherStage(node, f"the temporary {name}")
        temp = Input(name, tuple(node.shape), node.dtype, stage.fmt)
        stage.stage_notes = [f"Stage: computes temporary {name} ({stage.fmt}), a gather."]
        self.stages.append((temp, stage))
        return temp

    def _temp_names(self) -> set[str]:
        return {t.name for t, _ in self.stages}

    def _fresh_name(self) -> str:
        n = len(self.stages)
        while f"tmp{n}" in self._names:
            n += 1
        self._names.add(f"tmp{n}")
        return f"tmp{n}"

    def _temporary(self, need: NeedsStage) -> Node:
        """Plan ``need.node`` as a stage of its own; return what replaces it: the temporary
        input (or a transpose of it, when it is stored in another axis order)."""
        node = need.node
        if need.collapsed is not None:  # computed in two dimensions, then split back
            two_d, rebuild = need.collapsed
            return rebuild(self._temporary(NeedsStage(two_d, None, need.why, need.dense)))
        ones = tuple(d for d, n in enumerate(node.shape) if sz.const_value(n) == 1) \
            if need.squeeze else ()
        if ones and len(ones) < node.ndim:  # computed without them, re-inserted after
            squeezed = NeedsStage(Squeeze(node, ones), None, need.why, need.dense)
            temp = self._temporary(squeezed)
            for d in ones:
                temp = ExpandDims(temp, d)
            return temp
        if node.dtype == np.float16 and not need.dense and \
                not planner_dense_valued(normalize(node)):
            # scipy.sparse holds no float16 (nor does pydata's numba): the temporary stores
            # the values as float32 (exact) and is read back as float16
            wide = self._temporary(replace_need(need, Map(cast_function(np.float32), (node,))))
            return Map(cast_function(np.float16), (wide,))
        nd = node.ndim
        identity = tuple(range(nd))
        order = need.order or identity
        inner = node
        if need.dense or nd == 0 or planner_dense_valued(normalize(inner)):
            # dense-valued (``B @ x`` in ``A @ (B @ x)``): a dense temporary, as the result
            # would be; a sparse one would store every cell
            fmt = named_format("dense", nd)
        elif nd <= 2 or order == identity:
            fmt = _natural_format(nd, order)
        else:  # n-d in another order: store the permuted array row-major
            inner = PermuteDims(node, order)
            fmt = _natural_format(nd, identity)
        name = self._fresh_name()
        stage = self._build(normalize(inner), fmt, f"the temporary {name}")
        if isinstance(stage.plan, CoiterPlan) and stage.plan.lattice.universe and \
                not fmt.is_dense:  # dense-valued: keep the temporary dense
            fmt = named_format("dense", nd)
            stage = self._build(normalize(inner), fmt, f"the temporary {name}")
        temp = Input(name, tuple(inner.shape), inner.dtype, fmt)
        stage.stage_notes = stage.stage_notes + [
            f"Stage: computes temporary {name} ({fmt}) for a later stage: {need.why}."]
        self.stages.append((temp, stage))
        if inner is node:
            return temp
        inverse = tuple(order.index(d) for d in range(nd))
        return PermuteDims(temp, inverse)

    def certify(self, digest: str) -> None:
        """Print ``digest`` (a certificate's SHA-256, ``verify.prove_kernel``) in the header
        of every stage's kernel. Call before the first run. The exact variant (planned on
        first need) is another plan: its header carries no certificate."""
        for _, stage in self.stages + [(None, self.final)]:
            if getattr(stage, "_variants", None):  # (a gather stage has fixed kernels)
                raise InternalError("Kernel.certify after the kernel was built")
            stage.certificate = digest

    # --- source ---------------------------------------------------------------------------
    def source_for(self, values: dict[str, Any], out_index: str = "int32") -> str:
        """The Cython this kernel runs on ``values`` (index widths as for these arrays,
        int32 for temporaries; the output's as ``out_index``), every stage in the order they
        run, without building anything, below the stated cost of each (compiler/plan/cost.py)."""
        return "\n".join(self.cost_lines()) + "\n" + \
            "\n\n".join(self._call_sources(values, out_index))

    def build_for(self, values: dict[str, Any]) -> None:
        """Load, or build with Cython and the C compiler, the module of every stage that a
        call on ``values`` runs (the variants :meth:`source_for` shows), without running
        any: what a tiered call builds in the background (``sparsefold.tiering``). A
        variant this misses (an int64 output index for a result of more than 2**31 - 1
        entries, the exact variant of a non-finite operand) is built by the call that
        needs it."""
        stages = [stage for _, stage in self.stages] + [self.final]
        for stage, source in zip(stages, self._call_sources(values, "int32")):
            if isinstance(stage, GatherStage):
                load_gather_kernels()  # its module is one text, whatever the stage
            else:
                load_module(source, name_hint=stage.strategy)

    def _call_sources(self, values: dict[str, Any], out_index: str) -> list[str]:
        def dtypes(stage):
            found = {}
            for inp in stage.inputs:
                if inp.format.is_dense:
                    continue
                if inp.name in values:
                    found[inp.name] = index_dtypes_of(sparse_levels(values[inp.name], inp,
                                                                    inp.name))
                else:  # a temporary an earlier stage computes
                    found[inp.name] = {f"{part}{lv}": np.dtype(np.int32)
                                       for lv, level in enumerate(inp.format.levels)
                                       for part, has in (("pos", level.has_pos),
                                                         ("crd", level.has_crd)) if has}
            return found

        def unit(stage):  # the variant a call on these values runs (contiguous dense rows)
            return frozenset(
                inp.name for inp in stage.inputs if inp.format.is_dense and
                isinstance(values.get(inp.name), np.ndarray) and values[inp.name].ndim and
                values[inp.name].strides[-1] == values[inp.name].itemsize)
        def sorted_rows(stage):  # a sparse product over user inputs: which workspace
            if stage.strategy != "contract" or not all(i.name in values for i in stage.inputs):
                return False
            stored = sum(int(sparse_levels(values[i.name], i, i.name)["val"].shape[0])
                         for i in stage.inputs if not i.format.is_dense)
            return stage.takes_sorted_workspace(stage.bind(values), stored)
        return self.sources(dtypes, out_index, unit, sorted_rows)

    def sources(self, index_dtypes_of, out_index: str = "int32", unit_of=None,
                sorted_of=None) -> list[str]:
        """The Cython text of every stage, in the order they run; ``index_dtypes_of(stage)``
        gives a stage's index dtypes, ``unit_of(stage)`` its dense inputs whose last axis is
        contiguous (none when not given), ``sorted_of(stage)`` whether its product takes
        the sorted workspace (not when not given)."""
        out = []
        for _, stage in self.stages + [(None, self.final)]:
            unit = unit_of(stage) if unit_of is not None else frozenset()
            ws = sorted_of(stage) if sorted_of is not None else False
            out.append(stage.source(index_dtypes_of(stage), out_index, unit, ws)[0])
        return out

    def cost_lines(self) -> list[str]:
        """The stated cost of every stage, in the order they run, and of the whole
        (``sf.show`` prints them above the kernels; compiler/plan/cost.py)."""
        lines = []
        for temp, stage in self.stages + [(None, self.final)]:
            name = temp.name if temp is not None else "result"
            flag = "  [DENSE WORK: refused above the limit]" if stage.cost.dense_work else ""
            lines.append(f"# cost of {name}: {stage.cost}{flag}")
        if self.stages:
            lines.append(f"# cost in all: {self.cost}")
        return lines

    # --- call -----------------------------------------------------------------------------
    def __call__(self, values: dict[str, Any], library: str = "scipy",
                 sizes: dict[str, int] | None = None):
        """Run on ``values`` (input name -> array); ``sizes`` binds size symbols that no
        input's shape binds (an ahead-of-time kernel's size parameters, ``sparsefold.aot``)."""
        fast = self.entry.fast
        if fast is not None and library == "scipy" and self._fast_ok and not sizes:
            # the variant the last call used, done in its module (compiler/lower/fastcall.py);
            # None: something differs, and the checked path below decides
            result = fast(*[values[name] for name in self._fast_names],
                          threads=threads.explicit())
            if result is not None:
                return result
        try:
            env = bind_sizes(self.inputs, values, dict(sizes or {})) \
                if sizes or self.stages or self.requires or self.map_requires or \
                self._dense_checked else None
            if self._dense_checked:
                check_dense_work(self.cost, env, nnz=_stored_entries(values))
            if self.map_requires:
                self._check_maps(env)
            if self.requires and not all(self._requires_fn(env)):
                # the trace assumed these sizes equal (sizes.assuming): reading on would
                # read one operand past its end
                raise InvalidData(f"sizes {env} break the program's precondition "
                                  f"{' and '.join(map(str, self.requires))}")
            vals = dict(values)
            if self.stages:
                check_extents(self.program, self.inputs, self._extents, env)
            for temp, stage in self.stages:
                vals[temp.name] = stage(vals, "scipy", env)
            return self.final(vals, library, env)
        except NotFinite:
            return self._exact_variant()(values, library, sizes)

    def _check_maps(self, env: dict[str, int]) -> None:
        """The size conditions the unproved operators' maps need (a divisor >= 1): a
        division by zero in a kernel would stop the process."""
        try:
            results = self._map_requires_fn(env)
        except ZeroDivisionError:
            results = [False] * len(self.map_requires)
        for ok, (_, why) in zip(results, self.map_requires):
            if not ok:
                raise InvalidData(f"{why}; sizes {dict(sorted(env.items()))}")

    def _exact_variant(self) -> Kernel:
        """The same program with no annihilation that needs finite operands."""
        with self._lock:
            if self._exact is None:
                self._exact = Kernel(self.program, self.out_name, exact=True, optimized=True,
                                     requires=self.requires, operators=self.operators)
            return self._exact


def _stored_entries(values: dict[str, Any]) -> dict[str, int]:
    """Each sparse input's stored entries (scipy, pydata), by name."""
    out = {}
    for name, v in values.items():
        nnz = getattr(v, "nnz", None)
        if isinstance(nnz, (int, np.integer)):
            out[name] = int(nnz)
    return out


def replace_need(need: NeedsStage, node: Node) -> NeedsStage:
    """The same staging request for another node (of the same shape)."""
    return NeedsStage(node, need.order, need.why, need.dense)


class _StagedEntry:
    """The fast entry of a program with stages: each stage's module entry in turn, every
    temporary the scipy array the checked path would pass on (``fastcall.py`` builds the
    same container), the final stage's result returned. None as soon as one entry declines
    (or has not been built yet: the checked path builds it); the checked path then computes
    the whole call."""

    __slots__ = ("kernel", "names")

    def __init__(self, kernel: Kernel):
        self.kernel = kernel
        self.names = tuple(inp.name for inp in kernel.inputs)

    def fast(self, *args, threads: int = 0):
        if self.kernel.final.fast is None or any(s.fast is None for _, s in self.kernel.stages):
            # (a stage without a fast entry, e.g. an all-dense final one: asked first, else
            # every stage before it ran twice, here and on the checked path: ``A @ x + d``
            # took 2.5x the time of ``A @ x``)
            return None
        values = dict(zip(self.names, args))
        for temp, stage in self.kernel.stages:
            out = stage.fast(*[values[inp.name] for inp in stage.inputs], threads=threads)
            if out is None:
                return None
            values[temp.name] = out
        final = self.kernel.final
        return final.fast(*[values[inp.name] for inp in final.inputs], threads=threads)

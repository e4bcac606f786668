"""One compiled kernel: a plan lowered to loop IR, printed, built, and called.

A stage kernel computes one program into one format with one plan (``plans.py``). Its
Cython source is specialized per index dtypes (int32/int64 of every input index array and of
the output), chosen per call from the actual arrays and sizes, so nothing can overflow;
each variant is built on first use and cached (memory + disk, ``build.py``).

A call binds sizes from the arrays' shapes, checks preconditions and int64 extents, reads
and validates the inputs' storage (``storage/levels.py``), allocates outputs — after checking they
fit in memory — runs the kernel, and wraps the result.
"""

from __future__ import annotations

import threading
from contextlib import nullcontext
from typing import Any

import numpy as np

from sparsefold.compiler.emit.emit import render_module
from sparsefold.compiler.emit.loops import Bin, Lit
from sparsefold.compiler.emit.parallel import MAX_THREADS, has_parallel
from sparsefold.compiler.lower.bounds import MapChecked, rows_first
from sparsefold.compiler.lower.fastcall import fast_entry
from sparsefold.compiler.lower.lower_bulk import lower_bulk
from sparsefold.compiler.lower.lower_coiter import lower_coiter
from sparsefold.compiler.lower.lower_contract import (
    TEAM,
    contract_sizes,
    fills_rows_in_parallel,
    lower_contract,
    lower_contract_count,
)
from sparsefold.compiler.lower.lower_dense import lower_dense
from sparsefold.compiler.lower.lower_stream import (
    lower_pieces,
    lower_row_count,
    lower_rows,
    row_guards,
)
from sparsefold.compiler.lower.lowering import Lowering
from sparsefold.compiler.lower.outputs import AppendOut, BufferOut, DenseOut, ScatterOut
from sparsefold.compiler.lower.values import Values
from sparsefold.compiler.lower.workspace import SortedWorkspace, Workspace
from sparsefold.compiler.plan.background import evaluate as evaluate_background
from sparsefold.compiler.plan.background import total as background_total
from sparsefold.compiler.plan.cost import EXACT_CAPACITY_ABOVE, stage_cost
from sparsefold.compiler.plan.plans import (
    CoiterPlan,
    ContractPlan,
    DensePlan,
    StreamPlan,
    capacity_points,
)
from sparsefold.compiler.run import threads
from sparsefold.compiler.run.build import load_module
from sparsefold.compiler.run.memory import TooLarge, memory_limit, nbytes, show_bytes
from sparsefold.spec import sizes as sz
from sparsefold.spec.compute import Input, Reduce
from sparsefold.spec.errors import InternalError, InvalidData
from sparsefold.spec.formats import Format
from sparsefold.spec.functions import get_monoid
from sparsefold.spec.ir import Node, ShapeOp
from sparsefold.spec.printer import show_program, topological
from sparsefold.storage.binding import bind_sizes, too_large
from sparsefold.storage.dense import dense_operand
from sparsefold.storage.levels import row_major_order, sparse_levels
from sparsefold.storage.results import compress, from_dense, wrap_levels

__all__ = ["StageKernel", "NotFinite", "TooLarge", "memory_limit", "SORTED_WORKSPACE_COLUMNS",
           "SORTED_PER_ENTRY"]

_INT32_MAX = 2**31 - 1
_INT64_MAX = 2**63 - 1
# A sparse product's rows accumulate in a sorted workspace (workspace.SortedWorkspace) when
# the result has more columns than this and more than SORTED_PER_ENTRY per stored input
# entry, or when one dense row workspace alone would not fit under the memory limit: three
# O(columns) arrays would then dwarf the inputs or not fit at all.
SORTED_WORKSPACE_COLUMNS = 1 << 22
SORTED_PER_ENTRY = 16


class NotFinite(Exception):
    """An operand the plan's lattice relies on being finite holds a NaN or an infinity: the
    caller runs the exact variant instead."""


def _requires(program: Node) -> list[sz.Expr]:
    out = []
    for n in topological(program):
        if isinstance(n, ShapeOp):
            r = n.index_map().requires
            if r != sz.TRUE:
                out.append(r)
    return out


def strategy(plan) -> str:
    return {StreamPlan: "stream", CoiterPlan: "coiterate", ContractPlan: "contract",
            DensePlan: "dense"}[type(plan)]


class StageKernel:
    """``program`` computed into ``fmt`` by ``plan``; ``what`` names the result in errors
    ("the result", "the temporary t0 = ...")."""

    def __init__(self, program: Node, fmt: Format, plan, *, what: str = "the result",
                 assumed: tuple[sz.Expr, ...] = (), checked: str = ""):
        self.program, self.fmt, self.plan, self.what = program, fmt, plan, what
        self.assumed = assumed  # size equalities the trace assumed (checked by the caller)
        # the name of the operator whose maps are not proved, computed by this stage: its
        # output coordinates and dense reads are range-checked in the kernel
        self.checked = checked
        self.stage_notes: list[str] = []  # header notes (stages, temporaries)
        # the SHA-256 of the whole kernel's certificate (Kernel.certify), printed in the
        # header; set before the first call builds a variant
        self.certificate = ""
        self.strategy = strategy(plan)
        self.inputs = [n for n in topological(program) if isinstance(n, Input)]
        self.requires = _requires(program)
        self.reduction = plan.reduction
        self._rows_skipped = isinstance(plan, StreamPlan) and plan.loop == "row" and \
            _rows_skipped(plan, program, fmt)
        self._contract_sparse = isinstance(plan, ContractPlan) and not fmt.is_dense
        # count / prefix sum / parallel fill, a workspace slice per thread (lower_contract)
        self._contract_rows = self._contract_sparse and not checked and \
            plan.assembly == "append" and fmt.kinds == ("full", "pos")
        self._counts = self._rows_skipped or self._contract_sparse
        if isinstance(plan, ContractPlan):
            self._columns_fn = sz.python_function((contract_sizes(plan)[1],))
            self._rows_fn = sz.python_function((contract_sizes(plan)[0],))
        self._shape_fn = sz.python_function(tuple(program.shape))
        # every node's element count: kernels compute coordinates in int64
        self._extents_fn = extents_function(program)
        red = self.reduction
        self._extent_fn = sz.python_function(
            (sz.product(red.node.arg.shape[d] for d in red.node.axes),) if red else ())
        self._requires_fn = sz.python_function(tuple(self.requires))
        # max/min (no identity) have no value over nothing: checked once sizes are bound
        self._empty_reductions = [n for n in topological(program) if isinstance(n, Reduce)
                                  and get_monoid(n.monoid).identity is None]
        self._reduced_fn = sz.python_function(tuple(n.extent()
                                                    for n in self._empty_reductions))
        self._free_extents = [sz.python_function(tuple(size for _, size in piece.free))
                              for piece in plan.pieces]
        self.capacity_points = capacity_points(plan)
        # the work the plan does, stated (compiler/plan/cost.py); dense work is refused at call
        self.cost = stage_cost(plan, program, fmt, self.inputs)
        self._variants: dict[tuple, tuple[str, list, Any]] = {}
        self._threaded: dict[tuple, bool] = {}  # variants with a parallel loop
        self.any_threaded = False  # does any variant built so far have one (jit's fast path)
        self._assemblers: dict[str, Any] = {}
        self.fast = None  # the last variant's fast entry (compiler/lower/fastcall.py), if any
        self._lock = threading.Lock()

    # --- source ---------------------------------------------------------------------------
    def source(self, index_dtypes: dict[str, dict[str, np.dtype]], out_index: str,
               unit_stride: frozenset[str] = frozenset(), sorted_workspace: bool = False):
        """(Cython text, functions) for these index dtypes; ``unit_stride`` names the dense
        inputs whose last axis is contiguous (their innermost index needs no stride);
        ``sorted_workspace``: a sparse product's rows accumulate in a sorted workspace."""
        with sz.assuming(self.assumed):  # nodes built while lowering meet the same sizes
            return self._source(index_dtypes, out_index, unit_stride, sorted_workspace)

    def _source(self, index_dtypes, out_index, unit_stride, sorted_workspace=False):
        p, program = self.plan, self.program
        low = Lowering(index_dtypes, unit_stride, check_reads=self.checked,
                       sorted_workspace=sorted_workspace)
        low.sizes(program)
        asm = self._assembler(out_index)
        sparse = [i for i in self.inputs if not i.format.is_dense]
        checked = [(leaf, low.leaf(leaf).pos[1]) for leaf in sparse
                   if leaf.format.kinds == ("full", "pos")]
        flag = rows_first(low.b, low.sites, checked)
        guard = low.b.if_(Bin("==", flag, Lit("0"))) if flag is not None else None
        if guard is not None:
            guard.__enter__()
        asm.row_driven = (isinstance(p, StreamPlan) and p.loop == "row") or (
            isinstance(p, CoiterPlan) and p.mode == "row" and not p.lattice.universe) or \
            isinstance(p, ContractPlan)
        if self.checked:
            asm = MapChecked(asm, tuple(program.shape), f"{self.checked} (maps not proved)")
        asm.prologue(low)
        values = Values(low.b, low.dense, sites=low.sites)
        if isinstance(p, DensePlan):
            lower_dense(low, program, asm)
        elif isinstance(p, CoiterPlan):
            low.rows_parallel = not self.checked  # lower_coiter._rows decides
            lower_coiter(low, p, asm)
        elif isinstance(p, ContractPlan):
            low.rows_parallel = not self.checked  # lower_contract decides
            if self._contract_rows != (not self.checked and fills_rows_in_parallel(asm)):
                raise InternalError(f"the runtime and the lowering disagree on a parallel "
                                    f"fill into {self.fmt}")
            lower_contract(low, p, asm, self.fmt, program)
        elif p.loop == "bulk":
            lower_bulk(low, p.pieces, self.fmt, asm)
        elif p.loop == "row":
            low.rows_parallel = not self.checked  # lower_stream._fill_parallel decides
            lower_rows(low, p.pieces, self.fmt.mode_order, program.shape, asm, values)
        else:
            low.rows_parallel = type(asm) is DenseOut  # not through MapChecked: no proof
            lower_pieces(low, p.pieces, asm, values)
        asm.epilogue(low)
        if guard is not None:
            guard.__exit__(None, None, None)
        run = low.function("run", asm.returns)
        functions = [run]
        if self._counts:  # the exact entry count, for right-sized outputs
            cl = Lowering(index_dtypes, unit_stride, sites=low.sites,
                          check_reads=self.checked, sorted_workspace=sorted_workspace)
            cl.sizes(program)
            if isinstance(p, ContractPlan):
                # rows in order before the symbolic pass reads them, as in ``run``
                bad = rows_first(cl.b, cl.sites, [(leaf, cl.leaf(leaf).pos[1]) for leaf in
                                                  sparse if leaf.format.kinds == ("full", "pos")])
                with cl.b.if_(Bin("==", bad, Lit("0"))) if bad is not None else nullcontext():
                    total = lower_contract_count(cl, p, rows_out=self._contract_rows)
            else:
                total = lower_row_count(cl, p.pieces, self.fmt.mode_order, program.shape)
            functions.append(cl.function("count", (total,)))
        # the happy path of a call in the module itself (issue #13: call overhead)
        fast = fast_entry(self, index_dtypes, out_index, unit_stride, functions,
                          self._assembler(out_index), self.assumed)
        notes = [f"Strategy: {p.describe()}; {asm.note}."]
        if p.finite:
            notes.append("Valid when " + ", ".join(i.name for i in p.finite) + " are finite "
                         "(0 * inf is nan); the runtime checks and otherwise runs the exact "
                         "variant.")
        if self.checked:
            notes.append(f"Checked: the maps of {self.checked} are not proved (trusted by the "
                         f"user); every output coordinate and dense read is range-checked.")
        notes += self.stage_notes
        src = render_module(title=f"{self.strategy} -> {self.fmt}",
                            program_text=show_program(program), notes=notes,
                            functions=functions, sites=tuple(low.sites.table),
                            entry=fast, certificate=self.certificate)
        return src, functions

    def _assembler(self, out_index: str):
        p, program, fmt = self.plan, self.program, self.fmt
        if isinstance(p, DensePlan):
            return DenseOut(program.shape, program.dtype)
        if p.assembly == "dense":
            return DenseOut(program.shape, program.dtype, order=dense_axis_order(
                p, program.ndim) if isinstance(p, StreamPlan) else None)
        if p.assembly == "accumulate":
            return DenseOut(program.shape, program.dtype, monoid=self.reduction.monoid,
                            order=dense_axis_order(p, program.ndim),
                            count=self.reduction.background is not None)
        if p.assembly == "append":
            return AppendOut(fmt, program.shape, program.dtype, out_index)
        if p.assembly == "scatter":
            return ScatterOut(fmt, program.shape, program.dtype, out_index)
        return BufferOut(fmt, program.shape, program.dtype, out_index,
                         bucket=p.assembly == "bucket")

    # --- call -----------------------------------------------------------------------------
    def __call__(self, values: dict[str, Any], library: str = "scipy",
                 env: dict[str, int] | None = None):
        env = self.bind(values, env)
        p = self.plan
        prepared: dict[str, dict[str, np.ndarray]] = {}
        index_dtypes: dict[str, dict[str, np.dtype]] = {}
        for inp in self.inputs:
            if inp.format.is_dense:
                prepared[inp.name] = {"dense": dense_operand(values[inp.name],
                                                                     inp.dtype, inp.name)}
            else:
                levels = sparse_levels(values[inp.name], inp, inp.name,
                                               rows_in_kernel=True)
                prepared[inp.name] = levels
                index_dtypes[inp.name] = {k: v.dtype for k, v in levels.items() if k != "val"}
        for inp in p.finite:
            arrs = prepared[inp.name]
            data = arrs["dense"] if "dense" in arrs else _stored(arrs, inp)
            if not np.all(np.isfinite(data)):
                raise NotFinite(inp.name)
        sizes = []
        for piece, extent in zip(p.pieces, self._free_extents):
            arrs = prepared[piece.leaf.name]
            n = arrs["dense"].size if "dense" in arrs else int(arrs["val"].shape[0])
            for f in extent(env):
                n *= f
            sizes.append(n)
        capacity = sum(min(sum(sizes[i] for i in operand) for operand in point)
                       for point in self.capacity_points)
        if isinstance(p, CoiterPlan) and p.mode == "product":  # every pair of entries
            capacity = sizes[0] * sizes[1]
        work = sum(sizes)  # entries the loops walk: what the thread count follows
        out_shape = self._shape_fn(env)
        big = max(out_shape + (capacity,), default=0) > _INT32_MAX
        out_index = "int64" if big else "int32"
        unit = frozenset(name for name, arrs in prepared.items() if "dense" in arrs and
                         _unit_last_stride(arrs["dense"]))
        key = (tuple((name, tuple(d.items())) for name, d in index_dtypes.items()), out_index,
               unit)
        sorted_rows = self.takes_sorted_workspace(env, capacity)
        if sorted_rows:
            key += ("sorted",)
        src, functions, module = self._variant(key, index_dtypes, out_index)
        setting = None
        if self._contract_sparse:  # the symbolic pass runs on the threads of the fill
            setting = threads.threads_for(work)
            if self._threaded.get(key):
                threads.apply(setting)
        scratch = self._scratch(env, setting, sorted_rows=sorted_rows)
        if self._contract_sparse or (self._rows_skipped and capacity > EXACT_CAPACITY_ABOVE):
            # a row loop may skip rows (a strided slice keeps a quarter of its entries), a
            # product's size is unknown: size the outputs exactly (peak memory)
            count = functions[1]
            total = module.count(*[self._arg(a, prepared, scratch, env) for a in count.params])
            capacity = total if self._contract_sparse else max(0, min(capacity, total))
            if capacity > _INT32_MAX and out_index == "int32":
                out_index = "int64"
                key = (key[0], out_index) + key[2:]
                src, functions, module = self._variant(key, index_dtypes, out_index)
            if sorted_rows:  # sized by the longest row's products (count's)
                starts = scratch["row_pos"]
                longest = int(np.max(starts[1:] - starts[:-1])) if starts.shape[0] > 1 else 0
                scratch.update(self._arrays(SortedWorkspace.scratch(
                    longest, self.plan.reduction.node.dtype), "a sorted row workspace"))
        run = functions[0]
        if self._threaded.get(key) and setting is None:
            threads.apply(threads.threads_for(work))
        outputs = self._allocate(out_shape, capacity, out_index)
        outputs.update(scratch)
        argv = [self._arg(a, prepared, outputs, env) for a in run.params]
        result = module.run(*argv)
        dense_inputs = {name: arrs["dense"] for name, arrs in prepared.items() if "dense" in arrs}
        return self._finish(result, outputs, out_shape, out_index, library, env, dense_inputs)

    def bind(self, values, env: dict[str, int] | None = None) -> dict[str, int]:
        """Sizes from the inputs' shapes (extending ``env``, the sizes an earlier stage
        bound), then int64 extents and preconditions checked."""
        env = bind_sizes(self.inputs, values, env)
        check_extents(self.program, self.inputs, self._extents_fn, env)
        for node, extent in zip(self._empty_reductions, self._reduced_fn(env)):
            node.check_extent(extent)
        if self.requires and not all(self._requires_fn(env)):  # the interpreter's wording
            failed = [str(r) for r, ok in zip(self.requires, self._requires_fn(env)) if not ok]
            raise InvalidData(f"its precondition on sizes ({' and '.join(failed)}) does not "
                              f"hold; sizes {dict(sorted(env.items()))}")
        return env

    def _variant(self, key, index_dtypes, out_index):
        hit = self._variants.get(key)
        if hit is not None:
            self.fast = getattr(hit[2], "fast", None)
            return hit
        with self._lock:
            hit = self._variants.get(key)
            if hit is None:
                src, functions = self.source(index_dtypes, out_index, key[2],
                                             sorted_workspace=key[3:] == ("sorted",))
                hit = (src, functions, load_module(src, name_hint=self.strategy))
                self._threaded[key] = any(has_parallel(fn.body) for fn in functions)
                self.any_threaded = self.any_threaded or self._threaded[key]
                self._variants[key] = hit
            self.fast = getattr(hit[2], "fast", None)
            return hit

    def takes_sorted_workspace(self, env, stored: int) -> bool:
        """Does a call with sizes ``env`` and ``stored`` input entries take the sorted
        workspace (a sparse product only; ``SORTED_WORKSPACE_COLUMNS``)?"""
        if not self._contract_sparse:
            return False
        (columns,) = self._columns_fn(env)
        dtype = self.plan.reduction.node.dtype
        return (columns > SORTED_WORKSPACE_COLUMNS and columns > SORTED_PER_ENTRY * stored) \
            or columns * Workspace.bytes_per_column(dtype) > memory_limit()

    def _scratch(self, env, setting, sorted_rows: bool = False) -> dict:
        """Work arrays that are not part of the result (a contraction's row workspace: one
        slice per thread of a parallel fill — one thread when that many slices would not fit
        in memory — and the rows' starts). ``sorted_rows``: only the rows' product counts
        (the sorted workspace is sized from them after ``count``)."""
        if not isinstance(self.plan, ContractPlan) or self.fmt.is_dense:
            return {}
        if sorted_rows:
            (rows,) = self._rows_fn(env)
            return self._arrays({"row_pos": ((rows + 1,), np.dtype(np.int64), None)},
                                "the row counts of a sorted workspace")
        (columns,) = self._columns_fn(env)
        dtype = self.plan.reduction.node.dtype
        if not self._contract_rows:
            out = self._arrays(Workspace.scratch(columns, dtype), "a row workspace")
            return out | Workspace.views(out, dtype)
        team = 1 if threads.openmp_runtime() is None else min(setting[0], MAX_THREADS)
        (rows,) = self._rows_fn(env)
        starts = {"row_pos": ((rows + 1,), np.dtype(np.int64), None)}
        specs = Workspace.scratch(columns, dtype, slices=team) | starts
        if team > 1 and nbytes(specs) > memory_limit():
            team = 1
            specs = Workspace.scratch(columns, dtype) | starts
        out: dict = self._arrays(specs, "a row workspace")
        out.update(Workspace.views(out, dtype))
        out[TEAM] = team
        return out

    def _arrays(self, specs: dict, what: str) -> dict[str, np.ndarray]:
        total = nbytes(specs)
        limit = memory_limit()
        if total > limit:
            raise TooLarge(f"{what} of {self.what} needs {show_bytes(total)}, more than this "
                           f"machine's {show_bytes(limit)}")
        try:
            return {part: np.empty(s, dtype=t) if init is None else np.full(s, init, dtype=t)
                    for part, (s, t, init) in specs.items()}
        except MemoryError:
            raise TooLarge(f"{what} of {self.what}: allocating {show_bytes(total)} "
                           f"failed") from None

    def _allocate(self, shape, capacity, out_index) -> dict[str, np.ndarray]:
        """Every output array ``run`` writes, sized for this call by its assembler;
        checked against the memory limit before anything is allocated."""
        asm = self._assemblers.get(out_index)
        if asm is None:  # one per output index width: creating it renders size text
            asm = self._assemblers[out_index] = self._assembler(out_index)
        specs = asm.allocation(tuple(shape), capacity)
        total = nbytes(specs)
        limit = memory_limit()
        if total > limit:
            raise TooLarge(
                f"{self.what} ({self.program.dtype}{tuple(shape)}) needs {show_bytes(total)} of "
                f"output arrays, more than this machine's {show_bytes(limit)}; for a result this "
                f"large use a sparse output format, or split the work")
        out = {}
        try:
            for part, (s, t, init) in specs.items():
                out[part] = np.empty(s, dtype=t) if init is None else np.full(s, init, dtype=t)
        except MemoryError:
            raise TooLarge(f"{self.what} ({self.program.dtype}{tuple(shape)}): allocating "
                           f"{show_bytes(total)} of output arrays failed") from None
        return out

    @staticmethod
    def _arg(a, prepared, outputs, env):
        kind = a.source[0]
        if kind == "size":
            return int(env[a.source[1]])
        if kind == "stride":
            arr = prepared[a.source[1]]["dense"]
            return arr.strides[a.source[2]] // arr.itemsize
        if kind == "dense":
            return prepared[a.source[1]]["dense"].ctypes.data
        if kind == "input":
            return prepared[a.source[1]][a.source[2]]
        if kind == "out":
            return outputs[a.source[1]]
        raise InternalError(f"unknown kernel parameter source {a.source}")

    def _finish(self, result, outputs, shape, out_index, library, env, dense_inputs=None):
        a = self.plan.assembly
        if a in ("dense", "accumulate"):
            asm = self._assemblers.get(out_index) or self._assembler(out_index)
            dense = asm.dense_view(outputs["val"])
            if "cnt" in outputs:  # cells that also cover implicit zeros meet a 0
                (extent,) = self._extent_fn(env)  # this call's sizes: kernels are shared
                # (or, of a dense-valued argument, its value outside what was visited: a
                # constant, or a node over located operands giving one value per cell)
                background = self.reduction.background
                unvisited = extent - asm.dense_view(outputs["cnt"])
                if isinstance(background, Node):
                    background = evaluate_background(
                        background, self.reduction, dense_inputs, env, dense.shape) \
                        if np.any(unvisited > 0) else np.zeros((), dense.dtype)
                combine_background(self.reduction.monoid, dense, unvisited,
                                   np.zeros((), dense.dtype) if background is None
                                   else background)
            if self.reduction is not None and self.reduction.total is not None:
                with np.errstate(all="ignore"):  # E - B was summed over the region
                    dense += background_total(self.reduction.total, self.reduction,
                                              dense_inputs, env, dense.shape, dense.dtype)
            return from_dense(dense, self.fmt, library)
        n, m = result
        if a in ("sort", "bucket"):
            val = outputs["val"][:n]
            crds = [outputs[f"crd{d}"][:n] for d in range(len(shape))]
            if a == "bucket":  # proved: in order within each outer coordinate
                order = np.argsort(crds[0], kind="stable")
            else:
                # crds are in storage order: so are the sizes of the keys
                order = row_major_order(crds, [shape[m] for m in self.fmt.mode_order])
            val = val[order]
            crds = [c[order] for c in crds]
            if self.reduction is not None:  # contributions: one entry per output cell
                val, crds = combine_duplicates(self.reduction.monoid, val, crds)
            elif self.checked:
                _no_collisions(crds, self.checked)
            return wrap_levels(self.fmt, shape, val,
                               compress(crds, self.fmt, shape, out_index), library)
        # outputs were allocated for an upper bound of entries: give the rest back
        val = trim(outputs["val"], n)
        if a == "scatter":
            arrays = {"pos1": outputs["pos1"], "crd1": trim(outputs["crd1"], n)}
            if "crd0" in outputs:
                arrays = {"crd0": trim(outputs["crd0"], n), "crd1": arrays["crd1"]}
        else:
            arrays = {k: v for k, v in outputs.items() if k != "val"}
            if self.fmt.kinds == ("pos", "pos"):
                arrays.update(crd0=trim(arrays["crd0"], m), pos1=trim(arrays["pos1"], m + 1),
                              crd1=trim(arrays["crd1"], n))
            else:
                arrays = {k: (trim(v, n) if k.startswith("crd") else v)
                          for k, v in arrays.items()}
        return wrap_levels(self.fmt, shape, val, arrays, library)


def combine_duplicates(monoid, val: np.ndarray, crds: list[np.ndarray]):
    """A reduction's contributions sorted by output coordinate (stable: in the order the
    kernel visited them) -> one entry per coordinate, its run combined by ``monoid`` (sum or
    any: identity zero), the cells that combine to zero dropped — what a dense accumulator
    made sparse (``from_dense``) stores."""
    n = val.shape[0]
    if n == 0:
        return val, crds
    new = np.ones(n, dtype=bool)
    if n > 1:
        same = np.ones(n - 1, dtype=bool)
        for c in crds:
            same &= c[1:] == c[:-1]
        new[1:] = ~same
    starts = np.flatnonzero(new)
    name = monoid if isinstance(monoid, str) else monoid.name
    ufunc = {"sum": np.add, "any": np.logical_or}[name]
    with np.errstate(all="ignore"):
        val = ufunc.reduceat(val, starts).astype(val.dtype, copy=False)
    keep = val != 0
    return val[keep], [c[starts][keep] for c in crds]


def _no_collisions(crds: list[np.ndarray], operator: str) -> None:
    """Sorted coordinates of an unproved operator's stage: two entries at one coordinate
    mean its forward maps collide (not injective, or pieces overlap)."""
    if not crds or crds[0].shape[0] < 2:
        return
    same = np.ones(crds[0].shape[0] - 1, dtype=bool)
    for c in crds:
        same &= c[1:] == c[:-1]
    if same.any():
        at = int(np.argmax(same))
        where = tuple(int(c[at]) for c in crds)
        raise InvalidData(f"{operator} (maps not proved) mapped two entries to the output "
                          f"coordinate {where}: its forward maps collide")


def trim(arr: np.ndarray, n: int) -> np.ndarray:
    """The first ``n`` entries of an output buffer we allocated and nobody else references:
    shrunk in place (``realloc``), so a result does not hold on to its upper-bound size —
    a strided slice keeps a quarter of its input's entries, not all of them."""
    if arr.shape[0] > n:
        arr.resize(n, refcheck=False)
    return arr


def extents_function(program: Node):
    """Every node's element count, as a function of the sizes (``check_extents``)."""
    return sz.python_function(tuple(sz.product(n.shape) for n in topological(program)
                                    if n.ndim))


def check_extents(program: Node, inputs, extents, env) -> None:
    """Raise for the first node of ``program`` with more than 2**63 - 1 elements: kernels
    compute coordinates in int64."""
    for node, e in zip((n for n in topological(program) if n.ndim), extents(env)):
        if e > _INT64_MAX:
            raise too_large(node, inputs, env, result=node is program)


def combine_background(monoid, out: np.ndarray, unvisited: np.ndarray, value) -> None:
    """Each cell combined with ``value`` once per unvisited coordinate of its reduction
    (``unvisited`` of them), NumPy's semantics (NaN propagates): a sum adds ``value *
    unvisited``, a product multiplies by ``value ** unvisited``, the idempotent monoids
    combine ``value`` once where any is. With 0: the cells that also cover implicit zeros
    (the max of a row with an unstored entry is at least 0; its product is 0)."""
    name = monoid if isinstance(monoid, str) else monoid.name
    v = np.asarray(value)
    missing = unvisited > 0  # only there: a NaN background times 0 cells is no NaN
    if not missing.any():
        return
    if v.ndim:  # one value per cell (background.py)
        v = np.broadcast_to(v, out.shape)[missing]
    with np.errstate(all="ignore"):
        if name == "sum":
            out[missing] += (v * unvisited[missing]).astype(out.dtype, copy=False)
        elif name == "prod":
            out[missing] *= np.power(v, unvisited[missing]).astype(out.dtype, copy=False)
        else:  # max, min, any, all: idempotent
            out[missing] = get_monoid(monoid).combine(out[missing], v.astype(out.dtype))


def _unit_last_stride(arr: np.ndarray) -> bool:
    return arr.ndim > 0 and arr.strides[-1] == arr.itemsize


def _stored(arrs: dict[str, np.ndarray], leaf: Input) -> np.ndarray:
    """The values a sparse input stores (its ``val`` may have an unread tail)."""
    kinds = leaf.format.kinds
    if kinds == ("full", "pos"):
        return arrs["val"][:int(arrs["pos1"][-1])]
    if kinds and kinds[0] == "pos" and "pos0" in arrs:
        return arrs["val"][:int(arrs["pos0"][-1])]
    return arrs["val"]


def _rows_skipped(plan: StreamPlan, program: Node, fmt: Format) -> bool:
    """Might a row-driven plan leave source rows unread (a row guard, or a piece whose leaf
    has another number of rows than the output)? Then the entry bound (all stored entries)
    can be far above what is written, and the kernel counts first."""
    row = sz.out_coord(fmt.mode_order[0]).name
    for piece in plan.pieces:
        rows = piece.leaf.shape[piece.leaf.format.mode_order[0]]
        if not sz.definitely_equal(rows, program.shape[fmt.mode_order[0]]) or \
                row_guards(piece, row):
            return True
    return False



def dense_axis_order(plan, ndim: int) -> tuple[int, ...] | None:
    """The memory order of a stream plan's dense output (``DenseOut.order``): the axes its
    broadcast loops (``StreamPiece.free``, opened innermost, in order) write go last, so the
    innermost loop writes contiguous cells; None when that is C order or the pieces
    disagree."""
    if ndim < 2 or not isinstance(plan, StreamPlan):
        return None
    orders = set()
    for piece in plan.pieces:
        coords = plan.reduction.out_coords(piece.coords) if plan.reduction else piece.coords
        names = [name for name, _ in piece.free]
        driven = {d: names.index(c.name) for d, c in enumerate(coords)
                  if isinstance(c, sz.Sym) and c.name in names}
        orders.add(tuple([d for d in range(ndim) if d not in driven] +
                         sorted(driven, key=driven.get)))
    if len(orders) != 1:
        return None
    (order,) = orders
    return None if order == tuple(range(ndim)) else order

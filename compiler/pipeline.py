"""The compiler's driver: one visible pipeline of small passes (DESIGN §3).

    program ─ optimize ─► plan ─► lower + emit (Cython text) ─► build (cached) ─► call

* **optimize** — rewrite with the catalog's rule instances the given prover accepts
  (``optimize.py``; ``sf.jit`` passes ``sparsefold.verify``'s cached proofs).
* **plan** — a map of two sparse operands as a merge (``merge_kernel.py``); a reduction
  as stored entries accumulated into its dense result; otherwise the program as streams of
  stored entries (``streams.py``) when its result is sparse, with output assembly chosen
  from a *proof* that the stream is in the output's order (``order.py``): bulk copies,
  append, a row loop or a piece merge when proved, count-and-scatter, bucket or full sort
  otherwise. Programs that are not streams (non-zero fill, e.g. ``A + 1``) take the dense
  kernel — slower, but every well-formed program compiles.
* **lower + emit** — ``stream_kernel.py`` / ``merge_kernel.py`` / ``dense_kernel.py`` (with
  ``pointwise.py`` and ``assembly.py``) into one Cython module (``source.py``).
* **build** — ``build.load_module`` (memory and disk cache).
* **call** — ``Kernel.__call__``: bind sizes, check preconditions, read and validate the
  inputs' storage (``sparsefold.storage``), allocate outputs, run, wrap the result in the
  container ``storage.results`` names.

A kernel is specialized per index dtypes (int32/int64 of every input index array and of the
output), chosen per call from the actual arrays and sizes, so nothing can overflow.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from sparsefold.compiler.assembly import AppendOut, BufferOut, DenseOut, ScatterOut
from sparsefold.compiler.checks import check_rows_first
from sparsefold.compiler.cnames import check_compilable_dtype
from sparsefold.compiler.dense_kernel import dense_kernel_source, input_size_args
from sparsefold.compiler.merge_kernel import (
    emit_merge,
    emit_row_merge,
    emit_stream_merge,
    merge_plan,
    pieces_mergeable,
)
from sparsefold.compiler.optimize import Prover, optimize
from sparsefold.compiler.order import prune_guards, stream_is_ordered, stream_is_row_ordered
from sparsefold.compiler.pointwise import Body, Pointwise
from sparsefold.compiler.source import Arg, render_module
from sparsefold.compiler.stream_kernel import (
    bulk_shifts,
    dense_leaf,
    dense_leaf_args,
    emit_bulk,
    emit_pieces,
    emit_row_count,
    emit_rows,
    leaf_args,
    row_guards,
    row_loop_applies,
)
from sparsefold.compiler.streams import NotAStream, finite_checks, stream_pieces
from sparsefold.spec import sizes as sz
from sparsefold.spec.compute import Input, Reduce
from sparsefold.spec.errors import InvalidData
from sparsefold.spec.formats import Format
from sparsefold.spec.functions import Monoid
from sparsefold.spec.ir import Node, ShapeOp
from sparsefold.spec.printer import show_program, topological
from sparsefold.storage.binding import bind_sizes
from sparsefold.storage.dense import dense_operand
from sparsefold.storage.levels import index_dtypes_of, sparse_levels
from sparsefold.storage.results import OUT_FORMATS, compress, from_dense, out_format, wrap_levels

__all__ = ["Plan", "plan", "Kernel", "OUT_FORMATS"]

_INT32_MAX = 2**31 - 1
_INT64_MAX = 2**63 - 1


@dataclass(frozen=True)
class Plan:
    """How a program will run: ``strategy`` is "stream", "merge" (a map of two sparse
    operands) or "dense"; ``assembly`` is one of "dense", "accumulate" (into a reduction's
    dense result), "append" (proved in order), "scatter" (count, then place: proved in
    order within each outer coordinate), "bucket" (likewise: a stable sort by the outer
    coordinate suffices) or "sort" (full sort)."""

    strategy: str
    assembly: str
    pieces: tuple = ()
    finite: tuple[Input, ...] = ()
    reason: str = ""
    loop: str = "leaf"  # "leaf": piece after piece; "row": output rows outermost; "bulk":
    #                     whole leaves copied; "merge": pieces merged by output key
    merge: Any = None   # merge_kernel.MergePlan for strategy "merge"


def _reduce_below(program: Node) -> tuple[Reduce | None, list[ShapeOp]]:
    """A reduction reached from the root through single-piece shape operators (squeeze
    after matmul, a reshape of the result), and those operators bottom-up."""
    chain: list[ShapeOp] = []
    node = program
    while isinstance(node, ShapeOp) and len(node.operands()) == 1 and node.fill is None:
        (piece,) = node.index_map().pieces
        if None in piece.forward:
            return None, []
        chain.append(node)
        node = node.operands()[0]
    if isinstance(node, Reduce):
        return node, chain[::-1]
    return None, []


def _accumulated(total: Reduce, chain: list[ShapeOp]) -> tuple:
    """Stream pieces of a sum's argument, with output coordinates = the kept coordinates
    carried up through ``chain``'s forward maps (their forward guards join the guard)."""
    out = []
    for p in stream_pieces(total.arg):
        coords = tuple(c for d, c in enumerate(p.coords) if d not in total.axes)
        guard = p.guard
        for op in chain:
            (piece,) = op.index_map().pieces
            env = sz.in_binding(coords)
            coords = tuple(sz.substitute(f, env) for f in piece.forward)
            guard = sz.and_(guard, sz.substitute(piece.forward_guard, env))
        out.append(replace(p, coords=coords, guard=guard))
    return tuple(out)


def plan(program: Node, fmt: Format, *, union: bool = False) -> Plan:
    """Choose a strategy (pass 2 of the pipeline)."""
    merge = merge_plan(program, fmt, union=union)
    if merge is not None:
        floats = [p.leaf for p in merge.pieces if p.leaf.dtype.kind == "f"]
        if merge.intersect and floats and any(p.layers for p in merge.pieces):
            return plan(program, fmt, union=True)  # can't check finiteness after the layers
        finite = tuple(floats) if merge.intersect else ()
        return Plan("merge", "dense" if fmt.is_dense else "append", merge.pieces, finite,
                    merge=merge)
    total, chain = _reduce_below(program)
    try:
        pieces = _accumulated(total, chain) if total else stream_pieces(program)
    except NotAStream as exc:
        return Plan("dense", "dense", reason=str(exc))
    pieces = prune_guards(pieces)
    finite = finite_checks(pieces)
    if total is not None:
        return Plan("stream", "accumulate", pieces, finite)
    if fmt.is_dense:
        return Plan("stream", "dense", pieces, finite)
    order = fmt.mode_order
    # Whole leaves in order (vstack): bulk copies. Otherwise output rows outermost when the
    # leaves allow it: rows are closed once each and the inner loop is a plain copy; that
    # needs order only within a row.
    ordered = stream_is_ordered(pieces, order)
    if ordered and all(bulk_shifts(p, fmt, program.dtype) is not None for p in pieces):
        return Plan("stream", "append", pieces, finite, loop="bulk")
    if len(order) > 1 and row_loop_applies(pieces, order) and \
            stream_is_row_ordered(pieces, order):
        return Plan("stream", "append", pieces, finite, loop="row")
    if ordered:
        return Plan("stream", "append", pieces, finite)
    if pieces_mergeable(pieces, order):  # e.g. hstack of COO: one merging pass
        return Plan("stream", "append", pieces, finite, loop="merge")
    if len(order) == 2 and fmt.levels[0].full or fmt.kinds == ("pos", "one"):
        if stream_is_row_ordered(pieces, order):
            return Plan("stream", "scatter", pieces, finite)
    if len(order) > 1 and stream_is_row_ordered(pieces, order):
        return Plan("stream", "bucket", pieces, finite)
    return Plan("stream", "sort", pieces, finite)


def _requires(program: Node) -> list[sz.Expr]:
    out = []
    for n in topological(program):
        if isinstance(n, ShapeOp):
            r = n.index_map().requires
            if r != sz.TRUE:
                out.append(r)
    return out


@dataclass
class Kernel:
    """A compiled program for one output format; variants per index dtypes are built on
    first use and cached (memory + disk, ``build.py``)."""

    program: Node
    out_name: str
    proved: Prover | None = None  # which rule instances optimize may apply (none: no rewrite)
    fixed_plan: Plan | None = None  # a plan given by the caller (the exact fallback
    #                                  variant of a kernel): no optimize, no planning
    plan: Plan = field(init=False)
    fmt: Format = field(init=False)

    def __post_init__(self):
        self.source_program = self.program
        if self.fixed_plan is None:
            self.program = optimize(self.program, self.proved)
        for n in topological(self.program):
            check_compilable_dtype(n.dtype, f"{type(n).__name__} {n.dtype}")
        self.fmt = out_format(self.out_name, self.program.ndim)
        self.plan = self.fixed_plan or plan(self.program, self.fmt)
        self.inputs = [n for n in topological(self.program) if isinstance(n, Input)]
        self.requires = _requires(self.program)
        self.reduction = _reduce_below(self.program)[0] if self.plan.assembly == "accumulate" \
            else None
        self._rows_skipped = self.plan.loop == "row" and _rows_skipped(self.plan, self.program,
                                                                        self.fmt)
        self._compile_size_functions()
        self._variants: dict[tuple, tuple[str, list[Arg], Any]] = {}
        self._lock = threading.Lock()
        self._dense_fallback: Kernel | None = None

    def _compile_size_functions(self) -> None:
        """Sizes the call needs, as compiled Python functions of the bound symbols."""
        self._shape_fn = sz.python_function(tuple(self.program.shape))
        # every node's element count: kernels compute coordinates in int64
        self._extents_fn = sz.python_function(tuple(
            sz.product(n.shape) for n in topological(self.program) if n.ndim))
        red = self.reduction
        self._extent_fn = sz.python_function(
            (sz.product(red.arg.shape[d] for d in red.axes),) if red is not None else ())
        self._requires_fn = sz.python_function(tuple(self.requires))
        # max/min (no identity) have no value over nothing: checked once sizes are bound
        self._empty_reductions = [n for n in topological(self.program)
                                  if isinstance(n, Reduce) and n.monoid.identity is None]
        self._reduced_fn = sz.python_function(tuple(n.extent()
                                                    for n in self._empty_reductions))
        self._free_extents = [sz.python_function(tuple(size for _, size in piece.free))
                              for piece in self.plan.pieces]

    # --- source ---------------------------------------------------------------------------
    def source(self, index_dtypes: dict[str, dict[str, str]], out_index: str) -> tuple[str, list]:
        if self.plan.strategy == "dense":
            return dense_kernel_source(self.program)
        return self._stream_source(index_dtypes, out_index)

    def _stream_source(self, index_dtypes, out_index):
        p, program = self.plan, self.program
        body = Body(depth=2)
        args: list[Arg] = []
        for inp in self.inputs:
            args += dense_leaf_args(inp) if inp.format.is_dense else \
                leaf_args(inp, index_dtypes[inp.name])
        args += input_size_args(program)
        if p.assembly in ("dense", "accumulate"):
            asm = DenseOut(program.shape, program.dtype,
                           monoid=self.reduction.monoid if p.assembly == "accumulate" else None)
        elif p.assembly == "append":
            asm = AppendOut(self.fmt, program.shape, program.dtype, out_index)
        elif p.assembly == "scatter":
            asm = ScatterOut(self.fmt, program.shape, program.dtype, out_index)
        else:
            asm = BufferOut(self.fmt, program.shape, program.dtype, out_index,
                            bucket=p.assembly == "bucket")
        args += asm.args()
        if check_rows_first(body, [i for i in self.inputs if not i.format.is_dense]):
            body.line("if sf_bad == 0:")
            body.depth += 1
        asm.prologue(body)
        pointwise = Pointwise(body, dense_leaf)
        if p.strategy == "merge" and p.merge.rows:
            emit_row_merge(body, p.merge, self.fmt, program.shape, asm, pointwise)
        elif p.strategy == "merge":
            emit_merge(body, p.merge, self.fmt, asm, pointwise)
        elif p.loop == "bulk":
            emit_bulk(body, p.pieces, self.fmt, program.shape, asm, index_dtypes)
        elif p.loop == "merge":
            emit_stream_merge(body, p.pieces, self.fmt, asm, pointwise)
        elif p.loop == "row":
            emit_rows(body, p.pieces, self.fmt.mode_order, program.shape, asm, pointwise,
                      index_dtypes)
        else:
            emit_pieces(body, p.pieces, asm, pointwise)
        asm.epilogue(body)
        what = "two sparse operands, row loop" if p.strategy == "merge" and p.merge.rows else \
            "two sparse operands, cursors" if p.strategy == "merge" else \
            f"{len(p.pieces)} piece(s), {p.loop} loop"
        notes = [f"Strategy: {p.strategy} ({what}); {asm.note}."]
        if p.finite:
            exact = "an exact variant (the union merge, else the dense kernel)" \
                if p.strategy == "merge" else "the dense kernel"
            notes.append("Valid when " + ", ".join(i.name for i in p.finite) + " are finite "
                         f"(0 * inf is nan); the runtime checks and otherwise runs {exact}.")
        count = None
        if self._rows_skipped:  # the exact entry count, for right-sized outputs
            cbody = Body(depth=2)
            emit_row_count(cbody, p.pieces, self.fmt.mode_order, program.shape)
            count = ([a for a in args if a.source[0] != "out"], cbody)
        src = render_module(title=f"stream -> {self.fmt}", program_text=show_program(program),
                            notes=notes, args=args, body=body, returns=asm.returns,
                            count=count)
        return src, args

    # --- call -----------------------------------------------------------------------------
    def __call__(self, values: dict[str, Any], library: str = "scipy"):
        env = self._bind(values)
        p = self.plan
        if p.finite and p.strategy != "merge" and not all(np.all(np.isfinite(
                dense_operand(values[i.name], i.dtype, i.name))) for i in p.finite):
            return self._fallback()(values, library)
        prepared, dtypes = self._prepare(values)
        if p.strategy == "merge" and p.finite and not all(
                np.all(np.isfinite(prepared[i.name]["val"])) for i in p.finite):
            return self._fallback()(values, library)
        capacity = 0
        for piece, extent in zip(p.pieces, self._free_extents):
            arrs = prepared[piece.leaf.name]
            n = arrs["dense"].size if "dense" in arrs else int(arrs["val"].shape[0])
            for f in extent(env):
                n *= f
            capacity += n
        out_shape = self._shape_fn(env)
        big = max(out_shape + (capacity,), default=0) > _INT32_MAX
        out_index = "int64" if big else "int32"
        key = (tuple((name, tuple(d.items())) for name, d in dtypes.items()), out_index)
        src, args, module = self._variant(key, dtypes, out_index)
        if self._rows_skipped and capacity > _EXACT_CAPACITY_ABOVE:
            # a row loop may skip rows (a strided slice keeps a quarter of its entries): size
            # the outputs exactly rather than for every input entry (peak memory)
            capacity = max(0, min(capacity, module.count(
                *[self._arg(a, prepared, None, env) for a in args if a.source[0] != "out"])))
        outputs = self._allocate(out_shape, capacity, out_index)
        argv = [self._arg(a, prepared, outputs, env) for a in args]
        result = module.run(*argv)
        return self._finish(result, outputs, out_shape, out_index, library, env)

    def _prepare(self, values) -> tuple[dict[str, dict[str, np.ndarray]],
                                        dict[str, dict[str, np.dtype]]]:
        """Each input's arrays as the kernel reads them (validated level arrays, or a dense
        array), and the index dtypes of the sparse ones: what the variant is chosen by."""
        prepared: dict[str, dict[str, np.ndarray]] = {}
        dtypes: dict[str, dict[str, np.dtype]] = {}
        for inp in self.inputs:
            if self.plan.strategy == "dense" or inp.format.is_dense:
                arr = dense_operand(values[inp.name], inp.dtype, inp.name)
                prepared[inp.name] = {"dense": arr}
            else:
                levels = sparse_levels(values[inp.name], inp, inp.name, rows_in_kernel=True)
                prepared[inp.name] = levels
                dtypes[inp.name] = index_dtypes_of(levels)
        return prepared, dtypes

    def source_for(self, values: dict[str, Any], out_index: str = "int32") -> str:
        """The Cython this kernel runs on ``values`` (index widths as for these arrays; the
        output's as ``out_index``), without building it."""
        return self.source(self._prepare(values)[1], out_index)[0]

    def _bind(self, values) -> dict[str, int]:
        env = bind_sizes(self.inputs, values)
        if any(e > _INT64_MAX for e in self._extents_fn(env)):
            raise InvalidData(f"sizes {env} make an array of more than 2**63 - 1 elements; "
                              f"coordinates would overflow int64")
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
            return hit
        with self._lock:
            hit = self._variants.get(key)
            if hit is None:
                from sparsefold.compiler.build import load_module
                src, args = self.source(index_dtypes, out_index)
                hit = (src, args, load_module(src, name_hint=self.plan.strategy))
                self._variants[key] = hit
            return hit

    def _allocate(self, shape, capacity, out_index) -> dict[str, np.ndarray]:
        dt = self.program.dtype
        a = self.plan.assembly
        if a == "accumulate" and self.reduction.monoid.name != "sum":
            return {"val": np.full(shape, self.reduction.monoid.start(dt), dtype=dt),
                    "cnt": np.zeros(shape, dtype=np.int64)}
        if a in ("dense", "accumulate"):
            return {"val": np.zeros(shape, dtype=dt)}
        ix = np.dtype(out_index)
        out = {"val": np.empty(capacity, dtype=dt)}
        if a == "scatter":
            rows = shape[self.fmt.mode_order[0]]
            out.update(pos1=np.empty(rows + 1, dtype=ix), nxt=np.empty(rows, dtype=np.int64),
                       crd1=np.empty(capacity, dtype=ix))
            if not self.fmt.levels[0].full:
                out["crd0"] = np.empty(capacity, dtype=ix)
            return out
        if a in ("sort", "bucket"):
            for d in range(len(shape)):
                out[f"crd{d}"] = np.empty(capacity, dtype=ix)
            return out
        kinds = self.fmt.kinds
        if kinds == ("full", "pos"):
            out["pos1"] = np.empty(shape[self.fmt.mode_order[0]] + 1, dtype=ix)
            out["crd1"] = np.empty(capacity, dtype=ix)
        elif kinds == ("pos", "pos"):
            parents = min(capacity, shape[self.fmt.mode_order[0]])
            out["crd0"] = np.empty(parents, dtype=ix)
            out["pos1"] = np.empty(parents + 1, dtype=ix)
            out["crd1"] = np.empty(capacity, dtype=ix)
        else:
            for level in range(len(kinds)):
                out[f"crd{level}"] = np.empty(capacity, dtype=ix)
        return out

    @staticmethod
    def _arg(a: Arg, prepared, outputs, env):
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
        raise AssertionError(a)

    def _finish(self, result, outputs, shape, out_index, library, env):
        a = self.plan.assembly
        if a in ("dense", "accumulate") or self.plan.strategy == "dense":
            dense = outputs["val"]
            if "cnt" in outputs:  # cells that also cover implicit zeros meet a 0
                (extent,) = self._extent_fn(env)  # this call's sizes: kernels are shared
                _combine_zero(self.reduction.monoid, dense, outputs["cnt"] < extent)
            return from_dense(dense, self.fmt, library)
        n, m = result
        if a in ("sort", "bucket"):
            val = outputs["val"][:n]
            crds = [outputs[f"crd{d}"][:n] for d in range(len(shape))]
            if a == "bucket":  # proved: in order within each outer coordinate
                order = np.argsort(crds[0], kind="stable")
            else:
                order = np.lexsort(crds[::-1]) if n > 1 else np.arange(n)
            val = val[order]
            crds = [c[order] for c in crds]
            arrays = compress(crds, self.fmt, shape, out_index)
            return wrap_levels(self.fmt, shape, val, arrays, library)
        # outputs were allocated for an upper bound of entries: give the rest back
        val = _trim(outputs["val"], n)
        if a == "scatter":
            arrays = {"pos1": outputs["pos1"], "crd1": _trim(outputs["crd1"], n)}
            if "crd0" in outputs:
                arrays = {"crd0": _trim(outputs["crd0"], n), "crd1": arrays["crd1"]}
        else:
            arrays = {k: v for k, v in outputs.items() if k != "val"}
            if self.fmt.kinds == ("pos", "pos"):
                arrays.update(crd0=_trim(arrays["crd0"], m), pos1=_trim(arrays["pos1"], m + 1),
                              crd1=_trim(arrays["crd1"], n))
            else:
                arrays = {k: (_trim(v, n) if k.startswith("crd") else v)
                          for k, v in arrays.items()}
        return wrap_levels(self.fmt, shape, val, arrays, library)

    def _fallback(self) -> Kernel:
        """The exact variant, for operands that are not finite: a union merge (it evaluates
        the function wherever either operand stores a value), else the dense kernel."""
        if self._dense_fallback is None:
            union = plan(self.program, self.fmt, union=True) if self.plan.strategy == "merge" \
                else None
            exact = union if union is not None and union.strategy == "merge" else \
                Plan("dense", "dense", reason="an operand is not finite")
            self._dense_fallback = Kernel(self.program, self.out_name, fixed_plan=exact)
        return self._dense_fallback


def _trim(arr: np.ndarray, n: int) -> np.ndarray:
    """The first ``n`` entries of an output buffer we allocated and nobody else references:
    shrunk in place (``realloc``), so a result does not hold on to its upper-bound size —
    a strided slice keeps a quarter of its input's entries, not all of them."""
    if arr.shape[0] > n:
        arr.resize(n, refcheck=False)
    return arr


def _rows_skipped(plan: Plan, program: Node, fmt: Format) -> bool:
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


# below this many entries an upper-bound allocation costs less than an exact count
_EXACT_CAPACITY_ABOVE = 1 << 15


def _combine_zero(monoid: Monoid, out: np.ndarray, missing: np.ndarray) -> None:
    """``out[missing] = monoid(out[missing], 0)``, NumPy's semantics (NaN propagates)."""
    if not missing.any():
        return
    out[missing] = monoid.combine(out[missing], np.zeros((), out.dtype))

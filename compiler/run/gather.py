"""Gather kernels (``spec.ops_gather``): integer-array indexing of sparse storage, never
densified. A gather is computed by a stage of its own (``pipeline.Kernel``): its operand
and index arrays are inputs (earlier stages compute them when they are expressions), its
result a sparse temporary the rest of the program reads — so ``A[idx] * B`` is a gather
stage, then the fused multiply over its result.

The map reads data, so the kernel computes it: for each output entry, the position of the
input entry it copies (``src``) and its coordinate on the index arrays' axes (``newc``);
values and the other coordinates are then read through ``src``. Two loop shapes:

* **outer gather** — one index array on the operand's *outermost* storage mode (CSR rows,
  CSC columns, COO's first axis): output segment ``k`` copies input segment ``idx[k]``
  (located through ``pos``; COO's segment pointer is counted first). Duplicates copy a
  segment twice. Entries come out in storage order for *any* index array.
* **inner gather** — one index array on another mode: the inverse map (input coordinate
  -> the ``k`` that read it) is built per call as a counting structure (``start``/``perm``,
  a counting sort of the index array, O(K + n)); each stored entry is emitted once per
  ``k`` that reads it. In storage order when the index array is strictly increasing, or
  non-decreasing and the mode is the innermost; otherwise (checked at run time, O(K)) the
  entries are sorted — the reorder the header states: a stable counting sort per mode
  (O(nnz + n) each), or ``np.lexsort`` when a mode is much larger than the entry count.

Several index arrays (``x[i, j]``) pair entries with index positions through a sorted
inverse (``np.argsort`` + ``np.searchsorted`` over the linearized coordinates), then sort.
A dense operand is gathered by NumPy's indexing (dense in, dense out).
"""

from __future__ import annotations

import numpy as np

from sparsefold.compiler.plan.cost import stage_cost
from sparsefold.compiler.run.build import ensure_runtime
from sparsefold.spec import sizes as sz
from sparsefold.spec.compute import Input
from sparsefold.spec.errors import InternalError
from sparsefold.spec.formats import Format, named_format
from sparsefold.spec.ops_gather import Gather, normalize_indices
from sparsefold.storage.binding import bind_sizes
from sparsefold.storage.dense import dense_operand
from sparsefold.storage.levels import canonical_order, sparse_levels
from sparsefold.storage.results import compress, from_dense, wrap_levels

__all__ = ["GatherStage", "EntryCoordinates", "gather_format", "serves", "load_gather_kernels"]


def _module():
    """The compiled maps (``outer_count``, ``inner_fill``, ...): the shared runtime's."""
    return ensure_runtime()


def load_gather_kernels() -> None:
    """Load (or build) the module every gather stage runs (``pipeline.Kernel.build_for``)."""
    _module()


def serves(fmt: Format) -> bool:
    """Can a gather stage assemble its result in ``fmt`` itself (no copy kernel after)?"""
    return fmt.is_dense or fmt.kinds in (("full", "pos"), ("pos",)) or (
        fmt.kinds[:1] == ("pos",) and all(k == "one" for k in fmt.kinds[1:]))


def gather_format(node: Gather) -> Format:
    """The result's storage: the operand's format when the rank is kept (a CSC stays CSC),
    else row-major (COO for n-d); dense when the operand is dense."""
    arg = node.arg
    fmt = arg.format if isinstance(arg, Input) else named_format("dense", arg.ndim)
    if fmt.is_dense:
        return named_format("dense", node.ndim)
    if node.ndim == arg.ndim and fmt.name in ("csr", "csc", "coo"):
        return fmt
    if node.ndim == 0:
        return named_format("dense", 0)
    return named_format("csr" if node.ndim <= 2 else "coo", node.ndim)


class EntryCoordinates:
    """The coordinate of every stored entry on an *array* axis, in storage order, computed
    on first use (a CSR row gather never expands the row of each entry)."""

    def __init__(self, levels: dict, fmt: Format, shape):
        self.levels, self.fmt, self.shape = levels, fmt, shape
        self._done: dict[int, np.ndarray] = {}

    def __getitem__(self, axis: int) -> np.ndarray:
        if axis not in self._done:
            self._done[axis] = self._compute(self.fmt.mode_order.index(axis))
        return self._done[axis]

    def _compute(self, lv: int) -> np.ndarray:
        fmt, levels, shape = self.fmt, self.levels, self.shape
        sizes = [shape[m] for m in fmt.mode_order]
        if fmt.kinds[lv] == "full":
            npos = 1
            for up in range(lv):
                kind = fmt.kinds[up]
                npos = npos * sizes[up] if kind == "full" else (
                    int(levels[f"pos{up}"][-1]) if kind == "pos" else npos)
            c = np.tile(np.arange(sizes[lv], dtype=np.int64), npos)
        else:
            c = np.asarray(levels[f"crd{lv}"], dtype=np.int64)
        for down in range(lv + 1, len(fmt.kinds)):
            kind = fmt.kinds[down]
            if kind == "full":
                c = np.repeat(c, sizes[down])
            elif kind == "pos":
                c = np.repeat(c, np.diff(np.asarray(levels[f"pos{down}"], dtype=np.int64)))
        return c


class GatherStage:
    """A stage computing one :class:`Gather` whose operand and index arrays are inputs."""

    strategy = "gather"
    plan = None
    fast = None  # no fast call entry (compiler/lower/fastcall.py): calls take the checked path
    _threaded: dict = {}  # no parallel loop in any variant (never written)
    any_threaded = False

    def __init__(self, node: Gather, what: str, fmt: Format | None = None):
        if not isinstance(node.arg, Input) or not all(
                isinstance(i, Input) and i.format.is_dense for i in node.indices):
            raise InternalError("a gather stage reads inputs only (earlier stages compute "
                                "the others)")
        self.program, self.what = node, what
        self.fmt = gather_format(node) if fmt is None else fmt
        self.inputs = [node.arg, *node.indices]
        self.stage_notes: list[str] = []
        self._shape_fn = sz.python_function(tuple(node.shape))
        self.cost = stage_cost(None, node, self.fmt, self.inputs)

    # --- text -----------------------------------------------------------------------------
    def header(self) -> str:
        node, arg = self.program, self.program.arg
        fmt = arg.format
        one = len(node.axes) == 1
        outer = one and not fmt.is_dense and fmt.mode_order[0] == node.axes[0]
        if fmt.is_dense:
            how = "dense operand: NumPy's integer-array indexing (dense in, dense out)"
        elif outer:
            how = ("outer gather: output segment k copies input segment idx[k]; entries in "
                   "storage order for any index array (sorted or not, duplicates copied)")
        elif one:
            how = ("inner gather through a counting inverse of the index array; in storage "
                   "order when the index array is strictly increasing (or non-decreasing on "
                   "the innermost mode), checked at run time; otherwise REORDERED (a "
                   "counting sort per mode)")
        else:
            how = ("gather on several axes: sorted inverse of the linearized index arrays, "
                   "then REORDERED (sorted)")
        lines = [f"sparsefold gather kernel: {self.what}",
                 f"  {arg.name}: {arg.dtype}{list(map(str, arg.shape))} {fmt} gathered on "
                 f"axes {node.axes} by {', '.join(i.name for i in node.indices)}",
                 f"  result: {node.dtype}{list(map(str, node.shape))} {self.fmt}",
                 f"  {how}",
                 "  index arrays are normalized (negative from the end) and range-checked "
                 "before the kernel runs (InvalidIndex)"]
        return "\n".join("# " + line for line in lines)

    def source(self, index_dtypes=None, out_index: str = "int32", unit_stride=None,
               sorted_workspace=False):
        return (self.header() + "\n# the maps are computed by the shared runtime's outer_count, "
                "outer_fill, inverse,\n# inner_count, inner_fill and counting_order "
                "(compiler/runtime.pyx): nothing is compiled\n",)

    # --- call -----------------------------------------------------------------------------
    def __call__(self, values: dict, library: str = "scipy", env: dict | None = None):
        node = self.program
        env = bind_sizes(self.inputs, values, env)
        arg = node.arg
        shape = tuple(int(sz.evaluate(n, env)) for n in arg.shape)
        reads = [normalize_indices(dense_operand(values[i.name], i.dtype, i.name),
                                   shape[a], a) for i, a in zip(node.indices, node.axes)]
        out_shape = self._shape_fn(env)
        if arg.format.is_dense:
            out = self._dense(dense_operand(values[arg.name], arg.dtype, arg.name), reads)
            return out if self.fmt.is_dense else from_dense(out, self.fmt, library)
        levels = sparse_levels(values[arg.name], arg, arg.name)
        coords = EntryCoordinates(levels, arg.format, shape)
        src, newc, ordered = self._map(levels, coords, shape, reads)
        a0, nb = node.axes[0], len(node.index_shape)
        kb = np.unravel_index(newc, reads[0].shape) if nb else ()
        out_coords = [coords[d][src] for d in range(a0)] + list(kb) + [
            coords[d][src] for d in range(a0 + 1, arg.ndim) if d not in node.axes]
        val = np.asarray(levels["val"])[src]
        fmt = self.fmt
        if fmt.is_dense:  # asked for a dense result: the gathered entries scattered
            out = np.zeros(out_shape, dtype=node.dtype)
            out[tuple(out_coords)] = val  # distinct coordinates: a gather never collides
            return out
        ordered = ordered and fmt.mode_order == arg.format.mode_order
        stored = [np.asarray(out_coords[d], dtype=np.int64) for d in fmt.mode_order]
        if not ordered and not canonical_order(stored):
            order = _storage_order(stored, [out_shape[d] for d in fmt.mode_order])
            stored, val = [c[order] for c in stored], val[order]
        ix = np.int64 if max(out_shape + (val.shape[0],), default=0) > 2**31 - 1 else np.int32
        arrays = compress(stored, fmt, out_shape, ix)
        return wrap_levels(fmt, out_shape, np.ascontiguousarray(val), arrays, library)

    def _map(self, levels, coords, shape, reads):
        """(src, newc, ordered): the gather's map over the stored entries."""
        node, fmt = self.program, self.program.arg.format
        mod = _module()
        nnz = int(np.asarray(levels["val"]).shape[0])
        if len(node.axes) > 1:
            return (*_sorted_inverse(coords, shape, node.axes, reads), False)
        (a,), (idx,) = node.axes, reads
        idx = np.ascontiguousarray(idx.ravel(), dtype=np.int64)
        if shape[a] > 4 * (nnz + idx.shape[0]) + 1024:
            # an axis far longer than the entries and the index (a 10^12 flattened view):
            # the per-coordinate maps below would allocate the axis (64 GiB for the fuzzer's
            # ravel of a 2048^3 array); argsort + searchsorted is O((nnz + K) log K)
            return (*_sorted_inverse(coords, shape, (a,), (idx,)), False)
        if fmt.mode_order[0] == a:  # outer gather
            if fmt.kinds[0] == "full" and len(fmt.kinds) == 2:
                ptr = np.asarray(levels["pos1"], dtype=np.int64)
            else:
                counts = np.bincount(coords[a], minlength=shape[a]) if nnz else \
                    np.zeros(shape[a], np.int64)
                ptr = np.concatenate(([0], np.cumsum(counts))).astype(np.int64)
            total = mod.outer_count(ptr, idx)
            src, newc = np.empty(total, np.int64), np.empty(total, np.int64)
            mod.outer_fill(ptr, idx, src, newc)
            return src, newc, len(node.index_shape) == 1
        start = np.zeros(shape[a] + 1, np.int64)
        perm = np.empty(idx.shape[0], np.int64)
        mod.inverse(idx, start, perm)
        crd = np.ascontiguousarray(coords[a], dtype=np.int64)
        total = mod.inner_count(crd, start)
        src, newc = np.empty(total, np.int64), np.empty(total, np.int64)
        mod.inner_fill(crd, start, perm, src, newc)
        steps = np.diff(idx)
        innermost = fmt.mode_order[-1] == a
        ordered = len(node.index_shape) == 1 and (
            bool(np.all(steps > 0)) or (innermost and bool(np.all(steps >= 0))))
        return src, newc, ordered

    def _dense(self, dense: np.ndarray, reads) -> np.ndarray:
        node = self.program
        moved = np.moveaxis(dense, node.axes, tuple(range(len(node.axes))))
        out = moved[tuple(reads)]
        nb = len(node.index_shape)
        return np.ascontiguousarray(np.moveaxis(out, tuple(range(nb)),
                                                tuple(range(node.axes[0], node.axes[0] + nb))))


def _storage_order(stored: list[np.ndarray], sizes: list[int]) -> np.ndarray:
    """The permutation sorting entries by their coordinates in storage order: least
    significant mode first, a stable counting sort per mode (linear) where the mode's size
    is within a few times the entry count, else ``np.lexsort``."""
    nnz = stored[0].shape[0]
    if any(n > 4 * nnz + 1024 for n in sizes):
        return np.lexsort(stored[::-1])
    mod = _module()
    order = np.arange(nnz, dtype=np.int64)
    for c, n in zip(stored[::-1], sizes[::-1]):
        step = np.empty(nnz, np.int64)
        mod.counting_order(np.ascontiguousarray(c[order]), np.zeros(n + 1, np.int64), step)
        order = order[step]
    return order


def _sorted_inverse(coords, shape, axes, reads):
    """Several index arrays: entry e is read by every k whose linearized index equals e's
    linearized coordinate on ``axes`` (argsort + searchsorted, O((nnz + K) log K))."""
    strides = np.cumprod([1] + [shape[a] for a in axes[:0:-1]])[::-1]
    lin = sum(np.ravel(r).astype(np.int64) * int(s) for r, s in zip(reads, strides))
    key = sum(coords[a] * int(s) for a, s in zip(axes, strides))
    order = np.argsort(lin, kind="stable")
    sorted_lin = lin[order]
    lo = np.searchsorted(sorted_lin, key, "left")
    hi = np.searchsorted(sorted_lin, key, "right")
    counts = hi - lo
    src = np.repeat(np.arange(key.shape[0], dtype=np.int64), counts)
    offsets = np.arange(src.shape[0], dtype=np.int64) - np.repeat(np.cumsum(counts) - counts,
                                                                  counts)
    newc = order[np.repeat(lo, counts) + offsets]
    return src, newc.astype(np.int64)

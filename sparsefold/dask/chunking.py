"""Block layouts: how every node of a traced program is split into blocks (dask's ``chunks``).

Layouts are computed bottom-up from the inputs' chunks; each rule keeps block boundaries
where the operator maps them (DESIGN §1's index maps, read on concrete sizes):

* elementwise maps and concat's other axes: the common refinement of the operands' chunks
  (what ``dask.array.core.unify_chunks`` does), taken over the *fixed* operands only when
  there are any — a user's input can be rechunked by dask, a strided slice or an index of
  it cannot without slicing inside kernels;
* concat: the operands' chunks one after the other, so no block straddles two operands;
* slice: one block per operand chunk holding a selected element (strides map chunk
  boundaries to boundaries); index: the axis goes away;
* transpose, expand_dims, squeeze: chunks move with their axes; broadcast axes: one block;
* collapse and split (reshape): boundaries that fall on whole rows of the inner axes are
  kept; others are dropped, which merges blocks (a rechunk done inside the kernels) and
  warns with :class:`RechunkWarning`;
* reduce: the operand's chunks without the reduced axes. A reduce whose reduced axes are
  single blocks stays *virtual* (fused into its consumer's kernel); otherwise it is
  *materialized*: per-block partial kernels and a tree of combine kernels.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from sparsefold.spec import sizes as sz
from sparsefold.spec.compute import Input, Literal, Map, Reduce
from sparsefold.spec.errors import IllFormedProgram, InternalError
from sparsefold.spec.ir import Node
from sparsefold.spec.ops_axes import BroadcastTo, ExpandDims, PermuteDims, Squeeze
from sparsefold.spec.ops_concat import Concat
from sparsefold.spec.ops_index import Index, Slice, normalize_slice
from sparsefold.spec.ops_reshape import Collapse, Split

__all__ = ["Layout", "Layouts", "RechunkWarning", "offsets", "from_offsets", "refine",
           "snap", "ints", "slice_params", "SUPPORTED"]

try:  # a dask PerformanceWarning, so one filter silences both; a plain warning without dask
    from dask.array import PerformanceWarning as _Base
except ImportError:  # pragma: no cover - sparsefold.dask needs dask anyway
    _Base = UserWarning


class RechunkWarning(_Base):
    """A reshape's chunk boundaries do not fall on whole rows of the new axes: blocks were
    merged (each result block reads several input chunks), so there is less parallelism."""


SUPPORTED = (Input, Literal, Map, Reduce, Concat, Slice, Index, PermuteDims, ExpandDims,
             Squeeze, BroadcastTo, Collapse, Split)


@dataclass(frozen=True, slots=True)
class Layout:
    """A node's blocks: chunk sizes per axis; ``fixed`` when changing them would need
    slicing inside kernels rather than a rechunk of a user's array (a strided slice, an
    index, a materialized reduction, or anything computed from one)."""

    chunks: tuple[tuple[int, ...], ...]
    fixed: bool


def ints(shape) -> tuple[int, ...]:
    """Concrete sizes of a node traced on concrete shapes."""
    out = tuple(sz.const_value(n) for n in shape)
    if any(n is None for n in out):
        raise InternalError(f"expected concrete sizes in the traced program, found {shape}")
    return out


def offsets(sizes: Sequence[int]) -> list[int]:
    """Chunk boundaries ``0, s0, s0+s1, ...``."""
    out = [0]
    for s in sizes:
        out.append(out[-1] + s)
    return out


def from_offsets(bounds: Iterable[int], n: int) -> tuple[int, ...]:
    """Chunk sizes with boundaries ``bounds`` (plus 0 and ``n``); a size-0 axis is one empty
    chunk, and no other chunk is empty."""
    if n == 0:
        return (0,)
    b = sorted({x for x in bounds if 0 < x < n} | {0, n})
    return tuple(hi - lo for lo, hi in zip(b, b[1:]))


def refine(chunkings: Sequence[Sequence[int]], n: int) -> tuple[int, ...]:
    """The common refinement: every boundary of every chunking."""
    return from_offsets((x for c in chunkings for x in offsets(c)), n)


def snap(sizes: Sequence[int], lo: int, hi: int) -> tuple[int, int]:
    """The smallest union of chunks covering ``[lo, hi)`` (``(L, L)`` for an empty range)."""
    b = offsets(sizes)
    start = max(x for x in b if x <= lo)
    if hi <= lo:
        return start, start
    return start, min(x for x in b if x >= hi)


def slice_params(n: int, triple) -> tuple[int, int, int]:
    """``(first, step, count)`` of a slice triple on an axis of concrete size ``n``."""
    first, step, count = normalize_slice(sz.Const(n), *triple)
    return sz.const_value(first), step, sz.const_value(count)


def _ceil_div(a: int, b: int) -> int:
    return -((-a) // b)


def selected(lo: int, hi: int, first: int, step: int, count: int) -> tuple[int, int]:
    """Output positions ``[k0, k1)`` of a slice whose elements ``first + k*step`` lie in the
    operand range ``[lo, hi)``."""
    if step > 0:
        k0, k1 = _ceil_div(lo - first, step), _ceil_div(hi - first, step)
    else:
        r = -step
        k0, k1 = (first - hi) // r + 1, (first - lo) // r + 1
    k0, k1 = min(max(k0, 0), count), min(max(k1, 0), count)
    return k0, max(k0, k1)


def _nonempty(sizes: Iterable[int], n: int) -> tuple[int, ...]:
    return from_offsets(offsets(list(sizes)), n)


class Layouts:
    """Layouts of every node of ``program`` (by node identity). ``leaves`` gives the chunks
    of each input by name; ``materialize`` holds ids of reductions to materialize even
    when they could stay virtual. Warnings are collected in ``warnings``."""

    def __init__(self, program: Node, leaves: dict[str, tuple], materialize: set[int]):
        self.leaves = leaves
        self.materialize = materialize
        self.warnings: list[str] = []
        self._memo: dict[int, Layout] = {}
        from sparsefold.spec.printer import topological
        for node in topological(program):
            self._memo[id(node)] = self._layout(node)

    def __getitem__(self, node: Node) -> Layout:
        return self._memo[id(node)]

    def is_materialized(self, node: Node) -> bool:
        """A reduction computed as partial kernels plus a tree of combines."""
        if not isinstance(node, Reduce):
            return False
        if id(node) in self.materialize:
            return True
        operand = self[node.arg].chunks
        return any(len(operand[a]) > 1 for a in node.axes)

    # --- the rules ---------------------------------------------------------------------
    def _layout(self, node: Node) -> Layout:
        if not isinstance(node, SUPPORTED):
            raise IllFormedProgram(
                f"{type(node).__name__} is not supported on Dask arrays yet; supported: "
                f"{', '.join(sorted(t.__name__ for t in SUPPORTED))}")
        shape = ints(node.shape)
        if isinstance(node, Input):
            return Layout(tuple(_nonempty(c, n) for c, n in zip(self.leaves[node.name], shape)),
                          False)
        if isinstance(node, Literal):
            return Layout((), False)
        ops = [self[o] for o in node.operands()]
        fixed = any(o.fixed for o in ops)
        if isinstance(node, Map):
            return Layout(self._aligned(node, range(node.ndim)), fixed)
        if isinstance(node, Concat):
            return self._concat(node, shape, ops, fixed)
        if isinstance(node, Slice):
            return self._slice(node, shape, ops[0])
        if isinstance(node, Index):
            a = node.axis % node.arg.ndim
            return Layout(ops[0].chunks[:a] + ops[0].chunks[a + 1:], True)
        if isinstance(node, PermuteDims):
            return Layout(tuple(ops[0].chunks[p] for p in node.perm), fixed)
        if isinstance(node, ExpandDims):
            a = node.axis % node.ndim
            return Layout(ops[0].chunks[:a] + ((1,),) + ops[0].chunks[a:], fixed)
        if isinstance(node, Squeeze):
            drop = {a % node.arg.ndim for a in node.axes}
            return Layout(tuple(c for d, c in enumerate(ops[0].chunks) if d not in drop), fixed)
        if isinstance(node, BroadcastTo):
            return self._broadcast(node, shape, ops[0])
        if isinstance(node, Collapse):
            return self._collapse(node, ops[0])
        if isinstance(node, Split):
            return self._split(node, ops[0])
        # Reduce
        kept = tuple(c for d, c in enumerate(ops[0].chunks) if d not in node.axes)
        return Layout(kept, True if self.is_materialized(node) else fixed)

    def _aligned(self, node: Node, axes) -> tuple[tuple[int, ...], ...]:
        """Per output axis: the refinement of the operands' chunks that are not broadcast
        there (fixed operands only, if any)."""
        shape = ints(node.shape)
        out = []
        for d in axes:
            candidates = []
            for o in node.operands():
                od = d - (node.ndim - o.ndim)
                if od < 0 or ints(o.shape)[od] != shape[d]:
                    continue  # broadcast along d (or a literal): no opinion
                lay = self[o]
                candidates.append((lay.chunks[od], lay.fixed))
            use = [c for c, f in candidates if f] or [c for c, _ in candidates]
            out.append(refine(use, shape[d]) if use else from_offsets((), shape[d]))
        return tuple(out)

    def _concat(self, node: Concat, shape, ops, fixed) -> Layout:
        a = node.axis % node.ndim
        other = self._aligned(node, [d for d in range(node.ndim) if d != a])
        along = _nonempty((s for o in ops for s in o.chunks[a]), shape[a])
        return Layout(other[:a] + (along,) + other[a:], fixed)

    def _slice(self, node: Slice, shape, op: Layout) -> Layout:
        out, fixed = [], op.fixed
        for d, (n, triple) in enumerate(zip(ints(node.arg.shape), node.slices)):
            first, step, count = slice_params(n, triple)
            if (first, step, count) == (0, 1, n):
                out.append(op.chunks[d])
                continue
            fixed = True
            b = offsets(op.chunks[d])
            pieces = [selected(lo, hi, first, step, count) for lo, hi in zip(b, b[1:])]
            sizes = [k1 - k0 for k0, k1 in pieces]
            out.append(_nonempty(sizes if step > 0 else reversed(sizes), count))
        return Layout(tuple(out), fixed)

    def _broadcast(self, node: BroadcastTo, shape, op: Layout) -> Layout:
        lead = node.ndim - node.arg.ndim
        src = ints(node.arg.shape)
        out = []
        for d in range(node.ndim):
            od = d - lead
            if od < 0 or src[od] != shape[d]:
                out.append(from_offsets((), shape[d]))
            else:
                out.append(op.chunks[od])
        return Layout(tuple(out), op.fixed)

    def _collapse(self, node: Collapse, op: Layout) -> Layout:
        a, b = node.start, node.stop
        sizes = ints(node.arg.shape)[a:b]
        total = math.prod(sizes)
        lead = next((m for m in range(len(sizes)) if sizes[m] > 1), None)
        if lead is None or total == 0:
            along = from_offsets((), total)
        else:
            inner = math.prod(sizes[lead + 1:])
            along = tuple(s * inner for s in op.chunks[a + lead])
        before = math.prod(len(c) for c in op.chunks[a:b])
        if len(along) < before:
            self.warnings.append(
                f"reshape: collapsing axes {a}..{b - 1} (sizes {sizes}) keeps only the chunk "
                f"boundaries of axis {a + (lead or 0)}: {before} blocks become {len(along)}, "
                f"each reading several input chunks. Chunk the inner axes as single blocks "
                f"to avoid this warning.")
        return Layout(op.chunks[:a] + (along,) + op.chunks[b:], op.fixed)

    def _split(self, node: Split, op: Layout) -> Layout:
        a = node.axis % node.arg.ndim
        sizes = ints(node.sizes)
        lead = next((m for m in range(len(sizes)) if sizes[m] > 1), None)
        total = math.prod(sizes)
        if lead is None or total == 0:
            new = tuple(from_offsets((), s) for s in sizes)
        else:
            stride = math.prod(sizes[lead + 1:])
            kept = [x // stride for x in offsets(op.chunks[a]) if x % stride == 0]
            new = tuple((1,) * lead) + (from_offsets(kept, sizes[lead]),) + tuple(
                (s,) for s in sizes[lead + 1:])
            if len(new[lead]) < len(op.chunks[a]):
                self.warnings.append(
                    f"reshape: splitting axis {a} into {tuple(sizes)} keeps only the chunk "
                    f"boundaries at multiples of {stride}: {len(op.chunks[a])} blocks become "
                    f"{len(new[lead])}, each reading several input chunks. Rechunk axis {a} "
                    f"to multiples of {stride} to avoid this warning.")
        return Layout(op.chunks[:a] + new + op.chunks[a + 1:], op.fixed)

"""Block programs: the part of a traced program that computes one block of a node.

``Puller.block(node, box)`` pulls a box (one ``[lo, hi)`` per axis, in the node's global
coordinates) back through the program, operator by operator, to the boxes of its leaves
(the user's inputs and the materialized reductions), and rebuilds the same operators over
those: the block's program. It is the operator's backward map read on boxes:

* map: the same box in each operand (``[0, 1)`` where it broadcasts); concat: the operand
  (or operands) the box falls in, shifted; transpose, expand_dims, squeeze, broadcast: the
  box with its axes moved, dropped or set to ``[0, 1)``; a virtual reduce: the full reduced
  axes;
* slice and index: the covering chunks of the operand ("snapped" to its layout), then the
  same slice or index with local bounds, so blocks read whole chunks and most blocks share
  one program;
* collapse and split: the row-major hull of the box, then a local slice when the box is not
  a whole number of rows (the layouts avoid that case where they can).

A leaf box becomes a placeholder input ``L<k>``; :mod:`graph` replaces it with the chunks
covering it. Every block program is checked to have the box's shape and the node's dtype.
"""

from __future__ import annotations

import math
from collections import Counter

from sparsefold.dask.chunking import Layouts, ints, slice_params, snap
from sparsefold.spec.compute import Input, Literal, Map, Reduce
from sparsefold.spec.errors import InternalError
from sparsefold.spec.functions import get_function
from sparsefold.spec.ir import Node
from sparsefold.spec.ops_axes import BroadcastTo, ExpandDims, PermuteDims, Squeeze
from sparsefold.spec.ops_concat import Concat
from sparsefold.spec.ops_index import Index, Slice
from sparsefold.spec.ops_reshape import Collapse, Split

__all__ = ["Puller", "Box", "extents"]

Box = tuple[tuple[int, int], ...]


def extents(box: Box) -> tuple[int, ...]:
    return tuple(hi - lo for lo, hi in box)


def _split_index(k: int, sizes) -> list[int]:
    out = []
    for n in reversed(sizes):
        k, r = divmod(k, n) if n else (k, 0)
        out.append(r)
    return out[::-1]


def _join_index(coords, sizes) -> int:
    k = 0
    for c, n in zip(coords, sizes):
        k = k * n + c
    return k


class Puller:
    """Block programs over one set of layouts; ``is_leaf(node)``: read as chunks."""

    def __init__(self, layouts: Layouts, is_leaf):
        self.layouts = layouts
        self.is_leaf = is_leaf
        self.refs: dict[str, tuple[Node, Box]] = {}    # placeholder name -> (leaf, box)
        self._placeholders: dict[tuple[int, Box], Input] = {}
        self.virtual_pulls: Counter = Counter()         # (id(reduce), box) -> blocks

    def block(self, node: Node, box: Box) -> Node:
        return self._pull(node, tuple(box), {})

    def duplicated(self) -> set[int]:
        """Virtual reductions computed by more than one block for the same box (a result
        broadcast across blocks): cheaper to materialize once."""
        return {rid for (rid, _), n in self.virtual_pulls.items() if n > 1}

    # --- dispatch ----------------------------------------------------------------------
    def _pull(self, node: Node, box: Box, memo: dict) -> Node:
        key = (id(node), box)
        if key in memo:
            return memo[key]
        if len(box) != node.ndim:
            raise InternalError(f"a {node.ndim}-d node pulled with box {box}")
        if self.is_leaf(node):
            out = self._placeholder(node, box)
        elif isinstance(node, Literal):
            out = node
        else:
            out = getattr(self, f"_{type(node).__name__.lower()}")(node, box, memo)
            if out.dtype != node.dtype:  # concat of mixed dtypes, read from one operand
                out = Map(get_function("multiply"), (out, Literal(node.dtype.type(1))))
        if ints(out.shape) != extents(box) or out.dtype != node.dtype:
            raise InternalError(f"block program of {type(node).__name__} for box {box} has "
                                f"{out.dtype}{ints(out.shape)}")
        memo[key] = out
        return out

    def _placeholder(self, leaf: Node, box: Box) -> Input:
        key = (id(leaf), box)
        found = self._placeholders.get(key)
        if found is None:
            name = f"L{len(self.refs)}"
            found = Input(name, extents(box), leaf.dtype, "dense")
            self._placeholders[key] = found
            self.refs[name] = (leaf, box)
        return found

    def _chunks(self, node: Node, axis: int):
        return self.layouts[node].chunks[axis]

    # --- one method per operator -------------------------------------------------------
    def _map(self, node: Map, box: Box, memo) -> Node:
        shape = ints(node.shape)
        args = []
        for o in node.args:
            lead = node.ndim - o.ndim
            osh = ints(o.shape)
            obox = tuple((0, 1) if osh[d] != shape[d + lead] else box[d + lead]
                         for d in range(o.ndim))
            args.append(self._pull(o, obox, memo))
        return Map(node.fn, tuple(args))

    def _concat(self, node: Concat, box: Box, memo) -> Node:
        a = node.axis % node.ndim
        lo, hi = box[a]
        parts, start = [], 0
        for o in node.args:
            n = ints(o.shape)[a]
            i0, i1 = max(lo, start), min(hi, start + n)
            if i1 > i0:
                parts.append(self._pull(o, box[:a] + ((i0 - start, i1 - start),) + box[a + 1:],
                                        memo))
            start += n
        if not parts:  # an empty box: any operand's empty box has the right shape
            parts.append(self._pull(node.args[0], box[:a] + ((0, 0),) + box[a + 1:], memo))
        return parts[0] if len(parts) == 1 else Concat(tuple(parts), a)

    def _slice(self, node: Slice, box: Box, memo) -> Node:
        src = ints(node.arg.shape)
        obox, triples = [], []
        for d, (n, triple) in enumerate(zip(src, node.slices)):
            first, step, count = slice_params(n, triple)
            lo, hi = box[d]
            if (first, step, count) == (0, 1, n):
                obox.append((lo, hi))
                triples.append((None, None, None))
                continue
            if hi <= lo:
                obox.append((0, 0))
                triples.append((None, None, None))
                continue
            i0, i1 = first + lo * step, first + (hi - 1) * step
            left, right = snap(self._chunks(node.arg, d), min(i0, i1), max(i0, i1) + 1)
            start, count_here = i0 - left, hi - lo
            natural = len(range(start, right - left, step)) if step > 0 else \
                len(range(start, -1, step))
            stop = None if natural == count_here else start + count_here * step
            obox.append((left, right))
            triples.append((None, None, None) if (start, stop, step) == (0, None, 1)
                           else (start, stop, step))
        child = self._pull(node.arg, tuple(obox), memo)
        if all(t == (None, None, None) for t in triples):
            return child
        return Slice(child, tuple(triples))

    def _index(self, node: Index, box: Box, memo) -> Node:
        a = node.axis % node.arg.ndim
        n = ints(node.arg.shape)[a]
        i = ints((node.index,))[0] % n
        left, right = snap(self._chunks(node.arg, a), i, i + 1)
        child = self._pull(node.arg, box[:a] + ((left, right),) + box[a:], memo)
        return Index(child, a, i - left)

    def _permutedims(self, node: PermuteDims, box: Box, memo) -> Node:
        obox = [None] * node.ndim
        for d, p in enumerate(node.perm):
            obox[p] = box[d]
        return PermuteDims(self._pull(node.arg, tuple(obox), memo), node.perm)

    def _expanddims(self, node: ExpandDims, box: Box, memo) -> Node:
        a = node.axis % node.ndim
        return ExpandDims(self._pull(node.arg, box[:a] + box[a + 1:], memo), a)

    def _squeeze(self, node: Squeeze, box: Box, memo) -> Node:
        drop = {a % node.arg.ndim for a in node.axes}
        kept = iter(box)
        obox = tuple((0, 1) if d in drop else next(kept) for d in range(node.arg.ndim))
        return Squeeze(self._pull(node.arg, obox, memo), node.axes)

    def _broadcastto(self, node: BroadcastTo, box: Box, memo) -> Node:
        lead = node.ndim - node.arg.ndim
        src, shape = ints(node.arg.shape), ints(node.shape)
        obox = tuple((0, 1) if src[d] != shape[d + lead] else box[d + lead]
                     for d in range(node.arg.ndim))
        return BroadcastTo(self._pull(node.arg, obox, memo), extents(box))

    def _reduce(self, node: Reduce, box: Box, memo) -> Node:
        """A virtual reduction: every reduced axis is one block, read whole."""
        self.virtual_pulls[(id(node), box)] += 1
        src = ints(node.arg.shape)
        kept = iter(box)
        obox = tuple((0, src[d]) if d in node.axes else next(kept) for d in range(len(src)))
        child = self._pull(node.arg, obox, memo)
        return Reduce(child, node.axes, node.monoid, node.dtype_request)

    def _collapse(self, node: Collapse, box: Box, memo) -> Node:
        a, b = node.start, node.stop
        src = ints(node.arg.shape)
        sizes = src[a:b]
        lo, hi = box[a]
        if hi <= lo:
            hull = ((0, 0),) + tuple((0, n) for n in sizes[1:])
            child = self._pull(node.arg, box[:a] + hull + box[a + 1:], memo)
            return Collapse(child, a, b)
        first, last = _split_index(lo, sizes), _split_index(hi - 1, sizes)
        m = next((j for j in range(len(sizes)) if first[j] != last[j]), len(sizes))
        hull = tuple((first[j], first[j] + 1) if j < m else
                     (first[j], last[j] + 1) if j == m else (0, sizes[j])
                     for j in range(len(sizes)))
        hull_lo = _join_index([h[0] for h in hull], sizes)
        size = math.prod(h1 - h0 for h0, h1 in hull)
        child = Collapse(self._pull(node.arg, box[:a] + hull + box[a + 1:], memo), a, b)
        if hull_lo == lo and size == hi - lo:
            return child
        local = tuple((lo - hull_lo, hi - hull_lo, 1) if d == a else (None, None, None)
                      for d in range(node.ndim))
        return Slice(child, local)

    def _split(self, node: Split, box: Box, memo) -> Node:
        a = node.axis % node.arg.ndim
        sizes = ints(node.sizes)
        here = box[a:a + len(sizes)]
        spans = extents(here)
        if 0 in spans:
            child = self._pull(node.arg, box[:a] + ((0, 0),) + box[a + len(sizes):], memo)
            return Split(child, a, spans)
        lead = next((j for j in range(len(sizes)) if spans[j] > 1), len(sizes))
        hull = tuple(here[j] if j <= lead else (0, sizes[j]) for j in range(len(sizes)))
        start = _join_index([h[0] for h in hull], sizes)
        length = math.prod(extents(hull))
        child = self._pull(node.arg, box[:a] + ((start, start + length),) +
                           box[a + len(sizes):], memo)
        out = Split(child, a, extents(hull))
        if hull == here:
            return out
        local = tuple((here[d - a][0], here[d - a][1], 1)
                      if a <= d < a + len(sizes) and hull[d - a] != here[d - a]
                      else (None, None, None) for d in range(node.ndim))
        return Slice(out, local)


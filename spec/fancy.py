"""NumPy advanced indexing as spec nodes: ``x[key]`` where ``key`` holds index arrays.

An index array is a dense integer node (an input of the program: the front end turns a
NumPy array, a list or a boolean mask — its ``nonzero()`` — into one). NumPy's rules, read
off its documentation of advanced indexing:

* when a key holds an array, its integers are advanced indices too (0-d arrays);
* the advanced indices broadcast together to one shape ``B``;
* the result's ``B`` axes replace the advanced ones where the first of them was when the
  advanced indices are adjacent in the key, and come first otherwise
  (``x[:, i, j]`` keeps them in the middle, ``x[i, :, j]`` moves them to the front);
* slices and ``None`` apply as in basic indexing.

Built as: basic indexing with every advanced index replaced by ``:`` (``spec.indexing``),
``Index`` for the integers, one :class:`~sparsefold.spec.ops_gather.Gather` for the arrays
(broadcast to ``B`` when their shapes differ), and a ``permute_dims`` moving ``B`` first
when the advanced indices are not adjacent.
"""

from __future__ import annotations

import numpy as np

from sparsefold.spec.errors import IllFormedIndex
from sparsefold.spec.ir import Node, broadcast_shapes
from sparsefold.spec.ops_axes import BroadcastTo, PermuteDims
from sparsefold.spec.ops_gather import Gather
from sparsefold.spec.ops_index import Index

__all__ = ["fancy_getitem", "is_advanced"]


def is_advanced(k) -> bool:
    return isinstance(k, Node)


def _is_int(k) -> bool:
    return isinstance(k, (int, np.integer)) and not isinstance(k, (bool, np.bool_))


def fancy_getitem(node: Node, key: tuple, basic) -> Node:
    """``node[key]`` for a key with at least one index array (a node); ``basic(node,
    key)`` is basic indexing (``spec.indexing.getitem``)."""
    for k in key:
        if is_advanced(k) and k.dtype.kind not in "iu":
            raise IllFormedIndex(f"arrays used as indices must be of integer (or boolean) "
                                 f"type, found {k.dtype}")
    if sum(k is Ellipsis for k in key) > 1:
        raise IllFormedIndex("an index can only have a single ellipsis ('...')")
    used = sum(1 for k in key if k is not None and k is not Ellipsis)
    if used > node.ndim:
        raise IllFormedIndex(f"too many indices for array: array is {node.ndim}-dimensional, "
                             f"but {used} were indexed")
    if Ellipsis in key:
        e = key.index(Ellipsis)
        key = key[:e] + (slice(None),) * (node.ndim - used) + key[e + 1:]
    else:
        key = key + (slice(None),) * (node.ndim - used)
    advanced = [p for p, k in enumerate(key) if is_advanced(k) or _is_int(k)]
    adjacent = advanced == list(range(advanced[0], advanced[-1] + 1))
    # basic indexing first: slices and None; advanced entries keep their axis for now
    y = basic(node, tuple(slice(None) if p in advanced else k for p, k in enumerate(key)))
    # the y axis of each advanced entry: key entries before it, None ones included
    ypos = {p: p for p in advanced}
    arrays = [(ypos[p], key[p]) for p in advanced if is_advanced(key[p])]
    ints = [(ypos[p], key[p]) for p in advanced if _is_int(key[p])]
    for axis, i in reversed(ints):
        y = Index(y, axis, i)
    # axes shift left by the integers indexed before them
    gathered = [(axis - sum(1 for a, _ in ints if a < axis), ix) for axis, ix in arrays]
    shape = broadcast_shapes(*(ix.shape for _, ix in gathered))
    indices = tuple(ix if ix.shape == shape else BroadcastTo(ix, shape) for _, ix in gathered)
    out: Node = Gather(y, indices, tuple(a for a, _ in gathered))
    if not adjacent and gathered[0][0] != 0:
        first, nb = gathered[0][0], len(shape)
        order = tuple(range(first, first + nb)) + tuple(
            d for d in range(out.ndim) if not first <= d < first + nb)
        out = PermuteDims(out, order)
    return out

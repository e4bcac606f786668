"""Shape functions of NumPy and the array API, each defined once as the program it builds
(DESIGN §1; issue #16). ``flip``, ``roll``, ``diagonal``, ``tril``/``triu`` are entries of
their own (``ops_order.py``, ``ops_diagonal.py``); the rest compose entries:

* ``swapaxes``, ``matrix_transpose``: a permutation;
* ``tile``, ``repeat`` (a count per call, not per element): a size-1 axis broadcast to the
  count and collapsed with its neighbour (``tile``: before the axis, ``repeat``: after);
* ``diff``: ``x[1:] - x[:-1]`` along the axis, ``n`` times (``!=`` for bool, as NumPy);
* ``unstack``: one ``index`` per element of the axis;
* ``reshape(order="F")``: axes reversed, reshaped row-major to the reversed shape,
  reversed back;
* ``block_array``: concat of concats; a ``None`` block is padding of its neighbour (zeros,
  nothing stored).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from sparsefold.spec import sizes as sz
from sparsefold.spec.compute import Map
from sparsefold.spec.errors import IllFormedProgram
from sparsefold.spec.functions import get_function
from sparsefold.spec.ir import Node, normalize_axis
from sparsefold.spec.ops_axes import BroadcastTo, ExpandDims, PermuteDims
from sparsefold.spec.ops_concat import Concat
from sparsefold.spec.ops_diagonal import Diagonal, Triangle
from sparsefold.spec.ops_index import Index, Pad, Slice
from sparsefold.spec.ops_order import Flip, Roll

__all__ = ["flip", "roll", "swapaxes", "matrix_transpose", "tile", "repeat", "diagonal",
           "tril", "triu", "diff", "unstack", "reshape_order", "block_array"]


def _operand(x) -> Node:
    from sparsefold.spec.derived import operand
    return operand(x)


def _reshape(node: Node, shape) -> Node:
    from sparsefold.spec.derived import reshape
    return reshape(node, shape)


def _int(value, what: str) -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise IllFormedProgram(f"{what} must be an integer, found {value!r}")
    return int(value)


def _axes(node: Node, axis, what: str) -> tuple[int, ...]:
    if axis is None:
        return tuple(range(node.ndim))
    if isinstance(axis, (tuple, list)):
        return tuple(normalize_axis(a, node.ndim, what=f"{what} axis") for a in axis)
    return (normalize_axis(axis, node.ndim, what=f"{what} axis"),)


def flip(node: Node, axis=None) -> Node:
    """``np.flip``: every axis in ``axis`` (all of them when None) reversed."""
    node = _operand(node)
    for a in _axes(node, axis, "flip"):
        node = Flip(node, a)
    return node


def roll(node: Node, shift, axis=None) -> Node:
    """``np.roll``: ``axis=None`` rolls the flattened array; a tuple of shifts and axes
    (broadcast together) rolls each, shifts on one axis adding up."""
    node = _operand(node)
    if axis is None:
        flat = _reshape(node, (-1,))
        return _reshape(Roll(flat, _int(shift, "roll shift"), 0), node.shape)
    shifts = shift if isinstance(shift, (tuple, list)) else (shift,)
    axes = axis if isinstance(axis, (tuple, list)) else (axis,)
    if len(shifts) == 1:
        shifts = tuple(shifts) * len(axes)
    if len(axes) == 1:
        axes = tuple(axes) * len(shifts)
    if len(shifts) != len(axes):
        raise IllFormedProgram("roll: 'shift' and 'axis' should be scalars or 1D sequences "
                               "of the same length")
    total: dict[int, int] = {}
    for s, a in zip(shifts, axes):
        a = normalize_axis(a, node.ndim, what="roll axis")
        total[a] = total.get(a, 0) + _int(s, "roll shift")
    for a, s in total.items():
        node = Roll(node, s, a)
    return node


def swapaxes(node: Node, axis1: int, axis2: int) -> Node:
    node = _operand(node)
    a = normalize_axis(axis1, node.ndim, what="swapaxes axis1")
    b = normalize_axis(axis2, node.ndim, what="swapaxes axis2")
    perm = list(range(node.ndim))
    perm[a], perm[b] = perm[b], perm[a]
    return PermuteDims(node, tuple(perm)) if a != b else node


def matrix_transpose(node: Node) -> Node:
    """The last two axes swapped (``x.mT``)."""
    node = _operand(node)
    if node.ndim < 2:
        raise IllFormedProgram(f"matrix_transpose: expected an array of 2 or more "
                               f"dimensions, found {node.ndim}")
    return swapaxes(node, -1, -2)


def _repeat_axis(node: Node, axis: int, count: int, before: bool) -> Node:
    """Axis ``axis`` repeated ``count`` times: a new axis of size ``count`` (before it:
    the whole axis repeats, ``tile``; after it: each element repeats, ``repeat``),
    broadcast and collapsed with it."""
    new = axis if before else axis + 1
    shape = list(node.shape)
    shape.insert(new, sz.Const(count))
    wide = BroadcastTo(ExpandDims(node, new), tuple(shape))
    merged = list(node.shape)
    merged[axis] = sz.mul(node.shape[axis], count)
    return _reshape(wide, tuple(merged))


def tile(node: Node, reps) -> Node:
    """``np.tile``: ``reps`` per axis, aligned on the right (missing ones are 1; an array
    with fewer axes than ``reps`` gets leading size-1 axes)."""
    node = _operand(node)
    reps = tuple(reps) if isinstance(reps, (tuple, list)) else (reps,)
    reps = tuple(_int(r, "tile reps") for r in reps)
    if any(r < 0 for r in reps):
        raise IllFormedProgram(f"tile: reps must be non-negative, found {reps}")
    while node.ndim < len(reps):
        node = ExpandDims(node, 0)
    reps = (1,) * (node.ndim - len(reps)) + reps
    for a, r in enumerate(reps):
        if r != 1:
            node = _repeat_axis(node, a, r, before=True)
    return node


def repeat(node: Node, repeats, axis=None) -> Node:
    """``np.repeat`` with one count for every element (``axis=None``: of the flattened
    array). A count per element would need an index-array map: not supported yet."""
    node = _operand(node)
    if isinstance(repeats, (list, tuple, np.ndarray)) and np.ndim(repeats) > 0:
        if len(repeats) != 1:
            raise IllFormedProgram("repeat: a count per element is not supported yet; give "
                                   "one integer count")
        repeats = repeats[0]
    r = _int(repeats, "repeat count")
    if r < 0:
        raise IllFormedProgram(f"repeat: the count must be non-negative, found {r}")
    if axis is None:
        node, axis = _reshape(node, (-1,)), 0
    a = normalize_axis(axis, node.ndim, what="repeat axis")
    return _repeat_axis(node, a, r, before=False) if r != 1 else node


def diagonal(node: Node, offset: int = 0, axis1: int = 0, axis2: int = 1) -> Node:
    return Diagonal(_operand(node), _int(offset, "diagonal offset"), axis1, axis2)


def tril(node: Node, k: int = 0) -> Node:
    return Triangle(_operand(node), _int(k, "tril k"), False)


def triu(node: Node, k: int = 0) -> Node:
    return Triangle(_operand(node), _int(k, "triu k"), True)


def _edge(node: Node, value, axis: int) -> Node:
    """``prepend``/``append`` of ``np.diff``: a scalar broadcast to size 1 along ``axis``."""
    v = _operand(value)
    if v.ndim == 0:
        shape = list(node.shape)
        shape[axis] = sz.Const(1)
        return BroadcastTo(v, tuple(shape))
    return v


def diff(node: Node, n: int = 1, axis: int = -1, prepend=None, append=None) -> Node:
    """``np.diff``: ``x[1:] - x[:-1]`` along ``axis`` (``!=`` for bool), ``n`` times."""
    node = _operand(node)
    n = _int(n, "diff n")
    if n < 0:
        raise IllFormedProgram(f"diff: order must be non-negative, found {n}")
    if node.ndim == 0:
        raise IllFormedProgram("diff requires input that is at least one dimensional")
    a = normalize_axis(axis, node.ndim, what="diff axis")
    parts = ([_edge(node, prepend, a)] if prepend is not None else []) + [node] + \
        ([_edge(node, append, a)] if append is not None else [])
    if len(parts) > 1:
        node = Concat(tuple(parts), a)
    fn = get_function("not_equal" if node.dtype == np.bool_ else "subtract")
    zero, one = sz.Const(0), sz.Const(1)
    for _ in range(n):
        # x[1:] - x[:-1] as one slice of (x padded after) - (x padded before): the two
        # operands then have one size, symbolic or not, and the slice is [1, n)
        after = tuple((zero, one) if d == a else (zero, zero) for d in range(node.ndim))
        before = tuple((one, zero) if d == a else (zero, zero) for d in range(node.ndim))
        both = Map(fn, (Pad(node, after, 0), Pad(node, before, 0)))
        keep = tuple((1, node.shape[a], None) if d == a else (None, None, None)
                     for d in range(node.ndim))
        node = Slice(both, keep)
    return node


def unstack(node: Node, axis: int = 0) -> tuple[Node, ...]:
    """The arrays along ``axis`` (its size must be known)."""
    node = _operand(node)
    a = normalize_axis(axis, node.ndim, what="unstack axis")
    n = sz.const_value(node.shape[a])
    if n is None:
        raise IllFormedProgram(f"unstack: the size of axis {a} must be known, found "
                               f"{node.shape[a]}")
    return tuple(Index(node, a, sz.Const(i)) for i in range(n))


def reshape_order(node: Node, shape, order: str = "C") -> Node:
    """Reshape in C (row-major) or F (column-major) order: F reverses the axes, reshapes
    row-major to the reversed shape, and reverses back."""
    node = _operand(node)
    if order == "C":
        return _reshape(node, shape)
    if order != "F":
        raise IllFormedProgram(f"reshape: order must be 'C' or 'F', found {order!r}")
    if isinstance(shape, (int, np.integer, str, sz.Expr)):
        shape = (shape,)
    rev = PermuteDims(node, tuple(reversed(range(node.ndim)))) if node.ndim > 1 else node
    out = _reshape(rev, tuple(reversed(tuple(shape))))
    return PermuteDims(out, tuple(reversed(range(out.ndim)))) if out.ndim > 1 else out


def block_array(blocks: Sequence[Sequence], dtype=None) -> Node:
    """scipy's ``block_array``/``bmat``: a 2-d grid of matrices; a ``None`` block is zeros,
    its height and width read from its row and column. Each row of blocks is a concat
    along axis 1, the rows a concat along axis 0; ``None`` blocks become padding of the
    block beside them (a view: nothing stored). ``dtype``: every block cast first."""
    if not isinstance(blocks, (list, tuple)) or not blocks or \
            not all(isinstance(r, (list, tuple)) for r in blocks):
        raise IllFormedProgram("block_array: blocks must be a 2-D list of arrays or None")
    ncols = len(blocks[0])
    if any(len(r) != ncols for r in blocks):
        raise IllFormedProgram("block_array: blocks must have rectangular shape")
    grid = [[None if b is None else _operand(b) for b in row] for row in blocks]
    for row in grid:
        for b in row:
            if b is not None and b.ndim != 2:
                raise IllFormedProgram(f"block_array: blocks must be 2-D, found {b.ndim}-d")
    widths = []
    for i, row in enumerate(grid):
        if all(b is None for b in row):
            raise IllFormedProgram(f"blocks[{i},:] is all None")
    for j in range(ncols):
        known = [row[j] for row in grid if row[j] is not None]
        if not known:
            raise IllFormedProgram(f"blocks[:,{j}] is all None")
        widths.append(known[0].shape[1])
    if dtype is not None:
        from sparsefold.spec.derived import astype
        grid = [[None if b is None else astype(b, dtype) for b in row] for row in grid]
    rows = []
    for row in grid:
        parts: list[Node] = []
        pending = sz.Const(0)
        for j, b in enumerate(row):
            if b is None:
                pending = sz.add(pending, widths[j])
                continue
            if pending != sz.Const(0):
                b = Pad(b, ((sz.Const(0), sz.Const(0)), (pending, sz.Const(0))), 0)
                pending = sz.Const(0)
            parts.append(b)
        if pending != sz.Const(0):
            parts[-1] = Pad(parts[-1], ((sz.Const(0), sz.Const(0)), (sz.Const(0), pending)), 0)
        rows.append(parts[0] if len(parts) == 1 else Concat(tuple(parts), 1))
    return rows[0] if len(rows) == 1 else Concat(tuple(rows), 0)

"""The standard's functions whose signature or result differs from the ``sparsefold``
function of the same name, adapted here; the programs are those functions'.

* ``expand_dims``, ``squeeze``, ``where``: the standard's argument conventions (``axis``
  positional or keyword; ``squeeze``'s axis required; ``where`` takes three arguments);
* ``reshape``: ``copy=False`` is honoured — a lazy reshape never copies;
* ``nonzero``: data-dependent — the array is computed (``sparsefold.materialize``) and the
  coordinates are arrays of the namespace, read from a sparse result's stored entries;
* ``repeat`` with an array of repeats: the repeats are computed (they set the shape);
* ``broadcast_arrays``, ``take_along_axis``: built from ``broadcast_to`` and a gather.
"""

from __future__ import annotations

import numpy as np

from sparsefold import functions as f
from sparsefold.lazy import LazyArray, asarray
from sparsefold.spec.errors import IllFormedIndex, IllFormedProgram

__all__ = ["expand_dims", "squeeze", "where", "reshape", "nonzero", "repeat",
           "broadcast_arrays", "take", "take_along_axis", "tile", "vecdot"]


def expand_dims(x, /, axis: int = 0) -> LazyArray:
    return f.expand_dims(x, axis=axis)


def squeeze(x, /, axis) -> LazyArray:
    return f.squeeze(x, axis)


def where(condition, x1, x2, /) -> LazyArray:
    return f.where(condition, x1, x2)


def reshape(x, /, shape, *, copy: bool | None = None) -> LazyArray:
    """Reshape. A NumPy array wrapped as it is (no program) is reshaped as NumPy reshapes
    it: a view of the same memory, as the standard's ``copy=None``/``False`` asks (writes
    through either are seen by both); anything else is a program over ``x`` (a reshape
    never copies data; ``copy=True`` copies what it reads)."""
    x = asarray(x)
    data = x._writeable() if not copy else None
    if data is not None and data.flags.c_contiguous:
        try:
            return asarray(data.reshape(tuple(int(n) for n in shape)))
        except (TypeError, ValueError):
            pass  # an ill-formed shape: the language says what is wrong
    y = f.reshape(x, shape)
    if copy:
        from sparsefold.lazy import rebound
        y = rebound(y, lambda a: a.copy())
    return y


def tile(x, repetitions, /) -> LazyArray:
    return f.tile(x, repetitions)


def nonzero(x, /) -> tuple[LazyArray, ...]:
    """The coordinates of the nonzero elements, one int64 array per axis, in row-major
    order. The count depends on the data, so ``x`` is computed now; a sparse result's
    coordinates are read from its stored entries."""
    from sparsefold.materialize import value
    x = asarray(x)
    if x.ndim == 0:
        raise IllFormedProgram("nonzero of a 0-d array is not allowed; use "
                               "nonzero(reshape(x, (1,)))")
    got = value(x)
    if isinstance(got, np.ndarray):
        coords = np.nonzero(got)
    else:
        coo = got.tocoo() if hasattr(got, "tocoo") else got
        data = np.asarray(coo.data)
        keep = data != 0
        rows = [np.asarray(c)[keep] for c in (coo.coords if hasattr(coo, "coords")
                                                else (coo.row, coo.col))]
        order = np.lexsort(rows[::-1]) if rows and rows[0].size else np.arange(0)
        coords = tuple(r[order] for r in rows)
    return tuple(asarray(np.ascontiguousarray(c, dtype=np.int64)) for c in coords)


def repeat(x, repeats, /, *, axis=None) -> LazyArray:
    """``x`` with each element (slice along ``axis``) repeated; an array of repeats is
    computed first (its values set the result's shape)."""
    if isinstance(repeats, LazyArray):
        from sparsefold.materialize import dense_value
        repeats = dense_value(repeats)
    if isinstance(repeats, np.ndarray):
        if repeats.dtype.kind not in "iu":
            raise IllFormedProgram(f"repeat: repeats must be integers, found {repeats.dtype}")
        repeats = [int(r) for r in repeats.reshape(-1)] if repeats.ndim else int(repeats)
    if isinstance(repeats, (list, tuple)) and len(repeats) != 1:
        # a count per element: gather each element's index its count times
        x = asarray(x)
        if axis is None:
            x, axis = f.reshape(x, (-1,)), 0
        n = x.shape[axis]
        if len(repeats) != n or any(r < 0 for r in repeats):
            raise IllFormedProgram(f"repeat: expected {n} non-negative counts, found "
                                   f"{list(repeats)}")
        index = np.repeat(np.arange(n, dtype=np.int64), repeats)
        return f.take(x, index, axis=axis)
    return f.repeat(x, repeats, axis=axis)


def broadcast_arrays(*arrays) -> list[LazyArray]:
    """Every array broadcast to the arrays' common shape."""
    xs = [asarray(a) for a in arrays]
    from sparsefold.spec.ir import broadcast_shapes
    shape = broadcast_shapes(*(x.node.shape for x in xs))
    return [x if x.node.shape == shape else f.broadcast_to(x, shape) for x in xs]


def take(x, indices, /, *, axis=None) -> LazyArray:
    x = asarray(x)
    if axis is None and x.ndim != 1:
        raise IllFormedProgram(f"take: axis is required for a {x.ndim}-d array")
    return f.take(x, indices, axis=axis)


def take_along_axis(x, indices, /, *, axis: int = -1) -> LazyArray:
    """``x[i_0, ..., indices, ..., i_n]``: along ``axis`` the elements ``indices`` names,
    the other axes broadcast between the two (one gather over every axis, the other
    coordinates ``Iota``)."""
    from sparsefold.spec.compute import Iota
    from sparsefold.spec.ir import broadcast_shapes, normalize_axis
    x, idx = asarray(x), asarray(indices)
    if idx.dtype.kind not in "iu":
        raise IllFormedIndex(f"take_along_axis: indices must be integers, found {idx.dtype}")
    if idx.ndim != x.ndim:
        raise IllFormedProgram(f"take_along_axis: indices must have x's {x.ndim} dimensions, "
                               f"found {idx.ndim}")
    a = normalize_axis(axis, x.ndim, what="take_along_axis axis")
    other = tuple(1 if d == a else n for d, n in enumerate(x.node.shape))
    around = tuple(1 if d == a else n for d, n in enumerate(idx.node.shape))
    shape = broadcast_shapes(other, around)
    if any(n != m for n, m in zip(x.node.shape[:a] + x.node.shape[a + 1:],
                                  shape[:a] + shape[a + 1:])):
        x = f.broadcast_to(x, shape[:a] + (x.node.shape[a],) + shape[a + 1:])
    shape = shape[:a] + (idx.node.shape[a],) + shape[a + 1:]
    if idx.node.shape != shape:
        idx = f.broadcast_to(idx, shape)
    keys = []
    for d in range(x.ndim):
        if d == a:
            keys.append(idx)
        else:
            keys.append(LazyArray(Iota(shape, d)))
    return x[tuple(keys)]


def vecdot(x1, x2, /, *, axis: int = -1) -> LazyArray:
    """The dot product along ``axis`` (``conj(x1) * x2`` summed); the two operands' axis
    must have one size — the standard does not broadcast the contracted axis."""
    a, b = asarray(x1), asarray(x2)
    nd = max(a.ndim, b.ndim)
    if not -min(a.ndim, b.ndim) <= axis < 0:
        raise IllFormedProgram(f"vecdot: axis must be negative and within both arrays' "
                               f"dimensions, found {axis}")
    sa = (1,) * (nd - a.ndim) + a.shape
    sb = (1,) * (nd - b.ndim) + b.shape
    if sa[axis] != sb[axis]:
        raise IllFormedProgram(f"vecdot: the contracted axis has sizes {sa[axis]} and "
                               f"{sb[axis]}; expected them equal")
    return f.vecdot(a, b, axis=axis)

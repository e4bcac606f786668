"""Sorting, searching, cumulative and set functions: ``spec.ordering`` nodes and the
programs built on them.

``sort``, ``argsort``, ``searchsorted``, ``cumulative_sum`` and ``cumulative_prod`` are one
node each (lazy). The ``unique_*`` functions have data-dependent shapes, so part of them
is computed at once; all of it is the language's:

    s     = sort(reshape(x, -1))
    first = concat([True], s[1:] != s[:-1])      # where each run of equal values starts
    p     = nonzero(first)                        # computed now: how many values there are
    values = s[p];  counts = diff(concat([p, [n]]));  indices = argsort(x)[p]
    inverse = searchsorted(values, x)

NaN never equals itself, so every NaN is its own value with a count of one, and -0.0 and
+0.0 are one value, as the standard says. Over a sparse ``x`` every step reads stored
entries only (``sparsefold.staging``: a sparse sort stays sparse; ``nonzero`` reads the
mask's stored entries).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from sparsefold import functions as f
from sparsefold.lazy import LazyArray, asarray, lift, merge_bindings
from sparsefold.spec.errors import IllFormedProgram
from sparsefold.spec.ordering import ArgSort, Scan, SearchSorted, Sort

__all__ = ["sort", "argsort", "searchsorted", "cumulative_sum", "cumulative_prod",
           "unique_values", "unique_counts", "unique_inverse", "unique_all"]


def sort(x, /, *, axis: int = -1, descending: bool = False, stable: bool = True) -> LazyArray:
    """``x`` sorted along ``axis`` (``spec.ordering.Sort``; always stable)."""
    node, bindings = lift(x)
    return LazyArray(Sort(node, axis, descending), bindings)


def argsort(x, /, *, axis: int = -1, descending: bool = False,
            stable: bool = True) -> LazyArray:
    """The indices that sort ``x`` along ``axis`` (``spec.ordering.ArgSort``; always
    stable, also descending)."""
    node, bindings = lift(x)
    return LazyArray(ArgSort(node, axis, descending), bindings)


def searchsorted(x1, x2, /, *, side: str = "left", sorter=None) -> LazyArray:
    """Insertion positions of ``x2``'s elements in the 1-d ascending ``x1`` (or in
    ``take(x1, sorter)``)."""
    x1 = asarray(x1)
    if sorter is not None:
        x1 = f.take(x1, sorter, axis=0)
    (a, b), (ba, bb) = zip(lift(x1), lift(x2))
    return LazyArray(SearchSorted(a, b, side), merge_bindings(ba, bb))


def _cumulative(monoid: str, x, axis, dtype, include_initial) -> LazyArray:
    node, bindings = lift(x)
    if axis is None:
        if node.ndim != 1:
            raise IllFormedProgram(f"cumulative_{monoid}: axis is required for a "
                                   f"{node.ndim}-d array")
        axis = 0
    return LazyArray(Scan(node, axis, monoid, dtype, include_initial), bindings)


def cumulative_sum(x, /, *, axis=None, dtype=None, include_initial: bool = False):
    return _cumulative("sum", x, axis, dtype, include_initial)


def cumulative_prod(x, /, *, axis=None, dtype=None, include_initial: bool = False):
    return _cumulative("prod", x, axis, dtype, include_initial)


# --- set functions ------------------------------------------------------------------------

class UniqueAllResult(NamedTuple):
    values: LazyArray
    indices: LazyArray
    inverse_indices: LazyArray
    counts: LazyArray


class UniqueCountsResult(NamedTuple):
    values: LazyArray
    counts: LazyArray


class UniqueInverseResult(NamedTuple):
    values: LazyArray
    inverse_indices: LazyArray


def _runs(x) -> tuple[LazyArray, LazyArray, LazyArray, int]:
    """``(flat, sorted, starts, n)``: ``x`` flattened, sorted, the positions where each run
    of equal sorted values starts (computed now), and the number of elements."""
    from sparsefold.array_api._functions import nonzero
    x = asarray(x)
    flat = f.reshape(x, (-1,))
    n = flat.shape[0]
    if not isinstance(n, int):
        raise IllFormedProgram(f"unique: the array's shape {x.shape} is symbolic")
    s = sort(flat)
    if n == 0:
        empty = asarray(np.zeros(0, dtype=np.int64))
        return flat, s, empty, 0
    head = f.broadcast_to(np.bool_(True), (1,))
    first = f.concat([head, s[1:] != s[:-1]]) if n > 1 else head
    (starts,) = nonzero(first)
    return flat, s, starts, n


def _at(s: LazyArray, positions: LazyArray) -> LazyArray:
    """``s[positions]`` of the 1-d sorted ``s``, as the gather of a (1, n) view by two index
    arrays: a gather by one index array counts the stored entries of every coordinate of
    its axis, which for the flattened 10^12-element view of a large sparse matrix is
    10^12 counters; by two it pairs stored entries with positions through a sort."""
    n = s.shape[0]
    rows = asarray(np.zeros(positions.shape, dtype=np.int64))
    return f.reshape(s, (1, n))[rows, positions]


def unique_values(x, /) -> LazyArray:
    """The distinct values of ``x``, sorted."""
    _, s, starts, _ = _runs(x)
    return _at(s, starts)


def _counts(starts: LazyArray, n: int) -> LazyArray:
    return f.diff(starts, append=np.array([n], dtype=np.int64))


def unique_counts(x, /) -> UniqueCountsResult:
    _, s, starts, n = _runs(x)
    return UniqueCountsResult(_at(s, starts), _counts(starts, n))


def unique_inverse(x, /) -> UniqueInverseResult:
    x = asarray(x)
    flat, s, starts, _ = _runs(x)
    values = _at(s, starts)
    inverse = f.reshape(searchsorted(values, flat), x.shape)
    return UniqueInverseResult(values, inverse)


def unique_all(x, /) -> UniqueAllResult:
    x = asarray(x)
    flat, s, starts, n = _runs(x)
    values = _at(s, starts)
    indices = f.take(argsort(flat), starts, axis=0)
    inverse = f.reshape(searchsorted(values, flat), x.shape)
    return UniqueAllResult(values, indices, inverse, _counts(starts, n))

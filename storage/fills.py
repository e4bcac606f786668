"""pydata/sparse arrays with a non-zero ``fill_value`` and pydata ``DOK`` arrays, at the
boundary (issue 16, items 6 and 7; the language side is ``spec/fills.py``).

A filled array is read as two arrays over its one storage (no copy of the coordinates or
values): ``stored``, the same storage with fill 0, and ``present``, the same coordinates
holding ``True``. ``where(present, stored, fill)`` is then the array's value everywhere.
A ``DOK`` (a dict of coordinates) has no index arrays to read: it is converted to ``COO``
once, here.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from sparsefold.spec.errors import InvalidData
from sparsefold.storage.describe import is_pydata_sparse

__all__ = ["fill_of", "split_fill", "readable", "with_fill"]


def readable(value: Any) -> Any:
    """``value``, or a pydata ``DOK`` converted to ``COO`` (its fill kept)."""
    if is_pydata_sparse(value) and type(value).__name__ == "DOK":
        return value.to_coo()
    return value


def fill_of(value: Any) -> Any:
    """The fill value of a pydata array when it is not 0 (a NumPy scalar), else None:
    scipy arrays and 0-filled pydata arrays read as they are."""
    if not is_pydata_sparse(value):
        return None
    fill = getattr(value, "fill_value", 0)
    if np.ndim(fill) != 0:
        raise InvalidData(f"expected a scalar fill_value, found {fill!r}")
    fill = np.asarray(fill)[()]
    with np.errstate(all="ignore"):
        zero = fill == 0 and not (np.asarray(fill).dtype.kind in "fc" and np.isnan(fill))
    return None if zero else fill


def split_fill(value: Any) -> tuple[Any, Any]:
    """``(stored, present)`` for a filled pydata COO or GCXS array (``fill_of`` not None):
    its storage with fill 0, and ``True`` at its coordinates; both share its index
    arrays."""
    import sparse
    value = readable(value)
    kind = type(value).__name__
    if kind == "COO":
        common = dict(shape=value.shape)  # flags unset: the reader checks the order itself
        stored = sparse.COO(value.coords, value.data, fill_value=0, **common)
        present = sparse.COO(value.coords, np.ones(value.data.shape, dtype=bool),
                             fill_value=False, **common)
        return stored, present
    if kind == "GCXS":
        common = dict(shape=value.shape, compressed_axes=value.compressed_axes)
        stored = sparse.GCXS((value.data, value.indices, value.indptr), fill_value=0,
                             **common)
        present = sparse.GCXS((np.ones(value.data.shape, dtype=bool), value.indices,
                               value.indptr), fill_value=False, **common)
        return stored, present
    raise InvalidData(f"expected a pydata COO, GCXS or DOK array, found {kind}")


def with_fill(result: Any, fill: Any) -> Any:
    """A pydata result handed back with fill value ``fill``: ``result`` (built with fill
    0) itself when ``fill`` is 0, else the same values stored against ``fill`` (entries
    equal to it become implicit). Only dense-valued results reach the second case, so
    their values were computed at every coordinate already."""
    if fill is None or not is_pydata_sparse(result):
        return result
    with np.errstate(all="ignore"):
        if fill == 0 and not np.isnan(fill):
            return result
    import sparse
    gcxs = type(result).__name__ == "GCXS"
    matrix = gcxs and result.ndim == 2
    # (pydata's own todense and from_numpy of a 2-d GCXS go through COO and an argsort of
    # every cell: a dense-valued CSC result took 30x the time for 16x the entries, #39)
    dense = result.to_scipy_sparse().toarray() if matrix else result.todense()
    with np.errstate(all="ignore"):
        keep = ~np.isnan(dense) if np.isnan(fill) else dense != fill
    if matrix:  # the kept cells in storage order, compressed by their outer axis
        outer = result.compressed_axes[0]
        order = keep if outer == 0 else keep.T
        rows, inner = np.nonzero(order)
        data = (dense if outer == 0 else dense.T)[rows, inner]
        indptr = np.zeros(order.shape[0] + 1, dtype=np.intp)
        np.cumsum(np.bincount(rows, minlength=order.shape[0]), out=indptr[1:])
        return sparse.GCXS((data, inner.astype(np.intp), indptr), shape=result.shape,
                           compressed_axes=result.compressed_axes, fill_value=fill)
    if gcxs:
        return sparse.GCXS.from_numpy(dense, compressed_axes=result.compressed_axes,
                                      fill_value=fill)
    coords = np.array(np.nonzero(keep), dtype=np.intp).reshape(dense.ndim, -1)
    return sparse.COO(coords, dense[keep], shape=dense.shape, fill_value=fill,
                      has_duplicates=False, sorted=True)

"""Foreign storage read into level arrays: scipy.sparse, pydata/sparse and NumPy inputs,
validated and canonical (DESIGN §6: invalid data is rejected before a kernel touches memory).

Inputs are read in place (no copy) when they are canonical, contiguous and of an index dtype
the kernels take (int32/int64). Every check that protects memory always runs, since kernels
have no bounds checks: array lengths and ``pos`` (length, starts at 0, monotone, ends inside
``crd``) here, in O(rows); each coordinate's range ``[0, size)`` inside the kernel as it is
read (``compiler/checks.py``), fused with the read instead of extra passes over every index
array. Only the *correctness* scan for sorted, duplicate-free coordinates is skipped when
scipy says ``has_canonical_format``; a non-canonical input is canonicalized on a copy
(duplicates summed, as scipy does), never rejected. Before a sparse input is converted by
library code (``tocsr``, ``toarray``), which trusts its index arrays,
:func:`validate_storage` checks everything here.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from sparsefold.spec.compute import Input
from sparsefold.spec.errors import InvalidData
from sparsefold.storage.describe import is_pydata_sparse, is_scipy_sparse

__all__ = ["sparse_levels", "index_dtypes_of", "check_supported", "validate_storage",
           "canonical_order", "row_major_order", "check_range", "INDEX_DTYPES"]

INDEX_DTYPES = (np.dtype(np.int32), np.dtype(np.int64))


def _index_array(a: Any, what: str) -> np.ndarray:
    a = np.asarray(a)
    if a.ndim != 1:
        raise InvalidData(f"{what}: expected a 1-d index array, found shape {a.shape}")
    if a.dtype not in INDEX_DTYPES:
        if a.dtype.kind in "iu" and (a.size == 0 or (a.min() >= 0 and a.max() < 2**63)):
            a = a.astype(np.int64)
        else:
            raise InvalidData(f"{what}: expected an int32 or int64 index array, found {a.dtype}")
    return np.ascontiguousarray(a)


def _values(a: Any, nnz: int, dtype: np.dtype, what: str) -> np.ndarray:
    a = np.asarray(a)
    if a.ndim != 1 or a.shape[0] < nnz:
        raise InvalidData(f"{what}: expected at least {nnz} stored values, found shape "
                          f"{a.shape}")
    if a.dtype != dtype:
        raise InvalidData(f"{what}: expected values of dtype {dtype}, found {a.dtype}")
    return np.ascontiguousarray(a)


def _check_compressed(name: str, indptr, indices, n_outer: int, n_inner: int, *,
                      coordinates: bool, rows: bool = True, outer: str = "row") -> None:
    """``indptr`` checks: length, first and last entry (O(1)); monotone (O(rows)) unless
    ``rows`` is False, when the kernel checks it before reading anything. The ``indices``
    range too when ``coordinates`` (kernels check it themselves as they read). ``outer``
    names the compressed axis in messages ("row" for CSR, "column" for CSC)."""
    if indptr.shape[0] != n_outer + 1:
        raise InvalidData(f"{name}: indptr has length {indptr.shape[0]}, expected "
                          f"{n_outer + 1}")
    if indptr[0] != 0:
        raise InvalidData(f"{name}: indptr[0] is {indptr[0]}, expected 0")
    if rows and n_outer and np.any(indptr[1:] < indptr[:-1]):
        t = int(np.argmax(indptr[1:] < indptr[:-1]))  # the first, as the kernels report it
        raise InvalidData(f"{name}: indptr is not monotone non-decreasing: {outer} {t} spans "
                          f"[{indptr[t]}, {indptr[t + 1]})")
    if indptr[-1] > indices.shape[0]:
        raise InvalidData(f"{name}: indptr ends at {indptr[-1]} but indices has "
                          f"{indices.shape[0]} entries")
    if coordinates:
        check_range(name, "indices", indices[:indptr[-1]], n_inner)


def check_range(name: str, what: str, crd: np.ndarray, n: int) -> None:
    """Every coordinate of ``crd`` in ``[0, n)``, else :class:`InvalidData` naming ``what``."""
    if crd.size and (crd.min() < 0 or crd.max() >= n):
        raise InvalidData(f"{name}: {what} out of range [0, {n}): found "
                          f"{crd.min()}..{crd.max()}")


def _no_entries_on_empty_axis(name: str, nnz: int, sizes) -> None:
    """Kernels replace a bad coordinate by 0 until they report it (``checks.py``); that is
    only safe on axes of size 1 or more, and an empty axis cannot hold entries anyway."""
    if nnz and 0 in sizes:
        raise InvalidData(f"{name}: stores {nnz} entries but has an axis of size 0 "
                          f"(shape {tuple(sizes)})")


def _rows_sorted_unique(indptr, indices) -> bool:
    nnz = int(indptr[-1])
    if nnz < 2:
        return True
    step = np.diff(indices[:nnz]) > 0
    starts = np.zeros(nnz, dtype=bool)
    starts[indptr[1:-1][indptr[1:-1] < nnz]] = True
    return bool(np.all(step | starts[1:]))


def row_major_order(coords: list[np.ndarray], shape) -> np.ndarray:
    """The stable permutation sorting entries by their coordinates in row-major order. One
    int64 key per entry (``c0 * s1 + c1``, ...) and one stable argsort, where every
    coordinate is in range and the shape's element count fits int64: 4x faster than
    ``np.lexsort`` over the arrays (a 2M-entry COO: 485 -> 122 ms, measured). Otherwise (a
    coordinate out of range, which the kernel reports; a huge n-d shape) ``np.lexsort``:
    keys of out-of-range coordinates could collide and be summed as duplicates."""
    n = coords[0].shape[0] if coords else 0
    if n < 2:
        return np.arange(n)
    sizes = [int(x) for x in shape]
    total = 1
    for x in sizes:
        total *= max(x, 1)
    if total < 2**62 and all(int(c.min()) >= 0 and int(c.max()) < x
                             for c, x in zip(coords, sizes)):
        key = coords[0].astype(np.int64)
        for c, x in zip(coords[1:], sizes[1:]):
            key *= x
            key += c
        return np.argsort(key, kind="stable")
    return np.lexsort(coords[::-1])


def canonical_order(coords: list[np.ndarray]) -> bool:
    """Coordinates strictly increasing in row-major order (sorted, no duplicates)."""
    if not coords or coords[0].size < 2:
        return True
    lt = np.zeros(coords[0].size - 1, dtype=bool)
    eq = np.ones(coords[0].size - 1, dtype=bool)
    for c in coords:
        d = np.diff(c)
        lt |= eq & (d > 0)
        eq &= d == 0
    return bool(np.all(lt))


def sparse_levels(value: Any, leaf: Input, name: str, *,
                  rows_in_kernel: bool = False) -> dict[str, np.ndarray]:
    """Level arrays (``pos<l>``, ``crd<l>``) and ``val`` of a sparse input, validated and
    canonical, in the layout ``leaf.format`` describes. ``rows_in_kernel``: a kernel will
    check that a CSR/CSC ``indptr`` is monotone before reading it (``checks.py``), so the
    runtime's O(rows) pass can be skipped when nothing else needs it."""
    check_supported(value, name)
    shape = tuple(int(n) for n in value.shape)
    kinds = leaf.format.kinds
    row_major = leaf.format.mode_order == (0, 1)
    if is_scipy_sparse(value):
        fmt = value.format
        if kinds == ("full", "pos") and value.ndim == 2:
            if fmt != ("csr" if row_major else "csc"):
                # another layout (csc for a csr leaf; bsr, dia, lil, dok): scipy converts it,
                # and scipy's conversions trust the index arrays they walk
                validate_storage(value, name)
                value = value.tocsr() if row_major else value.tocsc()
            return _compressed(value, name, leaf, shape, scipy_obj=value,
                               rows_in_kernel=rows_in_kernel)
        if kinds == ("pos",) and fmt == "csr" and value.ndim == 1:
            return _compressed(value, name, leaf, (1,) + shape, scipy_obj=value, vector=True)
        if fmt != "coo":
            validate_storage(value, name)
        coo = value if fmt == "coo" else value.tocoo()
        return _coo(list(coo.coords), coo.data, name, leaf, shape, coo)
    if is_pydata_sparse(value):
        kind = type(value).__name__
        if kind == "GCXS" and kinds == ("full", "pos") and value.ndim == 2:
            axes = tuple(value.compressed_axes)
            want = (0,) if row_major else (1,)
            if axes != want:
                validate_storage(value, name)
                value = value.change_compressed_axes(want)
            return _compressed_arrays(value.indptr, value.indices, value.data, name, leaf, shape)
        if kind != "COO":
            validate_storage(value, name)
        coo = value if kind == "COO" else value.to_coo() if kind == "DOK" else value.tocoo()
        return _coo(list(coo.coords), coo.data, name, leaf, shape, None)
    raise InvalidData(f"{name}: expected a sparse array for a {leaf.format} input, found "
                      f"{type(value).__name__}")


def check_supported(value: Any, name: str) -> None:
    """Storage the runtime knows how to read, before anything walks it: scipy compressed
    arrays of a rank they cannot have (a CSC claiming 3 axes: scipy's own conversions would
    walk its ``indptr`` past the end), pydata arrays with a nonzero fill value (level
    arrays mean 0 where nothing is stored: a filled array is read as ``where(present,
    stored, fill)`` of two 0-filled ones, ``storage/fills.py``)."""
    if is_scipy_sparse(value):
        ranks = {"csr": (1, 2), "csc": (2,), "bsr": (2,)}.get(value.format)  # with indptr
        if ranks is not None and value.ndim not in ranks:
            raise InvalidData(f"{name}: scipy {value.format} storage cannot hold a "
                              f"{value.ndim}-d array (shape {tuple(value.shape)})")
    elif is_pydata_sparse(value):
        fill = getattr(value, "fill_value", 0)
        if not (np.ndim(fill) == 0 and fill == 0 and not np.isnan(fill)):
            raise InvalidData(f"{name}: fill_value {fill!r} is not supported here; its level "
                              f"arrays are read with implicit entries 0 (a filled array "
                              f"enters a program through sf.asarray or sf.jit)")


def _outer(mode_order: tuple) -> str:
    return "row" if mode_order == (0, 1) else "column"


def _compressed(value, name, leaf, shape, *, scipy_obj, vector=False, rows_in_kernel=False):
    indptr = _index_array(value.indptr, f"{name}.indptr")
    indices = _index_array(value.indices, f"{name}.indices")
    n_outer, n_inner = (shape if leaf.format.mode_order == (0, 1) else shape[::-1])
    if vector:
        n_outer, n_inner = 1, shape[1]
    # scipy's *cached* canonical flag, read without computing it (computing it walks indptr
    # unchecked). It may be stale: it only ever skips the sortedness scan, and the
    # monotonicity pass only when the kernel does it instead.
    cached = getattr(scipy_obj, "_has_canonical_format", None) is True
    _check_compressed(name, indptr, indices, n_outer, n_inner, coordinates=False,
                      rows=vector or not (cached and rows_in_kernel),
                      outer=_outer(leaf.format.mode_order))
    nnz = int(indptr[-1])
    _no_entries_on_empty_axis(name, nnz, (n_outer, n_inner))
    data = _values(value.data, nnz, leaf.dtype, f"{name}.data")
    trusted = cached or bool(scipy_obj.has_canonical_format)  # safe: indptr checked
    if not trusted and not _rows_sorted_unique(indptr, indices):
        fixed = scipy_obj.copy()
        fixed.sum_duplicates()  # sorts indices and sums duplicates, as scipy does
        return _compressed(fixed, name, leaf, shape, scipy_obj=fixed, vector=vector,
                           rows_in_kernel=rows_in_kernel)
    if vector:
        return {"pos0": indptr, "crd0": indices, "val": data}
    return {"pos1": indptr, "crd1": indices, "val": data}


def _compressed_arrays(indptr, indices, data, name, leaf, shape):
    indptr = _index_array(indptr, f"{name}.indptr")
    indices = _index_array(indices, f"{name}.indices")
    n_outer, n_inner = shape if leaf.format.mode_order == (0, 1) else shape[::-1]
    _check_compressed(name, indptr, indices, n_outer, n_inner, coordinates=False,
                      outer=_outer(leaf.format.mode_order))
    _no_entries_on_empty_axis(name, int(indptr[-1]), (n_outer, n_inner))
    data = _values(data, int(indptr[-1]), leaf.dtype, f"{name}.data")
    if not _rows_sorted_unique(indptr, indices):
        import scipy.sparse as sp
        cls = sp.csr_array if leaf.format.mode_order == (0, 1) else sp.csc_array
        fixed = cls((data, indices, indptr), shape=shape, copy=True)  # never the caller's
        fixed.sum_duplicates()
        return {"pos1": fixed.indptr, "crd1": fixed.indices, "val": fixed.data}
    return {"pos1": indptr, "crd1": indices, "val": data}


_SCIPY_SUMS = tuple(np.dtype(t) for t in ("float32", "float64", "int32", "int64",
                                           "complex64", "complex128"))


def _canonical_by_scipy(coords, data, shape):
    """A 2-d COO's entries sorted row-major with duplicates summed by scipy's ``tocsr``
    (a linear counting pass by row, then each row's indices sorted: 5x faster than a global
    argsort on a shuffled 4M-entry COO, measured), then its rows expanded back to
    coordinates. None (the caller sorts) unless every coordinate is in range (an
    out-of-range one is the kernel's to report), the rows are few beside the entries (the
    row pointers are allocated), and scipy sums this dtype as NumPy does."""
    if len(shape) != 2 or data.dtype not in _SCIPY_SUMS:
        return None
    nnz = coords[0].shape[0]
    rows, cols = (int(x) for x in shape)
    if rows > 4 * nnz + 1024 or not all(int(c.min()) >= 0 and int(c.max()) < n
                                        for c, n in zip(coords, (rows, cols))):
        return None
    import scipy.sparse as sp
    m = sp.coo_matrix((data, (coords[0], coords[1])), shape=(rows, cols)).tocsr()
    if not m.has_canonical_format:
        m.sum_duplicates()
    r = np.repeat(np.arange(rows, dtype=coords[0].dtype), np.diff(m.indptr))
    c = np.ascontiguousarray(m.indices, dtype=coords[1].dtype)
    return [r, c], np.ascontiguousarray(m.data, dtype=data.dtype)


def _coo(coords, data, name, leaf, shape, scipy_obj):
    if len(coords) != len(shape):
        raise InvalidData(f"{name}: expected {len(shape)} coordinate arrays, found "
                          f"{len(coords)}")
    coords = [_index_array(c, f"{name}.coords[{d}]") for d, c in enumerate(coords)]
    nnz = coords[0].shape[0] if coords else int(np.asarray(data).shape[0])
    for d, c in enumerate(coords):
        if c.shape[0] != nnz:
            raise InvalidData(f"{name}: coords[{d}] has {c.shape[0]} entries, expected {nnz}")
    _no_entries_on_empty_axis(name, nnz, shape)
    data = _values(data, nnz, leaf.dtype, f"{name}.data")
    if data.shape[0] != nnz:  # COO pairs each coordinate with one value: no tail
        raise InvalidData(f"{name}: data has {data.shape[0]} values for {nnz} coordinates")
    trusted = bool(getattr(scipy_obj, "has_canonical_format", False))
    if not trusted and not canonical_order(coords):
        fixed = _canonical_by_scipy(coords, data, shape)
        if fixed is not None:
            coords, data = fixed
            out = {"pos0": np.array([0, data.shape[0]], dtype=np.int64), "val": data}
            for d, c in enumerate(coords):
                out[f"crd{d}"] = c
            return out
        order = row_major_order(coords, shape)
        coords = [c[order] for c in coords]
        data = data[order]
        keep = np.ones(nnz, dtype=bool)
        if nnz > 1:
            same = np.ones(nnz - 1, dtype=bool)
            for c in coords:
                same &= c[1:] == c[:-1]
            keep[1:] = ~same
        if not keep.all():  # duplicates are summed, as scipy does
            data = np.add.reduceat(data, np.flatnonzero(keep), dtype=data.dtype)
            coords = [c[keep] for c in coords]
        coords = [np.ascontiguousarray(c) for c in coords]
        data = np.ascontiguousarray(data)
        nnz = coords[0].shape[0] if coords else nnz
    out = {"pos0": np.array([0, nnz], dtype=np.int64), "val": data}
    for d, c in enumerate(coords):
        out[f"crd{d}"] = c
    return out


def validate_storage(value: Any, name: str) -> None:
    """The memory-safety checks of a sparse array's own storage, before any library code
    (``toarray``) walks it: scipy and pydata trust their index arrays."""
    shape = tuple(int(n) for n in value.shape)
    if is_scipy_sparse(value) and value.format in ("csr", "csc") and value.ndim == 2:
        outer, inner = shape if value.format == "csr" else shape[::-1]
        _check_compressed(name, _index_array(value.indptr, f"{name}.indptr"),
                          _index_array(value.indices, f"{name}.indices"), outer, inner,
                          coordinates=True, outer="row" if value.format == "csr" else "column")
        _values(value.data, int(value.indptr[-1]), value.dtype, f"{name}.data")
    elif is_scipy_sparse(value) and value.format == "csr":  # 1-d sparse vector
        _check_compressed(name, _index_array(value.indptr, f"{name}.indptr"),
                          _index_array(value.indices, f"{name}.indices"), 1, shape[0],
                          coordinates=True)
        _values(value.data, int(value.indptr[-1]), value.dtype, f"{name}.data")
    elif (is_scipy_sparse(value) and value.format == "coo") or (
            is_pydata_sparse(value) and type(value).__name__ == "COO"):
        coords = list(value.coords)
        if len(coords) != len(shape):
            raise InvalidData(f"{name}: expected {len(shape)} coordinate arrays")
        for d, c in enumerate(coords):
            c = _index_array(c, f"{name}.coords[{d}]")
            if c.shape[0] != np.asarray(value.data).shape[0]:
                raise InvalidData(f"{name}: coords[{d}] and data differ in length")
            check_range(name, f"coords[{d}]", c, shape[d])
    elif is_pydata_sparse(value) and type(value).__name__ == "GCXS" and value.ndim == 2:
        outer, inner = shape if tuple(value.compressed_axes) == (0,) else shape[::-1]
        indptr = _index_array(value.indptr, f"{name}.indptr")
        _check_compressed(name, indptr, _index_array(value.indices, f"{name}.indices"),
                          outer, inner, coordinates=True,
                          outer="row" if tuple(value.compressed_axes) == (0,) else "column")
        _values(value.data, int(indptr[-1]), value.dtype, f"{name}.data")




def index_dtypes_of(levels: dict[str, np.ndarray]) -> dict[str, np.dtype]:
    """The dtype of every index array of ``levels`` (all but ``val``): what a kernel variant
    is specialized on (int32 or int64 each, as :func:`sparse_levels` hands them over)."""
    return {part: arr.dtype for part, arr in levels.items() if part != "val"}

"""Result checking: a result counts only if it equals scipy's.

Our result is checked *as returned*: the requested container and format, float32 values,
and canonical storage (CSR positions consistent, column indices strictly increasing within
each row; COO coordinates strictly increasing in row-major order), with no repair. A
baseline's result (scipy's reference, pydata's, the unfused pipeline's) is canonicalized on
a copy first — scipy's ``hstack`` of COO, for one, legitimately returns unsorted entries.

Entries are compared by row-major position, which a reshape does not change, so scipy's
``(1, N*C)`` matrix and our length ``N*C`` vector compare equal when their entries do.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

__all__ = ["Mismatch", "Entries", "result_entries", "baseline_entries", "compare"]


class Mismatch(Exception):
    """A result differs from scipy's, or is not in the canonical form it claims."""


@dataclass(frozen=True)
class Entries:
    """A result as (shape, row-major positions, values); ``keys`` is None for dense results,
    whose ``values`` is then the whole array."""

    shape: tuple[int, ...]
    keys: np.ndarray | None
    values: np.ndarray

    @property
    def nnz(self) -> int:
        return int(self.values.size)


def _linear(coords, shape) -> np.ndarray:
    key = np.zeros(coords[0].size if len(coords) else 0, dtype=np.int64)
    for c, n in zip(coords, shape):
        key = key * np.int64(n) + c.astype(np.int64, copy=False)
    return key


def result_entries(x, out: str, dtype=np.float32) -> Entries:
    """Our result's entries, after checking it is the ``out`` format, ``dtype``, canonical."""
    want = np.dtype(dtype)
    if out == "dense":
        if not isinstance(x, np.ndarray):
            raise Mismatch(f"expected a numpy.ndarray, found {type(x).__name__}")
        if x.dtype != want:
            raise Mismatch(f"expected {want} values, found {x.dtype}")
        return Entries(x.shape, None, x)
    if not sp.issparse(x) or x.format != out:
        fmt = getattr(x, "format", None)
        raise Mismatch(f"expected a scipy {out} array, found {type(x).__name__} ({fmt})")
    if x.dtype != want:
        raise Mismatch(f"expected {want} values, found {x.dtype}")
    shape = tuple(int(n) for n in x.shape)
    if out == "csr":
        indptr, indices = np.asarray(x.indptr), np.asarray(x.indices)
        rows = 1 if len(shape) == 1 else shape[0]
        nnz = x.data.size
        if (indptr.size != rows + 1 or indptr[0] != 0 or indptr[-1] != nnz
                or indices.size != nnz or np.any(np.diff(indptr) < 0)):
            raise Mismatch("CSR positions are inconsistent")
        if nnz and (indices.min() < 0 or indices.max() >= shape[-1]):
            raise Mismatch("CSR column index out of range")
        row = np.repeat(np.arange(rows, dtype=np.int64), np.diff(indptr))
        keys = row * np.int64(shape[-1]) + indices
    else:
        coords = tuple(np.asarray(c) for c in x.coords)
        for c, n in zip(coords, shape):
            if c.size and (c.min() < 0 or c.max() >= n):
                raise Mismatch("COO coordinate out of range")
        keys = _linear(coords, shape)
    if keys.size > 1 and not np.all(keys[1:] > keys[:-1]):
        raise Mismatch(f"{out} entries are not canonical (sorted row-major, no duplicates)")
    return Entries(shape, keys, np.asarray(x.data))


def baseline_entries(x) -> Entries:
    """A baseline result's entries, canonicalized on a copy (sorted, duplicates summed)."""
    if isinstance(x, np.ndarray):
        return Entries(x.shape, None, x)
    shape = tuple(int(n) for n in x.shape)
    if sp.issparse(x):
        coo = x.tocoo()
        coords, data = tuple(np.asarray(c) for c in coo.coords), np.asarray(coo.data)
    else:  # pydata/sparse: COO has coords (ndim, nnz); GCXS converts
        coo = x if hasattr(x, "coords") else x.tocoo()
        coords, data = tuple(np.asarray(coo.coords)), np.asarray(coo.data)
    keys = _linear(coords, shape)
    order = np.argsort(keys, kind="stable")
    keys, data = keys[order], data[order]
    if keys.size > 1 and not np.all(keys[1:] > keys[:-1]):
        first = np.concatenate([[True], keys[1:] != keys[:-1]])
        data = np.add.reduceat(data, np.flatnonzero(first))
        keys = keys[first]
    return Entries(shape, keys, data)


def compare(got: Entries, want: Entries, out_shape: tuple[int, ...], mode: str) -> None:
    """Raise Mismatch unless ``got`` (shape ``out_shape``) has ``want``'s entries.

    mode "exact": same positions and values; "prune_zeros": the same, ignoring stored zeros
    on both sides; "allclose": dense values within float32 summation error; "close": sparse
    results of float64 sums in another order — every position stored on either side
    compared, a missing entry counting as 0, within ``rtol`` 1e-9 and ``atol`` 1e-12 × the
    largest value (a sum may cancel to 0 in one order and to 1e-17 in another)."""
    if got.shape != tuple(out_shape):
        raise Mismatch(f"shape {got.shape}, expected {tuple(out_shape)}")
    if int(np.prod(want.shape, dtype=np.int64)) != int(np.prod(out_shape, dtype=np.int64)):
        raise Mismatch(f"reference shape {want.shape} does not match {tuple(out_shape)}")
    if mode == "allclose" or got.keys is None or want.keys is None:
        a = np.asarray(_dense(got)).ravel()
        b = np.asarray(_dense(want)).ravel()
        scale = float(np.abs(b).max()) if b.size else 0.0
        if not np.allclose(a, b, rtol=1e-4, atol=1e-5 * scale, equal_nan=True):
            bad = int(np.argmax(~np.isclose(a, b, rtol=1e-4, atol=1e-5 * scale)))
            raise Mismatch(f"values differ, e.g. at {bad}: {a[bad]!r} vs {b[bad]!r}")
        return
    gk, gv, wk, wv = got.keys, got.values, want.keys, want.values
    if mode == "close":
        _compare_close(gk, gv, wk, wv)
        return
    if mode == "prune_zeros":
        gk, gv = gk[gv != 0], gv[gv != 0]
        wk, wv = wk[wv != 0], wv[wv != 0]
    if gk.size != wk.size:
        raise Mismatch(f"{gk.size} stored entries, expected {wk.size}")
    if not np.array_equal(gk, wk):
        at = int(np.argmax(gk != wk))
        raise Mismatch(f"sparsity pattern differs (first at entry {at}: position {gk[at]} "
                       f"vs {wk[at]})")
    if not np.array_equal(gv, wv, equal_nan=True):
        at = int(np.argmax(gv != wv))
        raise Mismatch(f"values differ (first at entry {at}: {gv[at]!r} vs {wv[at]!r})")


def _compare_close(gk, gv, wk, wv) -> None:
    if gk.size > 1 and not np.all(gk[1:] > gk[:-1]):
        raise Mismatch("duplicate entries in the result")
    keys = np.union1d(gk, wk)
    a = np.zeros(keys.size, dtype=np.float64)
    b = np.zeros(keys.size, dtype=np.float64)
    a[np.searchsorted(keys, gk)] = gv
    b[np.searchsorted(keys, wk)] = wv
    scale = float(np.abs(b).max()) if b.size else 0.0
    close = np.isclose(a, b, rtol=1e-9, atol=1e-12 * scale, equal_nan=True)
    if not close.all():
        at = int(np.argmax(~close))
        raise Mismatch(f"values differ at position {keys[at]}: {a[at]!r} vs {b[at]!r} "
                       f"({int((~close).sum())} positions differ)")


def _dense(e: Entries) -> np.ndarray:
    if e.keys is None:
        return e.values
    out = np.zeros(int(np.prod(e.shape, dtype=np.int64)), dtype=e.values.dtype)
    out[e.keys] = e.values
    return out

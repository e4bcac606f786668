"""Recognising user arrays: NumPy, scipy.sparse (sparray and spmatrix, any format) and
pydata/sparse (COO, GCXS, DOK). ``describe`` says which storage format an array is in
*without copying it*; formats other than csr/csc/coo (bsr, dia, lil, dok, n-d GCXS) are
recorded as the format they will be converted to when a kernel needs their storage."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from sparsefold.spec.errors import InvalidData
from sparsefold.spec.functions import check_dtype

__all__ = ["ArrayInfo", "describe", "is_scipy_sparse", "is_pydata_sparse"]


@dataclass(frozen=True, slots=True)
class ArrayInfo:
    """Shape, dtype and storage format of a user array, and which library it came from."""

    shape: tuple[int, ...]
    dtype: np.dtype
    format: str
    library: str  # "numpy" | "scipy" | "pydata"
    fill: Any = None  # a pydata array's fill_value when it is not 0 (storage/fills.py)


try:
    from scipy.sparse import sparray as _sparray
    from scipy.sparse import spmatrix as _spmatrix
    _SCIPY_TYPES: tuple = (_sparray, _spmatrix)
except ImportError:  # pragma: no cover - scipy is a dependency
    _SCIPY_TYPES = ()


def is_scipy_sparse(a: Any) -> bool:
    """scipy.sparse.issparse without its per-call overhead (every kernel call asks)."""
    return isinstance(a, _SCIPY_TYPES)


def is_pydata_sparse(a: Any) -> bool:
    mod = type(a).__module__ or ""
    return mod == "sparse" or mod.startswith("sparse.")


_SCIPY_FORMATS = {"csr": "csr", "csc": "csc", "coo": "coo"}


def describe(a: Any) -> ArrayInfo:
    """What sparsefold needs to know about ``a`` to make it an input."""
    if is_scipy_sparse(a):
        fmt = _SCIPY_FORMATS.get(a.format, "csr")
        if a.ndim != 2 and fmt == "csc":
            fmt = "coo"
        return ArrayInfo(tuple(int(n) for n in a.shape), _dtype(a.dtype), fmt, "scipy")
    if is_pydata_sparse(a):
        name = type(a).__name__
        fmt = "coo"
        if name == "GCXS" and a.ndim == 2:
            fmt = "csr" if tuple(a.compressed_axes) == (0,) else "csc"
        from sparsefold.storage.fills import fill_of
        return ArrayInfo(tuple(int(n) for n in a.shape), _dtype(a.dtype), fmt, "pydata",
                         fill_of(a))
    if isinstance(a, np.ndarray):
        return ArrayInfo(a.shape, _dtype(a.dtype), "dense", "numpy")
    raise InvalidData(
        f"expected a NumPy array, a scipy.sparse array/matrix or a pydata/sparse array, found "
        f"{type(a).__module__}.{type(a).__name__}")


def _dtype(dt: Any) -> np.dtype:
    try:
        return check_dtype(dt)
    except Exception as exc:  # an unsupported dtype is a property of the data
        raise InvalidData(str(exc)) from None

"""The standard's data type functions, read off ``spec.promotion`` (the one promotion
table): ``result_type``, ``can_cast``, ``isdtype``, ``finfo``, ``iinfo``, and ``astype``."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sparsefold.array_api._info import check_device
from sparsefold.lazy import LazyArray, asarray
from sparsefold.spec import promotion
from sparsefold.spec.errors import IllFormedArgument

__all__ = ["astype", "can_cast", "finfo", "iinfo", "isdtype", "result_type", "finfo_object",
           "iinfo_object", "dtype_of"]


def dtype_of(x, *, what: str) -> np.dtype:
    """The dtype of a dtype or an array argument, one of the standard's."""
    if isinstance(x, LazyArray):
        return x.dtype
    if isinstance(x, np.ndarray):
        x = x.dtype
    return promotion.standard_dtype(x, what=what)


def result_type(*arrays_and_dtypes) -> np.dtype:
    """The dtype the arguments promote to (``spec.promotion.result_type``): arrays and dtypes
    by the standard's table, Python scalars weakly."""
    if not arrays_and_dtypes:
        raise ValueError("result_type: expected at least one array or dtype")
    args = [a if isinstance(a, (bool, int, float, complex)) else dtype_of(a, what="result_type")
            for a in arrays_and_dtypes]
    return promotion.result_type(args)


def can_cast(from_, to, /) -> bool:
    return promotion.can_cast(dtype_of(from_, what="can_cast from_"),
                              promotion.standard_dtype(to, what="can_cast to"))


def isdtype(dtype, kind) -> bool:
    return promotion.isdtype(dtype, kind)


@dataclass(frozen=True)
class finfo_object:  # noqa: N801 - the standard's name
    """Machine limits of a floating dtype, as Python floats; ``dtype`` is the real dtype
    (``finfo(complex64).dtype`` is float32)."""

    bits: int
    eps: float
    max: float
    min: float
    smallest_normal: float
    dtype: np.dtype


@dataclass(frozen=True)
class iinfo_object:  # noqa: N801 - the standard's name
    """Machine limits of an integer dtype, as Python ints."""

    bits: int
    max: int
    min: int
    dtype: np.dtype


def finfo(type, /) -> finfo_object:  # noqa: A002 - the standard's name
    dt = dtype_of(type, what="finfo")
    if dt.kind not in "fc":
        raise ValueError(f"finfo: expected a floating dtype, found {dt}")
    f = np.finfo(dt)
    return finfo_object(int(f.bits), float(f.eps), float(f.max), float(f.min),
                        float(f.smallest_normal), np.dtype(f.dtype))


def iinfo(type, /) -> iinfo_object:  # noqa: A002 - the standard's name
    dt = dtype_of(type, what="iinfo")
    if dt.kind not in "iu":
        raise ValueError(f"iinfo: expected an integer dtype, found {dt}")
    i = np.iinfo(dt)
    return iinfo_object(int(i.bits), int(i.max), int(i.min), dt)


def astype(x, dtype, /, *, copy: bool = True, device=None) -> LazyArray:
    """``x`` cast to ``dtype`` (``spec.functions.cast_function``). Complex to real is
    refused, as the standard says it should be; take ``real`` or ``abs`` first. With
    ``copy=False`` and the dtype already ``x``'s, ``x`` itself is returned."""
    check_device(device)
    x = asarray(x)
    dt = promotion.standard_dtype(dtype, what="astype dtype")
    if x.dtype.kind == "c" and dt.kind != "c":
        raise IllFormedArgument(f"astype: casting complex {x.dtype} to real {dt} is not "
                                f"permitted; take real(x) or abs(x) first")
    if dt == x.dtype:
        return x if not copy else LazyArray(x.node, x.bindings)
    return x.astype(dt)

"""Reductions beyond the monoids: statistics, arg- and NaN-ignoring reductions and
``count_nonzero`` (their programs are ``spec.reductions``'), and NumPy's ``out=``.

``out=`` cannot be lazy — it names an array to write — so a reduction given ``out``
computes at once (one compiled kernel, dense result), writes the result into ``out`` under
NumPy's ``same_kind`` casting, and returns ``out``, as NumPy does.
"""

from __future__ import annotations

import numpy as np

from sparsefold.lazy import LazyArray, lift
from sparsefold.spec import derived
from sparsefold.spec import reductions as red
from sparsefold.spec.errors import IllFormedProgram

__all__ = ["mean", "var", "std", "argmax", "argmin", "nansum", "nanprod", "nanmax",
           "nanmin", "nanmean", "nanvar", "nanstd", "count_nonzero", "reduce_monoid",
           "write_out"]


def write_out(result: LazyArray, out):
    """``out=``: the result computed now and written into ``out`` (NumPy's rules)."""
    if out is None:
        return result
    if not isinstance(out, np.ndarray):
        raise IllFormedProgram(f"out must be a numpy.ndarray, found {type(out).__name__}")
    if tuple(out.shape) != tuple(result.shape):
        raise IllFormedProgram(f"out has shape {out.shape}, the result has shape "
                               f"{result.shape}")
    if not np.can_cast(result.dtype, out.dtype, casting="same_kind"):
        raise IllFormedProgram(f"cannot write the {result.dtype} result into an out array "
                               f"of {out.dtype} (same_kind casting)")
    value = result.compute(out="dense")
    np.copyto(out, value, casting="same_kind")
    return out


def _wrap(build, x, *args, out=None, **kwargs):
    node, bindings = lift(x)
    return write_out(LazyArray(build(node, *args, **kwargs), bindings), out)


def reduce_monoid(monoid: str, x, axis=None, keepdims=False, dtype=None, out=None):
    """``sum``, ``prod``, ``max``, ``min``, ``any``, ``all`` with ``out=``."""
    node, bindings = lift(x)
    return write_out(LazyArray(derived.reduce(monoid, node, axis, keepdims, dtype), bindings),
                     out)


def mean(x, /, *, axis=None, dtype=None, keepdims: bool = False, out=None):
    return _wrap(red.mean, x, axis, keepdims, dtype, out=out)


def var(x, /, *, axis=None, dtype=None, correction=None, ddof=0, keepdims: bool = False,
        out=None):
    return _wrap(red.var, x, axis, keepdims, dtype, ddof, correction, out=out)


def std(x, /, *, axis=None, dtype=None, correction=None, ddof=0, keepdims: bool = False,
        out=None):
    return _wrap(red.std, x, axis, keepdims, dtype, ddof, correction, out=out)


def argmax(x, /, *, axis=None, keepdims: bool = False, out=None):
    return _wrap(red.argmax, x, axis, keepdims, out=out)


def argmin(x, /, *, axis=None, keepdims: bool = False, out=None):
    return _wrap(red.argmin, x, axis, keepdims, out=out)


def nansum(x, /, *, axis=None, dtype=None, keepdims: bool = False, out=None):
    return _wrap(red.nansum, x, axis, keepdims, dtype, out=out)


def nanprod(x, /, *, axis=None, dtype=None, keepdims: bool = False, out=None):
    return _wrap(red.nanprod, x, axis, keepdims, dtype, out=out)


def nanmax(x, /, *, axis=None, keepdims: bool = False, out=None):
    return _wrap(red.nanmax, x, axis, keepdims, out=out)


def nanmin(x, /, *, axis=None, keepdims: bool = False, out=None):
    return _wrap(red.nanmin, x, axis, keepdims, out=out)


def nanmean(x, /, *, axis=None, dtype=None, keepdims: bool = False, out=None):
    return _wrap(red.nanmean, x, axis, keepdims, dtype, out=out)


def nanvar(x, /, *, axis=None, dtype=None, correction=None, ddof=0, keepdims: bool = False,
           out=None):
    return _wrap(red.nanvar, x, axis, keepdims, dtype, ddof, correction, out=out)


def nanstd(x, /, *, axis=None, dtype=None, correction=None, ddof=0, keepdims: bool = False,
           out=None):
    return _wrap(red.nanstd, x, axis, keepdims, dtype, ddof, correction, out=out)


def count_nonzero(x, /, *, axis=None, keepdims: bool = False):
    return _wrap(red.count_nonzero, x, axis, keepdims)

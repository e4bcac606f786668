"""Statistical, arg- and NaN-ignoring reductions, each defined once as the program it builds
from maps and reductions (DESIGN §1; issue #16). Every definition follows NumPy's own
(``numpy/_core/_methods.py``, ``numpy/lib/_nanfunctions_impl.py``) step by step, so that
dtypes and rounding are NumPy's:

* ``mean``: the sum in the accumulation dtype (float64 for integers and bool, float32 for
  float16), divided by the element count (a :class:`SizeOf`: sizes are symbolic until a
  call), cast back to that dtype (float16 for a float16 input);
* ``var``/``std``: the mean with kept axes, the squared deviations (``re² + im²`` for
  complex), their sum divided by ``max(count - correction, 0)``; ``std`` its square root;
* ``argmax``/``argmin``: the smallest coordinate (an :class:`Iota`) where the array equals
  its maximum — or is NaN, since a NaN is the maximum NumPy reports, at its first
  occurrence — found as the first nonzero hit or the first zero (``_arg``: each reduction
  then reads a constant wherever the array is zero, so a sparse array's is O(nnz));
* ``nansum``/``nanprod``: NaNs replaced by the identity; ``nanmax``/``nanmin``: NaNs
  replaced by -inf/+inf and an all-NaN slice NaN again; ``nanmean``/``nanvar``/``nanstd``:
  counts of the non-NaN elements;
* ``count_nonzero``: the sum of ``x != 0`` as intp.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from sparsefold.spec import sizes as sz
from sparsefold.spec.compute import INTP, Iota, Literal, Map, Reduce, SizeOf
from sparsefold.spec.errors import IllFormedProgram
from sparsefold.spec.functions import cast_function, check_dtype, get_function
from sparsefold.spec.ir import Node, normalize_axis
from sparsefold.spec.ops_axes import BroadcastTo, ExpandDims
from sparsefold.spec.ops_index import Pad, Slice

__all__ = ["reduce_axes", "keep_dims", "mean", "var", "std", "argmax", "argmin", "nansum",
           "nanprod", "nanmax", "nanmin", "nanmean", "nanvar", "nanstd", "count_nonzero",
           "explicit_extreme"]


def reduce_axes(node: Node, axis, what: str) -> tuple[int, ...]:
    """NumPy's ``axis`` argument: None (every axis), an int, or a tuple of distinct ints."""
    if axis is None:
        return tuple(range(node.ndim))
    if isinstance(axis, (tuple, list)):
        axes = tuple(normalize_axis(a, node.ndim, what=f"{what} axis") for a in axis)
    else:
        axes = (normalize_axis(axis, node.ndim, what=f"{what} axis"),)
    if len(set(axes)) != len(axes):
        raise IllFormedProgram(f"{what}: repeated axis in {axis!r}")
    return tuple(sorted(axes))


def keep_dims(out: Node, axes: tuple[int, ...], keepdims: bool) -> Node:
    """``out`` (reduced over ``axes``) with size-1 axes put back where they were."""
    if keepdims:
        for a in axes:
            out = ExpandDims(out, a)
    return out


def _fn(name: str, *args) -> Map:
    return Map(get_function(name), tuple(args))


def _cast(node: Node, dtype: np.dtype) -> Node:
    return node if node.dtype == dtype else Map(cast_function(dtype), (node,))


def _count(node: Node, axes) -> SizeOf:
    return SizeOf(sz.product(node.shape[a] for a in axes))


def _sum(node: Node, axes, dtype=None) -> Reduce:
    return Reduce(node, axes, "sum", dtype)


def _accumulation(x: Node, dtype) -> tuple[np.dtype | None, np.dtype | None]:
    """(dtype to sum in, dtype of the result) as NumPy's ``_mean``: float64 for integers
    and bool, float32 for float16 (the result float16 again)."""
    if dtype is not None:
        dt = check_dtype(dtype, what="dtype")
        return dt, dt
    if x.dtype.kind in "biu":
        return np.dtype(np.float64), np.dtype(np.float64)
    if x.dtype == np.float16:
        return np.dtype(np.float32), np.dtype(np.float16)
    return None, None


def mean(x: Node, axis=None, keepdims: bool = False, dtype=None) -> Node:
    """``np.mean``: the sum divided by the number of elements combined."""
    axes = reduce_axes(x, axis, "mean")
    acc, result = _accumulation(x, dtype)
    total = _sum(x, axes, acc)
    out = _cast(_fn("divide", total, _count(x, axes)), result or total.dtype)
    return keep_dims(out, axes, keepdims)


def _correction(ddof, correction):
    if correction is not None and ddof not in (0, None):
        raise IllFormedProgram("var/std: give ddof or correction, not both")
    c = correction if correction is not None else (ddof or 0)
    if isinstance(c, bool) or not isinstance(c, (int, float, np.integer, np.floating)):
        raise IllFormedProgram(f"var/std: the correction must be a number, found {c!r}")
    return c


def _squared_deviations(x: Node, axes, acc) -> Node:
    """``|x - mean(x, keepdims)|**2`` as NumPy's ``_var`` computes it."""
    mean_kept = _sum(x, axes, acc)
    mean_kept = _cast(_fn("divide", mean_kept, _count(x, axes)), mean_kept.dtype)
    mean_kept = keep_dims(mean_kept, axes, True)
    d = _fn("subtract", x, BroadcastTo(mean_kept, x.shape))
    if d.dtype.kind == "c":
        return _fn("add", _fn("square", _fn("real", d)), _fn("square", _fn("imag", d)))
    return _fn("square", d)  # NumPy's x * x; not a multiply, which reads as a contraction


def _var(x: Node, axes, acc, c) -> Node:
    sq = _squared_deviations(x, axes, acc)
    total = _sum(sq, axes, acc)
    n = _fn("maximum", _fn("subtract", _count(x, axes), Literal(c)), Literal(0))
    return _cast(_fn("divide", total, n), total.dtype)


def var(x: Node, axis=None, keepdims: bool = False, dtype=None, ddof=0,
        correction=None) -> Node:
    """``np.var`` (``correction`` is the array API's name for ``ddof``)."""
    axes = reduce_axes(x, axis, "var")
    acc = check_dtype(dtype) if dtype is not None else \
        (np.dtype(np.float64) if x.dtype.kind in "biu" else None)
    return keep_dims(_var(x, axes, acc, _correction(ddof, correction)), axes, keepdims)


def std(x: Node, axis=None, keepdims: bool = False, dtype=None, ddof=0,
        correction=None) -> Node:
    """``np.std``: the square root of :func:`var`."""
    v = var(x, axis, keepdims, dtype, ddof, correction)
    return _cast(_fn("sqrt", v), v.dtype)


def _flat(x: Node, axis):
    """(array, axis) of an arg-reduction: ``axis=None`` reads the row-major flattening."""
    if axis is None:
        from sparsefold.spec.derived import reshape
        return reshape(x, (-1,)), 0
    return x, normalize_axis(axis, x.ndim, what="argmax/argmin axis")


def _first(cond: Node, a: int) -> Node:
    """The smallest coordinate along ``a`` where ``cond`` holds, else the axis length."""
    return Reduce(_fn("where", cond, Iota(cond.shape, a), SizeOf(cond.shape[a])), (a,), "min")


def _background(x: Node) -> Literal:
    """The value ``_arg`` singles out: ``x``'s value where its sparse inputs store nothing
    (``spec.fills.implicit_value``: a filled pydata array's ``c``) when that is a number
    other than 0 and not NaN, else 0. Any such constant gives the same answer; this one
    keeps ``x != c`` as sparse as ``x`` (with 0 a filled ``x`` made every comparison
    dense: argmax of a pydata array of fill 1 took rows x columns, #39)."""
    from sparsefold.spec.fills import fill_literal, implicit_value
    c = implicit_value(x)
    if c is None or np.asarray(c).dtype.kind not in "biufc":
        return Literal(0)
    with np.errstate(all="ignore"):
        if bool(np.isnan(c)) or bool(c == 0):
            return Literal(0)
    return fill_literal(c, x.dtype)


def _arg(which: str, x: Node, axis, keepdims: bool) -> Node:
    """The first coordinate of the extreme ``which`` (of the first NaN, if any), as NumPy.

    Written so that each reduction's argument is a constant (the axis length) wherever
    ``x`` is its background ``b`` (0, or a sparse input's fill: :func:`_background`),
    which a sparse ``x`` mostly is: the first hit other than ``b`` (an element equal to
    the extreme, or NaN), and the first ``b`` — coordinate 0 if ``x[0] == b``, else the
    ``j`` with ``x[j - 1] != b == x[j]``. The extreme is ``b`` exactly when a ``b`` is
    the answer (then no other element equals it and none is NaN)."""
    flat, a = _flat(x, axis)
    zero = _background(flat)  # (a fresh literal at each use, as the program was printed)
    extreme = Reduce(flat, (a,), which)
    best = BroadcastTo(keep_dims(extreme, (a,), True), flat.shape)
    nonzero = _fn("not_equal", flat, replace(zero))
    hit = _fn("logical_and", nonzero,
              _fn("logical_or", _fn("equal", flat, best), _fn("isnan", flat)))
    keep = [(None, None, None)] * flat.ndim
    keep[a] = (None, -1, None)
    widths = [(sz.Const(0), sz.Const(0))] * flat.ndim
    widths[a] = (sz.Const(1), sz.Const(0))
    # x[j - 1] != 0 along a (False before the first element: a padding that stores nothing;
    # padded, then its last element dropped, so the shape is x's for every size)
    before = Slice(Pad(nonzero, tuple(widths), False), tuple(keep))
    zero_after_nonzero = _fn("logical_and", before, _fn("logical_not", nonzero))
    head = list(keep)
    head[a] = (0, 1, None)
    starts_zero = Reduce(_fn("equal", Slice(flat, tuple(head)), replace(zero)), (a,), "any")
    first_zero = _fn("where", starts_zero, Literal(0), _first(zero_after_nonzero, a))
    out: Node = _fn("where", _fn("equal", extreme, replace(zero)), first_zero,
                     _first(hit, a))
    if keepdims:
        out = ExpandDims(out, a) if axis is not None else BroadcastTo(out, (1,) * x.ndim)
    return out


def argmax(x: Node, axis=None, keepdims: bool = False) -> Node:
    """``np.argmax``: the first coordinate of the maximum (of the first NaN, if any)."""
    return _arg("max", x, axis, keepdims)


def argmin(x: Node, axis=None, keepdims: bool = False) -> Node:
    """``np.argmin``: the first coordinate of the minimum (of the first NaN, if any)."""
    return _arg("min", x, axis, keepdims)


def _without_nan(x: Node, value) -> Node:
    if x.dtype.kind not in "fc":
        return x
    return _fn("where", _fn("isnan", x), Literal(x.dtype.type(value)), x)


def nansum(x: Node, axis=None, keepdims: bool = False, dtype=None) -> Node:
    axes = reduce_axes(x, axis, "nansum")
    return keep_dims(Reduce(_without_nan(x, 0), axes, "sum", dtype), axes, keepdims)


def nanprod(x: Node, axis=None, keepdims: bool = False, dtype=None) -> Node:
    axes = reduce_axes(x, axis, "nanprod")
    return keep_dims(Reduce(_without_nan(x, 1), axes, "prod", dtype), axes, keepdims)


def _nan_extreme(which: str, x: Node, axis, keepdims: bool) -> Node:
    axes = reduce_axes(x, axis, f"nan{which}")
    if x.dtype.kind not in "f":
        return keep_dims(Reduce(x, axes, which), axes, keepdims)
    fill = -np.inf if which == "max" else np.inf
    best = Reduce(_without_nan(x, fill), axes, which)
    all_nan = Reduce(_fn("isnan", x), axes, "all")
    out = _fn("where", all_nan, Literal(x.dtype.type(np.nan)), best)
    return keep_dims(out, axes, keepdims)


def nanmax(x: Node, axis=None, keepdims: bool = False) -> Node:
    """``np.nanmax``: NaNs ignored; a slice of NaNs only is NaN."""
    return _nan_extreme("max", x, axis, keepdims)


def nanmin(x: Node, axis=None, keepdims: bool = False) -> Node:
    """``np.nanmin``: NaNs ignored; a slice of NaNs only is NaN."""
    return _nan_extreme("min", x, axis, keepdims)


def _not_nan_count(x: Node, axes) -> Node:
    if x.dtype.kind not in "fc":
        return _count(x, axes)
    return Reduce(_fn("logical_not", _fn("isnan", x)), axes, "sum", INTP)


def nanmean(x: Node, axis=None, keepdims: bool = False, dtype=None) -> Node:
    """``np.nanmean``: the sum of the non-NaN elements over their count."""
    if x.dtype.kind not in "fc":
        return mean(x, axis, keepdims, dtype)
    axes = reduce_axes(x, axis, "nanmean")
    acc, result = _accumulation(x, dtype)
    total = Reduce(_without_nan(x, 0), axes, "sum", acc)
    out = _cast(_fn("divide", total, _not_nan_count(x, axes)), result or total.dtype)
    return keep_dims(out, axes, keepdims)


def nanvar(x: Node, axis=None, keepdims: bool = False, dtype=None, ddof=0,
           correction=None) -> Node:
    """``np.nanvar``: :func:`var` of the non-NaN elements, NaN where no more than
    ``correction`` of them remain (NumPy's ``_nanfunctions_impl.nanvar``, step by step)."""
    if x.dtype.kind not in "fc":
        return var(x, axis, keepdims, dtype, ddof, correction)
    axes = reduce_axes(x, axis, "nanvar")
    c = _correction(ddof, correction)
    acc = check_dtype(dtype) if dtype is not None else None
    clean = _without_nan(x, 0)
    count = _not_nan_count(x, axes)
    avg = Reduce(clean, axes, "sum", acc)
    avg = keep_dims(_cast(_fn("divide", avg, count), avg.dtype), axes, True)
    d = _cast(_fn("subtract", clean, BroadcastTo(avg, x.shape)), x.dtype)
    d = _fn("where", _fn("isnan", x), Literal(x.dtype.type(0)), d)
    sq = _fn("real", _fn("multiply", d, _fn("conj", d))) if d.dtype.kind == "c" else \
        _fn("square", d)
    total = Reduce(sq, axes, "sum", acc)
    dof = _fn("subtract", count, Literal(c))
    out = _cast(_fn("divide", total, dof), total.dtype)
    out = _fn("where", _fn("less_equal", dof, Literal(0)),
              Literal(out.dtype.type(np.nan)), out)
    return keep_dims(out, axes, keepdims)


def nanstd(x: Node, axis=None, keepdims: bool = False, dtype=None, ddof=0,
           correction=None) -> Node:
    v = nanvar(x, axis, keepdims, dtype, ddof, correction)
    return _cast(_fn("sqrt", v), v.dtype)


def count_nonzero(x: Node, axis=None, keepdims: bool = False) -> Node:
    """``np.count_nonzero``: how many elements are not 0 (intp)."""
    axes = reduce_axes(x, axis, "count_nonzero")
    return keep_dims(Reduce(_fn("not_equal", x, Literal(0)), axes, "sum", INTP), axes,
                     keepdims)


def explicit_extreme(which: str, x: Node, axis=None, keepdims: bool = False) -> Node:
    """scipy's ``max``/``min`` with ``explicit=True``: over the nonzero elements only; 0
    where there is none. (scipy reads *stored* elements: a stored 0 counts there; in the
    language, whose values do not record storage, a stored 0 is a 0.)"""
    axes = reduce_axes(x, axis, which)
    dt = x.dtype
    if dt.kind == "b":
        lowest = which == "min"
    elif dt.kind == "f":
        lowest = -np.inf if which == "max" else np.inf
    elif dt.kind in "iu":
        lowest = np.iinfo(dt).min if which == "max" else np.iinfo(dt).max
    else:
        raise IllFormedProgram(f"{which}(explicit=True) of {dt} is not supported")
    nonzero = _fn("not_equal", x, Literal(dt.type(0)))
    best = Reduce(_fn("where", nonzero, x, Literal(dt.type(lowest))), axes, which)
    out = _fn("where", Reduce(nonzero, axes, "any"), best, Literal(dt.type(0)))
    return keep_dims(out, axes, keepdims)

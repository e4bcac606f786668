"""The standard's creation functions, as programs of the language.

Where the standard's semantics allow a sparse result, the result is sparse and costs
nothing per element:

* ``zeros``, ``empty`` (the same: an empty array has no values worth storing), ``full``
  with a fill of +0 and their ``*_like``: an input bound to a COO array that stores
  nothing (0-d: a NumPy zero);
* ``eye``: its diagonal is a strided slice of the flattened array, so it is
  ``reshape(place(zeros(n*m), ones(count), k::m+1), (n, m))`` — ``spec.ops_place`` —
  storing ``count`` entries;
* ``tril``/``triu`` of a sparse array (``spec.ops_diagonal.Triangle``), ``meshgrid`` of
  sparse vectors (broadcasts).

Where the values are not zero the result is dense-valued, and stays lazy until it is
computed: ``ones``, ``full`` with any other fill (-0.0 and NaN included) are a scalar
broadcast to the shape (no memory until computed, and ``ones(shape) * A`` of a sparse
``A`` stays sparse); ``arange`` and ``linspace`` are programs over the coordinate
(``Iota``). ``asarray`` and ``from_dlpack`` take data in; lists and scalars go through
NumPy's own conversion (the standard's default dtypes are NumPy's on 64-bit platforms).
"""

from __future__ import annotations

import math
import operator

import numpy as np
import scipy.sparse as sp

from sparsefold.array_api._info import check_device
from sparsefold.lazy import LazyArray, rebound
from sparsefold.lazy import asarray as _wrap
from sparsefold.spec import promotion
from sparsefold.spec.compute import Iota, Literal
from sparsefold.spec.errors import IllFormedArgument, IllFormedProgram
from sparsefold.spec.ops_axes import BroadcastTo
from sparsefold.storage.describe import is_pydata_sparse, is_scipy_sparse

__all__ = ["asarray", "zeros", "zeros_like", "empty", "empty_like", "ones", "ones_like",
           "full", "full_like", "eye", "arange", "linspace", "meshgrid", "from_dlpack"]


def _shape(shape) -> tuple[int, ...]:
    if isinstance(shape, (int, np.integer)) and not isinstance(shape, (bool, np.bool_)):
        shape = (shape,)
    try:
        out = tuple(operator.index(n) for n in shape)
    except TypeError:
        raise IllFormedArgument(f"shape must be an int or a tuple of ints, found {shape!r}") \
            from None
    if any(n < 0 for n in out):
        raise IllFormedProgram(f"shape must be non-negative, found {out}")
    return out


def _dtype(dtype, default) -> np.dtype:
    return promotion.standard_dtype(default if dtype is None else dtype, what="dtype")


def _scalar_dtype(value) -> np.dtype:
    """The default dtype of a Python scalar (the standard's defaults)."""
    if isinstance(value, bool):
        return np.dtype(bool)
    if isinstance(value, int):
        return promotion.DEFAULTS["integral"]
    if isinstance(value, float):
        return promotion.DEFAULTS["real floating"]
    if isinstance(value, complex):
        return promotion.DEFAULTS["complex floating"]
    if isinstance(value, np.generic):
        return promotion.standard_dtype(value.dtype)
    if isinstance(value, LazyArray) and value.ndim == 0:
        return value.dtype
    raise IllFormedArgument(f"fill_value must be a bool, int, float or complex, found "
                            f"{type(value).__name__}")


# --- taking data in -----------------------------------------------------------------------

def _copied(a):
    if isinstance(a, np.ndarray) or is_scipy_sparse(a) or is_pydata_sparse(a):
        return a.copy()
    return a


def asarray(obj, /, *, dtype=None, device=None, copy: bool | None = None) -> LazyArray:
    """An array from ``obj``: a sparsefold array, a NumPy, scipy.sparse or pydata/sparse
    array (wrapped without copying when ``copy`` is not True), a Python scalar, a nested
    sequence, or an object with ``__dlpack__`` or the buffer protocol.

    ``dtype`` converts (``copy=False`` then refuses: the data would be copied). ``copy=True``
    copies the data the result reads, so writes to ``obj`` afterwards are not seen."""
    check_device(device)
    want = None if dtype is None else promotion.standard_dtype(dtype, what="asarray dtype")
    if isinstance(obj, LazyArray) or is_scipy_sparse(obj) or is_pydata_sparse(obj) or \
            isinstance(obj, np.ndarray):
        x = _wrap(obj)
        if want is not None and want != x.dtype:
            if copy is False:
                raise ValueError(f"asarray: copy=False, but converting {x.dtype} to {want} "
                                 f"copies")
            x = x.astype(want)
        if copy:
            x = rebound(x, _copied)
        elif x is obj:
            x = LazyArray(x.node, x.bindings)  # a new array object over the same program
        return x
    if copy is False and not hasattr(obj, "__dlpack__") and not isinstance(obj, memoryview):
        raise ValueError(f"asarray: copy=False, but a {type(obj).__name__} must be copied "
                         f"into an array")
    if hasattr(obj, "__dlpack__") and not isinstance(obj, (list, tuple)):
        data = np.from_dlpack(obj)
        data = np.array(data, dtype=want, copy=True) if copy or (
            want is not None and want != data.dtype) else data
    else:
        try:
            data = np.array(obj, dtype=want, copy=True if copy or copy is None else None)
        except OverflowError as exc:
            raise OverflowError(f"asarray: {exc}") from None
    if want is None and data.dtype not in promotion.DTYPES:
        raise IllFormedProgram(f"asarray: {type(obj).__name__} gives NumPy dtype {data.dtype}, "
                               f"not one of the array API's")
    return _wrap(data)


def from_dlpack(x, /, *, device=None, copy: bool | None = None) -> LazyArray:
    """An array over the DLPack capsule of ``x`` (host memory): NumPy's ``from_dlpack``."""
    check_device(device)
    if isinstance(x, LazyArray):
        return asarray(x, copy=copy)
    kwargs = {} if copy is None else {"copy": copy}
    return _wrap(np.from_dlpack(x, **kwargs))


# --- zeros: sparse --------------------------------------------------------------------------

def _zeros(shape: tuple[int, ...], dtype: np.dtype) -> LazyArray:
    # a constant of the program: a jit function may make zeros inside (index_keys)
    from sparsefold.index_keys import keep_constant
    if not shape:
        return _wrap(keep_constant(np.zeros((), dtype)))
    return _wrap(keep_constant(sp.coo_array(shape, dtype=dtype)))


def zeros(shape, *, dtype=None, device=None) -> LazyArray:
    """An array of zeros that stores nothing (a COO array with no entries)."""
    check_device(device)
    return _zeros(_shape(shape), _dtype(dtype, promotion.DEFAULTS["real floating"]))


def empty(shape, *, dtype=None, device=None) -> LazyArray:
    """``zeros``: an empty array's values are unspecified, and storing none is cheapest."""
    return zeros(shape, dtype=dtype, device=device)


def _like(x, dtype, device) -> tuple[tuple[int, ...], np.dtype]:
    check_device(device)
    x = _wrap(x)
    shape = x.shape
    if not all(isinstance(n, int) for n in shape):
        raise IllFormedProgram(f"*_like: the array's shape {shape} is symbolic")
    return shape, _dtype(dtype, x.dtype)


def zeros_like(x, /, *, dtype=None, device=None) -> LazyArray:
    return _zeros(*_like(x, dtype, device))


def empty_like(x, /, *, dtype=None, device=None) -> LazyArray:
    return zeros_like(x, dtype=dtype, device=device)


# --- constants: dense-valued, lazy -----------------------------------------------------------

def _is_plus_zero(value) -> bool:
    v = complex(value)
    return v == 0 and not math.copysign(1.0, v.real) < 0 and not math.copysign(1.0, v.imag) < 0


def _full(shape: tuple[int, ...], value, dtype: np.dtype) -> LazyArray:
    if isinstance(value, LazyArray):
        value = value.__complex__() if dtype.kind == "c" else (
            value.__float__() if dtype.kind == "f" else value.__int__() if dtype.kind in "iu"
            else value.__bool__())
    if isinstance(value, complex) and dtype.kind != "c":
        raise IllFormedProgram(f"full: a complex fill_value needs a complex dtype, found {dtype}")
    if isinstance(value, float) and dtype.kind in "biu":
        raise IllFormedProgram(f"full: a float fill_value needs a floating dtype, found {dtype}")
    scalar = dtype.type(value)  # an integer out of range: NumPy's OverflowError
    if _is_plus_zero(scalar):
        return _zeros(shape, dtype)
    return LazyArray(BroadcastTo(Literal(scalar), shape))


def ones(shape, *, dtype=None, device=None) -> LazyArray:
    """Ones: the scalar 1 broadcast to ``shape`` (dense-valued; nothing is allocated until
    the array is computed)."""
    check_device(device)
    return _full(_shape(shape), 1, _dtype(dtype, promotion.DEFAULTS["real floating"]))


def ones_like(x, /, *, dtype=None, device=None) -> LazyArray:
    shape, dt = _like(x, dtype, device)
    return _full(shape, 1, dt)


def full(shape, fill_value, *, dtype=None, device=None) -> LazyArray:
    """``fill_value`` broadcast to ``shape``; a fill of +0 is ``zeros`` (sparse)."""
    check_device(device)
    return _full(_shape(shape), fill_value, _dtype(dtype, _scalar_dtype(fill_value)))


def full_like(x, /, fill_value, *, dtype=None, device=None) -> LazyArray:
    shape, dt = _like(x, dtype, device)
    return _full(shape, fill_value, dt)


# --- eye: a strided region of the flattened array ----------------------------------------------

def eye(n_rows: int, n_cols: int | None = None, /, *, k: int = 0, dtype=None,
        device=None) -> LazyArray:
    """Ones on diagonal ``k``, zeros elsewhere, storing only the diagonal: the diagonal of
    an ``n × m`` array flattened is the slice ``start :: m + 1`` (``start = k`` above the
    main diagonal, ``-k * m`` below), so this is ``zeros(n*m)`` with ones placed there
    (``spec.ops_place.Place``), reshaped."""
    check_device(device)
    n = operator.index(n_rows)
    m = n if n_cols is None else operator.index(n_cols)
    k = operator.index(k)
    if n < 0 or m < 0:
        raise IllFormedProgram(f"eye: sizes must be non-negative, found {n} and {m}")
    dt = _dtype(dtype, promotion.DEFAULTS["real floating"])
    count = max(0, min(n, m - k)) if k >= 0 else max(0, min(n + k, m))
    flat = _zeros((n * m,), dt)
    if count:
        start = k if k >= 0 else -k * m
        flat[start:start + (count - 1) * (m + 1) + 1:m + 1] = _full((count,), 1, dt)
    from sparsefold.functions import reshape
    return reshape(flat, (n, m))


# --- ranges: programs over the coordinate ---------------------------------------------------

def _real(value, what: str):
    if isinstance(value, LazyArray):
        value = value.__float__() if value.dtype.kind == "f" else value.__int__()
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer,
                                                                    np.floating)):
        raise IllFormedArgument(f"arange: {what} must be an int or a float, found {value!r}")
    return value.item() if isinstance(value, np.generic) else value


def arange(start, /, stop=None, step=1, *, dtype=None, device=None) -> LazyArray:
    """``start, start + step, ...`` below ``stop``: ``start + step * i`` over the coordinate
    ``i`` of an array of ``ceil((stop - start) / step)`` elements (``Iota``)."""
    check_device(device)
    start, stop = (0, start) if stop is None else (start, stop)
    start, stop, step = _real(start, "start"), _real(stop, "stop"), _real(step, "step")
    if step == 0:
        raise IllFormedProgram("arange: step must not be 0")
    is_float = any(isinstance(v, float) for v in (start, stop, step))
    if is_float:
        n = max(0, math.ceil((stop - start) / step))
    else:
        n = max(0, -(-(stop - start) // step))
    default = promotion.DEFAULTS["real floating" if is_float else "integral"]
    dt = _dtype(dtype, default)
    if n == 0:
        return _zeros((0,), dt)
    i = LazyArray(Iota((n,), 0))
    y = i * (float(step) if is_float else step) + (float(start) if is_float else start)
    return y if y.dtype == dt else y.astype(dt)


def linspace(start, stop, /, num: int, *, dtype=None, device=None,
             endpoint: bool = True) -> LazyArray:
    """``num`` evenly spaced values from ``start`` to ``stop`` (included when
    ``endpoint``), computed as NumPy computes them: ``start + i * step`` with ``step =
    (stop - start) / (num - 1)`` (``num`` without the endpoint), the last one ``stop``."""
    check_device(device)
    num = operator.index(num)
    if num < 0:
        raise IllFormedProgram(f"linspace: num must be non-negative, found {num}")
    is_complex = any(isinstance(v, (complex, np.complexfloating)) for v in (start, stop))
    default = promotion.DEFAULTS["complex floating" if is_complex else "real floating"]
    dt = _dtype(dtype, default)
    wide = np.dtype(np.complex128 if is_complex or dt.kind == "c" else np.float64)
    start, stop = wide.type(start), wide.type(stop)
    if num == 0:
        return _zeros((0,), dt)
    if num == 1:
        return _full((1,), start.item(), dt) if start != 0 else _zeros((1,), dt)
    div = num - 1 if endpoint else num
    step = (stop - start) / div
    i = LazyArray(Iota((num,), 0))
    y = i * step + start
    if endpoint:
        from sparsefold.functions import where
        y = where(i == num - 1, stop, y)
    return y if y.dtype == dt else y.astype(dt)


def meshgrid(*arrays, indexing: str = "xy") -> list[LazyArray]:
    """Coordinate grids from 1-d arrays: each reshaped to its axis and broadcast (a sparse
    vector gives a sparse grid). ``indexing="xy"`` swaps the first two axes."""
    if indexing not in ("xy", "ij"):
        raise IllFormedProgram(f"meshgrid: indexing must be 'xy' or 'ij', found {indexing!r}")
    from sparsefold.functions import broadcast_to, reshape
    xs = [_wrap(a) for a in arrays]
    for x in xs:
        if x.ndim != 1:
            raise IllFormedProgram(f"meshgrid: expected 1-d arrays, found shape {x.shape}")
    sizes = [x.shape[0] for x in xs]
    if indexing == "xy" and len(xs) >= 2:
        sizes[0], sizes[1] = sizes[1], sizes[0]
    out = []
    for p, x in enumerate(xs):
        axis = {0: 1, 1: 0}.get(p, p) if indexing == "xy" and len(xs) >= 2 else p
        shape = [1] * len(xs)
        shape[axis] = x.shape[0]
        out.append(broadcast_to(reshape(x, tuple(shape)), tuple(sizes)))
    return out


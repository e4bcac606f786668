"""sparsefold's array API namespace: the array API standard, version 2024.12, over
sparsefold arrays (``LazyArray``).

    import sparsefold.array_api as xp
    x = xp.asarray(scipy_csr)               # no copy; stays sparse
    y = xp.sum(xp.tril(x) * 2, axis=1)      # a program: nothing computed yet
    float(y[0])                             # computed now (sparsefold.materialize)

``x.__array_namespace__()`` returns this module, so ``array_api_compat.array_namespace(x)``
does too. Every function builds a program of the language (``spec``); nothing here calls
NumPy on densified data. Arrays are lazy and materialize when Python needs a value (a
scalar conversion, ``__array__``/``__dlpack__``) or a shape that depends on the data
(``unique_*``, ``nonzero``, boolean masks): the interpreter answers small programs, a
compiled kernel large ones. docs/array_api.md has the eager/lazy choice, which creation
functions give sparse results, and every deviation from the standard.
"""

from __future__ import annotations

import math as _math

import numpy as _np

from sparsefold import functions as _f
from sparsefold import reductions as _r
from sparsefold.array_api import fft, linalg
from sparsefold.array_api._creation import (
    arange,
    asarray,
    empty,
    empty_like,
    eye,
    from_dlpack,
    full,
    full_like,
    linspace,
    meshgrid,
    ones,
    ones_like,
    zeros,
    zeros_like,
)
from sparsefold.array_api._dtypes import (
    astype,
    can_cast,
    finfo,
    iinfo,
    isdtype,
    result_type,
)
from sparsefold.array_api._functions import (
    broadcast_arrays,
    expand_dims,
    nonzero,
    repeat,
    reshape,
    squeeze,
    take,
    take_along_axis,
    tile,
    vecdot,
    where,
)
from sparsefold.array_api._info import CPU, Device, __array_namespace_info__
from sparsefold.array_api._ordering import (
    argsort,
    cumulative_prod,
    cumulative_sum,
    searchsorted,
    sort,
    unique_all,
    unique_counts,
    unique_inverse,
    unique_values,
)
from sparsefold.elementwise import ELEMENTWISE as _ELEMENTWISE
from sparsefold.elementwise import clip, round
from sparsefold.lazy import LazyArray

__array_api_version__ = "2024.12"

# --- data types: NumPy's dtype objects (x.dtype == xp.float64) ---------------------------
bool = _np.dtype("bool")  # noqa: A001 - the standard's names
int8 = _np.dtype("int8")
int16 = _np.dtype("int16")
int32 = _np.dtype("int32")
int64 = _np.dtype("int64")
uint8 = _np.dtype("uint8")
uint16 = _np.dtype("uint16")
uint32 = _np.dtype("uint32")
uint64 = _np.dtype("uint64")
float32 = _np.dtype("float32")
float64 = _np.dtype("float64")
complex64 = _np.dtype("complex64")
complex128 = _np.dtype("complex128")

# --- constants ----------------------------------------------------------------------------
e = _math.e
inf = _math.inf
nan = _math.nan
pi = _math.pi
newaxis = None

# --- functions the front end defines with the standard's signatures -------------------------
abs = _f.abs  # noqa: A001
add = _f.add
subtract = _f.subtract
multiply = _f.multiply
divide = _f.divide
pow = _f.pow  # noqa: A001
maximum = _f.maximum
minimum = _f.minimum
less = _f.less
less_equal = _f.less_equal
greater = _f.greater
greater_equal = _f.greater_equal
equal = _f.equal
not_equal = _f.not_equal
logical_and = _f.logical_and
logical_or = _f.logical_or
negative = _f.negative
concat = _f.concat
stack = _f.stack
unstack = _f.unstack
permute_dims = _f.permute_dims
moveaxis = _f.moveaxis
broadcast_to = _f.broadcast_to
flip = _f.flip
roll = _f.roll
matmul = _f.matmul
matrix_transpose = _f.matrix_transpose
tensordot = _f.tensordot
tril = _f.tril
triu = _f.triu
diff = _f.diff
sum = _f.sum  # noqa: A001
prod = _f.prod
max = _f.max  # noqa: A001
min = _f.min  # noqa: A001
all = _f.all  # noqa: A001
any = _f.any  # noqa: A001
mean = _r.mean
var = _r.var
std = _r.std
argmax = _r.argmax
argmin = _r.argmin
count_nonzero = _r.count_nonzero

_STANDARD_ELEMENTWISE = (
    "acos", "acosh", "asin", "asinh", "atan", "atan2", "atanh", "bitwise_and",
    "bitwise_left_shift", "bitwise_invert", "bitwise_or", "bitwise_right_shift",
    "bitwise_xor", "ceil", "conj", "copysign", "cos", "cosh", "exp", "expm1", "floor",
    "floor_divide", "hypot", "imag", "isfinite", "isinf", "isnan", "log", "log1p", "log2",
    "log10", "logaddexp", "logical_not", "logical_xor", "nextafter", "positive", "real",
    "reciprocal", "remainder", "sign", "signbit", "sin", "sinh", "square", "sqrt",
    "tan", "tanh", "trunc")
globals().update({_name: _ELEMENTWISE[_name] for _name in _STANDARD_ELEMENTWISE})

__all__ = [
    "__array_api_version__", "__array_namespace_info__", "Device", "CPU", "LazyArray",
    "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float32", "float64", "complex64", "complex128", "e", "inf", "nan", "pi", "newaxis",
    "arange", "asarray", "empty", "empty_like", "eye", "from_dlpack", "full", "full_like",
    "linspace", "meshgrid", "ones", "ones_like", "tril", "triu", "zeros", "zeros_like",
    "astype", "can_cast", "finfo", "iinfo", "isdtype", "result_type",
    "abs", "add", "subtract", "multiply", "divide", "pow", "maximum", "minimum", "less",
    "less_equal", "greater", "greater_equal", "equal", "not_equal", "logical_and",
    "logical_or", "negative", "clip", "round", *_STANDARD_ELEMENTWISE,
    "take", "take_along_axis",
    "matmul", "matrix_transpose", "tensordot", "vecdot",
    "broadcast_arrays", "broadcast_to", "concat", "expand_dims", "flip", "moveaxis",
    "permute_dims", "repeat", "reshape", "roll", "squeeze", "stack", "tile", "unstack",
    "argmax", "argmin", "count_nonzero", "nonzero", "searchsorted", "where",
    "unique_all", "unique_counts", "unique_inverse", "unique_values",
    "argsort", "sort",
    "cumulative_prod", "cumulative_sum", "max", "mean", "min", "prod", "std", "sum", "var",
    "all", "any", "diff",
    "fft", "linalg",
]

_VERSIONS = ("2021.12", "2022.12", "2023.12", "2024.12")


def _namespace(api_version):
    """This module, for ``x.__array_namespace__(api_version=...)``."""
    if api_version is not None and api_version not in _VERSIONS:
        raise ValueError(f"sparsefold.array_api implements the array API {', '.join(_VERSIONS)}"
                         f"; found api_version={api_version!r}")
    import sys
    return sys.modules[__name__]

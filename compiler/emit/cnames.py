"""Names and types in generated Cython: one place decides every identifier and C type.

Nothing a user names reaches generated source unchecked: input names and size symbols are
already identifiers (spec checks them), and they are still prefixed here so they can never
collide with Cython keywords or our own variables.
"""

from __future__ import annotations

import math

import numpy as np

from sparsefold.spec.errors import IllFormedProgram

__all__ = ["ctype", "storage_ctype", "storage_itemsize", "size_var", "array_var", "c_literal",
           "SUPPORTED_DTYPES", "check_compilable_dtype", "index_ctype", "is_complex_ctype",
           "C_SPELLING"]

_CTYPES = {
    "bool": "bint", "int8": "int8_t", "int16": "int16_t", "int32": "int32_t",
    "int64": "int64_t", "uint8": "uint8_t", "uint16": "uint16_t", "uint32": "uint32_t",
    "uint64": "uint64_t", "float32": "float", "float64": "double",
    "float16": "float", "complex64": "float complex",
    "complex128": "double complex",
}
# bint is an int in C; bool arrays are bytes, so they are read and written through uint8_t.
# float16 is computed in float, as NumPy computes it, and stored as C's _Float16 (sf_half,
# spec/c_library.py); values.convert rounds each elementwise result to half, as NumPy's
# loops do. Complex values are C99 complex.
_STORAGE = dict(_CTYPES, bool="uint8_t", float16="sf_half")
_COMPLEX_CTYPES = frozenset({"float complex", "double complex"})
# how C (not Cython) spells the types that Cython spells with a space
C_SPELLING = {"float complex": "float _Complex", "double complex": "double _Complex"}

SUPPORTED_DTYPES = tuple(np.dtype(n) for n in _CTYPES)


def check_compilable_dtype(dt: np.dtype, what: str) -> None:
    if np.dtype(dt).name not in _CTYPES:
        raise IllFormedProgram(
            f"not supported yet by the compiler: {what} has dtype {dt} (supported: "
            f"{', '.join(_CTYPES)}); use .interpret() for it")


def ctype(dt: np.dtype) -> str:
    """The C type in which values of ``dt`` are computed."""
    return _CTYPES[np.dtype(dt).name]


def storage_ctype(dt: np.dtype) -> str:
    """The C type of an array element of ``dt`` in memory."""
    return _STORAGE[np.dtype(dt).name]



_ITEMSIZE = {ct: np.dtype(name).itemsize for name, ct in _STORAGE.items()}


def storage_itemsize(ct: str) -> int:
    """Bytes of one array element of storage C type ``ct`` (:func:`storage_ctype`)."""
    return _ITEMSIZE[ct]


def index_ctype(dt: np.dtype) -> str:
    return {"int32": "int32_t", "int64": "int64_t"}[np.dtype(dt).name]


def size_var(symbol: str) -> str:
    return f"S_{symbol}"


def array_var(input_name: str, part: str) -> str:
    """``part`` is one of val, pos<l>, crd<l>, st<d> (dense strides). Prefixed ``in_`` so an
    input named like a compiler-owned array (``out``, ``p_out``) cannot collide with it."""
    return f"in_{input_name}_{part}"


def is_complex_ctype(ct: str) -> bool:
    return ct in _COMPLEX_CTYPES


def c_literal(value, dt: np.dtype) -> str:
    """C text for a scalar of dtype ``dt`` (special floats through libc.math; complex
    values built from their parts with CMPLX/CMPLXF)."""
    dt = np.dtype(dt)
    if dt.kind == "b":  # a bare 1 is a Python int to Cython's `or`/`and` (needs the GIL)
        return "True" if bool(value) else "False"
    if dt.kind in "iu":
        return str(int(value))
    if dt.kind == "c":
        z = complex(value)
        part = np.dtype(np.float32 if dt == np.complex64 else np.float64)
        make = "CMPLXF" if dt == np.complex64 else "CMPLX"
        return f"{make}({c_literal(z.real, part)}, {c_literal(z.imag, part)})"
    v = float(value)
    if math.isnan(v):
        return "NAN"
    if math.isinf(v):
        return "INFINITY" if v > 0 else "(-INFINITY)"
    text = repr(v)
    if dt == np.float16:
        return f"(<sf_half>{text})"
    return f"(<float>{text})" if dt == np.float32 else text

"""Data types and type promotion: the array API standard's table (version 2024.12), as data.

The standard defines thirteen dtypes and, for the pairs listed in :data:`STANDARD`, the
dtype two arrays promote to: the join of two chains per kind (``int8 < int16 < ...``),
joined across signedness (``int8`` with ``uint8`` is ``int16``) and across real and complex
floats (``float64`` with ``complex64`` is ``complex128``). Every other pair — bool with a
number, an integer with a float, ``int64`` with ``uint64`` — it leaves to the
implementation; sparsefold answers those as NumPy 2 does (NEP 50), and :data:`EXTENSION`
lists them, so nothing is decided anywhere but here.

Python scalars are *weak* (the standard's "scalar" rule, NEP 50): a ``bool`` takes a bool
array's dtype, an ``int`` an integer or floating array's, a ``float`` a floating array's, a
``complex`` a complex array's. A scalar of another kind (``int8_array + 1.5``) is again
implementation-defined: NumPy's answer.

One table, several readings (STYLE 9): ``spec.functions.result_dtype`` reads it for every
elementwise function, so the interpreter, the compiler (both compute in the node's dtype)
and the array API namespace's ``result_type``/``can_cast`` agree; ``verify.promotion``
proves with Z3 that :data:`STANDARD` is a join semilattice and that :func:`promote` extends
it; ``tests/conformance/test_promotion.py`` runs every pair on all three engines.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from typing import Any

import numpy as np

from sparsefold.spec.errors import IllFormedArgument, IllFormedProgram

__all__ = ["DTYPE_NAMES", "DTYPES", "KINDS", "STANDARD", "EXTENSION", "DEFAULTS", "promote",
           "result_type", "can_cast", "isdtype", "standard_dtype", "is_standard"]

DTYPE_NAMES = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
               "uint64", "float32", "float64", "complex64", "complex128")
DTYPES = tuple(np.dtype(n) for n in DTYPE_NAMES)

# isdtype's kinds: name -> the dtypes it covers
KINDS: dict[str, tuple[np.dtype, ...]] = {
    "bool": (np.dtype("bool"),),
    "signed integer": tuple(np.dtype(n) for n in ("int8", "int16", "int32", "int64")),
    "unsigned integer": tuple(np.dtype(n) for n in ("uint8", "uint16", "uint32", "uint64")),
    "real floating": (np.dtype("float32"), np.dtype("float64")),
    "complex floating": (np.dtype("complex64"), np.dtype("complex128")),
}
KINDS["integral"] = KINDS["signed integer"] + KINDS["unsigned integer"]
KINDS["numeric"] = KINDS["integral"] + KINDS["real floating"] + KINDS["complex floating"]

# the default dtypes (the standard's "default" per kind; also what Python scalars become)
DEFAULTS = {"real floating": np.dtype("float64"), "complex floating": np.dtype("complex128"),
            "integral": np.dtype("int64"), "indexing": np.dtype("int64")}


def _chain(names: str) -> list[tuple[str, str, str]]:
    """Joins within one kind: every pair of a chain promotes to the wider."""
    chain = names.split()
    return [(a, b, chain[max(i, j)]) for (i, a), (j, b) in
            itertools.combinations_with_replacement(enumerate(chain), 2)]


# The standard's promotion table (2024.12, "Type Promotion Rules"), one row per unordered
# pair: (dtype, dtype, result). Nothing else promotes by the standard.
_ROWS = (
    [("bool", "bool", "bool")]
    + _chain("int8 int16 int32 int64")
    + _chain("uint8 uint16 uint32 uint64")
    + _chain("float32 float64")
    + _chain("complex64 complex128")
    # mixed signedness: the narrowest signed type holding both ranges; int64 with uint64
    # has none and is left out
    + [("int8", "uint8", "int16"), ("int8", "uint16", "int32"), ("int8", "uint32", "int64"),
       ("int16", "uint8", "int16"), ("int16", "uint16", "int32"),
       ("int16", "uint32", "int64"), ("int32", "uint8", "int32"),
       ("int32", "uint16", "int32"), ("int32", "uint32", "int64"),
       ("int64", "uint8", "int64"), ("int64", "uint16", "int64"),
       ("int64", "uint32", "int64")]
    # real with complex floats: the complex type of the wider precision
    + [("float32", "complex64", "complex64"), ("float32", "complex128", "complex128"),
       ("float64", "complex64", "complex128"), ("float64", "complex128", "complex128")]
)

STANDARD: dict[tuple[np.dtype, np.dtype], np.dtype] = {}
for _a, _b, _r in _ROWS:
    STANDARD[np.dtype(_a), np.dtype(_b)] = STANDARD[np.dtype(_b), np.dtype(_a)] = np.dtype(_r)


def _numpy_promote(a: np.dtype, b: np.dtype) -> np.dtype:
    return np.result_type(a, b)


# The implementation-defined pairs among the standard's dtypes, answered as NumPy does
EXTENSION: dict[tuple[np.dtype, np.dtype], np.dtype] = {
    (a, b): _numpy_promote(a, b) for a in DTYPES for b in DTYPES if (a, b) not in STANDARD}


def is_standard(dtype: Any) -> bool:
    """``dtype`` is one of the standard's thirteen."""
    try:
        return np.dtype(dtype) in DTYPES
    except TypeError:
        return False


def standard_dtype(dtype: Any, *, what: str = "dtype") -> np.dtype:
    """``dtype`` as one of the standard's dtypes, or :class:`IllFormedProgram`."""
    try:
        dt = np.dtype(dtype)
    except TypeError:
        raise IllFormedArgument(f"{what}: expected a data type, found {dtype!r}") from None
    if dt not in DTYPES:
        raise IllFormedProgram(f"{what}: expected one of the array API's data types "
                               f"({', '.join(DTYPE_NAMES)}), found {dt}")
    return dt


def promote(a: np.dtype, b: np.dtype) -> np.dtype:
    """The dtype two arrays of dtypes ``a`` and ``b`` promote to: the standard's table where
    it has the pair, NumPy's answer elsewhere (:data:`EXTENSION`, and dtypes outside the
    standard's thirteen, e.g. float16)."""
    hit = STANDARD.get((a, b))
    return hit if hit is not None else _numpy_promote(a, b)


def _weak_kind_fits(scalar: Any, dtype: np.dtype) -> bool:
    """The standard's scalar rule: the scalar's kind is one the array's dtype can hold."""
    if isinstance(scalar, bool):
        return dtype.kind == "b"
    if isinstance(scalar, int):
        return dtype.kind in "iufc"
    if isinstance(scalar, float):
        return dtype.kind in "fc"
    return dtype.kind == "c"  # complex


def result_type(args: Iterable[Any]) -> np.dtype:
    """The dtype of an operation over ``args``: dtypes (arrays) and Python scalars (weak).

    Arrays promote pairwise by :func:`promote`, left to right; a weak scalar then takes the
    arrays' dtype when its kind fits (:func:`_weak_kind_fits`), else NumPy decides
    (``int8_array + 1.5`` is float64). Only scalars: NumPy's default dtypes
    (``True + 1`` is int64, ``1 + 1.5`` float64)."""
    args = list(args)
    arrays = [np.dtype(a) for a in args if not isinstance(a, (bool, int, float, complex))]
    scalars = [a for a in args if isinstance(a, (bool, int, float, complex))]
    if not arrays:
        if not scalars:
            raise IllFormedProgram("result_type: expected at least one dtype or array")
        return np.result_type(*scalars)
    out = arrays[0]
    for dt in arrays[1:]:
        out = promote(out, dt)
    for s in scalars:
        if not _weak_kind_fits(s, out):
            out = np.result_type(np.empty(0, out), s)
    return out


def can_cast(from_: np.dtype, to: np.dtype) -> bool:
    """Whether ``from_`` casts to ``to`` by the promotion rules: ``promote(from_, to) ==
    to`` for a pair the standard's table has; across kinds (bool to int, int to float),
    NumPy's "safe" casting (every value of ``from_`` is exactly a value of ``to``)."""
    hit = STANDARD.get((from_, to))
    if hit is not None:
        return hit == to
    return bool(np.can_cast(from_, to, casting="safe"))


def isdtype(dtype: Any, kind: Any) -> bool:
    """The standard's ``isdtype``: ``kind`` is a dtype, a kind name of :data:`KINDS`, or a
    tuple of those (true when any matches)."""
    if not isinstance(dtype, np.dtype):
        raise IllFormedArgument(f"isdtype: expected a dtype, found {dtype!r}")
    if isinstance(kind, tuple):
        return any(isdtype(dtype, k) for k in kind)
    if isinstance(kind, str):
        if kind not in KINDS:
            raise IllFormedProgram(f"isdtype: unknown kind {kind!r}; known: "
                                   f"{', '.join(repr(k) for k in KINDS)}")
        return dtype in KINDS[kind]
    if isinstance(kind, np.dtype):
        return dtype == kind
    raise IllFormedArgument(f"isdtype: expected a dtype, a kind name or a tuple of those, "
                            f"found {kind!r}")

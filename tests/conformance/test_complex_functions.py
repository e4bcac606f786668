"""The complex readings issue #16 left "not supported yet" — reciprocal, sign, expm1, log1p,
log2, log10, the comparisons (NumPy's lexicographic order) and maximum/minimum — and the
integer reciprocal, compiled over scipy csr/csc/coo and 3-d pydata COO inputs holding IEEE
specials, against NumPy on the dense arrays (the oracle is the NumPy function named here).

The stratified conformance subset (``conftest.py``) compiles only a few cases of each test
function, so these readings are compiled here: each function on two of the four formats (a
rotation that covers every format), every function on every format with
``SPARSEFOLD_CONFORMANCE=all`` (each case is its own kernel: ~70 builds)."""

from __future__ import annotations

import os

import numpy as np
import pytest
import scipy.sparse as sp
import sparse as pydata

import sparsefold as sf

pytestmark = pytest.mark.cython

UNARY = {"reciprocal": np.reciprocal, "sign": np.sign, "expm1": np.expm1,
         "log1p": np.log1p, "log2": np.log2, "log10": np.log10}
BINARY = {"less": np.less, "less_equal": np.less_equal, "greater": np.greater,
          "greater_equal": np.greater_equal, "maximum": np.maximum, "minimum": np.minimum}
EXACT = {"reciprocal", "sign", *BINARY}  # the same C operations as NumPy's loops
FORMATS = ("csr", "csc", "coo", "ndcoo")
EVERY = os.environ.get("SPARSEFOLD_CONFORMANCE") == "all"


def _cases(names) -> list[tuple[str, str]]:
    """(name, format): every pair, or each name on two formats in rotation."""
    return [(n, f) for i, n in enumerate(sorted(names)) for j, f in enumerate(FORMATS)
            if EVERY or j in (i % 4, (i + 2) % 4)]

SPECIALS = [1 + 0j, -2.5 + 1j, 1j, -3 - 0j, complex(np.nan, 0), complex(np.inf, 1),
            complex(1, np.nan), complex(-np.inf, np.inf), complex(1e-300, -2e-300),
            complex(0, -0.0), 2 + 2j, complex(2, -1)]


def _dense(seed: int, dtype, shape) -> np.ndarray:
    """Mostly zeros, the stored entries drawn from SPECIALS (ties in the real part)."""
    rng = np.random.default_rng(seed)
    out = np.zeros(int(np.prod(shape)), dtype=dtype)
    where = rng.choice(out.size, size=out.size // 2, replace=False)
    out[where] = rng.choice(np.array(SPECIALS, dtype=np.complex128), size=where.size)
    return out.reshape(shape)


def _as(fmt: str, a: np.ndarray):
    if fmt == "ndcoo":
        return pydata.COO.from_numpy(a)
    return sp.coo_array(a).asformat(fmt)


def _shape(fmt):
    return (3, 4, 5) if fmt == "ndcoo" else (6, 7)


def _result(got) -> np.ndarray:
    if isinstance(got, np.ndarray):
        return got
    return np.asarray(got.todense()) if isinstance(got, pydata.SparseArray) else got.toarray()


def _compare(name, got, want, dtype):
    got = _result(got)
    assert got.dtype == want.dtype and got.shape == want.shape
    if name in EXACT:
        np.testing.assert_array_equal(got, want, strict=True)
    else:  # libm and NumPy's own loops may differ in the last bits
        rtol = 1e-5 if dtype == np.complex64 else 1e-13
        np.testing.assert_allclose(got, want, rtol=rtol, atol=0, equal_nan=True)


@pytest.mark.parametrize("name,fmt", _cases(UNARY))
def test_complex_unary_compiled_matches_numpy(name, fmt):
    for dtype in (np.complex128,) + ((np.complex64,) if fmt == "csr" or EVERY else ()):
        a = _dense(1, dtype, _shape(fmt))
        got = sf.jit(lambda x: getattr(sf, name)(x))(_as(fmt, a))
        with np.errstate(all="ignore"):
            want = UNARY[name](a)
        _compare(name, got, want, dtype)


@pytest.mark.parametrize("name,fmt", _cases(BINARY))
def test_complex_order_compiled_matches_numpy(name, fmt):
    a, b = _dense(2, np.complex128, _shape(fmt)), _dense(3, np.complex128, _shape(fmt))
    b.flat[::3] = a.flat[::3]  # equal values and equal real parts
    b.flat[1::5] = a.flat[1::5].real + 1j * np.nan
    got = sf.jit(lambda x, y: getattr(sf, name)(x, y))(_as(fmt, a), _as(fmt, b))
    with np.errstate(all="ignore"):
        want = BINARY[name](a, b)
    _compare(name, got, want, np.complex128)


@pytest.mark.parametrize("dtype,fmt", [(np.int8, "csr"), (np.int32, "ndcoo"),
                                       (np.int64, "csc"), (np.uint8, "coo"),
                                       (np.bool_, "ndcoo")])
def test_integer_reciprocal_is_numpys(dtype, fmt):
    """NumPy's 1.0 / x converted to the integer type: 1, -1 or 0 — and for x == 0 (every
    implicit entry) what C's conversion of inf gives, as in NumPy's own loop."""
    rng = np.random.default_rng(4)
    a = (rng.integers(-2, 3, size=_shape(fmt)) * (rng.random(_shape(fmt)) < 0.5)).astype(dtype)
    got = sf.jit(lambda x: sf.reciprocal(x))(_as(fmt, a))
    with np.errstate(all="ignore"):
        want = np.reciprocal(a)
    _compare("reciprocal", got, want, dtype)


@pytest.mark.parametrize("fmt", ["csr", "csc", "coo"])
@pytest.mark.parametrize("name", ["max", "min"])
def test_complex_max_min_reductions_are_numpys(name, fmt):
    """NumPy's lexicographic complex order in a reduction (``maximum.reduce``): a nan
    accumulator stays, a nan value wins; rows and columns with implicit zeros, special
    values (nan in either part, infinities)."""
    a = _dense(5, np.complex128, (6, 5))
    a[1, 2], a[3, 0], a[4, 4] = complex(np.nan, 1), complex(2, np.nan), complex(np.inf, -np.inf)
    a[5, :] = complex(-1, -1)  # a full row: no implicit zero takes part
    for axis in (None, 0, 1):
        got = sf.jit(lambda x, axis=axis: getattr(sf, name)(x, axis=axis))(_as(fmt, a))
        with np.errstate(all="ignore"):
            want = getattr(np, name)(a, axis=axis)
        np.testing.assert_array_equal(np.asarray(got), want)
        np.testing.assert_array_equal(
            getattr(sf, name)(sf.asarray(a), axis=axis).interpret(), want)

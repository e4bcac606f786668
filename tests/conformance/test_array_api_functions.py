"""The array API's elementwise set (issue #16) against NumPy: every built-in function that
``test_elementwise.py`` does not cover already, on every dtype kind NumPy has a loop for,
with IEEE specials; where NumPy has no loop the program must be ill-formed. The oracle is
the NumPy function named here, not read from the spec. Also the Python operators that map
to them, and the front end's NumPy spellings (``arcsin`` for ``asin``...)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from test_elementwise import BUILTINS, _numpy, _values, assert_same

import sparsefold as sf
from sparsefold.spec.errors import IllFormedProgram
from sparsefold.spec.functions import FUNCTIONS


def _floor_divide(x1, x2):
    """NumPy's floor division, except where one operand is infinite and the divisor is not
    zero: the array API standard's IEEE ``floor(x1 / x2)`` (``inf // 2`` is inf, ``-1 //
    inf`` is -0.0), which the spec follows (tests/conformance/special_cases.py)."""
    out = np.floor_divide(x1, x2)
    if np.asarray(out).dtype.kind != "f":
        return out
    a, b = np.asarray(x1), np.asarray(x2)
    special = (np.isinf(a) | np.isinf(b)) & (b != 0)
    return np.where(special, np.floor(a / b), out).astype(np.asarray(out).dtype)


# The NumPy function each new built-in names (the oracle; written here, not read from spec).
NUMPY = {
    "floor_divide": _floor_divide, "remainder": np.remainder, "positive": np.positive,
    "square": np.square, "reciprocal": np.reciprocal, "sign": np.sign, "clip": np.clip,
    "logical_xor": np.logical_xor, "logical_not": np.logical_not,
    "bitwise_and": np.bitwise_and, "bitwise_or": np.bitwise_or, "bitwise_xor": np.bitwise_xor,
    "bitwise_invert": np.invert, "bitwise_left_shift": np.left_shift,
    "bitwise_right_shift": np.right_shift,
    "exp": np.exp, "expm1": np.expm1, "log": np.log, "log1p": np.log1p, "log2": np.log2,
    "log10": np.log10, "sqrt": np.sqrt, "sin": np.sin, "cos": np.cos, "tan": np.tan,
    "asin": np.arcsin, "acos": np.arccos, "atan": np.arctan, "sinh": np.sinh, "cosh": np.cosh,
    "tanh": np.tanh, "asinh": np.arcsinh, "acosh": np.arccosh, "atanh": np.arctanh,
    "atan2": np.arctan2, "hypot": np.hypot, "copysign": np.copysign,
    "logaddexp": np.logaddexp, "nextafter": np.nextafter, "floor": np.floor, "ceil": np.ceil,
    "trunc": np.trunc, "round": np.round, "isnan": np.isnan, "isinf": np.isinf,
    "isfinite": np.isfinite, "signbit": np.signbit, "conj": np.conjugate, "real": np.real,
    "imag": np.imag,
}
UNARY = sorted(n for n in NUMPY if FUNCTIONS[n].arity == 1)
BINARY = sorted(n for n in NUMPY if FUNCTIONS[n].arity == 2)
DTYPES = [np.dtype(t) for t in (np.bool_, np.int8, np.int64, np.uint8, np.float32,
                                np.float64, np.complex128)]


def test_every_builtin_has_an_oracle():
    builtins = {n for n in FUNCTIONS if not n.startswith("astype_")}
    assert builtins == set(NUMPY) | set(BUILTINS)


def check(name: str, args: list, engine) -> None:
    """``name`` applied through the front end equals NumPy, or is ill-formed where NumPy
    has no loop for the dtypes."""
    try:
        want = _numpy(NUMPY[name], *args)
    except TypeError:
        with pytest.raises(IllFormedProgram, match=name):
            sf.apply(name, *[sf.asarray(a) for a in args])
        return
    y = sf.apply(name, *[sf.asarray(a) for a in args])
    with np.errstate(all="ignore"):
        got = engine(y)
    if want.dtype == np.float16 or (name in ("exp", "tan", "cosh", "sinh", "acos", "asin",
                                            "atan", "acosh", "asinh", "atanh", "cos",
                                            "sin", "tanh", "log", "log1p", "expm1", "log2",
                                            "log10", "sqrt", "logaddexp", "hypot", "atan2")
                                    and want.dtype.kind in "fc" and engine.compiled):
        # libm and NumPy's own loops may differ in the last bit
        assert y.dtype == got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=2e-3 if want.dtype == np.float16 else
                                   1e-6 if want.dtype.itemsize <= 4 * (1 + (
                                       want.dtype.kind == "c")) else 1e-14, equal_nan=True)
    else:
        assert_same(y, got, want)


@pytest.mark.parametrize("name", UNARY)
@pytest.mark.parametrize("dt", DTYPES, ids=str)
def test_unary_matches_numpy(name, dt, engine):
    check(name, [_values(dt).reshape(-1, 1)], engine)


@pytest.mark.parametrize("name", BINARY)
@pytest.mark.parametrize("dt", DTYPES, ids=str)
def test_binary_matches_numpy(name, dt, engine):
    vals = _values(dt)
    if dt.kind in "iu" and name.startswith("bitwise_") and "shift" in name:
        rhs = np.array([0, 1, 3, 7] * ((vals.size + 3) // 4))[:vals.size].astype(dt)
    else:
        rhs = vals[::-1].copy()
    a, b = np.meshgrid(vals, rhs, indexing="ij")
    check(name, [a, b], engine)


def test_clip_matches_numpy(engine):
    x = np.array([[-3.0, 0.0, 2.5, np.nan], [5.0, -0.0, 1.0, np.inf]])
    check("clip", [x, np.array(-1.0), np.array(2.0)], engine)
    check("clip", [np.nan_to_num(x, posinf=9).astype(np.int32), np.array(0, np.int32),
                   np.array(1, np.int32)], engine)
    check("clip", [x, np.array(3.0), np.array(1.0)], engine)  # lo > hi: hi, as NumPy


def test_integer_division_by_zero_is_numpys(engine):
    a = np.array([[7, -7, 0], [3, -1, 5]], dtype=np.int64)
    b = np.array([[2, 2, 0], [0, -3, -2]], dtype=np.int64)
    check("floor_divide", [a, b], engine)
    check("remainder", [a, b], engine)


OPERATORS = {
    "//": (lambda x, y: x // y), "%": (lambda x, y: x % y), "&": (lambda x, y: x & y),
    "|": (lambda x, y: x | y), "^": (lambda x, y: x ^ y), "<<": (lambda x, y: x << y),
    ">>": (lambda x, y: x >> y),
}


@pytest.mark.parametrize("op", sorted(OPERATORS))
@pytest.mark.parametrize("dt", ["bool", "int32", "uint8", "float64"])
def test_python_operators_match_numpy(op, dt, engine):
    f = OPERATORS[op]
    a = np.array([[0, 1, 3], [5, 0, 2]]).astype(dt)
    b = np.array([[1, 2, 0], [1, 3, 1]]).astype(dt)
    try:
        with np.errstate(all="ignore"):
            want = np.asarray(f(a, b))
    except TypeError:
        with pytest.raises(IllFormedProgram):
            f(sf.asarray(a), sf.asarray(b))
        return
    y = f(sf.asarray(a), sf.asarray(b))
    with np.errstate(all="ignore"):
        assert_same(y, engine(y), want)


@pytest.mark.parametrize("dt", ["bool", "int16", "uint8"])
def test_invert_operator_matches_numpy(dt, engine):
    a = np.array([[0, 1, 3], [5, 0, 2]]).astype(dt)
    y = ~sf.asarray(a)
    assert_same(y, engine(y), ~a)


@pytest.mark.parametrize("alias,numpy_fn", [
    ("arcsin", np.arcsin), ("arctan2", np.arctan2), ("conjugate", np.conjugate),
    ("left_shift", np.left_shift), ("invert", np.invert), ("mod", np.remainder),
    ("absolute", np.absolute)])
def test_numpy_spellings(alias, numpy_fn):
    a = np.array([[0, 1], [2, 3]], dtype=np.int32)
    args = [a] * (2 if numpy_fn.nin == 2 else 1)
    y = getattr(sf, alias)(*[sf.asarray(x) for x in args])
    with np.errstate(all="ignore"):
        assert_same(y, y.interpret(), np.asarray(numpy_fn(*args)))


def test_astype_matches_numpy(engine):
    x = np.array([[-2.7, 0.0, 3.5], [np.inf * 0 + 1, -0.0, 255.9]])
    for dt in ("int32", "uint8", "bool", "float32", "complex128"):
        y = sf.asarray(x).astype(dt)
        with np.errstate(all="ignore"):
            assert_same(y, engine(y), x.astype(dt))
    z = x + 1j * x[::-1]
    with warnings.catch_warnings():  # NumPy warns that the imaginary part is dropped
        warnings.simplefilter("ignore", np.exceptions.ComplexWarning)
        y = sf.astype(sf.asarray(z), np.float64)
        assert_same(y, engine(y), z.astype(np.float64))


def test_round_with_decimals_matches_numpy(engine):
    x = np.array([[1.25, -2.35, 0.5], [1234.5678, 2.5, -0.05]])
    for d in (0, 1, 2, -1, -2):
        y = sf.round(sf.asarray(x), decimals=d)
        assert_same(y, engine(y), np.round(x, d))

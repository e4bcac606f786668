"""Elementwise functions and operators against NumPy (the meaning they claim to have).

Every function of ``spec.functions.FUNCTIONS`` and every operator of ``LazyArray`` is compared
with the NumPy function it names: the interpreted values, the interpreted dtype and the
dtype the spec *declares* before anything runs (``y.dtype``) must all equal NumPy's. The
cases cover dtype combinations, NEP 50 weak Python scalars, broadcasting (0-d, 0-length
axes) and IEEE special values; a Hypothesis property per function draws broadcastable
shapes and dtypes. Where NumPy refuses (no loop for the dtypes), the program must be
ill-formed. Finally the function registry: user functions with declared facts, false facts
rejected, and the built-ins' facts checked independently.
"""

from __future__ import annotations

import itertools
import operator

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import sparsefold as sf
from sparsefold.spec.errors import IllFormedProgram, InvalidData
from sparsefold.spec.functions import FUNCTIONS, check_facts, register_function

BUILTINS = ("add", "subtract", "multiply", "divide", "power", "maximum", "minimum", "negative",
            "abs", "less", "less_equal", "equal", "not_equal", "greater", "greater_equal",
            "logical_and", "logical_or", "where")
# The NumPy function each built-in names (the oracle; written here, not read from spec).
NUMPY = {
    "add": np.add, "subtract": np.subtract, "multiply": np.multiply, "divide": np.divide,
    "power": np.power, "maximum": np.maximum, "minimum": np.minimum, "negative": np.negative,
    "abs": np.abs, "less": np.less, "less_equal": np.less_equal, "equal": np.equal,
    "not_equal": np.not_equal, "greater": np.greater, "greater_equal": np.greater_equal,
    "logical_and": np.logical_and, "logical_or": np.logical_or, "where": np.where,
}
ARITY = {name: 1 if name in ("negative", "abs") else 3 if name == "where" else 2
         for name in BUILTINS}
BINARY = [n for n in BUILTINS if ARITY[n] == 2]
DTYPES = [np.dtype(t) for t in
          (np.bool_, np.int32, np.int64, np.float32, np.float64, np.complex128)]

# Values that exercise each kind's edge cases: zeros, signs, IEEE specials, large ints.
_VALUES = {
    "b": [False, True],
    "i": [0, 1, -1, 3, -7, 100],
    "u": [0, 1, 3, 200],
    "f": [0.0, -0.0, 1.0, -2.5, 3.0, np.nan, np.inf, -np.inf],
    "c": [0, 1 + 0j, -2.5 + 1j, 1j, complex(np.nan, 0), complex(np.inf, 1)],
}


def _values(dt: np.dtype, *, nonneg: bool = False) -> np.ndarray:
    vals = _VALUES[dt.kind]
    if nonneg and dt.kind in "iu":
        vals = [v for v in vals if v >= 0]  # int ** negative int has no value (tested apart)
    return np.array(vals).astype(dt)


def _pairs(name: str, dts: tuple[np.dtype, ...]) -> list[np.ndarray]:
    """One array per argument, together holding every combination of their sample values."""
    samples = [_values(dt, nonneg=name == "power" and p == 1) for p, dt in enumerate(dts)]
    grids = np.meshgrid(*samples, indexing="ij")
    return [g.reshape(-1, 2) if g.size % 2 == 0 else g.reshape(-1) for g in grids]


def _numpy(fn, *args):
    with np.errstate(all="ignore"):
        return np.asarray(fn(*args))


def assert_same(y: sf.LazyArray, got: np.ndarray, want: np.ndarray) -> None:
    """Declared dtype, interpreted dtype, shape and values all equal NumPy's (NaN == NaN)."""
    assert y.dtype == want.dtype, f"declared dtype {y.dtype}, NumPy gives {want.dtype}"
    assert got.dtype == want.dtype, f"interpreted dtype {got.dtype}, NumPy gives {want.dtype}"
    assert y.shape == want.shape and got.shape == want.shape
    np.testing.assert_array_equal(got, want, strict=True)


def check_against_numpy(name: str, args: list, engine) -> None:
    """``sf.apply(name, *args)`` is ill-formed exactly when NumPy has no loop, and otherwise
    ``engine`` evaluates it equal to NumPy. ``args`` are NumPy arrays (wrapped with
    sf.asarray) or Python scalars."""
    try:
        want = _numpy(NUMPY[name], *args)
    except (TypeError, OverflowError) as exc:  # no loop / scalar does not fit: ill-formed
        with pytest.raises(IllFormedProgram, match=name):
            sf.apply(name, *[sf.asarray(a) if isinstance(a, np.ndarray) else a for a in args])
        assert exc is not None
        return
    y = sf.apply(name, *[sf.asarray(a) if isinstance(a, np.ndarray) else a for a in args])
    assert_same(y, engine(y), want)


# --- dtype tables -------------------------------------------------------------------------------

@pytest.mark.parametrize("name", BINARY)
@pytest.mark.parametrize("dt1,dt2", list(itertools.product(DTYPES, repeat=2)),
                         ids=lambda d: str(d))
def test_binary_function_matches_numpy(name, dt1, dt2, engine):
    check_against_numpy(name, _pairs(name, (dt1, dt2)), engine)


@pytest.mark.parametrize("name", ["negative", "abs"])
@pytest.mark.parametrize("dt", DTYPES + [np.dtype(np.int8), np.dtype(np.uint8),
                                         np.dtype(np.complex64)], ids=str)
def test_unary_function_matches_numpy(name, dt, engine):
    check_against_numpy(name, [_values(dt)], engine)


@pytest.mark.parametrize("dt1,dt2", list(itertools.product(DTYPES, repeat=2)), ids=str)
def test_where_matches_numpy(dt1, dt2, engine):
    c = np.array([[True, False], [False, True]])
    check_against_numpy("where", [c, _values(dt1)[:2], _values(dt2)[-2:, None]], engine)


@pytest.mark.parametrize("dt1,dt2", [("int8", "uint8"), ("uint8", "int32"), ("int8", "float32"),
                                     ("uint8", "float32"), ("float32", "complex64"),
                                     ("int64", "uint8"), ("float32", "float64"),
                                     ("int32", "float32"), ("complex64", "float64")])
@pytest.mark.parametrize("name", ["add", "multiply", "divide", "maximum", "less"])
def test_mixed_width_promotion_matches_numpy(name, dt1, dt2, engine):
    check_against_numpy(name, _pairs(name, (np.dtype(dt1), np.dtype(dt2))), engine)


# --- NEP 50: Python scalars are weak, NumPy scalars are not ------------------------------------

SCALARS = [True, 2, -1, 300, 2.5, np.nan, 1j, np.float32(2), np.float64(1.5), np.int64(3)]


@pytest.mark.parametrize("name", BINARY)
@pytest.mark.parametrize("dt", ["bool", "int8", "int32", "float32", "float64", "complex64"])
def test_scalar_operands_follow_nep50(name, dt, engine):
    arr = _values(np.dtype(dt), nonneg=True)
    for s in SCALARS:
        if name == "power" and isinstance(s, (int, np.integer)) and s < 0:
            continue
        check_against_numpy(name, [arr, s], engine)
        check_against_numpy(name, [s, arr], engine)


@pytest.mark.parametrize("name", BINARY)
def test_two_python_scalars_match_numpy(name, engine):
    for s1, s2 in itertools.product([True, 3, 2.5, 1j], repeat=2):
        check_against_numpy(name, [s1, s2], engine)


def test_weak_scalars_keep_the_array_dtype(engine):
    # NumPy facts (NEP 50) that the spec must declare before running anything
    x32 = sf.asarray(np.arange(4, dtype=np.float32))
    assert (x32 * 2).dtype == np.float32 == np.result_type(np.float32, 2)
    assert (2.5 + x32).dtype == np.float32
    assert (x32 * np.float64(2)).dtype == np.float64  # a NumPy scalar is strong
    i8 = sf.asarray(np.arange(4, dtype=np.int8))
    assert (i8 + 1).dtype == np.int8
    assert (i8 * 2.0).dtype == np.float64 == (np.arange(4, dtype=np.int8) * 2.0).dtype
    with pytest.raises(IllFormedProgram, match="out of bounds for int8"):
        i8 + 300
    want = np.arange(4, dtype=np.float32) * 2
    assert_same(x32 * 2, (engine(x32 * 2)), want)


# --- broadcasting -------------------------------------------------------------------------------

SHAPE_PAIRS = [((), ()), ((), (3,)), ((3,), ()), ((2, 3), (3,)), ((2, 1), (1, 3)),
               ((4, 1, 3), (2, 1)), ((0,), (1,)), ((0, 3), (3,)), ((0, 3), (1, 1)),
               ((2, 0, 1), (5,)), ((1, 0), (4, 1)), ((1,), (0,)), ((3, 1, 1), (1, 2, 1))]


@pytest.mark.parametrize("s1,s2", SHAPE_PAIRS, ids=str)
@pytest.mark.parametrize("name", ["add", "multiply", "divide", "greater", "logical_or"])
def test_broadcasting_matches_numpy(name, s1, s2, engine):
    rng = np.random.default_rng(7)
    a, b = rng.standard_normal(s1), rng.integers(-3, 4, s2).astype(np.int32)
    if name == "logical_or":
        a, b = a > 0, b > 0
    check_against_numpy(name, [a, b], engine)


@pytest.mark.parametrize("shapes", [((), (), ()), ((2, 1), (3,), ()), ((0, 1), (1, 4), (4,)),
                                    ((3,), (2, 1), (1, 1, 1))], ids=str)
def test_where_broadcasts_three_ways(shapes, engine):
    rng = np.random.default_rng(3)
    c = rng.random(shapes[0]) < 0.5
    check_against_numpy("where", [c, rng.standard_normal(shapes[1]),
                                  rng.integers(0, 5, shapes[2])], engine)


@pytest.mark.parametrize("name", ["negative", "abs"])
@pytest.mark.parametrize("shape", [(), (0,), (3, 0, 2), (1, 1)], ids=str)
def test_unary_on_empty_and_zero_d(name, shape, engine):
    check_against_numpy(name, [np.full(shape, -1.5)], engine)


# --- IEEE semantics (STYLE 5): never rewrite 0 * x to 0 for floats ------------------------------

def test_nan_and_inf_semantics(engine):
    x = np.array([0.0, 0.0, 1.0, -1.0, 0.0, np.inf])
    y = np.array([np.nan, np.inf, 0.0, 0.0, 0.0, 0.0])
    X, Y = sf.asarray(x), sf.asarray(y)
    prod, quot = (engine(X * Y)), (engine(X / Y))
    assert np.isnan(prod[0]) and np.isnan(prod[1])          # 0 * nan, 0 * inf
    assert quot[2] == np.inf and quot[3] == -np.inf           # x / 0
    assert np.isnan(quot[4])                                  # 0 / 0
    assert np.isnan(engine(sf.maximum(X, Y))[0])          # nan propagates
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(prod, x * y)
        np.testing.assert_array_equal(quot, x / y)


def test_integer_division_by_zero_is_true_division(engine):
    a, b = np.array([1, -1, 0], dtype=np.int32), np.zeros(3, dtype=np.int32)
    y = sf.asarray(a) / sf.asarray(b)
    with np.errstate(all="ignore"):
        assert_same(y, engine(y), a / b)
    assert y.dtype == np.float64


def test_integer_to_negative_power_is_invalid_data(engine):
    with pytest.raises(ValueError):
        np.power(np.array([2]), np.array([-1]))
    y = sf.asarray(np.array([2, 3])) ** sf.asarray(np.array([1, -1]))
    with pytest.raises(InvalidData, match="power"):
        engine(y)


def test_integer_overflow_wraps_like_numpy(engine):
    a = np.array([2**31 - 1, -(2**31)], dtype=np.int32)
    y = sf.asarray(a) + 1
    assert_same(y, engine(y), a + 1)


# --- operators ----------------------------------------------------------------------------------

BINARY_OPERATORS = [operator.add, operator.sub, operator.mul, operator.truediv, operator.pow,
                    operator.lt, operator.le, operator.eq, operator.ne, operator.gt,
                    operator.ge]


def _operand_forms(a: np.ndarray, b: np.ndarray):
    """(left, right, numpy-left, numpy-right): lazy/lazy, lazy/scalar, scalar/lazy,
    ndarray/lazy, lazy/ndarray and NumPy-scalar/lazy."""
    A, B = sf.asarray(a), sf.asarray(b)
    return [(A, B, a, b), (A, 2, a, 2), (3, B, 3, b), (a, B, a, b), (A, b, a, b),
            (np.float32(2), B, np.float32(2), b), (A, 0.5, a, 0.5)]


@pytest.mark.parametrize("op", BINARY_OPERATORS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("dts", [("float32", "int64"), ("int32", "int32"),
                                 ("float64", "complex128"), ("int64", "float32")], ids=str)
def test_binary_operators_match_numpy(op, dts, engine):
    a = np.array([[1, 2, 0], [4, 0, 6]]).astype(dts[0])
    b = np.array([2, 0, 1]).astype(dts[1])
    for left, right, nl, nr in _operand_forms(a, b):
        y = op(left, right)
        assert isinstance(y, sf.LazyArray), f"{op.__name__} did not build a program"
        assert_same(y, engine(y), _numpy(op, nl, nr))


@pytest.mark.parametrize("op", [operator.neg, operator.abs, operator.pos],
                         ids=lambda f: f.__name__)
@pytest.mark.parametrize("dt", ["int32", "float32", "complex128"])
def test_unary_operators_match_numpy(op, dt, engine):
    a = np.array([[-1, 2], [0, -4]]).astype(dt)
    y = op(sf.asarray(a))
    assert_same(y, engine(y), op(a))


@pytest.mark.parametrize("op", [operator.and_, operator.or_], ids=lambda f: f.__name__)
def test_and_or_on_bools_match_numpy(op, engine):
    a = np.array([[True, False], [True, True]])
    b = np.array([False, True])
    for left, right, nl, nr in [(sf.asarray(a), sf.asarray(b), a, b),
                                (sf.asarray(a), True, a, True), (False, sf.asarray(b), False, b),
                                (a, sf.asarray(b), a, b)]:
        y = op(left, right)
        assert isinstance(y, sf.LazyArray)
        assert_same(y, engine(y), op(nl, nr))


def test_operators_are_the_named_functions():
    a, b = np.arange(1.0, 7.0).reshape(2, 3), np.arange(3.0)
    A, B = sf.asarray(a), sf.asarray(b)
    pairs = [(A + B, sf.add(A, B)), (A - B, sf.subtract(A, B)), (A * B, sf.multiply(A, B)),
             (A / B, sf.divide(A, B)), (A ** B, sf.pow(A, B)), (A < B, sf.less(A, B)),
             (A <= B, sf.less_equal(A, B)), (A == B, sf.equal(A, B)),
             (A != B, sf.not_equal(A, B)), (A > B, sf.greater(A, B)),
             (A >= B, sf.greater_equal(A, B)), (-A, sf.negative(A)), (abs(A), sf.abs(A))]
    for by_operator, by_name in pairs:
        assert by_operator.node == by_name.node


def test_named_functions_match_numpy(engine):
    a, b = np.array([[1.5, -2.0, 0.0]]), np.array([[0.0], [-2.0]])
    A, B = sf.asarray(a), sf.asarray(b)
    for name in BINARY:
        if name in ("logical_and", "logical_or"):
            y, want = getattr(sf, name)(A > 0, B < 0), NUMPY[name](a > 0, b < 0)
        else:
            fn = sf.pow if name == "power" else getattr(sf, name)
            y, want = fn(A, B), _numpy(NUMPY[name], a, b)
        assert_same(y, engine(y), want)
    y = sf.where(A > 0, A, B)
    assert_same(y, engine(y), np.where(a > 0, a, b))


# --- Hypothesis: interpret == NumPy on random broadcastable shapes and dtypes ------------------

_H_DTYPES = ["bool", "int8", "int32", "int64", "uint8", "float32", "float64", "complex128"]


@st.composite
def _call(draw, name: str):
    arity = ARITY[name]
    shapes = draw(hnp.mutually_broadcastable_shapes(num_shapes=arity, max_dims=3, max_side=3,
                                                    min_side=0))
    args = []
    for p, shape in enumerate(shapes.input_shapes):
        dt = "bool" if (name == "where" and p == 0) else draw(st.sampled_from(_H_DTYPES))
        if p > 0 and draw(st.booleans()) and shape == ():
            args.append(draw(st.sampled_from([True, 2, -1, 1.5, np.nan])))  # weak scalar
            continue
        args.append(draw(hnp.arrays(np.dtype(dt), shape, elements=_elements(np.dtype(dt)))))
    return args


def _elements(dt: np.dtype) -> st.SearchStrategy:
    """Any value of the dtype, with zeros and IEEE specials drawn often (they are where
    functions differ: nan propagation, 0 * inf, x / 0)."""
    special = {"b": [False, True], "i": [0, 1, -1], "u": [0, 1],
               "f": [0.0, -0.0, np.nan, np.inf, -np.inf],
               "c": [0j, complex(np.nan, 0), complex(0, np.inf)]}[dt.kind]
    return st.one_of(st.sampled_from(special), hnp.from_dtype(dt))


def _property(name: str, args: list) -> None:
    try:
        want = _numpy(NUMPY[name], *args)
    except (TypeError, OverflowError):
        with pytest.raises(IllFormedProgram):
            sf.apply(name, *[sf.asarray(a) if isinstance(a, np.ndarray) else a for a in args])
        return
    except ValueError:  # integers to negative integer powers
        y = sf.apply(name, *[sf.asarray(a) if isinstance(a, np.ndarray) else a for a in args])
        with pytest.raises(InvalidData):
            y.interpret()
        return
    y = sf.apply(name, *[sf.asarray(a) if isinstance(a, np.ndarray) else a for a in args])
    assert_same(y, y.interpret(), want)


def _make_property_test(name: str):
    @given(args=_call(name))
    def test(args):
        _property(name, args)
    test.__name__ = f"test_property_{name}"
    test.__doc__ = f"interpret(sf.apply({name!r}, ...)) == NumPy for random shapes and dtypes"
    return test


for _name in BUILTINS:
    globals()[f"test_property_{_name}"] = _make_property_test(_name)
del _name


# --- the registry: user functions and facts ----------------------------------------------------

@pytest.fixture
def registry():
    """Names registered during a test are removed afterwards, so FUNCTIONS (and the
    generated language reference) only ever holds the built-ins between tests."""
    before = set(FUNCTIONS)
    yield FUNCTIONS
    for name in set(FUNCTIONS) - before:
        del FUNCTIONS[name]


def test_builtins_are_registered():
    assert set(BUILTINS) <= set(FUNCTIONS)
    for name in BUILTINS:
        assert FUNCTIONS[name].arity == ARITY[name]


def test_register_and_apply_a_user_function(registry, engine):
    fn = register_function("relu", 1, lambda x: np.maximum(x, 0), annihilates=(0,),
                           annihilation_needs_finite=False, doc="max(x, 0)")
    assert registry["relu"] is fn
    a = np.array([[-1.5, 0.0, 2.0], [np.inf, -np.inf, 3.0]], dtype=np.float32)
    y = sf.apply("relu", sf.asarray(a))
    assert_same(y, engine(y), np.maximum(a, 0))
    assert y.dtype == np.float32


def test_register_a_binary_user_function_with_scalars(registry, engine):
    register_function("absdiff", 2, lambda x, y: np.abs(np.subtract(x, y)), commutative=True)
    a = np.arange(6, dtype=np.int32).reshape(2, 3)
    y = sf.apply("absdiff", sf.asarray(a), 4)
    assert_same(y, engine(y), np.abs(a - 4))
    b = np.array([1.5, -2.0, 0.5])
    y = sf.apply("absdiff", sf.asarray(a), sf.asarray(b))
    assert_same(y, engine(y), np.abs(a - b))


@pytest.mark.parametrize("impl,facts,message", [
    (np.add, {"annihilates": (0,)}, "0 at position 0"),
    (np.subtract, {"commutative": True}, "not commutative"),
    (np.multiply, {"identity": 0}, "is not an identity"),
    (np.maximum, {"annihilates": (0, 1)}, "0 at position"),
])
def test_false_facts_are_rejected(registry, impl, facts, message):
    with pytest.raises(IllFormedProgram, match=message):
        register_function("liar", 2, impl, **facts)
    assert "liar" not in registry


def test_registering_twice_or_badly_is_ill_formed(registry):
    with pytest.raises(IllFormedProgram, match="already exists"):
        register_function("add", 2, np.add)
    with pytest.raises(IllFormedProgram, match="arity must be a positive integer"):
        register_function("nullary", 0, np.add)
    with pytest.raises(IllFormedProgram, match="must be an identifier"):
        register_function("_hidden", 1, np.negative)


@pytest.mark.parametrize("name", BUILTINS)
def test_builtin_declared_facts_hold(name):
    assert check_facts(FUNCTIONS[name]) == []


@pytest.mark.parametrize("name", BUILTINS)
def test_builtin_facts_hold_independently(name):
    """The same facts, re-checked here with NumPy on random finite values (no check_facts)."""
    fn, impl = FUNCTIONS[name], NUMPY[name]
    rng = np.random.default_rng(11)
    with np.errstate(all="ignore"):
        for dt in ("int64", "float64", "bool"):
            args = [rng.integers(-5, 6, 50).astype(dt) for _ in range(fn.arity)]
            if name == "power" and dt == "int64":
                args[1] = np.abs(args[1])
            try:
                base = impl(*args)
            except TypeError:
                continue
            for p in fn.annihilates:
                zeroed = [np.zeros_like(a) if q == p else a for q, a in enumerate(args)]
                assert np.all(impl(*zeroed) == 0), f"{name} does not annihilate at {p}"
            if fn.identity is not None and dt != "bool":
                e = np.full_like(args[0], fn.identity)
                assert np.array_equal(impl(args[0], e), args[0])
                assert np.array_equal(impl(e, args[0]), args[0])
            if fn.commutative:
                assert np.array_equal(base, impl(args[1], args[0]))
            zeros = [np.zeros((), dt) for _ in range(fn.arity)]
            at_zero = impl(*zeros)
            assert np.array_equal(fn.value_at_zero(tuple(z.dtype for z in zeros)), at_zero,
                                  equal_nan=at_zero.dtype.kind in "fc")


def test_multiply_annihilation_needs_finite_operands():
    # the reason for the flag: 0 * nan and 0 * inf are nan (STYLE 5)
    fn = FUNCTIONS["multiply"]
    assert fn.annihilates == (0, 1) and fn.annihilation_needs_finite
    with np.errstate(all="ignore"):
        assert np.isnan(np.multiply(0.0, np.nan)) and np.isnan(np.multiply(0.0, np.inf))

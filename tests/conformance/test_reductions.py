"""Reductions and contractions against NumPy: sum, prod, max, min, any, all, matmul, tensordot.

The oracle is NumPy's own function of the same name (plus ``np.einsum`` for contractions, an
independent formulation). Values, the interpreted dtype and the dtype the spec declares
(``y.dtype``) must all agree — including NumPy's accumulator rules: ``sum`` of int32 is
int64, ``matmul`` of int32 stays int32. Empty axes: ``sum`` of nothing is 0, ``max`` of a
known-empty axis is ill-formed (NumPy raises too), of a symbolic one invalid data.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import sparsefold as sf
from sparsefold.spec.errors import IllFormedProgram, InvalidData

MONOIDS = ("sum", "prod", "max", "min", "any", "all")
NUMPY = {"sum": np.sum, "prod": np.prod, "max": np.max, "min": np.min, "any": np.any,
         "all": np.all}
DTYPES = ["bool", "uint8", "int32", "int64", "float32", "float64", "complex128"]
AXES = [None, 0, 1, 2, -1, -3, (0, 2), (2, 0), (-1, 0), (), (0, 1, 2), [1]]


def _data(shape, dt: str, seed: int = 0, *, specials: bool = True) -> np.ndarray:
    """Small integer values (exact sums and products), with nan/inf sprinkled into floats."""
    rng = np.random.default_rng(seed)
    if dt == "bool":
        return rng.random(shape) < 0.6
    a = rng.integers(-3, 4, shape)
    if dt.startswith("uint"):
        a = np.abs(a)
    out = a.astype(dt)
    if specials and out.dtype.kind in "fc" and out.size >= 4:
        flat = out.reshape(-1)
        flat[1], flat[-2] = np.nan, np.inf
    return out


def assert_same(y: sf.LazyArray, got: np.ndarray, want: np.ndarray) -> None:
    """Declared and interpreted dtypes equal NumPy's; values equal (close for floats, whose
    sums may be ordered differently)."""
    want = np.asarray(want)
    assert y.dtype == want.dtype, f"declared dtype {y.dtype}, NumPy gives {want.dtype}"
    assert got.dtype == want.dtype, f"interpreted dtype {got.dtype}, NumPy gives {want.dtype}"
    assert got.shape == want.shape
    if all(isinstance(n, int) for n in y.shape):  # symbolic sizes are checked by the caller
        assert y.shape == want.shape
    if want.dtype.kind in "fc":
        rtol = 1e-5 if want.dtype in (np.float32, np.complex64) else 1e-12
        np.testing.assert_allclose(got, want, rtol=rtol, equal_nan=True)
    else:
        np.testing.assert_array_equal(got, want, strict=True)


def _numpy(fn, *args, **kwargs):
    with np.errstate(all="ignore"):
        return np.asarray(fn(*args, **kwargs))


# --- reductions: axis None / int / tuple / negative, keepdims, dtype= --------------------------

@pytest.mark.parametrize("axis", AXES, ids=str)
@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("name", MONOIDS)
def test_reduction_matches_numpy(name, dt, axis, engine):
    a = _data((2, 3, 4), dt)
    x = sf.asarray(a)
    for keepdims in (False, True):
        y = getattr(sf, name)(x, axis=axis, keepdims=keepdims)
        want = _numpy(NUMPY[name], a, axis=tuple(axis) if isinstance(axis, list) else axis,
                      keepdims=keepdims)
        assert_same(y, engine(y), want)


@pytest.mark.parametrize("request_dt", ["int32", "int64", "uint8", "float32", "float64",
                                        "complex128", "bool"])
@pytest.mark.parametrize("dt", ["bool", "int8", "int32", "float32", "float64"])
@pytest.mark.parametrize("name", ["sum", "prod"])
def test_sum_prod_dtype_argument(name, dt, request_dt, engine):
    a = _data((3, 4), dt, seed=1, specials=False)
    for axis in (None, 0, (1,)):
        y = getattr(sf, name)(sf.asarray(a), axis=axis, dtype=request_dt)
        assert_same(y, engine(y), _numpy(NUMPY[name], a, axis=axis, dtype=request_dt))


@pytest.mark.parametrize("name", ["max", "min", "any", "all"])
def test_dtype_argument_is_only_for_sum_and_prod(name):
    x = sf.asarray(np.ones(3))
    with pytest.raises(TypeError):
        getattr(sf, name)(x, dtype="float64")


def test_integer_sums_widen_like_numpy(engine):
    a = np.array([2**31 - 1, 2**31 - 1], dtype=np.int32)
    for name in ("sum", "prod"):
        y = getattr(sf, name)(sf.asarray(a))
        assert y.dtype == NUMPY[name](a).dtype == np.int64  # NumPy's default accumulator
        assert_same(y, engine(y), NUMPY[name](a))
    b = np.array([True, True, False])
    y = sf.sum(sf.asarray(b))
    assert_same(y, engine(y), np.sum(b))


@pytest.mark.parametrize("name", MONOIDS)
def test_reduction_methods_and_zero_d(name, engine):
    a = _data((3, 2), "float64", seed=2)
    x = sf.asarray(a)
    if name in ("sum", "prod", "max", "min"):
        y = getattr(x, name)(axis=0, keepdims=True)
        assert_same(y, engine(y), _numpy(getattr(a, name), axis=0, keepdims=True))
    s = np.float64(2.5)
    for axis in (None, ()):
        y = getattr(sf, name)(sf.asarray(s), axis=axis)
        assert_same(y, engine(y), _numpy(NUMPY[name], s, axis=axis))


# --- empty axes ---------------------------------------------------------------------------------

@pytest.mark.parametrize("shape", [(0,), (3, 0, 2), (0, 0), (2, 0)], ids=str)
@pytest.mark.parametrize("name", ["sum", "prod", "any", "all"])
def test_reductions_over_empty_axes_give_the_identity(name, shape, engine):
    a = np.zeros(shape, dtype=np.float32)
    for axis in [None] + list(range(len(shape))) + [tuple(range(len(shape)))]:
        y = getattr(sf, name)(sf.asarray(a), axis=axis, keepdims=axis == 0)
        assert_same(y, engine(y), NUMPY[name](a, axis=axis, keepdims=axis == 0))
    assert engine(sf.sum(sf.asarray(a))) == 0


@pytest.mark.parametrize("name", ["max", "min"])
def test_max_min_of_a_known_empty_axis_is_ill_formed(name, engine):
    a = np.zeros((3, 0, 2))
    for axis in (None, 1, (0, 1), -2):
        with pytest.raises(ValueError):
            NUMPY[name](a, axis=axis)
        with pytest.raises(IllFormedProgram, match=f"{name}: zero-size reduction over axis 1"):
            getattr(sf, name)(sf.asarray(a), axis=axis)
    for axis in (0, 2, (0, 2)):  # reducing non-empty axes of an empty array is fine
        y = getattr(sf, name)(sf.asarray(a), axis=axis)
        assert_same(y, engine(y), NUMPY[name](a, axis=axis))


@pytest.mark.parametrize("name", ["max", "min"])
def test_max_min_of_a_symbolic_axis_bound_to_zero_is_invalid_data(name, engine):
    y = getattr(sf, name)(sf.symbol("A", shape=("I", "J")), axis=1)
    assert_same(y, engine(y, A=np.ones((2, 3))), NUMPY[name](np.ones((2, 3)), axis=1))
    with pytest.raises(InvalidData, match="zero-length axis"):
        engine(y, A=np.ones((2, 0)))


# --- matmul -------------------------------------------------------------------------------------

MATMUL_SHAPES = [
    ((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 4)), ((2, 3), (3, 4)),          # the 2-d cases
    ((5, 2, 3), (3, 4)), ((2, 3), (5, 3, 4)), ((5, 2, 3), (5, 3, 4)),        # batched
    ((5, 1, 2, 3), (4, 3, 2)), ((1, 2, 3), (6, 3, 2)), ((2, 1, 3), (1, 3, 4)),  # broadcast
    ((3,), (2, 3, 4)), ((2, 3, 4), (4,)),                                    # 1-d with n-d
    ((0, 3), (3, 2)), ((2, 0), (0, 3)), ((0,), (0,)), ((2, 3), (3, 0)),      # empty
    ((0, 2, 3), (3, 1)), ((1, 1), (1, 1)),
]
MATMUL_DTYPES = [("float64", "float64"), ("float32", "float32"), ("int32", "int32"),
                 ("int64", "int32"), ("bool", "bool"), ("int32", "float32"),
                 ("uint8", "int8"), ("float64", "complex128"), ("bool", "int32")]


@pytest.mark.parametrize("dts", MATMUL_DTYPES, ids=str)
@pytest.mark.parametrize("sa,sb", MATMUL_SHAPES, ids=str)
def test_matmul_matches_numpy(sa, sb, dts, engine):
    a = _data(sa, dts[0], seed=3, specials=False)
    b = _data(sb, dts[1], seed=4, specials=False)
    want = np.matmul(a, b)
    y = sf.matmul(sf.asarray(a), sf.asarray(b))
    assert_same(y, engine(y), want)
    by_operator = sf.asarray(a) @ b
    assert_same(by_operator, engine(by_operator), want)
    reflected = a @ sf.asarray(b)
    assert_same(reflected, engine(reflected), want)


@pytest.mark.parametrize("sa,sb", [s for s in MATMUL_SHAPES if len(s[0]) >= 2 and
                                   len(s[1]) >= 2], ids=str)
def test_matmul_equals_einsum(sa, sb, engine):
    # an independent formulation: batch axes broadcast, then sum over j
    a, b = _data(sa, "float64", seed=5), _data(sb, "float64", seed=6)
    batch = np.broadcast_shapes(sa[:-2], sb[:-2])
    ae = np.broadcast_to(a, batch + sa[-2:])
    be = np.broadcast_to(b, batch + sb[-2:])
    want = np.einsum("...ij,...jk->...ik", ae, be)
    got = engine(sf.matmul(sf.asarray(a), sf.asarray(b)))
    np.testing.assert_allclose(got, want, equal_nan=True)


def test_matmul_of_int32_accumulates_in_int32_like_numpy(engine):
    a = np.full((1, 2), 2**30, dtype=np.int32)
    b = np.full((2, 1), 2, dtype=np.int32)
    y = sf.asarray(a) @ sf.asarray(b)
    assert y.dtype == np.matmul(a, b).dtype == np.int32
    assert_same(y, engine(y), np.matmul(a, b))  # wraps, as NumPy's does


def test_matmul_with_symbolic_sizes(engine):
    A = sf.symbol("A", shape=("I", "J"))
    x = sf.symbol("x", shape=("J",))
    y = A @ x
    assert [str(n) for n in y.shape] == ["I"]
    a, v = _data((4, 3), "float64", specials=False), np.arange(3.0)
    assert_same(y, engine(y, A=a, x=v), a @ v)


# --- tensordot ----------------------------------------------------------------------------------

TENSORDOT_CASES = [
    ((2, 3, 4), (3, 4, 5), 2), ((2, 3, 4), (4, 5), 1), ((2, 3), (4, 5), 0), ((3, 4), (3, 4), 2),
    ((3,), (3,), 1), ((2, 3, 4), (4, 3, 2), ([1, 2], [1, 0])), ((2, 3, 4), (4, 3, 2), (-1, 0)),
    ((2, 3, 4), (2, 3, 4), ([0, 1, 2], [0, 1, 2])), ((2, 3), (3, 2), ([0], [1])),
    ((0, 3), (3, 2), 1), ((2, 0), (0, 4), 1), ((2, 3), (3,), ([-1], [-1])), ((), (2, 3), 0),
]


@pytest.mark.parametrize("dts", [("float64", "float64"), ("int32", "int32"), ("bool", "bool"),
                                 ("int32", "float32"), ("complex128", "int64")], ids=str)
@pytest.mark.parametrize("sa,sb,axes", TENSORDOT_CASES, ids=str)
def test_tensordot_matches_numpy(sa, sb, axes, dts, engine):
    a = _data(sa, dts[0], seed=7, specials=False)
    b = _data(sb, dts[1], seed=8, specials=False)
    y = sf.tensordot(sf.asarray(a), sf.asarray(b), axes=axes)
    assert_same(y, engine(y), np.tensordot(a, b, axes=axes))


@pytest.mark.parametrize("sa,sb,spec", [((2, 3, 4), (3, 4, 5), "ijk,jkl->il"),
                                        ((2, 3, 4), (4, 3, 2), "ijk,kjl->il")])
def test_tensordot_equals_einsum(sa, sb, spec, engine):
    a, b = _data(sa, "float64", seed=9), _data(sb, "float64", seed=10)
    axes = 2 if spec.startswith("ijk,jk") else ([1, 2], [1, 0])
    got = engine(sf.tensordot(sf.asarray(a), sf.asarray(b), axes=axes))
    np.testing.assert_allclose(got, np.einsum(spec, a, b), equal_nan=True)


# --- sum of a product (the interpreter's einsum path) ------------------------------------------

@pytest.mark.parametrize("sa,sb,axis", [((3, 4), (3, 4), None), ((3, 1, 4), (5, 1), (0, 2)),
                                        ((1, 4), (3, 1), 1), ((2, 3), (3,), -1),
                                        ((0, 2), (2,), 0)], ids=str)
@pytest.mark.parametrize("dts", [("float64", "float64"), ("bool", "bool"),
                                 ("int32", "int32")], ids=str)
def test_sum_of_products_matches_numpy(sa, sb, axis, dts, engine):
    a, b = _data(sa, dts[0], seed=12), _data(sb, dts[1], seed=13)
    y = sf.sum(sf.asarray(a) * sf.asarray(b), axis=axis)
    assert_same(y, engine(y), _numpy(np.sum, _numpy(np.multiply, a, b), axis=axis))


# --- Hypothesis ---------------------------------------------------------------------------------

_H_DTYPES = ["bool", "int8", "int32", "int64", "uint8", "float32", "float64", "complex128"]
# Axis lengths: drawn uniformly rather than shrinking toward 0, so that most examples have
# several elements per axis; 0 and 1 (empty and broadcast axes) still occur.
_SIDE = st.sampled_from([2, 3, 1, 4, 0])


def _small(dt: str) -> st.SearchStrategy:
    """Small integers (exact arithmetic in every dtype), and IEEE specials for floats."""
    if dt == "bool":
        return st.booleans()
    vals = st.integers(0 if dt.startswith("u") else -4, 4)
    if np.dtype(dt).kind in "fc":
        return st.one_of(vals, st.sampled_from([np.nan, np.inf, -np.inf, -0.0]))
    return vals


@st.composite
def _reduction_case(draw):
    shape = tuple(draw(st.lists(_SIDE, max_size=4)))
    dt = draw(st.sampled_from(_H_DTYPES))
    a = draw(hnp.arrays(np.dtype(dt), shape, elements=_small(dt)))
    nd = len(shape)
    axis = draw(st.one_of(
        st.none(),
        st.integers(-nd, nd - 1) if nd else st.nothing(),
        st.lists(st.integers(0, nd - 1), unique=True, max_size=nd).map(tuple)
        if nd else st.just(()),
    ))
    return a, axis, draw(st.booleans())


@given(case=_reduction_case(), name=st.sampled_from(MONOIDS))
def test_property_reductions(case, name):
    a, axis, keepdims = case
    x = sf.asarray(a)
    try:
        want = _numpy(NUMPY[name], a, axis=axis, keepdims=keepdims)
    except ValueError:  # max/min over a zero-length axis
        with pytest.raises(IllFormedProgram, match="zero-size reduction"):
            getattr(sf, name)(x, axis=axis, keepdims=keepdims)
        return
    y = getattr(sf, name)(x, axis=axis, keepdims=keepdims)
    assert_same(y, y.interpret(), want)


@st.composite
def _matmul_case(draw):
    batch = draw(hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=2, max_side=3))
    n, k, m = (draw(_SIDE) for _ in range(3))
    one_d = draw(st.sampled_from([(False, False), (True, False), (False, True), (True, True)]))
    sa = (k,) if one_d[0] else batch.input_shapes[0] + (n, k)
    sb = (k,) if one_d[1] else batch.input_shapes[1] + (k, m)
    dts = [draw(st.sampled_from(_H_DTYPES)) for _ in range(2)]
    return [draw(hnp.arrays(np.dtype(dt), s, elements=_small(dt)))
            for dt, s in zip(dts, [sa, sb])]


@given(args=_matmul_case())
def test_property_matmul(args):
    a, b = args
    y = sf.matmul(sf.asarray(a), sf.asarray(b))
    assert_same(y, y.interpret(), _numpy(np.matmul, a, b))


@st.composite
def _tensordot_case(draw):
    contracted = draw(st.lists(_SIDE, max_size=2))
    free_a = draw(st.lists(_SIDE, max_size=2))
    free_b = draw(st.lists(_SIDE, max_size=2))
    # place the contracted axes at random positions in each operand
    pos_a = draw(st.permutations(range(len(free_a) + len(contracted))))
    pos_b = draw(st.permutations(range(len(free_b) + len(contracted))))
    sa, sb = [0] * len(pos_a), [0] * len(pos_b)
    for size, p in zip(free_a + contracted, pos_a):
        sa[p] = size
    for size, p in zip(free_b + contracted, pos_b):
        sb[p] = size
    ax_a = list(pos_a[len(free_a):])
    ax_b = list(pos_b[len(free_b):])
    dts = [draw(st.sampled_from(_H_DTYPES)) for _ in range(2)]
    a = draw(hnp.arrays(np.dtype(dts[0]), tuple(sa), elements=_small(dts[0])))
    b = draw(hnp.arrays(np.dtype(dts[1]), tuple(sb), elements=_small(dts[1])))
    return a, b, (ax_a, ax_b)


@given(case=_tensordot_case())
def test_property_tensordot(case):
    a, b, axes = case
    y = sf.tensordot(sf.asarray(a), sf.asarray(b), axes=axes)
    assert_same(y, y.interpret(), _numpy(np.tensordot, a, b, axes=axes))


@given(shapes=hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=3, max_side=3),
       dts=st.tuples(st.sampled_from(_H_DTYPES), st.sampled_from(_H_DTYPES)), data=st.data())
def test_property_sum_of_products(shapes, dts, data):
    a, b = (data.draw(hnp.arrays(np.dtype(dt), s, elements=_small(dt)))
            for dt, s in zip(dts, shapes.input_shapes))
    nd = len(shapes.result_shape)
    axis = data.draw(st.lists(st.integers(0, nd - 1), unique=True, max_size=nd).map(tuple)
                     if nd else st.just(()))
    y = sf.sum(sf.asarray(a) * sf.asarray(b), axis=axis)
    assert_same(y, y.interpret(), _numpy(np.sum, _numpy(np.multiply, a, b), axis=axis))

"""Issue #16's functions compiled: elementwise functions (zero-preserving ones give sparse
results, ``f(0) != 0`` ones dense-valued results), integer and complex dtypes, statistical
and arg-reductions, shape functions and contractions — each through ``sf.jit`` on scipy
csr/csc/coo inputs, equal to the interpreter, with no stage that densifies a sparse input."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

import sparsefold as sf
from sparsefold.jit import compile_program
from sparsefold.spec.errors import IllFormedProgram

pytestmark = pytest.mark.cython


def _rand(shape, seed, fmt="csr", dtype=np.float64, density=0.35):
    rng = np.random.default_rng(seed)
    m = sp.random_array(shape, density=density, format="coo", random_state=seed,
                        data_sampler=lambda size: rng.integers(-4, 5, size))
    return m.astype(dtype).asformat(fmt)


def _dense(x):
    return x.toarray() if hasattr(x, "toarray") else np.asarray(x)


def _check(fn, args, out=None, rtol=1e-12):
    """Compiled == interpreted (values and dtype); no stage densifies a sparse input.
    Returns the compiled result."""
    jf = sf.jit(fn, out=out)
    with np.errstate(all="ignore"):
        got = jf(*args)
        expected = fn(*[sf.asarray(a) for a in args]).interpret()
    assert _dense(got).dtype == expected.dtype
    np.testing.assert_allclose(_dense(got), expected, rtol=rtol, atol=1e-12, equal_nan=True)
    program, fmt = jf.program_for(*args)
    kernel = compile_program(program, fmt, jf._assumed.get(program, ()))
    sparse_inputs = {f"a{p}" for p, a in enumerate(args) if sp.issparse(a)}
    for stage in [s for _, s in kernel.stages] + [kernel.final]:
        # a dense stage is fine over dense temporaries (a mean's sum divided by its count)
        read = {i.name for i in stage.inputs}
        assert stage.strategy != "dense" or not read & sparse_inputs, \
            "a sparse input was densified"
    return got


X = _rand((7, 6), 1)
Y = _rand((7, 6), 2, "csc")
XI, YI = _rand((7, 6), 3, dtype=np.int64), _rand((7, 6), 4, dtype=np.int64)


# --- elementwise ------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["sin", "expm1", "tanh", "floor", "sign", "square", "trunc",
                                  "conj", "signbit", "isnan", "atan"])
@pytest.mark.parametrize("fmt", ["csr", "coo"])
def test_zero_preserving_unary_stays_sparse(name, fmt):
    got = _check(lambda x: getattr(sf, name)(x), [X.asformat(fmt)])
    assert sp.issparse(got), f"{name}(0) == 0: the result should be sparse"


@pytest.mark.parametrize("name", ["exp", "cos", "logical_not", "isfinite", "cosh"])
@pytest.mark.parametrize("fmt", ["csr", "coo"])
def test_unary_with_nonzero_at_zero_is_dense_valued(name, fmt):
    got = _check(lambda x: getattr(sf, name)(x), [X.asformat(fmt)])
    assert isinstance(got, np.ndarray)


def test_invert_of_integers_is_dense_valued():
    assert isinstance(_check(lambda x: ~x, [XI]), np.ndarray)


@pytest.mark.parametrize("name,fn,dense", [
    ("row dot products", lambda x, y: sf.sum(x * y, axis=1), True),
    ("column dot products", lambda x, y: sf.sum(x * y, axis=0), True),
    ("row norms", lambda x, y: sf.sqrt(sf.sum(x * x, axis=1)), True),
    ("matvec plus a vector", lambda x, y: x @ y[0] + y[1, :1], True),
    ("scaled matvec", lambda x, y: (x @ y[0]) * 2, True),
    ("sparse product", lambda x, y: x @ y.T, False),
    ("sparse product plus sparse", lambda x, y: x @ y.T + x @ x.T, False),
    ("dense-valued times sparse", lambda x, y: (x + 1) * y, False),
])
def test_default_result_format_follows_the_value(name, fn, dense):
    """Default ``out``: dense where the result is dense-valued as scipy's is (a reduction
    that is not a sparse x sparse product; an expression of dense-valued results), else
    the first sparse input's format."""
    second = np.arange(12.0).reshape(2, 6) if "matvec" in name else X * 2
    got = _check(fn, [X, second])
    assert isinstance(got, np.ndarray) is dense, type(got)


@pytest.mark.parametrize("name", ["floor_divide", "remainder", "bitwise_and", "bitwise_or",
                                  "bitwise_xor", "bitwise_left_shift", "bitwise_right_shift"])
def test_integer_binary(name):
    shift = abs(YI) if "shift" in name else YI
    _check(lambda x, y: getattr(sf, name)(x, y), [XI, shift])


@pytest.mark.parametrize("name", ["atan2", "hypot", "copysign", "logaddexp", "floor_divide",
                                  "remainder"])
def test_float_binary(name):
    _check(lambda x, y: getattr(sf, name)(x, y), [X, Y])


def test_operators_on_integers():
    _check(lambda x, y: (x // 3) + (x % 4) + (x & y) + (x | y) + (x ^ y) + (x << 2), [XI, YI])


def test_integer_power():
    _check(lambda x: x ** 3, [XI])
    _check(lambda x, y: x ** y, [XI, abs(YI)])


def test_integer_power_to_a_negative_power_is_invalid_data():
    with pytest.raises(sf.InvalidData, match="negative integer powers"):
        sf.jit(lambda x, y: x ** y)(XI, YI)


def test_clip_and_round():
    _check(lambda x: sf.clip(x, -1.5, 2), [X])
    _check(lambda x: sf.round(x * 0.37, decimals=1), [X])
    _check(lambda x: sf.clip(x, 1, None), [XI])


@pytest.mark.parametrize("dtype", [np.complex128, np.complex64])
@pytest.mark.parametrize("fmt", ["csr", "coo"])
def test_complex(dtype, fmt):
    z = (X + 1j * _rand((7, 6), 5)).astype(dtype).asformat(fmt)
    w = (Y + 2j * X).astype(dtype).asformat(fmt)
    rtol = 1e-5 if dtype == np.complex64 else 1e-12
    _check(lambda a, b: a * b - sf.conj(a) / (b + 1), [z, w], rtol=rtol)
    _check(lambda a: sf.real(a) + sf.imag(a) * 2 + abs(a), [z], rtol=rtol)
    _check(lambda a: sf.exp(a), [z], rtol=rtol)
    _check(lambda a: sf.sum(a * a, axis=1), [z], rtol=rtol)


@pytest.mark.parametrize("dtype", [np.complex128, np.complex64])
def test_a_real_value_cast_to_complex_through_an_identity(dtype):
    """astype(int64) then astype(complex): the second cast's operand is the identity's C
    template of an int64 variable, which the printer read as a complex of unknown type
    (CMPLX(creal(v), cimag(v)): Cython rejected the kernel; found by the program generator)."""
    _check(lambda a, b: sf.astype(sf.astype(sf.astype(a, "float64"), "int64"), dtype) @ b,
           [X, Y.T.tocsr()])
    _check(lambda a: sf.astype(sf.astype(a, "int64"), dtype) * 2, [X])


def test_float16_is_computed_in_float32():
    h = X.astype(np.float32) * 0.1
    got = _check(lambda a: sf.sin(a.astype(np.float16)), [h], out="dense", rtol=1e-3)
    assert got.dtype == np.float16
    with pytest.raises(IllFormedProgram, match="float16 result cannot be a scipy"):
        sf.jit(lambda a: sf.sin(a.astype(np.float16)))(h)


def test_astype():
    _check(lambda x: x.astype(np.int32), [X * 1.7])
    _check(lambda x: x.astype(bool), [X])


# --- reductions -------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["mean", "var", "std", "argmax", "argmin", "nansum", "nanmax",
                                  "nanmean", "count_nonzero"])
@pytest.mark.parametrize("axis", [0, None])
def test_statistical_reductions(name, axis):
    _check(lambda x: getattr(sf, name)(x, axis=axis), [X])


@pytest.mark.parametrize("fmt", ["csc", "coo"])
def test_reductions_other_formats(fmt):
    x = X.asformat(fmt)
    _check(lambda a: sf.var(a, axis=1, correction=1) + sf.mean(a, axis=1), [x])
    _check(lambda a: sf.argmin(a, axis=1) + sf.argmax(a, axis=1), [x])


def test_reductions_with_nan():
    x = X.copy()
    x.data[::3] = np.nan
    _check(lambda a: sf.nanmax(a, axis=1), [x])
    _check(lambda a: sf.nanmean(a, axis=0), [x])
    _check(lambda a: sf.argmax(a, axis=1), [x])


def test_explicit_max_and_integer_mean():
    _check(lambda a: sf.max(a, axis=1, explicit=True), [X])
    _check(lambda a: sf.min(a, axis=0, explicit=True), [X])
    _check(lambda a: sf.mean(a, axis=0), [XI])


# --- shape functions and contractions ---------------------------------------------------------

SHAPES = [
    ("flip", lambda x: sf.flip(x, axis=1)),
    ("flip_all", lambda x: sf.flip(x)),
    ("roll", lambda x: sf.roll(x, 2, axis=0)),
    ("roll_flat", lambda x: sf.roll(x, 5)),
    ("swapaxes", lambda x: sf.swapaxes(x, 0, 1)),
    ("mT", lambda x: x.mT),
    ("tile", lambda x: sf.tile(x, (2, 1))),
    ("repeat", lambda x: sf.repeat(x, 2, axis=1)),
    ("diagonal", lambda x: sf.diagonal(x, offset=1)),
    ("tril", lambda x: sf.tril(x, k=-1)),
    ("triu", lambda x: sf.triu(x)),
    ("diff", lambda x: sf.diff(x, axis=0)),
    ("reshape_F", lambda x: sf.reshape(x, (3, 14), order="F")),
    ("unstack", lambda x: sf.unstack(x, axis=1)[2]),
    ("outer", lambda x: sf.outer(x[1], x[2])),
    ("dot", lambda x: sf.dot(x, x.T)),
    ("vecdot", lambda x: sf.vecdot(x, x)),
    ("einsum", lambda x: sf.einsum("ij,kj->ik", x, x)),
    ("einsum_trace", lambda x: sf.einsum("ii->", x[:6])),
    ("block", lambda x: sf.block_array([[x, None], [None, x.T.T]])),
]


@pytest.mark.parametrize("name,fn", SHAPES, ids=[s[0] for s in SHAPES])
@pytest.mark.parametrize("fmt", ["csr", "coo"])
def test_shape_functions(name, fn, fmt):
    _check(fn, [X.asformat(fmt)])

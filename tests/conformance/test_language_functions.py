"""Issue #16's reductions, shape functions and contractions against NumPy (scipy for
``block_array`` and ``max(explicit=True)``): the interpreter on every case, compiled
kernels on a subset (conftest.py). Inputs carry zeros, negatives and, for floats, NaN."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

import sparsefold as sf
from sparsefold.spec.errors import IllFormedArgument, IllFormedIndex, IllFormedProgram


def _data(shape, dtype, seed=0, nan=False):
    rng = np.random.default_rng(seed)
    x = rng.integers(-3, 4, shape) * (rng.random(shape) < 0.5)
    x = x.astype(dtype)
    if nan and x.dtype.kind == "f":
        x[(rng.random(shape) < 0.15)] = np.nan
    return x


def _same(y, got, want, rtol=1e-12):
    want = np.asarray(want)
    assert y.dtype == got.dtype == want.dtype, (y.dtype, got.dtype, want.dtype)
    assert y.shape == got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=rtol, atol=1e-12, equal_nan=True)


REDUCTIONS = ["mean", "var", "std", "argmax", "argmin", "nansum", "nanprod", "nanmax",
              "nanmin", "nanmean", "nanvar", "nanstd", "count_nonzero"]


@pytest.mark.parametrize("name", REDUCTIONS)
@pytest.mark.parametrize("dtype", ["float64", "int32", "bool", "float32", "complex128"])
@pytest.mark.parametrize("axis", [None, 0, 1, (0, 2)], ids=str)
def test_reductions_match_numpy(name, dtype, axis, engine):
    x = _data((3, 4, 2), dtype, seed=len(name), nan=True)
    if name in ("argmax", "argmin") and isinstance(axis, tuple):
        axis = -1
    if dtype == "complex128":
        x = x + 1j * _data((3, 4, 2), "float64", seed=9)
    with np.errstate(all="ignore"):
        try:
            want = getattr(np, name)(x, axis=axis)
        except TypeError:  # e.g. nanmax of complex has no NumPy loop either
            with pytest.raises(IllFormedProgram):
                getattr(sf, name)(sf.asarray(x), axis=axis)
            return
        y = getattr(sf, name)(sf.asarray(x), axis=axis)
        _same(y, engine(y), want, rtol=1e-5 if dtype == "float32" else 1e-12)


@pytest.mark.parametrize("kw", [{"correction": 1}, {"ddof": 2}, {"keepdims": True},
                                {"dtype": np.float32}], ids=str)
def test_var_std_options_match_numpy(kw, engine):
    x = _data((4, 5), "float64", seed=3)
    npkw = {("ddof" if k == "correction" else k): v for k, v in kw.items()}
    for name in ("var", "std", "mean"):
        if name == "mean" and "ddof" in npkw:
            continue
        y = getattr(sf, name)(sf.asarray(x), axis=0, **kw)
        _same(y, engine(y), getattr(np, name)(x, axis=0, **npkw),
              rtol=1e-5 if kw.get("dtype") == np.float32 else 1e-12)


def test_argmax_keepdims_and_nan_first(engine):
    x = np.array([[1.0, np.nan, 3.0, np.nan], [2.0, 2.0, 0.0, -1.0]])
    for f in ("argmax", "argmin"):
        for axis in (None, 1):
            y = getattr(sf, f)(sf.asarray(x), axis=axis, keepdims=True)
            _same(y, engine(y), getattr(np, f)(x, axis=axis, keepdims=True))


def test_all_nan_slices(engine):
    x = np.array([[np.nan, np.nan], [1.0, np.nan]])
    with np.errstate(all="ignore"), pytest.warns(RuntimeWarning):
        for f in ("nanmax", "nanmin", "nanmean"):
            y = getattr(sf, f)(sf.asarray(x), axis=1)
            _same(y, engine(y), getattr(np, f)(x, axis=1))


def test_scipy_explicit_max_min(engine):
    d = np.array([[-3.0, 0.0, -2.0], [0.0, 0.0, 0.0], [4.0, 0.0, 1.0]])
    s = sp.csr_array(d)
    for f in ("max", "min"):
        for axis in (None, 0, 1):
            y = getattr(sf, f)(sf.asarray(s), axis=axis, explicit=True)
            _same(y, engine(y), np.asarray(_dense(getattr(s, f)(axis=axis, explicit=True))))


def _dense(a):
    return a.toarray() if hasattr(a, "toarray") else a


def test_reduction_out(engine):
    x = _data((3, 4), "float64", seed=2)
    out = np.zeros(4)
    assert sf.sum(sf.asarray(x), axis=0, out=out) is out
    np.testing.assert_array_equal(out, x.sum(axis=0))
    out32 = np.zeros(3, np.float32)
    sf.mean(sf.asarray(x), axis=1, out=out32)
    np.testing.assert_allclose(out32, x.mean(axis=1).astype(np.float32))
    with pytest.raises(IllFormedProgram, match="out has shape"):
        sf.sum(sf.asarray(x), axis=0, out=np.zeros(3))
    with pytest.raises(IllFormedProgram, match="same_kind"):
        sf.mean(sf.asarray(x), axis=0, out=np.zeros(4, np.int64))


SHAPE_FUNCTIONS = [
    ("flip", lambda m, x: m.flip(x), None),
    ("flip_axis", lambda m, x: m.flip(x, axis=1), None),
    ("flip_axes", lambda m, x: m.flip(x, axis=(0, 2)), None),
    ("roll", lambda m, x: m.roll(x, 3), None),
    ("roll_axis", lambda m, x: m.roll(x, -5, axis=1), None),
    ("roll_axes", lambda m, x: m.roll(x, (1, 2), axis=(0, 2)), None),
    ("swapaxes", lambda m, x: m.swapaxes(x, 0, 2), None),
    ("matrix_transpose", lambda m, x: m.matrix_transpose(x), lambda x: np.swapaxes(x, -1, -2)),
    ("tile", lambda m, x: m.tile(x, (2, 1, 3)), None),
    ("tile_short", lambda m, x: m.tile(x, 2), None),
    ("repeat", lambda m, x: m.repeat(x, 2, axis=1), None),
    ("repeat_flat", lambda m, x: m.repeat(x, 3), None),
    ("diagonal", lambda m, x: m.diagonal(x), None),
    ("diagonal_offset", lambda m, x: m.diagonal(x, offset=1, axis1=1, axis2=2), None),
    ("diagonal_negative", lambda m, x: m.diagonal(x, offset=-1, axis1=2, axis2=0), None),
    ("tril", lambda m, x: m.tril(x), None),
    ("triu_k", lambda m, x: m.triu(x, k=1), None),
    ("tril_negative", lambda m, x: m.tril(x, k=-2), None),
    ("diff", lambda m, x: m.diff(x), None),
    ("diff_n2_axis0", lambda m, x: m.diff(x, n=2, axis=0), None),
    ("reshape_F", lambda m, x: m.reshape(x, (4, 9), order="F"), None),
    ("unstack", lambda m, x: m.unstack(x, axis=1)[2], lambda x: x[:, 2]),
    ("outer", lambda m, x: m.outer(x[0], x[1]), None),
    ("dot_nd", lambda m, x: m.dot(x, m.transpose(x, (1, 0, 2))), None),
    ("dot_1d", lambda m, x: m.dot(x, x[0, 0]), None),
    ("vecdot", lambda m, x: m.vecdot(x, x), None),
    ("einsum_chain", lambda m, x: m.einsum("ijk,kjl->il", x, m.swapaxes(x, 0, 2)), None),
    ("einsum_diag", lambda m, x: m.einsum("iij->ij", x[:, :3]), None),
    ("einsum_sum", lambda m, x: m.einsum("ijk->j", x), None),
    ("einsum_implicit", lambda m, x: m.einsum("ijk,ljk", x, x), None),
]


@pytest.mark.parametrize("name,fn,numpy_fn", SHAPE_FUNCTIONS, ids=[s[0] for s in SHAPE_FUNCTIONS])
@pytest.mark.parametrize("dtype", ["float64", "int32"])
def test_shape_functions_match_numpy(name, fn, numpy_fn, dtype, engine):
    x = _data((3, 4, 3), dtype, seed=len(name))
    want = numpy_fn(x) if numpy_fn is not None else fn(np, x)
    y = fn(sf, sf.asarray(x))
    _same(y, engine(y), want)


def test_array_methods(engine):
    x = _data((2, 1, 3), "float64", seed=4)
    a = sf.asarray(x)
    for y, want in [(a.transpose(2, 0, 1), x.transpose(2, 0, 1)), (a.flatten(), x.flatten()),
                    (a.squeeze(), x.squeeze()), (a.astype(np.int8), x.astype(np.int8)),
                    (a.mT, x.mT), (a.transpose((1, 2, 0)), x.transpose((1, 2, 0)))]:
        _same(y, engine(y), want)


def test_block_array_and_stack_dtype(engine):
    a, b = _data((2, 3), "float64", seed=1), _data((2, 2), "int32", seed=2)
    y = sf.block_array([[sf.asarray(a), None], [None, sf.asarray(b)]])
    want = sp.block_array([[sp.csr_array(a), None], [None, sp.csr_array(b)]]).toarray()
    _same(y, engine(y), want)
    y = sf.hstack([sf.asarray(a), sf.asarray(a)], dtype=np.float32)
    _same(y, engine(y), np.hstack([a, a], dtype=np.float32))
    y = sf.vstack([sf.asarray(b), sf.asarray(b)], dtype=np.int64)
    _same(y, engine(y), np.vstack([b, b], dtype=np.int64))


def test_nonzero_argwhere_and_one_argument_where():
    x = _data((3, 4), "float64", seed=5)
    s = sp.csr_array(x)
    for arg in (x, s):
        got = sf.nonzero(sf.asarray(arg))
        for g, w in zip(got, np.nonzero(x), strict=True):
            np.testing.assert_array_equal(g, w)
        np.testing.assert_array_equal(sf.argwhere(sf.asarray(arg)), np.argwhere(x))
        for g, w in zip(sf.where(sf.asarray(arg) > 0), np.where(x > 0), strict=True):
            np.testing.assert_array_equal(g, w)


# --- errors users catch -----------------------------------------------------------------------

def test_index_and_argument_errors_are_also_pythons():
    a = sf.asarray(np.zeros((3, 4)))
    with pytest.raises(IndexError, match="out of bounds"):
        a[5]
    with pytest.raises(IllFormedIndex, match="too many indices"):
        a[0, 0, 0]
    with pytest.raises(TypeError, match="axis must be"):
        sf.sum(a, axis=1.5)
    with pytest.raises(IllFormedArgument, match="axes must be a tuple or list"):
        sf.permute_dims(a, {1, 0})
    with pytest.raises(TypeError, match="axes must be a tuple or list"):
        sf.permute_dims(a, 0.3)
    with pytest.raises(IllFormedIndex, match="names a size symbol"):
        a["foo"]


def test_zero_d_integer_array_index():
    x = _data((3, 4), "float64", seed=6)
    y = sf.asarray(x)[np.array(-1), -2]
    np.testing.assert_array_equal(y.interpret(), x[np.array(-1), -2])

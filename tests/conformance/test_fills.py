"""pydata arrays with a non-zero fill_value (issue 16 item 7) and pydata DOK input (item 6),
tied to NumPy on the densified arrays: every implicit entry holds the fill."""

from __future__ import annotations

import numpy as np
import pytest
import sparse

import sparsefold as sf

RNG = np.random.default_rng(16)


def _filled(shape, fill, *, kind="coo", density=0.4, seed=0, dtype=np.float64):
    """A pydata array of ``kind`` whose stored values are random (some equal to the fill
    or to 0: both must stay what they are) and whose other entries are ``fill``."""
    rng = np.random.default_rng(seed)
    dense = rng.integers(-3, 4, size=shape).astype(dtype)
    keep = rng.random(shape) < density
    dense = np.where(keep, dense, fill)
    coo = sparse.COO.from_numpy(dense, fill_value=fill)
    if kind == "gcxs":
        return sparse.GCXS.from_coo(coo, compressed_axes=(0,))
    if kind == "dok":
        return sparse.DOK.from_coo(coo)
    return coo


def _np(a):
    return np.asarray(a.todense())


FILLS = [2.0, -1.5, 0.0, np.nan]
KINDS = ["coo", "gcxs"]

ELEMENTWISE = {
    "x * y": (lambda x, y: x * y),
    "x + y": (lambda x, y: x + y),
    "x - y + 1": (lambda x, y: x - y + 1),
    "(x + 1) - 1": (lambda x, y: (x + 1) - 1),
    "maximum(x, y) * 2": (lambda x, y: np.maximum(x, y) * 2 if isinstance(x, np.ndarray)
                          else sf.maximum(x, y) * 2),
    "where(x > y, x, y)": (lambda x, y: np.where(x > y, x, y) if isinstance(x, np.ndarray)
                           else sf.where(x > y, x, y)),
    "x * y + x": (lambda x, y: x * y + x),
}


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("fills", [(2.0, 0.0), (2.0, -2.0), (-1.5, 3.0), (np.nan, 1.0)],
                         ids=str)
@pytest.mark.parametrize("name", sorted(ELEMENTWISE))
def test_elementwise_with_fills(engine, name, fills, kind):
    fn = ELEMENTWISE[name]
    a = _filled((5, 4), fills[0], kind=kind, seed=1)
    b = _filled((5, 4), fills[1], kind=kind, seed=2)
    with np.errstate(all="ignore"):
        want = fn(_np(a), _np(b))
        got = engine(fn(sf.asarray(a), sf.asarray(b)))
    np.testing.assert_array_equal(got, want)


REDUCTIONS = {
    "sum": (lambda m, x, axis: m.sum(x, axis=axis)),
    "max": (lambda m, x, axis: m.max(x, axis=axis)),
    "min": (lambda m, x, axis: m.min(x, axis=axis)),
    "prod": (lambda m, x, axis: m.prod(x, axis=axis)),
    "mean": (lambda m, x, axis: m.mean(x, axis=axis)),
}


@pytest.mark.parametrize("axis", [None, 0, 1])
@pytest.mark.parametrize("fill", FILLS, ids=str)
@pytest.mark.parametrize("name", sorted(REDUCTIONS))
def test_reductions_count_implicit_entries(engine, name, fill, axis):
    """A reduction sees every implicit entry as the fill: sum adds fill × their number,
    max/min include the fill when any is implicit."""
    a = _filled((4, 6), fill, seed=3)
    fn = REDUCTIONS[name]
    with np.errstate(all="ignore"):
        want = fn(np, _np(a), axis)
        got = engine(fn(sf, sf.asarray(a), axis))
    np.testing.assert_allclose(got, want, rtol=1e-12, equal_nan=True)


SHAPES = {
    "transpose": (lambda m, x: m.permute_dims(x, (1, 0)) if m is sf else x.T),
    "reshape": (lambda m, x: m.reshape(x, (3, 8))),
    "slice": (lambda m, x: x[1::2, ::-1]),
    "concat": (lambda m, x: m.concat([x, x * 1], axis=1) if m is sf
               else np.concatenate([x, x], axis=1)),
    "pad by the fill": (lambda m, x: m.pad(x, 1, constant_values=2.0)),
    "pad by 0": (lambda m, x: m.pad(x, 1, constant_values=0.0)),
    "expand_dims": (lambda m, x: m.expand_dims(x, axis=1)),
}


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("name", sorted(SHAPES))
def test_shape_operators_carry_the_fill(engine, name, kind):
    a = _filled((4, 6), 2.0, kind=kind, seed=4)
    fn = SHAPES[name]
    np.testing.assert_array_equal(engine(fn(sf, sf.asarray(a)) * 3), fn(np, _np(a)) * 3)


def test_concat_of_different_fills_is_ill_formed():
    """pydata raises for these; so do we, naming both fills."""
    a, b = _filled((3, 3), 2.0), _filled((3, 3), 0.0)
    with pytest.raises(sf.IllFormedProgram, match=r"concat: the arrays joined have different "
                                                   r"fill values \(2\.0, 0\.0\)"):
        sf.concat([sf.asarray(a), sf.asarray(b)]).interpret()


@pytest.mark.parametrize("fill", [2.0, 0.0])
def test_dok_input(engine, fill):
    a = _filled((4, 5), fill, kind="dok", seed=5)
    assert type(a).__name__ == "DOK"
    x = sf.asarray(a)
    np.testing.assert_array_equal(engine(x * 2 + x), _np(a) * 2 + _np(a))


def test_dok_through_jit():
    a = _filled((4, 5), 0.0, kind="dok", seed=6)
    got = sf.jit(lambda x: x * 2)(a)
    np.testing.assert_array_equal(_np(got), _np(a) * 2)
    filled = _filled((4, 5), 1.0, kind="dok", seed=6)
    got = sf.jit(lambda x: x * 2)(filled)
    assert got.fill_value == 2.0
    np.testing.assert_array_equal(_np(got), _np(filled) * 2)


def test_result_fill_values():
    """Results of filled pydata inputs come back as pydata arrays with the fill the
    program gives where every input is implicit, as pydata computes it."""
    a, b = _filled((5, 4), 2.0, seed=7), _filled((5, 4), 0.0, seed=8)
    c = _filled((5, 4), -2.0, seed=9)
    x, y, z = sf.asarray(a), sf.asarray(b), sf.asarray(c)
    for lazy, peer in [(x * y, a * b), (x + 1, a + 1), (x + z, a + c), (x * 3, a * 3),
                       (x.T, a.T), (sf.concat([x, x]), sparse.concatenate([a, a]))]:
        got = lazy.compute()
        assert isinstance(got, sparse.SparseArray), type(got)
        assert got.fill_value == peer.fill_value, (got.fill_value, peer.fill_value)
        np.testing.assert_array_equal(_np(got), _np(peer))
    got = sf.jit(lambda p, q: p * q + p, out="csr")(a, b)
    assert type(got).__name__ == "GCXS" and got.fill_value == 2.0
    np.testing.assert_array_equal(_np(got), _np(a) * _np(b) + _np(a))


def test_nan_fill_result():
    a = _filled((4, 4), np.nan, seed=10)
    got = (sf.asarray(a) * 2).compute()
    assert np.isnan(got.fill_value)
    np.testing.assert_array_equal(_np(got), _np(a) * 2)


def test_integer_fill():
    a = _filled((4, 4), 3, seed=11, dtype=np.int64)
    b = _filled((4, 4), 0, seed=12, dtype=np.int64)
    x, y = sf.asarray(a), sf.asarray(b)
    for lazy, want in [(x * y, _np(a) * _np(b)), (sf.sum(x, axis=0), _np(a).sum(0)),
                       (x // 2, _np(a) // 2)]:
        np.testing.assert_array_equal(lazy.interpret(), want)
        got = lazy.compute()
        np.testing.assert_array_equal(got if isinstance(got, np.ndarray) else _np(got), want)


@pytest.mark.parametrize("make", [
    lambda L: L,
    lambda L: __import__("scipy.sparse", fromlist=["csr_array"]).csr_array(L),
    lambda L: sparse.COO.from_numpy(L),
], ids=["numpy", "scipy", "pydata"])
def test_float128_is_a_clear_error_when_compiled(make):
    """The interpreter computes in longdouble; the compiler names the dtype and what it
    supports (no kernel computes in long double)."""
    value = make(np.arange(4, dtype=np.longdouble).reshape(2, 2))
    x = sf.asarray(value)
    np.testing.assert_array_equal((x * 2).interpret(), np.arange(4).reshape(2, 2) * 2)
    for call in (lambda: (x * 2).compute(), lambda: sf.jit(lambda v: v * 2)(value)):
        with pytest.raises(sf.IllFormedProgram,
                           match=r"not supported yet by the compiler: .*float128.*\(supported:"
                                 r" bool, .*float64, float16, complex64, complex128\)"):
            call()

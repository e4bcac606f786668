"""Integer-array and boolean indexing, ``take``, ``compress`` and one-argument ``where``,
tied to NumPy: every case is NumPy's own expression on the dense array, run by every
engine (the interpreter on all cases; compiled kernels on the stratified subset)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
import sparse as pydata

import sparsefold as sf

X = np.arange(1, 61).reshape(3, 4, 5) * (np.arange(60).reshape(3, 4, 5) % 3 != 0)
M = X[:, :, 1].astype(np.float64)  # (3, 4), some zeros

KEYS_3D = [
    np.s_[[2, 0, 2]], np.s_[:, [1, -1]], np.s_[..., [0, 0, 4]], np.s_[[0, 1], :, [2, 3]],
    np.s_[:, [[0, 1], [2, 3]], 1], np.s_[1, :, [0, 4]], np.s_[:, 1, [0, 4]],
    np.s_[[[0], [2]], :, [1, 2, 3]], np.s_[None, [1], ..., [2]], np.s_[:, 1:3, [4, 0]],
    np.s_[[True, False, True]], np.s_[X[:, :, 0] > 20], np.s_[[], :], np.s_[[2, 1], ::-1],
    np.s_[np.array(-1), -2], np.s_[np.array([[-1]]), np.array([0, 1])],
]


def _ids(keys):
    return [str(i) for i in range(len(keys))]


@pytest.mark.parametrize("key", KEYS_3D, ids=_ids(KEYS_3D))
def test_nd_coo(engine, key):
    got = engine(sf.asarray(pydata.COO.from_numpy(X))[key])
    np.testing.assert_array_equal(got, X[key])


KEYS_2D = [
    np.s_[[2, 0, 2]], np.s_[:, [3, 0, 0]], np.s_[[0, 2], [3, -1]], np.s_[[[0, 1], [2, 0]]],
    np.s_[M[:, 0] > 0], np.s_[M > 0], np.s_[:, [False, True, True, False]],
    np.s_[[1], 1:], np.s_[-1, [0, 0]], np.s_[np.array(-1), -2], np.s_[[]],
]


@pytest.mark.parametrize("fmt", ["csr", "csc", "coo"])
@pytest.mark.parametrize("key", KEYS_2D, ids=_ids(KEYS_2D))
def test_matrix(engine, fmt, key):
    got = engine(sf.asarray(sp.csr_array(M).asformat(fmt))[key])
    np.testing.assert_array_equal(got, M[key])


@pytest.mark.parametrize("key", KEYS_2D[:6], ids=_ids(KEYS_2D[:6]))
def test_dense_operand(engine, key):
    np.testing.assert_array_equal(engine(sf.asarray(M)[key]), M[key])


@pytest.mark.parametrize("axis", [None, 0, 1, -1])
@pytest.mark.parametrize("indices", [[1, -1, 1], [[0, 2], [2, 2]], 2, []], ids=str)
def test_take(engine, axis, indices):
    want = np.take(M, indices, axis=axis)
    np.testing.assert_array_equal(engine(sf.take(sp.csr_array(M), indices, axis=axis)), want)
    np.testing.assert_array_equal(engine(np.take(sf.asarray(M), indices, axis=axis)), want)


@pytest.mark.parametrize("axis", [None, 0, 1])
@pytest.mark.parametrize("condition", [[True, False, True], [False] * 3, [True] * 4, [0, 1]],
                         ids=str)
def test_compress(engine, axis, condition):
    try:
        want = np.compress(condition, M, axis=axis)
    except IndexError:  # a condition longer than the axis, true past its end
        with pytest.raises(IndexError, match="out of bounds"):
            engine(sf.compress(condition, sp.coo_array(M), axis=axis))
        return
    np.testing.assert_array_equal(engine(sf.compress(condition, sp.coo_array(M), axis=axis)),
                                  want)


def test_where_with_one_argument_is_nonzero():
    a = sp.csr_array(M)
    for got, want in zip(sf.where(sf.asarray(a)), np.nonzero(M)):
        np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(sf.argwhere(a), np.argwhere(M))


def test_zero_d_integer_array_is_an_integer():
    y = sf.asarray(sp.csr_array(M))[np.array(-1), -2]
    assert y.ndim == 0 and y.interpret() == M[-1, -2]


def test_out_of_range_data_is_an_index_error(engine):
    i = sf.symbol("i", ("K",), "int64")
    y = sf.asarray(sp.csr_array(M))[:, i]
    with pytest.raises(IndexError, match="index 4 is out of bounds for axis 1 with size 4"):
        engine(y, i=np.array([0, 4]))
    with pytest.raises(sf.InvalidData):
        engine(y, i=np.array([-5]))

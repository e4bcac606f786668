"""NumPy functions and ufuncs on lazy arrays (sparsefold/numpy_protocol.py): they build the
program the sparsefold function of the same name builds, and what sparsefold cannot do is a
clear ``IllFormedProgram`` instead of ``unexpected keyword argument 'out'`` or a silent
densification.

Oracle: NumPy applied to the dense values, and the sparsefold function's own program.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

import sparsefold as sf
from sparsefold.numpy_protocol import sparsefold_name

D = np.array([[1.0, 0, 2], [0, -3, 0]])
A = sp.csr_array(D)

# (numpy call on the lazy array x, the same on the dense D)
CALLS = {
    "sum": (lambda x: np.sum(x), lambda d: np.sum(d)),
    "sum positional axis": (lambda x: np.sum(x, 0), lambda d: np.sum(d, 0)),
    "sum keepdims": (lambda x: np.sum(x, axis=1, keepdims=True),
                     lambda d: np.sum(d, axis=1, keepdims=True)),
    "prod": (lambda x: np.prod(x + 1, axis=0), lambda d: np.prod(d + 1, axis=0)),
    "max": (lambda x: np.max(x, axis=1), lambda d: np.max(d, axis=1)),
    "amin": (lambda x: np.amin(x), lambda d: np.amin(d)),
    "any / all": (lambda x: np.any(x > 1, axis=0) & np.all(x < 3, axis=0),
                  lambda d: np.any(d > 1, axis=0) & np.all(d < 3, axis=0)),
    "concatenate": (lambda x: np.concatenate([x, D], axis=1),
                    lambda d: np.concatenate([d, D], axis=1)),
    "concatenate axis=None": (lambda x: np.concatenate([x, x], axis=None),
                              lambda d: np.concatenate([d, d], axis=None)),
    "stack": (lambda x: np.stack([x, x], axis=2), lambda d: np.stack([d, d], axis=2)),
    "hstack / vstack": (lambda x: np.vstack([np.hstack([x, x]), np.hstack([x, x])]),
                        lambda d: np.vstack([np.hstack([d, d]), np.hstack([d, d])])),
    "reshape": (lambda x: np.reshape(x, (3, 2)), lambda d: np.reshape(d, (3, 2))),
    "transpose": (lambda x: np.transpose(x), lambda d: np.transpose(d)),
    "transpose axes": (lambda x: np.transpose(x, (1, 0)), lambda d: np.transpose(d, (1, 0))),
    "moveaxis": (lambda x: np.moveaxis(x, 0, 1), lambda d: np.moveaxis(d, 0, 1)),
    "expand_dims / squeeze": (lambda x: np.squeeze(np.expand_dims(x, 0), axis=0),
                              lambda d: np.squeeze(np.expand_dims(d, 0), axis=0)),
    "broadcast_to": (lambda x: np.broadcast_to(x[0], (4, 3)),
                     lambda d: np.broadcast_to(d[0], (4, 3))),
    "pad": (lambda x: np.pad(x, 1, constant_values=2.0),
            lambda d: np.pad(d, 1, constant_values=2.0)),
    "tensordot": (lambda x: np.tensordot(x, D.T, axes=1), lambda d: np.tensordot(d, D.T, axes=1)),
    "where": (lambda x: np.where(x > 0, x, 5.0), lambda d: np.where(d > 0, d, 5.0)),
    "ufunc abs": (lambda x: np.abs(x), lambda d: np.abs(d)),
    "ufunc maximum": (lambda x: np.maximum(x, 0.5), lambda d: np.maximum(d, 0.5)),
    "ufunc matmul": (lambda x: np.matmul(x, D.T), lambda d: np.matmul(d, D.T)),
    "ndarray * lazy": (lambda x: D * x, lambda d: D * d),
    "ndarray @ lazy": (lambda x: D.T @ x, lambda d: D.T @ d),
    "ndarray == lazy": (lambda x: D == x, lambda d: D == d),
    "numpy scalar * lazy": (lambda x: np.float32(2) * x, lambda d: np.float32(2) * d),
}


@pytest.mark.parametrize("name", sorted(CALLS))
def test_numpy_calls_build_lazy_programs(name):
    on_lazy, on_dense = CALLS[name]
    got = on_lazy(sf.asarray(A))
    assert isinstance(got, sf.LazyArray), type(got)      # nothing was computed
    expected = np.asarray(on_dense(D))
    np.testing.assert_array_equal(got.interpret(), expected)
    assert got.dtype == expected.dtype


def test_np_sum_is_sf_sum():
    x = sf.asarray(A)
    assert np.sum(x, axis=0).node == sf.sum(x, axis=0).node
    assert np.concatenate([x, x]).node == sf.concat([x, x]).node


@pytest.mark.parametrize("call, message", [
    (lambda x: np.cumsum(x), r"numpy.cumsum is not supported on sparsefold arrays "
                             r"\(sparsefold has no 'cumsum'\); call .interpret\(\)"),
    (lambda x: np.sinc(x), r"numpy.sinc is not supported on sparsefold arrays"),
    (lambda x: np.sum(x, where=x > 0), r"numpy.sum\(..., where=...\) is not supported on "
                                       r"sparsefold arrays \(sparsefold.sum takes x, axis"),
    (lambda x: np.max(x, initial=0.0), r"numpy.max\(..., initial=...\) is not supported"),
    (lambda x: np.add.reduce(x), r"numpy.add.reduce is not supported on sparsefold arrays"),
    (lambda x: np.add(x, x, dtype=np.float32), r"numpy.add\(..., dtype=...\) is not supported"),
    (lambda x: np.where(x > 0, x), r"where: give both x1 and x2, or neither"),
])
def test_what_sparsefold_cannot_do_is_a_clear_error(call, message):
    with pytest.raises(sf.IllFormedProgram, match=message):
        call(sf.asarray(A))


def test_ndarray_and_lazy_is_the_lazy_operator():
    """``ndarray & x`` reaches x as np.bitwise_and: it means what ``x & ndarray`` means, as in
    NumPy (logical on bools, bitwise on integers)."""
    a = np.array([[True, False], [True, True]])
    b = np.array([False, True])
    for op, fn in [(np.ndarray.__and__, "bitwise_and"), (np.ndarray.__or__, "bitwise_or")]:
        y = op(a, sf.asarray(b))
        assert f"fn={fn})" in str(y).splitlines()[-1], str(y)
        np.testing.assert_array_equal(y.interpret(), op(a, b))
    ints = np.array([1, 2]) & sf.asarray(np.array([3, 4]))
    np.testing.assert_array_equal(ints.interpret(), np.array([1, 2]) & np.array([3, 4]))


def test_np_where_with_one_argument_is_nonzero():
    D = np.array([[1.0, 0], [2, 3]])
    got = np.where(sf.asarray(D) > 0)
    for g, e in zip(got, np.where(D > 0)):
        np.testing.assert_array_equal(g, e)


def test_conversion_to_numpy_still_interprets():
    x = sf.asarray(A) * 2
    np.testing.assert_array_equal(np.asarray(x), 2 * D)


def test_names_follow_the_array_api():
    assert [sparsefold_name(n) for n in ("concatenate", "absolute", "power", "amax", "sum")] \
        == ["concat", "abs", "pow", "max", "sum"]

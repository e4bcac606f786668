"""A dense output whose innermost loop writes a leading axis is stored with that axis last
(``DenseOut.order``, ``kernel.dense_axis_order``): dense @ sparse writes one output column
per entry of the sparse operand. The values are the program's whatever the layout; these
tests pin both the layout choice and the values, through the checked and the fast path."""

import contextlib
import io

import numpy as np
import pytest
import scipy.sparse as sp

import sparsefold as sf


def _source(fn, *args) -> str:
    with contextlib.redirect_stdout(io.StringIO()):
        return str(sf.show(fn, *args))


@pytest.mark.parametrize("fmt", ["csr", "csc", "coo"])
@pytest.mark.parametrize("rows", [1, 3, 8])
def test_dense_times_sparse_is_numpy_s_product(fmt, rows):
    a = sp.random_array((30, 20), density=0.2, format=fmt, rng=np.random.default_rng(1))
    x = np.random.default_rng(2).standard_normal((rows, 30))
    f = sf.jit(lambda v, m: v @ m)
    expect = x @ a.toarray()
    for _ in range(3):  # first call (checked path), then the fast entry
        got = f(x, a)
        assert got.shape == (rows, 20) and got.dtype == np.float64
        np.testing.assert_allclose(got, expect, rtol=1e-12, atol=1e-12)


def test_dense_times_csr_writes_contiguous_columns():
    a = sp.random_array((30, 20), density=0.2, format="csr", rng=np.random.default_rng(1))
    x = np.ones((4, 30))
    text = _source(lambda v, m: v @ m, x, a)
    assert "stored with axes in the order (1, 0)" in " ".join(text.replace("#", " ").split())
    assert "cell = o1 * S_n0 + o0" in text
    assert "return sf_dense_result(o_val, (1, 0))" in text
    # sparse @ dense already writes its innermost axis last: C order, no transpose
    text = _source(lambda m, v: m @ v, a.T.tocsr(), x.T.copy())
    assert "stored with axes" not in text and ".transpose(" not in text


def test_permuted_layout_with_counted_cells():
    """max over a product counts the entries reaching each cell (cells that also cover an
    implicit zero meet a 0): the counts are stored in the same layout as the values."""
    a = sp.random_array((25, 15), density=0.15, format="csr", rng=np.random.default_rng(3))
    x = np.random.default_rng(4).standard_normal((3, 25))
    f = sf.jit(lambda v, m: sf.max(v[:, :, None] * m[None, :, :], axis=1))
    dense = a.toarray()
    expect = (x[:, :, None] * dense[None, :, :]).max(axis=1)
    for _ in range(2):
        np.testing.assert_allclose(f(x, a), expect, rtol=1e-12, atol=1e-12)


def test_strided_dense_operand_and_int_values():
    a = sp.random_array((12, 9), density=0.3, format="csr", rng=np.random.default_rng(5),
                        dtype=np.int64, data_sampler=lambda size: np.arange(1, size + 1))
    x = np.arange(2 * 24, dtype=np.int64).reshape(2, 24)[:, ::2]  # strided rows
    got = sf.jit(lambda v, m: v @ m)(x, a)
    np.testing.assert_array_equal(got, x @ a.toarray())

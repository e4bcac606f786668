"""``storage.levels.row_major_order``: the permutation that canonicalizes COO input (and sorts
a kernel's buffered entries) is lexsort's, stable on duplicates; out-of-range coordinates are
never folded into colliding keys (the kernel must still see and report them)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

import sparsefold as sf
from sparsefold.storage.levels import row_major_order


@pytest.mark.parametrize("shape", [(7, 5), (300, 2), (2, 300), (4, 3, 6), (1, 1)])
def test_the_order_is_lexsorts_and_stable(shape):
    rng = np.random.default_rng(len(shape))
    n = 500
    coords = [rng.integers(0, s, n) for s in shape]  # many duplicates
    got = row_major_order(coords, shape)
    np.testing.assert_array_equal(got, np.lexsort(coords[::-1]))


def test_huge_shapes_and_out_of_range_coordinates_use_lexsort():
    rng = np.random.default_rng(1)
    coords = [rng.integers(0, 2**40, 50), rng.integers(0, 2**40, 50)]
    np.testing.assert_array_equal(row_major_order(coords, (2**40, 2**40)),
                                  np.lexsort(coords[::-1]))
    # (0, 5) and (1, 0) would share the key 5 in a 5-column shape: not folded
    bad = [np.array([1, 0]), np.array([0, 5])]
    np.testing.assert_array_equal(row_major_order(bad, (2, 5)), [1, 0])
    assert len(row_major_order([np.array([3])], (4,))) == 1
    assert len(row_major_order([np.array([], dtype=np.int64)] * 2, (4, 4))) == 0


def test_an_out_of_range_coo_coordinate_is_still_reported():
    a = sp.coo_array((np.array([1.0, 2.0]), (np.array([1, 0]), np.array([0, 4]))),
                     shape=(2, 5))
    a.coords[1][1] = 5  # after scipy's own check: (0, 5) and (1, 0) would share a key
    with pytest.raises(sf.InvalidData):
        sf.jit(lambda x: x * 2, out="csr")(a)


def test_unsorted_coo_with_duplicates_equals_scipy():
    rng = np.random.default_rng(3)
    r, c = rng.integers(0, 40, 2000), rng.integers(0, 30, 2000)
    a = sp.coo_array((rng.random(2000), (r, c)), shape=(40, 30))
    got = sf.jit(lambda x: x * 2, out="csr")(a)
    want = (a * 2).tocsr()
    want.sum_duplicates()
    np.testing.assert_array_equal(got.indptr, want.indptr)
    np.testing.assert_array_equal(got.indices, want.indices)
    np.testing.assert_allclose(got.data, want.data, rtol=1e-13)


@pytest.mark.parametrize("dtype", ["float64", "float32", "int64", "complex128", "bool"])
@pytest.mark.parametrize("shape", [(40, 30), (5000, 3), (3, 5000)])
def test_both_canonicalizations_agree_with_scipy(dtype, shape):
    # a 2-d COO goes through scipy's tocsr where it can (few rows beside the entries, a
    # dtype scipy sums as NumPy does), else the argsort; either must give scipy's result
    rng = np.random.default_rng(5)
    n = 600
    r, c = rng.integers(0, shape[0], n), rng.integers(0, shape[1], n)
    data = (rng.random(n) * 4).astype(dtype) if dtype != "bool" else rng.random(n) > 0.5
    a = sp.coo_array((data, (r, c)), shape=shape)
    got = sf.jit(lambda x: x, out="coo")(a)
    want = sp.coo_array(a.toarray())  # duplicates summed (bool: or), row-major
    dense = got.toarray()
    np.testing.assert_allclose(dense, a.toarray(), rtol=1e-6)  # duplicates' sum order
    assert list(zip(got.row.tolist(), got.col.tolist())) == sorted(set(zip(r.tolist(),
                                                                          c.tolist())))
    assert want.shape == got.shape

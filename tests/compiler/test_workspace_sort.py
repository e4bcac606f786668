"""The row workspace's flush (``compiler/lower/workspace.py``): a sparse product's rows come out
with their columns in increasing order and each column's sum added in the driver row's order,
whichever way the row is put in order:

* a row already in order (one contributing row) is left as it is; up to 24 columns take an
  insertion sort;
* 25 to 2048 scattered columns: buckets of the row's span, then an insertion sort;
* columns crowding into one bucket, or more than 2048 of them: the introsort;
* more than a sixteenth of the columns: the scan of the marks.

The oracle is Gustavson's algorithm in Python floats (float64: the same additions in the
same order, so the comparison is bit for bit) and in Python ints, and the structure must be
exactly the product's sorted structure.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

import sparsefold as sf

pytestmark = pytest.mark.cython


def _gustavson(a: sp.csr_array, b: sp.csr_array):
    """(indptr, indices, data) of a @ b in NumPy scalars of its dtype: each row's sums in the
    order its products arrive
    (a's row in storage order, then b's row), columns sorted."""
    indptr, indices, data = [0], [], []
    for i in range(a.shape[0]):
        acc: dict = {}
        for p in range(a.indptr[i], a.indptr[i + 1]):
            k, x = int(a.indices[p]), a.data[p]
            for q in range(b.indptr[k], b.indptr[k + 1]):
                j, y = int(b.indices[q]), b.data[q]
                acc[j] = x * y if j not in acc else acc[j] + x * y
        for j in sorted(acc):
            indices.append(j)
            data.append(acc[j])
        indptr.append(len(indices))
    return np.array(indptr), np.array(indices), np.array(data, dtype=a.dtype)


def _check(a, b, out="csr", threads=1):
    got = sf.jit(lambda x, y: x @ y, out=out, threads=threads)(a, b)
    indptr, indices, data = _gustavson(sp.csr_array(a), sp.csr_array(b))
    if out == "csc":  # a csc result holds the transposed product row by row
        got_t = sp.csr_array((got.data, got.indices, got.indptr),
                             shape=(got.shape[1], got.shape[0]))
        indptr, indices, data = _gustavson(sp.csr_array(b.T), sp.csr_array(a.T))
        got = got_t
    if out == "coo":
        np.testing.assert_array_equal(got.coords[0], np.repeat(np.arange(a.shape[0]),
                                                               np.diff(indptr)))
        got = sp.csr_array((got.data, got.coords[1], indptr), shape=got.shape)
    np.testing.assert_array_equal(got.indptr, indptr)
    np.testing.assert_array_equal(got.indices, indices)
    assert got.data.dtype == data.dtype
    np.testing.assert_array_equal(got.data.view(np.uint8), data.view(np.uint8))


def _values(rng, n, dtype):
    if np.dtype(dtype).kind == "f":  # mixed magnitudes: a sum's bits depend on its order
        return (rng.standard_normal(n) * 10.0 ** rng.integers(-8, 8, n)).astype(dtype)
    return rng.integers(-1000, 1000, n).astype(dtype)


def _random(rows, cols, per_row, seed, dtype="float64"):
    rng = np.random.default_rng(seed)
    r = np.repeat(np.arange(rows), per_row)
    c = rng.integers(0, cols, r.size)
    a = sp.csr_array((_values(rng, r.size, dtype), (r, c)), shape=(rows, cols))
    a.sum_duplicates()
    return a


@pytest.mark.parametrize("dtype", ["float64", "int64", "float32", "int32", "complex64",
                                   "complex128"])
def test_scattered_rows_take_the_buckets(dtype):
    # ~100 of 6000 columns per row: under a sixteenth, up to 2048, spread over the span
    a = _random(200, 300, 8, 1, dtype)
    b = _random(300, 6000, 12, 2, dtype)
    _check(a, b)


def test_short_rows_take_the_insertion_sort():
    # ~16 columns from 8 contributing rows: out of order, under 25
    a = _random(200, 300, 8, 17)
    b = _random(300, 6000, 2, 18)
    _check(a, b)


def test_rows_with_one_contributing_row_are_already_in_order():
    rng = np.random.default_rng(3)
    a = sp.csr_array((_values(rng, 150, "float64"), (np.arange(150), rng.integers(0, 300, 150))),
                     shape=(150, 300))
    b = _random(300, 6000, 12, 4)
    _check(a, b)


def test_columns_crowding_into_one_bucket_take_the_introsort():
    # row k of b: columns k, k + 50, ..., k + 250 (a narrow band, in increasing order) and
    # one far column; a's rows pick 12 rows of b, so a row's columns arrive out of order in
    # a band far narrower than the span the far column stretches it to
    cols = 20000
    rows_b = 50
    r = np.repeat(np.arange(rows_b), 7)
    c = (np.arange(rows_b)[:, None] + np.array([0, 50, 100, 150, 200, 250, 0])).ravel()
    c[6::7] = cols - 1 - np.arange(rows_b)
    rng = np.random.default_rng(5)
    b = sp.csr_array((_values(rng, r.size, "float64"), (r, c)), shape=(rows_b, cols))
    b.sum_duplicates()
    a = _random(60, rows_b, 12, 6)
    _check(a, b)


def test_rows_of_more_than_2048_columns_take_the_introsort():
    # a row touching ~3500 of 100000 columns (under a sixteenth, above 2048)
    a = _random(6, 200, 35, 7)
    b = _random(200, 100000, 100, 8)
    _check(a, b)


def test_dense_rows_scan_the_marks():
    a = _random(30, 100, 20, 9)
    b = _random(100, 400, 40, 10)
    _check(a, b)


@pytest.mark.parametrize("out", ["csc", "coo"])
def test_other_result_formats(out):
    a = _random(120, 300, 8, 11)
    b = _random(300, 5000, 12, 12)
    _check(a, b, out=out)


def test_two_threads_give_the_same_rows():
    a = _random(400, 300, 8, 13)
    b = _random(300, 6000, 12, 14)
    _check(a, b, threads=2)


@pytest.mark.parametrize("bad", [300, 2**31 - 1, -5])
def test_a_bad_index_ahead_is_reported_not_read(bad):
    # the located rows of the next entries are fetched ahead (a hint); an index out of range
    # there must not be read through, and the call reports it as before
    a = _random(40, 300, 8, 15)
    b = _random(300, 6000, 12, 16)
    a.indices[-3] = bad
    f = sf.jit(lambda x, y: x @ y, threads=1)
    with pytest.raises(sf.InvalidData, match=rf"a0: indices out of range \[0, 300\): "
                                              rf"found {bad}"):
        f(a, b)

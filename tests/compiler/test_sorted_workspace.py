"""The sorted workspace of sparse products (``compiler/lower/workspace.py``, issue #11): when the
result has far more columns than the product touches, a row's products are kept as
(column, arrival, value) and sorted, instead of three O(columns) arrays.

* With the switch forced on, every product gives **bit-identical** storage to the dense
  workspace's (the same additions in the same order), over csr/csc/coo operands, views,
  int and float dtypes, empty rows, and csr/csc/coo results.
* A product whose result has 10**10 columns (three dense workspace arrays would need
  ~220 GiB) runs, and equals scipy's product on the columns compressed.
* Bad storage is reported as with the dense workspace.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

import sparsefold as sf
from sparsefold.compiler import kernel as kernel_mod

pytestmark = pytest.mark.cython


def _matrix(rows, cols, nnz, seed, dtype="float64", fmt="csr"):
    """Uneven rows (the first ones longest, some empty), values of mixed magnitude: sums
    whose value depends on the order of addition."""
    rng = np.random.default_rng(seed)
    r = (rows * rng.random(nnz) ** 2).astype(np.int64)
    c = rng.integers(0, cols, nnz)
    if np.dtype(dtype).kind == "f":
        vals = (rng.standard_normal(nnz) * 10.0 ** rng.integers(-8, 8, nnz)).astype(dtype)
    else:
        vals = rng.integers(-1000, 1000, nnz).astype(dtype)
    a = sp.csr_array((vals, (r, c)), shape=(rows, cols))
    a.sum_duplicates()
    return a.asformat(fmt)


def _parts(x):
    if x.format == "coo":
        return {"row": x.coords[0], "col": x.coords[1], "data": x.data}
    return {"indptr": x.indptr, "indices": x.indices, "data": x.data}


def _same(got, want):
    assert got.format == want.format and got.shape == want.shape
    for name, arr in _parts(want).items():
        other = _parts(got)[name]
        assert other.dtype == arr.dtype, name
        np.testing.assert_array_equal(other, arr, err_msg=name)


def _sorted_ran(f) -> bool:
    """Did the jit function's last call build (and so run) a sorted-workspace variant?"""
    (entry,) = f._recent.values()
    k = entry.compiled if entry.compiled is not None else entry.kernel
    stages = [s for _, s in k.stages] + [k.final]
    return any(key[3:] == ("sorted",) for s in stages for key in s._variants)


@pytest.fixture
def force_sorted(monkeypatch):
    monkeypatch.setattr(kernel_mod, "SORTED_WORKSPACE_COLUMNS", -1)
    monkeypatch.setattr(kernel_mod, "SORTED_PER_ENTRY", 0)


PROGRAMS = {
    "matmul": (lambda a, b: a @ b, lambda a, b: a @ b),
    "vstack_matmul": (lambda a, b: sf.concat([a, a], axis=0) @ b,
                      lambda a, b: sp.vstack([a, a]) @ b),
    "strided_transposed": (lambda a, b: a[::2] @ b.T, lambda a, b: a[::2] @ b.T),
}


# every program, operand format, result format and dtype at least once (each case compiles
# two kernels: the full product would take minutes)
CASES = [
    ("matmul", ("csr", "csr"), "csr", "float64"),
    ("matmul", ("csc", "csr"), "csc", "int64"),
    ("matmul", ("coo", "csc"), "coo", "float64"),
    ("vstack_matmul", ("csr", "csr"), "csr", "int64"),
    ("vstack_matmul", ("coo", "csc"), "csc", "float64"),
    ("strided_transposed", ("csr", "csr"), "coo", "float64"),
    ("strided_transposed", ("csc", "coo"), "csr", "float64"),
]


@pytest.mark.parametrize("program, fmts, out, dtype", CASES)
def test_the_sorted_workspace_gives_the_dense_workspaces_storage(program, fmts, out, dtype,
                                                                  monkeypatch):
    fn, oracle = PROGRAMS[program]
    a = _matrix(40, 30, 300, 1, dtype, fmts[0])
    b = _matrix(30, 40, 300, 2, dtype, fmts[1])
    if program == "strided_transposed":
        b = _matrix(40, 30, 300, 2, dtype, fmts[1])
    dense_ws = sf.jit(fn, out=out)
    want = dense_ws(a, b)
    assert not _sorted_ran(dense_ws)
    monkeypatch.setattr(kernel_mod, "SORTED_WORKSPACE_COLUMNS", -1)
    monkeypatch.setattr(kernel_mod, "SORTED_PER_ENTRY", 0)
    sorted_ws = sf.jit(fn, out=out)
    got = sorted_ws(a, b)
    assert _sorted_ran(sorted_ws)
    _same(got, want)
    expect = oracle(sp.csr_array(a), sp.csr_array(b)).toarray()
    if np.dtype(dtype).kind == "f":
        np.testing.assert_allclose(got.toarray(), expect, rtol=1e-9, atol=1e-6)
    else:
        np.testing.assert_array_equal(got.toarray(), expect)


@pytest.mark.parametrize("shape", [(0, 5, 7), (6, 0, 7), (6, 5, 0), (6, 5, 7)])
def test_empty_operands_and_rows_without_products(shape, force_sorted):
    m, k, n = shape
    a = sp.csr_array((m, k))
    b = sp.csr_array((k, n))
    f = sf.jit(lambda a, b: a @ b)
    got = f(a, b)
    assert got.shape == (m, n) and got.nnz == 0
    np.testing.assert_array_equal(got.indptr, np.zeros(m + 1))


def test_a_bad_column_index_is_reported_as_with_the_dense_workspace(force_sorted):
    a = _matrix(8, 6, 20, 3)
    b = _matrix(6, 9, 20, 4)
    b.indices[3] = 9
    f = sf.jit(lambda a, b: a @ b)
    with pytest.raises(sf.InvalidData, match=r"a1: indices out of range \[0, 9\): found 9"):
        f(a, b)


def test_a_product_with_ten_billion_columns():
    """Three dense O(columns) workspace arrays would need ~220 GiB; the sorted workspace
    holds the longest row's products. Checked against scipy on the columns compressed."""
    rng = np.random.default_rng(0)
    a = _matrix(300, 300, 3000, 5)
    columns = np.sort(rng.choice(10**10, 2000, replace=False))
    small = _matrix(300, 2000, 4000, 6)
    b = sp.csr_array((small.data, columns[small.indices], small.indptr),
                     shape=(300, 10**10))
    f = sf.jit(lambda a, b: a @ b)
    got = f(a, b)
    assert _sorted_ran(f)
    want = (a @ small).tocsr()
    want.sort_indices()
    assert got.shape == (300, 10**10)
    np.testing.assert_array_equal(got.indptr, want.indptr)
    np.testing.assert_array_equal(got.indices, columns[want.indices])
    np.testing.assert_allclose(got.data, want.data, rtol=1e-12)

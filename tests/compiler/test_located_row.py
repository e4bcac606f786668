"""A broadcast sparse row met by intersection is located through a workspace, not merged
once per output row (``compiler/lower/lower_coiter.py``, ``_Located``): results against NumPy over
formats, reductions, guarded rows and thread counts; the workspace's fallback to the merge
when it cannot be allocated; and which kernels take it."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

import sparsefold as sf
from sparsefold.compiler.run import threads


def _m(shape, density, seed, fmt="csr"):
    return sp.random_array(shape, density=density, format=fmt, rng=seed)


def _row(n, density, seed):
    return _m((1, n), density, seed)


# (program, reference on dense arrays, out format or None)
PROGRAMS = {
    "a_times_row": (lambda a, v: a * v, lambda a, v: a * v, "csr"),
    "row_times_a": (lambda a, v: v * a, lambda a, v: v * a, "csr"),
    "a_times_row_coo_out": (lambda a, v: a * v, lambda a, v: a * v, "coo"),
    "a_times_row_dense_out": (lambda a, v: a * v, lambda a, v: a * v, "dense"),
    "row_sums": (lambda a, v: sf.sum(a * v, axis=1), lambda a, v: (a * v).sum(axis=1), None),
    "total": (lambda a, v: sf.sum(a * v), lambda a, v: (a * v).sum(), None),
    "row_max": (lambda a, v: sf.max(a * v, axis=1), lambda a, v: (a * v).max(axis=1), None),
    "strided_row": (lambda a, v: a[:, ::2] * v[:, 1::2],
                    lambda a, v: a[:, ::2] * v[:, 1::2], "csr"),
    "sliced_row": (lambda a, v: a[1:, 3:] * v[:, :-3], lambda a, v: a[1:, 3:] * v[:, :-3],
                   "csr"),
    "explicit_broadcast": (lambda a, v: a * sf.broadcast_to(v, a.shape),
                           lambda a, v: a * v, "csr"),
}


def _check(name, a, v):
    fn, ref, out = PROGRAMS[name]
    got = sf.jit(fn, out=out)(a, v)
    want = ref(a.toarray(), v.toarray())
    got = got.toarray() if sp.issparse(got) else np.asarray(got)
    np.testing.assert_allclose(got, np.broadcast_to(want, got.shape), rtol=1e-12)


@pytest.mark.parametrize("fmt", ["csr", "csc", "coo"])
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_a_broadcast_row_times_a_matrix_equals_numpy(name, fmt):
    _check(name, _m((40, 30), 0.3, 1, fmt), _row(30, 0.4, 2))


@pytest.mark.parametrize("case", ["empty_row", "full_row", "no_rows", "empty_matrix"])
def test_edge_cases_of_the_located_row(case):
    a, v = _m((40, 30), 0.3, 3), _row(30, 0.4, 4)
    if case == "empty_row":
        v = sp.csr_array((1, 30))
    elif case == "full_row":
        v = sp.csr_array(np.arange(1.0, 31.0)[None, :])
    elif case == "no_rows":
        a = sp.csr_array((0, 30))
    elif case == "empty_matrix":
        a = sp.csr_array((40, 30))
    for name in ("a_times_row", "row_sums", "strided_row"):
        _check(name, a, v)


def test_the_row_is_located_not_merged():
    a, v = _m((40, 30), 0.3, 1), _row(30, 0.4, 2)
    src = sf.show(lambda x, y: x * y, a, v, out="csr")
    assert "locate a1's broadcast row" in src
    assert "ws_at = <int64_t*>calloc(" in src
    # two operands stored in full (no broadcast): merged as before
    other = _m((40, 30), 0.3, 5)
    assert "s broadcast row: the position" not in sf.show(lambda x, y: x * y, a, other,
                                                         out="csr")
    # a union keeps the row's entries on every output row: merged (the output is that big)
    assert "s broadcast row: the position" not in sf.show(lambda x, y: x + y, a, v, out="csr")


def test_a_workspace_that_cannot_be_allocated_falls_back_to_the_merge():
    # 2**40 columns: the workspace would be 8 TiB, which calloc refuses here; the kernel then
    # merges the row on every output row, as it did before the workspace
    n = 2**40
    a = sp.csr_array((np.array([2.0, 3.0, 5.0]), np.array([7, n - 1, 12], dtype=np.int64),
                      np.array([0, 2, 2, 3], dtype=np.int64)), shape=(3, n))
    v = sp.csr_array((np.array([10.0, 100.0]), np.array([7, n - 1], dtype=np.int64),
                      np.array([0, 2], dtype=np.int64)), shape=(1, n))
    got = sf.jit(lambda x, y: x * y, out="csr")(a, v)
    assert got.shape == (3, n) and got.nnz == 2
    np.testing.assert_array_equal(got.indptr, [0, 2, 2, 2])
    np.testing.assert_array_equal(got.indices, [7, n - 1])
    np.testing.assert_array_equal(got.data, [20.0, 300.0])


@pytest.mark.parametrize("name", ["a_times_row", "row_sums", "a_times_row_dense_out"])
def test_located_rows_on_two_threads_equal_one_thread_bit_for_bit(name, monkeypatch):
    monkeypatch.setattr(threads, "PARALLEL_MIN_WORK", 0)  # small calls threaded as well
    fn, _, out = PROGRAMS[name]
    a, v = _m((300, 200), 0.05, 7), _row(200, 0.5, 8)
    one = sf.jit(fn, out=out, threads=1)(a, v)
    two = sf.jit(fn, out=out, threads=2)(a, v)
    if sp.issparse(one):
        for part in ("indptr", "indices", "data"):
            np.testing.assert_array_equal(getattr(one, part), getattr(two, part))
    else:
        np.testing.assert_array_equal(one, two)
    _check(name, a, v)


def test_a_bad_coordinate_in_the_located_row_is_reported():
    a = _m((5, 6), 0.5, 9)
    v = sp.csr_array((np.array([1.0, 2.0]), np.array([1, 9], dtype=np.int32),
                      np.array([0, 2], dtype=np.int32)), shape=(1, 6))
    with pytest.raises(sf.InvalidData, match="out of range"):
        sf.jit(lambda x, y: x * y, out="csr")(a, v)


def test_a_coo_operand_beside_a_broadcast_row_is_reordered_not_the_row_broadcast(
        monkeypatch):
    # COO rows cannot drive the row loop: the COO operand is reordered into an O(nnz) CSR
    # temporary, and the row is located; materializing the broadcast instead would take
    # rows x nnz(v) entries (here 20000 x 10000, far over the limit set below)
    monkeypatch.setenv("SPARSEFOLD_MEMORY_LIMIT", str(50 * 2**20))
    a = _m((20000, 20000), 5e-6, 10, "coo")
    v = _row(20000, 0.5, 11)
    f = sf.jit(lambda x, y: x * y, out="csr")
    got = f(a, v)
    (hit,) = f._recent.values()
    staged = [{i.name for i in stage.inputs} for _, stage in hit.kernel.stages]
    assert staged == [{"a0"}], staged
    want = sp.csr_array(a.multiply(v))
    assert abs(got - want).max() == 0 and got.nnz == want.nnz


CSC_PROGRAMS = {  # a CSC operand: the result is CSC, iterated column-major (flat)
    "row_times_a": (lambda a, v: v * a, lambda a, v: v * a),
    "a_times_row": (lambda a, v: a * v, lambda a, v: a * v),
    "a_times_sliced_row": (lambda a, v: a[:, 2:] * v[:, :-2], lambda a, v: a[:, 2:] * v[:, :-2]),
    "scaled": (lambda a, v: (a * v) * 2.0, lambda a, v: (a * v) * 2.0),
}


@pytest.mark.parametrize("case", ["plain", "empty_row", "no_rows"])
@pytest.mark.parametrize("name", sorted(CSC_PROGRAMS))
def test_a_broadcast_row_times_a_csc_matrix_is_located_by_column(name, case):
    fn, ref = CSC_PROGRAMS[name]
    a, v = _m((40, 30), 0.3, 12, "csc"), _row(30, 0.4, 13)
    if case == "empty_row":
        v = sp.csr_array((1, 30))
    elif case == "no_rows":
        a = sp.csc_array((0, 30))
    got = sf.jit(fn)(a, v)
    assert got.format == "csc"
    np.testing.assert_allclose(got.toarray(), ref(a.toarray(), v.toarray()), rtol=1e-12)
    if name in ("row_times_a", "a_times_row"):
        assert "locate a" in sf.show(fn, a, v) and "instead of walking" in sf.show(fn, a, v)


@pytest.mark.parametrize("fmt", ["csr", "coo"])
@pytest.mark.parametrize("case", ["plain", "empty_column", "no_columns"])
def test_a_broadcast_column_times_a_row_major_matrix_is_located_by_row(fmt, case):
    # the mirror image: a (n, 1) column stored as CSC, repeated along the columns of a CSR or
    # COO operand iterated row-major
    a, w = _m((40, 30), 0.3, 14, fmt), sp.csc_array(_m((40, 1), 0.4, 15))
    if case == "empty_column":
        w = sp.csc_array((40, 1))
    elif case == "no_columns":
        a = sp.csr_array((40, 0)) if fmt == "csr" else sp.coo_array((40, 0))
    for fn in (lambda x, y: x * y, lambda x, y: y * x, lambda x, y: sf.sum(x * y, axis=0)):
        got = sf.jit(fn)(a, w)
        want = fn(sf.asarray(a), sf.asarray(w)).interpret()
        got = got.toarray() if sp.issparse(got) else np.asarray(got)
        want = want.toarray() if sp.issparse(want) else np.asarray(want)
        np.testing.assert_allclose(got, want, rtol=1e-12)
    if case == "plain":
        assert "instead of walking" in sf.show(lambda x, y: x * y, a, w)


@pytest.mark.parametrize("line", ["coo_row", "csc_row", "csr_column", "coo_column"])
def test_a_line_stored_otherwise_is_converted_then_located(line):
    # a COO row or a CSR column would be walked along the repeated axis at every entry; the
    # planner converts it first (an O(nnz) stage of the line alone) and the kernel locates it
    a = _m((40, 30), 0.3, 16)
    if line.endswith("row"):
        v = _row(30, 0.4, 17).asformat(line.split("_")[0])
    else:
        v = _m((40, 1), 0.4, 18, line.split("_")[0])
    f = sf.jit(lambda x, y: x * y)
    got = f(a, v)
    np.testing.assert_allclose(got.toarray(), a.toarray() * v.toarray(), rtol=1e-12)
    (hit,) = f._recent.values()
    staged = [{i.name for i in stage.inputs} for _, stage in hit.kernel.stages]
    assert staged == [{"a1"}], staged  # the line, not the matrix, and not its broadcast
    assert "s broadcast row: the position" in sf.show(lambda x, y: x * y, a, v)

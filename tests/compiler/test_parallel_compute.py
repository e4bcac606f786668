"""Parallel compute kernels (``compiler/lower/lower_contract.py``): sparse x sparse products into
CSR/CSC count each row's length in parallel, prefix-sum the lengths into row starts and fill
every row in parallel, each thread in its own workspace slice; a dense product's rows run in
parallel. Results are bit-identical to one thread at every thread count, and a failed check
is reported exactly as one thread reports it (the first in row order)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

import sparsefold as sf
from sparsefold.compiler.run import threads

pytestmark = pytest.mark.cython

N = threads.PARALLEL_MIN_WORK
THREADS = (2, 3, 8)


def _matrix(nnz: int, rows: int, cols: int, seed: int, dtype="float64") -> sp.csr_matrix:
    """Random CSR with uneven rows (the first rows longest) and values of mixed magnitude
    (sums whose value depends on the order of addition)."""
    rng = np.random.default_rng(seed)
    r = (rows * rng.random(nnz) ** 2).astype(np.int64)
    c = rng.integers(0, cols, nnz)
    if np.dtype(dtype).kind == "f":
        vals = (rng.standard_normal(nnz) * 10.0 ** rng.integers(-8, 8, nnz)).astype(dtype)
    else:
        vals = rng.integers(-1000, 1000, nnz).astype(dtype)
    a = sp.csr_matrix((vals, (r, c)), shape=(rows, cols))
    a.sum_duplicates()
    return a


def _same(got, one) -> None:
    """Bit for bit: the same arrays, dtypes included."""
    if sp.issparse(one):
        assert got.format == one.format
        for part in ("indptr", "indices", "data"):
            assert getattr(got, part).dtype == getattr(one, part).dtype
            np.testing.assert_array_equal(getattr(got, part), getattr(one, part))
    else:
        assert got.dtype == one.dtype
        np.testing.assert_array_equal(got, one)


def _dense(x) -> np.ndarray:
    return x.toarray() if hasattr(x, "toarray") else np.asarray(x)


def _check_threads(fn, args, out, monkeypatch, *, exact=False, oracle=None):
    """One thread against scipy (``oracle``, default ``fn`` on the scipy arrays: the
    interpreter would densify the product's three-axis broadcast), then every thread count
    against one thread."""
    one = sf.jit(fn, out=out, threads=1)(*args)
    expect = _dense((oracle or fn)(*[sp.csr_matrix(x) for x in args]))
    if exact:
        np.testing.assert_array_equal(_dense(one), expect)
    else:
        np.testing.assert_allclose(_dense(one), expect, rtol=1e-9, atol=1e-6)
    for n in THREADS:
        _same(sf.jit(fn, out=out, threads=n)(*args), one)
    monkeypatch.setattr(threads, "PARALLEL_MIN_WORK", 0)  # small calls threaded as well
    for n in THREADS:
        _same(sf.jit(fn, out=out, threads=n)(*args), one)
    return one


@pytest.mark.parametrize("nnz", [N // 8, N - 7, N + 7, 4 * N])
@pytest.mark.parametrize("out", ["csr", "csc"])
def test_spgemm_is_bit_identical_to_one_thread(nnz, out, monkeypatch):
    a = _matrix(nnz, max(9, nnz // 30), 500, nnz)
    b = _matrix(2500, 500, 700, nnz + 1)
    f = lambda x, y: x @ y  # noqa: E731
    assert "prange(" in sf.show(f, a, b, out=out)
    _check_threads(f, (a, b), out, monkeypatch)


@pytest.mark.parametrize("dtype", ["int32", "int64", "float32"])
def test_spgemm_of_other_dtypes(dtype, monkeypatch):
    a, b = _matrix(N + 100, 1500, 300, 11, dtype), _matrix(3000, 300, 400, 12, dtype)
    _check_threads(lambda x, y: x @ y, (a, b), "csr", monkeypatch,
                   exact=np.dtype(dtype).kind == "i")


def test_spgemm_with_empty_rows_and_a_dense_row(monkeypatch):
    a = _matrix(N, 3000, 400, 13).tolil()
    a[5:900, :] = 0                  # a run of empty rows, across a thread's block start
    a[1700, :] = np.arange(1, 401)   # a full driver row: its product row is dense
    b = _matrix(4000, 400, 600, 14).tolil()
    b[7, :] = 1.5                    # a full located row
    a, b = sp.csr_matrix(a), sp.csr_matrix(b)
    one = _check_threads(lambda x, y: x @ y, (a, b), "csr", monkeypatch)
    assert np.diff(one.indptr)[5:900].max() == 0 and np.diff(one.indptr)[1700] == 600


@pytest.mark.parametrize("pid", ["csc_csr", "coo_coo", "vstack", "strided_transposed"])
def test_spgemm_of_other_formats_and_views(pid, monkeypatch):
    a, b = _matrix(N + 500, 2000, 300, 21), _matrix(3000, 300, 500, 22)
    c = _matrix(N // 2, 1000, 300, 23)
    cases = {
        "csc_csr": (lambda x, y: x @ y, (a.tocsc(), b)),
        "coo_coo": (lambda x, y: x @ y, (a.tocoo(), b.tocoo())),
        "vstack": (lambda x, y, z: sf.concat([x, y], axis=0) @ z, (a, c, b),
                   lambda x, y, z: sp.vstack([x, y]) @ z),
        "strided_transposed": (lambda x, y: x[::2] @ y.T, (a, _matrix(3000, 500, 300, 24))),
    }
    fn, args, *oracle = cases[pid]
    _check_threads(fn, args, "csr", monkeypatch, oracle=oracle[0] if oracle else None)


def test_a_dense_product_runs_its_rows_in_parallel(monkeypatch):
    a, b = _matrix(2 * N, 1500, 300, 31), _matrix(3000, 300, 200, 32)
    f = lambda x, y: x @ y  # noqa: E731
    assert "prange(" in sf.show(f, a, b, out="dense")
    _check_threads(f, (a, b), "dense", monkeypatch)


def test_one_workspace_slice_when_more_would_not_fit(monkeypatch):
    cols = 2_000_000
    a, b = _matrix(2 * N, 2000, 300, 41), _matrix(3000, 300, cols, 42)
    one = sf.jit(lambda x, y: x @ y, threads=1)(a, b)
    # one workspace slice (3 arrays of 8-byte items per column) and the output (~8 MiB) fit
    # under the limit; two slices do not
    monkeypatch.setenv("SPARSEFOLD_MEMORY_LIMIT", str(3 * 8 * cols + (16 << 20)))
    _same(sf.jit(lambda x, y: x @ y, threads=8)(a, b), one)


@pytest.mark.parametrize("which", ["driver", "located"])
def test_a_failed_check_is_the_first_in_row_order(which, monkeypatch):
    monkeypatch.setattr(threads, "PARALLEL_MIN_WORK", 0)
    a, b = _matrix(40_000, 2000, 300, 51), _matrix(3000, 300, 400, 52)
    m, bound = (a, 300) if which == "driver" else (b, 400)
    rows = m.shape[0]
    m.indices[m.indptr[rows - 10]] = 1_000_000  # a row in the last thread's block
    m.indices[m.indptr[rows // 3]] = 777        # a row in the first block of 2 or 3 threads
    m.has_canonical_format = True
    name = "a0" if which == "driver" else "a1"
    for n in (1, 2, 3, 8):
        with pytest.raises(sf.InvalidData, match=rf"^{name}: indices out of range "
                                                 rf"\[0, {bound}\): found 777$"):
            sf.jit(lambda x, y: x @ y, threads=n)(a, b)


def test_a_non_monotone_indptr_is_refused_before_the_symbolic_pass(monkeypatch):
    monkeypatch.setattr(threads, "PARALLEL_MIN_WORK", 0)
    a, b = _matrix(40_000, 2000, 300, 61), _matrix(3000, 300, 400, 62)
    a.indptr[1000] = a.indptr[-1] + 5000  # would send a row's loop past the end of indices
    a.has_canonical_format = True         # the runtime leaves the monotone check to kernels
    for n in (1, 2, 3):
        with pytest.raises(sf.InvalidData, match=r"^a0: indptr is not monotone "
                                                 r"non-decreasing: row 1000 spans "):
            sf.jit(lambda x, y: x @ y, threads=n)(a, b)


# --- row-driven co-iteration (compiler/lower/lower_coiter.py) ------------------------------------

COITER = [  # (id, function of three operands of one shape, output format)
    ("add3", lambda a, b, c: a + b + c, "csr"),
    ("mul", lambda a, b, c: a * b, "csr"),
    ("max_minus", lambda a, b, c: sf.maximum(a, b) - c, "csr"),
    ("strided_rows", lambda a, b, c: a[::2] + c[::2], "csr"),
    ("reversed_rows", lambda a, b, c: a[::-1] * 2.0 + b, "csr"),
    ("add3_dense", lambda a, b, c: a + b + c, "dense"),
    ("row_sums_of_product", lambda a, b, c: sf.sum(a * b + c, axis=1), "dense"),
    ("row_max_of_union", lambda a, b, c: sf.max(a + b, axis=1), "dense"),
]


def _interpreted(fn, args):
    return _dense(fn(*map(sf.asarray, args)).interpret())


@pytest.mark.parametrize("nnz", [N // 8, N - 7, N + 7, 4 * N])
@pytest.mark.parametrize("pid, fn, out", COITER, ids=[p[0] for p in COITER])
def test_coiteration_is_bit_identical_to_one_thread(pid, fn, out, nnz, monkeypatch):
    rows = max(9, nnz // 40)
    args = [_matrix(nnz // 3, rows, 500, nnz + s) for s in range(3)]
    args[1] = args[1] + args[0] * 0.5  # shared coordinates: the merge meets on some entries
    assert "prange(" in sf.show(fn, *args, out=out)
    _check_threads(fn, args, out, monkeypatch, oracle=lambda *_: _interpreted(fn, args))


@pytest.mark.parametrize("dtype", ["int32", "int64", "float32"])
def test_coiteration_of_other_dtypes(dtype, monkeypatch):
    args = [_matrix(N + 50, 1200, 300, 70 + s, dtype) for s in range(3)]
    fn = lambda a, b, c: a + b - c  # noqa: E731
    _check_threads(fn, args, "csr", monkeypatch, exact=True,
                   oracle=lambda *_: _interpreted(fn, args))


def test_coiteration_with_empty_rows_and_a_dense_row(monkeypatch):
    a, b = _matrix(N, 2000, 400, 81).tolil(), _matrix(N, 2000, 400, 82).tolil()
    a[10:700, :] = 0
    b[10:700, :] = 0
    a[1500, :] = np.arange(1, 401)
    a, b = sp.csr_matrix(a), sp.csr_matrix(b)
    fn = lambda x, y: x + y  # noqa: E731
    one = _check_threads(fn, (a, b), "csr", monkeypatch,
                         oracle=lambda *_: _interpreted(fn, (a, b)))
    assert np.diff(one.indptr)[10:700].max() == 0 and np.diff(one.indptr)[1500] == 400


@pytest.mark.parametrize("fmt", ["csc", "coo"])
def test_coiteration_of_other_formats(fmt, monkeypatch):
    a, b = _matrix(N + 900, 1500, 700, 91), _matrix(N, 1500, 700, 92)
    a, b = a.asformat(fmt), b.asformat(fmt)
    fn = lambda x, y: x - y * 3.0  # noqa: E731
    _check_threads(fn, (a, b), fmt if fmt == "csc" else "csr", monkeypatch,
                   oracle=lambda *_: _interpreted(fn, (a, b)))


def test_a_failed_check_in_a_coiteration_is_the_first_in_row_order(monkeypatch):
    monkeypatch.setattr(threads, "PARALLEL_MIN_WORK", 0)
    a, b = _matrix(40_000, 2000, 300, 95), _matrix(40_000, 2000, 300, 96)
    b.indices[b.indptr[1990]] = 1_000_000  # a row in the last thread's block
    b.indices[b.indptr[600]] = 333         # a row in the first block of 2 or 3 threads
    b.has_canonical_format = True
    for out in ("csr", "dense"):
        for n in (1, 2, 3, 8):
            with pytest.raises(sf.InvalidData, match=r"^a1: indices out of range "
                                                     r"\[0, 300\): found 333$"):
                sf.jit(lambda x, y: x + y, out=out, threads=n)(a, b)

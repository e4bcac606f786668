"""Parallel kernels (``compiler/emit/parallel.py``, ``compiler/run/threads.py``): a row loop that
runs on OpenMP threads gives results bit-identical to one thread, reports a failed check exactly
as one thread would (the first failure in row order), and is only generated where its
iterations write disjoint output cells; the thread count comes from ``sf.jit(threads=)``,
``$SPARSEFOLD_NUM_THREADS`` or the CPU count, and small calls stay on one thread."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

import sparsefold as sf
from sparsefold.compiler.emit.emit import render_function
from sparsefold.compiler.emit.loops import Assign, For, Function, Lit, Var
from sparsefold.compiler.run import build, threads
from sparsefold.spec.errors import InternalError

pytestmark = pytest.mark.cython

N = threads.PARALLEL_MIN_WORK


def _matrix(nnz: int, rows: int, cols: int, seed: int, dtype="float64") -> sp.csr_matrix:
    """Random CSR with uneven rows (sums whose value depends on the order of addition)."""
    rng = np.random.default_rng(seed)
    r = (rows * rng.random(nnz) ** 2).astype(np.int64)  # the first rows longest
    c = rng.integers(0, cols, nnz)
    vals = (rng.standard_normal(nnz) * 10.0 ** rng.integers(-8, 8, nnz)).astype(dtype)
    a = sp.csr_matrix((vals, (r, c)), shape=(rows, cols))
    a.sum_duplicates()
    return a


PROGRAMS = [  # (id, function, dense operand columns or None)
    ("spmv", lambda a, x: a @ x, 0),
    ("spmm", lambda a, x: a @ x, 5),
    ("row_sums", lambda a: sf.sum(a * 2.0, axis=1), None),
    ("row_max", lambda a: sf.max(a, axis=1), None),
]


@pytest.mark.parametrize("nnz", [N // 8, N - 7, N + 7, 4 * N])
@pytest.mark.parametrize("pid, fn, k", PROGRAMS, ids=[p[0] for p in PROGRAMS])
def test_threaded_results_equal_one_thread_bit_for_bit(pid, fn, k, nnz, monkeypatch):
    a = _matrix(nnz, rows=max(8, nnz // 40), cols=3000, seed=nnz)
    rng = np.random.default_rng(1)
    args = [a] if k is None else [a, rng.standard_normal((3000, k) if k else 3000)]
    one = sf.jit(fn, threads=1)(*args)
    expect = fn(*map(sf.asarray, args)).interpret()
    np.testing.assert_allclose(np.asarray(one), np.asarray(expect), rtol=1e-9, atol=1e-6)
    for n in (2, 3, 8):
        np.testing.assert_array_equal(sf.jit(fn, threads=n)(*args), one)
    monkeypatch.setattr(threads, "PARALLEL_MIN_WORK", 0)  # small calls threaded as well
    for n in (2, 3):
        got = sf.jit(fn, threads=n)(*args)
        assert got.dtype == one.dtype
        np.testing.assert_array_equal(got, one)


SHAPE_PROGRAMS = [  # (id, function of two CSR operands with equal rows): CSR results
    ("hstack", lambda a, b: sf.concat([a, b], axis=1)),
    ("hstack_mapped", lambda a, b: sf.concat([a * 2.5, b], axis=1)),
    ("rows_strided", lambda a, b: sf.concat([a[::3], b[::3]], axis=1)),
    ("rows_reversed", lambda a, b: a[::-1] * 3.0),
]


@pytest.mark.parametrize("nnz", [N // 8, N - 7, N + 7, 4 * N])
@pytest.mark.parametrize("pid, fn", SHAPE_PROGRAMS, ids=[p[0] for p in SHAPE_PROGRAMS])
def test_parallel_row_fill_is_bit_identical_to_one_thread(pid, fn, nnz, monkeypatch):
    rows = max(9, nnz // 40)
    a, b = _matrix(nnz // 2, rows, 700, nnz), _matrix(nnz // 2, rows, 300, nnz + 1)
    assert "prange(" in sf.show(fn, a, b)  # count, prefix sum, parallel fill
    one = sf.jit(fn, out="csr", threads=1)(a, b)
    expect = fn(sf.asarray(a), sf.asarray(b)).interpret()
    expect = expect.toarray() if hasattr(expect, "toarray") else np.asarray(expect)
    np.testing.assert_array_equal(one.toarray(), expect)
    for limit in (threads.PARALLEL_MIN_WORK, 0):  # at the measured threshold, and always
        monkeypatch.setattr(threads, "PARALLEL_MIN_WORK", limit)
        for n in (2, 3):
            got = sf.jit(fn, out="csr", threads=n)(a, b)
            for part in ("indptr", "indices", "data"):
                np.testing.assert_array_equal(getattr(got, part), getattr(one, part))
                assert getattr(got, part).dtype == getattr(one, part).dtype


@pytest.mark.parametrize("nnz", [N // 8, 4 * N])
@pytest.mark.parametrize("pid, fn", SHAPE_PROGRAMS[:3], ids=[p[0] for p in SHAPE_PROGRAMS[:3]])
def test_parallel_row_fill_into_coo_is_bit_identical_to_one_thread(pid, fn, nnz, monkeypatch):
    # a COO result's row starts go to a temporary (the result has no indptr); one thread
    # runs the serial loop, more run count, prefix sum and fill
    rows = max(9, nnz // 40)
    a, b = _matrix(nnz // 2, rows, 700, nnz), _matrix(nnz // 2, rows, 300, nnz + 1)
    src = sf.show(fn, a, b, out="coo")
    assert "prange(" in src and "row_at = <int64_t*>calloc(" in src
    one = sf.jit(fn, out="coo", threads=1)(a, b)
    expect = fn(sf.asarray(a), sf.asarray(b)).interpret()
    expect = expect.toarray() if hasattr(expect, "toarray") else np.asarray(expect)
    np.testing.assert_array_equal(one.toarray(), expect)
    monkeypatch.setattr(threads, "PARALLEL_MIN_WORK", 0)
    for n in (2, 3):
        got = sf.jit(fn, out="coo", threads=n)(a, b)
        for x, y in zip((*got.coords, got.data), (*one.coords, one.data)):
            np.testing.assert_array_equal(x, y)
            assert x.dtype == y.dtype


def test_a_row_fill_that_drops_entries_stays_serial():
    a = _matrix(500, 50, 40, 6)
    assert "prange(" not in sf.show(lambda m: m[:, 5:30], a)  # row lengths unknown up front


def _openmp_setting() -> tuple[int, bool]:
    """The calling thread's OpenMP setting as (threads, exact): what a kernel's parallel loop
    runs with (``omp_get_max_threads``; exact unless dynamic adjustment is on)."""
    import ctypes
    lib = ctypes.CDLL("libgomp.so.1")
    return lib.omp_get_max_threads(), not lib.omp_get_dynamic()


def _calls(f, *args):
    """``f(*args)`` through the checked path (the fast entry switched off), then through
    the module's fast entry; the OpenMP setting after each."""
    f(*args)
    (entry,) = f._recent.values()
    kernel = entry.compiled
    found = []
    for fast_ok in (False, True):
        threads.apply((7, True))  # neither path may leave a stale setting in place
        kernel._fast_ok = fast_ok
        f._fast_last = (None, -1)
        f(*args)
        found.append(_openmp_setting())
    kernel._fast_ok = True
    return found


@pytest.mark.skipif(threads.openmp_runtime() is None, reason="kernels built without OpenMP")
def test_threads_follow_the_request_and_the_threshold(monkeypatch):
    rng = np.random.default_rng(0)
    big, small = _matrix(2 * N, 500, 800, 1), _matrix(N // 4, 100, 800, 2)
    x = rng.standard_normal(800)
    spmv = lambda a, v: a @ v  # noqa: E731
    assert _calls(sf.jit(spmv, threads=3), big, x) == [(3, True)] * 2
    assert _calls(sf.jit(spmv, threads=3), small, x) == [(1, True)] * 2
    monkeypatch.setenv("SPARSEFOLD_NUM_THREADS", "5")
    assert _calls(sf.jit(spmv), big, x) == [(5, True)] * 2
    monkeypatch.delenv("SPARSEFOLD_NUM_THREADS")
    # an upper bound, lowered on a busy machine
    assert _calls(sf.jit(spmv), big, x) == [(threads.cpus(), False)] * 2
    monkeypatch.setattr(threads, "PARALLEL_MIN_WORK", 1)  # read on every call
    assert _calls(sf.jit(spmv, threads=2), small, x) == [(2, True)] * 2


@pytest.mark.skipif(threads.openmp_runtime() is None, reason="kernels built without OpenMP")
def test_the_fast_entry_leaves_a_bad_environment_count_to_the_checked_path(monkeypatch):
    big, x = _matrix(2 * N, 500, 800, 1), np.ones(800)
    f = sf.jit(lambda a, v: a @ v)
    f(big, x)
    (entry,) = f._recent.values()
    monkeypatch.setenv("SPARSEFOLD_NUM_THREADS", "many")
    assert entry.compiled.final.fast(big, x) is None
    assert entry.compiled.final.fast(big, x, threads=2) is not None  # jit's own count
    with pytest.raises(sf.IllFormedProgram, match="SPARSEFOLD_NUM_THREADS must be a positive"):
        f(big, x)


@pytest.mark.parametrize("bad", [0, -2, 1.5, True, "2"])
def test_a_thread_count_must_be_a_positive_integer(bad):
    with pytest.raises(sf.IllFormedProgram, match=r"threads must be a positive integer, "
                                                  rf"found {bad!r}"):
        sf.jit(lambda a: a, threads=bad)


@pytest.mark.parametrize("bad", ["0", "many", "-1"])
def test_a_bad_environment_thread_count_is_refused(bad, monkeypatch):
    monkeypatch.setenv("SPARSEFOLD_NUM_THREADS", bad)
    with pytest.raises(sf.IllFormedProgram, match="SPARSEFOLD_NUM_THREADS must be a positive "
                                                  f"integer, found '{bad}'"):
        threads.default_threads()


def test_only_loops_writing_disjoint_rows_are_parallel():
    a, x = _matrix(500, 50, 40, 3), np.ones(40)
    assert "prange(" in sf.show(lambda m, v: m @ v, a, x)
    assert "prange(" not in sf.show(lambda m, v: m.T @ v, a, np.ones(50))  # rows collide
    assert "prange(" not in sf.show(lambda m: sf.sum(m), a)                 # one cell
    assert "prange(" not in sf.show(lambda m: sf.sum(m, axis=0), a)         # column sums
    got = sf.jit(lambda m, v: m.T @ v, threads=2)(a, np.ones(50))
    np.testing.assert_allclose(got, a.T @ np.ones(50))


@pytest.mark.parametrize("index_dtype", ["int32", "int64"])
def test_a_failed_check_in_a_parallel_loop_is_the_first_in_row_order(index_dtype,
                                                                     monkeypatch):
    monkeypatch.setattr(threads, "PARALLEL_MIN_WORK", 0)
    a = _matrix(40_000, 2000, 300, 4)
    a.indices = a.indices.astype(index_dtype)
    a.indptr = a.indptr.astype(index_dtype)
    x = np.ones(300)
    late, early = a.indptr[1900], a.indptr[700]
    a.indices[late] = 1_000_000   # a row in the last thread's block
    a.indices[early] = 777        # a row in the first block of two or three threads
    a.has_canonical_format = True
    for n in (1, 2, 3):
        with pytest.raises(sf.InvalidData, match=r"^a0: indices out of range \[0, 300\): "
                                                 r"found 777$"):
            sf.jit(lambda m, v: m @ v, threads=n)(a, x)


def test_a_failed_check_in_a_parallel_row_fill_is_the_first_in_row_order(monkeypatch):
    monkeypatch.setattr(threads, "PARALLEL_MIN_WORK", 0)
    a, b = _matrix(40_000, 2000, 300, 7), _matrix(20_000, 2000, 100, 8)
    a.indices[a.indptr[1900]] = 1_000_000
    a.indices[a.indptr[700]] = 555
    a.has_canonical_format = True
    for n in (1, 2, 3):
        with pytest.raises(sf.InvalidData, match=r"^a0: indices out of range \[0, 300\): "
                                                 r"found 555$"):
            sf.jit(lambda x, y: sf.concat([x, y], axis=1), threads=n)(a, b)


def _function(body) -> Function:
    return Function("run", (), tuple(body))


def test_the_printer_refuses_a_parallel_loop_that_carries_a_variable():
    i, acc = Var("i"), Var("acc", "double")
    carried = For(i, Lit("0"), Lit("10"), (Assign(acc, acc + Lit("1.0", "double")),), True)
    with pytest.raises(InternalError, match="acc may be read before the iteration assigns"):
        render_function(_function([Assign(acc, Lit("0.0", "double")), carried]))
    private = For(i, Lit("0"), Lit("10"), (Assign(acc, Lit("1.0", "double")),), True)
    with pytest.raises(InternalError, match="acc assigned in it and read after"):
        render_function(Function("run", (), (private,), (acc,)))
    text = "\n".join(render_function(_function([private])))
    assert "sf_hi = 10\n" in text
    assert "for i in prange(sf_hi, num_threads=sf_nt, schedule='static'):" in text


def test_the_cache_key_covers_the_openmp_flags(monkeypatch):
    on = build.kernel_key("x = 1\n")
    assert "-fopenmp" in build.environment_fields()["cflags"]
    monkeypatch.setenv("SPARSEFOLD_OPENMP", "0")
    assert "-fopenmp" not in build.active_cflags()
    assert build.kernel_key("x = 1\n") != on


def test_a_kernel_built_without_openmp_runs_its_parallel_loop_serially(monkeypatch):
    monkeypatch.setenv("SPARSEFOLD_OPENMP", "0")
    build.clear_memory_cache()
    a = _matrix(3 * N, 300, 500, 5)

    def fn(m):  # a program no other test compiles: its kernel is built here, without OpenMP
        return sf.sum(m * 3.25, axis=1)
    assert "prange(" in sf.show(fn, a)
    before = build.stats()["builds"] + build.stats()["disk_hits"]
    try:
        got = sf.jit(fn, threads=2)(a)
        assert build.stats()["builds"] + build.stats()["disk_hits"] == before + 1
    finally:
        build.clear_memory_cache()
    np.testing.assert_allclose(got, np.asarray(fn(sf.asarray(a)).interpret()), rtol=1e-12)

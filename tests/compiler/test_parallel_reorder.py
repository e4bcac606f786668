"""Parallel count-and-scatter (``outputs.ScatterOut.split_rows``, issue #13 §3): a transpose
or a csc-to-csr reorder of one compressed leaf runs both passes over blocks of its rows, one
block per thread, each counting into and placing from its own row of counts. Results are
bit-identical to one thread at every thread count; a bad index is reported as one thread
reports it (the first in row order); with more counts than entries, one block is used."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

import sparsefold as sf
from sparsefold.compiler.run import threads

pytestmark = pytest.mark.cython

N = threads.PARALLEL_MIN_WORK
THREADS = (1, 2, 3, 8)


def _matrix(nnz, rows, cols, seed, dtype="float64", fmt="csr"):
    rng = np.random.default_rng(seed)
    r = (rows * rng.random(nnz) ** 2).astype(np.int64)  # uneven rows, some empty
    c = rng.integers(0, cols, nnz)
    vals = rng.standard_normal(nnz).astype(dtype)
    a = sp.csr_array((vals, (r, c)), shape=(rows, cols))
    a.sum_duplicates()
    return a.asformat(fmt)


def _same(got, want):
    assert got.format == want.format and got.shape == want.shape
    for part in ("indptr", "indices", "data"):
        assert getattr(got, part).dtype == getattr(want, part).dtype
        np.testing.assert_array_equal(getattr(got, part), getattr(want, part))


PROGRAMS = {
    "transpose": (lambda a: a.T, "csr", lambda a: a.T.tocsr()),
    "csc_to_csr": (lambda a: a, "csr", lambda a: a.tocsr()),
    "sub_transpose": (lambda a: a - a.T, "csr", lambda a: (a - a.T).tocsr()),
}


@pytest.mark.parametrize("program", sorted(PROGRAMS))
@pytest.mark.parametrize("nnz", [N // 4, N + 5, 4 * N])
def test_bit_identical_to_one_thread(program, nnz, monkeypatch):
    fn, out, oracle = PROGRAMS[program]
    side = 700 if program == "sub_transpose" else None
    a = _matrix(nnz, side or 1500, side or 900, nnz,
                fmt="csc" if program == "csc_to_csr" else "csr")
    src = sf.show(fn, a, out=out)
    assert "prange(" in src and "calloc(" in src
    one = sf.jit(fn, out=out, threads=1)(a)
    want = oracle(sp.csr_array(a) if program != "csc_to_csr" else a)
    want.sort_indices()
    np.testing.assert_allclose(one.toarray(), want.toarray())
    for force_small in (False, True):
        if force_small:
            monkeypatch.setattr(threads, "PARALLEL_MIN_WORK", 0)
        for n in THREADS:
            _same(sf.jit(fn, out=out, threads=n)(a), one)


def test_more_blocks_than_rows_and_empty_blocks(monkeypatch):
    monkeypatch.setattr(threads, "PARALLEL_MIN_WORK", 0)
    a = _matrix(40, 3, 5, 1)  # 3 source rows, 8 threads: most blocks empty
    one = sf.jit(lambda x: x.T, out="csr", threads=1)(a)
    for n in THREADS:
        _same(sf.jit(lambda x: x.T, out="csr", threads=n)(a), one)


def test_one_block_when_the_counts_would_outnumber_the_entries(monkeypatch):
    """A wide, nearly empty matrix: 2 blocks x 10**6 output rows of counts would exceed its
    10 entries; the kernel uses one block (and the runtime's row array), same result."""
    monkeypatch.setattr(threads, "PARALLEL_MIN_WORK", 0)
    a = sp.csr_array((np.arange(1.0, 11.0), (np.arange(10) * 3, np.arange(10) * 99_999)),
                     shape=(40, 1_000_000))
    one = sf.jit(lambda x: x.T, out="csr", threads=1)(a)
    _same(sf.jit(lambda x: x.T, out="csr", threads=2)(a), one)
    np.testing.assert_array_equal(one.toarray(), a.toarray().T)


@pytest.mark.parametrize("n", THREADS)
def test_a_bad_index_is_the_first_in_row_order(n, monkeypatch):
    monkeypatch.setattr(threads, "PARALLEL_MIN_WORK", 0)
    a = _matrix(8 * N, 4000, 900, 7)
    rows = a.shape[0]
    a.indices[a.indptr[rows - 5]] = 5_000    # a row in the last block
    a.indices[a.indptr[rows // 3]] = 901     # a row in the first block of 2 or 3 threads
    a.has_canonical_format = True
    with pytest.raises(sf.InvalidData, match=r"a0: indices out of range \[0, 900\): "
                                             r"found 901"):
        sf.jit(lambda x: x.T, out="csr", threads=n)(a)

"""Rows read in blocks (``compiler/lower/row_blocks.py``): a CSR/CSC operand read whole into
a dense result whose rows are its rows (SpMV, SpMM, row sums of CSR; dense @ CSC) is checked
one block of rows at a time, and a block whose indices are all in range is read with no test. A
block with a bad index runs its rows checked, row by row, as the unblocked kernel does: the
error is the first bad index in storage order, with the same message, at every thread count.
Blocks are whole rows (a block never splits a row), so the edges tested here are the first
and last entry of a block, an empty block, a row longer than a block, and the first and last
entry of the matrix. The programs that keep a check per row (CSR dense @ sparse, CSC SpMV)
run the same tests."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

import sparsefold as sf
from sparsefold.compiler.lower.row_blocks import BLOCK_ENTRIES, LONG_ROWS
from sparsefold.compiler.run import threads

pytestmark = pytest.mark.cython

PROGRAMS = [  # (id, function, dense operand: "right" n x k, "left" k x n, None)
    ("spmv", lambda a, x: a @ x, ("right", 0)),
    ("spmm", lambda a, x: a @ x, ("right", 4)),
    ("dense_at_sparse", lambda x, a: x @ a, ("left", 3)),
    ("row_sums", lambda a: sf.sum(a * 2.0, axis=1), None),
]
IDS = [p[0] for p in PROGRAMS]


def _block_starts(m) -> list[int]:
    """The first stored row (column, for CSC) of each block, as the kernel computes them."""
    rows = len(m.indptr) - 1
    stored = int(m.indptr[-1] - m.indptr[0])
    span = rows // (stored // BLOCK_ENTRIES + 1) + 1
    return list(range(0, rows, span))


def _matrix(fmt: str, seed: int = 0, rows: int = 900) -> sp.csr_matrix | sp.csc_matrix:
    """Stored rows (columns, for CSC) in 5 blocks: uneven rows, the first ones longest, row 5
    alone longer than a whole block, and every row of the fourth block empty. 900 rows: ~9
    entries per row (blocks checked whole); 200: ~41 (each row checked, ``LONG_ROWS``)."""
    rng = np.random.default_rng(seed)
    inner, nnz, long = 20000, 4 * BLOCK_ENTRIES, BLOCK_ENTRIES + 300
    span = rows // (nnz // BLOCK_ENTRIES + 1) + 1
    weight = 1.0 / np.arange(1, rows + 1)
    weight[3 * span:4 * span] = 0.0
    lengths = rng.multinomial(nnz - long, weight / weight.sum())
    lengths[5] += long
    indices = np.concatenate([np.sort(rng.choice(inner, n, replace=False)) for n in lengths])
    indptr = np.concatenate([[0], np.cumsum(lengths)])
    data = rng.standard_normal(nnz) * 10.0 ** rng.integers(-6, 6, nnz)
    if fmt == "csr":
        a = sp.csr_matrix((data, indices, indptr), shape=(rows, inner))
    else:
        a = sp.csc_matrix((data, indices, indptr), shape=(inner, rows))
    assert _block_starts(a) == list(range(0, rows, span)) and len(_block_starts(a)) == 5
    assert a.indptr[3 * span] == a.indptr[4 * span]  # the edges the tests aim at are the kernel's
    assert (nnz // LONG_ROWS >= rows) == (rows == 200)
    return a


def _args(program, a):
    dense = program[2]
    if dense is None:
        return [a]
    rng = np.random.default_rng(1)
    side, k = dense
    if side == "right":
        return [a, rng.standard_normal((a.shape[1], k)) if k else rng.standard_normal(a.shape[1])]
    return [rng.standard_normal((k, a.shape[0])), a]


def _blocked(fn, args) -> bool:
    return "checked in one pass" in sf.show(fn, *args)


@pytest.mark.parametrize("rows", [900, 200])
@pytest.mark.parametrize("fmt", ["csr", "csc"])
@pytest.mark.parametrize("program", PROGRAMS, ids=IDS)
def test_results_over_block_edges_equal_scipy_and_one_thread(program, fmt, rows, monkeypatch):
    pid, fn, _dense = program
    a = _matrix(fmt, rows=rows)
    args = _args(program, a)
    # blocks where each stored row writes output cells of its own (not where entries scatter)
    assert _blocked(fn, args) == ((fmt == "csr") != (pid == "dense_at_sparse"))
    one = np.asarray(sf.jit(fn, threads=1)(*args))
    expect = fn(*[sp.csr_array(x) if sp.issparse(x) else x for x in args])
    expect = expect.toarray() if sp.issparse(expect) else np.asarray(expect)
    np.testing.assert_allclose(one, expect.reshape(one.shape), rtol=1e-9, atol=1e-6)
    monkeypatch.setattr(threads, "PARALLEL_MIN_WORK", 0)
    for n in (2, 3):
        np.testing.assert_array_equal(np.asarray(sf.jit(fn, threads=n)(*args)), one)


def _edges(a) -> dict[str, int]:
    """Positions in ``indices`` at the block edges."""
    starts = _block_starts(a)
    p = a.indptr
    return {
        "first_entry": 0,
        "last_entry": a.nnz - 1,
        "first_of_second_block": int(p[starts[1]]),
        "last_of_first_block": int(p[starts[1]]) - 1,
        "first_after_empty_block": int(p[starts[-1]]),
        "last_before_empty_block": int(p[starts[-2]]) - 1,
    }


@pytest.mark.parametrize("edge", ["first_entry", "last_entry", "first_of_second_block",
                                  "last_of_first_block", "first_after_empty_block",
                                  "last_before_empty_block"])
@pytest.mark.parametrize("rows", [900, 200])
@pytest.mark.parametrize("fmt", ["csr", "csc"])
@pytest.mark.parametrize("program", PROGRAMS, ids=IDS)
def test_a_bad_index_at_a_block_edge_is_reported_as_before(program, fmt, rows, edge,
                                                          monkeypatch):
    _pid, fn, _dense = program
    a = _matrix(fmt, seed=2, rows=rows)
    at = _edges(a)[edge]
    bad = a.copy()
    bad.indices = bad.indices.copy()
    bound = a.shape[1] if fmt == "csr" else a.shape[0]
    bad.indices[at] = bound + 3 if at % 2 else -7
    found = bad.indices[at]
    if at + 1 < a.nnz:  # a later bad index, in the same block or the next: not the one named
        bad.indices[min(at + 1 + BLOCK_ENTRIES // 2, a.nnz - 1)] = 1_000_000
    bad.has_canonical_format = True
    args = _args(program, bad)
    name = "a0" if program[2] is None or program[2][0] == "right" else "a1"
    message = rf"^{name}: indices out of range \[0, {bound}\): found {found}$"
    with pytest.raises(sf.InvalidData, match=message):
        sf.jit(fn, threads=1)(*args)
    monkeypatch.setattr(threads, "PARALLEL_MIN_WORK", 0)
    for n in (2, 3):
        with pytest.raises(sf.InvalidData, match=message):
            sf.jit(fn, threads=n)(*args)


@pytest.mark.parametrize("program", PROGRAMS, ids=IDS)
def test_no_entries_and_one_row(program):
    _pid, fn, _dense = program
    for a in (sp.csr_matrix((40, 30)), sp.csr_matrix(np.arange(1.0, 31.0)[None, :]),
              sp.csr_matrix(np.arange(1.0, 31.0)[:, None])):
        args = _args(program, a)
        got = np.asarray(sf.jit(fn, threads=1)(*args))
        expect = fn(*[sp.csr_array(x) if sp.issparse(x) else x for x in args])
        expect = expect.toarray() if sp.issparse(expect) else np.asarray(expect)
        np.testing.assert_allclose(got, expect.reshape(got.shape))

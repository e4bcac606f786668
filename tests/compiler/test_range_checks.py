"""Coordinate range checks done inside the kernels (``compiler/checks.py``), and the
``indptr`` checks that stay in the runtime.

Every loop shape that reads stored coordinates — leaf loops, row-driven loops, bulk copies
(vstack), row segments (hstack), two-operand merges (row and cursor), the piece merge (COO
hstack) and dense outputs (matvec) — must reject a coordinate outside its axis with
InvalidData naming the array, for either operand, both index widths, too large and negative.
An entry a kernel never reads (a row a strided slice skips) cannot reach memory or the
result, and is not an error.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

import sparsefold as sf

sys.path.insert(0, str(Path(__file__).parent))
from kernel_checks import check_result, make_input, with_index_dtype  # noqa: E402

PROGRAMS = [  # (id, function, output format, input format, operands)
    ("transpose", lambda a: a.T, "csr", "csr", 1),
    ("times2_csc_out", lambda a: a * 2, "csc", "csr", 1),
    ("vstack_csr", lambda a, b: sf.concat([a, b], axis=0), "csr", "csr", 2),
    ("vstack_coo", lambda a, b: sf.concat([a, b], axis=0), "coo", "coo", 2),
    ("hstack_csr", lambda a, b: sf.concat([a, b], axis=1), "csr", "csr", 2),
    ("hstack_csr_mapped", lambda a, b: sf.concat([a * 2, b], axis=1), "csr", "csr", 2),
    ("hstack_coo_merge", lambda a, b: sf.concat([a, b], axis=1), "coo", "coo", 2),
    ("multiply_rows", lambda a, b: a * b, "csr", "csr", 2),
    ("multiply_coo", lambda a, b: a * b, "coo", "coo", 2),
    ("add_union", lambda a, b: a + b, "csr", "csr", 2),
    ("row_sums_dense_out", lambda a: sf.sum(a * 2.0, axis=1), "dense", "csr", 1),
    ("sum_axis0", lambda a: sf.sum(a, axis=0), "dense", "csr", 1),
]
CASES = [pytest.param(fn, out, fmt, arity, operand, id=f"{pid}-a{operand}")
         for pid, fn, out, fmt, arity in PROGRAMS for operand in range(arity)]


def _inputs(fmt: str, index_dtype: str):
    a = make_input((6, 5), fmt, "float64", index_dtype, seed=3, density=0.5)
    b = make_input((6, 5), fmt, "float64", index_dtype, seed=4, density=0.5)
    return [a, b]


def _corrupt(x, value):
    """A copy of ``x`` whose last stored inner coordinate is ``value``."""
    x = x.copy()
    if x.format == "coo":
        c = x.coords[1].copy()
        c[-1] = value
        x.coords = (x.coords[0], c)
    else:
        x.indices[-1] = value
    x.has_canonical_format = True  # a stale flag must not skip the range check
    return x


@pytest.mark.parametrize("index_dtype", ["int32", "int64"])
@pytest.mark.parametrize("bad", [5, 1_000_000, -1])
@pytest.mark.parametrize("fn, out, fmt, arity, operand", CASES)
def test_out_of_range_coordinate_is_rejected(fn, out, fmt, arity, operand, bad, index_dtype):
    args = _inputs(fmt, index_dtype)[:arity]
    f = sf.jit(fn, out=out)
    check_result(f(*args), fn(*map(sf.asarray, args)).interpret(), out)  # the valid call
    args[operand] = _corrupt(args[operand], bad)
    what = r"coords\[1\]" if fmt == "coo" else "indices"
    with pytest.raises(sf.InvalidData, match=rf"a{operand}: {what} out of range \[0, 5\): "
                                             rf"found {bad}"):
        f(*args)


def test_a_row_the_slice_skips_is_not_read():
    a = make_input((6, 5), "csr", "float64", seed=3, density=0.8)
    f = sf.jit(lambda x: x[::2] * 3, out="csr")
    skipped = a.copy()
    lo, hi = skipped.indptr[1], skipped.indptr[2]  # row 1: not in x[::2]
    assert hi > lo
    skipped.indices[lo] = 99
    check_result(f(skipped), a.toarray()[::2] * 3, "csr")
    kept = a.copy()
    kept.indices[kept.indptr[2]] = 99  # row 2 is kept
    with pytest.raises(sf.InvalidData, match=r"a0: indices out of range \[0, 5\): found 99"):
        f(kept)


def test_int32_indices_on_an_axis_longer_than_int32():
    """The copy loops compare in the index array's own width; a limit of 2**31 or more
    must still accept every non-negative int32 and reject negative ones."""
    n = 3_000_000_000
    a = sp.csr_array((np.array([1.0, 2.0]), np.array([0, 2**31 - 1], dtype=np.int64),
                      np.array([0, 1, 2], dtype=np.int64)), shape=(2, n))
    a = with_index_dtype(a, "int32")
    b = with_index_dtype(sp.csr_array(np.array([[0.0, 4.0], [5.0, 0.0]])), "int32")
    f = sf.jit(lambda x, y: sf.concat([x, y], axis=1), out="csr")
    got = f(a, b)
    np.testing.assert_array_equal(got.indices, [0, n + 1, 2**31 - 1, n])
    np.testing.assert_array_equal(got.data, [1.0, 4.0, 2.0, 5.0])
    bad = a.copy()
    bad.indices[1] = -7
    with pytest.raises(sf.InvalidData, match="a0: indices out of range"):
        f(bad, b)


def _bad_indptr(x, how: str):
    """A copy of CSR ``x`` with a malformed ``indptr`` whose first and last entries are still
    right, flagged canonical: a stale flag must not skip the monotonicity check, which
    bounds how many entries every kernel reads and writes."""
    x = x.copy()
    p = x.indptr
    mid = len(p) // 2
    if how == "swapped":
        assert p[mid - 1] < p[mid + 1]
        p[mid], p[mid + 1] = p[mid + 1], p[mid - 1]
    elif how == "negative":
        p[mid] = -3
    else:  # past the stored entries
        p[mid] = p[-1] + 1000
    x.has_canonical_format = True
    return x


CSR_PROGRAMS = [p for p in PROGRAMS if p[3] == "csr"]
ROW_CASES = [pytest.param(fn, out, arity, operand, id=f"{pid}-a{operand}")
             for pid, fn, out, fmt, arity in CSR_PROGRAMS for operand in range(arity)]


@pytest.mark.parametrize("how", ["swapped", "negative", "past_end"])
@pytest.mark.parametrize("fn, out, arity, operand", ROW_CASES)
def test_malformed_indptr_is_rejected(fn, out, arity, operand, how):
    args = [make_input((8, 5), "csr", "float64", seed=s, density=0.6) for s in (3, 4)][:arity]
    f = sf.jit(fn, out=out)
    check_result(f(*args), fn(*map(sf.asarray, args)).interpret(), out)
    args[operand] = _bad_indptr(args[operand], how)
    with pytest.raises(sf.InvalidData, match=rf"a{operand}: indptr is not monotone"):
        f(*args)

"""The namespace's functions on a 10^6 x 10^6 array with 10^6 stored entries (run by
``test_no_densify.py`` in a child process with a 6 GiB address-space limit).

Held densely the array would take 8 TB, so any function that densified it — allocating
its dense values, or any 10^12-element intermediate — fails with ``MemoryError`` under the
limit (or without it), and one that iterated its 10^12 coordinates densely would not
finish within the parent's time limit. Each function whose result is sparse must return a
sparse container with no more stored entries than the bound given; each whose result is
small must return it. Values are checked against scipy.sparse's own operations on the same
array. Prints one line per function, ``ok <name> <nnz> <seconds>``, and exits 0 when all
passed. ``python huge_sparse.py K N`` runs every N-th case from the K-th.
"""

from __future__ import annotations

import resource
import sys
import time

import numpy as np
import scipy.sparse as sp

N = 10 ** 6
NNZ = 10 ** 6
LIMIT = 6 << 30


def matrix() -> sp.csr_array:
    rng = np.random.default_rng(12)
    rows = rng.integers(0, N, NNZ)
    cols = rng.integers(0, N, NNZ)
    vals = rng.normal(size=NNZ)
    a = sp.coo_array((vals, (rows, cols)), shape=(N, N)).tocsr()
    a.sum_duplicates()
    return a


def cases(xp, A):
    """(name, function of the namespace array, check of the result, stored-entry bound)."""
    x = xp.asarray(A)
    nnz = A.nnz

    def same(want):
        def check(got):
            w = sp.csr_array(want)
            g = sp.csr_array(got)
            diff = abs(g - w)
            assert g.shape == w.shape and (diff.max() if diff.nnz else 0) <= 1e-9, "values"
        return check

    def value(want, tol=1e-6):
        def check(got):
            g = np.asarray(got)
            assert np.allclose(g, want, rtol=tol, atol=tol), (g, want)
        return check

    yield "asarray", lambda: x, same(A), nnz
    yield "astype", lambda: xp.astype(x, xp.float32), same(A.astype(np.float32)), nnz
    yield "multiply by 3", lambda: xp.multiply(x, 3.0), same(A * 3.0), nnz
    yield "negative", lambda: xp.negative(x), same(-A), nnz
    yield "abs", lambda: xp.abs(x), same(abs(A)), nnz
    yield "sin", lambda: xp.sin(x), same(A.sin()), nnz
    yield "square", lambda: xp.square(x), same(A.power(2)), nnz
    yield "x * x", lambda: x * x, same(A.multiply(A)), nnz
    yield "x + x", lambda: x + x, same(A + A), nnz
    yield "where(x > 0, x, 0)", lambda: xp.where(x > 0, x, 0.0), same(A.multiply(A > 0)), nnz
    yield "clip", lambda: xp.clip(x, -1.0, 1.0), same(A.minimum(1.0).maximum(-1.0)), nnz
    yield "tril", lambda: xp.tril(x), same(sp.tril(A)), nnz
    yield "triu", lambda: xp.triu(x, k=1), same(sp.triu(A, k=1)), nnz
    yield "matrix_transpose", lambda: xp.matrix_transpose(x), same(A.T), nnz
    yield "permute_dims", lambda: xp.permute_dims(x, (1, 0)), same(A.T), nnz
    yield "flip", lambda: xp.flip(x, axis=0), same(A[::-1]), nnz
    yield "x[::2, 10:]", lambda: x[::2, 10:], same(A[::2, 10:]), nnz
    yield "concat", lambda: xp.concat([x, x], axis=1), same(sp.hstack([A, A])), 2 * nnz
    yield "reshape", lambda: xp.reshape(x, (N // 2, 2 * N)), \
        same(A.reshape((N // 2, 2 * N))), nnz
    yield "expand_dims", lambda: xp.expand_dims(x, axis=0)[0], same(A), nnz
    yield "zeros", lambda: xp.zeros((N, N)), same(sp.csr_array((N, N))), 0
    yield "eye", lambda: xp.eye(N), same(sp.eye_array(N)), N
    yield "setitem", _setitem(xp, A), same(_setitem_want(A)), nnz
    yield "sort", lambda: xp.sort(x, axis=1), _sorted_rows(A), nnz
    # small results: computed from the stored entries only
    yield "sum", lambda: xp.sum(x), value(A.sum()), None
    yield "sum(axis=1)", lambda: xp.sum(x, axis=1)[:5], value(A.sum(axis=1)[:5]), None
    yield "max", lambda: xp.max(x), value(max(A.max(), 0.0)), None
    yield "count_nonzero", lambda: xp.count_nonzero(x), value(A.count_nonzero()), None
    yield "any", lambda: xp.any(x), value(True), None
    yield "matrix_norm", lambda: xp.linalg.matrix_norm(x), \
        value(np.sqrt((A.data ** 2).sum())), None
    yield "trace", lambda: xp.linalg.trace(x), value(A.diagonal().sum()), None
    yield "unique_values", lambda: xp.unique_values(x)[:3], \
        value(np.unique(np.r_[A.data, 0.0])[:3]), None
    yield "nonzero", lambda: xp.nonzero(x)[0][:3], value(_first_rows(A)), None


def _setitem(xp, A):
    def run():
        y = xp.asarray(A)
        y[1000:2000, :] = 0.0  # a region of a sparse array set to zero stays sparse
        return y
    return run


def _setitem_want(A):
    keep = np.ones(N)
    keep[1000:2000] = 0.0  # rows 1000..1999 zeroed: a diagonal scaling
    B = sp.csr_array(sp.diags_array(keep) @ A)
    B.eliminate_zeros()
    return B


def _sorted_rows(A):
    def check(got):
        g = sp.csr_array(got)
        assert g.shape == A.shape
        assert g.nnz == np.count_nonzero(A.data), g.nnz
        for r in (0, 1, 17, N - 1):  # a row sorted: negatives first, positives last
            row = A[[r]].toarray()[0] if A.indptr[r + 1] > A.indptr[r] else np.zeros(N)
            want = np.sort(row)
            gr = g[[r]].toarray()[0]
            assert np.array_equal(gr, want), r
    return check


def _first_rows(A):
    coo = A.tocoo()
    order = np.lexsort((coo.col, coo.row))
    return coo.row[order][:3]


def main(part: int = 0, parts: int = 1) -> int:
    """Run every ``parts``-th case from ``part`` on (the test spreads them over workers)."""
    resource.setrlimit(resource.RLIMIT_AS, (LIMIT, LIMIT))
    import sparsefold.array_api as xp
    A = matrix()
    failed = 0
    for k, (name, fn, check, bound) in enumerate(cases(xp, A)):
        if k % parts != part:
            continue
        t0 = time.perf_counter()
        try:
            y = fn()
            got = y.compute() if bound is not None else np.asarray(y)
            if bound is not None:
                assert sp.issparse(got), f"a {type(got).__name__}, not a sparse container"
                assert got.nnz <= bound, f"{got.nnz} stored entries, bound {bound}"
            check(got)
        except BaseException as exc:  # noqa: BLE001 - every failure is reported
            failed += 1
            print(f"FAILED {name}: {type(exc).__name__}: {exc}", flush=True)
            continue
        nnz = got.nnz if bound is not None else "-"
        print(f"ok {name} {nnz} {time.perf_counter() - t0:.2f}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(*(int(a) for a in sys.argv[1:3])))

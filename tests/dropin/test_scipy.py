"""sparsefold.scipy against scipy.sparse: same class, format, dtype, shape, values and stored
entries, on the shared matrices and on edge cases; what is not compiled is scipy's own.

Stored entries are compared after canonicalizing both sides (scipy's COO results list
entries block by block, ours in row-major order: docs/dropin.md); index dtypes are compared
where the inputs have int32 indices (with int64 inputs scipy keeps int64, we narrow).
"""

from __future__ import annotations

import csv
import functools
from pathlib import Path

import numpy as np
import pytest
import scipy.io
import scipy.sparse as sp

import sparsefold.scipy as sparse
from sparsefold.verify import prove_operator
from sparsefold.verify.results import PROVED

pytestmark = pytest.mark.cython

MATRICES = Path(__file__).resolve().parents[2].parent / "shared" / "matrices"


def _manifest_small(limit_nnz=6000):
    path = MATRICES / "MANIFEST.tsv"
    if not path.exists():
        return []
    with open(path, newline="") as fh:
        return [r["name"] for r in csv.DictReader(fh, delimiter="\t")
                if int(r["nnz"]) < limit_nnz]


SHARED = _manifest_small()[:4]


@functools.lru_cache(maxsize=8)
def _shared(name: str) -> sp.csr_array:
    m = sp.coo_array(scipy.io.mmread(str(MATRICES / f"{name}.mtx.gz")))
    return m.astype(np.float64).tocsr()


def _rand(shape, seed, fmt="csr", dtype=np.float64, density=0.3, index=np.int32):
    a = sp.random_array(shape, density=density, format="coo", dtype=dtype, rng=seed)
    a = a.asformat(fmt)
    if fmt in ("csr", "csc"):
        a.indptr, a.indices = a.indptr.astype(index), a.indices.astype(index)
    elif fmt == "coo":
        a.coords = tuple(c.astype(index) for c in a.coords)
    return a


def _canonical(x):
    """(shape, sorted row-major coordinates, values) of the stored entries."""
    c = x.tocoo()
    order = np.lexsort((c.col, c.row))
    return c.row[order].astype(np.int64), c.col[order].astype(np.int64), c.data[order]


def _index_dtype(x):
    if x.format in ("csr", "csc", "bsr"):
        return x.indices.dtype
    if x.format == "coo":
        return x.coords[0].dtype
    return None


FUNCTIONS = ("hstack", "vstack", "bmat", "block_array", "block_diag", "kron", "tril", "triu")


@pytest.fixture
def fallbacks(monkeypatch):
    """The scipy functions sparsefold.scipy handed a call to (instead of a kernel)."""
    import sparsefold.scipy as module
    calls = []

    class Recording:
        def __getattr__(self, name):
            found = getattr(sp, name)
            if name not in FUNCTIONS:
                return found

            def record(*args, **kwargs):
                calls.append(name)
                return found(*args, **kwargs)
            return record
    monkeypatch.setattr(module, "_sp", Recording())
    return calls


def same(got, want, *, index=True):
    assert type(got) is type(want), (type(got), type(want))
    assert (got.format, got.shape, got.dtype) == (want.format, want.shape, want.dtype)
    if want.format == "bsr":
        assert got.blocksize == want.blocksize
    g, w = _canonical(got), _canonical(want)
    for a, b in zip(g, w):
        np.testing.assert_array_equal(a, b)  # same stored entries (explicit zeros too)
    if index:
        assert _index_dtype(got) == _index_dtype(want)


# --- the shared matrices ------------------------------------------------------------------------

needs_matrices = pytest.mark.skipif(not SHARED, reason=f"no matrices at {MATRICES}")


@needs_matrices
@pytest.mark.parametrize("name", SHARED)
def test_shared_matrices(name, fallbacks):
    a = _shared(name)
    b = a[:, ::-1].tocsr()            # same rows, another pattern
    c = a[::-1].tocsr()               # same columns
    cases = [
        (lambda s: s.hstack([a, b]), {}),
        (lambda s: s.hstack([a.tocoo(), b.tocoo()]), {}),
        (lambda s: s.vstack([a, c]), {}),
        (lambda s: s.vstack([a.tocsc(), c.tocsc()], format="csr"), {}),
        (lambda s: s.bmat([[a, None], [None, c]]), {}),
        (lambda s: s.block_array([[a, b], [c, None]], format="csr"), {}),
        (lambda s: s.block_diag([a, b]), {}),
        (lambda s: s.tril(a), {}),
        (lambda s: s.triu(a, 1, format="csr"), {}),
    ]
    for call, _ in cases:
        same(call(sparse), call(sp))
    assert fallbacks == []  # every call ran a kernel
    assert sparse.kron(a, b[:3, :3]).format == sp.kron(a, b[:3, :3]).format  # scipy's own


# --- edge cases ---------------------------------------------------------------------------------

A = _rand((6, 5), 1)
B = _rand((6, 3), 2)
C = _rand((4, 5), 3)


@pytest.mark.parametrize("label, call", [
    ("csr pair", lambda s: s.hstack([A, B])),
    ("csc pair", lambda s: s.hstack([A.tocsc(), B.tocsc()])),
    ("three blocks", lambda s: s.hstack([A, B, A])),
    ("empty columns block", lambda s: s.hstack([A, _rand((6, 0), 4)])),
    ("no rows", lambda s: s.hstack([_rand((0, 5), 5), _rand((0, 2), 6)])),
    ("mixed formats", lambda s: s.hstack([A, B.tocsc(), A.tocoo()])),
    ("dense block", lambda s: s.hstack([A, B.toarray()])),
    ("mixed dtypes", lambda s: s.hstack([A.astype(np.float32), B])),
    ("int and bool", lambda s: s.hstack([A.astype(np.int32), (B > 0.5).astype(bool)])),
    ("dtype=", lambda s: s.hstack([A, B], dtype=np.float32)),
    ("format=coo", lambda s: s.hstack([A, B], format="coo")),
    ("format=csc", lambda s: s.hstack([A, B], format="csc")),
    ("format=lil", lambda s: s.hstack([A, B], format="lil")),
    ("format=dok", lambda s: s.vstack([A, C], format="dok")),
    ("format=dia", lambda s: s.vstack([A, C], format="dia")),
    ("format=bsr", lambda s: s.bmat([[A, None], [None, C]], format="bsr")),
    ("spmatrix", lambda s: s.hstack([sp.csr_matrix(A), sp.csr_matrix(B)])),
    ("spmatrix coo", lambda s: s.vstack([sp.coo_matrix(A), sp.coo_matrix(C)])),
    ("matrix and array", lambda s: s.hstack([sp.csr_matrix(A), B])),
    ("vstack", lambda s: s.vstack([A, C])),
    ("vstack csc", lambda s: s.vstack([A.tocsc(), C.tocsc()])),
    ("bmat with None", lambda s: s.bmat([[A, None], [None, C.T]])),
    ("bmat row of None", lambda s: s.bmat([[A, B], [None, None], [C, None]])),
    ("bmat column of None", lambda s: s.bmat([[A, None], [C, None]])),
    ("bmat spmatrix", lambda s: s.bmat([[sp.csr_matrix(A), None], [None, sp.csr_matrix(B)]])),
    ("block_array csr", lambda s: s.block_array([[A, B], [C, None]], format="csr")),
    ("block_array of matrices", lambda s: s.block_array([[sp.csr_matrix(A)]])),
    ("block_diag", lambda s: s.block_diag([A, B, C])),
    ("block_diag csr", lambda s: s.block_diag([A, C], format="csr", dtype=np.float32)),
    ("block_diag matrices", lambda s: s.block_diag((sp.csr_matrix(A), sp.csr_matrix(B)))),
    ("kron (scipy)", lambda s: s.kron(A, _rand((3, 4), 7, density=0.2), format="csr")),
    ("kron matrix (scipy)", lambda s: s.kron(sp.csr_matrix(A), np.ones((2, 2)))),
    ("tril", lambda s: s.tril(A)),
    ("tril k=-2", lambda s: s.tril(A, -2)),
    ("triu k=1 csr", lambda s: s.triu(A, 1, format="csr")),
    ("triu k=np.int64", lambda s: s.triu(A.tocsc(), np.int64(2))),
    ("tril matrix", lambda s: s.tril(sp.csr_matrix(A))),
    ("tril dense", lambda s: s.tril(A.toarray(), format="csr")),
    ("tril coo", lambda s: s.tril(A.tocoo(), 1, format="coo")),
    ("explicit zeros kept", lambda s: s.hstack([_with_zero(A), B])),
    ("many blocks (scipy)", lambda s: s.hstack([A] * (sparse.MAX_BLOCKS + 1))),
    ("list blocks (scipy)", lambda s: s.block_diag([[1, 2], [[3]]])),
])
def test_same_as_scipy(label, call, fallbacks):
    got = call(sparse)
    assert bool(fallbacks) == label.endswith("(scipy)"), fallbacks  # kernel, or scipy's
    same(got, call(sp))


def _with_zero(a):
    z = a.copy()
    z.data[0] = 0.0
    return z


def test_int64_indices_same_entries_narrower_index(fallbacks):
    a, b = _rand((6, 5), 1, index=np.int64), _rand((6, 3), 2, index=np.int64)
    got, want = sparse.hstack([a, b]), sp.hstack([a, b])
    assert fallbacks == []
    same(got, want, index=False)
    assert want.indices.dtype == np.int64 and got.indices.dtype == np.int32  # documented


@pytest.mark.parametrize("call", [
    lambda s: s.hstack([A, C]),                 # rows differ
    lambda s: s.vstack([A, B]),                 # columns differ
    lambda s: s.bmat([[A, B], [C, A]]),        # a block column of two widths
    lambda s: s.hstack([]),
    lambda s: s.hstack([A.toarray(), B.toarray()]),  # NumPy cannot make the object array
])
def test_errors_are_scipys(call):
    with pytest.raises(Exception) as want:
        call(sp)
    with pytest.raises(Exception) as got:
        call(sparse)
    assert (type(got.value), str(got.value)) == (type(want.value), str(want.value))


def test_pass_throughs_and_the_rest_of_scipy_sparse():
    assert sparse.diags_array is sp.diags_array and sparse.random_array is sp.random_array
    assert sparse.csr_array is sp.csr_array and sparse.issparse is sp.issparse
    assert "csr_array" in dir(sparse)
    with pytest.raises(AttributeError, match="no attribute 'nonexistent'"):
        sparse.nonexistent  # noqa: B018


_PREBUILT_CHILD = """
import json, numpy as np, scipy.sparse as sp
import sparsefold.scipy as sparse
from sparsefold.compiler.run import build
x = sp.random_array((50, 40), density=0.2, format="csr", dtype=np.float32, rng=11)
y = sp.random_array((50, 30), density=0.2, format="csr", dtype=np.float32, rng=12)
ok = [(sparse.hstack([x, y]) != sp.hstack([x, y])).nnz == 0,
      (sparse.vstack([x.tocoo(), x.tocoo()]) != sp.vstack([x.tocoo(), x.tocoo()])).nnz == 0]
print(json.dumps({"ok": ok, "stats": build.stats()}))
"""


def test_two_block_stacks_are_prebuilt(tmp_path):
    """The common drop-in calls run on sparsefold's prebuilt kernels: a fresh process with
    an empty kernel cache compiles nothing."""
    import json
    import os
    import subprocess
    import sys
    env = dict(os.environ, SPARSEFOLD_CACHE_DIR=str(tmp_path / "empty"))
    env.pop("SPARSEFOLD_PREBUILT", None)
    done = subprocess.run([sys.executable, "-c", _PREBUILT_CHILD], env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout)
    assert report["ok"] == [True, True]
    assert report["stats"]["builds"] == 0 and report["stats"]["prebuilt_hits"] == 2


def test_the_triangle_operator_is_proved():
    from sparsefold.scipy_kernels import Triangle
    from sparsefold.spec import sizes as sz
    from sparsefold.spec.compute import Input
    x = Input("X", (sz.Sym("M"), sz.Sym("N")), "float64", "csr")
    report = prove_operator([Triangle(x, k, lower) for k in (-2, 0, 3)
                             for lower in (True, False)])
    assert report.status == PROVED, report

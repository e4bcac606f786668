"""The 15 kernels of BENCHMARKS.md, compiled through ``sf.jit`` and checked against their
scipy baselines on the SuiteSparse matrices of ``../shared/matrices``.

Inputs are prepared as BENCHMARKS.md says: ``scipy.io.mmread`` (symmetric storage expanded
to both triangles), values cast to float32, ``tocsr()``, ``sum_duplicates()``; explicit zeros
stored in a file are kept (every system sees the same matrix). A result must have the
baseline's shape and the same stored coordinates and values (``allclose`` for the SpMV),
and be canonical. Kernels that only move data must store exactly what scipy stores
(explicit zeros included); for the two multiplications, zeros produced by arithmetic are a
documented choice, so their patterns are compared after dropping stored zeros.

Default suite: every matrix with nnz < 20,000. Kernels whose program depends on the matrix
shape — a split to (N, C), or an operand whose size is N*C or a slice count of N — are
traced with concrete sizes (one kernel per shape; ``sparsefold.jit``), so they run on
``PER_SHAPE_MATRICES`` only; the slow test runs all 15 kernels on all 60 matrices.
"""

import csv
import functools
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
import scipy.io
import scipy.sparse as sp

import sparsefold as sf

sys.path.insert(0, str(Path(__file__).resolve().parent))
from kernel_checks import check_scipy_storage  # noqa: E402

pytestmark = pytest.mark.cython

# Same path as tests/conftest.py's MATRICES (conftest modules are not importable by name).
MATRICES = Path(__file__).resolve().parents[2].parent / "shared" / "matrices"
SMALL_NNZ = 20_000
PER_SHAPE_MATRICES = ("ash608",)


def _manifest() -> list[tuple[str, int]]:
    path = MATRICES / "MANIFEST.tsv"
    if not path.exists():
        return []
    with open(path, newline="") as fh:
        return [(r["name"], int(r["nnz"])) for r in csv.DictReader(fh, delimiter="\t")]


ALL = [name for name, _ in _manifest()]
SMALL = [name for name, nnz in _manifest() if nnz < SMALL_NNZ]
needs_matrices = pytest.mark.skipif(not ALL, reason=f"no matrices at {MATRICES}")


@functools.lru_cache(maxsize=2)
def load(name: str) -> sp.csr_array:
    """The benchmark input: canonical float32 CSR with both triangles of symmetric storage."""
    path = MATRICES / f"{name}.mtx.gz"
    symmetry = scipy.io.mminfo(str(path))[5]
    m = sp.coo_array(scipy.io.mmread(str(path)))
    if symmetry != "general":
        r, c = m.coords
        lower, upper = np.count_nonzero(r > c), np.count_nonzero(r < c)
        if lower == 0 or upper == 0:  # only one triangle stored: mirror it
            off = r != c
            sign = -1 if symmetry == "skew-symmetric" else 1
            m = sp.coo_array((np.concatenate([m.data, sign * m.data[off]]),
                              (np.concatenate([r, c[off]]), np.concatenate([c, r[off]]))),
                             shape=m.shape)
    out = m.astype(np.float32).tocsr()
    out.sum_duplicates()
    return out


# --- the kernels -----------------------------------------------------------------------------

def _cols(m):
    h = m.shape[1] // 2
    return m[:, :h], m[:, h:]


def _rows(m):
    h = m.shape[0] // 2
    return m[:h], m[h:]


def _vector(m) -> sp.csr_array:
    """flatten(M) as a 1-d sparse vector (scipy's 1-d csr_array)."""
    n = m.shape[0] * m.shape[1]
    row = m.reshape((1, n)).tocsr()
    return sp.csr_array((row.data, row.indices, np.array([0, row.nnz], row.indptr.dtype)),
                        shape=(n,))


def _shifted(m) -> sp.csr_array:
    """flatten(M) shifted left by one position: b[k] = flatten(M)[k + 1]."""
    v = _vector(m)
    keep = v.indices > 0
    idx = (v.indices[keep] - 1).astype(v.indices.dtype)
    return sp.csr_array((v.data[keep], idx, np.array([0, idx.size], v.indptr.dtype)),
                        shape=v.shape)


def _half_slice(a):
    return a[0:(a.shape[0] + 1) // 2:2]


def _hstack(a, b):
    return sf.concat([a, b], axis=1)


def _vstack(a, b):
    return sf.concat([a, b], axis=0)


@dataclass(frozen=True)
class Bench:
    """A benchmark kernel: inputs from M, the program, its output format, the scipy
    baseline (from M), and how results compare ("exact", "arith" or "close")."""

    name: str
    inputs: object
    program: object
    out: str
    baseline: object
    compare: str = "exact"
    per_shape: bool = False


def _coo(parts):
    return tuple(p.tocoo() for p in parts)


BENCHES = [
    Bench("cv_collapse_coo", lambda m: (m.tocoo(),), lambda a: a.reshape(-1), "csr",
          lambda m: m.reshape((1, m.shape[0] * m.shape[1])).tocsr()),
    Bench("coo_hstack_coo_coo", lambda m: _coo(_cols(m)), _hstack, "coo",
          lambda m: sp.hstack(_coo(_cols(m)))),
    Bench("coo_vstack_coo_coo", lambda m: _coo(_rows(m)), _vstack, "coo",
          lambda m: sp.vstack(_coo(_rows(m)))),
    Bench("csr_hstack_csr_csr", _cols, _hstack, "csr",
          lambda m: sp.hstack(_cols(m), format="csr")),
    Bench("csr_vstack_csr_csr", _rows, _vstack, "csr",
          lambda m: sp.vstack(_rows(m), format="csr")),
    Bench("csr_slice_1d_csr", lambda m: (m,), _half_slice, "csr",
          lambda m: m[0:(m.shape[0] + 1) // 2:2, :]),
    Bench("coo_split_cv", lambda m: (_vector(m),), None, "coo",
          lambda m: m.reshape((1, m.shape[0] * m.shape[1])).tocsr().reshape(m.shape),
          per_shape=True),
    Bench("csr_split_cv", lambda m: (_vector(m),), None, "csr",
          lambda m: m.reshape((1, m.shape[0] * m.shape[1])).tocsr().reshape(m.shape).tocsr(),
          per_shape=True),
    Bench("csr_hstack_coo_coo", lambda m: _coo(_cols(m)), _hstack, "csr",
          lambda m: sp.hstack(_coo(_cols(m)), format="csr")),
    Bench("coo_vstack_csr_csr", _rows, _vstack, "coo",
          lambda m: sp.vstack(_rows(m), format="coo")),
    Bench("coo_hstack_csr_csr", _cols, _hstack, "coo",
          lambda m: sp.hstack(_cols(m), format="coo")),
    Bench("coo_slice_1d_csr", lambda m: (m,), _half_slice, "coo",
          lambda m: m[0:(m.shape[0] + 1) // 2:2, :].tocoo()),
    Bench("cv_collapse_csr_mul_cv", lambda m: (m, _shifted(m)), lambda a, b: a.reshape(-1) * b,
          "csr", lambda m: m.reshape((1, m.shape[0] * m.shape[1])).multiply(_shifted_2d(m)),
          compare="arith", per_shape=True),
    Bench("dv_sum_vstack_csr_csr_mul_dv", lambda m: (*_rows(m), _x(m)),
          lambda a, b, x: sf.vstack([a, b]) @ x, "dense",
          lambda m: sp.vstack(_rows(m)) @ _x(m), compare="close"),
    Bench("csr_slice_1d_csr_mul_csr", lambda m: (m[:, :-2], m[0:(m.shape[0] + 1) // 2:2, 2:]),
          lambda a, b: _half_slice(a) * b, "csr",
          lambda m: m[:, :-2][0:(m.shape[0] + 1) // 2:2, :].multiply(
              m[0:(m.shape[0] + 1) // 2:2, 2:]),
          compare="arith", per_shape=True),
]


def _shifted_2d(m) -> sp.csr_array:
    v = _shifted(m)
    return sp.csr_array((v.data, v.indices, v.indptr), shape=(1, v.shape[0]))


def _x(m) -> np.ndarray:
    return np.random.default_rng(42).random(m.shape[1], dtype=np.float32)


def _program(bench: Bench, m):
    if bench.program is not None:
        return bench.program
    n, c = m.shape
    return lambda v: v.reshape(n, c)  # split: the target shape is the matrix's


# --- comparison ------------------------------------------------------------------------------

def _entries(a) -> tuple[np.ndarray, np.ndarray]:
    """(row-major linear index of every stored entry, its value), sorted: a 1 x n baseline
    row and a length-n vector give the same keys."""
    coo = a.tocoo()
    coo.sum_duplicates()
    coords = [c.astype(np.int64) for c in coo.coords]
    strides = np.cumprod((1,) + tuple(coo.shape[:0:-1]))[::-1]
    keys = sum((c * int(s) for c, s in zip(coords, strides)), np.zeros(coo.nnz, np.int64))
    order = np.argsort(keys, kind="stable")
    return keys[order], coo.data[order]


def check_bench(bench: Bench, name: str) -> None:
    m = load(name)
    args = bench.inputs(m)
    got = sf.jit(_program(bench, m), out=bench.out)(*args)
    ref = bench.baseline(m)
    where = f"{bench.name} on {name} {m.shape}"
    if bench.compare == "close":
        assert isinstance(got, np.ndarray) and got.shape == ref.shape, where
        assert got.dtype == np.float32, where
        scale = float(np.abs(ref).max(initial=0.0)) or 1.0
        np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-5 * scale, err_msg=where)
        return
    want_shape = (m.shape[0] * m.shape[1],) if bench.name.startswith("cv_") else ref.shape
    assert got.shape == want_shape, (where, got.shape, want_shape)
    assert got.dtype == np.float32, where
    want_cls = sp.coo_array if bench.out == "coo" else sp.csr_array
    assert isinstance(got, want_cls), (where, type(got))
    check_scipy_storage(got)
    gk, gv = _entries(got)
    rk, rv = _entries(ref)
    if bench.compare == "arith":  # stored zeros from arithmetic: a documented choice
        gk, gv = gk[gv != 0], gv[gv != 0]
        rk, rv = rk[rv != 0], rv[rv != 0]
    assert gk.shape == rk.shape, (where, "nnz", gk.shape, rk.shape)
    np.testing.assert_array_equal(gk, rk, err_msg=f"{where}: coordinates")
    np.testing.assert_array_equal(gv, rv, err_msg=f"{where}: values")


def _cases(names, *, all_kernels: bool):
    for name in names:
        for bench in BENCHES:
            if all_kernels or not bench.per_shape or name in PER_SHAPE_MATRICES:
                yield pytest.param(bench, name, id=f"{bench.name}-{name}")


@needs_matrices
@pytest.mark.parametrize("bench, name", list(_cases(SMALL, all_kernels=False)))
def test_benchmark_kernel_small(bench, name):
    check_bench(bench, name)


@pytest.mark.slow
@needs_matrices
@pytest.mark.parametrize("bench, name", list(_cases(ALL, all_kernels=True)))
def test_benchmark_kernel_all(bench, name):
    check_bench(bench, name)


@needs_matrices
def test_every_benchmark_kernel_is_covered():
    """All 15 kernels of BENCHMARKS.md, and the symmetric matrices really are expanded."""
    assert len({b.name for b in BENCHES}) == 15
    m = load("494_bus")
    assert (m != m.T).nnz == 0 and np.count_nonzero(sp.triu(m, 1).toarray()) > 0

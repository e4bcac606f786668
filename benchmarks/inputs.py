"""Benchmark inputs: the SuiteSparse matrices of ``../shared/matrices`` and generated scale
matrices, each as a canonical float32 ``scipy.sparse.csr_array`` (sorted, no duplicates).

Real matrices are read with ``scipy.io.mmread`` (which already expands symmetric and
skew-symmetric storage to both triangles; pattern matrices get the value 1), cast to float32
and converted with ``tocsr()``. Explicit zeros that the file stores are kept: BENCHMARKS.md
asks for the file's matrix, and every system sees the same one.

Scale inputs are generated with a fixed seed, so every run and every machine sees the same
matrices: R-MAT power-law graphs and banded matrices with exactly 1M, 4M and 16M stored
entries, and one "wide" matrix whose ``rows * cols`` exceeds 2**32 (its flattened
coordinates need 64 bits). Both kinds are cached as ``.npz`` files (loading a 16M-entry
matrix from the cache takes well under a second; generating it takes a few).
"""

from __future__ import annotations

import csv
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import scipy.sparse as sp

__all__ = ["MatrixInfo", "default_matrix_dir", "suitesparse_infos", "scale_infos", "load",
           "QUICK_MATRICES", "GENERATOR_VERSION", "OVERHEAD", "compute_scale_infos"]

# Bump when a generator changes, so cached .npz files of the old matrices are not reused.
GENERATOR_VERSION = 1

# The --quick subset: five real matrices spanning the nnz range (1.7k to 810k), including
# a very sparse one with many rows (luxembourg_osm: ~2 entries per row) and a dense-row
# one (pkustk02: 75 entries per row).
QUICK_MATRICES = ("494_bus", "cage8", "wiki-Vote", "luxembourg_osm", "pkustk02")


@dataclass(frozen=True)
class MatrixInfo:
    """One benchmark input: ``source`` is "suitesparse" or "scale"; ``nnz`` as listed (the
    loaded matrix's nnz is authoritative and is what results record)."""

    name: str
    rows: int
    cols: int
    nnz: int
    source: str
    kind: str = ""


def default_matrix_dir() -> Path:
    """``$SPARSEFOLD_MATRICES`` if set, else ``../shared/matrices`` next to the project root."""
    env = os.environ.get("SPARSEFOLD_MATRICES")
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[1].parent / "shared" / "matrices"


def suitesparse_infos(matrix_dir: Path | None = None) -> list[MatrixInfo]:
    """The matrices listed in ``MANIFEST.tsv``, in its order (increasing nnz)."""
    manifest = Path(matrix_dir or default_matrix_dir()) / "MANIFEST.tsv"
    if not manifest.exists():
        raise FileNotFoundError(f"no MANIFEST.tsv in {manifest.parent}; pass --matrix-dir or "
                                f"set SPARSEFOLD_MATRICES")
    with open(manifest, newline="") as fh:
        return [MatrixInfo(r["name"], int(r["rows"]), int(r["cols"]), int(r["nnz"]),
                           "suitesparse", r["symmetry"])
                for r in csv.DictReader(fh, delimiter="\t")]


_M = 1_000_000
_HALF_BAND = 8  # banded matrices have diagonals -8..8


def _band_side(nnz: int) -> int:
    """The smallest n whose n x n band holds ``nnz`` entries (17 per row, minus the corners)."""
    width = 2 * _HALF_BAND + 1
    corners = _HALF_BAND * (_HALF_BAND + 1)
    return -(-(nnz + corners) // width)

_SCALE = {
    # name: (kind, rows, cols, nnz). R-MAT sides are powers of two with ~8 entries per row.
    "rmat_1M": ("rmat", 2**17, 2**17, 1 * _M),
    "rmat_4M": ("rmat", 2**19, 2**19, 4 * _M),
    "rmat_16M": ("rmat", 2**21, 2**21, 16 * _M),
    "band_1M": ("band", _band_side(1 * _M), _band_side(1 * _M), 1 * _M),
    "band_4M": ("band", _band_side(4 * _M), _band_side(4 * _M), 4 * _M),
    "band_16M": ("band", _band_side(16 * _M), _band_side(16 * _M), 16 * _M),
    # 100,000 * 50,000 = 5e9 > 2**32: flattened coordinates do not fit 32 bits.
    "wide_1M": ("wide", 100_000, 50_000, 1 * _M),
}


# The compute group's scale input (issue #11): 200000 x 200000 with 2M uniformly placed
# entries — the size on which today's compiler tried to allocate 298 GiB. Kept apart from
# _SCALE so the paper group's --scale set (and its seeds) stay as they were.
_COMPUTE_SCALE = {"uniform_2M": ("uniform", 200_000, 200_000, 2 * _M)}


# A 16 x 16 matrix with 40 entries: every kernel's time on it is essentially the cost of a
# call (dispatch, validation, allocation), reported separately from the real matrices.
OVERHEAD = MatrixInfo("tiny_16x16", 16, 16, 40, "overhead", "random")


def scale_infos() -> list[MatrixInfo]:
    return [MatrixInfo(n, r, c, z, "scale", k) for n, (k, r, c, z) in _SCALE.items()]


def compute_scale_infos() -> list[MatrixInfo]:
    """The compute group's --scale set: the 200000² uniform matrix, then the paper's."""
    return [MatrixInfo(n, r, c, z, "scale", k) for n, (k, r, c, z) in
            _COMPUTE_SCALE.items()] + scale_infos()


def load(info: MatrixInfo, matrix_dir: Path | None = None,
         cache_dir: Path | None = None) -> sp.csr_array:
    """The canonical float32 CSR array of ``info`` (from the .npz cache when present)."""
    cached = None
    if cache_dir is not None:
        tag = f"v{GENERATOR_VERSION}" if info.source == "scale" else "mtx"
        cached = Path(cache_dir) / f"{info.name}.{tag}.npz"
        if cached.exists():
            try:
                return _from_npz(cached)
            except (OSError, ValueError, KeyError):
                pass  # a truncated cache file: rebuild it below
    if info.source == "overhead":
        m = _tiny(info)
    elif info.source == "scale":
        m = _generate(info.name)
    else:
        m = _read_mtx(Path(matrix_dir or default_matrix_dir()) / f"{info.name}.mtx.gz")
    if cached is not None:
        _to_npz(cached, m)
    return m


def _read_mtx(path: Path) -> sp.csr_array:
    import scipy.io
    m = sp.csr_array(scipy.io.mmread(path)).astype(np.float32).tocsr()
    m.sum_duplicates()
    return m


def _to_npz(path: Path, m: sp.csr_array) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + f".{os.getpid()}.tmp.npz")
    np.savez(tmp, data=m.data, indices=m.indices, indptr=m.indptr, shape=np.array(m.shape))
    os.replace(tmp, path)  # atomic: a reader never sees half a file


def _from_npz(path: Path) -> sp.csr_array:
    with np.load(path) as z:
        shape = tuple(int(n) for n in z["shape"])
        return sp.csr_array((z["data"], z["indices"], z["indptr"]), shape=shape)


def _tiny(info: MatrixInfo) -> sp.csr_array:
    rng = np.random.default_rng(16)
    keys = np.sort(rng.choice(info.rows * info.cols, info.nnz, replace=False))
    r, c = np.divmod(keys, info.cols)
    return _csr(info.rows, info.cols, r, c, rng.uniform(1.0, 2.0, info.nnz).astype(np.float32))


def _generate(name: str) -> sp.csr_array:
    every = {**_SCALE, **_COMPUTE_SCALE}
    kind, rows, cols, nnz = every[name]
    rng = np.random.default_rng(20240917 + list(every).index(name))
    if kind == "band":
        return _banded(rows, nnz, rng)
    if kind == "rmat":
        keys = _unique_keys(lambda n: _rmat_keys(n, rows, rng), nnz, rng)
    else:
        keys = _unique_keys(lambda n: rng.integers(0, rows * cols, n, dtype=np.int64), nnz, rng)
    values = rng.uniform(1.0, 2.0, nnz).astype(np.float32)  # no zeros: no pruning questions
    r, c = np.divmod(keys, cols)  # keys are sorted and distinct: already row-major CSR order
    return _csr(rows, cols, r, c, values)


def _csr(rows: int, cols: int, r: np.ndarray, c: np.ndarray, values) -> sp.csr_array:
    """Canonical CSR from row-major sorted distinct coordinates, with int32 index arrays when
    they fit (as scipy itself would choose for a matrix read from a file)."""
    indptr = np.zeros(rows + 1, dtype=np.int64)
    np.cumsum(np.bincount(r, minlength=rows), out=indptr[1:])
    index = np.int32 if max(rows, cols, r.size) < 2**31 else np.int64
    return sp.csr_array((values, c.astype(index), indptr.astype(index)), shape=(rows, cols))


def _unique_keys(draw, nnz: int, rng) -> np.ndarray:
    """Exactly ``nnz`` distinct linear coordinates (sorted), drawn by ``draw(n)``."""
    keys = np.unique(draw(nnz + nnz // 4))
    while keys.size < nnz:
        keys = np.unique(np.concatenate([keys, draw(nnz - keys.size + nnz // 8)]))
    if keys.size > nnz:
        keys = np.sort(rng.choice(keys, nnz, replace=False))
    return keys


def _rmat_keys(n: int, side: int, rng) -> np.ndarray:
    """``n`` R-MAT edges (Chakrabarti et al. 2004; a, b, c, d = 0.57, 0.19, 0.19, 0.05) in a
    ``side`` x ``side`` matrix (a power of two), as linear coordinates ``row * side + col``."""
    levels = side.bit_length() - 1
    r = np.zeros(n, dtype=np.int64)
    c = np.zeros(n, dtype=np.int64)
    for _ in range(levels):
        u = rng.random(n, dtype=np.float32)
        # quadrant: a -> (0,0), b -> (0,1), c -> (1,0), d -> (1,1)
        down = u >= np.float32(0.57 + 0.19)
        right = ((u >= np.float32(0.57)) & ~down) | (u >= np.float32(0.57 + 0.19 + 0.19))
        r = (r << 1) | down
        c = (c << 1) | right
    # R-MAT concentrates entries in low rows; a fixed random relabeling spreads them like a
    # real graph's ids (the degree distribution is unchanged).
    perm = rng.permutation(side)
    return perm[r] * side + perm[c]


def _banded(n: int, nnz: int, rng) -> sp.csr_array:
    """An ``n`` x ``n`` matrix with diagonals -8..8 (17 per interior row), cut to exactly
    ``nnz`` entries in row-major order (only the last row may be partly filled)."""
    offsets = np.arange(-_HALF_BAND, _HALF_BAND + 1, dtype=np.int64)
    rows = np.repeat(np.arange(n, dtype=np.int64), offsets.size)
    cols = rows + np.tile(offsets, n)
    keep = (cols >= 0) & (cols < n)
    rows, cols = rows[keep][:nnz], cols[keep][:nnz]
    return _csr(n, n, rows, cols, rng.uniform(1.0, 2.0, rows.size).astype(np.float32))

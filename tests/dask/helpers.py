"""Shared by the Dask tests: small integer-valued inputs (so sums reassociated across blocks
are exact and results can be compared bit for bit) and the comparison with ``sf.jit`` on
the whole arrays (the single-machine result, the oracle of every test here).

Block sizes are drawn from disjoint ranges (rows 4..5, columns 7..8 in the fixed inputs,
and every other row of a block: 2..3) so no block is square or has a size-1 axis: every
block of a program then traces to the same symbolic program and shares its kernels (sizes
0 and 1 are traced concretely, equal sizes share a symbol).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
import sparse

import sparsefold as sf

__all__ = ["integer_valued", "scipy_matrix", "pydata_array", "dense", "assert_same",
           "run_both", "ROW_CHUNKS", "COL_CHUNKS"]

ROW_CHUNKS = (5, 4, 4)       # 13 rows
COL_CHUNKS = (8, 7)          # 15 columns


def integer_valued(shape, seed: int, density: float = 0.4, dtype=np.float64) -> np.ndarray:
    rng = np.random.default_rng(seed)
    values = rng.integers(-4, 5, shape).astype(dtype)
    values[rng.random(shape) >= density] = 0
    return values


def scipy_matrix(shape=(13, 15), seed: int = 0, dtype=np.float64) -> sp.csr_array:
    return sp.csr_array(integer_valued(shape, seed, dtype=dtype))


def pydata_array(shape, seed: int = 0) -> sparse.COO:
    return sparse.COO.from_numpy(integer_valued(shape, seed))


def dense(x) -> np.ndarray:
    if sp.issparse(x):
        return x.toarray()
    if isinstance(x, sparse.SparseArray):
        return x.todense()
    return np.asarray(x)


def assert_same(want, got) -> None:
    """Same shape, dtype and values (NaN equal to NaN)."""
    w, g = dense(want), dense(got)
    assert g.shape == w.shape and g.dtype == w.dtype, (g.shape, g.dtype, w.shape, w.dtype)
    np.testing.assert_array_equal(g, w)


def run_both(fn, whole_args, dask_args, scheduler="threads", out=None):
    """(single-machine result, dask result computed, the lazy dask array). A 0-d or 1-d
    result of scipy inputs is compared with the single-machine result computed as a dense
    array: the type the Dask result has (dask cannot concatenate 1-d scipy arrays), and
    the kernels Dask's blocks use."""
    import dask
    import dask.array as da
    program, _ = sf.jit(fn).program_for(*whole_args)
    single_out = out
    if out is None and program.ndim <= 1 and not any(isinstance(a, sparse.SparseArray)
                                                     for a in whole_args):
        single_out = "dense"
    want = sf.jit(fn, out=single_out)(*whole_args)
    lazy = sf.jit(fn, out=out)(*dask_args)
    assert isinstance(lazy, da.Array)
    with dask.config.set(scheduler=scheduler):
        got = lazy.compute()
    return want, got, lazy

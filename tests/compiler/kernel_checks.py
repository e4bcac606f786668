"""Shared helpers for the compiler tests: building inputs in every storage format and
index width, and checking a compiled result against the reference interpreter.

The oracle is always ``fn(*sf.asarray(args)).interpret()`` (the dense NumPy interpreter)
or a scipy expression; nothing here restates what the compiler should produce. Beyond the
dense value, :func:`check_result` checks the *storage* of a sparse result: its container
type for the requested format, shape, dtype, ``indptr`` length and monotonicity, and that it
is canonical (sorted, duplicate-free: equal to a copy after ``sum_duplicates()``).

Not a test module (no ``test_`` prefix); the test files put this folder on ``sys.path``.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
import sparse as pydata

import sparsefold as sf

__all__ = ["make_input", "with_index_dtype", "check_result", "check_scipy_storage",
           "run_both", "expected_container", "default_out"]


def _values(rng: np.random.Generator, n: int, dtype: np.dtype) -> np.ndarray:
    """``n`` nonzero, small integer-valued entries: sums and products stay exact."""
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        return np.ones(n, dtype=bool)
    v = rng.integers(1, 8, size=n)
    if dtype.kind != "u":
        v = v * rng.choice([-1, 1], size=n)
    return v.astype(dtype)


def with_index_dtype(a, index_dtype):
    """``a`` (scipy) with its index arrays cast to ``index_dtype``, set directly so scipy
    does not narrow them back."""
    ix = np.dtype(index_dtype)
    if a.format in ("csr", "csc"):
        a.indices = a.indices.astype(ix)
        a.indptr = a.indptr.astype(ix)
    elif a.format == "coo":
        a.coords = tuple(c.astype(ix) for c in a.coords)
    return a


def make_input(shape, fmt: str, dtype="float64", index_dtype="int32", *, density=0.4,
               seed=0, zero=False):
    """An array of ``shape`` in ``fmt``: "dense" (NumPy), "csr"/"csc"/"coo" (scipy arrays;
    "csr" 1-d is scipy's sparse vector, "coo" any rank), "pd_coo"/"pd_gcxs" (pydata).
    Stored values are nonzero (no explicit zeros); ``zero`` gives no stored entry."""
    rng = np.random.default_rng(seed)
    shape = tuple(shape)
    size = int(np.prod(shape, dtype=np.int64))
    nnz = 0 if zero else int(round(density * size))
    flat = np.sort(rng.choice(size, size=nnz, replace=False)) if size else np.zeros(0, int)
    dense = np.zeros(size, dtype=dtype)
    dense[flat] = _values(rng, nnz, dtype)
    dense = dense.reshape(shape)
    if fmt == "dense":
        return dense
    if fmt == "pd_coo":
        return pydata.COO.from_numpy(dense)
    if fmt == "pd_gcxs":
        return pydata.GCXS.from_numpy(dense, compressed_axes=(0,))
    coords = np.unravel_index(flat, shape)
    coo = sp.coo_array((dense.reshape(-1)[flat], coords), shape=shape)
    out = coo if fmt == "coo" else coo.asformat(fmt)
    out.sum_duplicates()
    return with_index_dtype(out, index_dtype)


def expected_container(out: str, ndim: int, library: str) -> tuple[type, str | None]:
    """(class, scipy format) a result must have for output format ``out``: scipy arrays
    of the requested format (DCSR comes back as CSR; 1-d sparse vectors are csr or coo;
    n-d sparse is COO), pydata when inputs were pydata, NumPy for dense and 0-d."""
    if out == "dense" or ndim == 0:
        return np.ndarray, None
    if library == "pydata":
        if ndim == 2 and out in ("csr", "csc", "dcsr"):
            return pydata.GCXS, "csc" if out == "csc" else "csr"
        return pydata.COO, None
    if ndim == 1:
        return (sp.coo_array, "coo") if out == "coo" else (sp.csr_array, "csr")
    if ndim > 2:
        return sp.coo_array, "coo"
    return {"csr": (sp.csr_array, "csr"), "dcsr": (sp.csr_array, "csr"),
            "csc": (sp.csc_array, "csc"), "coo": (sp.coo_array, "coo")}[out]


def check_scipy_storage(got) -> None:
    """Storage invariants of a scipy result: lengths, ``indptr`` shape and monotonicity,
    canonical (equal to a copy after ``sum_duplicates()``)."""
    if got.format in ("csr", "csc"):
        n_outer = 1 if got.ndim == 1 else got.shape[0 if got.format == "csr" else 1]
        assert got.indptr.shape == (n_outer + 1,), (got.indptr.shape, n_outer)
        assert got.indptr[0] == 0
        assert np.all(np.diff(got.indptr) >= 0), "indptr is not monotone"
        assert got.indptr[-1] == got.indices.shape[0] == got.data.shape[0]
        assert got.indices.dtype in (np.int32, np.int64)
        canon = got.copy()
        canon.has_canonical_format = False  # make sum_duplicates really re-check
        canon.sum_duplicates()
        np.testing.assert_array_equal(canon.indptr, got.indptr)
        np.testing.assert_array_equal(canon.indices, got.indices)
        np.testing.assert_array_equal(canon.data, got.data)
    else:
        assert got.format == "coo"
        for c in got.coords:
            assert c.shape == got.data.shape
        canon = got.copy()
        canon.has_canonical_format = False
        canon.sum_duplicates()
        for c, d in zip(canon.coords, got.coords):
            np.testing.assert_array_equal(c, d)
        np.testing.assert_array_equal(canon.data, got.data)


def _check_pydata_storage(got) -> None:
    if isinstance(got, pydata.GCXS):
        check_scipy_storage(got.to_scipy_sparse())
        return
    coords = np.asarray(got.coords)
    assert coords.shape == (got.ndim, got.nnz)
    if got.nnz > 1:
        keys = np.ravel_multi_index(tuple(coords), got.shape)
        assert np.all(np.diff(keys) > 0), "pydata COO coordinates not sorted/unique"


def _dense_of(got) -> np.ndarray:
    if isinstance(got, np.ndarray):
        return got
    if isinstance(got, (pydata.COO, pydata.GCXS)):
        return got.todense()
    return got.toarray()


def check_result(got, expected: np.ndarray, out: str, library: str = "scipy", *,
                 exact_pattern: bool = False, rtol: float | None = None) -> None:
    """``got`` (a compiled result) agrees with ``expected`` (the interpreter's NumPy array):
    container type for ``out``, shape, dtype, storage invariants, values (NaN == NaN).
    ``exact_pattern``: the stored coordinates are exactly the nonzeros of ``expected`` (for
    shape-only programs over inputs without stored zeros: a dense input's zeros are not
    stored either, as scipy does not store them)."""
    expected = np.asarray(expected)
    cls, scipy_fmt = expected_container(out, expected.ndim, library)
    assert isinstance(got, cls), f"expected {cls.__name__}, got {type(got).__name__}"
    assert tuple(got.shape) == expected.shape, (got.shape, expected.shape)
    assert got.dtype == expected.dtype, (got.dtype, expected.dtype)
    if scipy_fmt is not None and library == "scipy":
        assert got.format == scipy_fmt, (got.format, scipy_fmt)
        check_scipy_storage(got)
    elif library == "pydata" and cls is not np.ndarray:
        _check_pydata_storage(got)
        if cls is pydata.GCXS:
            want = (1,) if scipy_fmt == "csc" else (0,)
            assert tuple(got.compressed_axes) == want
    dense = _dense_of(got)
    if rtol is None:
        np.testing.assert_array_equal(dense, expected)
    else:
        np.testing.assert_allclose(dense, expected, rtol=rtol, atol=rtol)
    if exact_pattern and cls is not np.ndarray:
        assert got.nnz == np.count_nonzero(expected), (got.nnz, np.count_nonzero(expected))


def default_out(args) -> str:
    """The documented default output format: the first sparse argument's format, else
    dense."""
    from sparsefold.interop import describe
    for a in args:
        if not isinstance(a, (int, float, bool, np.ndarray)):
            return describe(a).format
    return "dense"


def run_both(fn, args, out: str | None):
    """(compiled result, interpreter result) of ``fn`` on ``args``."""
    lazies = [a if isinstance(a, (int, float, bool)) else sf.asarray(a) for a in args]
    expected = fn(*lazies).interpret()
    got = sf.jit(fn, out=out)(*args)
    return got, expected

"""Result containers: which format a result is assembled in, and the library array it is
handed back as. Every engine that returns a sparse result follows these rules, and
``verify.differential`` checks results against them.

========  ========================  =====================  =============================
``out``   2-d result                1-d result             other ranks
========  ========================  =====================  =============================
csr       ``csr_array``             ``csr_array`` (1-d)    ``coo_array`` (0-d: NumPy)
dcsr      ``csr_array``             ``csr_array`` (1-d)    ``coo_array`` (0-d: NumPy)
csc       ``csc_array``             ``csr_array`` (1-d)    ``coo_array`` (0-d: NumPy)
coo       ``coo_array``             ``coo_array``          ``coo_array`` (0-d: NumPy)
dense     ``numpy.ndarray``         ``numpy.ndarray``      ``numpy.ndarray``
========  ========================  =====================  =============================

With pydata/sparse inputs, sparse results are pydata ``GCXS`` (2-d csr/dcsr/csc) or
``COO``. Kernels assemble in :func:`out_format`; DCSR has no scipy container, so its
compressed rows are expanded over every row.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from sparsefold.spec.errors import IllFormedProgram
from sparsefold.spec.formats import Format, named_format
from sparsefold.storage.describe import is_pydata_sparse

__all__ = ["OUT_FORMATS", "out_format", "storage_kind", "result_library", "result_container",
           "compress", "wrap_levels", "from_dense"]

OUT_FORMATS = ("dense", "csr", "csc", "coo", "dcsr")


def out_format(name: str, ndim: int) -> Format:
    """The format a result of rank ``ndim`` requested as ``out=name`` is assembled in."""
    if name not in OUT_FORMATS:
        raise IllFormedProgram(f"out must be one of {', '.join(OUT_FORMATS)}, found {name!r}")
    if name == "dense" or ndim == 0:
        return named_format("dense", ndim)
    if name in ("csr", "csc", "dcsr") and ndim > 2:
        return named_format("coo", ndim)  # n-d sparse results are COO
    if name in ("csc", "dcsr") and ndim == 1:
        return named_format("csr", 1)
    return named_format(name, ndim)


def storage_kind(fmt: Format) -> str | None:
    """The storage of the container a result assembled in ``fmt`` is handed back as:
    "csr", "csc", "coo", or None (a NumPy array)."""
    if fmt.is_dense:
        return None
    if fmt.kinds == ("pos", "pos"):  # dcsr/dcsc: expanded to csr/csc
        return "csr" if fmt.mode_order == (0, 1) else "csc"
    return fmt.name if fmt.name in ("csr", "csc") else "coo"


def result_library(inputs: Iterable[Any]) -> str:
    """The library results are handed back in: "pydata" when any input is a pydata/sparse
    array, else "scipy"."""
    return "pydata" if any(is_pydata_sparse(a) for a in inputs) else "scipy"


def result_container(name: str, ndim: int, library: str) -> tuple[str, str | None]:
    """(container name, storage kind) of a result requested as ``out=name``: the table in
    the module docstring. ``library`` is "scipy" or "pydata"."""
    kind = storage_kind(out_format(name, ndim))
    if kind is None:
        return "numpy.ndarray", None
    if library == "pydata":
        return ("sparse.GCXS", kind) if ndim == 2 and kind != "coo" else ("sparse.COO", "coo")
    return f"{kind}_array", kind


def compress(crds: list[np.ndarray], fmt: Format, shape, index_dtype) -> dict[str, np.ndarray]:
    """Coordinate lists sorted in storage order -> the level arrays of ``fmt``."""
    ix = np.dtype(index_dtype)
    kinds = fmt.kinds
    if kinds == ("full", "pos"):
        rows = shape[fmt.mode_order[0]]
        counts = np.bincount(crds[0], minlength=rows) if crds[0].size else np.zeros(rows, int)
        pos = np.zeros(rows + 1, dtype=ix)
        np.cumsum(counts, out=pos[1:])
        return {"pos1": pos, "crd1": crds[1].astype(ix, copy=False)}
    if kinds == ("pos", "pos"):
        rows, starts = np.unique(crds[0], return_index=True)
        pos = np.append(starts, crds[0].size).astype(ix)
        return {"crd0": rows.astype(ix), "pos1": pos, "crd1": crds[1].astype(ix, copy=False)}
    return {f"crd{d}": c.astype(ix, copy=False) for d, c in enumerate(crds)}


def wrap_levels(fmt: Format, shape, val: np.ndarray, arrays: dict[str, np.ndarray],
                library: str):
    """The container for a result assembled in ``fmt``: ``val`` and the level arrays
    (canonical, trimmed to the entries written)."""
    kind = storage_kind(fmt)
    if kind is None:
        return val
    if fmt.kinds == ("pos", "pos"):  # expand the compressed rows over every row
        rows = shape[fmt.mode_order[0]]
        counts = np.zeros(rows, dtype=np.int64)
        counts[arrays["crd0"]] = np.diff(arrays["pos1"])
        pos = np.zeros(rows + 1, dtype=arrays["crd1"].dtype)
        np.cumsum(counts, out=pos[1:])
        arrays = {"pos1": pos, "crd1": arrays["crd1"]}
    return _container(kind, shape, val, arrays, library)


def _check_scipy_dtype(dtype: np.dtype, library: str) -> None:
    """scipy.sparse has no float16 arrays (its own ``A.sin()`` of a bool array raises)."""
    if library == "scipy" and np.dtype(dtype) == np.float16:
        raise IllFormedProgram(
            "a float16 result cannot be a scipy.sparse array (scipy.sparse does not support "
            "float16); ask for out='dense', or cast first with astype(float32)")


def from_dense(dense: np.ndarray, fmt: Format, library: str):
    """The container for a result computed densely (the dense strategy) in ``fmt``."""
    kind = storage_kind(fmt)
    if kind is None:
        return dense
    _check_scipy_dtype(dense.dtype, library)
    if dense.ndim == 2 and kind in ("csr", "csc"):
        import scipy.sparse as sp
        res = (sp.csr_array if kind == "csr" else sp.csc_array)(dense)
        if library == "pydata":
            import sparse
            return sparse.GCXS.from_scipy_sparse(res)
        return res
    nz = np.nonzero(dense)
    val = dense[nz]
    return _container(kind, dense.shape, val, {f"crd{d}": c for d, c in enumerate(nz)},
                      library)


def _container(kind: str, shape, val: np.ndarray, arrays: dict[str, np.ndarray], library: str):
    """A scipy (or pydata) array of storage ``kind`` around canonical level arrays."""
    import scipy.sparse as sp
    _check_scipy_dtype(val.dtype, library)
    ndim = len(shape)
    if kind in ("csr", "csc") and ndim == 2:
        cls = sp.csr_array if kind == "csr" else sp.csc_array
        out = _compressed_array(cls, val, arrays["crd1"], arrays["pos1"], shape)
        if library == "pydata":
            import sparse
            return sparse.GCXS.from_scipy_sparse(out)
        return out
    if kind == "csr":  # 1-d: a sparse vector
        if library == "pydata":
            import sparse
            return sparse.COO(arrays["crd0"][None, :], val, shape=shape, sorted=True,
                              has_duplicates=False)
        pos = arrays.get("pos0")
        if pos is None:
            pos = np.array([0, val.shape[0]], dtype=arrays["crd0"].dtype)
        return _compressed_array(sp.csr_array, val, arrays["crd0"], pos, shape)
    coords = tuple(arrays[f"crd{d}"] for d in range(ndim))
    if library == "pydata":
        import sparse
        return sparse.COO(np.stack(coords) if coords else np.zeros((0, val.shape[0]), int),
                          val, shape=shape, sorted=True, has_duplicates=False)
    return _coo_array(sp.coo_array, val, coords, shape)


def _compressed_array(cls, data, indices, indptr, shape):
    """A scipy CSR/CSC array around arrays we built (canonical, consistent dtypes).

    scipy's public constructor re-checks and prunes them (~10 µs, most of a small call), so
    this sets the attributes the way scipy's own sparse-to-sparse branch does; if a scipy
    version lacks those internals it falls back to the public constructor."""
    try:
        from scipy.sparse._data import _data_matrix
        out = cls.__new__(cls)
        _data_matrix.__init__(out, None)
        out.indptr, out.indices, out.data, out._shape = indptr, indices, data, tuple(shape)
        if out.shape != tuple(shape) or out.nnz != data.shape[0]:
            raise AttributeError("unexpected scipy internals")
    except (ImportError, AttributeError, TypeError, ValueError):
        out = cls((data, indices, indptr), shape=shape)
    out.has_sorted_indices = True
    out.has_canonical_format = True
    return out


def _coo_array(cls, data, coords, shape):
    """A scipy COO array around canonical coordinates we built, set up as scipy's own
    constructor does for arrays it trusts; the public constructor (which re-checks and
    copies index dtypes) is the fallback if a scipy version lacks those internals."""
    try:
        from scipy.sparse._data import _data_matrix
        out = cls.__new__(cls)
        _data_matrix.__init__(out, None)
        out._shape, out.coords, out.data = tuple(shape), tuple(coords), data
        if out.shape != tuple(shape) or out.nnz != data.shape[0]:
            raise AttributeError("unexpected scipy internals")
    except (ImportError, AttributeError, TypeError, ValueError):
        out = cls((data, tuple(coords)), shape=shape)
    out.has_canonical_format = True
    return out

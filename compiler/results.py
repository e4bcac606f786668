"""Turning a kernel's output arrays into the user's result: output formats, sorting a
fallback's buffered coordinates, wrapping level arrays as scipy / pydata / NumPy arrays."""

from __future__ import annotations

import numpy as np

from sparsefold.compiler import runtime
from sparsefold.spec.errors import IllFormedProgram
from sparsefold.spec.formats import Format, named_format

__all__ = ["OUT_FORMATS", "out_format", "trim", "compress", "wrap", "from_dense",
           "combine_zero"]

OUT_FORMATS = ("dense", "csr", "csc", "coo", "dcsr")


def out_format(name: str, ndim: int) -> Format:
    if name not in OUT_FORMATS:
        raise IllFormedProgram(f"out must be one of {', '.join(OUT_FORMATS)}, found {name!r}")
    if name == "dense" or ndim == 0:
        return named_format("dense", ndim)
    if name in ("csr", "csc", "dcsr") and ndim > 2:
        return named_format("coo", ndim)  # n-d sparse results are COO
    if name in ("csc", "dcsr") and ndim == 1:
        return named_format("csr", 1)
    return named_format(name, ndim)


def trim(arr: np.ndarray, n: int) -> np.ndarray:
    """The first ``n`` entries of an output buffer we allocated and nobody else references:
    shrunk in place (``realloc``), so a result does not hold on to its upper-bound size —
    a strided slice keeps a quarter of its input's entries, not all of them."""
    if arr.shape[0] > n:
        arr.resize(n, refcheck=False)
    return arr


def combine_zero(monoid: str, out: np.ndarray, missing: np.ndarray) -> None:
    """``out[missing] = monoid(out[missing], 0)``, NumPy's semantics (NaN propagates)."""
    if not missing.any():
        return
    zero = np.zeros((), out.dtype)
    fn = {"sum": np.add, "prod": np.multiply, "max": np.maximum, "min": np.minimum,
          "any": np.logical_or, "all": np.logical_and}[monoid]
    out[missing] = fn(out[missing], zero)


def compress(crds, fmt: Format, shape, out_index) -> dict[str, np.ndarray]:
    """Sorted coordinate lists (storage order) -> the level arrays of ``fmt``."""
    ix = np.dtype(out_index)
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


def wrap(fmt: Format, shape, val, arrays, library):
    """Level arrays in ``fmt`` as the library's array type."""
    if fmt.is_dense:
        return val
    kinds = fmt.kinds
    if kinds == ("pos", "pos"):  # dcsr: scipy has no DCSR, expand pos over all rows
        rows = shape[fmt.mode_order[0]]
        counts = np.zeros(rows, dtype=np.int64)
        counts[arrays["crd0"]] = np.diff(arrays["pos1"])
        pos = np.zeros(rows + 1, dtype=arrays["crd1"].dtype)
        np.cumsum(counts, out=pos[1:])
        name = "csr" if fmt.mode_order == (0, 1) else "csc"
        return runtime.wrap_result(name, shape, val, {"pos1": pos, "crd1": arrays["crd1"]},
                                   library)
    name = fmt.name
    if len(shape) == 1 and kinds == ("pos",) and fmt.name == "csr":
        arrays = dict(arrays, pos0=np.array([0, val.shape[0]], dtype=arrays["crd0"].dtype))
    return runtime.wrap_result(name, shape, val, arrays, library)


def from_dense(dense: np.ndarray, fmt: Format, library: str):
    """A dense result in the requested format (dense-valued results of sparse inputs)."""
    if fmt.is_dense:
        return dense
    import scipy.sparse as sp
    if dense.ndim == 2 and fmt.name in ("csr", "csc", "dcsr"):
        res = (sp.csr_array if fmt.mode_order == (0, 1) else sp.csc_array)(dense)
        if library == "pydata":
            import sparse
            return sparse.GCXS.from_scipy_sparse(res)
        return res
    nz = np.nonzero(dense)
    val = dense[nz]
    arrays = {f"crd{d}": c for d, c in enumerate(nz)}
    if dense.ndim == 1 and fmt.name == "csr":
        arrays["pos0"] = np.array([0, val.shape[0]])
    return runtime.wrap_result("csr" if (dense.ndim == 1 and fmt.name == "csr") else "coo",
                               dense.shape, val, arrays, library)

"""Sums, differences and elementwise products of two matrices by scipy's row merges: a
few times faster than merging keys, where scipy computes what the zero algebra gives."""

from __future__ import annotations

import numpy as np

from sparsefold.compiler.fallback.values import I64, Sparse, is_zero
from sparsefold.spec.compute import Map

__all__ = ["matrices", "csr_structure", "union_csr"]


_SCIPY_OPS = {"add": lambda x, y: x + y, "subtract": lambda x, y: x - y,
              "multiply": lambda x, y: x.multiply(y)}
_NUMPY_OPS = {"add": np.add, "subtract": np.subtract, "multiply": np.multiply}
_SCIPY_FAST = frozenset(np.dtype(t) for t in ("int32", "int64", "float32", "float64",
                                              "complex64", "complex128"))


def csr_structure(v: Sparse) -> tuple[np.ndarray, np.ndarray]:
    if v.csr is not None:
        return v.csr
    rows, cols = v.coords
    indptr = np.zeros(v.shape[0] + 1, dtype=I64)
    np.cumsum(np.bincount(rows, minlength=v.shape[0]), out=indptr[1:])
    return indptr, cols


def _same_structure(x: Sparse, y: Sparse) -> bool:
    """Do ``x`` and ``y`` hold the very same CSR arrays (values made from one operand's
    entries share them)?"""
    return x.csr is not None and y.csr is not None and x.csr[0] is y.csr[0] and \
        x.csr[1] is y.csr[1]


def matrices(node: Map, args: list) -> Sparse | None:
    """``x + y``, ``x - y``, ``x * y`` of two matrices' entries by scipy's row merges (a
    few times faster than merging keys) when scipy computes what the zero algebra gives:
    both operands plain and of the result's dtype, and no entry of the result 0 (scipy
    drops those; the kernels keep them): checked against the boolean structure's count,
    unless every value is positive (no sum or product is then 0). None: not so."""
    name = node.fn.name
    x, y = args
    if name not in _SCIPY_OPS or len(node.shape) != 2 or not (
            isinstance(x, Sparse) and isinstance(y, Sparse)) or not (
            x.dtype == y.dtype == node.dtype and node.dtype in _SCIPY_FAST) or not (
            is_zero(x.background) and is_zero(y.background)):
        return None
    import scipy.sparse as sp
    shape = x.shape
    if _same_structure(x, y):  # one pattern: the entries are its, values combined in place
        with np.errstate(all="ignore"):
            vals = _NUMPY_OPS[name](x.vals, y.vals).astype(node.dtype, copy=False)
        return Sparse(shape, np.ascontiguousarray(vals), 0, csr=x.csr)

    def matrix(v, data):
        if isinstance(v, Sparse):
            indptr, indices = csr_structure(v)
        else:  # a scipy result: its structure as booleans
            indptr, indices, data = v.indptr, v.indices, np.ones(v.nnz, dtype=bool)
        m = sp.csr_array((data, indices, indptr), shape=shape)
        m.has_canonical_format = True  # (the entries are canonical: scipy merges rows)
        return m
    result = _SCIPY_OPS[name](matrix(x, x.vals), matrix(y, y.vals))
    positive = name != "subtract" and node.dtype.kind in "if" and x.nnz and y.nnz and \
        bool(np.all(x.vals > 0)) and bool(np.all(y.vals > 0)) and (
            name == "add" or float(x.vals.min()) * float(y.vals.min()) > 0)
    vals = np.ascontiguousarray(result.data, dtype=node.dtype)
    if not positive:
        ones = [matrix(v, np.ones(v.nnz, dtype=bool)) for v in (x, y)]
        entries = ones[0].multiply(ones[1]) if name == "multiply" else ones[0] + ones[1]
        entries.has_canonical_format = True
        if result.nnz != entries.nnz:
            # scipy dropped the entries that came out 0 (``A - A.T`` on the diagonal):
            # the entries are the structure's, 0 where scipy has none
            at = sp.csr_array((np.arange(1, entries.nnz + 1, dtype=I64), entries.indices,
                               entries.indptr), shape=shape)
            at.has_canonical_format = True
            found = sp.csr_array(at.multiply(matrix(result, None)))  # (result: canonical)
            vals = np.zeros(entries.nnz, dtype=node.dtype)
            vals[found.data - 1] = result.data
            result = entries
    return Sparse(shape, vals, 0, csr=(result.indptr, result.indices))


def union_csr(values: list[Sparse]) -> tuple[np.ndarray, np.ndarray, list[np.ndarray]]:
    """The entries stored by any of ``values`` (sparse matrices of one shape) as CSR
    arrays, and for each value where each of its entries lands among them — by scipy's
    row merges: the union of the boolean structures (a logical or, which drops nothing),
    then each value's positions read off the union's numbered entries (an elementwise
    product with its structure, in its own canonical order). Linear in the entries; the
    merge of linear keys it replaces binary-searched one operand in the other."""
    import scipy.sparse as sp
    shape = values[0].shape
    if all(_same_structure(values[0], v) for v in values[1:]):
        # one pattern (maps of one operand: ``where(A > 0, exp(A), 0)``): no merge
        indptr, indices = values[0].csr
        every = np.arange(values[0].nnz, dtype=I64)
        return indptr, indices, [every] * len(values)

    def ones(v):
        indptr, indices = csr_structure(v)
        m = sp.csr_array((np.ones(v.nnz, dtype=bool), indices, indptr), shape=shape)
        m.has_canonical_format = True
        return m
    structures = [ones(v) for v in values]
    union = structures[0]
    for m in structures[1:]:
        union = union + m
    union = sp.csr_array(union)
    union.has_canonical_format = True
    numbered = sp.csr_array((np.arange(1, union.nnz + 1, dtype=I64), union.indices,
                             union.indptr), shape=shape)
    numbered.has_canonical_format = True
    positions = []
    for m in structures:
        at = sp.csr_array(numbered.multiply(m))
        positions.append(np.asarray(at.data, dtype=I64) - 1)
    return union.indptr, union.indices, positions

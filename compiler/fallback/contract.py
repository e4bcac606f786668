"""Matrix products in the fallback: ``sum(X' * Y', axes)`` where ``X'`` and ``Y'`` are
broadcasts of two operands (``A @ B``, ``A @ x``, ``tensordot``), computed by scipy's
sparse matrix product (or NumPy's, for two dense operands) instead of expanding the
broadcast product.

Each operand's *core* is found under the broadcasts and inserted axes above it; the
product's axes are then ``I`` (only ``X`` has them), ``J`` (only ``Y``) and ``K`` (both,
summed). The cores are read as matrices ``X: (I, K)`` and ``Y: (K, J)`` (their axes
linearized row-major) and multiplied. Patterns this does not cover — an axis both keep (a
batch), an axis one of them alone sums — are left to the elementwise product and the
reduction (``evaluate.py``).

A product of two sparse operands that each keep an axis of their own is sparse, with the
*structural* entries the compiled kernels store (Gustavson's symbolic phase: every
coordinate some pair of entries meets, a sum that cancels to 0 included): the values come
from scipy's product, which drops exact zeros, and the entries from the product of the two
structures as booleans, which never cancels. Any other product is dense.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sparsefold.compiler.fallback.located import DenseArray, operand_value
from sparsefold.compiler.fallback.values import (
    I64,
    Broadcast,
    Declined,
    Located,
    Sparse,
    is_zero,
    linear_keys,
    unravel,
)
from sparsefold.spec import sizes as sz
from sparsefold.spec.compute import Input, Literal, Map, Reduce
from sparsefold.spec.ir import Node
from sparsefold.spec.ops_axes import BroadcastTo, ExpandDims
from sparsefold.spec.printer import topological

__all__ = ["Contraction", "find_contraction", "sparse_valued_reduction"]

_SCIPY_DTYPES = frozenset(np.dtype(t) for t in (
    "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float32", "float64", "complex64", "complex128"))


def _core(node: Node) -> tuple[Node, tuple[int | None, ...]] | None:
    """``node`` without the broadcasts and inserted axes above it, and for each of the
    core's axes the axis of ``node`` it is (None: a size-1 axis that a broadcast
    stretches, read at 0)."""
    axes: list[int | None] = list(range(node.ndim))
    while True:
        if isinstance(node, BroadcastTo):
            arg = node.arg
            lead = node.ndim - arg.ndim
            axes = [None if (arg.shape[d] == sz.Const(1) and
                             node.shape[d + lead] != sz.Const(1)) else axes[d + lead]
                    for d in range(arg.ndim)]
            node = arg
        elif isinstance(node, ExpandDims):
            inserted = node.axis % node.ndim
            axes = axes[:inserted] + axes[inserted + 1:]
            node = node.arg
        else:
            return node, tuple(axes)


@dataclass(frozen=True)
class Contraction:
    """``node`` computed as ``X (I, K) @ Y (K, J)`` from the cores ``x`` and ``y``; each
    ``*_axes`` maps a core's axes to product axes (None: read at 0)."""

    node: Reduce
    x: Node
    x_axes: tuple[int | None, ...]
    y: Node
    y_axes: tuple[int | None, ...]
    i: tuple[int, ...]
    j: tuple[int, ...]
    k: tuple[int, ...]

    def operands(self) -> tuple[Node, Node]:
        return self.x, self.y

    def run(self, ctx):
        budget = ctx.budget
        x = operand_value(ctx.values[id(self.x)], budget)
        y = operand_value(ctx.values[id(self.y)], budget)
        node = self.node
        sizes = ctx.shape(node.arg)
        ni = _count(sizes, self.i)
        nj = _count(sizes, self.j)
        nk = _count(sizes, self.k)
        sparse_x, sparse_y = _is_sparse(x), _is_sparse(y)
        dtype = node.dtype
        if dtype not in _SCIPY_DTYPES or x.dtype not in _SCIPY_DTYPES or \
                y.dtype not in _SCIPY_DTYPES:
            raise Declined(f"a matrix product in {dtype}")
        out_shape = ctx.shape(node)
        kept = [d for d in range(len(sizes)) if d not in node.axes]
        if sparse_x and sparse_y and self.i and self.j and None not in self.x_axes + \
                self.y_axes:
            mx = _matrix(x, self.x_axes, self.i, self.k, sizes, budget)
            my = _matrix(y, self.y_axes, self.k, self.j, sizes, budget)
            return self._sparse(mx, my, sizes, kept, out_shape, budget)
        budget.dense(out_shape, dtype, "a matrix product")
        mx = _matrix(x, self.x_axes, self.i, self.k, sizes, budget) if sparse_x else \
            _dense_matrix(x, self.x_axes, self.i, self.k, sizes, ni, nk, budget)
        my = _matrix(y, self.y_axes, self.k, self.j, sizes, budget) if sparse_y else \
            _dense_matrix(y, self.y_axes, self.k, self.j, sizes, nk, nj, budget)
        if sparse_x or sparse_y:
            product = mx @ my
            product = product.toarray() if hasattr(product, "toarray") else product
        else:
            product = np.matmul(mx, my)
        product = np.asarray(product).astype(dtype, copy=False).reshape(
            [sizes[d] for d in self.i] + [sizes[d] for d in self.j])
        # product axes (I..., J...) to the kept axes in order (size-1 axes neither has)
        order = list(self.i) + list(self.j)
        present = [d for d in kept if d in order]
        result = np.transpose(product, [order.index(d) for d in present])
        sparse_valued = sparse_x and sparse_y and id(node) in ctx.sparse_valued
        return DenseArray(np.ascontiguousarray(result).reshape(out_shape), sparse_valued)

    def _sparse(self, mx, my, sizes, kept, out_shape, budget):
        import scipy.sparse as sp
        values = sp.csr_array(mx @ my)
        if _cannot_cancel(mx.data, my.data):
            structure = values  # every structural sum is nonzero: scipy dropped nothing
        else:
            structure = sp.csr_array(_pattern(mx) @ _pattern(my))
            if structure.nnz == values.nnz:  # nothing cancelled: the same entries
                structure = values
            else:  # scipy dropped the sums that cancelled: the entries are the structure's
                structure.sort_indices()
        budget.sparse(structure.nnz, "a sparse matrix product")
        values.sort_indices()
        if structure is values:
            vals = np.asarray(values.data).astype(self.node.dtype, copy=False)
        else:  # the values at their entries among the structure's (a subset of them)
            nj = structure.shape[1]
            keys = _row_keys(structure, nj)
            vals = np.zeros(structure.nnz, dtype=self.node.dtype)
            if values.nnz:
                vals[np.searchsorted(keys, _row_keys(values, nj))] = values.data
        if len(kept) == 2 and self.i == (kept[0],) and self.j == (kept[1],):
            return Sparse(out_shape, vals, 0, csr=(structure.indptr, structure.indices))
        rows = np.repeat(np.arange(structure.shape[0], dtype=I64), np.diff(structure.indptr))
        i_coords = unravel(rows, tuple(sizes[d] for d in self.i))
        j_coords = unravel(structure.indices.astype(I64), tuple(sizes[d] for d in self.j))
        by_axis = dict(zip(self.i, i_coords)) | dict(zip(self.j, j_coords))
        coords = tuple(by_axis.get(d, np.zeros(rows.shape[0], I64)) for d in kept)
        return Sparse.from_entries(out_shape, coords, vals, 0, budget, "a matrix product")


def _row_keys(m, columns: int) -> np.ndarray:
    """Row-major keys of a CSR matrix's entries."""
    rows = np.repeat(np.arange(m.shape[0], dtype=I64), np.diff(m.indptr))
    rows *= columns
    rows += m.indices
    return rows


def _cannot_cancel(x: np.ndarray, y: np.ndarray) -> bool:
    """No sum of products of ``x``'s and ``y``'s values can be 0: booleans (a product is
    an *or*), or real floats each of one strict sign whose smallest magnitudes multiply to
    a nonzero float (every product then has one sign and none underflows). Then the
    product's entries are its structure, and scipy's product drops none."""
    if x.dtype.kind == "b" and y.dtype.kind == "b":
        return True
    if x.dtype.kind != "f" or y.dtype.kind != "f" or not x.size or not y.size:
        return False
    ax, ay = np.abs(x), np.abs(y)
    one_sign = (bool(np.all(x > 0)) or bool(np.all(x < 0))) and \
        (bool(np.all(y > 0)) or bool(np.all(y < 0)))
    with np.errstate(all="ignore"):
        return one_sign and float(ax.min()) * float(ay.min()) > 0 and \
            bool(np.isfinite(ax.max())) and bool(np.isfinite(ay.max()))


def _count(sizes, axes) -> int:
    n = 1
    for d in axes:
        n *= sizes[d]
    return n


def _is_sparse(value) -> bool:
    return isinstance(value, (Sparse, Broadcast)) and is_zero(value.background)


def _pattern(m):
    """The structure of a scipy CSR matrix as booleans (a sum of them never cancels)."""
    import scipy.sparse as sp
    return sp.csr_array((np.ones(m.nnz, dtype=bool), m.indices, m.indptr), shape=m.shape)


def _matrix(value, axes, rows_axes, cols_axes, sizes, budget):
    """A sparse core as a scipy CSR matrix, rows the linearized ``rows_axes``, columns the
    ``cols_axes`` (product axes)."""
    import scipy.sparse as sp
    v = value.materialize(budget)
    shape = (_count(sizes, rows_axes), _count(sizes, cols_axes))
    core_of = {a: c for c, a in enumerate(axes) if a is not None}
    row_core = [core_of[a] for a in rows_axes]
    col_core = [core_of[a] for a in cols_axes]
    if v.csr is not None and row_core == [0] and col_core == [1]:
        indptr, indices = v.csr
        return sp.csr_array((v.vals, indices, indptr), shape=shape)
    if row_core + col_core == list(range(len(v.shape))):
        # the entries are in row-major order of (rows, columns) already: CSR directly
        rows = linear_keys(tuple(v.coords[c] for c in row_core),
                           tuple(sizes[a] for a in rows_axes)) if row_core else \
            np.zeros(v.nnz, I64)
        cols = linear_keys(tuple(v.coords[c] for c in col_core),
                           tuple(sizes[a] for a in cols_axes)) if col_core else \
            np.zeros(v.nnz, I64)
        indptr = np.zeros(shape[0] + 1, dtype=I64)
        np.cumsum(np.bincount(rows, minlength=shape[0]), out=indptr[1:])
        return sp.csr_array((v.vals, cols, indptr), shape=shape)
    rows = linear_keys(tuple(v.coords[c] for c in row_core), tuple(sizes[a] for a in rows_axes))
    cols = linear_keys(tuple(v.coords[c] for c in col_core), tuple(sizes[a] for a in cols_axes))
    if not row_core:
        rows = np.zeros(v.nnz, I64)
    if not col_core:
        cols = np.zeros(v.nnz, I64)
    m = sp.coo_array((v.vals, (rows, cols)), shape=shape).tocsr()
    m.sum_duplicates()  # (distinct entries: only sorts)
    return m


def _dense_matrix(value: Located, axes, rows_axes, cols_axes, sizes, nrows, ncols, budget):
    """A located core as a dense ``(nrows, ncols)`` matrix."""
    full = np.asarray(value.full(budget))
    keep = [c for c, a in enumerate(axes) if a is not None]
    dropped = tuple(c for c, a in enumerate(axes) if a is None)
    if dropped:
        full = full[tuple(0 if c in dropped else slice(None) for c in range(len(axes)))]
    axis_of = {axes[c]: n for n, c in enumerate(keep)}
    perm = [axis_of[a] for a in rows_axes] + [axis_of[a] for a in cols_axes]
    return np.ascontiguousarray(np.transpose(full, perm)).reshape(nrows, ncols)


def find_contraction(node: Reduce) -> Contraction | None:
    """``node`` as a matrix product of two operands, or None (module docstring)."""
    monoid = node.monoid if isinstance(node.monoid, str) else node.monoid.name
    arg = node.arg
    if monoid != "sum" or not isinstance(arg, Map) or arg.fn.name != "multiply" or \
            len(arg.args) != 2 or any(isinstance(a, Literal) for a in arg.args) or \
            arg.dtype != node.dtype:
        return None
    (x, x_axes), (y, y_axes) = (_core(a) for a in arg.args)
    sx = {a for a in x_axes if a is not None}
    sy = {a for a in y_axes if a is not None}
    if len(sx) != sum(a is not None for a in x_axes) or \
            len(sy) != sum(a is not None for a in y_axes):
        return None
    if sx == sy:
        return None  # an elementwise product and a sum: evaluate.py's intersection
    reduced = set(node.axes)
    if (sx & sy) - reduced or (sx ^ sy) & reduced:
        return None  # a batch axis, or an axis one operand alone sums
    for d in range(arg.ndim):
        if d not in sx | sy and sz.const_value(arg.shape[d]) != 1:
            return None
    return Contraction(node, x, x_axes, y, y_axes, tuple(sorted(sx - sy)),
                       tuple(sorted(sy - sx)), tuple(sorted(sx & sy)))


def _stretch_free_core(node: Node) -> tuple[int, ...] | None:
    """The product axes of ``node``'s core (under its broadcasts and inserted axes), or
    None when a broadcast stretches one of the core's own axes: the compiled kernels'
    recognizer (``compiler/plan/contract.core``) reads it so."""
    core, axes = _core(node)
    return None if None in axes else tuple(axes)


def _has_sparse_input(node: Node) -> bool:
    return any(isinstance(n, Input) and not n.format.is_dense for n in topological(node))


def sparse_valued_reduction(node: Reduce) -> bool:
    """Do the compiled kernels treat ``node`` as sparse — a sum of the product of two sparse
    operands in which one keeps an axis of its own (``A @ B``, ``A @ s`` with ``s`` a
    sparse vector) — rather than dense-valued, as every other reduction is? (Where the
    operands' cores are not sparse when the call runs, it is dense after all.)"""
    monoid = node.monoid if isinstance(node.monoid, str) else node.monoid.name
    arg = node.arg
    if monoid != "sum" or not isinstance(arg, Map) or arg.fn.name != "multiply" or \
            len(arg.args) != 2 or not all(_has_sparse_input(a) for a in arg.args):
        return False
    found = [_stretch_free_core(a) for a in arg.args]
    if None in found:
        return False
    ax, ay = (set(f) for f in found)
    reduced = set(node.axes)
    return bool(ax - ay - reduced or ay - ax - reduced)

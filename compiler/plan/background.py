"""A reduction's background per output cell: the value its dense-valued argument takes
where no sparse operand stores, when that value depends on the kept coordinates only.

``var(A, axis=1)`` reduces ``(A - m)**2`` with ``m`` the row means broadcast along the
columns: outside ``A``'s stored entries the argument is ``(0 - m_i)**2`` — one value per
output cell, whatever the column. The lattice keeps that value as a node over the located
operands (``lattice.Lattice.outside``); the plan then visits only the stored entries,
counting them per cell, and the runtime combines each cell with its background once per
unvisited coordinate (``kernel.combine_background``): O(nnz + cells), not rows x columns.

:func:`per_cell` decides whether a background node qualifies — it reads located operands
(dense inputs through broadcasts and new axes, literals, sizes, an ``iota`` along a kept
axis) that do not vary along the reduced axes, and the reduction's chain only adds or
drops axes of length 1 — and :func:`evaluate` computes it with NumPy (the functions' own
``impl``, as the interpreter does) without materializing a broadcast: one value per cell.
"""

from __future__ import annotations

import numpy as np

from sparsefold.spec import sizes as sz
from sparsefold.spec.compute import Input, Iota, Literal, Map, SizeOf
from sparsefold.spec.ir import Node
from sparsefold.spec.ops_axes import BroadcastTo, ExpandDims, Squeeze

__all__ = ["per_cell", "evaluate", "summable", "total"]


def _axis_in(node_ndim: int, arg: Node, d: int) -> int | None:
    """Axis ``d`` of a broadcast result as ``arg``'s axis (right-aligned), or None when
    ``arg`` is constant along it (missing, or of length 1)."""
    a = d - (node_ndim - arg.ndim)
    if a < 0 or sz.const_value(arg.shape[a]) == 1:
        return None
    return a


def _constant_along(node: Node, axes: frozenset[int]) -> bool:
    """``node``'s value does not change along ``axes`` (and it is made of the node kinds
    :func:`evaluate` reads)."""
    if isinstance(node, (Literal, SizeOf)):
        return True
    if isinstance(node, Input):
        return node.format.is_dense and all(sz.const_value(node.shape[d]) == 1 for d in axes)
    if isinstance(node, Iota):
        return node.axis not in axes
    if isinstance(node, Map):
        for arg in node.args:
            inner = frozenset(a for d in axes if (a := _axis_in(node.ndim, arg, d)) is not None)
            if not _constant_along(arg, inner):
                return False
        return True
    if isinstance(node, BroadcastTo):
        inner = frozenset(a for d in axes if (a := _axis_in(node.ndim, node.arg, d)) is not None)
        return _constant_along(node.arg, inner)
    if isinstance(node, ExpandDims):
        inner = frozenset(d if d < node.axis else d - 1 for d in axes if d != node.axis)
        return _constant_along(node.arg, inner)
    return False


def per_cell(background: Node, reduction) -> bool:
    """Can the runtime combine ``background`` per output cell for ``reduction`` (a
    ``plans.Reduction``)?"""
    if not all(isinstance(op, (ExpandDims, Squeeze)) for op in reduction.chain):
        return False
    return _constant_along(background, frozenset(reduction.node.axes))


def _readable(node: Node) -> bool:
    """Made of the node kinds :func:`_value` reads."""
    if isinstance(node, (Literal, SizeOf, Iota)):
        return True
    if isinstance(node, Input):
        return node.format.is_dense
    if isinstance(node, Map):
        return all(_readable(a) for a in node.args)
    if isinstance(node, (BroadcastTo, ExpandDims)):
        return _readable(node.arg)
    return False


def summable(background: Node, reduction) -> bool:
    """Can the runtime sum ``background`` over the reduced axes (numbers, read without
    materializing its broadcasts; the chain only adds or drops axes of length 1)?"""
    return background.dtype.kind in "iufc" and _readable(background) and \
        all(isinstance(op, (ExpandDims, Squeeze)) for op in reduction.chain)


def total(background: Node, reduction, arrays: dict[str, np.ndarray], env: dict[str, int],
          out_shape: tuple[int, ...], dtype) -> np.ndarray:
    """``background`` summed over the reduced axes, per output cell: its own values summed
    where they vary, times the extent where it is broadcast (O(its values), not O(cells x
    reduced extent))."""
    v = _value(background, arrays, env)
    v = v.reshape((1,) * (background.ndim - v.ndim) + v.shape).astype(dtype, copy=False)
    axes = tuple(reduction.node.axes)
    full = [int(sz.evaluate(n, env)) for n in reduction.node.arg.shape]
    factor = 1
    for d in axes:
        if v.shape[d] == 1 and full[d] != 1:
            factor *= full[d]
    varying = tuple(d for d in axes if v.shape[d] != 1)
    s = np.sum(v, axis=varying, keepdims=True, dtype=dtype) if varying else v
    with np.errstate(all="ignore"):
        s = s * dtype.type(factor) if factor != 1 else s
    kept = tuple(n for d, n in enumerate(s.shape) if d not in axes)
    s = s.reshape(kept)
    s = np.broadcast_to(s, tuple(n for d, n in enumerate(full) if d not in axes))
    return np.broadcast_to(s.reshape(out_shape) if s.size == int(np.prod(out_shape)) else s,
                           out_shape)


def _value(node: Node, arrays: dict[str, np.ndarray], env: dict[str, int]) -> np.ndarray:
    """``node``'s value as an array that broadcasts to its shape (no broadcast expanded)."""
    if isinstance(node, Literal):
        return np.asarray(node.typed_value())
    if isinstance(node, SizeOf):
        return np.asarray(sz.evaluate(node.size, env), dtype=node.dtype)
    if isinstance(node, Input):
        return np.asarray(arrays[node.name])
    if isinstance(node, Iota):
        n = int(sz.evaluate(node.target[node.axis], env))
        shape = [1] * node.ndim
        shape[node.axis] = n
        return np.arange(n, dtype=node.dtype).reshape(shape)
    if isinstance(node, Map):
        vals = []
        for a in node.args:
            v = _value(a, arrays, env)
            vals.append(a.typed_value() if isinstance(a, Literal) else v)
        with np.errstate(all="ignore"):
            out = node.fn.impl(*vals)
        return np.asarray(out).astype(node.dtype, copy=False)
    if isinstance(node, BroadcastTo):
        v = _value(node.arg, arrays, env)
        return v.reshape((1,) * (node.ndim - v.ndim) + v.shape)
    if isinstance(node, ExpandDims):
        v = _value(node.arg, arrays, env)
        v = v.reshape((1,) * (node.arg.ndim - v.ndim) + v.shape)
        return np.expand_dims(v, node.axis)
    raise TypeError(f"not a per-cell background node: {type(node).__name__}")


def evaluate(background: Node, reduction, arrays: dict[str, np.ndarray],
             env: dict[str, int], out_shape: tuple[int, ...]) -> np.ndarray:
    """The background of every output cell (an array of ``out_shape``, read-only)."""
    v = _value(background, arrays, env)
    v = v.reshape((1,) * (background.ndim - v.ndim) + v.shape)
    axes = tuple(reduction.node.axes)
    v = v[tuple(slice(0, 1) if d in axes else slice(None) for d in range(v.ndim))]
    kept = tuple(n for d, n in enumerate(v.shape) if d not in axes)
    v = v.reshape(kept)
    full = tuple(int(sz.evaluate(n, env)) for d, n in enumerate(reduction.node.arg.shape)
                 if d not in axes)
    v = np.broadcast_to(v, full)
    return np.broadcast_to(v.reshape(out_shape) if v.size == int(np.prod(out_shape)) else
                           v, out_shape)

"""Located values of the fallback: values at every coordinate (dense inputs, literals,
coordinates, reductions, expressions of them), read where an expression needs them
(``at``: gathered through the shape operators' backward maps, so a broadcast is never
expanded) or materialized (``full``, within the budget); and how a value enters another
node as an operand."""

from __future__ import annotations

import numpy as np

from sparsefold.compiler.fallback.values import (
    I64,
    Broadcast,
    Budget,
    Declined,
    Located,
    Sparse,
    is_zero,
    union,
    unravel,
)
from sparsefold.spec import sizes as sz
from sparsefold.spec.compute import Map
from sparsefold.spec.ir import ShapeOp
from sparsefold.spec.ops_axes import BroadcastTo, ExpandDims, PermuteDims, Squeeze
from sparsefold.spec.ops_concat import Concat
from sparsefold.spec.ops_reshape import Collapse, Split

__all__ = ["DenseArray", "Scalar", "Coordinate", "MapLocated", "UniverseMap", "ShapeLocated",
           "projected", "apply", "spread", "nonzeros", "operand_value"]


def operand_value(value, budget: Budget):
    """A value as an operand of another node: a sparse-valued reduction's nonzeros."""
    if isinstance(value, DenseArray) and value.sparse_valued:
        return nonzeros(value, budget)
    return value


class DenseArray(Located):
    """A NumPy array (a dense input, a reduction's result). ``sparse_valued``: a reduction
    the compiled kernels treat as sparse (a product of two sparse operands in which one
    keeps an axis of its own, ``A @ s``): computed densely, but an operand of the rest of
    the program through its nonzeros, as the kernels' sparse temporary of it is."""

    __slots__ = ("array", "sparse_valued")

    def __init__(self, array: np.ndarray, sparse_valued: bool = False):
        super().__init__(array.shape, array.dtype)
        self.array = array
        self.sparse_valued = sparse_valued

    def at(self, coords):
        return self.array[tuple(coords)] if self.shape else self.array[()]

    def full(self, budget):
        return self.array


class Scalar(Located):
    """A literal or a size: one value everywhere (a 0-d node)."""

    __slots__ = ("value",)

    def __init__(self, shape, dtype, value):
        super().__init__(shape, dtype)
        self.value = value

    def operand(self, coords):
        return self.value  # a weak literal stays a Python scalar (NEP 50)

    def whole(self, budget):
        return self.value

    def at(self, coords):
        return np.asarray(self.value, self.dtype)

    def full(self, budget):
        return np.asarray(self.value, self.dtype)


class Coordinate(Located):
    """``Iota``: each element's coordinate along ``axis``."""

    __slots__ = ("axis",)

    def __init__(self, shape, dtype, axis):
        super().__init__(shape, dtype)
        self.axis = axis

    def at(self, coords):
        return np.asarray(coords[self.axis], self.dtype)

    def full(self, budget):
        budget.dense(self.shape, self.dtype, "iota")
        return np.indices(self.shape, dtype=self.dtype)[self.axis] if self.shape else \
            np.zeros((), self.dtype)


def projected(coords, arg_shape: tuple[int, ...], shape: tuple[int, ...]):
    """An argument's coordinates under a map's broadcasting (right-aligned; size-1 axes of
    the argument read at 0)."""
    lead = len(shape) - len(arg_shape)
    return tuple(np.zeros((), I64) if arg_shape[d] == 1 and shape[d + lead] != 1
                 else coords[d + lead] for d in range(len(arg_shape)))


def apply(node: Map, operands) -> np.ndarray:
    try:
        out = node.fn.impl(*operands)
    except (ValueError, ZeroDivisionError) as exc:  # the data's fault: the kernel reports it
        raise Declined(f"{node.fn.name}: {exc}") from None
    return np.asarray(out).astype(node.dtype, copy=False)


class MapLocated(Located):
    """A map of located arguments."""

    __slots__ = ("node", "args")

    def __init__(self, node: Map, args: list, shape):
        super().__init__(shape, node.dtype)
        self.node, self.args = node, args

    def at(self, coords):
        ops = [a.operand(projected(coords, a.shape, self.shape)) for a in self.args]
        return apply(self.node, ops)

    def full(self, budget):
        budget.dense(self.shape, self.dtype, f"map {self.node.fn.name}")
        out = apply(self.node, [a.whole(budget) for a in self.args])
        return np.broadcast_to(out, self.shape) if out.shape != self.shape else out


class UniverseMap(MapLocated):
    """A map over sparse arguments that is not a constant where they store nothing (a
    located, non-literal argument takes part: ``A + x``): dense-valued. Read where needed;
    computed everywhere as ``f`` of the sparse arguments' backgrounds and the located ones,
    then overwritten at the sparse arguments' entries."""

    __slots__ = ()

    def full(self, budget):
        budget.dense(self.shape, self.dtype, f"dense-valued map {self.node.fn.name}")
        sparse = [a for a in self.args if isinstance(a, (Sparse, Broadcast))]
        ops = [np.asarray(a.background, a.dtype) if isinstance(a, (Sparse, Broadcast))
               else a.whole(budget) for a in self.args]
        out = np.array(np.broadcast_to(apply(self.node, ops), self.shape))
        spreads = [spread(a, self.shape, budget) for a in sparse]
        keys, _ = union([s.materialize(budget) for s in spreads])
        if keys.shape[0]:
            coords = unravel(keys, self.shape)
            out[coords] = self.at(coords)
        return out


def spread(value, shape, budget: Budget):
    """A sparse argument of a map, repeated to the map's shape when it is smaller."""
    if value.shape == shape:
        return value
    base = value.materialize(budget)
    lead = len(shape) - len(base.shape)
    stretched = tuple(d + lead for d in range(len(base.shape))
                      if base.shape[d] == 1 and shape[d + lead] != 1)
    return Broadcast(base, shape, stretched)


class ShapeLocated(Located):
    """A shape operator over located operands: gathered through its backward maps."""

    __slots__ = ("node", "operands", "env", "pieces", "fill")

    def __init__(self, node: ShapeOp, operands: list, shape, env):
        super().__init__(shape, node.dtype)
        self.node, self.operands, self.env = node, operands, env
        im = node.index_map()
        self.pieces, self.fill = im.pieces, im.fill

    def at(self, coords):
        coords = tuple(np.asarray(c, I64) for c in coords)
        n = np.broadcast(*coords).shape if coords else ()
        grid = dict(self.env)
        grid.update(sz.out_binding(coords))
        out = np.empty(n, self.dtype) if self.fill is None else np.full(n, self.fill,
                                                                        self.dtype)
        for piece in self.pieces:
            mask = np.broadcast_to(np.asarray(sz.evaluate(piece.guard, grid), bool), n)
            if not mask.any():
                continue
            src = [np.broadcast_to(np.asarray(sz.evaluate(b, grid), I64), n)[mask]
                   for b in piece.backward]
            out[mask] = self.operands[piece.operand].at(tuple(src))
        return out

    def full(self, budget):
        node = self.node
        quick = self._numpy(budget)
        if quick is not None:
            return quick
        budget.dense(self.shape, self.dtype, type(node).__name__.lower())
        if not self.shape:
            return np.asarray(self.at(()), self.dtype)
        grid = np.indices(self.shape, sparse=True)
        return np.asarray(self.at(tuple(np.broadcast_arrays(*grid))), self.dtype)

    def _numpy(self, budget):
        """NumPy's own view or copy for the common operators (a broadcast stays a view)."""
        node, ops = self.node, self.operands
        if isinstance(node, BroadcastTo):
            return np.broadcast_to(ops[0].full(budget), self.shape)
        if isinstance(node, ExpandDims):
            return np.expand_dims(ops[0].full(budget), node.axis % len(self.shape))
        if isinstance(node, Squeeze):
            return np.squeeze(ops[0].full(budget), axis=tuple(node.axes))
        if isinstance(node, PermuteDims):
            return np.transpose(ops[0].full(budget), node.perm)
        if isinstance(node, (Collapse, Split)):
            budget.dense(self.shape, self.dtype, "reshape")
            return np.reshape(ops[0].full(budget), self.shape)
        if isinstance(node, Concat):
            budget.dense(self.shape, self.dtype, "concat")
            return np.concatenate([o.full(budget) for o in ops], axis=node.axis).astype(
                self.dtype, copy=False)
        return None


def nonzeros(value, budget: Budget) -> Sparse:
    """The nonzeros of an operand beside sparse ones whose backgrounds differ (a dense
    operand; a dense-valued expression, which the compiled kernel computes into a dense
    temporary first), as a sparse value with background 0; sparse values with background 0
    as they are."""
    if isinstance(value, (Sparse, Broadcast)) and is_zero(value.background):
        return value.materialize(budget)
    dense = np.asarray(value.full(budget))
    coords = tuple(c.astype(I64) for c in np.nonzero(dense))
    vals = dense[coords] if dense.ndim else dense.reshape(-1)[:0]
    return Sparse(dense.shape, np.ascontiguousarray(vals), 0, coords=coords)

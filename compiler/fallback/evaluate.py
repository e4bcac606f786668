"""The fallback's meaning of each node kind, in spec order, over the values of
``values.py`` (one function per node kind, as the interpreter has).

Conventions, stated once:

* Sizes are bound (``env``); coordinates are int64 arrays; index expressions are read with
  their NumPy reading (``sizes.evaluate``) on coordinate arrays.
* A shape operator over sparse operands maps their entries through its entry's **forward
  maps**, keeping those its forward guard admits, and sorts them when the map does not
  keep row-major order; over located operands it gathers through its **backward maps**
  where the values are read. A dense operand beside sparse ones contributes its nonzeros
  (as a compiled view of a dense leaf stores them).
* A map decides its result's entries by the function's zero algebra, as the merge lattice
  does (``compiler/lattice.py`` reads the same facts): the **intersection** of the
  arguments it annihilates at (``f(.., 0, ..) == 0``; for floats only beside finite
  literal and background values), else the **union** of its sparse arguments' entries,
  with background ``f`` of theirs — unless a located argument that is not a literal takes
  part, which makes the map dense-valued (a :class:`UniverseMap`: read where needed, or
  computed everywhere from the backgrounds and overwritten at the entries).
* A reduction accumulates entries per output cell (``ufunc.at``; ``bincount`` for float64
  sums) into a dense result, and combines the background once per coordinate no entry
  covers; ``sum(X * Y)`` that is a matrix product goes to ``contract.py``.
* Values are computed by each function's NumPy meaning (weak literals as Python scalars:
  NEP 50) and cast to the node's dtype, floating-point warnings silenced.
"""

from __future__ import annotations

import numpy as np

from sparsefold.compiler.fallback.values import (
    I64,
    Broadcast,
    Budget,
    Declined,
    Located,
    Sparse,
    intersection,
    is_zero,
    linear_keys,
    spread_values,
    union,
    unravel,
)
from sparsefold.spec import sizes as sz
from sparsefold.spec.compute import Input, Iota, Literal, Map, Reduce, SizeOf
from sparsefold.spec.formats import Format
from sparsefold.spec.functions import get_monoid
from sparsefold.spec.ir import Node, ShapeOp
from sparsefold.spec.ops_axes import BroadcastTo, ExpandDims, PermuteDims, Squeeze
from sparsefold.spec.ops_concat import Concat
from sparsefold.spec.ops_reshape import Collapse, Split
from sparsefold.storage.dense import dense_operand
from sparsefold.storage.levels import check_range, sparse_levels

__all__ = ["Context", "evaluate_node", "DenseArray", "Scalar", "UniverseMap", "nonzeros",
           "operand_value"]


class Context:
    """One call: the input arrays by name, the bound sizes, the memory budget, and the
    contraction plans found for the program's reductions (``contract.py``)."""

    def __init__(self, arrays: dict, env: dict[str, int], budget: Budget, contractions: dict,
                 sparse_valued: frozenset = frozenset()):
        self.arrays, self.env, self.budget = arrays, env, budget
        self.contractions = contractions
        self.sparse_valued = sparse_valued  # ids of sparse-valued reductions (contract.py)
        self.values: dict[int, object] = {}  # node id -> its value, as evaluated

    def shape(self, node: Node) -> tuple[int, ...]:
        return tuple(int(sz.evaluate(n, self.env)) for n in node.shape)


def evaluate_node(node: Node, args: list, ctx: Context):
    """The value of ``node`` from its operands' values ``args``."""
    if isinstance(node, Input):
        return eval_input(node, ctx)
    if isinstance(node, Literal):
        return Scalar((), node.dtype, node.typed_value())
    if isinstance(node, SizeOf):
        return Scalar((), node.dtype, np.asarray(int(sz.evaluate(node.size, ctx.env)),
                                                 node.dtype))
    if isinstance(node, Iota):
        return Coordinate(ctx.shape(node), node.dtype, node.axis)
    args = [operand_value(a, ctx.budget) for a in args]
    if isinstance(node, Map):
        return eval_map(node, args, ctx)
    if isinstance(node, Reduce):
        return eval_reduce(node, args[0] if args else None, ctx)
    if isinstance(node, ShapeOp):
        return eval_shape_op(node, args, ctx)
    raise Declined(f"{type(node).__name__} is not evaluated by the fallback")


def operand_value(value, budget: Budget):
    """A value as an operand of another node: a sparse-valued reduction's nonzeros."""
    if isinstance(value, DenseArray) and value.sparse_valued:
        return nonzeros(value, budget)
    return value


# --- located values ------------------------------------------------------------------------

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


def _projected(coords, arg_shape: tuple[int, ...], shape: tuple[int, ...]):
    """An argument's coordinates under a map's broadcasting (right-aligned; size-1 axes of
    the argument read at 0)."""
    lead = len(shape) - len(arg_shape)
    return tuple(np.zeros((), I64) if arg_shape[d] == 1 and shape[d + lead] != 1
                 else coords[d + lead] for d in range(len(arg_shape)))


def _apply(node: Map, operands) -> np.ndarray:
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
        ops = [a.operand(_projected(coords, a.shape, self.shape)) for a in self.args]
        return _apply(self.node, ops)

    def full(self, budget):
        budget.dense(self.shape, self.dtype, f"map {self.node.fn.name}")
        out = _apply(self.node, [a.whole(budget) for a in self.args])
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
        out = np.array(np.broadcast_to(_apply(self.node, ops), self.shape))
        spread = [_spread(a, self.shape, budget) for a in sparse]
        keys, _ = union([s.materialize(budget) for s in spread])
        if keys.shape[0]:
            coords = unravel(keys, self.shape)
            out[coords] = self.at(coords)
        return out


def _spread(value, shape, budget: Budget):
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


# --- one function per node kind -------------------------------------------------------------

def eval_input(node: Input, ctx: Context):
    """spec.compute.Input: a dense array in place, or a sparse one's validated, canonical
    entries (``storage.sparse_levels``), every coordinate range-checked."""
    value = ctx.arrays[node.name]
    if node.format.is_dense:
        return DenseArray(dense_operand(value, node.dtype, node.name))
    shape = ctx.shape(node)
    if not shape:
        raise Declined("a 0-d sparse input")
    levels = sparse_levels(value, node, node.name)
    fmt: Format = node.format
    if fmt.kinds == ("full", "pos"):
        outer, inner = fmt.mode_order
        pos = levels["pos1"]
        nnz = int(pos[-1])
        crd = levels["crd1"][:nnz]
        check_range(node.name, "indices", crd, shape[inner])
        vals = levels["val"][:nnz]
        if outer == 0:  # coordinates made when needed
            return Sparse(shape, vals, 0, csr=(pos, crd))
        lines = np.repeat(np.arange(shape[outer], dtype=I64), np.diff(pos))
        return Sparse.from_entries(shape, (crd.astype(I64), lines), vals, 0, ctx.budget,
                                   node.name)
    crds = [levels[f"crd{d}"] for d in range(len(shape))]
    nnz = int(levels["pos0"][-1]) if fmt.kinds == ("pos",) else crds[0].shape[0]
    crds = [c[:nnz] for c in crds]
    for d, c in enumerate(crds):
        check_range(node.name, f"coords[{d}]", c, shape[d])
    coords = tuple(c.astype(I64) for c in crds)
    vals = levels["val"][:nnz]
    if fmt.mode_order != tuple(range(len(shape))):
        return Sparse.from_entries(shape, coords, vals, 0, ctx.budget, node.name)
    return Sparse(shape, vals, 0, coords=coords)


def _meets_nonfinite(node: Map, args: list, annihilating: list[int]) -> bool:
    """A literal or background beside the annihilating arguments is NaN or infinite:
    ``0 * nan`` is nan, so nothing annihilates (the lattice's rule)."""
    for d, (a, v) in enumerate(zip(node.args, args)):
        if d in annihilating:
            continue
        x = a.value if isinstance(a, Literal) else getattr(v, "background", None)
        if x is not None and np.asarray(x).dtype.kind in "fc" and \
                not bool(np.all(np.isfinite(x))):
            return True
    return False


def eval_map(node: Map, args: list, ctx: Context):
    """spec.compute.Map, with the entries the zero algebra gives (module docstring)."""
    shape = ctx.shape(node)
    sparse = [d for d, v in enumerate(args) if isinstance(v, (Sparse, Broadcast))]
    if not sparse:
        return MapLocated(node, args, shape)
    args = [_spread(v, shape, ctx.budget) if d in sparse else v for d, v in enumerate(args)]
    fn = node.fn
    floats = node.dtype.kind in "fc" or any(a.dtype.kind in "fc" for a in node.args)
    annihilating = [d for d in sparse if d in fn.annihilates and is_zero(args[d].background)]
    if annihilating and fn.annihilation_needs_finite and floats and \
            _meets_nonfinite(node, args, annihilating):
        annihilating = []
    budget = ctx.budget
    located = [d for d, v in enumerate(args) if d not in sparse]
    if annihilating:
        if len(annihilating) == 1 and isinstance(args[annihilating[0]], Sparse):
            # one operand's entries: its structure, read where the others are needed
            (d0,) = annihilating
            driver = args[d0]
            coords = driver.coords if any(not isinstance(node.args[d], Literal)
                                          for d in range(len(args)) if d != d0) else ()
            ops = [driver.vals if d == d0 else v.operand(_projected(coords, v.shape, shape))
                   for d, v in enumerate(args)]
            return _like(driver, _sized(_apply(node, ops), driver.nnz))
        if len(sparse) == 2 and not located:
            quick = _matrices(node, args)
            if quick is not None:
                return quick
        keys, found = intersection([args[d] for d in annihilating], budget)
        coords = unravel(keys, shape)
        ops = [found[annihilating.index(d)] if d in annihilating else
               v.operand(_projected(coords, v.shape, shape)) for d, v in enumerate(args)]
        return Sparse(shape, _sized(_apply(node, ops), keys.shape[0]), 0, keys=keys,
                      coords=coords)
    if any(not isinstance(node.args[d], Literal) for d in located):
        return UniverseMap(node, args, shape)
    background = _apply(node, [args[d].background if d in sparse else args[d].operand(())
                               for d in range(len(args))])[()]
    if len(sparse) == 1 and isinstance(args[sparse[0]], Sparse):  # its own entries
        (d0,) = sparse
        v0 = args[d0]
        ops = [v0.vals if d == d0 else v.operand(()) for d, v in enumerate(args)]
        return _like(v0, _sized(_apply(node, ops), v0.nnz), background)
    if len(sparse) == 2 and not located and is_zero(background):
        quick = _matrices(node, args)
        if quick is not None:
            return quick
    materialized = {d: args[d].materialize(budget) for d in sparse}
    keys, positions = union([materialized[d] for d in sparse])
    budget.sparse(keys.shape[0], f"map {fn.name}")
    n = keys.shape[0]
    ops = [spread_values(materialized[d], positions[sparse.index(d)], n)
           if d in materialized else v.operand(()) for d, v in enumerate(args)]
    return Sparse(shape, _sized(_apply(node, ops), n), background, keys=keys)


def _like(value: Sparse, vals: np.ndarray, background=0) -> Sparse:
    """New values on ``value``'s entries (its keys, coordinates, CSR arrays shared)."""
    return Sparse(value.shape, vals, background, keys=value._keys, coords=value._coords,
                  csr=value.csr)


_SCIPY_OPS = {"add": lambda x, y: x + y, "subtract": lambda x, y: x - y,
              "multiply": lambda x, y: x.multiply(y)}
_SCIPY_FAST = frozenset(np.dtype(t) for t in ("int32", "int64", "float32", "float64",
                                              "complex64", "complex128"))


def _csr_structure(v: Sparse) -> tuple[np.ndarray, np.ndarray]:
    if v.csr is not None:
        return v.csr
    rows, cols = v.coords
    indptr = np.zeros(v.shape[0] + 1, dtype=I64)
    np.cumsum(np.bincount(rows, minlength=v.shape[0]), out=indptr[1:])
    return indptr, cols


def _matrices(node: Map, args: list) -> Sparse | None:
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

    def matrix(v, data):
        if isinstance(v, Sparse):
            indptr, indices = _csr_structure(v)
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


def _sized(values: np.ndarray, n: int) -> np.ndarray:
    """One value per entry (a map of constants computes one value for all of them)."""
    if values.shape == (n,):
        return values
    return np.array(np.broadcast_to(values, (n,)))


def eval_reduce(node: Reduce, arg, ctx: Context):
    """spec.compute.Reduce: a matrix product by ``contract.py``; otherwise the monoid over
    each output cell's entries, and the background once per coordinate none covers."""
    plan = ctx.contractions.get(id(node))
    if plan is not None:
        return plan.run(ctx)
    sparse_valued = id(node) in ctx.sparse_valued and isinstance(arg, (Sparse, Broadcast)) \
        and is_zero(arg.background)
    monoid = get_monoid(node.monoid)
    in_shape = arg.shape
    out_shape = ctx.shape(node)
    extent = 1
    for a in node.axes:
        extent *= in_shape[a]
    if extent == 0 and monoid.identity is None:
        raise Declined(f"{monoid} over a zero-length axis (the kernel reports it)")
    budget, dtype = ctx.budget, node.dtype
    budget.dense(out_shape, dtype, f"the result of {monoid}")
    if isinstance(arg, Located):
        full = arg.full(budget)
        kwargs = {"dtype": dtype} if monoid.takes_dtype else {}
        out = np.asarray(monoid.impl(full, axis=node.axes, **kwargs)).astype(dtype)
        return DenseArray(np.ascontiguousarray(out).reshape(out_shape), sparse_valued)
    entries = arg.materialize(budget)
    if len(node.axes) == len(in_shape):  # every axis: one cell
        vals = entries.vals.astype(dtype, copy=False)
        acc = np.asarray(monoid.combine.reduce(vals, initial=monoid.start(dtype)),
                         dtype=dtype).reshape(1)
        if not (monoid.name == "sum" and is_zero(entries.background)) and extent:
            combine_background(monoid, acc, np.asarray([extent - entries.nnz]),
                               entries.background)
        return DenseArray(acc.reshape(out_shape), sparse_valued)
    kept = tuple(c for d, c in enumerate(entries.coords) if d not in node.axes)
    cells = 1
    for n in out_shape:
        cells *= n
    keys = linear_keys(kept, out_shape) if kept else np.zeros(entries.nnz, I64)
    vals = entries.vals.astype(dtype, copy=False)
    if monoid.name == "sum" and dtype == np.float64:
        acc = np.bincount(keys, weights=vals, minlength=cells).astype(dtype, copy=False)
    else:
        acc = np.full(cells, monoid.start(dtype), dtype=dtype)
        monoid.combine.at(acc, keys, vals)
    background = entries.background
    if not (monoid.name == "sum" and is_zero(background)) and extent:
        unvisited = extent - np.bincount(keys, minlength=cells)
        combine_background(monoid, acc, unvisited, background)
    return DenseArray(acc.reshape(out_shape), sparse_valued)


def combine_background(monoid, out: np.ndarray, unvisited: np.ndarray, value) -> None:
    """Each cell combined with ``value`` once per coordinate of its reduction that stores
    no entry (NumPy's semantics: NaN propagates): a sum adds ``value * unvisited``, a
    product multiplies by ``value ** unvisited``, the idempotent monoids combine ``value``
    once where any is unvisited."""
    missing = unvisited > 0
    if not missing.any():
        return
    v = np.asarray(value)
    if monoid.name == "sum":
        out[missing] += (v * unvisited[missing]).astype(out.dtype, copy=False)
    elif monoid.name == "prod":
        out[missing] *= np.power(v, unvisited[missing]).astype(out.dtype, copy=False)
    else:
        out[missing] = monoid.combine(out[missing], v.astype(out.dtype))


def eval_shape_op(node: ShapeOp, args: list, ctx: Context):
    """spec.ir.ShapeOp (every built-in shape operator): the forward maps of its entry over
    sparse operands' entries, the backward maps where located operands are read."""
    shape = ctx.shape(node)
    if all(isinstance(v, Located) for v in args):
        return ShapeLocated(node, args, shape, ctx.env)
    budget = ctx.budget
    if isinstance(node, BroadcastTo):  # kept unexpanded: read through its backward map
        (v,) = args
        base = v.materialize(budget)
        lead = len(shape) - len(base.shape)
        stretched = tuple(d + lead for d in range(len(base.shape))
                          if base.shape[d] == 1 and shape[d + lead] != 1)
        return Broadcast(base, shape, stretched)
    if isinstance(node, PermuteDims) and len(shape) == 2 and tuple(node.perm) == (1, 0) and \
            isinstance(args[0], Sparse) and args[0].csr is not None:
        return _transposed(args[0], shape)
    im = node.index_map()
    if im.fill is not None and not is_zero(im.fill):
        # a fill that is not 0 around sparse operands: dense-valued (the kernels compute
        # ``where(inside, pad(x, 0), c)``); read through the backward maps where needed
        return ShapeLocated(node, args, shape, ctx.env)
    backgrounds = [v.background for v in args if not isinstance(v, Located)]
    same = all(_same(backgrounds[0], b) for b in backgrounds) and \
        not any(isinstance(v, Located) for v in args) and \
        (im.fill is None or _same(backgrounds[0], im.fill))
    background = backgrounds[0] if same else np.zeros((), node.dtype)[()]
    operands = [v.materialize(budget) if same else nonzeros(v, budget) for v in args]
    coords: list[list[np.ndarray]] = [[] for _ in shape]
    vals = []
    total = 0
    for piece in im.pieces:
        v = operands[piece.operand]
        if v.nnz == 0:
            continue
        env = dict(ctx.env)
        env.update(sz.in_binding(v.coords))
        keep = np.broadcast_to(np.asarray(sz.evaluate(piece.forward_guard, env), bool),
                               (v.nnz,))
        if not keep.all():
            where = np.flatnonzero(keep)
            env.update(sz.in_binding(tuple(c[where] for c in v.coords)))
            piece_vals = v.vals[where]
        else:
            piece_vals = v.vals
        n = piece_vals.shape[0]
        if None in piece.forward:
            raise Declined("a shape operator with free output coordinates")
        for d, f in enumerate(piece.forward):
            coords[d].append(np.broadcast_to(np.asarray(sz.evaluate(f, env), I64), (n,)))
        vals.append(piece_vals)
        total += n
    budget.sparse(total, type(node).__name__.lower())
    out_coords = tuple(np.concatenate(c) if c else np.zeros(0, I64) for c in coords)
    out_vals = np.concatenate(vals) if vals else np.zeros(0, node.dtype)
    return Sparse.from_entries(shape, out_coords, out_vals.astype(node.dtype, copy=False),
                               background, budget, type(node).__name__.lower())


def _transposed(v: Sparse, shape) -> Sparse:
    """A matrix held as CSR, transposed by scipy's counting pass (its CSR is the CSC of
    the matrix: linear, where mapping the entries and sorting them is not)."""
    import scipy.sparse as sp
    indptr, indices = v.csr
    m = sp.csc_array((v.vals, indices, indptr), shape=shape).tocsr()
    return Sparse(shape, np.ascontiguousarray(m.data), v.background,
                  csr=(m.indptr, m.indices))


def _same(a, b) -> bool:
    a, b = np.asarray(a), np.asarray(b)
    with np.errstate(all="ignore"):
        return bool(a == b) or (a.dtype.kind in "fc" and b.dtype.kind in "fc" and
                                bool(np.isnan(a) and np.isnan(b)))


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

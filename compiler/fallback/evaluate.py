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
  does (``compiler/plan/lattice.py`` reads the same facts): the **intersection** of the
  arguments it annihilates at (``f(.., 0, ..) == 0``; for floats only beside finite
  literal and background values), else the **union** of its sparse arguments' entries,
  with background ``f`` of theirs — unless a located argument that is not a literal takes
  part, which makes the map dense-valued (a :class:`UniverseMap`: read where needed, or
  computed everywhere from the backgrounds and overwritten at the entries). A map of one
  sparse operand keeps its entries; ``x + y``, ``x - y``, ``x * y`` of two matrices take
  scipy's row merges (``matrices.py``); any other merges sorted keys (``values.py``).
* A reduction accumulates entries per output cell (``ufunc.at``; ``bincount`` for float64
  sums) into a dense result, and combines the background once per coordinate no entry
  covers; ``sum(X * Y)`` that is a matrix product goes to ``contract.py``.
* Values are computed by each function's NumPy meaning (weak literals as Python scalars:
  NEP 50) and cast to the node's dtype, floating-point warnings silenced.
"""

from __future__ import annotations

import numpy as np

from sparsefold.compiler.fallback.located import (
    Coordinate,
    DenseArray,
    MapLocated,
    Scalar,
    ShapeLocated,
    UniverseMap,
    apply,
    nonzeros,
    operand_value,
    projected,
    spread,
)
from sparsefold.compiler.fallback.matrices import matrices
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
from sparsefold.spec.ops_axes import BroadcastTo, PermuteDims
from sparsefold.storage.dense import dense_operand
from sparsefold.storage.levels import check_range, sparse_levels

__all__ = ["Context", "evaluate_node", "combine_background"]


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
    args = [spread(v, shape, ctx.budget) if d in sparse else v for d, v in enumerate(args)]
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
            ops = [driver.vals if d == d0 else v.operand(projected(coords, v.shape, shape))
                   for d, v in enumerate(args)]
            return _like(driver, _sized(apply(node, ops), driver.nnz))
        if len(sparse) == 2 and not located:
            quick = matrices(node, args)
            if quick is not None:
                return quick
        keys, found = intersection([args[d] for d in annihilating], budget)
        coords = unravel(keys, shape)
        ops = [found[annihilating.index(d)] if d in annihilating else
               v.operand(projected(coords, v.shape, shape)) for d, v in enumerate(args)]
        return Sparse(shape, _sized(apply(node, ops), keys.shape[0]), 0, keys=keys,
                      coords=coords)
    if any(not isinstance(node.args[d], Literal) for d in located):
        return UniverseMap(node, args, shape)
    background = apply(node, [args[d].background if d in sparse else args[d].operand(())
                               for d in range(len(args))])[()]
    if len(sparse) == 1 and isinstance(args[sparse[0]], Sparse):  # its own entries
        (d0,) = sparse
        v0 = args[d0]
        ops = [v0.vals if d == d0 else v.operand(()) for d, v in enumerate(args)]
        return _like(v0, _sized(apply(node, ops), v0.nnz), background)
    if len(sparse) == 2 and not located and is_zero(background):
        quick = matrices(node, args)
        if quick is not None:
            return quick
    materialized = {d: args[d].materialize(budget) for d in sparse}
    keys, positions = union([materialized[d] for d in sparse])
    budget.sparse(keys.shape[0], f"map {fn.name}")
    n = keys.shape[0]
    ops = [spread_values(materialized[d], positions[sparse.index(d)], n)
           if d in materialized else v.operand(()) for d, v in enumerate(args)]
    return Sparse(shape, _sized(apply(node, ops), n), background, keys=keys)


def _like(value: Sparse, vals: np.ndarray, background=0) -> Sparse:
    """New values on ``value``'s entries (its keys, coordinates, CSR arrays shared)."""
    return Sparse(value.shape, vals, background, keys=value._keys, coords=value._coords,
                  csr=value.csr)


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



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
from sparsefold.compiler.fallback.matrices import matrices, union_csr
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
from sparsefold.spec.ops_axes import BroadcastTo, ExpandDims, PermuteDims
from sparsefold.spec.ops_index import Slice
from sparsefold.storage.dense import dense_operand
from sparsefold.storage.levels import check_range, sparse_levels

__all__ = ["Context", "evaluate_node", "combine_background"]


class Context:
    """One call: the input arrays by name, the bound sizes, the memory budget, and the
    contraction plans found for the program's reductions (``contract.py``)."""

    def __init__(self, arrays: dict, env: dict[str, int], budget: Budget, contractions: dict,
                 sparse_valued: frozenset = frozenset(), transposed: frozenset = frozenset()):
        self.arrays, self.env, self.budget = arrays, env, budget
        self.contractions = contractions
        self.sparse_valued = sparse_valued  # ids of sparse-valued reductions (contract.py)
        # ids of CSC inputs read only through a transpose: valued as that transpose, whose
        # row-major CSR their arrays are (``A.T`` of a CSC ``A`` costs nothing)
        self.transposed = transposed
        self.values: dict[int, object] = {}  # node id -> its value, as evaluated

    def shape(self, node: Node) -> tuple[int, ...]:
        return tuple(int(sz.evaluate(n, self.env)) for n in node.shape)


def evaluate_node(node: Node, args: list, ctx: Context):
    """The value of ``node`` from its operands' values ``args``."""
    if isinstance(node, Input):
        if id(node) in ctx.transposed:
            return eval_input_transposed(node, ctx)
        return eval_input(node, ctx)
    if isinstance(node, PermuteDims) and id(node.arg) in ctx.transposed:
        return args[0]  # the input was valued as this transpose
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

def transposed_only(node: Node, consumers: list[Node]) -> bool:
    """Is ``node`` a CSC matrix input whose every consumer transposes it?"""
    return isinstance(node, Input) and node.format.kinds == ("full", "pos") and \
        node.format.mode_order == (1, 0) and bool(consumers) and all(
            isinstance(c, PermuteDims) and tuple(c.perm) == (1, 0) for c in consumers)


def eval_input_transposed(node: Input, ctx: Context) -> Sparse:
    """A CSC input's transpose (:func:`transposed_only`): its arrays, validated as
    :func:`eval_input` validates them, read as the CSR arrays of the transpose."""
    value = ctx.arrays[node.name]
    shape = ctx.shape(node)
    levels = sparse_levels(value, node, node.name)
    pos = levels["pos1"]
    nnz = int(pos[-1])
    crd = levels["crd1"][:nnz]
    check_range(node.name, "indices", crd, shape[0])
    return Sparse((shape[1], shape[0]), levels["val"][:nnz], 0, csr=(pos, crd))


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
    if len(shape) == 2 and len(sparse) >= 2:  # matrices: scipy's row merges
        budget.sparse(sum(materialized[d].nnz for d in sparse), f"map {fn.name}")
        indptr, indices, positions = union_csr([materialized[d] for d in sparse])
        n = indices.shape[0]
        ops = [spread_values(materialized[d], positions[sparse.index(d)], n)
               if d in materialized else v.operand(()) for d, v in enumerate(args)]
        return Sparse(shape, _sized(apply(node, ops), n), background, csr=(indptr, indices))
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
    if isinstance(arg, MapLocated) and not sparse_valued:
        quick = _reduce_map_of_entries(node, arg, ctx, monoid, out_shape)
        if quick is not None:
            return quick
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
    background = entries.background
    if entries.csr is not None and len(in_shape) == 2 and monoid.name == "sum" and \
            is_zero(background) and dtype.kind in "iufc" and \
            (dtype == np.float64 or tuple(node.axes) == (1,)):
        indptr, indices = entries.csr
        vals = entries.vals.astype(dtype, copy=False)
        if tuple(node.axes) == (0,):  # the column of each entry is its cell
            acc = np.bincount(indices, weights=vals, minlength=in_shape[1])
        else:  # each row's entries are contiguous: one sum per non-empty row, in order
            acc = np.zeros(in_shape[0], dtype)
            starts = np.asarray(indptr[:-1])
            filled = np.diff(indptr) > 0
            if filled.any():
                acc[filled] = np.add.reduceat(vals, starts[filled])
        return DenseArray(acc.astype(dtype, copy=False).reshape(out_shape), sparse_valued)
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
    if not (monoid.name == "sum" and is_zero(background)) and extent:
        unvisited = extent - np.bincount(keys, minlength=cells)
        combine_background(monoid, acc, unvisited, background)
    return DenseArray(acc.reshape(out_shape), sparse_valued)


def _sparse_leaves(v, axes: frozenset, shape) -> list | None:
    """The sparse values (of ``shape``) a tree of located maps reads, when every other
    leaf is constant along the reduced ``axes`` (a dense array broadcast along them, a
    literal): then away from the leaves' entries the tree's value depends on the output
    cell alone. None when it is not such a tree."""
    if isinstance(v, (Sparse, Broadcast)):
        return [v] if tuple(v.shape) == tuple(shape) else None
    if isinstance(v, MapLocated) and tuple(v.shape) == tuple(shape):
        leaves: list = []
        for a in v.args:
            found = _sparse_leaves(a, axes, shape)
            if found is None:
                return None
            leaves += found
        return leaves
    if isinstance(v, Located) and not _reads_sparse(v):
        lead = len(shape) - len(v.shape)  # (a map's operands align to the right)
        return [] if _constant_along(v, frozenset(d - lead for d in axes if d >= lead)) \
            else None
    return None


def _constant_along(v, axes: frozenset) -> bool:
    """Does ``v`` (located, reading no sparse value) take one value along ``axes`` (of its
    own shape)? Size-1 axes, the stretched axes of a broadcast, maps of such values."""
    if all(v.shape[d] == 1 for d in axes):
        return True
    if isinstance(v, MapLocated):
        return all(_constant_along(a, frozenset(d - (len(v.shape) - len(a.shape))
                                                for d in axes
                                                if d >= len(v.shape) - len(a.shape)))
                   for a in v.args)
    if isinstance(v, ShapeLocated) and isinstance(v.node, BroadcastTo):
        (a,) = v.operands
        lead = len(v.shape) - len(a.shape)
        return _constant_along(a, frozenset(d - lead for d in axes
                                            if d >= lead and a.shape[d - lead] != 1))
    if isinstance(v, ShapeLocated) and isinstance(v.node, ExpandDims):
        (a,) = v.operands
        k = v.node.axis % len(v.shape)
        return _constant_along(a, frozenset(d - (d > k) for d in axes if d != k))
    return False


def _reads_sparse(v) -> bool:
    if isinstance(v, (Sparse, Broadcast)):
        return True
    if isinstance(v, MapLocated):
        return any(_reads_sparse(a) for a in v.args)
    if isinstance(v, ShapeLocated):
        return any(_reads_sparse(a) for a in v.operands)
    return False


def _at_background(v, coords):
    """``v`` (a tree :func:`_sparse_leaves` accepts) at ``coords`` with every sparse leaf
    at its background."""
    if isinstance(v, (Sparse, Broadcast)):
        return np.asarray(v.background)
    if isinstance(v, MapLocated):
        return apply(v.node, [_at_background(a, projected(coords, a.shape, v.shape))
                              for a in v.args])
    return v.operand(coords)


def _reduce_map_of_entries(node: Reduce, arg: MapLocated, ctx: Context, monoid,
                           out_shape) -> DenseArray | None:
    """A reduction of a dense-valued map of sparse values and cell-constant operands
    (``sum((A - mean(A, axis=1, keepdims=True)) ** 2, axis=1)``: var, std) in work linear
    in the entries and the output, as the kernels' background rule computes it
    (``compiler/plan/background.py``): the map at the union of its sparse leaves' entries,
    combined per output cell, then its value away from them — the same at every such
    coordinate of a cell — once per coordinate of the cell no entry covers."""
    shape = arg.shape
    axes = frozenset(node.axes)
    if monoid.name not in ("sum", "max", "min", "any", "all"):
        return None
    leaves = _sparse_leaves(arg, axes, shape)
    if not leaves:
        return None
    budget, dtype = ctx.budget, node.dtype
    keys, _ = union([leaf.materialize(budget) for leaf in leaves])
    coords = unravel(keys, shape) if shape else ()
    vals = np.broadcast_to(np.asarray(arg.at(coords)), keys.shape).astype(dtype, copy=False)
    kept = tuple(c for d, c in enumerate(coords) if d not in axes)
    cells = 1
    for n in out_shape:
        cells *= n
    extent = 1
    for a in axes:
        extent *= shape[a]
    cell = linear_keys(kept, out_shape) if kept else np.zeros(keys.shape[0], I64)
    if monoid.name == "sum" and dtype == np.float64:
        acc = np.bincount(cell, weights=vals, minlength=cells).astype(dtype, copy=False)
    else:
        acc = np.full(cells, monoid.start(dtype), dtype=dtype)
        monoid.combine.at(acc, cell, vals)
    unvisited = extent - np.bincount(cell, minlength=cells)
    missing = unvisited > 0
    if missing.any():
        # each cell's coordinates in the map's shape, any position along the reduced axes
        # (the tree is constant along them away from the entries)
        out_coords = iter(np.unravel_index(np.flatnonzero(missing), out_shape)
                          if out_shape else ())
        at = tuple(np.zeros(1, I64) if d in axes else next(out_coords)
                   for d in range(len(shape)))
        back = np.broadcast_to(np.asarray(_at_background(arg, at)).astype(dtype, copy=False),
                               (int(missing.sum()),))
        if monoid.name == "sum":
            acc[missing] += back * unvisited[missing]
        else:
            acc[missing] = monoid.combine(acc[missing], back)
    return DenseArray(acc.reshape(out_shape))


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
    if isinstance(node, Slice) and len(shape) == 2 and isinstance(args[0], Sparse) and \
            args[0].csr is not None:
        sliced = _sliced_csr(node, args[0], shape, ctx)
        if sliced is not None:
            return sliced
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


def _sliced_csr(node: Slice, v: Sparse, shape, ctx: Context) -> Sparse | None:
    """``A[r0:r1:rs, c0:c1:cs]`` of a matrix held as CSR, for any row step and a column
    step >= 1, as scipy slices: the rows' ranges gathered through ``indptr`` (O(rows +
    entries read), no sort: the rows keep their sorted columns), then the columns kept
    and renumbered. None for a column step < 0 (its rows would need reversing)."""
    (first0, step0, count0), (first1, step1, count1) = (
        tuple(int(sz.evaluate(e, ctx.env)) for e in t)
        for t in node._normalized(node.arg.shape))
    if step1 < 1:
        return None
    import scipy.sparse as sp
    indptr, indices = v.csr
    ctx.budget.sparse(int(indptr[-1]), "slice")
    m = sp.csr_array((v.vals, indices, indptr), shape=v.shape, copy=False)
    # scipy's row gather (csr_row_index: a copy per row range) or a contiguous view
    m = m[first0:first0 + count0] if step0 == 1 else \
        m[first0 + step0 * np.arange(count0, dtype=I64)]
    out_ptr, cols, vals = np.asarray(m.indptr, I64), m.indices, m.data
    total = int(out_ptr[-1])
    if not (first1 == 0 and step1 == 1 and count1 == v.shape[1]):
        dist = cols.astype(I64) - first1
        keep = dist >= 0
        if step1 != 1:
            keep &= dist % step1 == 0
        dist //= step1
        keep &= dist < count1
        kept = np.zeros(total + 1, I64)
        np.cumsum(keep, out=kept[1:])
        out_ptr = kept[out_ptr]
        cols, vals = dist[keep], vals[keep]
    return Sparse(shape, np.ascontiguousarray(vals), v.background,
                  csr=(out_ptr, np.ascontiguousarray(cols)))


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



"""The dense reference interpreter: the executable meaning of every node (DESIGN §2).

Conventions, stated once:

* Every value is a dense NumPy array of the node's shape and dtype; sparse inputs are
  densified from their validated storage (``storage.densify``; implicit entries are 0).
* Size symbols are bound by matching each :class:`Input`'s declared shape against the array
  given for it (``storage.bind_sizes``, shared with compiled kernels); a symbol bound twice
  must get the same value.
* A shape operator is evaluated *through its entry* (``spec/ir.py``): over the output's
  coordinate grid, for each piece, ``out[k] = operand[backward(k)]`` where ``guard(k)``;
  elsewhere ``fill``. No shape operator is special-cased here.
* Maps and reductions are NumPy ufuncs and reductions with IEEE semantics (``0 * nan`` is
  ``nan``, ``x / 0`` is ``inf``); floating-point warnings are silenced, not raised.
* ``sum(multiply(a, b))`` — a contraction — is evaluated with ``np.einsum`` so that ``A @ B``
  does not materialize the ``I×J×K`` product. It computes the same sum of products.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from sparsefold.spec import sizes as sz
from sparsefold.spec.compute import Input, Iota, Literal, Map, Reduce, SizeOf
from sparsefold.spec.errors import InternalError, InvalidData
from sparsefold.spec.ir import Node, ShapeOp
from sparsefold.spec.ops_axes import BroadcastTo
from sparsefold.spec.ops_gather import Gather, normalize_indices
from sparsefold.spec.ordering import ArgSort, Scan, SearchSorted, Sort
from sparsefold.spec.printer import topological
from sparsefold.storage.binding import bind_sizes as storage_bind_sizes
from sparsefold.storage.dense import densify

__all__ = ["evaluate", "bind_sizes", "densify"]


def bind_sizes(program: Node, arrays: Mapping[str, np.ndarray]) -> dict[str, int]:
    """Values of the size symbols, read off the inputs' actual shapes (the binding every
    engine shares, ``storage.bind_sizes``), after which each input's dtype is checked."""
    inputs = [n for n in topological(program) if isinstance(n, Input)]
    env = storage_bind_sizes(inputs, arrays)
    for node in inputs:
        value = arrays[node.name]
        dtype = value.dtype if hasattr(value, "dtype") else np.asarray(value).dtype
        if dtype != node.dtype:
            raise InvalidData(f"input {node.name!r}: expected dtype {node.dtype}, found "
                              f"{dtype}")
    return env


def _unknown_order(root: Node, known: Mapping[int, Any]) -> list[Node]:
    """``topological(root)`` without the known nodes and what only they read."""
    return topological(root, known)


def _size(e: sz.Expr, env: Mapping[str, int]) -> int:
    return int(sz.evaluate(e, env))


def evaluate(program: Node, inputs: Mapping[str, Any],
             known: Mapping[int, np.ndarray] | None = None) -> np.ndarray:
    """Evaluate ``program`` on ``inputs`` (input name → array) and return a dense array.
    ``known``: values already computed for some of its nodes (``id(node)`` → the node's
    dense value), used as they are — neither they nor what only they read is evaluated
    again (the front end's materialization remembers the arrays it computed)."""
    if known:
        order = _unknown_order(program, known)
        needed = {n.name for n in order if isinstance(n, Input)}
        arrays = {name: densify(v, name) for name, v in inputs.items() if name in needed}
        inputs_ = [n for n in order if isinstance(n, Input)]
        env = storage_bind_sizes(inputs_, arrays)
        values: dict[int, np.ndarray] = dict(known)
    else:
        order = topological(program)
        arrays = {name: densify(v, name) for name, v in inputs.items()}
        env = bind_sizes(program, arrays)
        values = {}
    with np.errstate(all="ignore"):
        for node in order:
            values[id(node)] = _eval(node, values, arrays, env)
    out = values[id(program)]
    expected = tuple(_size(n, env) for n in program.shape)
    if out.shape != expected or out.dtype != program.dtype:
        raise InternalError(f"interpreter produced {out.dtype}{out.shape}, spec says "
                            f"{program.dtype}{expected}")
    return out


def _eval(node: Node, values, arrays, env) -> np.ndarray:
    args = [values[id(o)] for o in node.operands()]
    if isinstance(node, Input):
        return eval_input(node, arrays)
    if isinstance(node, Literal):
        return eval_literal(node)
    if isinstance(node, SizeOf):
        return eval_size_of(node, env)
    if isinstance(node, Iota):
        return eval_iota(node, env)
    if isinstance(node, Map):
        return eval_map(node, args, env)
    if isinstance(node, Reduce):
        return eval_reduce(node, args[0], values)
    if isinstance(node, ShapeOp):
        return eval_shape_op(node, args, env)
    if isinstance(node, Gather):
        return eval_gather(node, args)
    if isinstance(node, Sort):
        return eval_sort(node, args[0])
    if isinstance(node, ArgSort):
        return eval_argsort(node, args[0])
    if isinstance(node, SearchSorted):
        return eval_search_sorted(node, *args)
    if isinstance(node, Scan):
        return eval_scan(node, args[0])
    raise InternalError(f"the interpreter has no rule for {type(node).__name__}")


# --- one function per node kind, in spec order ------------------------------------------------

def eval_input(node: Input, arrays) -> np.ndarray:
    """spec.compute.Input: the array bound to the input's name."""
    return np.asarray(arrays[node.name])


def eval_literal(node: Literal) -> np.ndarray:
    """spec.compute.Literal: a 0-d array (its dtype matters only when it is strong)."""
    return np.asarray(node.value, dtype=node.dtype)


def eval_size_of(node: SizeOf, env) -> np.ndarray:
    """spec.compute.SizeOf: the size expression's value once the inputs bound the sizes."""
    return np.asarray(_size(node.size, env), dtype=node.dtype)


def eval_iota(node: Iota, env) -> np.ndarray:
    """spec.compute.Iota: each element's coordinate along the axis (``np.indices``)."""
    shape = tuple(_size(n, env) for n in node.shape)
    return np.indices(shape, dtype=node.dtype)[node.axis] if shape else \
        np.zeros((), node.dtype)


def eval_map(node: Map, args, env) -> np.ndarray:
    """spec.compute.Map: broadcast every argument through the broadcast_to entry, then apply
    the function's NumPy meaning. Weak literals are passed as Python scalars (NEP 50)."""
    target = node.shape
    operands = []
    for arg, value in zip(node.args, args):
        if isinstance(arg, Literal) and arg.weak:
            operands.append(arg.value)
        elif arg.shape == target:
            operands.append(value)
        else:
            operands.append(eval_shape_op(BroadcastTo(arg, target), [value], env))
    try:
        out = node.fn.impl(*operands)
    except ValueError as exc:  # e.g. integers to negative integer powers: the data's fault
        raise InvalidData(f"{node.fn.name}: {exc}") from None
    return np.asarray(out).astype(node.dtype, copy=False).reshape(
        tuple(_size(n, env) for n in target))


def eval_reduce(node: Reduce, arg: np.ndarray, values) -> np.ndarray:
    """spec.compute.Reduce: NumPy's reduction over ``axes`` with the node's dtype."""
    if _is_contraction(node) and all(id(a) in values for a in node.arg.args):
        return _contract(node, [values[id(a)] for a in node.arg.args])
    m = node.monoid
    kwargs = {"dtype": node.dtype} if m.takes_dtype else {}
    node.check_extent(int(np.prod([arg.shape[a] for a in node.axes])))
    return np.asarray(m.impl(arg, axis=node.axes, **kwargs)).astype(node.dtype, copy=False)


def _is_contraction(node: Reduce) -> bool:
    inner = node.arg
    return (node.monoid.name == "sum" and isinstance(inner, Map) and inner.fn.name == "multiply"
            and not any(isinstance(a, Literal) for a in inner.args)
            and inner.dtype in (node.dtype, np.dtype(bool)))


_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


def _contract(node: Reduce, operands) -> np.ndarray:
    """``sum(multiply(a, b), axes)`` by einsum, with Map's right-aligned broadcasting: an
    operand axis of size 1 facing a longer axis is dropped (it is broadcast), every other
    axis gets the letter of its output axis. Only used when the product's dtype equals the
    sum's (or is bool), so it computes exactly the definition's sum of products."""
    nd = node.arg.ndim
    if nd > len(_LETTERS):
        return eval_reduce_plain(node, operands)
    full = [1] * nd
    for v in operands:
        for d, n in enumerate(v.shape, start=nd - v.ndim):
            if n != 1:
                full[d] = n
    terms, arrays = [], []
    for v in operands:
        lead = nd - v.ndim
        keep = [d for d in range(v.ndim) if not (v.shape[d] == 1 and full[lead + d] != 1)]
        terms.append("".join(_LETTERS[lead + d] for d in keep))
        arrays.append(v.reshape(tuple(v.shape[d] for d in keep)).astype(node.dtype, copy=False))
    out_idx = "".join(_LETTERS[d] for d in range(nd) if d not in node.axes)
    out = np.einsum(",".join(terms) + "->" + out_idx, *arrays, optimize=True)
    return np.asarray(out, dtype=node.dtype)


def eval_reduce_plain(node: Reduce, operands) -> np.ndarray:
    product = np.multiply(*operands)
    return np.sum(product, axis=node.axes, dtype=node.dtype)


def eval_shape_op(node: ShapeOp, args, env) -> np.ndarray:
    """spec.ir.ShapeOp (every shape operator): the gather of its index map."""
    im = node.index_map()
    # a precondition on symbolic sizes (an index within its axis) is first decidable here,
    # once the data has bound the sizes; the data is at fault when it fails
    if not sz.evaluate(im.requires, env):
        shapes = ", ".join(str(tuple(_size(n, env) for n in s)) for s in im.in_shapes)
        cond = "" if sz.is_const(im.requires) else f" ({im.requires})"
        raise InvalidData(f"{type(node).__name__}: its precondition on sizes{cond} does not "
                          f"hold for operand shapes {shapes}; sizes {dict(sorted(env.items()))}")
    out_shape = tuple(_size(n, env) for n in im.out_shape)
    if im.fill is None:
        out = np.empty(out_shape, dtype=node.dtype)
    else:
        out = np.full(out_shape, im.fill, dtype=node.dtype)
    grid = dict(env)
    grid.update(sz.out_binding(np.indices(out_shape, sparse=True)))
    covered = np.zeros(out_shape, dtype=bool) if im.fill is None else None
    for piece in im.pieces:
        source = args[piece.operand]
        mask = np.broadcast_to(np.asarray(sz.evaluate(piece.guard, grid), dtype=bool),
                               out_shape)
        coords = [np.broadcast_to(sz.evaluate(b, grid), out_shape)[mask]
                  for b in piece.backward]
        if source.size == 0 and mask.any():
            raise InternalError(f"{type(node).__name__}: a guard selects elements of an "
                                f"empty operand")
        out[mask] = source[tuple(coords)] if coords else source[()]
        if covered is not None:
            covered |= mask
    if covered is not None and not covered.all():
        raise InternalError(f"{type(node).__name__}: the pieces do not cover the output")
    return out


def eval_gather(node: Gather, args) -> np.ndarray:
    """spec.ops_gather.Gather: NumPy's integer-array indexing, ``arg[i]`` with ``i`` the
    backward map (``Gather.source``) over the output's coordinate grid; each index array
    normalized and range-checked by the entry's ``normalize_indices``."""
    arg, *indices = args
    reads = tuple(normalize_indices(ix, arg.shape[a], a) for ix, a in zip(indices, node.axes))
    nb = len(node.index_shape)
    a0 = node.axes[0]
    out_shape = arg.shape[:a0] + (reads[0].shape if reads else ()) + tuple(
        n for d, n in enumerate(arg.shape) if d > a0 and d not in node.axes)
    grid = np.indices(out_shape, sparse=True)
    kb = tuple(grid[a0:a0 + nb])
    source = node.source(tuple(grid), tuple(r[kb] if nb else r for r in reads))
    return np.asarray(arg[source] if out_shape else arg[tuple(np.asarray(c) for c in source)],
                      dtype=node.dtype).reshape(out_shape)


def eval_sort(node: Sort, arg: np.ndarray) -> np.ndarray:
    """spec.ordering.Sort: ``np.sort`` along the axis; descending, reversed."""
    out = np.sort(arg, axis=node.axis, kind="stable")
    return np.flip(out, axis=node.axis) if node.descending else out


def eval_argsort(node: ArgSort, arg: np.ndarray) -> np.ndarray:
    """spec.ordering.ArgSort: stable ``np.argsort``; descending keeps equal elements in
    their original order (``n - 1 - flip(argsort(flip(arg)))``)."""
    a = node.axis
    if not node.descending:
        return np.argsort(arg, axis=a, kind="stable").astype(node.dtype, copy=False)
    n = arg.shape[a]
    flipped = np.argsort(np.flip(arg, axis=a), axis=a, kind="stable")
    return (n - 1 - np.flip(flipped, axis=a)).astype(node.dtype, copy=False)


def eval_search_sorted(node: SearchSorted, sorted_: np.ndarray, values: np.ndarray) -> np.ndarray:
    """spec.ordering.SearchSorted: ``np.searchsorted`` with the node's side."""
    return np.asarray(np.searchsorted(sorted_, values, side=node.side), dtype=node.dtype)


def eval_scan(node: Scan, arg: np.ndarray) -> np.ndarray:
    """spec.ordering.Scan: ``np.cumsum``/``np.cumprod`` in the node's dtype; with
    ``include_initial``, the monoid's identity first."""
    scan = np.cumsum if node.monoid.name == "sum" else np.cumprod
    out = scan(arg, axis=node.axis, dtype=node.dtype)
    if node.include_initial:
        shape = list(arg.shape)
        shape[node.axis] = 1
        first = np.full(shape, node.monoid.identity, dtype=node.dtype)
        out = np.concatenate([first, out], axis=node.axis)
    return out

"""Normalization before planning: shape operators move below elementwise maps, so every
sparse operand of a map is a *view* (shape operators over one leaf) that a cursor can walk.

* **Explicit broadcasts.** A map broadcasts its arguments (NumPy's rule); a non-literal
  argument of another shape becomes ``broadcast_to(arg, map.shape)`` — the same value, now
  a view with its own forward map.
* **Push-down.** ``S(f(x, y)) == f(S(x), S(y))`` for a shape operator ``S`` with one
  operand, one piece and no fill (slice, transpose, reshape, broadcast, expand, squeeze):
  its value at ``k`` is ``f(x, y)`` at ``backward(k)``, which is ``f`` of the arguments
  there. Concat (several pieces) and pad (a fill) stay where they are; the planner
  computes a map below them first when it must.
* **Fills.** ``pad(x, c)`` with ``c != 0`` becomes ``where(inside, pad(x, 0), c)``; a sum
  over a filled pydata input sums its storage and adds the fill once per implicit entry.
* **Contractions.** A computed operand of a sparse × sparse contraction (``A @ (B + C)``)
  is not pushed into: it stays a map under its shape operators, and the planner computes it
  into a sparse temporary. ``sum(x * y)`` contracting axes of two sparse n-d operands
  (tensordot, n-d matmul without batch axes) becomes a matrix product of two reshaped
  views, reshaped back: ``Σ_k x[i.., k..] y[k.., j..]`` with ``i..``, ``k..``, ``j..``
  each collapsed row-major is exactly the matrix product's entry.

Both rewrites keep shape and dtype; the result is checked by re-building every node.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from sparsefold.compiler.plan.planner import sparse_product
from sparsefold.compiler.plan.streams import NotAStream, stream_pieces
from sparsefold.spec import sizes as sz
from sparsefold.spec.compute import Input, Literal, Map, Reduce, SizeOf
from sparsefold.spec.errors import InternalError
from sparsefold.spec.fills import filled_parts
from sparsefold.spec.functions import cast_function, get_function
from sparsefold.spec.ir import Node, ShapeOp
from sparsefold.spec.ops_axes import BroadcastTo, ExpandDims, PermuteDims, Squeeze
from sparsefold.spec.ops_index import Pad
from sparsefold.spec.ops_reshape import Collapse, Split, reshape_steps
from sparsefold.spec.printer import topological

__all__ = ["normalize", "with_operands", "replace_node", "replace_operand"]


def with_operands(node: Node, operands: list[Node]) -> Node:
    """``node`` with its operands replaced, in ``operands()`` order (re-checked)."""
    it = iter(operands)
    changes = {}
    for f in dataclasses.fields(node):
        if not f.init:
            continue
        v = getattr(node, f.name)
        if isinstance(v, Node):
            changes[f.name] = next(it)
        elif isinstance(v, tuple) and v and all(isinstance(x, Node) for x in v):
            changes[f.name] = tuple(next(it) for _ in v)
    if all(changes[k] is getattr(node, k) for k in changes):
        return node
    return dataclasses.replace(node, **changes)


def replace_operand(root: Node, old: Node, new: Node) -> Node:
    """``root`` with ``old`` replaced where it is an argument of the elementwise maps at the
    top of ``root`` (an operand of a co-iteration); elsewhere — inside a view of another
    operand — it stays (``a - a.T`` reorders ``a`` for the left operand only). When it is
    no such argument, every occurrence is replaced."""
    def visit(node: Node) -> Node:
        if node == old:
            return new
        if isinstance(node, Map):
            return with_operands(node, [visit(a) for a in node.args])
        if isinstance(node, Reduce):
            return with_operands(node, [visit(node.arg)])
        return node
    out = visit(root)
    return out if out != root else replace_node(root, old, new)


def replace_node(root: Node, old: Node, new: Node) -> Node:
    """``root`` with every occurrence of ``old`` replaced by ``new``."""
    done: dict[int, Node] = {}
    for n in topological(root):
        if n == old:
            done[id(n)] = new
        else:
            done[id(n)] = with_operands(n, [done[id(o)] for o in n.operands()])
    return done[id(root)]


def _pushable(node: Node) -> bool:
    if not isinstance(node, ShapeOp) or len(node.operands()) != 1:
        return False
    im = node.index_map()
    return len(im.pieces) == 1 and im.fill is None and im.pieces[0].guard is not None


def _sparse(node: Node) -> bool:
    return any(isinstance(n, Input) and not n.format.is_dense for n in topological(node))


def _explicit(node: Map) -> Map:
    args = [a if isinstance(a, Literal) or a.shape == node.shape else BroadcastTo(a, node.shape)
            for a in node.args]
    return with_operands(node, args)


def _split_fill(node: Pad) -> Node:
    """``pad(x, c)`` with ``c != 0`` as ``where(inside, pad(x, 0), c)``: a view of ``x``
    that stores nothing new, and a located mask of the interior (exact: the interior's
    values are ``x``'s own, ``-0.0`` and NaN included)."""
    zero = dataclasses.replace(node, value=0)
    inside = Pad(BroadcastTo(Literal(np.True_), node.arg.shape), node.widths, False)
    return Map(get_function("where"), (inside, zero, Literal(node.fill)))


def _split_fill_sum(node: Reduce) -> Node | None:
    """``sum(where(present, stored, c))`` — a sum over a filled pydata input
    (``spec/fills.py``) — as ``sum(where(present, stored, 0)) + c * implicit`` with
    ``implicit = n - sum(present)`` the cell's implicit entries (``c`` is not multiplied
    when there are none: ``nan * 0``): both sums walk the storage, not every coordinate.
    The stored values are added in their order and the fills after them (a float sum is
    accumulated left to right in kernels anyway)."""
    parts = filled_parts(node.arg)
    if parts is None or node.monoid.name != "sum" or node.dtype.kind not in "biuf" or \
            not all(_sparse(p) for p in parts[:2]):
        return None
    present, stored, fill = parts
    if fill.value == 0:  # where(p, x, 0): what this rewrite sums, nothing to add
        return None
    where = get_function("where")
    zero = Literal(np.zeros((), node.arg.dtype)[()])
    stored_sum = Reduce(Map(where, (present, stored, zero)), node.axes, node.monoid,
                        node.dtype_request)
    count = Reduce(present, node.axes, "sum", np.dtype(np.intp))
    implicit = Map(get_function("subtract"), (SizeOf(node.extent()), count))
    filled_sum = Map(where, (Map(get_function("greater"), (implicit, Literal(0))),
                             Map(get_function("multiply"), (fill, implicit)),
                             Literal(np.zeros((), node.dtype)[()])))
    total = Map(get_function("add"), (stored_sum, filled_sum))
    if total.dtype != node.dtype:
        total = Map(cast_function(node.dtype), (total,))
    return total


def _rewrite(node: Node, memo: dict[int, tuple[Node, Node]], whole: dict[int, Node]) -> Node:
    # keyed by id, so the entry keeps ``node`` alive: the views built below
    # (``with_operands(new, [a])``) are temporaries, and a dead one's id can be reused
    # by the next, which would then be rewritten as the dead one was
    hit = memo.get(id(node))
    if hit is not None and hit[0] is node:
        return hit[1]
    new = with_operands(node, [_rewrite(o, memo, whole) for o in node.operands()])
    if isinstance(new, Pad) and new.fill != 0 and _sparse(new.arg):
        new = _split_fill(new)
    if isinstance(new, Reduce) and not new.axes:
        # a reduction over no axes combines each element with nothing: the element, cast
        # to the result dtype (tensordot(..., axes=0); it was a dense accumulator)
        new = _rewrite(Map(cast_function(new.dtype), (new.arg,)), memo, whole) \
            if new.arg.dtype != new.dtype else new.arg
    if isinstance(new, Reduce):
        split = _split_fill_sum(new)
        if split is not None:
            new = _rewrite(split, memo, whole)
    if isinstance(new, Reduce):
        matrix = _as_matrix_product(new)
        if matrix is not None:
            new = _rewrite(matrix, memo, whole)
    if isinstance(new, Map) and _sparse(new):
        new = _explicit(new)
    if id(node) in whole:
        whole[id(new)] = new
    if _pushable(new) and isinstance(new.operands()[0], Map) and \
            _sparse(new.operands()[0]) and id(new.operands()[0]) not in whole:
        inner = new.operands()[0]
        args = [a if isinstance(a, Literal) else
                _rewrite(with_operands(new, [a]), memo, whole) for a in inner.args]
        new = with_operands(inner, args)
    memo[id(node)] = (node, new)
    return new


def _contraction_operands(program: Node) -> dict[int, Node]:
    """Maps of sparse inputs that are an operand of a sparse × sparse contraction (the
    ``B + C`` of ``A @ (B + C)``), by id. They stay whole under their shape operators: the
    planner computes each into a sparse temporary and the product stays a contraction.
    Pushed down, the operand would no longer be a view, and the product would be planned as
    an elementwise map of rows × inner × columns: a dense temporary of that size."""
    whole: dict[int, Node] = {}
    for n in topological(program):
        found = sparse_product(n) if isinstance(n, Reduce) else None
        for node, _ in found or ():
            while _pushable(node):  # (b + c).T: the map below
                node = node.operands()[0]
            if isinstance(node, Map) and _sparse(node):
                whole[id(node)] = node
    return whole


def _stored_axes(view: Node) -> frozenset[int] | None:
    """The axes of a view (shape operators over one sparse input) its stored entries decide
    — the others are broadcast — or None when it is not one such view."""
    try:
        pieces = stream_pieces(view)
    except NotAStream:
        return None
    if len(pieces) != 1 or pieces[0].layers or not pieces[0].free:
        return None
    free = {name for name, _ in pieces[0].free}
    return frozenset(d for d, c in enumerate(pieces[0].coords)
                     if not (sz.free_symbols(c) & free))


def _cartesian_maps(program: Node) -> dict[int, Node]:
    """Maps of two sparse views met by intersection whose stored axes are each other's
    broadcast axes (``A[:, None, :, None] * K[None, :, None, :]``, a Kronecker product),
    by id. They stay whole under their shape operators (a reshape to the Kronecker
    layout): the planner computes each as every pair of the two views' entries (a
    co-iteration in "product" mode) — pushed down, each view's broadcast would be stored."""
    whole: dict[int, Node] = {}
    for n in topological(program):
        if not isinstance(n, Map) or not _sparse(n):
            continue
        sparse = [d for d, a in enumerate(n.args) if _sparse(a)]
        if len(sparse) != 2 or not all(d in n.fn.annihilates for d in sparse):
            continue
        explicit = _explicit(n)
        axes = [_stored_axes(explicit.args[d]) for d in sparse]
        if None in axes or axes[0] & axes[1] or (axes[0] | axes[1]) != frozenset(
                range(n.ndim)):
            continue
        whole[id(n)] = n
    return whole


def normalize(program: Node) -> Node:
    out = _rewrite(program, {}, {**_contraction_operands(program), **_cartesian_maps(program)})
    if out.shape != program.shape or out.dtype != program.dtype:
        raise InternalError(f"normalize changed {program.dtype}{program.shape} into "
                            f"{out.dtype}{out.shape}")
    return out


# --- n-d contractions as matrix products --------------------------------------------------------

def _reshape(node: Node, shape: tuple) -> Node:
    """Row-major reshape as the spec's collapse/split steps."""
    _, steps = reshape_steps(node.shape, tuple(shape))
    for step in steps:
        if step[0] == "collapse":
            node = Collapse(node, step[1], step[2])
        elif step[0] == "split":
            node = Split(node, step[1], tuple(step[2]))
        elif step[0] == "expand":
            for _ in range(step[2]):
                node = ExpandDims(node, step[1])
        else:
            node = Squeeze(node, (step[1],))
    return node


def _matmul(x: Node, y: Node, red: Reduce) -> Node:
    """``sum(x[:, :, None] * y[None, :, :], axis=1)`` for matrices, as the front end builds
    ``x @ y`` (accumulating in the reduction's dtype)."""
    shape = (x.shape[0], x.shape[1], y.shape[1])
    prod_ = Map(get_function("multiply"), (BroadcastTo(ExpandDims(x, 2), shape),
                                          BroadcastTo(ExpandDims(y, 0), shape)))
    return Reduce(prod_, (1,), "sum", red.dtype)


def _as_matrix_product(red: Reduce) -> Node | None:
    """A sparse × sparse contraction over any axes (``tensordot`` of n-d COO) as a matrix
    product: each operand's free axes and contracted axes collapsed (a transpose and a
    reshape of a view), the product reshaped back. None when it already is one, or is not
    a contraction of two sparse operands without batch axes."""
    found = sparse_product(red)
    if found is None:
        return None
    arg = red.arg
    (cx, ax), (cy, ay) = found
    reduced, sx, sy = set(red.axes), set(ax), set(ay)
    i = sorted(sx - sy - reduced)
    j = sorted(sy - sx - reduced)
    k = sorted(sx & sy & reduced)
    if (sx & sy) - reduced or reduced - (sx & sy) or not k or (len(i) == len(j) == 0):
        return None
    if len(i) == len(j) == len(k) == 1 and cx.ndim == cy.ndim == 2:
        return None  # already a matrix product
    size = {d: arg.shape[d] for d in range(arg.ndim)}

    def product(axes):
        out = sz.Const(1)
        for d in axes:
            out = sz.mul(out, size[d])
        return out
    x2 = _reshape(PermuteDims(cx, tuple(ax.index(d) for d in i + k)),
                  (product(i), product(k)))
    y2 = _reshape(PermuteDims(cy, tuple(ay.index(d) for d in k + j)),
                  (product(k), product(j)))
    out = _reshape(_matmul(x2, y2, red), tuple(size[d] for d in i + j))
    kept = [d for d in range(arg.ndim) if d not in reduced]
    order = i + j
    if sorted(order) != kept:  # an axis neither operand has (a size-1 broadcast one)
        return None
    if order != kept:
        out = PermuteDims(out, tuple(order.index(d) for d in kept))
    return out

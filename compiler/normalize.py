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
* **Fills.** ``pad(x, c)`` with ``c != 0`` becomes ``where(inside, pad(x, 0), c)``.

Both rewrites keep shape and dtype; the result is checked by re-building every node.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from sparsefold.spec.compute import Input, Literal, Map
from sparsefold.spec.functions import get_function
from sparsefold.spec.errors import InternalError
from sparsefold.spec.ir import Node, ShapeOp
from sparsefold.spec.ops_axes import BroadcastTo
from sparsefold.spec.ops_index import Pad
from sparsefold.spec.printer import topological

__all__ = ["normalize", "with_operands", "replace_node"]


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


def _rewrite(node: Node, memo: dict[int, Node]) -> Node:
    hit = memo.get(id(node))
    if hit is not None:
        return hit
    new = with_operands(node, [_rewrite(o, memo) for o in node.operands()])
    if isinstance(new, Pad) and new.fill != 0 and _sparse(new.arg):
        new = _split_fill(new)
    if isinstance(new, Map) and _sparse(new):
        new = _explicit(new)
    if _pushable(new) and isinstance(new.operands()[0], Map) and _sparse(new.operands()[0]):
        inner = new.operands()[0]
        args = [a if isinstance(a, Literal) else _rewrite(with_operands(new, [a]), memo)
                for a in inner.args]
        new = with_operands(inner, args)
    memo[id(node)] = new
    return new


def normalize(program: Node) -> Node:
    out = _rewrite(program, {})
    if out.shape != program.shape or out.dtype != program.dtype:
        raise InternalError(f"normalize changed {program.dtype}{program.shape} into "
                            f"{out.dtype}{out.shape}")
    return out

"""Small generic operations on programs: substitute sizes or subprograms, collect the size
parameters and preconditions every node states.

Nodes are frozen dataclasses, so a program is rebuilt with ``dataclasses.replace`` and every
node re-checks its invariants on the way (a substitution that makes a node ill-formed raises
:class:`IllFormedProgram`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from sparsefold.spec import sizes as sz
from sparsefold.spec.compute import Input
from sparsefold.spec.errors import IllFormedProgram
from sparsefold.spec.ir import Node, ShapeOp
from sparsefold.spec.printer import topological

__all__ = ["substitute_program", "rebuild", "size_parameters", "preconditions", "as_node",
           "symbols_of", "input_nodes"]


def as_node(x) -> Node:
    """The IR node of a node, or of an object carrying one as ``node`` (a front-end array)."""
    node = getattr(x, "node", x)
    if not isinstance(node, Node):
        raise IllFormedProgram(f"expected a LazyArray or an IR node, found {type(x).__name__}")
    return node


def _is_operands(v) -> bool:
    return isinstance(v, Node) or (isinstance(v, tuple) and bool(v)
                                   and all(isinstance(x, Node) for x in v))


def _map_exprs(v, fn):
    if isinstance(v, sz.Expr):
        return fn(v)
    if isinstance(v, tuple):
        return tuple(_map_exprs(x, fn) for x in v)
    return v


def substitute_program(root: Node, sizes: Mapping[str, sz.ExprLike] | None = None,
                       inputs: Mapping[str, Node] | None = None) -> Node:
    """``root`` with size symbols replaced (in shapes and parameters) and inputs replaced by
    name. Slice bounds that become negative constants would change meaning (they count from
    the end), so callers substitute values that keep symbolic bounds non-negative."""
    sizes = {k: sz.as_expr(v) if not isinstance(v, sz.Expr) else v
             for k, v in (sizes or {}).items()}
    inputs = dict(inputs or {})
    done: dict[int, Node] = {}
    param = (lambda v: _map_exprs(v, lambda e: sz.substitute(e, sizes))) if sizes else None
    for node in topological(root):
        if isinstance(node, Input) and node.name in inputs:
            done[id(node)] = inputs[node.name]
            continue
        done[id(node)] = rebuild(node, lambda x: done[id(x)], param)
    return done[id(root)]


def rebuild(node: Node, operand, param=None) -> Node:
    """``node`` with every operand ``x`` replaced by ``operand(x)`` and, when ``param`` is
    given, every other field ``v`` by ``param(v)``; ``node`` itself when nothing changed."""
    changes = {}
    for f in dataclasses.fields(node):
        if not f.init:
            continue
        v = getattr(node, f.name)
        if isinstance(v, Node):
            changes[f.name] = operand(v)
        elif _is_operands(v):
            changes[f.name] = tuple(operand(x) for x in v)
        elif param is not None:
            changes[f.name] = param(v)
    same = all(changes[k] is getattr(node, k) or changes[k] == getattr(node, k)
               for k in changes)
    return node if same else dataclasses.replace(node, **changes)


def size_parameters(root: Node) -> list[tuple[Node, sz.Expr]]:
    """Every non-constant size expression a shape operator takes as a parameter (slice
    bounds, pad widths, split sizes, broadcast targets, indices). The language takes these
    to be non-negative; a rule's right-hand side must keep them so."""
    out = []
    for node in topological(root):
        if not isinstance(node, ShapeOp):
            continue
        for f in dataclasses.fields(node):
            v = getattr(node, f.name)
            if f.init and not _is_operands(v):
                _collect(v, node, out)
    return out


def _collect(v, node, out):
    if isinstance(v, sz.Expr):
        if not isinstance(v, sz.Const):
            out.append((node, v))
    elif isinstance(v, tuple):
        for x in v:
            _collect(x, node, out)


def preconditions(root: Node) -> list[sz.Expr]:
    """The ``requires`` of every shape operator in the program (non-trivial ones)."""
    out = []
    for node in topological(root):
        if isinstance(node, ShapeOp):
            r = node.index_map().requires
            if r != sz.TRUE:
                out.append(r)
    return out


def input_nodes(root: Node) -> dict[str, Input]:
    return {n.name: n for n in topological(root) if isinstance(n, Input)}


def symbols_of(root: Node) -> set[str]:
    """Every size symbol the program mentions (shapes and parameters)."""
    out: set[str] = set()
    for node in topological(root):
        for n in node.shape:
            out |= sz.free_symbols(n)
        for f in dataclasses.fields(node):
            v = getattr(node, f.name)
            if f.init and not _is_operands(v):
                _map_exprs(v, lambda e: out.update(sz.free_symbols(e)) or e)
    return {s for s in out if not s.startswith("_")}

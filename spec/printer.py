"""Readable text of a program: one SSA line per node, shared subtrees printed once.

    %0 = input a0: float64[4, 3] csr
    %1 = concat(%0, %0, axis=1)                  : float64[4, 6]
"""

from __future__ import annotations

from typing import Any

from sparsefold.spec.ir import Node, show_shape

__all__ = ["show_program", "topological"]


def topological(root: Node, known=()) -> list[Node]:
    """Nodes reachable from ``root``, operands before users, each once (iterative DFS);
    nodes whose ``id`` is in ``known`` are left out, with what only they read."""
    if id(root) in known:
        return []
    order: list[Node] = []
    seen: set[int] = set()
    stack: list[tuple[Node, bool]] = [(root, False)]
    while stack:
        node, expanded = stack.pop()
        if expanded:
            order.append(node)
            continue
        if id(node) in seen:
            continue
        seen.add(id(node))
        stack.append((node, True))
        for o in reversed(node.operands()):
            if id(o) not in seen and id(o) not in known:
                stack.append((o, False))
    return order


def _param(v: Any) -> str:
    if isinstance(v, tuple):
        return "(" + ", ".join(_param(x) for x in v) + ("," if len(v) == 1 else "") + ")"
    return str(v)


def show_program(root: Node) -> str:
    from sparsefold.spec.compute import Input, Literal

    names: dict[int, str] = {}
    lines = []
    for node in topological(root):
        name = names[id(node)] = f"%{len(names)}"
        ty = f"{node.dtype}{list(map(str, node.shape))}".replace("'", "")
        if isinstance(node, Input):
            lines.append(f"{name} = input {node.name}: {ty} {node.format}")
            continue
        if isinstance(node, Literal):
            lines.append(f"{name} = literal {node.value!r}: {node.dtype}")
            continue
        kind = type(node).__name__.lower()
        args = [names[id(o)] for o in node.operands()]
        args += [f"{k}={_param(v)}" for k, v in node.params().items()]
        text = f"{name} = {kind}({', '.join(args)})"
        lines.append(f"{text:<44} : {node.dtype}{show_shape(node.shape)}")
    return "\n".join(lines)

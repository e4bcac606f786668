"""Programs as data that survive a trip to a worker, and rebuilding them with new leaves.

A spec node is rebuilt by calling its class on its dataclass fields, so ``__post_init__``
checks it and derives its shape and dtype again. That is how a block program is specialised
(its leaves replaced by chunks) and how it crosses a process boundary: pickling a node
directly would lose ``shape`` and ``dtype``, which live in the base class's slots and are not
dataclass fields (see the report of issue #15).
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Callable, Sequence

from sparsefold.spec.compute import Input
from sparsefold.spec.errors import InternalError
from sparsefold.spec.ir import Node
from sparsefold.spec.printer import topological

__all__ = ["rebuild", "flatten", "unflatten", "token_of", "chunk_input_name"]


def chunk_input_name(position: int) -> str:
    """The input name of a block program's ``position``-th argument (``sf.jit``'s naming)."""
    return f"a{position}"


def _fields(node: Node) -> list[tuple[str, object]]:
    return [(f.name, getattr(node, f.name)) for f in dataclasses.fields(node)]


def rebuild(root: Node, replace: Callable[[Node], Node | None]) -> Node:
    """``root`` with every node ``n`` for which ``replace(n)`` is not None replaced by it,
    and every node above a replacement constructed again (its checks run again)."""
    done: dict[int, Node] = {}
    for node in topological(root):
        new = replace(node)
        if new is None:
            changed = False
            kwargs = {}
            for name, value in _fields(node):
                if isinstance(value, Node):
                    kwargs[name] = done[id(value)]
                    changed |= kwargs[name] is not value
                elif isinstance(value, tuple) and value and all(isinstance(v, Node)
                                                                for v in value):
                    kwargs[name] = tuple(done[id(v)] for v in value)
                    changed |= any(a is not b for a, b in zip(kwargs[name], value))
                else:
                    kwargs[name] = value
            new = type(node)(**kwargs) if changed else node
        done[id(node)] = new
    return done[id(root)]


def flatten(root: Node) -> tuple:
    """``root`` as nested tuples of classes and field values (hashable, picklable): one entry
    per node in topological order; operands are referred to by entry number. An input keeps
    only its name: the chunk bound to it brings its shape, dtype and format, so blocks of
    different sizes share one entry (and one token, and one jit function per worker)."""
    number: dict[int, int] = {}
    entries = []
    for node in topological(root):
        if isinstance(node, Input):
            number[id(node)] = len(entries)
            entries.append((Input, (("name", "value", node.name),)))
            continue
        fields = []
        for name, value in _fields(node):
            if isinstance(value, Node):
                fields.append((name, "node", number[id(value)]))
            elif isinstance(value, tuple) and value and all(isinstance(v, Node) for v in value):
                fields.append((name, "nodes", tuple(number[id(v)] for v in value)))
            else:
                fields.append((name, "value", value))
        number[id(node)] = len(entries)
        entries.append((type(node), tuple(fields)))
    return tuple(entries)


def unflatten(flat: tuple, inputs: Sequence[Node] = ()) -> Node:
    """The program :func:`flatten` described, with the input named ``a<p>`` replaced by
    ``inputs[p]`` (the chunks' own inputs, as ``sf.jit`` traces them)."""
    built: list[Node] = []
    for cls, fields in flat:
        kwargs = {}
        for name, kind, payload in fields:
            if kind == "node":
                kwargs[name] = built[payload]
            elif kind == "nodes":
                kwargs[name] = tuple(built[p] for p in payload)
            else:
                kwargs[name] = payload
        if cls is Input:
            position = int(kwargs["name"][1:])
            if position >= len(inputs):
                raise InternalError(f"block program reads argument {position}, found "
                                    f"{len(inputs)}")
            built.append(inputs[position])
        else:
            built.append(cls(**kwargs))
    return built[-1]


def token_of(flat: tuple, *extra) -> str:
    """A stable name for a flattened program (and options): the same text, the same token,
    in every process that prints the program the same way."""
    return hashlib.sha1(repr((flat, extra)).encode("utf-8")).hexdigest()

"""Binding size symbols to the sizes of the arrays a program is called with.

Each :class:`~sparsefold.spec.compute.Input` declares its shape as size expressions. A
symbol (``I``) takes the size of the first axis declared with it and must have that size
wherever else it appears; a constant must equal the array's size; any other expression
(``I*J``, from ``sf.jit``'s tracing) is checked once every symbol is bound. One function
for every engine, so the interpreter and compiled kernels reject the same calls with the
same messages.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from sparsefold.spec import sizes as sz
from sparsefold.spec.compute import Input
from sparsefold.spec.errors import InvalidData

__all__ = ["bind_sizes", "too_large"]


def bind_sizes(inputs: Iterable[Input], values: Mapping[str, Any],
               env: Mapping[str, int] | None = None) -> dict[str, int]:
    """The value of every size symbol of ``inputs``, read off ``values[input.name].shape``
    (extending ``env``: sizes bound before, e.g. by an earlier stage of a compiled
    program); :class:`InvalidData` when an array is missing or its shape contradicts the
    declaration."""
    env = dict(env or {})
    checked: list[tuple[Input, tuple[int, ...]]] = []
    for inp in inputs:
        if inp.name not in values:
            raise InvalidData(f"no array was given for input {inp.name!r}")
        shape = tuple(values[inp.name].shape)
        if len(shape) != inp.ndim:
            raise InvalidData(f"input {inp.name!r}: expected a {inp.ndim}-d array, found "
                              f"shape {shape}")
        exact = True
        for declared, n in zip(inp.shape, shape):
            if n < 0:
                raise InvalidData(f"input {inp.name!r}: negative size in shape {shape}")
            if isinstance(declared, sz.Sym):
                if env.setdefault(declared.name, n) != n:
                    raise InvalidData(f"input {inp.name!r}: size {declared.name} is "
                                      f"{env[declared.name]} elsewhere but {n} here")
            elif not isinstance(declared, sz.Const) or declared.value != n:
                exact = False  # a mismatch or a size expression: decided below
        if not exact:
            checked.append((inp, shape))
    for inp, shape in checked:
        expected = tuple(int(sz.evaluate(n, env)) for n in inp.shape)
        if expected != shape:
            raise InvalidData(f"input {inp.name!r}: expected shape {expected}, found {shape}")
    return env


_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def too_large(node, inputs: Iterable[Input], env: Mapping[str, int], *,
              result: bool) -> InvalidData:
    """The error for an array of ``node``'s shape with more than 2**63 - 1 elements, its
    sizes written as the caller's axes (``a0.shape[1]``) rather than the symbols a trace
    gave them (``n0``)."""
    inputs = list(inputs)
    axes: dict[str, str] = {}
    for inp in inputs:
        for d, n in enumerate(inp.shape):
            if isinstance(n, sz.Sym):
                axes.setdefault(n.name, f"{inp.name}.shape[{d}]")
    given = ", ".join(f"{inp.name} has shape {_value(inp.shape, env)}" for inp in inputs)
    tail = f"more than 2**63 - 1 elements, so coordinates would overflow int64 ({given})"
    if isinstance(node, Input):
        return InvalidData(f"{node.name} has {tail}")
    shape = [_WORD.sub(lambda m: axes.get(m.group(0), m.group(0)), str(n)) for n in node.shape]
    what = "the result" if result else f"an intermediate array ({type(node).__name__.lower()})"
    return InvalidData(f"{what} would have shape ({', '.join(shape)}{',' * (len(shape) == 1)})"
                       f" = {_value(node.shape, env)}: {tail}")


def _value(shape, env: Mapping[str, int]) -> tuple[int, ...]:
    """Sizes as exact Python integers (the NumPy reading would wrap past int64)."""
    def leaf(x):
        return x.value if isinstance(x, sz.Const) else int(env[x.name])
    return tuple(int(sz.read(n, sz.PYTHON, leaf)) for n in shape)

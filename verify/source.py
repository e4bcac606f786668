"""Python source text that rebuilds a program — how counterexamples become pasteable tests.

:func:`program_source` writes one assignment per node (shared subtrees once), using the
spec's own constructors, so the text does not depend on the front end that built the program.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from sparsefold.spec import sizes as sz
from sparsefold.spec.formats import Format, named_format
from sparsefold.spec.functions import ElementwiseFunction, Monoid
from sparsefold.spec.ir import Node
from sparsefold.spec.printer import topological

__all__ = ["program_source", "expr_source", "value_source", "grouped_imports"]


def expr_source(e: sz.Expr) -> str:
    """Source of a size expression: ints, ``sz.Sym('I')`` and ``sz.op('add', ...)``."""
    e = sz.as_expr(e)
    if isinstance(e, sz.Const):
        return str(e.value)
    if isinstance(e, sz.Sym):
        return f"sz.Sym({e.name!r})"
    return f"sz.op({e.op!r}, {', '.join(expr_source(a) for a in e.args)})"


def value_source(v, names: dict[int, str], imports: set[str]) -> str:
    """Source of a field value: nodes by their variable, everything else literally."""
    if isinstance(v, Node):
        return names[id(v)]
    if isinstance(v, sz.Expr):
        if not isinstance(v, sz.Const):
            imports.add("from sparsefold.spec import sizes as sz")
        return expr_source(v)
    if isinstance(v, ElementwiseFunction):
        imports.add("from sparsefold.spec.functions import get_function")
        return f"get_function({v.name!r})"
    if isinstance(v, Monoid):
        return repr(v.name)  # Reduce takes a monoid by name
    if isinstance(v, np.dtype):
        imports.add("import numpy as np")
        return f"np.dtype({str(v)!r})"
    if isinstance(v, Format):
        if v.name and named_format(v.name, v.ndim) == v:
            return repr(v.name)
    if isinstance(v, tuple):
        items = [value_source(x, names, imports) for x in v]
        return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"
    if isinstance(v, np.generic):
        imports.add("import numpy as np")
        return f"np.{type(v).__name__}({value_source(v.item(), names, imports)})"
    if isinstance(v, float) and not math.isfinite(v):
        return f"float({str(v)!r})"
    if dataclasses.is_dataclass(v) and not isinstance(v, type):
        cls = type(v)
        imports.add(f"from {cls.__module__} import {cls.__name__}")
        args = ", ".join(f"{f.name}={value_source(getattr(v, f.name), names, imports)}"
                         for f in dataclasses.fields(v) if f.init)
        return f"{cls.__name__}({args})"
    return repr(v)


def program_source(root: Node, var: str = "program") -> tuple[list[str], list[str]]:
    """``(import lines, statement lines)``; the last statement assigns the program to
    ``var``. Node classes are imported from the module that defines them."""
    imports: set[str] = set()
    names: dict[int, str] = {}
    lines = []
    order = topological(root)
    for n, node in enumerate(order):
        cls = type(node)
        imports.add(f"from {cls.__module__} import {cls.__name__}")
        name = var if node is root else f"{var}_{n}"
        args = ", ".join(value_source(getattr(node, f.name), names, imports)
                         for f in dataclasses.fields(node) if f.init)
        lines.append(f"{name} = {cls.__name__}({args})")
        names[id(node)] = name
    return grouped_imports(imports), lines


def grouped_imports(imports: set[str]) -> list[str]:
    """``from m import A`` lines merged per module, plain imports first, sorted."""
    plain = sorted(i for i in imports if i.startswith("import "))
    names: dict[str, set[str]] = {}
    for line in imports:
        if line.startswith("from "):
            module, name = line[5:].split(" import ")
            names.setdefault(module, set()).update(n.strip() for n in name.split(","))
    return plain + [f"from {m} import {', '.join(sorted(n))}" for m, n in sorted(names.items())]

"""Fill values: the value of an array's implicit (unstored) entries (issue 16, item 7).

scipy.sparse arrays have fill 0; a pydata/sparse array carries any ``fill_value``; a NumPy
array has no implicit entries. A sparse input with fill ``c != 0`` enters a program as

    where(present, stored, c)

``stored`` is the array's storage read with fill 0 (its stored values at its coordinates),
``present`` the same coordinates holding ``True`` (a bool array of fill ``False``): the
value is the stored one where an entry is stored and ``c`` everywhere else, exactly —
``-0.0``, NaN and an explicitly stored ``c`` included. Every engine reads that form with
the rules it already has; nothing else in the language knows about fills. So:

* the interpreter evaluates it on the densified operands (the meaning);
* the compiler's merge lattice (``compiler/plan/lattice.py``) asks what each subexpression is
  where its sparse operands are implicit (:func:`implicit_value` of the operands, 0 for
  fill-0 storage): ``where(present, stored, c) * y`` with ``y`` of fill 0 iterates ``y``
  alone, ``(x + 1) - 1`` iterates ``x`` alone, and an expression that is not 0 where
  every sparse operand is implicit (``x + 1``) is dense-valued;
* reductions over it count the implicit entries because they see ``c`` there.

What a result's fill is, is :func:`implicit_value` of the program: its value where every
sparse input is implicit (``f(fill_a, fill_b)`` for a function, the operand's for a shape
operator, ``n * c`` for a sum of ``n`` implicit entries of ``c``).

:func:`prepare` runs once on a program before it is interpreted or compiled: it moves
``where(present, stored, c)`` above shape operators (``S(where(p, x, c)) ==
where(S(p), S(x), c)`` for a gather with no uncovered coordinates, or a pad by ``c``), so a
transpose, reshape or concat of a filled array stays a view of its storage, and rejects a
concatenation of arrays whose fills differ, as pydata does.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from sparsefold.spec import sizes as sz
from sparsefold.spec.compute import Input, Literal, Map, Reduce
from sparsefold.spec.errors import IllFormedProgram
from sparsefold.spec.functions import get_function
from sparsefold.spec.ir import Node, ShapeOp
from sparsefold.spec.ops_index import Pad
from sparsefold.spec.printer import topological
from sparsefold.spec.programs import rebuild

__all__ = ["filled", "filled_parts", "has_fill", "implicit_value", "prepare", "same_fill",
           "fill_literal"]


def fill_literal(fill: Any, dtype: np.dtype) -> Literal:
    """The fill ``c`` as a strong literal of the array's dtype (it must not change the
    result dtype: ``where(p, x, c)`` has ``x``'s dtype)."""
    return Literal(np.asarray(fill, dtype=dtype)[()])


def filled(stored: Node, present: Node, fill: Any) -> Map:
    """``where(present, stored, fill)``: ``stored``'s values where ``present``, else the
    fill. ``present`` is a bool array stored at ``stored``'s coordinates."""
    if present.dtype != np.dtype(bool):
        raise IllFormedProgram(f"a fill mask must be bool, found {present.dtype}")
    return Map(get_function("where"), (present, stored, fill_literal(fill, stored.dtype)))


def filled_parts(node: Node) -> tuple[Node, Node, Literal] | None:
    """``(present, stored, fill)`` when ``node`` is ``where(present, stored, c)`` with a
    bool ``present``, ``stored`` of the result's dtype and a strong literal ``c``; else
    None."""
    if not (isinstance(node, Map) and node.fn.name == "where"):
        return None
    present, stored, fill = node.args
    if (isinstance(fill, Literal) and not fill.weak and fill.dtype == node.dtype
            and stored.dtype == node.dtype and present.dtype == np.dtype(bool)
            and present.shape == stored.shape == node.shape):
        return present, stored, fill
    return None


def _fill_input(node: Node) -> bool:
    """``node`` is a sparse input with a non-zero fill in its program form: the ``where``
    of two sparse inputs (or views of them: :func:`prepare` moves it above shape
    operators) and a literal (what :func:`filled` builds at the boundary)."""
    parts = filled_parts(node)
    return parts is not None and all(_sparse_view(p) for p in parts[:2])


def _sparse_view(node: Node) -> bool:
    if isinstance(node, Input):
        return not node.format.is_dense
    return isinstance(node, ShapeOp) and all(_sparse_view(o) for o in node.operands())


def has_fill(program: Node) -> bool:
    """Some sparse input of ``program`` has a non-zero fill."""
    return any(_fill_input(n) for n in topological(program))


def same_fill(a: Any, b: Any) -> bool:
    """Two fill values are the same (NaN is the same as NaN; ``-0.0`` as ``0.0``)."""
    if a is None or b is None:
        return a is b
    a, b = np.asarray(a), np.asarray(b)
    with np.errstate(all="ignore"):
        return bool(a == b) or bool(np.isnan(a) and np.isnan(b)) if a.dtype.kind in "fc" \
            else bool(a == b)


def implicit_value(program: Node, env: Mapping[str, int] | None = None) -> Any:
    """The value of ``program`` where every sparse input is implicit (a NumPy scalar of its
    dtype), or None when it has none: a dense input or a coordinate takes part, a shape
    operator joins different values (a pad by another value), or a reduction's size is not
    bound by ``env``. For a result, that is its fill value."""
    values: dict[int, Any] = {}
    with np.errstate(all="ignore"):
        for node in topological(program):
            values[id(node)] = _implicit(node, values, env or {})
    return values[id(program)]


def _implicit(node: Node, values: dict[int, Any], env: Mapping[str, int]) -> Any:
    args = [values[id(o)] for o in node.operands()]
    if isinstance(node, Input):
        return None if node.format.is_dense else np.zeros((), node.dtype)[()]
    if isinstance(node, Literal):
        return np.asarray(node.value, node.dtype)[()]
    if any(a is None for a in args):
        return None
    if isinstance(node, Map):
        out = node.fn.impl(*(a.typed_value() if isinstance(a, Literal) and a.weak else v
                             for a, v in zip(node.args, args)))
        return np.asarray(out).astype(node.dtype)[()]
    if isinstance(node, ShapeOp):
        found = list(args)
        if node.fill is not None:
            found.append(np.asarray(node.fill, node.dtype)[()])
        if all(same_fill(found[0], v) for v in found[1:]):
            return np.asarray(found[0], node.dtype)[()]
        return None
    if isinstance(node, Reduce):
        try:
            n = int(sz.evaluate(node.extent(), dict(env)))
        except Exception:  # a size the environment does not bind: unknown here
            return None
        if n == 0 and node.monoid.identity is None:
            return None
        kwargs = {"dtype": node.dtype} if node.monoid.takes_dtype else {}
        copies = np.broadcast_to(np.asarray(args[0]), (n,))  # no copy: a stride-0 view
        return np.asarray(node.monoid.impl(copies, axis=0, **kwargs)).astype(node.dtype)[()]
    return None  # SizeOf, Iota: located values


def prepare(program: Node) -> Node:
    """``program`` with every filled input's ``where`` moved above the shape operators it
    meets (module docstring); :class:`IllFormedProgram` when a shape operator joins filled
    arrays whose fills differ (pydata raises for those too)."""
    if not has_fill(program):
        return program
    done: dict[int, Node] = {}
    for node in topological(program):
        new = rebuild(node, lambda x: done[id(x)])
        if isinstance(new, ShapeOp):
            new = _hoist(new)
        done[id(node)] = new
    return done[id(program)]


def _hoist(node: ShapeOp) -> Node:
    ops = node.operands()
    parts = [filled_parts(o) for o in ops]
    if not any(p is not None for p in parts):
        return node
    fills = [p[2].value if p is not None else _zero_fill(o) for o, p in zip(ops, parts)]
    if any(f is None for f in fills):
        return node  # beside a dense operand (no implicit entries): computed as it is
    if len(ops) > 1 and not all(same_fill(fills[0], f) for f in fills[1:]):
        shown = ", ".join(repr(f.item() if hasattr(f, "item") else f) for f in fills)
        raise IllFormedProgram(f"{type(node).__name__.lower()}: the arrays joined have "
                               f"different fill values ({shown}); pydata/sparse requires "
                               f"one fill value for all of them too")
    if any(p is None for p in parts):
        return node  # a fill-0 operand beside filled ones cannot get here (fills differ)
    fill = parts[0][2]
    if isinstance(node, Pad):
        if not same_fill(node.fill, fill.value):
            return node  # NumPy's meaning: the pad value around the filled interior
        present = Pad(parts[0][0], node.widths, False)
        stored = Pad(parts[0][1], node.widths, 0)
    elif node.fill is not None:
        return node  # coordinates no piece covers take the operator's own value
    else:
        present = _with_operands(node, [p[0] for p in parts])
        stored = _with_operands(node, [p[1] for p in parts])
    return Map(get_function("where"), (present, stored, fill))


def _zero_fill(node: Node) -> Any:
    """The fill of a non-filled operand: 0 where it is sparse, None where it is dense."""
    return implicit_value(node)


def _with_operands(node: ShapeOp, operands: list[Node]) -> ShapeOp:
    it = iter(operands)
    return rebuild(node, lambda _x: next(it))

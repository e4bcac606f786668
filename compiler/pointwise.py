"""Pointwise emission: Cython statements computing a node's value at given coordinates.

This is the backward direction of every definition: a shape operator's value at output
coordinate ``k`` is its operand's value at ``backward(k)`` (under the piece's guard), a map's
value is its function of its arguments' values, a reduction loops over the reduced axes.
It reads only the spec's entries, so it handles every operator, built-in or user-defined.

Used by the dense kernel (every output coordinate) and by sparse kernels to read *located*
operands (dense arrays met by a sparse stream, e.g. ``x`` in ``A @ x``).
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import contextmanager

import numpy as np

from sparsefold.compiler.cnames import c_literal, ctype, size_var
from sparsefold.spec import sizes as sz
from sparsefold.spec.compute import Input, Literal, Map, Reduce
from sparsefold.spec.errors import IllFormedProgram, InternalError
from sparsefold.spec.ir import Node, ShapeOp
from sparsefold.spec.ops_axes import BroadcastTo

__all__ = ["Body", "Pointwise", "expr_c", "loop_dtypes", "as_type"]


class Body:
    """A function body under construction: lines with indentation, plus the ``cdef``
    declarations Cython wants at the top of the function."""

    def __init__(self, depth: int = 2):
        self.decls: dict[str, str] = {}
        self.lines: list[str] = []
        self.depth = depth
        self._count = 0
        self.helpers: dict[str, str] = {}

    def var(self, prefix: str, c_type: str) -> str:
        self._count += 1
        name = f"{prefix}_{self._count}"
        self.decls[name] = c_type
        return name

    def declare(self, name: str, c_type: str) -> str:
        if self.decls.get(name, c_type) != c_type:
            raise InternalError(f"variable {name} declared as two types")
        self.decls[name] = c_type
        return name

    def line(self, text: str) -> None:
        self.lines.append("    " * self.depth + text)

    def comment(self, text: str) -> None:
        self.line(f"# {text}")

    @contextmanager
    def block(self, header: str):
        self.line(header)
        self.depth += 1
        yield
        self.depth -= 1

    def declarations(self, indent: int = 1) -> list[str]:
        pad = "    " * indent
        return [f"{pad}cdef {t} {n}" for n, t in sorted(self.decls.items())]


def expr_c(e: sz.Expr, coords: dict[str, str]) -> str:
    """C text of an index expression: coordinate symbols from ``coords``, sizes as S_*."""
    return sz.to_c(e, lambda s: coords[s] if s in coords else size_var(s))


def as_type(text: str, dt: np.dtype) -> str:
    """Convert a C value to dtype ``dt`` the way NumPy casts (bool: nonzero is true)."""
    dt = np.dtype(dt)
    if dt.kind == "b":
        return f"(({text}) != 0)"
    return f"(<{ctype(dt)}>({text}))"


def loop_dtypes(node: Map) -> tuple[tuple[np.dtype, ...], np.dtype]:
    """The dtypes NumPy computes in for this map: one per argument, and the result."""
    fn = node.fn
    probes = tuple(a.value if isinstance(a, Literal) and a.weak else a.dtype
                   for a in node.args)
    if isinstance(fn.impl, np.ufunc):
        try:
            types = fn.impl.resolve_dtypes(
                tuple(type(p) if not isinstance(p, np.dtype) else p for p in probes)
                + (None,) * fn.impl.nout)
            return tuple(np.dtype(t) for t in types[:fn.arity]), node.dtype
        except (TypeError, ValueError):
            pass
    if fn.name == "where":
        common = node.dtype
        return (np.dtype(bool), common, common), node.dtype
    return tuple(node.dtype for _ in node.args), node.dtype


class Pointwise:
    """Emits the value of a node at coordinates into a :class:`Body`.

    ``leaf`` gives the C expression of an input's element at coordinates (the caller knows
    how each input is stored)."""

    def __init__(self, body: Body, leaf: Callable[[Input, tuple[str, ...]], str]):
        self.body = body
        self.leaf = leaf

    def value(self, node: Node, coords: tuple[str, ...]) -> str:
        if isinstance(node, Input):
            return self.leaf(node, coords)
        if isinstance(node, Literal):
            return c_literal(node.value, node.dtype)
        if isinstance(node, Map):
            return self._map(node, coords)
        if isinstance(node, Reduce):
            return self._reduce(node, coords)
        if isinstance(node, ShapeOp):
            return self._shape_op(node, coords)
        raise InternalError(f"no pointwise rule for {type(node).__name__}")

    # spec.compute.Map: the function of the arguments' values, in NumPy's loop dtypes
    def _map(self, node: Map, coords) -> str:
        return self.map_with(node, {}, coords)

    def map_with(self, node: Map, known: dict[int, str], coords) -> str:
        """The map's value at ``coords``; arguments in ``known`` are given as C text (the
        stream's own value), the others are computed pointwise."""
        ins, out = loop_dtypes(node)
        args = []
        for d, (arg, dt) in enumerate(zip(node.args, ins)):
            v = known[d] if d in known else self.value(arg, _broadcast_coords(arg, node, coords))
            args.append(as_type(v, dt))
        text = self._apply(node, args, ins)
        v = self.body.var("v", ctype(out))
        self.body.line(f"{v} = {as_type(text, out)}")
        return v

    def _apply(self, node: Map, args: list[str], ins) -> str:
        fn = node.fn
        text = fn.c_text(ins[0].kind)
        if text is None and fn.c_expr is None:
            raise IllFormedProgram(
                f"not supported yet by the compiler: elementwise function {fn.name!r} has no "
                f"C expression (register it with c_expr=...)")
        if text is None:
            raise IllFormedProgram(
                f"not supported yet by the compiler: {fn.name} of {ins[0]} arguments (no C "
                f"reading in spec); use .interpret() or cast to float")
        return text.format(*args)

    # spec.compute.Reduce: loop over the reduced axes combining with the monoid
    def _reduce(self, node: Reduce, coords) -> str:
        arg = node.arg
        dt = node.dtype
        m = node.monoid
        acc = self.body.var("acc", ctype(dt))
        first = None
        if m.identity is None:
            first = self.body.var("first", "bint")
            self.body.line(f"{first} = 1")
            self.body.line(f"{acc} = 0")
        else:
            self.body.line(f"{acc} = {c_literal(m.identity, dt)}")
        full, it = [], iter(coords)
        loops = []
        for d in range(arg.ndim):
            if d in node.axes:
                r = self.body.var("r", "int64_t")
                loops.append((r, expr_c(arg.shape[d], {})))
                full.append(r)
            else:
                full.append(next(it))
        depth = self.body.depth
        for r, n in loops:
            self.body.line(f"for {r} in range({n}):")
            self.body.depth += 1
        v = as_type(self.value(arg, tuple(full)), dt)
        if m.selects is None:
            self.body.line(f"{acc} = {m.c_combine.format(acc, v)}")
        else:  # max/min: replace when better, or NaN (which propagates)
            x = self.body.var("x", ctype(dt))
            self.body.line(f"{x} = {v}")
            nan = f" or {x} != {x}" if dt.kind == "f" else ""
            self.body.line(f"if {first} or ({x} {m.selects} {acc}{nan} and {acc} == {acc}):")
            self.body.line(f"    {acc} = {x}")
            self.body.line(f"    {first} = 0")
        self.body.depth = depth
        return acc

    # spec.ir.ShapeOp: the operand's value at backward(k) under the piece's guard, else fill
    def _shape_op(self, node: ShapeOp, coords) -> str:
        im = node.index_map()
        env = sz.out_binding(coords)
        pieces = im.pieces
        if len(pieces) == 1 and pieces[0].guard == sz.TRUE and im.fill is None:
            return self._gather(node, pieces[0], env)
        out = self.body.var("v", ctype(node.dtype))
        fill = im.fill if im.fill is not None else 0
        self.body.line(f"{out} = {c_literal(fill, node.dtype)}")
        for n, piece in enumerate(pieces):
            keyword = "if" if n == 0 else "elif"
            with self.body.block(f"{keyword} {expr_c(piece.guard, env)}:"):
                v = self._gather(node, piece, env)
                self.body.line(f"{out} = {as_type(v, node.dtype)}")
        return out

    def _gather(self, node: ShapeOp, piece, env) -> str:
        operand = node.operands()[piece.operand]
        sub = []
        for b in piece.backward:
            text = expr_c(b, env)
            if text.isidentifier() or text.lstrip("-").isdigit():
                sub.append(text)
            else:
                c = self.body.var("c", "int64_t")
                self.body.line(f"{c} = {text}")
                sub.append(c)
        return self.value(operand, tuple(sub))


def _broadcast_coords(arg: Node, out: Node, coords: tuple[str, ...]) -> tuple[str, ...]:
    """Map's NumPy broadcasting, read through the broadcast_to entry's backward map."""
    if arg.shape == out.shape:
        return coords
    piece = BroadcastTo(arg, out.shape).index_map().pieces[0]
    env = sz.out_binding(coords)
    return tuple(expr_c(b, env) for b in piece.backward)

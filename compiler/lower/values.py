"""A node's value at given coordinates, as loop-IR statements and expressions.

This is the backward direction of every definition: a shape operator's value at output
coordinate ``k`` is its operand's value at ``backward(k)`` under the piece's guard (else the
fill), a map's value is its function of its arguments' values, a reduction loops over the
reduced axes. It reads only the spec's entries, so it serves every operator, built in or
user-defined.

Lowerings use it to read *located* operands (dense arrays, literals) and to combine the
values their cursors found: ``known`` maps a node to an IR expression already computed
(a sparse operand's value at the current coordinate, or 0 where it stores nothing).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np

from sparsefold.compiler.emit.cnames import c_literal, ctype, is_complex_ctype, size_var
from sparsefold.compiler.emit.emit import render_expr
from sparsefold.compiler.emit.loops import (
    INT,
    Bin,
    Builder,
    Cast,
    Expr,
    Lit,
    Not,
    Raise,
    Template,
    Var,
    as_expr,
    cast,
    variables,
)
from sparsefold.spec import sizes as sz
from sparsefold.spec.c_library import C_LIBRARY
from sparsefold.spec.compute import Input, Iota, Literal, Map, Reduce, SizeOf
from sparsefold.spec.errors import IllFormedProgram, InternalError
from sparsefold.spec.functions import get_monoid
from sparsefold.spec.ir import Node, ShapeOp
from sparsefold.spec.ops_axes import BroadcastTo

__all__ = ["Values", "index", "convert", "loop_dtypes", "broadcast_coords", "apply_function",
           "monoid_combine"]


def index(e: sz.ExprLike, coords: Mapping[str, Expr] | None = None) -> Expr:
    """An index expression as IR: coordinate symbols from ``coords``, sizes as ``S_*``."""
    coords = coords or {}
    uses: list[Var] = []

    def name(s: str) -> str:
        if s in coords:
            v = coords[s]
            uses.extend(variables(v))
            return v.name if isinstance(v, Var) else _text(v)
        return size_var(s)
    text = sz.to_c(e, name)
    return Lit(text, INT, tuple(dict.fromkeys(uses)))


def _text(e: Expr) -> str:
    """``e`` as an operand of the size language's C text (parenthesized unless atomic)."""
    return render_expr(e, 13)


# C types known to be real (an expression of unknown ctype "" may well be complex already)
_REAL_CTYPES = frozenset({ctype(np.dtype(t)) for t in (
    "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float32", "float64")} | {"sf_half", INT})


def convert(value, dt: np.dtype) -> Expr:
    """``value`` converted to dtype ``dt`` the way NumPy casts (bool: nonzero is true;
    complex to real: the real part)."""
    dt = np.dtype(dt)
    value = as_expr(value)
    if dt.kind == "b":
        if value.ctype == "bint":
            return value
        return Bin("!=", value, Lit("0"))
    if is_complex_ctype(value.ctype) and dt.kind != "c":
        value = Template("creal({0})", (value,), "double")
    if dt.kind == "c" and value.ctype in _REAL_CTYPES:
        # built from its parts: Cython crashes folding a cast of an integer literal to complex
        part, make = ("float", "CMPLXF") if dt == np.complex64 else ("double", "CMPLX")
        return Template(f"{make}({{0}}, 0)", (cast(part, value),), ctype(dt))
    if dt == np.float16 and value.ctype != "sf_half":
        value = Cast("sf_half", value)  # NumPy rounds every float16 result to half
    return cast(ctype(dt), value)


def loop_dtypes(node: Map) -> tuple[tuple[np.dtype, ...], np.dtype]:
    """The dtypes NumPy computes in for this map: one per argument, and the result."""
    probes = tuple(a.value if isinstance(a, Literal) and a.weak else a.dtype
                   for a in node.args)
    return node.fn.loop_dtypes(probes, node.dtype), node.dtype


def apply_function(node: Map, args: list[Expr], ins) -> Expr:
    """The spec function's C reading (for its arguments' dtype kind) applied to converted
    arguments."""
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
    return Template(text, tuple(args), _helper_ctype(text, ins[0]))


def _helper_ctype(text: str, dt: np.dtype) -> str:
    """The C type of ``text`` when it is one call of a helper returning the fused complex
    type of its arguments (``sf_cmul``, ``sf_csign``, ...): the arguments' own; else unknown
    (""). Known, the result needs no cast, and a Cython cast between complex types rebuilds
    the value as ``re + im * I``, which turns ``inf + nan j`` into ``nan + nan j``."""
    name, _, rest = text.partition("(")
    helper = C_LIBRARY.get(name)
    if (dt.kind == "c" and rest.endswith(")") and helper is not None
            and helper.source == "helper"
            and helper.text.startswith(f"cdef inline sf_cfloat {name}(")):
        return ctype(dt)
    return ""


def monoid_combine(monoid, acc: Expr, x: Expr, dt: np.dtype) -> Expr:
    """The spec monoid's combination of an accumulator with a value. max/min replace by
    their comparison (``Monoid.selects``), with NumPy's NaN propagation for floats: a NaN
    value wins, and a NaN accumulator stays."""
    m = get_monoid(monoid)
    out = ctype(dt)
    text = m.c_text(np.dtype(dt).kind)
    if text is None:
        raise IllFormedProgram(f"not supported yet by the compiler: {m.name} of {dt} "
                               f"values; use .interpret()")
    if m.selects is not None and np.dtype(dt).kind == "c":
        # NumPy's complex maximum/minimum (spec/c_library.py sf_cselect) as reduce applies it,
        # maximum(acc, x): a nan accumulator stays, a nan value wins, else the order decides
        greater = 1 if m.selects == ">" else 0
        return Template(f"sf_cselect({{0}}, {{1}}, {greater})", (acc, x), out)
    if m.selects is not None:
        if np.dtype(dt).kind == "f":
            return Template(f"({{1}} if ({{1}} {m.selects} {{0}} or {{1}} != {{1}}) and "
                            f"{{0}} == {{0}} else {{0}})", (acc, x), out)
        return Template(f"({{1}} if {{1}} {m.selects} {{0}} else {{0}})", (acc, x), out)
    if np.dtype(dt).kind == "b":  # the C reading of any/all on truth values
        return convert(Template(text.replace("{0}", "({0} != 0)").replace(
            "{1}", "({1} != 0)"), (acc, x)), dt)
    if np.dtype(dt) == np.float16:  # NumPy accumulates float16 in float32
        return cast(out, Template(text, (acc, x)))
    return convert(Template(text, (acc, x)), dt)


def broadcast_coords(arg: Node, out: Node, coords: tuple[Expr, ...]) -> tuple[Expr, ...]:
    """Map's NumPy broadcasting, read through the broadcast_to entry's backward map."""
    if arg.shape == out.shape:
        return coords
    piece = BroadcastTo(arg, out.shape).index_map().pieces[0]
    env = sz.out_binding(coords)
    return tuple(index(b, env) for b in piece.backward)


class Values:
    """Emits the value of a node at coordinates into a :class:`Builder`.

    ``leaf(input, coords)`` gives an input's element (the caller knows how each input is
    stored); ``known`` gives values already computed for whole subtrees."""

    def __init__(self, b: Builder, leaf: Callable[[Input, tuple[Expr, ...]], Expr],
                 known: Mapping[Node, Expr] | None = None, sites=None):
        self.b = b
        self.leaf = leaf
        self.known = dict(known or {})
        self.sites = sites  # bounds.Sites: where a function's domain check reports

    def value(self, node: Node, coords: tuple[Expr, ...]) -> Expr:
        if node in self.known:
            return self.known[node]
        if isinstance(node, Input):
            return self.leaf(node, coords)
        if isinstance(node, Literal):
            return Lit(c_literal(node.value, node.dtype), ctype(node.dtype))
        if isinstance(node, SizeOf):  # spec.compute.SizeOf: a size, bound by the call
            return cast(ctype(node.dtype), index(node.size))
        if isinstance(node, Iota):  # spec.compute.Iota: the coordinate itself
            return cast(ctype(node.dtype), as_expr(coords[node.axis]))
        if isinstance(node, Map):
            return self.map_with(node, {}, coords)
        if isinstance(node, Reduce):
            return self._reduce(node, coords)
        if isinstance(node, ShapeOp):
            return self._shape_op(node, coords)
        raise InternalError(f"no value rule for {type(node).__name__}")

    # spec.compute.Map: the function of the arguments' values, in NumPy's loop dtypes
    def map_with(self, node: Map, given: dict[int, Expr], coords) -> Expr:
        """The map's value at ``coords``; arguments in ``given`` are IR expressions (a
        cursor's value), the others are computed here. Returns a variable."""
        ins, out = loop_dtypes(node)
        args = []
        for d, (arg, dt) in enumerate(zip(node.args, ins)):
            v = given[d] if d in given else self.value(arg, broadcast_coords(arg, node, coords))
            args.append(convert(v, dt))
        for cond, message in node.fn.c_checks(ins[0].kind):
            if self.sites is None:
                raise InternalError(f"{node.fn.name}: a domain check needs the kernel's sites")
            with self.b.if_(Not(Template(cond, tuple(args), "bint"))):
                self.b.emit(Raise(self.sites.site("domain", message), ()))
        v = self.b.fresh("v", ctype(out))
        self.b.assign(v, convert(apply_function(node, args, ins), out))
        return v

    # spec.compute.Reduce: loop over the reduced axes combining with the monoid
    def _reduce(self, node: Reduce, coords) -> Expr:
        arg, dt = node.arg, node.dtype
        m = get_monoid(node.monoid)
        monoid = m
        acc = self.b.fresh("acc", ctype(dt))
        first = None
        if m.identity is None:
            first = self.b.fresh("first", "bint")
            self.b.assign(first, True)
            self.b.assign(acc, Lit("0"))
        else:
            self.b.assign(acc, Lit(c_literal(m.identity, dt), ctype(dt)))
        full, it, loops = [], iter(coords), []
        for d in range(arg.ndim):
            if d in node.axes:
                r = self.b.fresh("r")
                loops.append((r, index(arg.shape[d])))
                full.append(r)
            else:
                full.append(next(it))
        opened = []
        for r, n in loops:
            cm = self.b.loop(r, 0, n)
            cm.__enter__()
            opened.append(cm)
        x = convert(self.value(arg, tuple(full)), dt)
        if first is None:
            self.b.assign(acc, monoid_combine(monoid, acc, x, dt))
        else:
            with self.b.if_(first):
                self.b.assign(acc, x)
                self.b.assign(first, False)
            with self.b.else_():
                self.b.assign(acc, monoid_combine(monoid, acc, x, dt))
        for cm in reversed(opened):
            cm.__exit__(None, None, None)
        return acc

    # spec.ir.ShapeOp: the operand's value at backward(k) under the piece's guard, else fill
    def _shape_op(self, node: ShapeOp, coords) -> Expr:
        im = node.index_map()
        env = sz.out_binding(coords)
        pieces = im.pieces
        if len(pieces) == 1 and pieces[0].guard == sz.TRUE and im.fill is None:
            return self._gather(node, pieces[0], env)
        out = self.b.fresh("v", ctype(node.dtype))
        fill = im.fill if im.fill is not None else 0
        self.b.assign(out, Lit(c_literal(fill, node.dtype), ctype(node.dtype)))
        for n, piece in enumerate(pieces):
            ctx = self.b.if_(index(piece.guard, env)) if n == 0 else \
                self.b.elif_(index(piece.guard, env))
            with ctx:
                self.b.assign(out, convert(self._gather(node, piece, env), node.dtype))
        return out

    def _gather(self, node: ShapeOp, piece, env) -> Expr:
        operand = node.operands()[piece.operand]
        sub = []
        for bw in piece.backward:
            e = index(bw, env)
            if e.text.isidentifier() or e.text.lstrip("-").isdigit():
                sub.append(e)
            else:
                c = self.b.fresh("c")
                self.b.assign(c, e)
                sub.append(c)
        return self.value(operand, tuple(sub))

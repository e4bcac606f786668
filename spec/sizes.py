"""Sizes and index expressions: a tiny integer language with one semantics table.

An :class:`Expr` is a constant, a symbol (an array size such as ``I``, or a coordinate such as
``_k0``), or an operator applied to expressions. It describes both array sizes (``I*J``,
``(e - s + r - 1) // r``) and coordinate maps (``k // J``).

Conventions, stated once:

* Values are integers; predicates (``lt``, ``and``, ...) are integers too (true is 1).
* ``floordiv``/``mod`` are Python's floor division and modulo. Every place the language uses
  them has a non-negative dividend and a divisor ≥ 1, where floor division agrees with C's
  truncating ``/`` (``cdivision``) and with Z3's Euclidean ``div`` — the verifier proves it.
* Every symbol is non-negative (sizes, and coordinates within their axes); the simplifier
  relies on it (``max(I, 0)`` is ``I``). Coordinate symbols are named ``_k<d>`` (output axis ``d``)
  and ``_i<d>`` (operand axis ``d``); user symbols may not start with ``_``.

**One table, several readings** (STYLE 9): :data:`OPS` names every operator with its arity
and the NumPy function that *is* its meaning. The other readings are built from it by
explicit overrides: :data:`PYTHON` (exact constant folding on Python ints), :data:`C`
(Cython expression text for the emitter), and ``sizes_z3.Z3_TABLE`` (Z3 terms, for the
verifier's and the compiler's proofs; its own module, so that reading the language does not
need Z3).
"""

from __future__ import annotations

import contextvars
import operator
import re
from collections.abc import Callable, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Union

import numpy as np

from sparsefold.spec.errors import IllFormedProgram

__all__ = [
    "Expr", "Const", "Sym", "Op", "OPS", "NUMPY", "PYTHON", "C", "ExprLike",
    "as_expr", "op", "add", "sub", "mul", "floordiv", "mod", "minimum", "maximum",
    "lt", "le", "eq", "ne", "gt", "ge", "and_", "or_", "not_", "select", "product",
    "TRUE", "FALSE", "free_symbols", "substitute", "evaluate", "read", "to_c",
    "definitely_equal", "is_const", "const_value", "out_coord", "in_coord", "out_coords",
    "in_coords", "out_binding", "in_binding", "conjuncts", "check_symbol_name", "ceil_div",
    "python_function", "assuming", "assume_equal", "assumed_equal",
]


class Expr:
    """Base of index expressions. Python operators build expressions (``I * J + 1``)."""

    __slots__ = ()

    def __add__(self, other): return add(self, other)
    def __radd__(self, other): return add(other, self)
    def __sub__(self, other): return sub(self, other)
    def __rsub__(self, other): return sub(other, self)
    def __mul__(self, other): return mul(self, other)
    def __rmul__(self, other): return mul(other, self)
    def __floordiv__(self, other): return floordiv(self, other)
    def __rfloordiv__(self, other): return floordiv(other, self)
    def __mod__(self, other): return mod(self, other)
    def __rmod__(self, other): return mod(other, self)
    def __neg__(self): return sub(0, self)

    def __str__(self) -> str:
        return _show(self)


@dataclass(frozen=True, slots=True, repr=False)
class Const(Expr):
    """An integer constant (predicates use 0/1)."""

    value: int

    def __post_init__(self):
        if not isinstance(self.value, (int, np.integer)):
            raise IllFormedProgram(f"size constants must be integers, found {self.value!r}")
        object.__setattr__(self, "value", int(self.value))

    def __repr__(self) -> str:
        return str(self.value)


_SYMBOL = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def check_symbol_name(name: str, *, what: str = "size symbol") -> str:
    """Validate a user-given name: an identifier not starting with ``_`` (reserved)."""
    if not isinstance(name, str) or not _SYMBOL.match(name) or name.startswith("_"):
        raise IllFormedProgram(
            f"{what} must be an identifier that does not start with '_', found {name!r}")
    return name


@dataclass(frozen=True, slots=True, repr=False)
class Sym(Expr):
    """A symbol: a size (``I``) or a coordinate (``_k0``, ``_i1``). Sizes are ≥ 0."""

    name: str

    def __repr__(self) -> str:
        return self.name


@dataclass(frozen=True, slots=True, repr=False)
class Op(Expr):
    """An operator of :data:`OPS` applied to expressions. Build with :func:`op`."""

    op: str
    args: tuple[Expr, ...]

    def __repr__(self) -> str:
        return _show(self)


ExprLike = Union[Expr, int, str]

TRUE = Const(1)
FALSE = Const(0)


@dataclass(frozen=True, slots=True)
class OpInfo:
    """One row of the semantics table: arity, NumPy meaning, how to print it."""

    arity: int
    numpy: Callable
    infix: str | None = None  # printed as ``a <infix> b`` when set, else ``name(a, b)``


# The semantics table. Its NumPy column is the meaning of each operator.
OPS: dict[str, OpInfo] = {
    "add": OpInfo(2, np.add, "+"),
    "sub": OpInfo(2, np.subtract, "-"),
    "mul": OpInfo(2, np.multiply, "*"),
    "floordiv": OpInfo(2, np.floor_divide, "//"),
    "mod": OpInfo(2, np.mod, "%"),
    "min": OpInfo(2, np.minimum),
    "max": OpInfo(2, np.maximum),
    "lt": OpInfo(2, np.less, "<"),
    "le": OpInfo(2, np.less_equal, "<="),
    "eq": OpInfo(2, np.equal, "=="),
    "ne": OpInfo(2, np.not_equal, "!="),
    "gt": OpInfo(2, np.greater, ">"),
    "ge": OpInfo(2, np.greater_equal, ">="),
    "and": OpInfo(2, np.logical_and, "and"),
    "or": OpInfo(2, np.logical_or, "or"),
    "not": OpInfo(1, np.logical_not),
    "select": OpInfo(3, np.where),
}

NUMPY: dict[str, Callable] = {name: info.numpy for name, info in OPS.items()}

# Exact reading on Python ints (arbitrary precision): used to fold constants.
PYTHON: dict[str, Callable] = NUMPY | {
    "add": operator.add, "sub": operator.sub, "mul": operator.mul,
    "floordiv": operator.floordiv, "mod": operator.mod, "min": min, "max": max,
    "lt": lambda a, b: int(a < b), "le": lambda a, b: int(a <= b),
    "eq": lambda a, b: int(a == b), "ne": lambda a, b: int(a != b),
    "gt": lambda a, b: int(a > b), "ge": lambda a, b: int(a >= b),
    "and": lambda a, b: int(bool(a) and bool(b)), "or": lambda a, b: int(bool(a) or bool(b)),
    "not": lambda a: int(not a), "select": lambda c, a, b: a if c else b,
}

# Cython expression text over C integers (the kernels are compiled with cdivision=True;
# floordiv/mod operands are non-negative wherever the language uses them).
C: dict[str, Callable[..., str]] = {
    name: (lambda sym: lambda a, b: f"({a} {sym} {b})")(info.infix)
    for name, info in OPS.items() if info.infix
} | {
    "and": lambda a, b: f"({a} and {b})", "or": lambda a, b: f"({a} or {b})",
    "not": lambda a: f"(not {a})",
    "min": lambda a, b: f"min({a}, {b})", "max": lambda a, b: f"max({a}, {b})",
    "select": lambda c, a, b: f"({a} if {c} else {b})",
}

def as_expr(x: ExprLike) -> Expr:
    """Coerce an int (constant) or a str (symbol) to an :class:`Expr`."""
    if isinstance(x, Expr):
        return x
    if isinstance(x, (bool, np.bool_)):
        return Const(int(x))
    if isinstance(x, (int, np.integer)):
        return Const(int(x))
    if isinstance(x, str):
        return Sym(check_symbol_name(x))
    raise IllFormedProgram(f"expected an integer or a size symbol, found {x!r}")


def is_const(e: ExprLike) -> bool:
    return isinstance(as_expr(e), Const)


def const_value(e: ExprLike) -> int | None:
    """The integer value of a constant expression, else ``None``."""
    e = as_expr(e)
    return e.value if isinstance(e, Const) else None


def op(name: str, *args: ExprLike) -> Expr:
    """Smart constructor: folds constants and applies exact integer identities."""
    info = OPS[name]
    if len(args) != info.arity:
        raise IllFormedProgram(f"{name} takes {info.arity} arguments, found {len(args)}")
    xs = tuple(as_expr(a) for a in args)
    if all(isinstance(x, Const) for x in xs):
        vals = [x.value for x in xs]
        if name in ("floordiv", "mod") and vals[1] == 0:
            raise IllFormedProgram(f"division by zero in size expression {name}{tuple(vals)}")
        return Const(int(PYTHON[name](*vals)))
    simplified = _simplify(name, xs)
    return simplified if simplified is not None else Op(name, xs)


def _simplify(name: str, xs: tuple[Expr, ...]) -> Expr | None:
    """Exact identities on integers (sizes have no NaN, so ``x * 0 == 0`` holds here)."""
    v = [x.value if isinstance(x, Const) else None for x in xs]
    if name == "add":
        if v[0] == 0:
            return xs[1]
        if v[1] == 0:
            return xs[0]
        if v[0] is not None:
            return op("add", xs[1], xs[0])  # constants go right
        a = xs[0]
        if v[1] is not None and isinstance(a, Op) and a.op == "add" \
                and isinstance(a.args[1], Const):
            return op("add", a.args[0], a.args[1].value + v[1])
    elif name == "sub":
        if v[1] is not None:
            return op("add", xs[0], -v[1])
        if xs[0] == xs[1]:
            return Const(0)
    elif name == "mul":
        if v[0] == 1:
            return xs[1]
        if v[1] == 1:
            return xs[0]
        if v[0] == 0 or v[1] == 0:
            return Const(0)
    elif name == "floordiv":
        if v[1] == 1:
            return xs[0]
        if v[0] == 0 and v[1] is not None and v[1] != 0:
            return Const(0)
    elif name == "mod":
        if v[1] == 1:
            return Const(0)
    elif name in ("min", "max"):
        if xs[0] == xs[1]:
            return xs[0]
        # every symbol is non-negative (sizes and coordinates), so e.g. max(I, 0) == I and
        # min(J, J + K) == J are exact here
        if _nonneg_poly(_poly(sub(xs[1], xs[0]))):
            return xs[0] if name == "min" else xs[1]
        if _nonneg_poly(_poly(sub(xs[0], xs[1]))):
            return xs[1] if name == "min" else xs[0]
    elif name == "and":
        if v[0] == 0 or v[1] == 0:
            return FALSE
        if v[0] is not None:
            return xs[1]
        if v[1] is not None:
            return xs[0]
    elif name == "or":
        if v[0] not in (None, 0) or v[1] not in (None, 0):
            return TRUE
        if v[0] == 0:
            return xs[1]
        if v[1] == 0:
            return xs[0]
    elif name == "select":
        if v[0] is not None:
            return xs[1] if v[0] else xs[2]
        if xs[1] == xs[2]:
            return xs[1]
    elif name in ("le", "ge", "eq") and xs[0] == xs[1]:
        return TRUE
    elif name in ("le", "lt", "ge", "gt") and (v[0] is not None or v[1] is not None):
        # decide comparisons against a constant when the other side is provably >= it
        a, b = (xs[0], xs[1]) if name in ("le", "lt") else (xs[1], xs[0])
        if _nonneg_poly(_poly(sub(b, a))) or _poly(sub(b, a)) == {}:
            return TRUE if name in ("le", "ge") else None
    elif name in ("lt", "gt", "ne") and xs[0] == xs[1]:
        return FALSE
    return None


def add(a, b): return op("add", a, b)
def sub(a, b): return op("sub", a, b)
def mul(a, b): return op("mul", a, b)
def floordiv(a, b): return op("floordiv", a, b)
def mod(a, b): return op("mod", a, b)
def minimum(a, b): return op("min", a, b)
def maximum(a, b): return op("max", a, b)
def lt(a, b): return op("lt", a, b)
def le(a, b): return op("le", a, b)
def eq(a, b): return op("eq", a, b)
def ne(a, b): return op("ne", a, b)
def gt(a, b): return op("gt", a, b)
def ge(a, b): return op("ge", a, b)
def and_(*xs): return _fold("and", xs, TRUE)
def or_(*xs): return _fold("or", xs, FALSE)
def not_(a): return op("not", a)
def select(c, a, b): return op("select", c, a, b)


def _fold(name: str, xs, unit: Expr) -> Expr:
    out = unit
    for x in xs:
        out = op(name, out, x)
    return out


def product(xs) -> Expr:
    """The product of sizes (1 for none)."""
    out: Expr = Const(1)
    for x in xs:
        out = mul(out, x)
    return out


def out_coord(d: int) -> Sym:
    """The symbol of an operator's output coordinate on axis ``d``: ``_k<d>``."""
    return Sym(f"_k{d}")


def in_coord(d: int) -> Sym:
    """The symbol of an operator's operand coordinate on axis ``d``: ``_i<d>``."""
    return Sym(f"_i{d}")


def out_coords(n: int) -> tuple[Sym, ...]:
    """Coordinate symbols of an operator's output: ``_k0 .. _k{n-1}``."""
    return tuple(out_coord(d) for d in range(n))


def in_coords(n: int) -> tuple[Sym, ...]:
    """Coordinate symbols of an operator's operand: ``_i0 .. _i{n-1}``."""
    return tuple(in_coord(d) for d in range(n))


def out_binding(values) -> dict[str, Any]:
    """``{"_k0": values[0], "_k1": values[1], ...}``: output coordinates bound to values
    (expressions, C names, arrays), for :func:`substitute`, :func:`evaluate`, :func:`to_c`."""
    return {out_coord(d).name: v for d, v in enumerate(values)}


def in_binding(values) -> dict[str, Any]:
    """``{"_i0": values[0], ...}``: operand coordinates bound to values."""
    return {in_coord(d).name: v for d, v in enumerate(values)}


def conjuncts(e: ExprLike) -> list[Expr]:
    """The conjuncts of a predicate (``and`` split all the way down; none for true)."""
    e = as_expr(e)
    if isinstance(e, Op) and e.op == "and":
        return conjuncts(e.args[0]) + conjuncts(e.args[1])
    return [] if e == TRUE else [e]


def free_symbols(e: ExprLike) -> frozenset[str]:
    e = as_expr(e)
    if isinstance(e, Sym):
        return frozenset([e.name])
    if isinstance(e, Op):
        return frozenset().union(*(free_symbols(a) for a in e.args))
    return frozenset()


def substitute(e: ExprLike, mapping: Mapping[str, ExprLike]) -> Expr:
    """Replace symbols by expressions (re-simplifying on the way up)."""
    e = as_expr(e)
    if isinstance(e, Sym):
        return as_expr(mapping[e.name]) if e.name in mapping else e
    if isinstance(e, Op):
        return op(e.op, *(substitute(a, mapping) for a in e.args))
    return e


def read(e: ExprLike, table: Mapping[str, Callable], leaf: Callable[[Expr], Any]) -> Any:
    """Interpret ``e`` in any reading: ``table`` gives operators, ``leaf`` symbols/constants."""
    e = as_expr(e)
    if isinstance(e, Op):
        return table[e.op](*(read(a, table, leaf) for a in e.args))
    return leaf(e)


def evaluate(e: ExprLike, env: Mapping[str, Any]) -> Any:
    """The NumPy reading: symbols bound to ints or integer arrays (coordinate grids)."""
    def leaf(x: Expr):
        if isinstance(x, Const):
            return x.value
        try:
            return env[x.name]
        except KeyError:
            raise IllFormedProgram(f"size symbol {x.name!r} has no value") from None
    return read(e, NUMPY, leaf)


def to_c(e: ExprLike, name: Callable[[str], str] = lambda s: s, *,
         python: bool = False) -> str:
    """The C reading: Cython expression text; ``name`` maps symbols to identifiers.
    ``python``: the same text as Python (constants without C suffixes)."""
    def leaf(x: Expr) -> str:
        if isinstance(x, Const):
            # Cython types an integer literal beyond 32 bits as a Python int (an object a
            # nogil loop cannot touch); the LL suffix keeps it a C long long
            wide = not python and abs(x.value) > 2**31 - 1
            return str(x.value) + ("LL" if wide else "")
        # Sym() itself does not check its name (a user operator's pieces may build one), and
        # this text is compiled: anything but an identifier could change the kernel's code.
        if not isinstance(x.name, str) or not _SYMBOL.match(x.name):
            raise IllFormedProgram(f"size symbol names must be identifiers, found {x.name!r}")
        return name(x.name)
    return read(e, C, leaf)


# ---------------------------------------------------------------------------------------------
# Deciding equality of sizes: a polynomial normal form over +, -, * (other operators are atoms).

def _poly(e: Expr) -> dict[tuple, int]:
    if isinstance(e, Const):
        return {(): e.value} if e.value else {}
    if isinstance(e, Op) and e.op in ("add", "sub", "mul"):
        a, b = _poly(e.args[0]), _poly(e.args[1])
        if e.op == "mul":
            out: dict[tuple, int] = {}
            for ma, ca in a.items():
                for mb, cb in b.items():
                    m = tuple(sorted(ma + mb, key=repr))
                    out[m] = out.get(m, 0) + ca * cb
        else:
            sign = 1 if e.op == "add" else -1
            out = dict(a)
            for m, c in b.items():
                out[m] = out.get(m, 0) + sign * c
        return {m: c for m, c in out.items() if c}
    return {(e,): 1}


def _nonneg_poly(p: dict[tuple, int]) -> bool:
    """A polynomial with non-negative coefficients over non-negative atoms is ≥ 0."""
    return all(c > 0 and all(_nonneg_atom(a) for a in m) for m, c in p.items())


def _nonneg_atom(e: Expr) -> bool:
    if isinstance(e, Sym):
        return True
    if isinstance(e, Op) and e.op in ("floordiv", "mod", "min", "max"):
        return all(_nonneg_poly(_poly(a)) for a in e.args)
    return False


_ASSUMED: contextvars.ContextVar[list | None] = contextvars.ContextVar(
    "sparsefold_size_assumptions", default=None)


@contextmanager
def assuming(known: tuple[Expr, ...] | None = None):
    """Within the block, two sizes that must be equal but cannot be proved equal (``n1``
    and ``((n0 + 1) // 2 + 1) // 2``) are *assumed* equal, and the assumption ``n1 == ...``
    is recorded in the list this yields. The tracer of ``sf.jit`` turns the list into
    run-time preconditions, so one kernel serves every shape where they hold.

    With ``known`` (the preconditions of a traced program), only those equalities are
    assumed — the compiler rebuilds nodes of the program under them — and no new one."""
    token = _ASSUMED.set((list(known), True) if known is not None else ([], False))
    try:
        yield _ASSUMED.get()[0]
    finally:
        _ASSUMED.reset(token)


def assume_equal(a: ExprLike, b: ExprLike) -> bool:
    """Inside :func:`assuming`: True when ``a == b`` is (or, while tracing, becomes) an
    assumption — never for two different constants; outside: False."""
    state = _ASSUMED.get()
    if state is None:
        return False
    assumed, fixed = state
    a, b = as_expr(a), as_expr(b)
    if is_const(a) and is_const(b):
        return False
    if eq(a, b) in assumed or eq(b, a) in assumed:
        return True
    if fixed:
        return False
    assumed.append(eq(a, b))
    return True


def assumed_equal(a: ExprLike, b: ExprLike) -> bool:
    """Inside :func:`assuming`: is ``a == b`` one of the assumptions already made? (A query:
    unlike :func:`assume_equal`, it never makes one.)"""
    state = _ASSUMED.get()
    if state is None:
        return False
    a, b = as_expr(a), as_expr(b)
    return eq(a, b) in state[0] or eq(b, a) in state[0]


def definitely_equal(a: ExprLike, b: ExprLike) -> bool:
    """True when ``a == b`` for every value of the symbols (decided on polynomial forms)."""
    a, b = as_expr(a), as_expr(b)
    return a == b or _poly(a) == _poly(b)


# ---------------------------------------------------------------------------------------------
# Printing

_PREC = {"or": 1, "and": 2, "lt": 3, "le": 3, "eq": 3, "ne": 3, "gt": 3, "ge": 3,
         "add": 4, "sub": 4, "mul": 5, "floordiv": 5, "mod": 5}


def _show(e: Expr, parent: int = 0) -> str:
    if not isinstance(e, Op):
        return repr(e)
    info = OPS[e.op]
    if info.infix is None:
        return f"{e.op}({', '.join(_show(a) for a in e.args)})"
    p = _PREC[e.op]
    if e.op == "add" and isinstance(e.args[1], Const) and e.args[1].value < 0:
        text = f"{_show(e.args[0], p)} - {-e.args[1].value}"
        return f"({text})" if p < parent else text
    text = f"{_show(e.args[0], p)} {info.infix} {_show(e.args[1], p + 1)}"
    return f"({text})" if p < parent else text


def ceil_div(a: ExprLike, b: int) -> Expr:
    """``ceil(a / b)`` for ``a ≥ 0`` and a positive integer ``b``."""
    if b <= 0:
        raise IllFormedProgram(f"ceil_div needs a positive divisor, found {b}")
    return floordiv(add(a, b - 1), b)



_COMPILED: dict[tuple, Callable] = {}


def python_function(exprs: tuple[Expr, ...]) -> Callable[[Mapping[str, int]], tuple]:
    """A fast Python function ``env -> tuple of values`` of ``exprs`` (Python ints, exact).

    Built from the C reading's text, which is also valid Python; floor division and modulo
    then take Python's meaning, which the language's own meaning is (see the module doc)."""
    key = tuple(exprs)
    fn = _COMPILED.get(key)
    if fn is None:
        names: dict[str, str] = {}

        def name(s: str) -> str:
            return names.setdefault(s, f"v{len(names)}")
        body = ", ".join(to_c(e, name, python=True) for e in exprs)
        text = "def _f(env):\n" + "".join(f"    {v} = env[{s!r}]\n" for s, v in names.items())
        text += f"    return ({body}{',' if len(exprs) == 1 else ''})\n"
        scope: dict = {}
        exec(compile(text, "<sizes>", "exec"), scope)  # text built from validated identifiers
        fn = _COMPILED[key] = scope["_f"]
    return fn


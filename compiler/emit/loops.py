"""The loop IR: what a kernel does, between planning and Cython text (DESIGN §3.3).

Lowerings (``lower_*.py``) build it; one printer (``emit.py``) turns it into Cython. It is
deliberately C-shaped, as TACO's IR is: the sparse-compiler concepts — cursors over levels,
co-iteration driven by a merge lattice, guards, appends and counters, bulk copies,
accumulators, workspaces — are *lowering objects* (``cursors.py``, ``lattice.py``,
``assembly.py``, ``workspace.py``) that each produce statements of this IR, tagged with a
:class:`Block` note saying which construct they are. The printer therefore knows nothing of
formats or strategies; it knows statements, expressions and C types.

Expressions are trees of :class:`Var`, :class:`Lit`, :class:`Load`, :class:`Bin`,
:class:`Not`, :class:`Cast`, :class:`Cond` and :class:`Template` (a spec function's C
reading with its arguments), and — in a fast entry (:class:`Entry`, ``fastcall.py``) —
:class:`Field` (a member of a struct the shared runtime fills), :class:`Apply` (a call of a
runtime function, ``runtime.pxd``), :class:`Ref` (a variable's address) and :class:`Tuple`
(a Python tuple of objects); ``is`` compares objects. Index arithmetic arrives as text
rendered from the size language (``sizes.to_c``) and is wrapped as :class:`Lit` with its C
type: the size language has its own C reading and is not restated here.

Variables carry their C type; the printer declares exactly the variables a function uses,
so no dead declarations reach the generated code.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from sparsefold.spec.errors import InternalError

__all__ = [
    "Expr", "Var", "Lit", "Load", "Bin", "Not", "Cast", "Cond", "Template", "Field", "Apply",
    "Tuple", "Ref", "Array", "Stmt", "Assign", "Store", "For", "While", "If", "Break", "Continue",
    "Block", "Comment", "Memcpy", "Call", "Raise", "Return", "Nogil", "Param", "Function",
    "Entry", "Builder", "lit", "as_expr", "INT", "BOOL", "OBJECT", "walk_exprs", "walk_stmts",
    "variables", "argument", "THREADS", "NONE",
]

INT = "int64_t"     # every coordinate, position and counter is computed in int64
BOOL = "bint"
OBJECT = "object"   # a Python object (a fast entry's arguments, arrays and result)


# --- expressions ------------------------------------------------------------------------------

class Expr:
    """Base of IR expressions; each has a ``ctype``: the C type of the value, or "" if not
    known (a field or a property of the subclass)."""

    __slots__ = ()

    # small conveniences so lowerings read like arithmetic
    def __add__(self, o): return Bin("+", self, as_expr(o))
    def __sub__(self, o): return Bin("-", self, as_expr(o))
    def __mul__(self, o): return Bin("*", self, as_expr(o))


@dataclass(frozen=True, slots=True)
class Var(Expr):
    """A local variable of type ``ctype``."""

    name: str
    ctype: str = INT

    def __post_init__(self):
        if not self.name.isidentifier():
            raise InternalError(f"variable name {self.name!r} is not an identifier")


@dataclass(frozen=True, slots=True)
class Lit(Expr):
    """C text that is already an expression: a literal, or index arithmetic rendered by the
    size language's C reading. ``ctype`` says what it computes, if known."""

    text: str
    ctype: str = ""
    uses: tuple[Var, ...] = ()   # the variables the text names (for declarations and DCE)


@dataclass(frozen=True, slots=True)
class Array:
    """A pointer to the first element of an array of ``ctype`` (a parameter of ``run``)."""

    name: str
    ctype: str


@dataclass(frozen=True, slots=True)
class Load(Expr):
    """``array[index]``."""

    array: Array
    index: Expr

    @property
    def ctype(self) -> str:  # type: ignore[override]
        return self.array.ctype


@dataclass(frozen=True, slots=True)
class Bin(Expr):
    """A binary C operator: arithmetic, comparison, ``and``/``or``, bitwise ``|``."""

    op: str
    a: Expr
    b: Expr

    @property
    def ctype(self) -> str:  # type: ignore[override]
        if self.op in _COMPARE or self.op in ("and", "or"):
            return BOOL
        return self.a.ctype if self.a.ctype == self.b.ctype else ""


@dataclass(frozen=True, slots=True)
class Not(Expr):
    a: Expr
    ctype: str = BOOL


@dataclass(frozen=True, slots=True)
class Cast(Expr):
    """``<ctype>a``. Build with :func:`cast`, which drops casts that change nothing."""

    ctype: str
    a: Expr


@dataclass(frozen=True, slots=True)
class Cond(Expr):
    """``a if c else b``."""

    c: Expr
    a: Expr
    b: Expr

    @property
    def ctype(self) -> str:  # type: ignore[override]
        return self.a.ctype if self.a.ctype == self.b.ctype else ""


@dataclass(frozen=True, slots=True)
class Template(Expr):
    """A spec C reading (``"({0} + {1})"``) applied to argument expressions."""

    text: str
    args: tuple[Expr, ...]
    ctype: str = ""


@dataclass(frozen=True, slots=True)
class Field(Expr):
    """``base.name``: a member of a struct variable (``name`` may index an array member:
    ``shape[0]``)."""

    base: Var
    name: str
    ctype: str = INT


@dataclass(frozen=True, slots=True)
class Apply(Expr):
    """``name(args)``: a call of a function of the shared runtime (``runtime.pxd``) that
    returns a value."""

    name: str
    args: tuple[Expr, ...]
    ctype: str = ""


@dataclass(frozen=True, slots=True)
class Tuple(Expr):
    """``(items, )``: a Python tuple (a fast entry's result coordinates, an axis order)."""

    items: tuple[Expr, ...]
    ctype: str = "tuple"


@dataclass(frozen=True, slots=True)
class Ref(Expr):
    """``&var``: the address of a local variable (a struct a runtime reader fills)."""

    var: Var

    @property
    def ctype(self) -> str:  # type: ignore[override]
        return f"{self.var.ctype}*"


_COMPARE = ("<", "<=", "==", "!=", ">", ">=", "is")


def as_expr(x) -> Expr:
    if isinstance(x, Expr):
        return x
    if isinstance(x, bool):
        return Lit("True" if x else "False", BOOL)  # (as cnames.c_literal: C-typed for `or`)
    if isinstance(x, int):
        return Lit(str(x), INT)
    if isinstance(x, str):
        return Lit(x)
    raise InternalError(f"not an IR expression: {x!r}")


def lit(text: str, ctype: str = "") -> Lit:
    return Lit(text, ctype)


def variables(e: Expr) -> tuple[Var, ...]:
    """The variables an expression reads, each once, in first-seen order."""
    return tuple(dict.fromkeys(x for x in _sub_exprs(e) if isinstance(x, Var)))


def cast(ctype: str, a) -> Expr:
    """``<ctype>a`` unless ``a`` already has that type (no stacked redundant casts)."""
    a = as_expr(a)
    if a.ctype == ctype:
        return a
    if isinstance(a, Cast):
        a = a.a if _widening(a.a.ctype, a.ctype) else a
        if a.ctype == ctype:
            return a
    return Cast(ctype, a)


_WIDTH = {"int8_t": 1, "int16_t": 2, "int32_t": 4, "int64_t": 8}


def _widening(inner: str, outer: str) -> bool:
    """A cast from ``inner`` to ``outer`` that loses nothing (signed integer widening), so a
    further cast can read the inner value directly."""
    return inner in _WIDTH and outer in _WIDTH and _WIDTH[inner] <= _WIDTH[outer]


__all__.append("cast")


# --- statements -------------------------------------------------------------------------------

class Stmt:
    __slots__ = ()


@dataclass(frozen=True, slots=True)
class Assign(Stmt):
    var: Var
    value: Expr


@dataclass(frozen=True, slots=True)
class Store(Stmt):
    """``array[index] = value``."""

    array: Array
    index: Expr
    value: Expr


@dataclass(frozen=True, slots=True)
class For(Stmt):
    """``for var in range(start, stop): body`` (a C loop; ``var`` is int64). ``parallel``:
    the iterations are independent — each writes output cells no other iteration touches,
    and every variable it assigns is assigned before it is read in that iteration — so they
    may run on several threads (printed as ``prange``; see ``emit.py`` and docs/threads.md).
    The lowering that sets it owns that proof; the printer re-checks the variables.
    ``team``: at most this many threads (the slices of a per-thread workspace); None: any."""

    var: Var
    start: Expr
    stop: Expr
    body: tuple[Stmt, ...]
    parallel: bool = False
    team: Expr | None = None

    def __post_init__(self):
        if self.team is not None and not self.parallel:
            raise InternalError("a serial loop has no thread team")


@dataclass(frozen=True, slots=True)
class While(Stmt):
    cond: Expr
    body: tuple[Stmt, ...]


@dataclass(frozen=True, slots=True)
class If(Stmt):
    """``if``/``elif``/``else``: ``cases`` are (condition, body) pairs in order."""

    cases: tuple[tuple[Expr, tuple[Stmt, ...]], ...]
    orelse: tuple[Stmt, ...] = ()


@dataclass(frozen=True, slots=True)
class Break(Stmt):
    pass


@dataclass(frozen=True, slots=True)
class Continue(Stmt):
    pass


@dataclass(frozen=True, slots=True)
class Comment(Stmt):
    text: str


@dataclass(frozen=True, slots=True)
class Block(Stmt):
    """A sequence of statements; ``note`` (printed as a comment above it) names the
    construct that produced it — "co-iteration (union) of a0, a1", "append to csr"."""

    body: tuple[Stmt, ...]
    note: str = ""


@dataclass(frozen=True, slots=True)
class Memcpy(Stmt):
    """``memcpy(&dst[dst_index], &src[src_index], count * sizeof(item))``."""

    dst: Array
    dst_index: Expr
    src: Array
    src_index: Expr
    count: Expr


@dataclass(frozen=True, slots=True)
class Call(Stmt):
    """A call of a module-level ``cdef ... nogil`` helper (``emit.render_module``'s
    ``helpers``), e.g. the workspace's sort."""

    name: str
    args: tuple[Expr, ...]


@dataclass(frozen=True, slots=True)
class Raise(Stmt):
    """Record a failed check (site, values) in the kernel's failure slots; ``run`` raises
    after the loops (``checks.py``). Hot loops never call into Python."""

    site: int
    values: tuple[Expr, ...]


@dataclass(frozen=True, slots=True)
class Return(Stmt):
    """Leave a fast entry with ``value`` (None: the checked path takes the call)."""

    value: Expr


@dataclass(frozen=True, slots=True)
class Nogil(Stmt):
    """``body`` run without the GIL (a fast entry's calls of its loops and O(entries)
    scans)."""

    body: tuple[Stmt, ...]


@dataclass(frozen=True, slots=True)
class Param:
    """A parameter of a kernel function: ``kind`` "array" (a contiguous NumPy array,
    received as an object and cast to a pointer), "address" (a strided array's element-0
    address as an integer) or "int" (an int64 value). ``source`` tells the runtime where to
    find it: ("input", name, part), ("size", symbol), ("stride", name, axis), ("dense", name),
    ("out", part)."""

    name: str
    kind: str
    source: tuple
    ctype: str = INT
    writable: bool = False

    def __post_init__(self):
        if self.kind not in ("array", "address", "int"):
            raise InternalError(f"unknown parameter kind {self.kind!r}")

    @property
    def array(self) -> Array:
        """The typed pointer the body uses for an array parameter."""
        return Array(self.name, self.ctype)


@dataclass(frozen=True, slots=True)
class Function:
    """A ``def`` of the kernel module: parameters, a body run without the GIL, and what it
    returns (an expression tuple)."""

    name: str
    params: tuple[Param, ...]
    body: tuple[Stmt, ...]
    returns: tuple[Expr, ...] = ()
    checks: bool = False  # the body records failed checks (``Raise``): declare the slots


@dataclass(frozen=True, slots=True)
class Entry:
    """A kernel module's fast entry (``fastcall.py``): Python-level code run with the GIL on
    the call's ``arity`` arguments (:func:`argument`) and jit's thread count
    (:data:`THREADS`); every path ends in a :class:`Return` of the result or of
    :data:`NONE`."""

    arity: int
    body: tuple[Stmt, ...]
    arrays: tuple[Var, ...] = ()  # local C arrays (``ctype`` "int64_t[6]"), read and stored


def argument(k: int) -> Lit:
    """A fast entry's ``k``-th argument."""
    return Lit(f"args[{k}]", OBJECT)


THREADS = Lit("threads", "int")  # a fast entry's jit threads=N (0: none)
NONE = Lit("None", OBJECT)       # a fast entry's "the checked path decides"


# --- traversal --------------------------------------------------------------------------------

def walk_stmts(stmts) -> Iterator[Stmt]:
    for s in stmts:
        yield s
        if isinstance(s, (For, While)):
            yield from walk_stmts(s.body)
        elif isinstance(s, (Block, Nogil)):
            yield from walk_stmts(s.body)
        elif isinstance(s, If):
            for _, body in s.cases:
                yield from walk_stmts(body)
            yield from walk_stmts(s.orelse)


def _sub_exprs(e: Expr) -> Iterator[Expr]:
    yield e
    if isinstance(e, Lit):
        yield from e.uses
    elif isinstance(e, Load):
        yield from _sub_exprs(e.index)
    elif isinstance(e, Bin):
        yield from _sub_exprs(e.a)
        yield from _sub_exprs(e.b)
    elif isinstance(e, (Not, Cast)):
        yield from _sub_exprs(e.a)
    elif isinstance(e, Cond):
        for x in (e.c, e.a, e.b):
            yield from _sub_exprs(x)
    elif isinstance(e, (Template, Apply)):
        for x in e.args:
            yield from _sub_exprs(x)
    elif isinstance(e, Tuple):
        for x in e.items:
            yield from _sub_exprs(x)
    elif isinstance(e, Field):
        yield e.base
    elif isinstance(e, Ref):
        yield e.var


def walk_exprs(stmts) -> Iterator[Expr]:
    """Every expression (and sub-expression) the statements contain, assigned variables
    included."""
    for s in walk_stmts(stmts):
        tops: tuple = ()
        if isinstance(s, Assign):
            tops = (s.var, s.value)
        elif isinstance(s, Store):
            tops = (s.index, s.value)
        elif isinstance(s, For):
            tops = (s.var, s.start, s.stop) + (() if s.team is None else (s.team,))
        elif isinstance(s, While):
            tops = (s.cond,)
        elif isinstance(s, If):
            tops = tuple(c for c, _ in s.cases)
        elif isinstance(s, Memcpy):
            tops = (s.dst_index, s.src_index, s.count)
        elif isinstance(s, Raise):
            tops = s.values
        elif isinstance(s, Call):
            tops = s.args
        elif isinstance(s, Return):
            tops = (s.value,)
        for t in tops:
            yield from _sub_exprs(t)


# --- building ---------------------------------------------------------------------------------

@dataclass
class Builder:
    """Builds statement lists with Python ``with`` blocks, and hands out fresh names::

        b = Builder()
        i = b.fresh("i")
        with b.loop(i, 0, n):
            b.assign(acc, acc + b.load(val, i))
    """

    _stack: list[list[Stmt]] = field(default_factory=lambda: [[]])
    _names: dict[str, int] = field(default_factory=dict)

    # names
    def fresh(self, prefix: str, ctype: str = INT) -> Var:
        """A new variable ``prefix``, ``prefix_2``, ... (readable, never reused)."""
        n = self._names.get(prefix, 0) + 1
        self._names[prefix] = n
        return Var(prefix if n == 1 else f"{prefix}_{n}", ctype)

    def reserve(self, name: str) -> None:
        """Keep ``name`` from being handed out (parameters, fixed output variables)."""
        self._names.setdefault(name, 1)

    # statements
    def emit(self, stmt: Stmt) -> None:
        self._stack[-1].append(stmt)

    def assign(self, var: Var, value) -> None:
        self.emit(Assign(var, as_expr(value)))

    def store(self, array: Array, index, value) -> None:
        self.emit(Store(array, as_expr(index), as_expr(value)))

    def comment(self, text: str) -> None:
        self.emit(Comment(text))

    def brk(self) -> None:
        self.emit(Break())

    def cont(self) -> None:
        self.emit(Continue())

    def _pop(self) -> tuple[Stmt, ...]:
        return tuple(self._stack.pop())

    @contextmanager
    def loop(self, var: Var, start, stop, *, parallel: bool = False, team=None):
        self._stack.append([])
        yield
        body = self._pop()
        self.emit(For(var, as_expr(start), as_expr(stop), body, parallel,
                      None if team is None else as_expr(team)))

    @contextmanager
    def collect(self):
        """Statements emitted within the block go to the yielded list, not to the output
        (the caller emits them where it decides)."""
        self._stack.append([])
        out: list[Stmt] = []
        yield out
        out.extend(self._pop())

    @contextmanager
    def while_(self, cond):
        self._stack.append([])
        yield
        self.emit(While(as_expr(cond), self._pop()))

    @contextmanager
    def if_(self, cond):
        """``if cond:``; a condition that is literally true adds its body unconditionally
        (no ``if True:`` in generated code)."""
        cond = as_expr(cond)
        self._stack.append([])
        yield
        body = self._pop()
        if isinstance(cond, Lit) and cond.text in ("True", "1"):
            self._stack[-1].extend(body)
        else:
            self.emit(If(((cond, body),)))

    @contextmanager
    def elif_(self, cond):
        """Adds a case to the ``If`` just emitted."""
        prev = self._last_if()
        self._stack.append([])
        yield
        body = self._pop()
        self._stack[-1][-1] = If(prev.cases + ((as_expr(cond), body),), prev.orelse)

    @contextmanager
    def else_(self):
        prev = self._last_if()
        self._stack.append([])
        yield
        self._stack[-1][-1] = If(prev.cases, self._pop())

    def _last_if(self) -> If:
        last = self._stack[-1][-1] if self._stack[-1] else None
        if not isinstance(last, If) or last.orelse:
            raise InternalError("elif/else without a preceding if")
        return last

    @contextmanager
    def block(self, note: str = ""):
        self._stack.append([])
        yield
        self.emit(Block(self._pop(), note))

    def finish(self) -> tuple[Stmt, ...]:
        if len(self._stack) != 1:
            raise InternalError("unclosed block in the loop IR builder")
        return tuple(self._stack[0])

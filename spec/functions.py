"""Elementwise functions and reduction monoids, with the algebraic facts the compiler needs.

An elementwise function's *meaning* is its NumPy implementation, applied with NumPy's type
promotion (NEP 50: Python scalars are "weak"). Its declared facts decide how a sparse
compiler may iterate it:

* ``annihilates`` — argument positions ``p`` with ``f(..., x_p = 0, ...) == 0`` for every
  value of the other arguments. Multiply annihilates at both positions: an *intersection*
  merge is exact. For floats the fact holds only when the other operands are finite
  (``0 * nan`` is ``nan``), so ``annihilation_needs_finite`` records that (STYLE 5: never
  rewrite ``0 * x`` to ``0`` for floats).
* ``identity`` — a value ``e`` with ``f(x, e) == f(e, x) == x`` (0 for add, 1 for multiply).
* ``value_at_zero(dtypes)`` — ``f(0, ..., 0)``: when it is 0 the output's fill value is 0
  and a *union* merge is exact; otherwise the result is dense (e.g. ``x + 1``, ``x == y``).
  :func:`zero_preserving` asks it of a call whose other arguments are known values.
* ``c_expr`` — the Cython reading, one text for every dtype or one per dtype kind (``"f"``
  floats, ``"biu"`` bool and integers, ...): ``maximum`` on floats must propagate NaN, which
  C's ``max`` does not. A kind without a text is not compiled yet.

Users add functions with :func:`register_function`; the facts they declare are checked
against the implementation on sample values (:func:`check_facts`).
"""

from __future__ import annotations

import ast
import re
import string
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from sparsefold.spec import promotion
from sparsefold.spec.c_library import C_LIBRARY
from sparsefold.spec.errors import IllFormedProgram
from sparsefold.spec.sizes import check_symbol_name

__all__ = [
    "ElementwiseFunction", "FUNCTIONS", "register_function", "get_function", "check_facts",
    "Monoid", "MONOIDS", "get_monoid", "result_dtype", "check_dtype", "check_c_expr",
    "zero_preserving", "cast_function", "cast_name",
]

_SUPPORTED_KINDS = "biufc"  # bool, signed, unsigned, float, complex


def check_dtype(dtype: Any, *, what: str = "dtype") -> np.dtype:
    """A NumPy numeric dtype, or :class:`IllFormedProgram` naming what was found."""
    try:
        dt = np.dtype(dtype)
    except TypeError:
        raise IllFormedProgram(f"{what}: expected a numeric dtype, found {dtype!r}") from None
    if dt.kind not in _SUPPORTED_KINDS or dt.byteorder not in "=|":
        raise IllFormedProgram(
            f"{what}: expected a native bool/int/uint/float/complex dtype, found {dt}")
    return dt


def _probe(arg: Any) -> Any:
    """A stand-in for an argument when working out result dtypes: an empty array of its
    dtype, or the Python scalar itself (so NumPy treats it as weak)."""
    return np.empty(0, arg) if isinstance(arg, np.dtype) else arg


@dataclass(frozen=True, slots=True)
class ElementwiseFunction:
    """A scalar function applied elementwise with NumPy broadcasting and promotion."""

    name: str
    arity: int
    impl: Callable[..., Any]                 # NumPy meaning: impl(*arrays) -> array
    c_expr: str | tuple[tuple[str, str], ...] | None = None
    #                                          Cython text with {0}, {1}, ... placeholders; or
    #                                          (dtype kinds, text) pairs, one per kind group
    annihilates: tuple[int, ...] = ()        # positions p: f(.., 0 at p, ..) == 0
    annihilation_needs_finite: bool = True   # floats: only when other operands are finite
    identity: Any = None                     # e with f(x, e) == x (binary functions)
    commutative: bool = False
    associative: bool = False
    doc: str = ""
    loop: str = "ufunc"                      # the dtypes arguments are computed in: "ufunc"
    #                                          (NumPy's loop for them), "own" (each its own:
    #                                          real, imag), "result" (the result's: astype)
    c_domain: tuple[tuple[str, str, str], ...] = ()
    #                                          (kinds, condition over {0}.., message): where
    #                                          the condition fails the data is invalid
    promotes: tuple[int, ...] | None = None  # the argument positions that promote together
    #                                          (spec.promotion); None: all (where: 1, 2)

    def __post_init__(self):
        # c_expr is pasted into generated Cython: it must be an expression and nothing else
        texts = self.c_expr if isinstance(self.c_expr, tuple) else ((None, self.c_expr),)
        for _, text in texts:
            check_c_expr(text, self.arity, what=f"c_expr of {self.name!r}")
        for _, text, _ in self.c_domain:
            check_c_expr(text, self.arity, what=f"c_domain of {self.name!r}")
        if self.loop not in ("ufunc", "own", "result"):
            raise IllFormedProgram(f"loop must be 'ufunc', 'own' or 'result', found "
                                   f"{self.loop!r}")

    def c_text(self, kind: str) -> str | None:
        """The Cython reading for arguments computed in dtype kind ``kind`` (``"f"``,
        ``"i"``, ...); None when there is none (not compiled yet)."""
        if not isinstance(self.c_expr, tuple):
            return self.c_expr
        return next((text for kinds, text in self.c_expr if kind in kinds), None)

    def c_checks(self, kind: str) -> list[tuple[str, str]]:
        """``(condition, message)`` the arguments must meet, computed in ``kind``."""
        return [(text, msg) for kinds, text, msg in self.c_domain if kind in kinds]

    def result_dtype(self, args: tuple[Any, ...]) -> np.dtype:
        """Result dtype; ``args`` are dtypes or weak Python scalars. The arguments that
        promote together are first promoted by the one table (``spec.promotion``); the
        function's own rule for that common dtype (a comparison gives bool, ``divide`` of
        integers float64, ``abs`` of complex a float) is its NumPy meaning's."""
        return result_dtype(self.impl, self.promoted(args), what=self.name)

    def promoted(self, args: tuple[Any, ...]) -> tuple[Any, ...]:
        """``args`` with the dtypes at the promoting positions replaced by the dtype they
        promote to (``spec.promotion.result_type``); weak scalars stay scalars."""
        if self.arity < 2 or self.loop == "own":
            return tuple(args)
        where = range(len(args)) if self.promotes is None else self.promotes
        group = [args[p] for p in where]
        if sum(isinstance(a, np.dtype) for a in group) < 1:
            return tuple(args)
        common = promotion.result_type(group)
        return tuple(common if p in where and isinstance(a, np.dtype) else a
                     for p, a in enumerate(args))

    def loop_dtypes(self, args: tuple[Any, ...], result: np.dtype) -> tuple[np.dtype, ...]:
        """The dtypes NumPy computes the arguments in (``args``: dtypes, or weak Python
        scalars): its ufunc loop for them, each argument's own dtype, or the result's."""
        if self.loop == "own":
            return tuple(a if isinstance(a, np.dtype) else np.asarray(a).dtype for a in args)
        if self.loop == "ufunc" and isinstance(self.impl, np.ufunc):
            try:
                types = self.impl.resolve_dtypes(
                    tuple(a if isinstance(a, np.dtype) else type(a) for a in args)
                    + (None,) * self.impl.nout)
                return tuple(np.dtype(t) for t in types[:self.arity])
            except (TypeError, ValueError):
                pass
        if self.name == "where":
            return (np.dtype(bool), result, result)
        return tuple(result for _ in args)

    def value_at_zero(self, dtypes: tuple[np.dtype, ...]) -> Any:
        """``f(0, ..., 0)`` for arguments of these dtypes (the output's fill value)."""
        zeros = [np.zeros((), dt) for dt in dtypes]
        with np.errstate(all="ignore"):
            return self.impl(*zeros)[()]


def zero_preserving(fn: ElementwiseFunction, args: list) -> bool:
    """``f(*args) == 0`` where each argument is a dtype (a 0 of that dtype) or a known value
    (a Python scalar stays weak, NEP 50): does the function keep the fill value 0 when the
    arguments given as dtypes are 0 and the others are these values?"""
    probe = [np.zeros((), a) if isinstance(a, np.dtype) else a for a in args]
    with np.errstate(all="ignore"):
        return bool(np.all(np.asarray(fn.impl(*probe)) == 0))


def result_dtype(impl: Callable, args: tuple[Any, ...], *, what: str) -> np.dtype:
    try:
        with np.errstate(all="ignore"):
            out = impl(*(_probe(a) for a in args))
    except (TypeError, OverflowError, ValueError) as exc:
        found = ", ".join(str(a) for a in args)
        raise IllFormedProgram(f"{what}: no NumPy loop for arguments ({found}): {exc}") from None
    return check_dtype(np.asarray(out).dtype, what=f"result of {what}")


# What a declared C expression may contain besides its {0}, {1}, ... arguments: arithmetic,
# comparisons, and/or/not, ``a if c else b``, numbers, and the names every kernel module has
# in scope (Cython's C builtins and the libc.math cimports of compiler/source.py).
_C_NAMES = frozenset({"abs", "min", "max"} | {n for n, c in C_LIBRARY.items()
                                              if c.source != "type"})
_C_NODES = (ast.Expression, ast.BinOp, ast.UnaryOp, ast.BoolOp, ast.Compare, ast.IfExp,
            ast.Call, ast.Name, ast.Constant, ast.Load, ast.operator, ast.unaryop, ast.boolop,
            ast.cmpop)
_PLACEHOLDER = re.compile(r"[0-9]+\Z")


def check_c_expr(text: str | None, arity: int, *, what: str = "c_expr") -> str | None:
    """``text`` if it is a single-line expression template over ``{0}..{arity-1}`` built only
    from the pieces listed in ``_C_NODES``/``_C_NAMES``, else :class:`IllFormedProgram`.

    The text is pasted into generated source, so anything else — a newline, a comment, a
    string, an attribute, a subscript, a call of another name — could change the kernel
    beyond the expression (up to running arbitrary code when the kernel is called)."""
    if text is None:
        return None

    def bad(why: str):
        return IllFormedProgram(
            f"{what} must be a one-line expression over {{0}}..{{{arity - 1}}} using numbers, "
            f"arithmetic, comparisons, and/or/not, 'a if c else b', abs/min/max and the C "
            f"library names of sparsefold.spec.c_library; {why}, found {text!r}")
    if not isinstance(text, str):
        raise bad("not a str")
    if not text.isascii() or not text.isprintable() or "#" in text or "\\" in text:
        raise bad("only printable ASCII without '#' or backslashes is allowed")
    args = [f"_sf_arg{p}" for p in range(arity)]
    try:
        fields = list(string.Formatter().parse(text))
    except ValueError as exc:
        raise bad(f"its braces do not form placeholders ({exc})") from None
    for _literal, name, spec, conversion in fields:
        if name is not None and (not _PLACEHOLDER.match(name) or int(name) >= arity
                                 or spec or conversion):
            raise bad(f"{{{name}}} is not a placeholder {{0}}..{{{arity - 1}}}")
    try:
        tree = ast.parse(text.format(*args), mode="eval")
    except SyntaxError as exc:
        raise bad(f"it is not an expression ({exc.msg})") from None
    for node in ast.walk(tree):
        if not isinstance(node, _C_NODES):
            raise bad(f"{type(node).__name__} is not allowed")
        if isinstance(node, ast.Name) and node.id not in _C_NAMES and node.id not in args:
            raise bad(f"the name {node.id!r} is not allowed")
        if isinstance(node, ast.Constant) and type(node.value) not in (bool, int, float):
            raise bad(f"the constant {node.value!r} is not allowed")
        if isinstance(node, ast.Call) and (node.keywords or not isinstance(node.func, ast.Name)
                                           or node.func.id not in _C_NAMES):
            raise bad("only abs/min/max and C library names may be called, without "
                      "keywords")
    return text


FUNCTIONS: dict[str, ElementwiseFunction] = {}


def register_function(name: str, arity: int, impl: Callable, **facts) -> ElementwiseFunction:
    """Register an elementwise function (user-facing). ``facts`` as in
    :class:`ElementwiseFunction`; they are checked on sample values before registering."""
    check_symbol_name(name, what="function name")
    if name in FUNCTIONS:
        raise IllFormedProgram(f"an elementwise function named {name!r} already exists")
    if not isinstance(arity, int) or arity < 1:
        raise IllFormedProgram(f"arity must be a positive integer, found {arity!r}")
    fn = ElementwiseFunction(name, arity, impl, **facts)
    problems = check_facts(fn)
    if problems:
        raise IllFormedProgram(f"declared facts of {name!r} do not hold: {'; '.join(problems)}")
    FUNCTIONS[name] = fn
    return fn


def get_function(name: str) -> ElementwiseFunction:
    try:
        return FUNCTIONS[name]
    except KeyError:
        raise IllFormedProgram(
            f"unknown elementwise function {name!r}; known: {sorted(FUNCTIONS)}") from None


_SAMPLES = {
    "b": np.array([False, True]),
    "i": np.array([-3, -1, 0, 1, 2, 7], dtype=np.int64),
    "f": np.array([-2.5, -1.0, 0.0, 0.5, 1.0, 3.0]),
}


def check_facts(fn: ElementwiseFunction, kinds: str = "bif") -> list[str]:
    """Check declared facts against ``impl`` on sample values; return the violations."""
    problems: list[str] = []
    for kind in kinds:
        sample = _SAMPLES[kind]
        grids = np.meshgrid(*([sample] * fn.arity), indexing="ij")
        args = [g.ravel() for g in grids]
        try:
            with np.errstate(all="ignore"):
                base = fn.impl(*args)
        except (TypeError, ValueError):
            # no loop for this kind, or the samples are outside the domain (int ** -1)
            continue
        zero = np.zeros_like(sample[:1])
        for p in fn.annihilates:
            with np.errstate(all="ignore"):
                vals = fn.impl(*[np.broadcast_to(zero, a.shape) if q == p else a
                                 for q, a in enumerate(args)])
            if not np.all(vals == 0):
                problems.append(f"f(..., 0 at position {p}, ...) != 0 for {sample.dtype}")
        if fn.identity is not None and fn.arity == 2 and kind != "b":
            e = np.full_like(sample, fn.identity)
            with np.errstate(all="ignore"):
                left, right = fn.impl(sample, e), fn.impl(e, sample)
            if not (np.array_equal(left, sample) and np.array_equal(right, sample)):
                problems.append(f"{fn.identity!r} is not an identity for {sample.dtype}")
        if fn.commutative and fn.arity == 2:
            with np.errstate(all="ignore"):
                swapped = fn.impl(args[1], args[0])
            if not np.array_equal(base, swapped, equal_nan=base.dtype.kind in "fc"):
                problems.append(f"not commutative for {sample.dtype}")
    return problems


@dataclass(frozen=True, slots=True)
class Monoid:
    """A reduction: NumPy's reduction function, its binary operation and identity, and its
    Cython combiner. Printed by its name."""

    name: str
    impl: Callable[..., Any]             # np.sum etc., called with axis= and dtype= where valid
    combine: Callable[..., Any]          # the binary operation as a NumPy ufunc (np.add, ...)
    identity: Any                        # None: no identity (max/min of nothing is an error)
    c_combine: str | tuple[tuple[str, str], ...]
    #                                      Cython text combining accumulator {0} with {1}, or
    #                                      (dtype kinds, text) pairs as a function's c_expr
    takes_dtype: bool = True
    selects: str | None = None           # max/min: the C comparison by which {1} replaces
    #                                      {0} (kernels add the NaN test: NaN propagates)
    zero_is_identity: bool = field(init=False, default=False)

    def __post_init__(self):
        object.__setattr__(self, "zero_is_identity", self.identity in (0, False))

    def __str__(self) -> str:
        return self.name

    def c_text(self, kind: str) -> str | None:
        """The Cython combination for values of dtype kind ``kind``; None: not compiled."""
        if isinstance(self.c_combine, str):
            return self.c_combine
        return next((text for kinds, text in self.c_combine if kind in kinds), None)

    def start(self, dtype: np.dtype) -> Any:
        """Where a reduction over stored entries starts in ``dtype``: the identity, or for
        max/min (no identity) the lowest/highest value of the dtype, which every entry
        replaces."""
        if self.identity is not None:
            return self.identity
        dt = np.dtype(dtype)
        lowest = self.selects == ">"
        if dt.kind == "b":
            return not lowest
        if dt.kind == "f":
            return -np.inf if lowest else np.inf
        if dt.kind == "c":  # NumPy's complex order is lexicographic: (-inf, -inf) is lowest
            return dt.type(complex(-np.inf, -np.inf) if lowest else complex(np.inf, np.inf))
        info = np.iinfo(dt)
        return info.min if lowest else info.max

    def result_dtype(self, dtype: np.dtype, requested: np.dtype | None = None) -> np.dtype:
        kwargs = {"dtype": requested} if requested is not None else {}
        if requested is not None and not self.takes_dtype:
            raise IllFormedProgram(f"{self.name} does not take a dtype argument")
        out = self.impl(np.zeros((1,), dtype), axis=0, **kwargs)
        return check_dtype(np.asarray(out).dtype, what=f"result of {self.name}")


MONOIDS: dict[str, Monoid] = {
    m.name: m for m in [
        Monoid("sum", np.sum, np.add, 0, "{0} + {1}"),
        Monoid("prod", np.prod, np.multiply, 1, (("biuf", "{0} * {1}"),
                                                  ("c", "sf_cmul({0}, {1})"))),
        Monoid("max", np.max, np.maximum, None, "max({0}, {1})", takes_dtype=False,
               selects=">"),
        Monoid("min", np.min, np.minimum, None, "min({0}, {1})", takes_dtype=False,
               selects="<"),
        Monoid("any", np.any, np.logical_or, False, "{0} or {1}", takes_dtype=False),
        Monoid("all", np.all, np.logical_and, True, "{0} and {1}", takes_dtype=False),
    ]
}


def get_monoid(name: str | Monoid) -> Monoid:
    if isinstance(name, Monoid):
        return name
    try:
        return MONOIDS[name]
    except KeyError:
        raise IllFormedProgram(f"unknown reduction {name!r}; known: {sorted(MONOIDS)}") from None


# --- casts ------------------------------------------------------------------------------------

_CASTS: dict[np.dtype, ElementwiseFunction] = {}


def cast_name(dtype: np.dtype) -> str:
    return f"astype_{np.dtype(dtype).name}"


def _cast(x: Any, dt: np.dtype) -> np.ndarray:
    """NumPy's unsafe cast, complex to real by its real part (what NumPy does, without its
    ComplexWarning: dropping the imaginary part is this function's meaning)."""
    x = np.asarray(x)
    if x.dtype.kind == "c" and dt.kind not in "cb":
        x = x.real
    return x.astype(dt)


def cast_function(dtype: Any) -> ElementwiseFunction:
    """``astype(x, dtype)`` as an elementwise function: NumPy's unsafe cast (floats to
    integers truncate toward 0, nonzero is True, complex to real drops the imaginary part).
    One function per target dtype, made on first use."""
    dt = check_dtype(dtype, what="astype dtype")
    hit = _CASTS.get(dt)
    if hit is None:
        if dt.kind == "b":
            c = "({0} != 0)"
            texts = (("biufc", c),)
        elif dt.kind == "c":
            texts = (("biufc", "{0}"),)
        else:
            texts = (("biuf", "{0}"), ("c", "creal({0})"))
        hit = ElementwiseFunction(
            cast_name(dt), 1, lambda x, dt=dt: _cast(x, dt), texts,
            annihilates=(0,), annihilation_needs_finite=False, loop="own",
            doc=f"x as {dt} (NumPy's unsafe cast)")
        _CASTS[dt] = hit
    return hit

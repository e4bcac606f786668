"""The zero algebra the compiler's merge lattices rely on, proved by Z3 on each function's C
reading (issue 11, part 3; ``compiler/plan/lattice.py``, ``compiler/plan/streams.py``).

A lattice intersects where a function *annihilates* (``f(.., 0 at p, ..) == 0`` whatever the
other arguments are) and takes a union where ``f(0, .., 0) == 0``; elsewhere it iterates
every coordinate. Those facts are declared in ``spec.functions`` (``annihilates``,
``annihilation_needs_finite``) and evaluated with NumPy (``zero_preserving``); the kernels
compute with the function's *C text* (``ElementwiseFunction.c_text``). Here the C text itself
is read into Z3 — IEEE-754 double (``FPSort(11, 53)``, round to nearest even) for kind
``f``, 64-bit two's complement bit-vectors for ``i``, booleans for ``b`` — and, for every
kind it is read in:

* ``annihilates[p]``: ``f(.., 0 at p, ..)`` is zero (``-0.0`` counts) for *every* value of
  the other arguments — NaN and infinities included, unless the function declares
  ``annihilation_needs_finite``, in which case they range over finite values (the lattice
  then records the inputs whose finiteness it relies on, and checks them at run time);
* ``at_zero``: ``f(0, .., 0)`` is zero exactly when NumPy says so (``zero_preserving``,
  what the lattice evaluates): the C reading and the NumPy meaning agree at zero.

A kind is *read* when the function has a C text for it and NumPy computes it in that kind
(or returns bool); other kinds (``divide`` on integers computes in float: its ``f`` reading
covers it) are listed as not read, never as proved. The reading covers arithmetic, bitwise
operators and shifts (C on signed 64-bit values, ``cdivision``), C's conversions between
bool, integer and double, IEEE rounding (``floor``/``ceil``/``trunc``/``rint`` as Z3's
rounding modes), ``sqrt``, ``fmod``, ``copysign``, the IEEE predicates, and the *helpers* of
``spec.c_library`` (``sf_floor_divide_i``, ``sf_clip_f``, ...): their Cython bodies are
executed symbolically (assignments, ``if``/``else``, ``return``, 64-bit casts). What it does
not model makes the kind not read, with the reason: transcendental libm calls (their results
are not specified exactly), ``hypot`` and ``pow``, ``nextafter``, a loop in a helper.

Every kind Z3 does not read — and the kinds it has no sort for here, unsigned and complex —
is *probed* instead (``verify.zero_probe``): the facts checked numerically against NumPy at
zero, ``-0.0`` and extreme values. A function whose facts are all proved is ``proved``; one
with a probed kind is ``probed``, never ``proved``.
"""

from __future__ import annotations

import ast
import re
import textwrap
import time
from dataclasses import dataclass

import numpy as np
import z3

from sparsefold.spec.c_library import C_LIBRARY
from sparsefold.spec.functions import FUNCTIONS, ElementwiseFunction, zero_preserving
from sparsefold.spec.sizes_z3 import new_context, serialized
from sparsefold.verify.zero_probe import probe_kind

__all__ = ["Fact", "FunctionReport", "prove_function", "prove_functions", "KINDS", "PROBED"]

PROBED = "probed"  # held on every sample (verify.zero_probe), not proved

KINDS = {"f": np.dtype("float64"), "i": np.dtype("int64"), "b": np.dtype("bool")}
RLIMIT = 20_000_000


class _Unread(Exception):
    """The C text uses something this reading does not model."""


@dataclass
class Fact:
    """One fact of one function in one kind."""

    fact: str          # "annihilates[p]" or "at_zero"
    kind: str
    status: str        # "proved" | "probed" (numerically, verify.zero_probe) | "refuted"
    #                    | "unknown"
    seconds: float
    detail: str = ""   # the counterexample, or what was proved


@dataclass
class FunctionReport:
    name: str
    facts: list[Fact]
    unread: dict[str, str]   # kind -> why it is not read

    @property
    def status(self) -> str:
        """``proved`` when every fact is proved by Z3; ``probed`` when some kind was only
        probed numerically; ``not read`` when nothing could be said."""
        statuses = {f.status for f in self.facts}
        for s in ("refuted", "unknown", "probed"):
            if s in statuses:
                return s
        return "proved" if self.facts else "not read"

    def status_in(self, kind: str) -> str:
        """The status of the facts in one dtype kind (``"f"``, ``"i"``, ...)."""
        return FunctionReport(self.name, [f for f in self.facts if f.kind == kind],
                              {}).status

    def summary(self) -> str:
        kinds = sorted({f.kind for f in self.facts if f.status != "probed"})
        probed = sorted({f.kind for f in self.facts if f.status == "probed"})
        ann = sorted({f.fact for f in self.facts if f.fact.startswith("annihilates")})
        parts = [f"read in {','.join(kinds) or 'no kind'}"]
        if probed:
            parts.append(f"probed in {','.join(probed)}")
        if ann:
            parts.append(", ".join(ann))
        parts += [f"{f.kind}: {f.fact} {f.status}: {f.detail}" for f in self.facts
                  if f.status not in ("proved", PROBED)]
        if self.unread:
            parts.append("not read: " + ", ".join(f"{k} ({w})" for k, w in self.unread.items()))
        return "; ".join(parts)


class _Reader:
    """Z3 terms for a C text over arguments of one kind, in one context."""

    def __init__(self, ctx: z3.Context, kind: str):
        self.ctx, self.kind = ctx, kind
        self.fp = z3.FPSort(11, 53, ctx)
        self.rm = z3.RNE(ctx)

    def var(self, name: str):
        if self.kind == "f":
            return z3.FP(name, self.fp)
        if self.kind == "i":
            return z3.BitVec(name, 64, self.ctx)
        return z3.Bool(name, self.ctx)

    def zero(self):
        return self.const(0)

    def const(self, value, like=None):
        sort = like.sort() if like is not None else None
        if sort is None:
            sort = {"f": self.fp, "i": z3.BitVecSort(64, self.ctx),
                    "b": z3.BoolSort(self.ctx)}[self.kind]
        if isinstance(sort, z3.FPSortRef):
            return z3.FPVal(float(value), None, sort, self.ctx)
        if isinstance(sort, z3.BitVecSortRef):
            if isinstance(value, float) or float(value) != int(value):
                # C computes in double, then converts to the integer result: not modelled
                raise _Unread(f"the double constant {value!r} with an integer operand")
            return z3.BitVecVal(int(value), 64, self.ctx)
        return z3.BoolVal(bool(value), self.ctx)

    def is_zero(self, t):
        if not isinstance(t, z3.ExprRef):  # a reading that is a constant (no argument used)
            t = self.const(t)
        if isinstance(t, z3.FPRef):
            return z3.fpIsZero(t, self.ctx)
        if isinstance(t, z3.BitVecRef):
            return t == z3.BitVecVal(0, 64, self.ctx)
        return z3.Not(t)

    def truthy(self, t):
        return t if isinstance(t, z3.BoolRef) else z3.Not(self.is_zero(t))

    def read(self, text: str, args: list):
        names = {f"_sf_arg{p}": a for p, a in enumerate(args)}
        tree = ast.parse(text.format(*names), mode="eval").body
        return self._term(tree, names)

    def _pair(self, a, b):
        """Python numbers take the sort of the term they meet; mixed sorts meet as C's usual
        conversions do (a comparison's 0/1 to an integer or a double, an integer to a
        double)."""
        if not isinstance(a, z3.ExprRef):
            a = self.const(a, b if isinstance(b, z3.ExprRef) else None)
        if not isinstance(b, z3.ExprRef):
            b = self.const(b, a)
        if a.sort() != b.sort():
            a, b = self._widen(a, b.sort()), self._widen(b, a.sort())
        if a.sort() != b.sort():
            raise _Unread(f"operands of sorts {a.sort()} and {b.sort()}")
        return a, b

    def _widen(self, t, other):
        """``t`` converted to ``other``'s sort where C would (bool to int or double, int to
        double); unchanged otherwise."""
        if isinstance(t, z3.BoolRef) and isinstance(other, z3.BitVecSortRef):
            return z3.If(t, z3.BitVecVal(1, 64, self.ctx), z3.BitVecVal(0, 64, self.ctx))
        if isinstance(t, z3.BoolRef) and isinstance(other, z3.FPSortRef):
            return z3.If(t, z3.FPVal(1.0, None, other, self.ctx),
                         z3.FPVal(0.0, None, other, self.ctx))
        if isinstance(t, z3.BitVecRef) and isinstance(other, z3.FPSortRef):
            return z3.fpSignedToFP(self.rm, t, other, self.ctx)
        return t

    def _binop(self, op, a, b):
        a, b = self._pair(a, b)
        if isinstance(a, z3.BoolRef):
            fns = {ast.BitAnd: z3.And, ast.BitOr: z3.Or, ast.BitXor: z3.Xor}
            if op in fns:  # C's & | ^ of 0/1 values
                return fns[op](a, b)
            a, b = self._widen(a, z3.BitVecSort(64, self.ctx)), \
                self._widen(b, z3.BitVecSort(64, self.ctx))  # C promotes bools to int
        if isinstance(a, z3.FPRef):
            fns = {ast.Add: z3.fpAdd, ast.Sub: z3.fpSub, ast.Mult: z3.fpMul,
                   ast.Div: z3.fpDiv}
            if op in fns:
                return fns[op](self.rm, a, b, self.ctx)
        elif isinstance(a, z3.BitVecRef):
            # C on signed 64-bit values (cdivision: // truncates, % has the dividend's sign);
            # a shift's count is in range wherever a text shifts (the helpers guard it)
            fns = {ast.Add: lambda x, y: x + y, ast.Sub: lambda x, y: x - y,
                   ast.Mult: lambda x, y: x * y, ast.FloorDiv: lambda x, y: x / y,
                   ast.Mod: z3.SRem, ast.BitAnd: lambda x, y: x & y,
                   ast.BitOr: lambda x, y: x | y, ast.BitXor: lambda x, y: x ^ y,
                   ast.LShift: lambda x, y: x << y, ast.RShift: lambda x, y: x >> y}
            if op in fns:
                return fns[op](a, b)
        raise _Unread(f"the operator {op.__name__} on {a.sort()}")

    def _term(self, node, names):  # noqa: C901 - one case per construct of the C subset
        if isinstance(node, ast.Name):
            if node.id in names:
                return names[node.id]
            if node.id == "NAN":
                return z3.fpNaN(self.fp)
            if node.id == "INFINITY":
                return z3.fpPlusInfinity(self.fp)
            raise _Unread(f"the name {node.id}")
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.UnaryOp):
            x = self._term(node.operand, names)
            if isinstance(node.op, ast.Not):
                return z3.Not(self.truthy(x))
            if isinstance(node.op, ast.USub):
                if not isinstance(x, z3.ExprRef):
                    return -x
                if isinstance(x, z3.FPRef):
                    return z3.fpNeg(x, self.ctx)
                if isinstance(x, z3.BitVecRef):
                    return -x
            if isinstance(node.op, ast.UAdd):
                return x
            if isinstance(node.op, ast.Invert) and isinstance(x, z3.BitVecRef):
                return ~x
            raise _Unread(f"the unary operator {type(node.op).__name__}")
        if isinstance(node, ast.BinOp):
            return self._binop(type(node.op), self._term(node.left, names),
                               self._term(node.right, names))
        if isinstance(node, ast.Compare) and isinstance(node.ops[0], ast.Is):
            if isinstance(node.left, ast.Name) and node.left.id.startswith("sf_"):
                return z3.BoolVal(False, self.ctx)  # "sf_float is float": the double reading
            raise _Unread("an 'is' test")
        if isinstance(node, ast.Compare):
            parts, left = [], self._term(node.left, names)
            for op, right_node in zip(node.ops, node.comparators):
                right = self._term(right_node, names)
                parts.append(self._compare(op, *self._pair(left, right)))
                left = right
            return z3.And(*parts) if len(parts) > 1 else parts[0]
        if isinstance(node, ast.BoolOp):
            values = [self._term(v, names) for v in node.values]
            if all(isinstance(v, z3.BoolRef) for v in values):
                return (z3.And if isinstance(node.op, ast.And) else z3.Or)(*values)
            out = values[-1]  # Python's value semantics: a and b == (b if a else a)
            for v in reversed(values[:-1]):
                v, out = self._pair(v, out)
                out = z3.If(self.truthy(v), out, v) if isinstance(node.op, ast.And) \
                    else z3.If(self.truthy(v), v, out)
            return out
        if isinstance(node, ast.IfExp):
            cond = self.truthy(self._term(node.test, names))
            a, b = self._pair(self._term(node.body, names), self._term(node.orelse, names))
            return z3.If(cond, a, b)
        if isinstance(node, ast.Call):
            fn = node.func.id
            if fn == "sizeof":  # the integer reading is 64 bits wide
                return z3.BitVecVal(8, 64, self.ctx)
            args = [self._term(a, names) for a in node.args]
            if fn.startswith(_CAST):
                return self._cast(fn[len(_CAST):], args[0])
            if fn in ("abs", "fabs") and len(args) == 1 and isinstance(args[0], z3.ExprRef):
                x = args[0]
                if isinstance(x, z3.FPRef):
                    return z3.fpAbs(x, self.ctx)
                if isinstance(x, z3.BitVecRef):
                    return z3.If(x < 0, -x, x)
                return x
            if fn in ("min", "max") and len(args) == 2:
                a, b = self._pair(*args)
                # Cython's min/max over C values: b replaces a when strictly smaller/larger
                return z3.If(self._compare(ast.Lt() if fn == "min" else ast.Gt(), b, a), b, a)
            if fn in C_LIBRARY and C_LIBRARY[fn].source == "helper":
                return self._helper(fn, args)
            if args and all(isinstance(a, z3.FPRef) or not isinstance(a, z3.ExprRef)
                            for a in args) and fn in _FP_CALLS:
                return _FP_CALLS[fn](self, *self._fp_args(args))
            raise _Unread(f"the call {fn}" + (f" ({_NOT_MODELLED[fn]})" if fn in _NOT_MODELLED
                                              else ""))
        raise _Unread(type(node).__name__)

    def _compare(self, op, a, b):
        if isinstance(a, z3.BoolRef):
            if isinstance(op, ast.Eq):
                return a == b
            if isinstance(op, ast.NotEq):
                return a != b
            # C compares bools as 0 and 1
            a, b = self._widen(a, z3.BitVecSort(64, self.ctx)), \
                self._widen(b, z3.BitVecSort(64, self.ctx))
        if isinstance(a, z3.FPRef):
            fns = {ast.Lt: z3.fpLT, ast.LtE: z3.fpLEQ, ast.Gt: z3.fpGT, ast.GtE: z3.fpGEQ,
                   ast.Eq: z3.fpEQ, ast.NotEq: z3.fpNEQ}
            return fns[type(op)](a, b, self.ctx)
        if _UNSIGNED in (getattr(a, "_sf_unsigned", None), getattr(b, "_sf_unsigned", None)):
            fns = {ast.Lt: z3.ULT, ast.LtE: z3.ULE, ast.Gt: z3.UGT, ast.GtE: z3.UGE}
            if type(op) in fns:
                return fns[type(op)](a, b)
        fns = {ast.Lt: lambda x, y: x < y, ast.LtE: lambda x, y: x <= y,
               ast.Gt: lambda x, y: x > y, ast.GtE: lambda x, y: x >= y,
               ast.Eq: lambda x, y: x == y, ast.NotEq: lambda x, y: x != y}
        return fns[type(op)](a, b)

    # --- casts, math calls and helpers ---------------------------------------------------------

    def _cast(self, ctype: str, x):
        """``<ctype>x`` in a helper: 64-bit integer casts keep the bits (an unsigned one
        makes the value's comparisons unsigned); others are not read."""
        if ctype in ("uint64_t", "int64_t", "sf_sint", "sf_int", "sf_uint", "sf_float"):
            x = self._pair(x, self.const(0))[0] if not isinstance(x, z3.ExprRef) else x
            if ctype == "sf_float":
                return x
            if not isinstance(x, z3.BitVecRef):
                raise _Unread(f"a cast to {ctype} of {x.sort()}")
            out = x + 0  # a new term: the mark below is the cast's, not x's
            if ctype == "uint64_t":
                out._sf_unsigned = _UNSIGNED
            return out
        raise _Unread(f"a cast to {ctype}")

    def _fp_args(self, args):
        like = next(a for a in args if isinstance(a, z3.ExprRef))
        return [a if isinstance(a, z3.ExprRef) else self.const(a, like) for a in args]

    def _helper(self, name: str, args: list):
        """A helper's value: its Cython body (``spec.c_library``) executed symbolically —
        assignments, ``if``/``else`` and ``return``; a loop is not read."""
        params, body = _helper_body(name)
        if len(params) != len(args):
            raise _Unread(f"the helper {name} called with {len(args)} arguments")
        return self._run(body, dict(zip(params, args)))

    def _run(self, stmts: list, env: dict):
        for i, st in enumerate(stmts):
            if isinstance(st, ast.Return):
                return self._term(st.value, env)
            if isinstance(st, ast.Assign) and len(st.targets) == 1 \
                    and isinstance(st.targets[0], ast.Name):
                env = {**env, st.targets[0].id: self._term(st.value, env)}
            elif isinstance(st, ast.AugAssign) and isinstance(st.target, ast.Name):
                env = {**env, st.target.id: self._binop(type(st.op), env[st.target.id],
                                                        self._term(st.value, env))}
            elif isinstance(st, ast.If):
                cond = z3.simplify(self.truthy(self._term(st.test, env)))
                rest = stmts[i + 1:]
                if z3.is_false(cond) or z3.is_true(cond):  # a fused-type test
                    return self._run((st.body if z3.is_true(cond) else st.orelse) + rest, env)
                return z3.If(cond, *self._pair(self._run(st.body + rest, env),
                                               self._run(st.orelse + rest, env)))
            else:
                raise _Unread(f"a {type(st).__name__.lower()} statement")
        raise _Unread("a path that returns nothing")


_CAST = "_sf_cast_"
_UNSIGNED = "unsigned"


def _fmod(rd, a, b):
    """C's fmod from IEEE remainder: the two differ by ``|b|`` (toward ``a``'s sign) when
    their signs differ; that sum is exact (the result is representable), and a zero result
    keeps ``a``'s sign in both."""
    c = rd.ctx
    r = z3.fpRem(a, b, c)
    differ = z3.And(z3.Not(z3.fpIsZero(r, c)), z3.fpIsNegative(r, c) != z3.fpIsNegative(a, c))
    step = z3.If(z3.fpIsNegative(a, c), z3.fpNeg(z3.fpAbs(b, c), c), z3.fpAbs(b, c))
    return z3.If(differ, z3.fpAdd(rd.rm, r, step, c), r)


def _round(mode):
    return lambda rd, x: z3.fpRoundToIntegral(mode(rd.ctx), x, rd.ctx)


# libm calls with an exact IEEE-754 meaning. The sign of a NaN is not modelled (SMT-LIB's
# NaN has none): copysign(x, nan) and signbit(nan) are read as if it were positive.
_FP_CALLS = {
    "floor": _round(z3.RTN), "ceil": _round(z3.RTP), "trunc": _round(z3.RTZ),
    "rint": _round(z3.RNE),
    "sqrt": lambda rd, x: z3.fpSqrt(rd.rm, x, rd.ctx),
    "copysign": lambda rd, x, y: z3.If(z3.fpIsNegative(y, rd.ctx),
                                       z3.fpNeg(z3.fpAbs(x, rd.ctx), rd.ctx),
                                       z3.fpAbs(x, rd.ctx)),
    "fmod": _fmod,
    "isnan": lambda rd, x: z3.fpIsNaN(x, rd.ctx),
    "isinf": lambda rd, x: z3.fpIsInf(x, rd.ctx),
    "isfinite": lambda rd, x: z3.Not(z3.Or(z3.fpIsNaN(x, rd.ctx), z3.fpIsInf(x, rd.ctx))),
    "signbit": lambda rd, x: z3.fpIsNegative(x, rd.ctx),
}
# why a call has no exact reading here (the function is then probed numerically instead)
_NOT_MODELLED = {
    **{n: "transcendental: libm's result is not specified exactly"
       for n in ("exp", "expm1", "log", "log1p", "log2", "log10", "sin", "cos", "tan", "asin",
                 "acos", "atan", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh", "atan2",
                 "exp2", "cbrt")},
    "hypot": "C's hypot is not sqrt(x*x + y*y): it avoids overflow and hypot(inf, nan) is inf",
    "pow": "libm's pow is not specified exactly",
    "nextafter": "the next representable float is not an SMT-LIB operation",
    "nextafterf": "the next representable float is not an SMT-LIB operation",
}
_HEADER = re.compile(r"cdef inline \w+ (\w+)\(([^)]*)\) noexcept nogil:")
_CAST_TEXT = re.compile(r"<(\w+)>(-?\w+|\([^()]*(?:\([^()]*\)[^()]*)*\))")


def _helper_body(name: str) -> tuple[list[str], list]:
    """A helper's parameter names and its body as Python statements: declarations become
    assignments (or vanish), ``<T>x`` becomes a call ``_sf_cast_T(x)``."""
    text = C_LIBRARY[name].text
    head, _, body = text.partition("\n")
    m = _HEADER.fullmatch(head)
    if m is None:
        raise _Unread(f"the helper {name}'s signature")
    params = [p.split()[-1] for p in m.group(2).split(",")]
    lines = []
    for line in textwrap.dedent(body).splitlines():
        if line.lstrip().startswith("cdef ") and "=" not in line:
            continue  # a declaration without a value
        decl = re.fullmatch(r"(\s*)cdef [\w ]+?(\w+) *(=.*)", line)
        if decl is not None:
            if "," in decl.group(3) and " = " in decl.group(3).split(",", 1)[1]:
                raise _Unread(f"the declarations of {name}")
            line = f"{decl.group(1)}{decl.group(2)} {decl.group(3)}"
        while True:
            cast = _CAST_TEXT.sub(lambda c: f"{_CAST}{c.group(1)}({c.group(2)})", line)
            if cast == line:
                break
            line = cast
        lines.append(line)
    try:
        return params, ast.parse("\n".join(lines)).body
    except SyntaxError as exc:
        raise _Unread(f"the helper {name} ({exc.msg})") from None


def _read_kind(fn: ElementwiseFunction, kind: str) -> str | None:
    """Why ``fn`` is not read in ``kind``, or None when it is."""
    text = fn.c_text(kind)
    if text is None:
        return "no C text"
    try:
        out = fn.result_dtype((KINDS[kind],) * fn.arity)
    except Exception:  # noqa: BLE001 - NumPy has no loop for this kind
        return "no NumPy loop"
    if out.kind not in (kind, "b"):
        return f"computed in {out}"
    return None


def _show(v) -> str:
    """A model value as Python would print it (floats, signed integers)."""
    if isinstance(v, z3.FPNumRef):
        if v.isNaN():
            return "nan"
        if v.isInf():
            return "-inf" if v.isNegative() else "inf"
        if v.isZero():
            return "-0.0" if v.isNegative() else "0.0"
        return repr(float(z3.simplify(z3.fpToReal(v, v.ctx)).as_fraction()))
    if isinstance(v, z3.BitVecNumRef):
        return str(v.as_signed_long())
    return str(v)


@serialized
def _decide(ctx, premise, goal) -> tuple[str, str]:
    s = z3.Solver(ctx=ctx)
    s.set("rlimit", RLIMIT)
    s.add(premise, z3.Not(goal))
    r = s.check()
    if r == z3.unsat:
        return "proved", ""
    if r == z3.sat:
        m = s.model()
        shown = ", ".join(f"{d.name()}={_show(m[d])}" for d in sorted(m.decls(), key=str))
        return "refuted", shown or "at every value"
    return "unknown", s.reason_unknown()


@serialized
def prove_function(fn: ElementwiseFunction) -> FunctionReport:
    """The zero-algebra facts of ``fn`` in every kind its C text is read in."""
    facts: list[Fact] = []
    unread: dict[str, str] = {}
    for kind in KINDS:
        why = _read_kind(fn, kind)
        if why is not None:
            unread[kind] = why
            continue
        ctx = new_context()  # one per kind: the answers depend on nothing else asked
        rd = _Reader(ctx, kind)
        xs = [rd.var(f"x{p}") for p in range(fn.arity)]
        text = fn.c_text(kind)
        try:
            at_zero = rd.read(text, [rd.zero() for _ in xs])
            shown = []
            for p in fn.annihilates:
                shown.append((p, rd.read(text, [rd.zero() if q == p else x
                                                for q, x in enumerate(xs)])))
        except _Unread as exc:
            unread[kind] = str(exc)
            continue
        t0 = time.perf_counter()
        numpy_zero = zero_preserving(fn, [KINDS[kind]] * fn.arity)
        goal = rd.is_zero(at_zero) if numpy_zero else z3.Not(rd.is_zero(at_zero))
        status, detail = _decide(ctx, z3.BoolVal(True, ctx), goal)
        facts.append(Fact("at_zero", kind, status, time.perf_counter() - t0,
                          detail or f"f(0, ..) {'==' if numpy_zero else '!='} 0, as NumPy"))
        for p, value in shown:
            t0 = time.perf_counter()
            others = [x for q, x in enumerate(xs) if q != p]
            finite = [z3.Not(z3.Or(z3.fpIsNaN(x, ctx), z3.fpIsInf(x, ctx)))
                      for x in others if isinstance(x, z3.FPRef)]
            premise = z3.And(*finite) if fn.annihilation_needs_finite and finite \
                else z3.BoolVal(True, ctx)
            status, detail = _decide(ctx, premise, rd.is_zero(value))
            facts.append(Fact(f"annihilates[{p}]", kind, status, time.perf_counter() - t0,
                              detail or ("others finite" if fn.annihilation_needs_finite
                                         and finite else "every value")))
    read = {f.kind for f in facts}
    for kind in "biufc":  # what Z3 does not read is probed numerically
        if kind not in read:
            facts += probe_kind(fn, kind, Fact)
    return FunctionReport(fn.name, facts, unread)


def prove_functions(names=None) -> list[FunctionReport]:
    """Every registered function's facts (``names``: a subset)."""
    return [prove_function(FUNCTIONS[n]) for n in (names or list(FUNCTIONS))]

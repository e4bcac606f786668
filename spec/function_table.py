"""The built-in elementwise functions: the array API standard's elementwise set, with NumPy's
meaning (DESIGN §1; issue #16).

One row per function: its name, arity, NumPy implementation, Cython reading per dtype kind
(``b`` bool, ``i`` signed, ``u`` unsigned, ``f`` float, ``c`` complex — the kind of the
arguments NumPy computes in; a kind without a text is not compiled), its documentation and
its zero algebra. ``f(0, ..., 0)`` is not written here: it is the implementation's own
value (``value_at_zero``), so it cannot be stated wrongly; ``annihilates`` is declared and
checked on sample values (``check_facts``; the test suite checks every built-in).

Names follow the array API (``asin``, ``bitwise_and``, ``pow`` is ``power``); the front end
also offers NumPy's spellings (``arcsin``, ``left_shift``, ``conjugate``).
"""

from __future__ import annotations

import numpy as np

from sparsefold.spec.functions import FUNCTIONS, ElementwiseFunction

__all__ = ["UNARY_MATH", "NUMPY_ALIASES"]


def _builtin(name, arity, impl, c_expr, doc, **facts):
    FUNCTIONS[name] = ElementwiseFunction(name, arity, impl, c_expr, doc=doc, **facts)


_EVERY = "biufc"

# --- arithmetic -------------------------------------------------------------------------------
_builtin("add", 2, np.add, "({0} + {1})", "x + y", identity=0, commutative=True,
         associative=True)
_builtin("subtract", 2, np.subtract, "({0} - {1})", "x - y")
_builtin("multiply", 2, np.multiply, (("biuf", "({0} * {1})"), ("c", "sf_cmul({0}, {1})")),
         "x * y", annihilates=(0, 1), identity=1, commutative=True, associative=True)
_builtin("divide", 2, np.true_divide, (("biuf", "({0} / {1})"), ("c", "sf_cdiv({0}, {1})")),
         "x / y (true division: integers give float; x/0 is ±inf, 0/0 nan)")
def _floor_divide(x1, x2):
    """NumPy's floor division (Python's rules), except where one operand is infinite and the
    divisor is not zero: there the standard's IEEE ``floor(x1 / x2)`` (``inf // 2`` is inf,
    not nan; ``-1 // inf`` is -0, not -1)."""
    out = np.floor_divide(x1, x2)
    if np.asarray(out).dtype.kind != "f":
        return out
    a, b = np.asarray(x1), np.asarray(x2)
    special = (np.isinf(a) | np.isinf(b)) & (b != 0)
    if not np.any(special):
        return out
    return np.where(special, np.floor(np.true_divide(a, b)), out).astype(
        np.asarray(out).dtype, copy=False)


def _expm1(x):
    """NumPy's ``expm1``; for complex arguments with an infinite or NaN part, ``exp(x) -
    1`` (C99's special values, which the standard's table lists), and ``expm1(±0 + 0j)`` is
    ``+0 + 0j``."""
    out = np.expm1(x)
    z = np.asarray(x)
    if z.dtype.kind != "c":
        return out
    out = np.array(out, copy=True)
    special = ~(np.isfinite(z.real) & np.isfinite(z.imag))
    if np.any(special):
        out = np.where(special, np.exp(z) - 1, out).astype(out.dtype, copy=False)
    zero = (z.real == 0) & (z.imag == 0)
    re = out.real
    re[zero] = 0.0
    return out


def _tanh(x):
    """NumPy's ``tanh``; for complex ``±inf + bj`` with a finite ``b``, ``±1 + 0j`` with
    the sign of ``b`` (the standard's table; C99 and NumPy give the sign of ``sin(2b)``)."""
    out = np.tanh(x)
    z = np.asarray(x)
    if z.dtype.kind != "c":
        return out
    out = np.array(out, copy=True)
    edge = np.isinf(z.real) & np.isfinite(z.imag)
    im = out.imag
    im[edge] = np.copysign(0.0, z.imag[edge] if z.ndim else z.imag)
    return out


_builtin("floor_divide", 2, _floor_divide,
         (("f", "sf_floor_divide_f({0}, {1})"), ("i", "sf_floor_divide_i({0}, {1})"),
          ("u", "sf_floor_divide_u({0}, {1})")),
         "x // y, rounded toward -inf (integers: x // 0 is 0; floats: IEEE, and floor(x / y) "
         "where one operand is infinite)")
_builtin("remainder", 2, np.remainder,
         (("f", "sf_remainder_f({0}, {1})"), ("i", "sf_remainder_i({0}, {1})"),
          ("u", "sf_remainder_u({0}, {1})")),
         "x % y with the sign of y (integers: x % 0 is 0; floats: x % 0 is nan)")
_builtin("power", 2, np.power,
         (("f", "pow({0}, {1})"), ("i", "sf_power_i({0}, {1})"), ("u", "sf_power_u({0}, {1})")),
         "x ** y (0 ** 0 == 1, so not zero-preserving; integers to a negative integer power "
         "are invalid data; integer powers wrap)",
         c_domain=(("i", "{1} >= 0", "power: integers to negative integer powers are not "
                                     "allowed"),))
_builtin("negative", 1, np.negative, "(-{0})", "-x", annihilates=(0,),
         annihilation_needs_finite=False)
_builtin("positive", 1, np.positive, "{0}", "+x (no loop for bool, as NumPy)",
         annihilates=(0,), annihilation_needs_finite=False)
_builtin("abs", 1, np.abs,
         (("f", "fabs({0})"), ("b", "{0}"), ("iu", "({0} if {0} >= 0 else -{0})"),
          ("c", "abs({0})")),
         "abs(x) (complex: the modulus, a float)", annihilates=(0,),
         annihilation_needs_finite=False)
_builtin("square", 1, np.square, (("biuf", "({0} * {0})"), ("c", "sf_cmul({0}, {0})")), "x * x",
         annihilates=(0,), annihilation_needs_finite=False)
_builtin("reciprocal", 1, np.reciprocal,
         (("f", "(1 / {0})"), ("iu", "(1.0 / {0})"), ("c", "sf_creciprocal({0})")),
         "1 / x (integers: NumPy's 1.0 / x converted to the integer type, so 1, -1 or 0; "
         "x == 0 gives C's conversion of inf, as NumPy's loop does: undefined in C, on x86-64 "
         "0 for 8/16-bit types and the smallest value for 32/64-bit ones)")
_builtin("sign", 1, np.sign,
         (("f", "((({0} > 0) - ({0} < 0)) if {0} == {0} else {0})"),
          ("i", "(({0} > 0) - ({0} < 0))"), ("u", "({0} > 0)"), ("c", "sf_csign({0})")),
         "-1, 0 or 1 (nan stays nan; complex: x / abs(x), NumPy 2's rules for nan and inf)",
         annihilates=(0,), annihilation_needs_finite=False)
_builtin("maximum", 2, np.maximum,
         (("f", "({0} if ({0} >= {1} or {0} != {0}) else {1})"), ("biu", "max({0}, {1})"),
          ("c", "sf_cselect({0}, {1}, 1)")),
         "max(x, y), nan propagates (complex: NumPy's lexicographic order)", commutative=True,
         associative=True)
_builtin("minimum", 2, np.minimum,
         (("f", "({0} if ({0} <= {1} or {0} != {0}) else {1})"), ("biu", "min({0}, {1})"),
          ("c", "sf_cselect({0}, {1}, 0)")),
         "min(x, y), nan propagates (complex: NumPy's lexicographic order)", commutative=True,
         associative=True)
_builtin("clip", 3, np.clip, (("f", "sf_clip_f({0}, {1}, {2})"),
                               ("biu", "min(max({0}, {1}), {2})")),
         "min(max(x, lo), hi) (NumPy's order: lo > hi gives hi; nan propagates)",
         loop="result")

# --- comparisons and logic --------------------------------------------------------------------
for _name, _np, _sym in [("less", np.less, "<"), ("less_equal", np.less_equal, "<="),
                         ("equal", np.equal, "=="), ("not_equal", np.not_equal, "!="),
                         ("greater", np.greater, ">"), ("greater_equal", np.greater_equal, ">=")]:
    # complex order: NumPy's lexicographic one (real part first), sf_cless
    _c = {"<": "sf_cless({0}, {1}, 0)", "<=": "sf_cless({0}, {1}, 1)",
          ">": "sf_cless({1}, {0}, 0)", ">=": "sf_cless({1}, {0}, 1)"}.get(_sym)
    _builtin(_name, 2, _np, ((_EVERY if _c is None else "biuf", f"({{0}} {_sym} {{1}})"),)
             + ((("c", _c),) if _c else ()), f"x {_sym} y (bool)",
             commutative=_name in ("equal", "not_equal"))
_builtin("logical_and", 2, np.logical_and, "(({0} != 0) and ({1} != 0))", "x and y (bool)",
         annihilates=(0, 1), annihilation_needs_finite=False, commutative=True,
         associative=True)
_builtin("logical_or", 2, np.logical_or, "(({0} != 0) or ({1} != 0))", "x or y (bool)",
         commutative=True, associative=True)
_builtin("logical_xor", 2, np.logical_xor, "(({0} != 0) != ({1} != 0))", "x xor y (bool)",
         commutative=True, associative=True)
_builtin("logical_not", 1, np.logical_not, "({0} == 0)", "not x (bool; f(0) is True)")
_builtin("where", 3, np.where, "({1} if {0} else {2})", "y where c else z", promotes=(1, 2))

# --- bitwise (bool and integers) --------------------------------------------------------------
_builtin("bitwise_and", 2, np.bitwise_and, (("biu", "({0} & {1})"),), "x & y",
         annihilates=(0, 1), annihilation_needs_finite=False, commutative=True,
         associative=True)
_builtin("bitwise_or", 2, np.bitwise_or, (("biu", "({0} | {1})"),), "x | y",
         identity=0, commutative=True, associative=True)
_builtin("bitwise_xor", 2, np.bitwise_xor, (("biu", "({0} ^ {1})"),), "x ^ y",
         identity=0, commutative=True, associative=True)
_builtin("bitwise_invert", 1, np.invert, (("b", "(not {0})"), ("iu", "(~{0})")),
         "~x (bool: not x; f(0) is -1 or True)")
_builtin("bitwise_left_shift", 2, np.left_shift, (("iu", "sf_left_shift({0}, {1})"),),
         "x << y (a shift by the width or more, or a negative one, gives 0)",
         annihilates=(0,), annihilation_needs_finite=False)
_builtin("bitwise_right_shift", 2, np.right_shift, (("iu", "sf_right_shift({0}, {1})"),),
         "x >> y, arithmetic (a shift by the width or more gives 0 or -1)", annihilates=(0,),
         annihilation_needs_finite=False)

# --- exponentials, logarithms, powers, trigonometry -------------------------------------------
# name, NumPy meaning, f(0) == 0 (declared; check_facts checks it), complex reading, doc
UNARY_MATH = [
    ("exp", np.exp, False, "cexp", "e ** x"),
    ("expm1", _expm1, True, "sf_cexpm1", "e ** x - 1, accurate near 0"),
    ("log", np.log, False, "clog", "natural logarithm (log 0 is -inf)"),
    ("log1p", np.log1p, True, "sf_clog1p", "log(1 + x), accurate near 0"),
    ("log2", np.log2, False, "sf_clogscaled", "base-2 logarithm"),
    ("log10", np.log10, False, "sf_clogscaled", "base-10 logarithm"),
    ("sqrt", np.sqrt, True, "csqrt", "square root (nan below 0)"),
    ("sin", np.sin, True, "csin", "sine"),
    ("cos", np.cos, False, "ccos", "cosine"),
    ("tan", np.tan, True, "ctan", "tangent"),
    ("asin", np.arcsin, True, "casin", "inverse sine"),
    ("acos", np.arccos, False, "cacos", "inverse cosine"),
    ("atan", np.arctan, True, "catan", "inverse tangent"),
    ("sinh", np.sinh, True, "csinh", "hyperbolic sine"),
    ("cosh", np.cosh, False, "ccosh", "hyperbolic cosine"),
    ("tanh", _tanh, True, "sf_ctanh", "hyperbolic tangent"),
    ("asinh", np.arcsinh, True, "casinh", "inverse hyperbolic sine"),
    ("acosh", np.arccosh, False, "cacosh", "inverse hyperbolic cosine"),
    ("atanh", np.arctanh, True, "catanh", "inverse hyperbolic tangent"),
]
for _name, _np, _zero, _complex, _doc in UNARY_MATH:
    _scale = {"log2": ", 1.4426950408889634", "log10": ", 0.4342944819032518"}.get(_name, "")
    _c = (("f", f"{_name}({{0}})"),) + ((("c", f"{_complex}({{0}}{_scale})"),) if _complex
                                        else ())
    _builtin(_name, 1, _np, _c, _doc, annihilates=(0,) if _zero else (),
             annihilation_needs_finite=False)

_builtin("atan2", 2, np.arctan2, (("f", "atan2({0}, {1})"),),
         "the angle of (x2, x1): atan2(x1, x2) (atan2(0, x) is pi for x < 0)")
_builtin("hypot", 2, np.hypot, (("f", "hypot({0}, {1})"),), "sqrt(x*x + y*y) without overflow",
         commutative=True)
_builtin("copysign", 2, np.copysign, (("f", "copysign({0}, {1})"),),
         "abs(x) with the sign of y", annihilates=(0,), annihilation_needs_finite=False)
_builtin("logaddexp", 2, np.logaddexp, (("f", "sf_logaddexp({0}, {1})"),),
         "log(exp(x) + exp(y)) (f(0, 0) is log 2)", commutative=True)
_builtin("nextafter", 2, np.nextafter, (("f", "sf_nextafter({0}, {1})"),),
         "the next float after x toward y")

# --- rounding ---------------------------------------------------------------------------------
for _name, _c in (("floor", "floor"), ("ceil", "ceil"), ("trunc", "trunc")):
    _builtin(_name, 1, getattr(np, _name), (("f", f"{_c}({{0}})"), ("biu", "{0}")),
             f"{_name} (integers: unchanged)", annihilates=(0,),
             annihilation_needs_finite=False)
_builtin("round", 1, np.round,
         (("f", "rint({0})"), ("biu", "{0}"), ("c", "CMPLX(rint(creal({0})), rint(cimag({0})))")),
         "round half to even (decimals=0; integers unchanged; bool gives float16)",
         annihilates=(0,), annihilation_needs_finite=False, loop="own")

# --- IEEE predicates --------------------------------------------------------------------------
_builtin("isnan", 1, np.isnan, (("fc", "({0} != {0})"), ("biu", "0")), "x is nan (bool)",
         annihilates=(0,), annihilation_needs_finite=False)
_builtin("isinf", 1, np.isinf,
         (("f", "(isinf({0}) != 0)"),
          ("c", "(isinf(creal({0})) != 0 or isinf(cimag({0})) != 0)"), ("biu", "0")),
         "x is ±inf (bool)", annihilates=(0,), annihilation_needs_finite=False)
_builtin("isfinite", 1, np.isfinite,
         (("f", "(isfinite({0}) != 0)"),
          ("c", "(isfinite(creal({0})) != 0 and isfinite(cimag({0})) != 0)"), ("biu", "1")),
         "x is neither nan nor ±inf (bool; f(0) is True)")
_builtin("signbit", 1, np.signbit, (("f", "(signbit({0}) != 0)"),),
         "the sign bit is set (bool; true for -0.0)", annihilates=(0,),
         annihilation_needs_finite=False)

# --- complex parts ----------------------------------------------------------------------------
_builtin("conj", 1, np.conjugate, (("biuf", "{0}"), ("c", "conj({0})")), "complex conjugate",
         annihilates=(0,), annihilation_needs_finite=False)
_builtin("real", 1, np.real, (("biuf", "{0}"), ("c", "creal({0})")),
         "real part (complex: a float)", annihilates=(0,), annihilation_needs_finite=False,
         loop="own")
_builtin("imag", 1, np.imag, (("biuf", "0"), ("c", "cimag({0})")),
         "imaginary part (0 for real dtypes)", annihilates=(0,),
         annihilation_needs_finite=False, loop="own")

# NumPy spellings the front end offers for array-API names
NUMPY_ALIASES = {
    "arcsin": "asin", "arccos": "acos", "arctan": "atan", "arcsinh": "asinh",
    "arccosh": "acosh", "arctanh": "atanh", "arctan2": "atan2", "conjugate": "conj",
    "left_shift": "bitwise_left_shift", "right_shift": "bitwise_right_shift",
    "invert": "bitwise_invert", "true_divide": "divide", "mod": "remainder", "pow": "power",
    "absolute": "abs",
}

"""The array API standard's special cases of elementwise functions (version 2024.12), as
data: one row per case, transcribed from the "Special cases" section of each function's
definition, with a representative value for each class the standard names ("a positive
finite number": 2.5; "less than 1 in magnitude": 0.5; "an odd integer value": 3.0).

A row is ``(function, arguments, expected)``. Arguments and expected values are floats (a
complex case is a pair ``(real, imag)``); an expected value is one of

* a float: equal, and a zero must have the same sign (``-0.0`` is not ``+0.0``);
* ``NAN``: any NaN; ``NAN_NEG`` / ``NAN_POS``: a NaN whose sign bit is set / clear;
* ``ANY(x)``: ``x`` with its sign unspecified (the standard says so);
* ``APPROX(x)``: within 1e-12 relative (the standard's "implementation-dependent
  approximation to π/2" and the like);
* ``True`` / ``False`` for predicates.

``tests/conformance/test_special_cases.py`` runs every row on the three engines.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = ["REAL", "COMPLEX", "NAN", "NAN_NEG", "NAN_POS", "ANY", "APPROX", "matches"]

I = math.inf  # noqa: E741
N = math.nan
PI = math.pi
NAN = "nan"
NAN_NEG = "nan with sign bit 1"
NAN_POS = "nan with sign bit 0"
NEG_NAN = math.copysign(math.nan, -1.0)


@dataclass(frozen=True)
class ANY:
    """A value whose sign the standard leaves unspecified."""
    value: float


@dataclass(frozen=True)
class APPROX:
    """An implementation-dependent approximation of ``value``."""
    value: float


def matches(got: float, want) -> bool:
    """``got`` is the value a row's ``want`` describes (module docstring)."""
    got = float(got) if not isinstance(got, bool) else got
    if isinstance(want, bool):
        return bool(got) == want
    if want == NAN:
        return math.isnan(got)
    if want in (NAN_NEG, NAN_POS):
        return math.isnan(got) and (math.copysign(1.0, got) < 0) == (want == NAN_NEG)
    if isinstance(want, ANY):
        w = want.value
        return math.isnan(got) if math.isnan(w) else math.isclose(abs(got), abs(w),
                                                                  rel_tol=1e-12)
    if isinstance(want, APPROX):
        return math.isclose(got, want.value, rel_tol=1e-12, abs_tol=1e-300)
    if math.isnan(want):
        return math.isnan(got)
    if want == 0:
        return got == 0 and math.copysign(1.0, got) == math.copysign(1.0, want)
    return got == want


_ROUNDING = [(3.0, 3.0), (-3.0, -3.0), (I, I), (-I, -I), (0.0, 0.0), (-0.0, -0.0), (N, NAN)]

# --- real-valued arguments -------------------------------------------------------------------
REAL: list[tuple[str, tuple[float, ...], object]] = [
    # unary
    *[("acos", (x,), y) for x, y in [(N, NAN), (1.5, NAN), (-1.5, NAN), (1.0, 0.0)]],
    *[("acosh", (x,), y) for x, y in [(N, NAN), (0.5, NAN), (1.0, 0.0), (I, I)]],
    *[("asin", (x,), y) for x, y in [(N, NAN), (1.5, NAN), (-1.5, NAN), (0.0, 0.0),
                                     (-0.0, -0.0)]],
    *[("asinh", (x,), y) for x, y in [(N, NAN), (0.0, 0.0), (-0.0, -0.0), (I, I), (-I, -I)]],
    *[("atan", (x,), y) for x, y in [(N, NAN), (0.0, 0.0), (-0.0, -0.0),
                                     (I, APPROX(PI / 2)), (-I, APPROX(-PI / 2))]],
    *[("atanh", (x,), y) for x, y in [(N, NAN), (-1.5, NAN), (1.5, NAN), (-1.0, -I),
                                      (1.0, I), (0.0, 0.0), (-0.0, -0.0)]],
    *[(f, (x,), y) for f in ("ceil", "floor", "trunc", "round") for x, y in _ROUNDING],
    *[("round", (x,), y) for x, y in [(2.5, 2.0), (3.5, 4.0), (-2.5, -2.0), (0.5, 0.0)]],
    *[("cos", (x,), y) for x, y in [(N, NAN), (0.0, 1.0), (-0.0, 1.0), (I, NAN), (-I, NAN)]],
    *[("cosh", (x,), y) for x, y in [(N, NAN), (0.0, 1.0), (-0.0, 1.0), (I, I), (-I, I)]],
    *[("exp", (x,), y) for x, y in [(N, NAN), (0.0, 1.0), (-0.0, 1.0), (I, I), (-I, 0.0)]],
    *[("expm1", (x,), y) for x, y in [(N, NAN), (0.0, 0.0), (-0.0, -0.0), (I, I),
                                      (-I, -1.0)]],
    *[("log", (x,), y) for x, y in [(N, NAN), (-1.0, NAN), (0.0, -I), (-0.0, -I), (1.0, 0.0),
                                    (I, I)]],
    *[("log1p", (x,), y) for x, y in [(N, NAN), (-2.0, NAN), (-1.0, -I), (-0.0, -0.0),
                                      (0.0, 0.0), (I, I)]],
    *[(f, (x,), y) for f in ("log2", "log10")
      for x, y in [(N, NAN), (-1.0, NAN), (0.0, -I), (-0.0, -I), (1.0, 0.0), (I, I)]],
    *[("sign", (x,), y) for x, y in [(-2.5, -1.0), (-0.0, ANY(0.0)), (0.0, ANY(0.0)),
                                     (2.5, 1.0), (N, NAN)]],
    *[("signbit", (x,), y) for x, y in [(0.0, False), (-0.0, True), (I, False), (-I, True),
                                        (2.5, False), (-2.5, True), (N, False),
                                        (NEG_NAN, True)]],
    *[("sin", (x,), y) for x, y in [(N, NAN), (0.0, 0.0), (-0.0, -0.0), (I, NAN), (-I, NAN)]],
    *[("sinh", (x,), y) for x, y in [(N, NAN), (0.0, 0.0), (-0.0, -0.0), (I, I), (-I, -I)]],
    *[("sqrt", (x,), y) for x, y in [(N, NAN), (-1.0, NAN), (0.0, 0.0), (-0.0, -0.0),
                                     (I, I)]],
    *[("tan", (x,), y) for x, y in [(N, NAN), (0.0, 0.0), (-0.0, -0.0), (I, NAN), (-I, NAN)]],
    *[("tanh", (x,), y) for x, y in [(N, NAN), (0.0, 0.0), (-0.0, -0.0), (I, 1.0),
                                     (-I, -1.0)]],
    # binary
    *[("add", a, y) for a, y in [
        ((N, 1.0), NAN), ((1.0, N), NAN), ((I, -I), NAN), ((-I, I), NAN), ((I, I), I),
        ((-I, -I), -I), ((I, 2.5), I), ((-I, 2.5), -I), ((2.5, I), I), ((2.5, -I), -I),
        ((-0.0, -0.0), -0.0), ((-0.0, 0.0), 0.0), ((0.0, -0.0), 0.0), ((0.0, 0.0), 0.0),
        ((0.0, 2.5), 2.5), ((-0.0, 2.5), 2.5), ((2.5, 0.0), 2.5), ((2.5, -0.0), 2.5),
        ((2.5, -2.5), 0.0)]],
    *[("atan2", a, y) for a, y in [
        ((N, 1.0), NAN), ((1.0, N), NAN), ((1.0, 0.0), APPROX(PI / 2)),
        ((1.0, -0.0), APPROX(PI / 2)), ((0.0, 1.0), 0.0), ((0.0, 0.0), 0.0),
        ((0.0, -0.0), APPROX(PI)), ((0.0, -1.0), APPROX(PI)), ((-0.0, 1.0), -0.0),
        ((-0.0, 0.0), -0.0), ((-0.0, -0.0), APPROX(-PI)), ((-0.0, -1.0), APPROX(-PI)),
        ((-1.0, 0.0), APPROX(-PI / 2)), ((-1.0, -0.0), APPROX(-PI / 2)), ((1.0, I), 0.0),
        ((1.0, -I), APPROX(PI)), ((-1.0, I), -0.0), ((-1.0, -I), APPROX(-PI)),
        ((I, 1.0), APPROX(PI / 2)), ((-I, 1.0), APPROX(-PI / 2)), ((I, I), APPROX(PI / 4)),
        ((I, -I), APPROX(3 * PI / 4)), ((-I, I), APPROX(-PI / 4)),
        ((-I, -I), APPROX(-3 * PI / 4))]],
    *[("copysign", a, y) for a, y in [
        ((2.5, -1.0), -2.5), ((2.5, -0.0), -2.5), ((-2.5, 0.0), 2.5), ((-2.5, 1.0), 2.5),
        ((2.5, NEG_NAN), -2.5), ((-2.5, N), 2.5), ((N, -1.0), NAN_NEG), ((N, -0.0), NAN_NEG),
        ((N, 0.0), NAN_POS), ((N, 1.0), NAN_POS), ((N, NEG_NAN), NAN_NEG), ((N, N), NAN_POS)]],
    *[(f, a, y) for f in ("divide", "floor_divide") for a, y in [
        ((N, 1.0), NAN), ((1.0, N), NAN), ((I, -I), NAN), ((I, I), NAN), ((-I, I), NAN),
        ((0.0, -0.0), NAN), ((0.0, 0.0), NAN), ((-0.0, 0.0), NAN), ((0.0, 2.5), 0.0),
        ((-0.0, 2.5), -0.0), ((0.0, -2.5), -0.0), ((-0.0, -2.5), 0.0), ((2.5, 0.0), I),
        ((2.5, -0.0), -I), ((-2.5, 0.0), -I), ((-2.5, -0.0), I), ((I, 2.5), I),
        ((I, -2.5), -I), ((-I, 2.5), -I), ((-I, -2.5), I), ((2.5, I), 0.0), ((2.5, -I), -0.0),
        ((-2.5, I), -0.0), ((-2.5, -I), 0.0)]],
    *[("floor_divide", a, y) for a, y in [((5.0, 2.0), 2.0), ((-5.0, 2.0), -3.0),
                                          ((5.0, -2.0), -3.0), ((-5.0, -2.0), 2.0)]],
    *[("remainder", a, y) for a, y in [
        ((N, 1.0), NAN), ((1.0, N), NAN), ((I, I), NAN), ((I, -I), NAN), ((0.0, 0.0), NAN),
        ((-0.0, -0.0), NAN), ((0.0, 2.5), 0.0), ((-0.0, 2.5), 0.0), ((0.0, -2.5), -0.0),
        ((-0.0, -2.5), -0.0), ((2.5, 0.0), NAN), ((2.5, -0.0), NAN), ((-2.5, 0.0), NAN),
        ((-2.5, -0.0), NAN), ((I, 2.5), NAN), ((I, -2.5), NAN), ((-I, 2.5), NAN),
        ((-I, -2.5), NAN), ((2.5, I), 2.5), ((2.5, -I), -I), ((-2.5, I), I),
        ((-2.5, -I), -2.5), ((5.0, 3.0), 2.0), ((-5.0, 3.0), 1.0), ((5.0, -3.0), -1.0)]],
    *[("logaddexp", a, y) for a, y in [((N, 1.0), NAN), ((1.0, N), NAN), ((I, 1.0), I),
                                       ((1.0, I), I), ((I, -I), I), ((-I, I), I)]],
    *[("multiply", a, y) for a, y in [
        ((N, 1.0), NAN), ((1.0, N), NAN), ((I, 0.0), NAN), ((-I, -0.0), NAN), ((0.0, I), NAN),
        ((-0.0, -I), NAN), ((I, I), I), ((I, -I), -I), ((-I, -I), I), ((I, 2.5), I),
        ((-I, 2.5), -I), ((2.5, -I), -I), ((-2.5, -I), I), ((-0.0, 2.5), -0.0),
        ((-2.5, -0.0), 0.0), ((2.5, -2.5), -6.25)]],
    *[("nextafter", a, y) for a, y in [((N, 1.0), NAN), ((1.0, N), NAN), ((-0.0, 0.0), 0.0),
                                       ((0.0, -0.0), -0.0)]],
    *[("pow", a, y) for a, y in [
        ((2.0, N), NAN), ((N, 0.0), 1.0), ((N, -0.0), 1.0), ((2.5, 0.0), 1.0), ((N, 2.0), NAN),
        ((2.0, I), I), ((-2.0, I), I), ((2.0, -I), 0.0), ((-2.0, -I), 0.0), ((1.0, I), 1.0),
        ((-1.0, I), 1.0), ((-1.0, -I), 1.0), ((1.0, 2.5), 1.0), ((1.0, -I), 1.0),
        ((0.5, I), 0.0), ((-0.5, I), 0.0), ((0.5, -I), I), ((-0.5, -I), I), ((I, 2.0), I),
        ((I, -2.0), 0.0), ((-I, 3.0), -I), ((-I, 2.0), I), ((-I, 2.5), I), ((-I, -3.0), -0.0),
        ((-I, -2.0), 0.0), ((0.0, 2.0), 0.0), ((0.0, -2.0), I), ((-0.0, 3.0), -0.0),
        ((-0.0, 2.0), 0.0), ((-0.0, -3.0), -I), ((-0.0, -2.0), I), ((-2.0, 2.5), NAN)]],
    # ternary
    *[("clip", a, y) for a, y in [((N, 0.0, 1.0), NAN), ((0.5, N, 1.0), NAN),
                                  ((0.5, 0.0, N), NAN), ((2.5, 0.0, 1.0), 1.0),
                                  ((-2.5, 0.0, 1.0), 0.0)]],
]


def _cis(r: float, b: float) -> tuple[float, float]:
    """``r * cis(b)`` as the standard writes it: ``(r cos b, r sin b)``."""
    return (r * math.cos(b), r * math.sin(b))


def _m1(z: tuple[float, float]) -> tuple[float, float]:
    return (z[0] - 1.0, z[1])


# --- complex arguments: (function, ((a, b),), (real, imag)) ----------------------------------
_C: dict[str, list[tuple[tuple[float, float], tuple]]] = {
    "exp": [((0.0, 0.0), (1.0, 0.0)), ((-0.0, 0.0), (1.0, 0.0)), ((2.5, I), (NAN, NAN)),
            ((2.5, N), (NAN, NAN)), ((I, 0.0), (I, 0.0)), ((-I, 2.5), _cis(0.0, 2.5)),
            ((I, 2.5), _cis(I, 2.5)), ((-I, I), (ANY(0.0), ANY(0.0))), ((I, I), (ANY(I), NAN)),
            ((-I, N), (ANY(0.0), ANY(0.0))), ((I, N), (ANY(I), NAN)), ((N, 0.0), (NAN, 0.0)),
            ((N, 2.5), (NAN, NAN)), ((N, N), (NAN, NAN))],
    "expm1": [((0.0, 0.0), (0.0, 0.0)), ((-0.0, 0.0), (0.0, 0.0)), ((2.5, I), (NAN, NAN)),
              ((2.5, N), (NAN, NAN)), ((I, 0.0), (I, 0.0)), ((-I, 2.5), _m1(_cis(0.0, 2.5))),
              ((I, 2.5), _m1(_cis(I, 2.5))), ((-I, I), (-1.0, ANY(0.0))),
              ((I, I), (ANY(I), NAN)), ((-I, N), (-1.0, ANY(0.0))), ((I, N), (ANY(I), NAN)),
              ((N, 0.0), (NAN, 0.0)), ((N, 2.5), (NAN, NAN)), ((N, N), (NAN, NAN))],
    "log": [((-0.0, 0.0), (-I, APPROX(PI))), ((0.0, 0.0), (-I, 0.0)),
            ((2.5, I), (I, APPROX(PI / 2))), ((2.5, N), (NAN, NAN)),
            ((-I, 2.5), (I, APPROX(PI))), ((I, 2.5), (I, 0.0)),
            ((-I, I), (I, APPROX(3 * PI / 4))), ((I, I), (I, APPROX(PI / 4))),
            ((I, N), (I, NAN)), ((-I, N), (I, NAN)), ((N, 2.5), (NAN, NAN)),
            ((N, I), (I, NAN)), ((N, N), (NAN, NAN))],
    "log1p": [((-1.0, 0.0), (-I, 0.0)), ((2.5, I), (I, APPROX(PI / 2))),
              ((2.5, N), (NAN, NAN)), ((-I, 2.5), (I, APPROX(PI))), ((I, 2.5), (I, 0.0)),
              ((-I, I), (I, APPROX(3 * PI / 4))), ((I, I), (I, APPROX(PI / 4))),
              ((I, N), (I, NAN)), ((-I, N), (I, NAN)), ((N, 2.5), (NAN, NAN)),
              ((N, I), (I, NAN)), ((N, N), (NAN, NAN))],
    "sqrt": [((0.0, 0.0), (0.0, 0.0)), ((-0.0, 0.0), (0.0, 0.0)), ((2.5, I), (I, I)),
             ((N, I), (I, I)), ((2.5, N), (NAN, NAN)), ((-I, 2.5), (0.0, I)),
             ((I, 2.5), (I, 0.0)), ((-I, N), (NAN, ANY(I))), ((I, N), (I, NAN)),
             ((N, 2.5), (NAN, NAN)), ((N, N), (NAN, NAN))],
    "sinh": [((0.0, 0.0), (0.0, 0.0)), ((0.0, I), (ANY(0.0), NAN)),
             ((0.0, N), (ANY(0.0), NAN)), ((2.5, I), (NAN, NAN)), ((2.5, N), (NAN, NAN)),
             ((I, 0.0), (I, 0.0)), ((I, 2.5), _cis(I, 2.5)), ((I, I), (ANY(I), NAN)),
             ((I, N), (ANY(I), NAN)), ((N, 0.0), (NAN, 0.0)), ((N, 2.5), (NAN, NAN)),
             ((N, N), (NAN, NAN))],
    "cosh": [((0.0, 0.0), (1.0, 0.0)), ((0.0, I), (NAN, ANY(0.0))),
             ((0.0, N), (NAN, ANY(0.0))), ((2.5, I), (NAN, NAN)), ((2.5, N), (NAN, NAN)),
             ((I, 0.0), (I, 0.0)), ((I, 2.5), _cis(I, 2.5)), ((I, I), (ANY(I), NAN)),
             ((I, N), (I, NAN)), ((N, 0.0), (NAN, ANY(0.0))), ((N, 2.5), (NAN, NAN)),
             ((N, N), (NAN, NAN))],
    "tanh": [((0.0, 0.0), (0.0, 0.0)), ((2.5, I), (NAN, NAN)), ((0.0, I), (0.0, NAN)),
             ((2.5, N), (NAN, NAN)), ((0.0, N), (0.0, NAN)), ((I, 2.5), (1.0, 0.0)),
             ((I, 2.0), (1.0, 0.0)), ((I, I), (1.0, ANY(0.0))), ((I, N), (1.0, ANY(0.0))),
             ((N, 0.0), (NAN, 0.0)), ((N, 2.5), (NAN, NAN)), ((N, N), (NAN, NAN))],
    "asinh": [((0.0, 0.0), (0.0, 0.0)), ((2.5, I), (I, APPROX(PI / 2))),
              ((2.5, N), (NAN, NAN)), ((I, 2.5), (I, 0.0)), ((I, I), (I, APPROX(PI / 4))),
              ((N, 0.0), (NAN, 0.0)), ((N, 2.5), (NAN, NAN)), ((N, I), (ANY(I), NAN)),
              ((N, N), (NAN, NAN))],
    "atanh": [((0.0, 0.0), (0.0, 0.0)), ((0.0, N), (0.0, NAN)), ((1.0, 0.0), (I, 0.0)),
              ((2.5, I), (0.0, APPROX(PI / 2))), ((2.5, N), (NAN, NAN)),
              ((I, 2.5), (0.0, APPROX(PI / 2))), ((I, I), (0.0, APPROX(PI / 2))),
              ((I, N), (0.0, NAN)), ((N, 2.5), (NAN, NAN)),
              ((N, I), (ANY(0.0), APPROX(PI / 2))), ((N, N), (NAN, NAN))],
    "acos": [((0.0, 0.0), (APPROX(PI / 2), -0.0)), ((-0.0, 0.0), (APPROX(PI / 2), -0.0)),
             ((0.0, N), (APPROX(PI / 2), NAN)), ((2.5, I), (APPROX(PI / 2), -I)),
             ((2.5, N), (NAN, NAN)), ((-I, 2.5), (APPROX(PI), -I)), ((I, 2.5), (0.0, -I)),
             ((-I, I), (APPROX(3 * PI / 4), -I)), ((I, I), (APPROX(PI / 4), -I)),
             ((I, N), (NAN, ANY(I))), ((N, 2.5), (NAN, NAN)), ((N, I), (NAN, -I)),
             ((N, N), (NAN, NAN))],
    "acosh": [((0.0, 0.0), (0.0, APPROX(PI / 2))), ((-0.0, 0.0), (0.0, APPROX(PI / 2))),
              ((2.5, I), (I, APPROX(PI / 2))), ((2.5, N), (NAN, NAN)),
              ((0.0, N), (NAN, ANY(PI / 2))), ((-I, 2.5), (I, APPROX(PI))),
              ((I, 2.5), (I, 0.0)), ((-I, I), (I, APPROX(3 * PI / 4))),
              ((I, I), (I, APPROX(PI / 4))), ((I, N), (I, NAN)), ((-I, N), (I, NAN)),
              ((N, 2.5), (NAN, NAN)), ((N, I), (I, NAN)), ((N, N), (NAN, NAN))],
}
COMPLEX = [(f, (z,), want) for f, rows in _C.items() for z, want in rows]

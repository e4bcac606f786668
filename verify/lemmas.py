"""A small library of proved division lemmas, used by the staged reading (``z3_reading``).

Each lemma is a universally quantified fact over unbounded integers, stated as a Z3 formula
over fresh constants and proved once per process by Z3 (its negation is unsatisfiable), in
a fresh Z3 context so that the answer does not depend on anything else the process asked.
``nested`` and ``nested_mod`` are stated on named quotients and remainders (``q1 = a // c``,
``r1 = a % c``, ``q2 = q1 // b``, ``r2 = q1 % b``, ``q = a // (b*c)``, ``r = a % (b*c)``,
each pinned down by ``euclid``), the form in which the staged reading uses them. The
staged reading adds *instances* of these lemmas to a query; it is only used when every lemma
here is proved (:func:`all_proved`), so a staged proof rests on nothing unproved.

======================  ==============================================================
``euclid``               ``b >= 1  ==>  a == b*(a // b) + a % b  and  0 <= a % b < b``
``small``                ``b >= 1, 0 <= a < b  ==>  a // b == 0  and  a % b == a``
``uniqueness``           ``b >= 1, 0 <= s < b  ==>  (t*b + s) // b == t, (t*b + s) % b == s``
``nested``               ``b >= 1, c >= 1  ==>  a // (b*c) == (a // c) // b``
``nested_mod``           ``b >= 1, c >= 1  ==>  a % (b*c) == c*((a // c) % b) + a % c``
``row_major_range``      ``0 <= i < I, 0 <= j < J  ==>  0 <= i*J + j < I*J``
``floor_is_truncation``  ``a >= 0, b >= 1  ==>  a // b == trunc(a / b)`` (Z3's div vs C's)
======================  ==============================================================
"""

from __future__ import annotations

import functools
import time
from dataclasses import dataclass

import z3

from sparsefold.spec.sizes_z3 import new_context, serialized

__all__ = ["Lemma", "LEMMAS", "prove_lemma", "all_proved"]

RLIMIT = 2_000_000


@dataclass(frozen=True)
class Lemma:
    """A named fact: ``premises ==> conclusion`` over integer constants."""

    name: str
    statement: str

    def formula(self, ctx: z3.Context | None = None) -> tuple[list[z3.BoolRef], z3.BoolRef]:
        return _FORMULAS[self.name](ctx)


def _euclid(ctx):
    a, b = z3.Ints("a b", ctx)
    return [b >= 1], z3.And(a == b * (a / b) + a % b, 0 <= a % b, a % b < b)


def _small(ctx):
    a, b = z3.Ints("a b", ctx)
    return [b >= 1, 0 <= a, a < b], z3.And(a / b == 0, a % b == a)


def _uniqueness(ctx):
    t, s, b = z3.Ints("t s b", ctx)
    x = t * b + s
    return [b >= 1, 0 <= s, s < b], z3.And(x / b == t, x % b == s)


def _nested(ctx):
    # stated on named quotients and remainders (lemma "euclid" defines them): the
    # monolithic div/mod form is outside what Z3's nonlinear solver settles reliably
    a, b, c, q1, r1, q2, r2, q, r = z3.Ints("a b c q1 r1 q2 r2 q r", ctx)
    return [b >= 1, c >= 1, a == c * q1 + r1, 0 <= r1, r1 < c, q1 == b * q2 + r2, 0 <= r2,
            r2 < b, a == (b * c) * q + r, 0 <= r, r < b * c], q == q2


def _nested_mod(ctx):
    a, b, c, q1, r1, q2, r2, q, r = z3.Ints("a b c q1 r1 q2 r2 q r", ctx)
    return [b >= 1, c >= 1, a == c * q1 + r1, 0 <= r1, r1 < c, q1 == b * q2 + r2, 0 <= r2,
            r2 < b, a == (b * c) * q + r, 0 <= r, r < b * c], r == c * r2 + r1


def _row_major_range(ctx):
    i, j, n, m = z3.Ints("i j I J", ctx)
    return [0 <= i, i < n, 0 <= j, j < m], z3.And(0 <= i * m + j, i * m + j < n * m)


def _floor_is_truncation(ctx):
    # C's truncating quotient of a >= 0 by b >= 1 is the q with b*q <= a < b*(q + 1)
    a, b = z3.Ints("a b", ctx)
    q = a / b
    return [a >= 0, b >= 1], z3.And(b * q <= a, a < b * (q + 1), q >= 0)


_FORMULAS = {
    "euclid": _euclid, "small": _small, "uniqueness": _uniqueness, "nested": _nested,
    "nested_mod": _nested_mod,
    "row_major_range": _row_major_range, "floor_is_truncation": _floor_is_truncation,
}

LEMMAS: tuple[Lemma, ...] = (
    Lemma("euclid", "b >= 1 ==> a == b*(a // b) + a % b and 0 <= a % b < b"),
    Lemma("small", "b >= 1, 0 <= a < b ==> a // b == 0 and a % b == a"),
    Lemma("uniqueness", "b >= 1, 0 <= s < b ==> (t*b + s) // b == t and (t*b + s) % b == s"),
    Lemma("nested", "b >= 1, c >= 1 ==> a // (b*c) == (a // c) // b"),
    Lemma("nested_mod", "b >= 1, c >= 1 ==> a % (b*c) == c*((a // c) % b) + a % c"),
    Lemma("row_major_range", "0 <= i < I, 0 <= j < J ==> 0 <= i*J + j < I*J"),
    Lemma("floor_is_truncation", "a >= 0, b >= 1 ==> b*(a // b) <= a < b*(a // b + 1)"),
)


@functools.cache
@serialized
def prove_lemma(name: str) -> tuple[str, float]:
    """``("proved" | "refuted" | "unknown", seconds)`` for the lemma called ``name``."""
    # a fresh context: the answer must not depend on what else this process has asked Z3
    ctx = new_context()
    premises, conclusion = _FORMULAS[name](ctx)
    s = z3.Solver(ctx=ctx)
    s.set("rlimit", RLIMIT)
    s.add(*premises)
    s.add(z3.Not(conclusion))
    t0 = time.perf_counter()
    r = s.check()
    status = "proved" if r == z3.unsat else "refuted" if r == z3.sat else "unknown"
    return status, time.perf_counter() - t0


@functools.cache
def all_proved() -> bool:
    """True when every lemma of the library is proved (the staged reading relies on them)."""
    return all(prove_lemma(lemma.name)[0] == "proved" for lemma in LEMMAS)

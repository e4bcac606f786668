"""The Z3 reading of the size table, the staged reading, the lemma library, and the solver's
honest statuses.

Oracles: Python's own integer arithmetic (``//``, ``%``, ``math.trunc`` for C's division)
on random values, independent of Z3 and of the table under test.
"""

from __future__ import annotations

import math

import pytest
import z3
from hypothesis import given
from hypothesis import strategies as st

from sparsefold.spec import sizes as sz
from sparsefold.verify import lemmas
from sparsefold.verify.obligations import py_eval
from sparsefold.verify.results import BOUNDED, PROVED, REFUTED, UNKNOWN
from sparsefold.verify.solver import decide
from sparsefold.verify.z3_reading import Z3_TABLE, Reading, division_sites


def test_z3_table_covers_the_semantics_table():
    assert set(Z3_TABLE) == set(sz.OPS)
    assert not hasattr(sz, "Z3")  # no slot filled as an import side effect any more
    # add/sub/mul are the NumPy entries themselves, applied to Z3 terms
    assert Z3_TABLE["add"] is sz.NUMPY["add"] and Z3_TABLE["mul"] is sz.NUMPY["mul"]
    assert Z3_TABLE["floordiv"] is not sz.NUMPY["floordiv"]


def _value(term, ctx) -> int:
    v = z3.simplify(term)
    return v.as_long() if z3.is_int_value(v) else int(z3.is_true(v))


_OPS = ["add", "sub", "mul", "floordiv", "mod", "min", "max", "lt", "le", "eq", "ne", "gt",
        "ge", "and", "or", "select"]


@st.composite
def _exprs(draw, depth=3):
    """Random expressions over I, J, K whose divisions have a positive divisor and a
    non-negative dividend (the only divisions the language performs)."""
    if depth == 0 or draw(st.booleans()):
        return draw(st.sampled_from([sz.Sym("I"), sz.Sym("J"), sz.Sym("K")])) if draw(
            st.booleans()) else sz.Const(draw(st.integers(0, 9)))
    name = draw(st.sampled_from(_OPS))
    a, b = draw(_exprs(depth - 1)), draw(_exprs(depth - 1))
    if name in ("floordiv", "mod"):
        return sz.op(name, sz.add(sz.maximum(a, 0), 0), sz.add(sz.maximum(b, 0), 1))
    if name == "select":
        return sz.select(sz.lt(a, b), a, b)
    return sz.op(name, a, b)


@given(_exprs(), st.integers(0, 50), st.integers(0, 50), st.integers(0, 50))
def test_direct_reading_agrees_with_python_on_the_language_fragment(e, i, j, k):
    env = {"I": i, "J": j, "K": k}
    rd = Reading("direct")
    term = rd.term(e, {n: z3.IntVal(v, rd.ctx) for n, v in env.items()})
    assert _value(term, rd.ctx) == py_eval(e, env)


@given(st.integers(0, 10 ** 12), st.integers(1, 10 ** 6))
def test_floor_division_is_c_truncation_is_z3_div_on_the_language_domain(a, b):
    ctx = z3.Context()
    z3_div = z3.simplify(z3.IntVal(a, ctx) / z3.IntVal(b, ctx)).as_long()
    z3_mod = z3.simplify(z3.IntVal(a, ctx) % z3.IntVal(b, ctx)).as_long()
    assert a // b == math.trunc(a / b)  # C's "/" with cdivision (exact in doubles here)
    assert z3_div == a // b and z3_mod == a % b


def test_the_readings_disagree_off_the_domain_which_is_why_divisions_are_obligations():
    ctx = z3.Context()
    assert -7 // 2 == -4 and math.trunc(-7 / 2) == -3          # Python vs C
    assert z3.simplify(z3.IntVal(7, ctx) / z3.IntVal(-2, ctx)).as_long() == -3  # Euclid
    assert 7 // -2 == -4


@given(st.integers(0, 400), st.integers(1, 20), st.integers(1, 20))
def test_staged_reading_pins_quotients_to_their_python_values(k, j, kk):
    """With the named quotients and lemma instances, the only model agrees with Python."""
    rd = Reading("staged")
    e = sz.mod(sz.floordiv(sz.Sym("_k0"), sz.mul(sz.Sym("J"), sz.Sym("K"))), sz.Sym("J"))
    t = rd.term(e)
    s = z3.Solver(ctx=rd.ctx)
    s.add(*rd.axioms, rd.var("_k0") == k, rd.var("J") == j, rd.var("K") == kk)
    s.add(t != (k // (j * kk)) % j)
    assert s.check() == z3.unsat


def test_division_sites_follow_short_circuit_paths():
    k, n = sz.Sym("_k0"), sz.Sym("N")
    e = sz.and_(sz.le(n, k), sz.eq(sz.mod(sz.sub(k, n), 3), 0))
    (path, dividend, divisor), = list(division_sites(e))
    assert path == sz.le(n, k) and dividend == sz.sub(k, n) and divisor == sz.Const(3)
    sel = sz.select(sz.lt(k, n), sz.floordiv(k, n), sz.Const(0))
    (path, _, _), = list(division_sites(sel))
    assert path == sz.lt(k, n)


@pytest.mark.parametrize("lemma", lemmas.LEMMAS, ids=lambda x: x.name)
def test_every_lemma_is_proved(lemma):
    status, seconds = lemmas.prove_lemma(lemma.name)
    assert status == PROVED and seconds < 5


def test_a_false_lemma_is_not_proved():
    """The lemma machinery can fail: ``a // (b*c) == (a // b) % c`` is not a law."""
    def false_formula(ctx):
        a, b, c = z3.Ints("a b c", ctx)
        return [b >= 1, c >= 1, a >= 0], a / (b * c) == (a / b) % c
    ctx = z3.Context()
    premises, conclusion = false_formula(ctx)
    s = z3.Solver(ctx=ctx)
    s.add(*premises, z3.Not(conclusion))
    assert s.check() == z3.sat


def _build(goal_fn):
    def build(mode):
        rd = Reading(mode)
        return rd, [], goal_fn(rd)
    return build


def test_decide_statuses_proved_refuted_bounded_unknown():
    # proved: a linear fact
    d = decide(_build(lambda rd: rd.var("I") + 1 > rd.var("I")))
    assert d.status == PROVED and d.method == "staged"
    # refuted, shrunk to the smallest size, and only when confirm() agrees
    d = decide(_build(lambda rd: z3.Or(rd.var("I") < 5, rd.var("I") > 1000)),
               confirm=lambda v: v)
    assert d.status == REFUTED and d.values == {"I": 5}
    d = decide(_build(lambda rd: rd.var("I") < 5), confirm=lambda v: None)
    assert d.status == UNKNOWN and "not confirmed" in d.note
    # bounded: the unbounded methods skipped, sizes <= 8 checked
    d = decide(_build(lambda rd: rd.var("I") * rd.var("I") >= rd.var("I")), methods=())
    assert d.status == BOUNDED and d.bound == 8
    # unknown: a nonlinear fact beyond a tiny resource limit
    def fermat(rd):
        a, b, c = rd.var("A"), rd.var("B"), rd.var("C")
        return z3.Or(a == 0, b == 0, a ** 3 + b ** 3 != c ** 3)
    d = decide(_build(fermat), rlimit=20_000, bound=0)
    assert d.status == UNKNOWN and "resource limit" in d.note

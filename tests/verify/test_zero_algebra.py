"""The zero algebra of elementwise functions, proved by Z3 on their C readings
(``verify.zero_algebra``): the built-in facts hold, and wrong facts — a false annihilation,
a dropped finiteness condition, a C text that disagrees with NumPy at zero or at a value no
sample reaches — are refuted with the values that show it.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import z3

from sparsefold.spec.functions import FUNCTIONS, ElementwiseFunction, check_facts
from sparsefold.verify.zero_algebra import _Reader, _show, prove_function, prove_functions


def _facts(report) -> dict[tuple[str, str], str]:
    return {(f.kind, f.fact): f.status for f in report.facts}


# (function, kinds) whose zero algebra Z3 proves on the C text, helpers' bodies included
Z3_READ = {
    "floor_divide": "i", "remainder": "fi", "bitwise_and": "bi", "bitwise_or": "bi",
    "bitwise_xor": "bi", "bitwise_invert": "bi", "bitwise_left_shift": "i",
    "bitwise_right_shift": "i", "clip": "bfi", "square": "fi", "sign": "fi", "abs": "bfi",
    "floor": "bfi", "ceil": "bfi", "trunc": "bfi", "round": "fi", "copysign": "f",
    "sqrt": "f", "signbit": "f", "isinf": "bfi", "isfinite": "bfi", "conj": "fi",
    "real": "bfi", "imag": "bfi", "maximum": "bfi", "less": "bfi", "multiply": "bfi",
}
TRANSCENDENTAL = ("exp", "expm1", "log", "log1p", "log2", "log10", "sin", "cos", "tan",
                  "asin", "acos", "atan", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh",
                  "atan2")


def test_every_built_in_function_has_its_zero_algebra_proved_or_probed():
    reports = {r.name: r for r in prove_functions()}
    assert set(reports) == set(FUNCTIONS)
    for name, r in reports.items():
        assert r.status in ("proved", "probed"), f"{name}: {r.summary()}"
        assert r.facts, name
    for name, kinds in Z3_READ.items():
        facts = _facts(reports[name])
        for kind in kinds:
            assert facts[kind, "at_zero"] == "proved", (name, kind, reports[name].summary())
            for p in FUNCTIONS[name].annihilates:
                assert facts[kind, f"annihilates[{p}]"] == "proved", (name, kind)
    # the facts the lattices intersect on are proved in both kinds kernels compute in
    for name in ("multiply", "logical_and"):
        facts = _facts(reports[name])
        for kind in "fi":
            assert facts[kind, "annihilates[0]"] == facts[kind, "annihilates[1]"] == "proved"
    assert _facts(reports["negative"])["f", "annihilates[0]"] == "proved"
    assert _facts(reports["add"])["f", "at_zero"] == "proved"
    # what is not read is said so, with the reason, and probed instead: never "proved"
    assert "pow" in reports["power"].unread["f"]
    # at zero the helper returns before its loop (0 ** 0 == 1): read without the loop
    assert _facts(reports["power"])["i", "at_zero"] == "proved"
    assert reports["divide"].unread["i"] == "computed in float64"
    assert "overflow" in reports["hypot"].unread["f"]
    for name in TRANSCENDENTAL:
        assert "transcendental" in reports[name].unread["f"], name
        assert _facts(reports[name])["f", "at_zero"] == "probed", name
        assert reports[name].status == "probed"
    assert _facts(reports["sin"])["f", "annihilates[0]"] == "probed"
    assert _facts(reports["add"])["c", "at_zero"] == "probed"  # complex: no Z3 sort here


@pytest.mark.parametrize("name,kind,dtype", [
    ("floor_divide", "i", np.int64), ("remainder", "i", np.int64),
    ("remainder", "f", np.float64), ("floor_divide", "f", np.float64),
    ("bitwise_left_shift", "i", np.int64), ("bitwise_right_shift", "i", np.int64),
    ("clip", "f", np.float64), ("sign", "f", np.float64), ("sign", "i", np.int64),
    ("copysign", "f", np.float64), ("floor", "f", np.float64), ("round", "f", np.float64),
    ("maximum", "b", np.bool_)])
def test_the_reading_of_a_c_text_is_numpys_value_at_samples(name, kind, dtype):
    """The Z3 reading of each helper's body, evaluated at concrete values, is NumPy's value:
    the reader reads the C text the kernels run, not something else."""
    fn = FUNCTIONS[name]
    vals = {"i": [0, 1, -1, 7, -7, 3, 64, 65, -(2 ** 63)],
            "f": [0.0, -0.0, 1.5, -2.5, 7.0, -3.0, np.inf, np.nan, 1e-310],
            "b": [False, True]}[kind]
    ctx = z3.Context()
    rd = _Reader(ctx, kind)
    for args in itertools.product(vals, repeat=fn.arity):
        if name == "clip" and args[1] > args[2]:
            continue
        with np.errstate(all="ignore"):
            # NumPy's array loop (its 0-d path can differ in a zero's sign: clip)
            want = np.asarray(fn.impl(*[np.asarray([a], dtype) for a in args]))[0]
        got = rd.read(fn.c_text(kind), [rd.const(a) for a in args])
        got = z3.simplify(got if isinstance(got, z3.ExprRef) else rd.const(got))
        if kind == "f":
            shown = _show(got)
            assert (np.isnan(want) and shown == "nan") or float(shown) == want, (args, shown)
            if want == 0 and not np.isnan(want):
                assert shown.startswith("-") == bool(np.signbit(want)), (args, shown)
        elif isinstance(got, z3.BoolRef):
            assert z3.is_true(got) == bool(want), (args, got)
        else:
            assert got.as_signed_long() == int(want), (args, got)


def test_a_false_annihilation_no_reading_proves_is_refuted_by_the_probe():
    careless = ElementwiseFunction("mul_exp", 2, lambda x, y: np.multiply(x, np.exp(y)),
                                   "({0} * exp({1}))", annihilates=(0,),
                                   annihilation_needs_finite=False)
    facts = {(f.kind, f.fact): f for f in prove_function(careless).facts}
    assert facts["f", "annihilates[0]"].status == "refuted"  # 0 * exp(inf) is nan
    assert "x1=" in facts["f", "annihilates[0]"].detail
    assert prove_function(careless).status == "refuted"


def test_a_false_annihilation_is_refuted():
    bad = ElementwiseFunction("badadd", 2, np.add, "({0} + {1})", annihilates=(0,))
    r = prove_function(bad)
    assert r.status == "refuted"
    (fact,) = [f for f in r.facts if f.kind == "f" and f.fact == "annihilates[0]"]
    assert fact.status == "refuted" and fact.detail.startswith("x1=")


def test_multiply_needs_finite_operands_for_floats_only():
    careless = ElementwiseFunction("mul_nan_blind", 2, np.multiply, "({0} * {1})",
                                   annihilates=(0, 1), annihilation_needs_finite=False)
    facts = {(f.kind, f.fact): f for f in prove_function(careless).facts}
    assert facts["f", "annihilates[0]"].status == "refuted"
    assert facts["f", "annihilates[0]"].detail in ("x1=nan", "x1=inf", "x1=-inf")
    assert facts["i", "annihilates[0]"].status == "proved"  # integers have no NaN


def test_a_c_text_that_disagrees_with_numpy_at_zero_is_refuted():
    shifted = ElementwiseFunction("neg_plus_one", 1, np.negative, "(-{0} + 1)")
    r = prove_function(shifted)
    assert {(f.kind, f.fact): f.status for f in r.facts}["f", "at_zero"] == "refuted"


def test_z3_finds_the_value_no_sample_reaches():
    # the NumPy meaning is right, so the sampled check passes; the C text the kernel runs
    # is wrong at 3.5 only
    odd = ElementwiseFunction("odd_multiply", 2, np.multiply,
                              "(({0} * {1}) if {1} != 3.5 else 1.0)", annihilates=(0,))
    assert check_facts(odd, "f") == []
    facts = {(f.kind, f.fact): f for f in prove_function(odd).facts}
    assert facts["f", "annihilates[0]"].status == "refuted"
    assert "x1=3.5" in facts["f", "annihilates[0]"].detail


# --- fill values (spec/fills.py; verify.fill_algebra.prove_fill_values) ------------------------

def test_fill_facts_of_every_built_in_function_are_proved():
    from sparsefold.verify.fill_algebra import prove_fill_values
    facts = {name: prove_fill_values(fn) for name, fn in FUNCTIONS.items()}
    for name, fs in facts.items():
        assert all(f.status == "proved" for f in fs), (name, [f.detail for f in fs])
    kinds = {f.fact for f in facts["add"]}
    assert {"fills[f]", "fills[i]"} <= kinds
    assert [f.fact for f in facts["where"]][-1] == "fill_form"


def test_a_c_text_that_disagrees_with_numpy_at_a_fill_is_refuted():
    """Right at 0 (so at_zero holds), wrong at the fill 1: f(1) is 0 in C, not in NumPy."""
    from sparsefold.verify.fill_algebra import prove_fill_values
    bad = ElementwiseFunction("square_wrong", 1, np.square, "({0} * {0} if {0} != 1.0 else 0.0)")
    (fact,) = [f for f in prove_fill_values(bad) if f.kind == "f"]
    assert fact.status == "refuted"
    assert fact.detail == "f(1.0): C == 0, NumPy != 0"


def test_a_where_that_drops_the_fill_is_refuted():
    from sparsefold.verify.fill_algebra import prove_fill_values
    bad = ElementwiseFunction("where", 3, np.where, "({1} if {0} else 0.0)")
    (fact,) = [f for f in prove_fill_values(bad) if f.fact == "fill_form"]
    assert fact.status == "refuted"


def test_the_committed_zero_algebra_reference_is_the_rendered_one():
    from pathlib import Path

    from sparsefold.verify.zero_algebra_doc import render
    doc = Path(__file__).resolve().parents[2] / "docs" / "zero_algebra.md"
    rendered = render()  # proves every function's facts: once
    assert doc.read_text(encoding="utf-8") == rendered, \
        "regenerate: python -m sparsefold.verify.zero_algebra_doc > docs/zero_algebra.md"
    for name in FUNCTIONS:
        if not name.startswith("astype_"):
            assert f"| `{name}` |" in rendered

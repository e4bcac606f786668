"""The zero algebra of elementwise functions, proved by Z3 on their C readings
(``verify.zero_algebra``): the built-in facts hold, and wrong facts — a false annihilation,
a dropped finiteness condition, a C text that disagrees with NumPy at zero or at a value no
sample reaches — are refuted with the values that show it.
"""

from __future__ import annotations

import numpy as np

from sparsefold.spec.functions import FUNCTIONS, ElementwiseFunction, check_facts
from sparsefold.verify.zero_algebra import prove_function, prove_functions


def _facts(report) -> dict[tuple[str, str], str]:
    return {(f.kind, f.fact): f.status for f in report.facts}


def test_every_built_in_function_has_its_zero_algebra_proved():
    reports = {r.name: r for r in prove_functions()}
    assert set(reports) == set(FUNCTIONS)
    for name, r in reports.items():
        assert r.status == "proved", f"{name}: {r.summary()}"
    # the facts the lattices intersect on are proved in both kinds kernels compute in
    for name in ("multiply", "logical_and"):
        facts = _facts(reports[name])
        for kind in "fi":
            assert facts[kind, "annihilates[0]"] == facts[kind, "annihilates[1]"] == "proved"
    assert _facts(reports["negative"])["f", "annihilates[0]"] == "proved"
    assert _facts(reports["add"])["f", "at_zero"] == "proved"
    # a kind that is not read is said so, with the reason
    assert "pow" in reports["power"].unread["f"]
    assert reports["divide"].unread["i"] == "computed in float64"


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


# --- fill values (spec/fills.py; verify.zero_algebra.prove_fill_values) ------------------------

def test_fill_facts_of_every_built_in_function_are_proved():
    from sparsefold.verify.zero_algebra import prove_fill_values
    facts = {name: prove_fill_values(fn) for name, fn in FUNCTIONS.items()}
    for name, fs in facts.items():
        assert all(f.status == "proved" for f in fs), (name, [f.detail for f in fs])
    kinds = {f.fact for f in facts["add"]}
    assert {"fills[f]", "fills[i]"} <= kinds
    assert [f.fact for f in facts["where"]][-1] == "fill_form"


def test_a_c_text_that_disagrees_with_numpy_at_a_fill_is_refuted():
    """Right at 0 (so at_zero holds), wrong at the fill 1: f(1) is 0 in C, not in NumPy."""
    from sparsefold.verify.zero_algebra import prove_fill_values
    bad = ElementwiseFunction("square_wrong", 1, np.square, "({0} * {0} if {0} != 1.0 else 0.0)")
    (fact,) = [f for f in prove_fill_values(bad) if f.kind == "f"]
    assert fact.status == "refuted"
    assert fact.detail == "f(1.0): C == 0, NumPy != 0"


def test_a_where_that_drops_the_fill_is_refuted():
    from sparsefold.verify.zero_algebra import prove_fill_values
    bad = ElementwiseFunction("where", 3, np.where, "({1} if {0} else 0.0)")
    (fact,) = [f for f in prove_fill_values(bad) if f.fact == "fill_form"]
    assert fact.status == "refuted"

"""``verify.prove_equal``: the API on LazyArrays and nodes, every status, counterexamples that
replay through the interpreter and print as regression tests, SMT-LIB dumps.

Oracles: NumPy evaluating the same expressions on the counterexample's concrete inputs (the
two sides must really differ there), and executing the emitted regression test.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import sparsefold as sf
from sparsefold import verify
from sparsefold.spec import sizes as sz
from sparsefold.spec.errors import IllFormedProgram
from sparsefold.verify.results import BOUNDED, PROVED, PROVED_REAL, REFUTED, UNKNOWN, VACUOUS

A = sf.symbol("A", shape=("I", "J"))
B = sf.symbol("B", shape=("I", "K"))
x = sf.symbol("x", shape=("N",))


def _obligations(result) -> dict[str, str]:
    return {o.name: o.status for o in result.obligations}


def test_the_issue_example_is_proved():
    r = verify.prove_equal(sf.concat([A, B], axis=1)[:, :"J"], A)
    assert r.status == PROVED and r.counterexample is None
    assert _obligations(r) == {"dtype": PROVED, "rank": PROVED, "shape": PROVED,
                               "rhs_defined": PROVED, "lhs_bounds": PROVED,
                               "rhs_bounds": PROVED, "value": PROVED}


def test_nodes_work_as_well_as_lazy_arrays():
    assert verify.prove_equal(A.T.T.node, A.node).status == PROVED


def test_a_wrong_equality_is_refuted_with_a_replayed_counterexample():
    lhs, rhs = sf.concat([A, B], axis=1)[:, "J":], A[:, :"K"]
    r = verify.prove_equal(lhs, rhs)
    assert r.status == REFUTED
    cx = r.counterexample
    assert cx is not None and cx.replay()
    text = str(cx)
    assert re.search(r"sizes=\{I: \d+, J: \d+, K: \d+\}", text)
    # the two sides at the reported coordinate, evaluated by NumPy from the same inputs
    if cx.coord is not None:
        dense = {k: v for k, v in cx.inputs.items()}
        want_l = np.concatenate([dense["A"], dense["B"]], axis=1)[:, cx.sizes["J"]:]
        want_r = dense["A"][:, :cx.sizes["K"]]
        assert want_l.shape != want_r.shape or want_l[cx.coord] != want_r[cx.coord]
        assert "k=(" in text and "lhs=B[" in text and "rhs=A[" in text


def test_counterexamples_shrink_toward_small_sizes():
    r = verify.prove_equal(x.reshape(1, "N"), sf.expand_dims(x[::-1], axis=0))
    cx = r.counterexample
    assert r.status == REFUTED and cx.sizes["N"] == 2  # the smallest N where reversal shows


def test_the_printed_regression_test_fails_while_the_sides_differ():
    r = verify.prove_equal(A.reshape(sz.Sym("J"), sz.Sym("I")), A.T)
    assert r.status == REFUTED
    code = r.counterexample.as_test("test_reshape_is_not_transpose")
    assert code.startswith("def test_reshape_is_not_transpose():")
    namespace: dict = {}
    exec(code, namespace)
    with pytest.raises(AssertionError):
        namespace["test_reshape_is_not_transpose"]()


def test_zero_times_x_is_refuted_for_floats_with_nan_or_inf():
    r = verify.prove_equal(0 * A, sf.broadcast_to(0.0, ("I", "J")))
    assert r.status == REFUTED
    cx = r.counterexample
    assert cx.data in ("nan", "inf", "nan at first") and cx.replay()
    assert "multiply(0, A[" in str(cx)


def test_zero_times_x_is_proved_for_int64():
    Ai = sf.symbol("Ai", shape=("I", "J"), dtype="int64")
    r = verify.prove_equal(0 * Ai, sf.broadcast_to(0, ("I", "J")))
    assert r.status == PROVED


def test_dtype_and_rank_mismatches_are_refuted_syntactically():
    r = verify.prove_equal(A, sf.symbol("C", shape=("I", "J"), dtype="int32"))
    assert _obligations(r)["dtype"] == REFUTED and r.status == REFUTED
    r = verify.prove_equal(A, A.reshape(-1))
    assert _obligations(r)["rank"] == REFUTED
    assert r.counterexample is not None and r.counterexample.replay()


def test_preconditions_that_admit_no_sizes_are_vacuous():
    r = verify.prove_equal(A, B, when="I + 1 <= 0")
    assert r.status == VACUOUS


def test_when_conditions_and_their_errors():
    lhs = sf.concat([x, x])[sz.Sym("a"):sz.Sym("b")]
    assert verify.prove_equal(lhs, x[sz.Sym("a"):sz.Sym("b")], when="b <= N").status == PROVED
    assert verify.prove_equal(lhs, x[sz.Sym("a"):sz.Sym("b")]).status == REFUTED
    with pytest.raises(IllFormedProgram, match="unsupported syntax"):
        verify.prove_equal(A, A, when="I ** 2 > 0")


def test_an_ill_formed_right_hand_side_is_reported_at_rhs_defined():
    """A symbolic bound that can go negative changes meaning (it would count from the end):
    the language takes symbolic bounds to be non-negative, so the rule must keep them so."""
    a, b = sz.Sym("a"), sz.Sym("b")
    r = verify.prove_equal(x[a:b], x[a:b][0:sz.sub(b, a)])
    assert _obligations(r)["rhs_defined"] == REFUTED
    assert "b - a >= 0 is false" in str(r.counterexample)


def test_float_sums_are_not_proved_by_pretending_addition_is_associative():
    # exactly, float sums are opaque (not associative): the value is proved only in real
    # arithmetic, and reported as such — never as "proved"
    C = sf.symbol("C", shape=("I", "J"))
    r = verify.prove_equal(sf.sum(sf.concat([C, B], axis=1), axis=1),
                           sf.sum(C, axis=1) + sf.sum(B, axis=1))
    assert r.status == PROVED_REAL and not r.exact
    (value,) = [o for o in r.obligations if o.name == "value"]
    assert value.status == PROVED_REAL and value.method.endswith(", real")
    assert "floating point may differ by rounding" in value.note
    assert "proved-real" in str(r).splitlines()[0]


def test_a_float_sum_rule_false_in_real_arithmetic_is_refuted():
    C = sf.symbol("C", shape=("I", "J"))
    r = verify.prove_equal(sf.sum(sf.concat([C, B], axis=1), axis=1), sf.sum(C, axis=1))
    assert r.status == REFUTED and r.counterexample.replay()


def test_max_over_a_concat_is_exact_for_floats_nan_included():
    C = sf.symbol("C", shape=("I", "J"))
    lhs = sf.max(sf.concat([C, B], axis=1), axis=1)
    rhs = sf.maximum(sf.max(C, axis=1), sf.max(B, axis=1))
    r = verify.prove_equal(lhs, rhs, when="J >= 1 and K >= 1")
    assert r.status == PROVED and r.exact
    assert "NaN cases included" in [o for o in r.obligations if o.name == "value"][0].note
    # max of nothing has no value: without the condition the right side is not defined
    r = verify.prove_equal(lhs, rhs)
    assert _obligations(r)["rhs_defined"] == REFUTED
    assert "J >= 1 is false" in str(r.counterexample)
    r = verify.prove_equal(lhs, sf.max(C, axis=1), when="J >= 1 and K >= 1")
    assert r.status == REFUTED and r.counterexample.replay()


def test_a_side_ill_formed_for_some_sizes_is_refuted_with_those_sizes():
    # (A + B)[::2] against A[::2] + B[1::2]: the right side's operands agree in length only
    # for even N; written as functions, the sides are traced and that is a refutation
    r = verify.prove_equal(lambda A, B: (A + B)[::2], lambda A, B: A[::2] + B[1::2],
                           A=("N",), B=("N",))
    assert r.status == REFUTED
    bad = [o.name for o in r.obligations if o.status == REFUTED]
    assert bad[0] == "rhs_defined"  # (and, where it is read past its end, rhs_bounds, value)
    cx = r.counterexample
    assert cx.sizes == {"N": 1} and cx.replay()  # shrunk to the smallest odd size
    assert "rhs_defined fails: (N + 1) // 2 == " in str(cx) and "is false (1 vs 0)" in str(cx)


def test_int64_sums_over_a_concat_are_proved():
    Ai = sf.symbol("Ai", shape=("I", "J"), dtype="int64")
    Bi = sf.symbol("Bi", shape=("I", "K"), dtype="int64")
    r = verify.prove_equal(sf.sum(sf.concat([Ai, Bi], axis=1), axis=1),
                           sf.sum(Ai, axis=1) + sf.sum(Bi, axis=1))
    assert r.status == PROVED


def test_bounded_and_unknown_results_are_never_called_proved():
    r = verify.prove_equal(A.reshape(-1).reshape("I", "J"), A, rlimit=1)
    assert r.status in (BOUNDED, UNKNOWN)
    hard = [o for o in r.obligations if o.status != PROVED]
    assert hard and all(o.status in (BOUNDED, UNKNOWN) for o in hard)
    assert all(o.bound == 8 for o in hard if o.status == BOUNDED)
    assert "proved" not in str(r).splitlines()[0]


def test_smt2_dump_is_an_smt_lib_query():
    text = verify.smt2(sf.concat([A, B], axis=1)[:, :"J"], A)
    assert "(declare-fun A (Int Int) Real)" in text and "(check-sat)" in text
    assert "(assert" in text

"""Rules as data: the catalog is proved, the deliberately wrong rules are refuted at their
expected obligation with counterexamples that replay, and rules carry their grids.

Oracles: for every catalog rule, both sides evaluated by the interpreter on random concrete
sizes and data must agree (a second check of "proved" that does not use Z3); for every wrong
rule, the printed regression test must fail when executed.
"""

from __future__ import annotations

import inspect
import random

import numpy as np
import pytest

from sparsefold.interp import evaluate
from sparsefold.spec.errors import IllFormedProgram, SparsefoldError
from sparsefold.verify import RULES, WRONG_RULES, get_rule, prove_rule
from sparsefold.verify.conditions import parse_condition
from sparsefold.verify.obligations import py_eval
from sparsefold.verify.programs import input_nodes, substitute_program, symbols_of
from sparsefold.verify.results import PROVED, PROVED_REAL, REFUTED
from sparsefold.verify.rules import rule

FAMILIES = ["slice_slice", "collapse_collapse", "split_split", "split_collapse",
            "collapse_split", "transpose_transpose", "permute_permute", "slice_concat_first",
            "concat_adjacent", "map_concat", "map_slice", "map_reshape", "map_transpose",
            "sum_concat_axis", "sum_broadcast", "broadcast_broadcast", "squeeze_expand",
            "pad_slice"]


def test_catalog_size_and_families():
    names = [r.name for r in RULES]
    assert len(names) >= 25 and len(set(names)) == len(names)
    assert set(FAMILIES) <= set(names)
    assert len(WRONG_RULES) >= 10
    assert all(r.expect == REFUTED and r.fails for r in WRONG_RULES)


def test_every_rule_is_one_line_of_data_with_its_math_above_it():
    source = inspect.getsource(__import__("sparsefold.spec.catalog", fromlist=["x"]))
    lines = source.splitlines()
    for r in RULES:
        at = next(n for n, line in enumerate(lines) if f'rule("{r.name}"' in line)
        assert lines[at - 1].lstrip().startswith("#"), r.name


@pytest.mark.parametrize("r", RULES, ids=lambda r: r.name)
def test_catalog_rule_is_proved(r):
    # exactly, or — for float sums and products, which the rule says — in real arithmetic
    report = prove_rule(r)
    assert report.status == r.expect and r.expect in (PROVED, PROVED_REAL), str(report)
    assert report.as_expected, str(report)


def _concrete_check(inst, seed: int) -> bool | None:
    """Evaluate both sides on random small sizes satisfying the assumptions; None when the
    draw does not satisfy them."""
    rng = random.Random(seed)
    names = sorted(symbols_of(inst.lhs) | symbols_of(inst.rhs))
    env = {n: rng.randint(0, 4) for n in names}
    try:
        if inst.when is not None and not py_eval(inst.when, env):
            return None
        lhs = substitute_program(inst.lhs, env)
        rhs = substitute_program(inst.rhs, env)
    except (SparsefoldError, ZeroDivisionError):
        return None
    data = {}
    drng = np.random.default_rng(seed)
    for name, node in (input_nodes(lhs) | input_nodes(rhs)).items():
        shape = tuple(int(s.value) for s in node.shape)
        data[name] = drng.integers(-9, 10, shape).astype(node.dtype)
    try:
        left = evaluate(lhs, data)
    except SparsefoldError:
        return None
    right = evaluate(rhs, data)
    return left.shape == right.shape and left.dtype == right.dtype and np.array_equal(
        left, right, equal_nan=left.dtype.kind == "f")


@pytest.mark.parametrize("r", RULES, ids=lambda r: r.name)
def test_catalog_rule_holds_on_random_concrete_instances(r):
    checked = 0
    for inst in r.instances()[:4]:
        for seed in range(100):
            ok = _concrete_check(inst, seed)
            if ok is not None:
                assert ok, (inst.label, seed)
                checked += 1
                if checked % 8 == 0:
                    break
    assert checked >= 8, r.name


@pytest.mark.parametrize("r", WRONG_RULES, ids=lambda r: r.name)
def test_wrong_rule_is_refuted_where_expected(r):
    report = prove_rule(r)
    assert report.status == REFUTED and report.as_expected, str(report)
    for result in report.results:
        failing = [o for o in result.obligations if o.name == r.fails]
        assert failing and failing[0].status == REFUTED
        cx = failing[0].counterexample
        assert cx.replay(), str(cx)


@pytest.mark.parametrize("r", WRONG_RULES, ids=lambda r: r.name)
def test_wrong_rule_counterexample_prints_a_failing_regression_test(r):
    cx = prove_rule(r).counterexample
    namespace: dict = {}
    exec(cx.as_test("test_it"), namespace)
    with pytest.raises((AssertionError, SparsefoldError)):
        namespace["test_it"]()


def test_a_wrong_rule_that_is_actually_right_is_not_as_expected():
    """The wrong-rule check can fail: a correct rule declared wrong is caught."""
    r = rule("not_really_wrong", lambda x: x.T.T, lambda x: x, expect=REFUTED, fails="value",
             x=("I", "J"))
    report = prove_rule(r)
    assert report.status == PROVED and not report.as_expected


def test_grid_rules_have_one_instance_per_point():
    r = get_rule("permute_permute")
    insts = r.instances()
    assert len(insts) == 36 and insts[1].label == "permute_permute[P=(0, 1, 2), Q=(0, 2, 1)]"
    assert get_rule("slice_slice_steps").grid[0] == {"r": 1, "s": 2}
    with pytest.raises(KeyError, match="no rule named"):
        get_rule("nonexistent")


def test_parse_condition():
    e = parse_condition("a <= b <= c and not min(J, K) > 3")
    assert py_eval(e, {"a": 1, "b": 2, "c": 2, "J": 9, "K": 3}) == 1
    assert py_eval(e, {"a": 1, "b": 2, "c": 1, "J": 9, "K": 3}) == 0
    with pytest.raises(IllFormedProgram, match="not an expression"):
        parse_condition("a <=")
    with pytest.raises(IllFormedProgram, match="unsupported syntax 'f\\(a\\)'"):
        parse_condition("f(a) > 0")

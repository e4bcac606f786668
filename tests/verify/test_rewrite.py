"""``verify.rewrite``: the optimizer pass applies proved rule instances only, and optimized
programs interpret equal to the originals.

Oracles: the reference interpreter on the original program, and NumPy on the same data for
the hand-written cases; random programs (Hypothesis, built from rule-shaped motifs so that
rewrites actually fire) on random int64 data.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import sparsefold as sf
from sparsefold.spec.rules import rule as spec_rule
from sparsefold.verify import WRONG_RULES, rewrite
from sparsefold.verify.rewrite import Rewrite

RNG = np.random.default_rng(7)
V = RNG.integers(-9, 10, 12).astype(np.int64)
W = RNG.integers(-9, 10, 12).astype(np.int64)
M = RNG.integers(-9, 10, (3, 4)).astype(np.int64)
P = RNG.integers(-9, 10, (3, 5)).astype(np.int64)

CASES = {
    "slice_slice": (lambda: sf.asarray(V)[2:9][1:5], lambda: V[2:9][1:5]),
    "slice_slice_steps[r=2, s=3]": (lambda: sf.asarray(V)[::2][::3], lambda: V[::2][::3]),
    "reverse_reverse": (lambda: sf.asarray(V)[::-1][::-1], lambda: V),
    "concat_split_point": (lambda: (lambda x: sf.concat([x[:5], x[5:]]))(sf.asarray(V)),
                           lambda: V),
    "sum_concat_axis": (lambda: sf.sum(sf.concat([sf.asarray(M), sf.asarray(P)], axis=1),
                                       axis=1),
                        lambda: np.concatenate([M, P], axis=1).sum(axis=1)),
    "slice_concat_axis1": (lambda: sf.concat([sf.asarray(M), sf.asarray(P)], axis=1)[:, :4],
                           lambda: M),
    "transpose_transpose": (lambda: sf.asarray(M).T.T, lambda: M),
    "pad_slice": (lambda: sf.pad(sf.asarray(V), (2, 3))[2:14], lambda: V),
    "split_collapse": (lambda: sf.asarray(M).reshape(12).reshape(3, 4), lambda: M),
    "map_slice[r=2]": (lambda: (sf.asarray(V) + sf.asarray(W))[1:10:2],
                       lambda: (V + W)[1:10:2]),
}


@pytest.mark.parametrize("name", list(CASES))
def test_a_rule_fires_and_the_result_is_unchanged(name):
    build, numpy = CASES[name]
    program = build()
    log: list[Rewrite] = []
    optimized = rewrite(program, log=log)
    assert name in [r.rule for r in log]
    got = optimized.interpret()
    assert np.array_equal(got, program.interpret()) and np.array_equal(got, numpy())
    assert got.dtype == program.dtype


def test_rewrite_shrinks_programs():
    program = CASES["reverse_reverse"][0]()
    assert rewrite(program).node == sf.asarray(V).node.__class__(
        program.node.arg.arg.name, program.node.arg.arg.shape, program.node.arg.arg.dtype,
        program.node.arg.arg.format)


def test_sum_rules_are_applied_to_int64_only():
    Mf, Pf = sf.asarray(M.astype(np.float64)), sf.asarray(P.astype(np.float64))
    program = sf.sum(sf.concat([Mf, Pf], axis=1), axis=1)
    log: list[Rewrite] = []
    rewrite(program, log=log)
    assert not any(r.rule.startswith("sum_") for r in log)


def test_rules_with_conditions_apply_only_where_the_condition_holds():
    x = sf.asarray(V)
    y = sf.asarray(W)
    inside, across = sf.concat([x, y])[2:7], sf.concat([x, y])[10:15]
    log: list[Rewrite] = []
    rewrite(inside, log=log)
    assert [r.rule for r in log] == ["slice_concat_first"]
    log.clear()
    out = rewrite(across, log=log)
    assert not any(r.rule == "slice_concat_first" for r in log)
    assert np.array_equal(out.interpret(), np.concatenate([V, W])[10:15])


def test_unproved_rules_are_never_applied():
    """Wrong rules are refuted, so the pass ignores them even when asked to use them."""
    # spec.rules.rule: the wrong rules' sides are written over spec nodes
    as_optimizing = [spec_rule(r.name + "_opt", r.lhs, r.rhs, r.when, dtype=r.dtype,
                          grid=list(r.grid), **dict(r.arrays)) for r in WRONG_RULES]
    program = sf.asarray(M).reshape(12)  # matches wrong_collapse_order's left-hand side
    log: list[Rewrite] = []
    out = rewrite(program, rules=as_optimizing, log=log)
    assert log == [] and out.node == program.node


# --- random programs ----------------------------------------------------------------------

def _motif(draw, x):
    """One rule-shaped step (or plain noise) applied to a 1-d int64 program ``x``."""
    n = x.shape[0]
    kind = draw(st.sampled_from(["slice2", "steps", "reverse", "split", "concat_slice",
                                 "map", "pad", "sum_concat", "reshape", "noise"]))
    i = draw(st.integers(0, n))
    j = draw(st.integers(0, n + 2))
    if kind == "slice2":
        return x[i:j][draw(st.integers(0, 3)):draw(st.integers(0, 6))]
    if kind == "steps":
        return x[::draw(st.integers(1, 3))][::draw(st.integers(1, 3))]
    if kind == "reverse":
        return x[::-1][::-1]
    if kind == "split":
        return sf.concat([x[:i], x[i:]])
    if kind == "concat_slice":
        y = x * 2
        return sf.concat([x, y])[i:j]
    if kind == "map":
        return (x + x * 3)[i:j:draw(st.sampled_from([1, 2, -1]))]
    if kind == "pad":
        a, b = draw(st.integers(0, 3)), draw(st.integers(0, 3))
        return sf.pad(x, (a, b))[a:a + n]
    if kind == "sum_concat" and n >= 2:
        m = x[: n - n % 2].reshape(2, -1)
        return sf.sum(sf.concat([m, m * 3], axis=1), axis=1)
    if kind == "reshape" and n >= 4 and n % 2 == 0:
        return x.reshape(2, n // 2).reshape(n)
    return x + 1


@st.composite
def programs(draw):
    data = np.asarray(draw(st.lists(st.integers(-9, 9), min_size=0, max_size=12)),
                      dtype=np.int64)
    x = sf.asarray(data)
    for _ in range(draw(st.integers(1, 4))):
        x = _motif(draw, x)
        if x.ndim != 1:
            x = x.reshape(-1)
    return x


@settings(max_examples=60)
@given(programs())
def test_optimized_programs_interpret_equal_to_the_originals(program):
    log: list[Rewrite] = []
    optimized = rewrite(program, log=log)
    want = program.interpret()
    got = optimized.interpret()
    assert got.shape == want.shape and got.dtype == want.dtype
    assert np.array_equal(got, want), [r.rule for r in log]

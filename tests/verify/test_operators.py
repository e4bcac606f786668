"""Proofs of the operator entries: every built-in entry's obligations, the order property the
compiler asks for, wrong entries refuted, and everything cross-checked without Z3.

Oracles, independent of Z3: brute-force enumeration of the maps on small concrete sizes
(exact Python integers), and the reference interpreter's gather (``out[forward(i)]`` must be
``operand[i]``); for the order property, the list in the issue (which operators preserve
row-major order and which do not).
"""

from __future__ import annotations

import dataclasses
import itertools
import random
import re

import numpy as np
import pytest

import sparsefold as sf
from sparsefold.interp import evaluate
from sparsefold.spec import SHAPE_OPERATORS
from sparsefold.spec import sizes as sz
from sparsefold.spec.compute import symbolic_input
from sparsefold.spec.errors import IllFormedProgram, SparsefoldError
from sparsefold.spec.ir import Piece
from sparsefold.spec.ops_concat import Concat
from sparsefold.spec.ops_reshape import Collapse
from sparsefold.verify import operators as ops
from sparsefold.verify import order_preserving, prove_operator
from sparsefold.verify.counterexample import IndexCounterexample
from sparsefold.verify.obligations import py_eval
from sparsefold.verify.programs import substitute_program, symbols_of
from sparsefold.verify.results import PROVED, REFUTED


def _sample_sizes(node, count=12, top=3, seed=0):
    """Deterministic small assignments of the node's size symbols that satisfy requires."""
    names = sorted(symbols_of(node))
    rng = random.Random(seed)
    seen, out = set(), []
    for _ in range(count * 6):
        env = {n: rng.randint(0, top) for n in names}
        key = tuple(sorted(env.items()))
        if key in seen:
            continue
        seen.add(key)
        try:
            if py_eval(node.index_map().requires, env):
                out.append(env)
        except ZeroDivisionError:
            continue
        if len(out) == count:
            break
    return out


def _box(shape, env):
    return itertools.product(*(range(py_eval(n, env)) for n in shape))


def _forward_images(piece, out_shape, env, i):
    """All output coordinates operand coordinate ``i`` maps to (free axes: every value)."""
    e = dict(env) | {f"_i{d}": c for d, c in enumerate(i)}
    if not py_eval(piece.forward_guard, e):
        return []
    axes = [range(py_eval(out_shape[d], env)) if f is None else [py_eval(f, e)]
            for d, f in enumerate(piece.forward)]
    return list(itertools.product(*axes))


def brute_check(node, env):
    """The map obligations and the order property on concrete sizes, by enumeration.
    Returns (violations of obligations, order preserved?)."""
    im = node.index_map()
    bad, images = [], []
    for p in im.pieces:
        S = im.in_shapes[p.operand]
        mine = []
        for i in _box(S, env):
            for k in _forward_images(p, im.out_shape, env, i):
                if not all(0 <= c < py_eval(n, env) for c, n in zip(k, im.out_shape)):
                    bad.append(("forward_bounds", i, k))
                    continue
                ke = dict(env) | {f"_k{d}": c for d, c in enumerate(k)}
                if not py_eval(p.guard, ke) or tuple(py_eval(b, ke) for b in p.backward) != i:
                    bad.append(("backward_forward", i, k))
                mine.append((i, k))
        images.append(mine)
        for k in _box(im.out_shape, env):
            ke = dict(env) | {f"_k{d}": c for d, c in enumerate(k)}
            if py_eval(p.guard, ke):
                i = tuple(py_eval(b, ke) for b in p.backward)
                if not all(0 <= c < py_eval(n, env) for c, n in zip(i, S)):
                    bad.append(("backward_bounds", k, i))
    ordered = True
    for mine in images:
        for (i, k), (j, m) in itertools.product(mine, mine):
            if i < j and not k < m:
                ordered = False
    flat = [[k for _, k in mine] for mine in images]
    for a, b in zip(flat, flat[1:]):
        if a and b and not max(a) < min(b):
            ordered = False
    return bad, ordered


def _interpreter_agrees(node, env):
    """The interpreter's gather and the forward maps describe the same data movement."""
    concrete = substitute_program(node, env)
    inputs = {}
    for n, o in enumerate(concrete.operands()):
        shape = tuple(sz.const_value(s) for s in o.shape)
        inputs[o.name] = (np.arange(int(np.prod(shape)), dtype=np.float64)
                          + 1000 * (n + 1)).reshape(shape)
    out = evaluate(concrete, inputs)
    im = concrete.index_map()
    for p in im.pieces:
        src = inputs[concrete.operands()[p.operand].name]
        for i in _box(im.in_shapes[p.operand], {}):
            for k in _forward_images(p, im.out_shape, {}, i):
                assert out[k] == src[i], (node, env, i, k)


# --- every built-in entry, a few configurations each (the CLI test proves them all) ----------

@pytest.mark.parametrize("name", list(SHAPE_OPERATORS))
def test_builtin_entry_is_proved_on_its_first_configurations(name):
    configs = ops.configurations(name)
    assert configs, name
    for node in configs[:: max(1, len(configs) // 4)]:
        result = ops.prove_instance(node)
        assert result.status == PROVED, str(result)
        assert {o.name.split("[")[0] for o in result.obligations} >= {
            "sizes", "backward_bounds", "forward_bounds", "backward_forward",
            "forward_backward", "divisions", "magnitude"}
        # built-in maps stay within the largest size + 8: int32 indices up to 2^31 - 9
        assert [o.note for o in result.obligations if o.name == "magnitude"] == [""]


@pytest.mark.parametrize("name", list(SHAPE_OPERATORS))
def test_proved_maps_hold_by_enumeration_and_match_the_interpreter(name):
    for node in ops.configurations(name)[::3]:
        result = ops.prove_instance(node)
        order_proved = all(p.status == PROVED for p in result.properties)
        for env in _sample_sizes(node, count=6):
            bad, ordered = brute_check(node, env)
            assert not bad, (ops.describe(node), env, bad[:3])
            if order_proved:
                assert ordered, (ops.describe(node), env)
            _interpreter_agrees(node, env)
        if not order_proved:
            refuted = [p for p in result.properties if p.status == REFUTED]
            assert refuted and all(p.counterexample.replay() for p in refuted)


def test_rank_four_collapse_needs_the_staged_proof_and_gets_it():
    node = Collapse(symbolic_input("X", "N0", "N1", "N2", "N3"), 0, 4)
    result = ops.prove_instance(node, with_properties=False)
    assert result.status == PROVED
    methods = {o.name: o.method for o in result.obligations}
    assert methods["backward_forward[0]"] == "staged"


def test_concat_guards_partition_the_output():
    node = Concat((symbolic_input("X", "M0", "N1"), symbolic_input("Y", "M1", "N1"),
                   symbolic_input("Z", "M2", "N1")), 0)
    result = ops.prove_instance(node, with_properties=False)
    assert {o.name: o.status for o in result.obligations}["disjoint"] == PROVED
    assert {o.name: o.status for o in result.obligations}["cover"] == PROVED


# --- order preservation: the property the compiler reads ---------------------------------------

def _a(*shape):
    return sf.asarray(np.zeros(shape))


PRESERVING = {
    "collapse": lambda: _a(3, 4, 5).reshape(12, 5),
    "split": lambda: _a(12).reshape(3, 4),
    "slice step 2": lambda: _a(9)[1:8:2],
    "slice 2-d": lambda: _a(5, 6)[1:, ::3],
    "concat axis 0": lambda: sf.concat([_a(2, 3), _a(4, 3)], axis=0),
    "pad": lambda: sf.pad(_a(3, 4), 1),
    "expand_dims": lambda: sf.expand_dims(_a(3, 4), axis=1),
    "squeeze": lambda: sf.squeeze(_a(3, 1, 4), 1),
    "index": lambda: _a(3, 4)[1],
    "broadcast in place": lambda: sf.broadcast_to(_a(3, 1), (3, 5)),
}
NOT_PRESERVING = {
    "negative step": lambda: _a(9)[::-1],
    "negative step -2": lambda: _a(9)[7:1:-2],
    "transpose": lambda: _a(3, 4).T,
    "permute": lambda: sf.permute_dims(_a(2, 3, 4), (0, 2, 1)),
    "concat axis 1": lambda: sf.concat([_a(3, 2), _a(3, 4)], axis=1),
    "broadcast leading": lambda: sf.broadcast_to(_a(4), (3, 4)),
}


@pytest.mark.parametrize("case", list(PRESERVING))
def test_order_preserving_operators(case):
    assert order_preserving(PRESERVING[case]().node) is True


@pytest.mark.parametrize("case", list(NOT_PRESERVING))
def test_operators_that_do_not_preserve_order(case):
    node = NOT_PRESERVING[case]().node
    assert order_preserving(node) is False
    status, outcomes = ops.order_status(node)
    assert status == REFUTED
    cx = next(o.counterexample for o in outcomes if o.status == REFUTED)
    assert isinstance(cx, IndexCounterexample) and cx.replay()


def test_order_answers_are_cached_per_structure_not_per_size():
    ops._order_result.cache_clear()
    assert order_preserving(_a(3, 4, 5).reshape(12, 5).node)
    assert order_preserving(_a(6, 7, 2).reshape(42, 2).node)
    info = ops._order_result.cache_info()
    assert info.misses == 1 and info.hits == 1
    # negative constants are structure (a bound counted from the end), not a size
    assert ops.abstract_instance(_a(9)[-3:].node) != ops.abstract_instance(_a(9)[3:].node)


def test_abstract_instance_keeps_splits_well_formed():
    node = _a(12, 5).reshape(3, 4, 5).node
    abstract = ops.abstract_instance(node)
    assert type(abstract) is type(node)
    assert all(not sz.is_const(n) for n in abstract.shape)


# --- wrong entries are refuted -----------------------------------------------------------------

@dataclasses.dataclass(frozen=True, slots=True, eq=False, repr=False)
class ConcatOffByOne(Concat):
    """Concat whose second piece starts one place late (a bug on purpose)."""

    def pieces(self, shapes):
        good = Concat.pieces(self, shapes)
        a = self.axis
        p = good[1]
        shift = lambda e, d: sz.add(e, d)  # noqa: E731
        back = p.backward[:a] + (shift(p.backward[a], -1),) + p.backward[a + 1:]
        fwd = p.forward[:a] + (shift(p.forward[a], 1),) + p.forward[a + 1:]
        return (good[0], Piece(p.operand, p.guard, back, p.forward_guard, fwd)) + good[2:]


@dataclasses.dataclass(frozen=True, slots=True, eq=False, repr=False)
class CollapseColumnMajor(Collapse):
    """A 2-axis collapse whose backward map reads column-major (a bug on purpose)."""

    def pieces(self, shapes):
        (p,) = Collapse.pieces(self, shapes)
        (s,) = shapes
        k = sz.Sym("_k0")
        n0 = s[0]
        return (Piece(0, p.guard, (sz.mod(k, n0), sz.floordiv(k, n0)), p.forward_guard,
                      p.forward),)


def test_an_off_by_one_concat_is_refuted_with_a_counterexample_that_replays():
    node = ConcatOffByOne((symbolic_input("X", "M0"), symbolic_input("Y", "M1")), 0)
    report = prove_operator(node)
    assert report.status == REFUTED
    failed = {o.name for o in report.obligations if o.status == REFUTED}
    assert {"backward_bounds[1]", "forward_bounds[1]"} <= failed
    cx = report.counterexample
    assert cx.replay()
    assert "fails at sizes={" in str(cx) and "coords={" in str(cx)
    assert cx.interpret() is not None  # the interpreter disagrees with the maps, or fails
    # the regression test it prints fails on the wrong entry
    namespace = {"ConcatOffByOne": ConcatOffByOne}
    code = re.sub(r"\n\s*from \S+ import ConcatOffByOne", "", cx.as_test("test_regression"))
    exec(code, namespace)
    with pytest.raises(AssertionError):
        namespace["test_regression"]()


def test_a_column_major_collapse_is_refuted_at_the_round_trips():
    node = CollapseColumnMajor(symbolic_input("X", "N0", "N1"), 0, 2)
    report = prove_operator(node)
    failed = {o.name for o in report.obligations if o.status == REFUTED}
    assert "backward_forward[0]" in failed and "forward_backward[0]" in failed
    assert all(o.counterexample.replay() for o in report.obligations if o.status == REFUTED)


def test_prove_operator_rejects_unknown_names_and_non_operators():
    with pytest.raises(IllFormedProgram, match="unknown shape operator 'flatten'"):
        prove_operator("flatten")
    with pytest.raises(IllFormedProgram, match="expected an operator name"):
        prove_operator(42)


def test_configurations_cover_the_discrete_structure_the_issue_lists():
    slices = ops.configurations("slice")
    steps = {t[2] for n in slices for t in n.slices}
    assert {1, -1, 2, -2, 3, -3} <= steps
    assert {len(n.args) for n in ops.configurations("concat")} == {2, 3}
    assert {n.ndim for n in ops.configurations("collapse")} >= {1, 2, 3}
    assert max(n.arg.ndim for n in ops.configurations("collapse")) == 4
    pads = ops.configurations("pad")
    assert all(not sz.is_const(w) or sz.const_value(w) == 0 for n in pads
               for pair in n.widths for w in pair)


def test_configurations_are_well_formed_nodes():
    for name in SHAPE_OPERATORS:
        for node in ops.configurations(name):
            try:
                node.index_map()
            except SparsefoldError as exc:  # pragma: no cover - would be a bug here
                pytest.fail(f"{name}: {exc}")

"""User-defined shape operators (issue part 8, proof half): a new ``ShapeOp`` subclass is
interpreted by the generic interpreter and proved by ``prove_operator`` with no other code;
a wrong definition is refuted with a counterexample. The operators are defined in
``user_ops.py`` (shared with ``test_differential.py``, which compiles them).

Oracles: NumPy's own ``np.flip``, ``np.roll`` and ``np.diagonal`` on the same data.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import sparsefold as sf
from sparsefold.lazy import LazyArray
from sparsefold.spec import sizes as sz
from sparsefold.spec.compute import Input
from sparsefold.spec.errors import InvalidData
from sparsefold.verify import order_preserving, prove_operator
from sparsefold.verify.results import PROVED, REFUTED

sys.path.insert(0, str(Path(__file__).resolve().parent))
from user_ops import Diagonal, Flip, Roll, WrongRoll  # noqa: E402


def _sym(shape, name="X"):
    return Input(name, tuple(sz.as_expr(n) for n in shape), "float64", "dense")


# --- interpreted with no other code ---------------------------------------------------------

@pytest.mark.parametrize("shape", [(0,), (1,), (5,), (3, 4), (2, 0, 3)])
def test_flip_interprets_like_numpy(shape):
    data = np.arange(int(np.prod(shape)), dtype=np.float64).reshape(shape)
    x = sf.asarray(data)
    for axis in range(len(shape)):
        got = LazyArray(Flip(x.node, axis), x.bindings).interpret()
        assert np.array_equal(got, np.flip(data, axis))


@pytest.mark.parametrize("n,shift", [(1, 0), (1, 1), (5, 0), (5, 2), (5, 5), (6, 4)])
def test_roll_interprets_like_numpy(n, shift):
    data = np.arange(n * 3, dtype=np.float64).reshape(n, 3)
    x = sf.asarray(data)
    got = LazyArray(Roll(x.node, sz.as_expr(shift), 0), x.bindings).interpret()
    assert np.array_equal(got, np.roll(data, shift, axis=0))


def test_roll_precondition_is_checked_on_the_data():
    x = sf.symbol("x", ("N",))
    program = LazyArray(Roll(x.node, sz.Sym("N") * 2, 0))  # shift 2N > N unless N == 0
    with pytest.raises(InvalidData, match="precondition on sizes"):
        program.interpret(x=np.zeros(3))


@pytest.mark.parametrize("n", [0, 1, 4])
def test_diagonal_interprets_like_numpy(n):
    data = np.arange(n * n, dtype=np.float64).reshape(n, n)
    x = sf.asarray(data)
    got = LazyArray(Diagonal(x.node), x.bindings).interpret()
    assert np.array_equal(got, np.diagonal(data))


# --- proved by prove_operator -------------------------------------------------------------------

def test_flip_roll_and_diagonal_are_proved():
    report = prove_operator([Flip(_sym(("N0", "N1")), 0), Flip(_sym(("N0", "N1")), 1)])
    assert report.status == PROVED and len(report.obligations) == 16
    report = prove_operator([Roll(_sym(("N0",)), sz.Sym("S"), 0),
                             Roll(_sym(("N0", "N1")), sz.Sym("S"), 1)])
    assert report.status == PROVED
    # roll computes k + n before the remainder: only the weaker index bound holds
    notes = {o.note for o in report.obligations if o.name == "magnitude"}
    assert notes == {"only |intermediate| <= 2*M + 8: int32 indices need sizes <= 1073741819"}
    assert prove_operator(Diagonal(_sym(("N", "N")))).status == PROVED


def test_order_preservation_of_user_operators_is_proved_not_declared():
    x = sf.asarray(np.zeros((4, 4)))
    assert order_preserving(Diagonal(x.node)) is True
    assert order_preserving(Flip(x.node, 1)) is False
    assert order_preserving(Roll(x.node, sz.as_expr(1), 0)) is False
    # 0 and 1 are structure, not sizes (abstraction keeps them): a roll by 0 is the identity
    assert order_preserving(Roll(x.node, sz.as_expr(0), 0)) is True


def test_a_wrong_roll_is_refuted_with_a_counterexample_that_replays():
    report = prove_operator(WrongRoll(_sym(("N0",)), sz.Sym("S"), 0))
    assert report.status == REFUTED
    failed = {o.name for o in report.obligations if o.status == REFUTED}
    assert failed == {"backward_forward[0]", "forward_backward[0]"}
    cx = report.counterexample
    assert cx.replay()
    assert cx.values["N0"] >= 3 or cx.values["S"] not in (0, cx.values["N0"])
    # through the interpreter: the data does not land where the forward map says
    assert cx.interpret().startswith("the interpreter puts")
    # NumPy agrees that the wrong roll is wrong at those sizes
    n, s = cx.values["N0"], cx.values["S"]
    data = np.arange(n, dtype=np.float64)
    x = sf.asarray(data)
    got = LazyArray(WrongRoll(x.node, sz.as_expr(s), 0), x.bindings).interpret()
    assert not np.array_equal(got, np.roll(data, s))

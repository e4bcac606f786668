"""The reference interpreter itself: size binding, densifying, the contraction shortcut, and
that shape operators run through their entries (a new operator needs no interpreter code)."""

from dataclasses import dataclass

import numpy as np
import pytest
import scipy.sparse as sp
import sparse

import sparsefold as sf
from sparsefold.interp import bind_sizes, densify, evaluate
from sparsefold.interp.evaluate import eval_reduce_plain
from sparsefold.spec import sizes as sz
from sparsefold.spec.compute import Input, Map, Reduce
from sparsefold.spec.errors import InvalidData
from sparsefold.spec.functions import get_function
from sparsefold.spec.ir import Node, Piece, ShapeOp
from sparsefold.spec.ops_axes import ExpandDims


def test_densify_every_container():
    d = np.arange(6.0).reshape(2, 3)
    for value in (d, sp.csr_array(d), sp.csc_matrix(d), sp.coo_array(d),
                  sparse.COO.from_numpy(d), sparse.GCXS.from_numpy(d)):
        assert np.array_equal(densify(value), d)
    with pytest.raises(InvalidData, match="expected a NumPy"):
        densify(object())


def test_sizes_are_bound_from_the_arrays_and_must_agree():
    a = Input("A", ("I", "J"), np.float64, "dense")
    b = Input("B", ("J",), np.float64, "dense")
    prog = Map(get_function("add"), (a, b))
    assert bind_sizes(prog, {"A": np.zeros((2, 3)), "B": np.zeros(3)}) == {"I": 2, "J": 3}
    with pytest.raises(InvalidData, match="size J is 3 elsewhere but 4"):
        bind_sizes(prog, {"A": np.zeros((2, 3)), "B": np.zeros(4)})
    with pytest.raises(InvalidData, match="no array was given for input 'B'"):
        bind_sizes(prog, {"A": np.zeros((2, 3))})
    with pytest.raises(InvalidData, match="expected dtype float64, found int64"):
        bind_sizes(prog, {"A": np.zeros((2, 3), int), "B": np.zeros(3)})


@pytest.mark.parametrize("dtype", [np.float64, np.int64, np.bool_])
def test_contraction_shortcut_equals_the_definition(dtype):
    """sum(multiply(a, b)) runs through einsum; it must equal summing the materialized
    product (the definition), here on exact values."""
    rng = np.random.default_rng(1)
    x = rng.integers(0, 3, (4, 5)).astype(dtype)
    y = rng.integers(0, 3, (5, 3)).astype(dtype)
    a = Input("a", (4, 5), dtype, "dense")
    b = Input("b", (5, 3), dtype, "dense")
    prod = Map(get_function("multiply"), (ExpandDims(a, 2), ExpandDims(b, 0)))
    node = Reduce(prod, (1,), "sum", prod.dtype)
    got = evaluate(node, {"a": x, "b": y})
    want = eval_reduce_plain(node, [x[:, :, None], y[None, :, :]])
    assert got.dtype == want.dtype and np.array_equal(got, want)


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Reverse(ShapeOp):
    """A 1-d reversal defined only by its entry: out[k] = arg[n - 1 - k]."""

    arg: Node

    def operands(self):
        return (self.arg,)

    def shape_rule(self, shapes):
        return shapes[0]

    def pieces(self, shapes):
        (n,) = shapes[0]
        k, i = sz.Sym("_k0"), sz.Sym("_i0")
        return (Piece(0, sz.TRUE, (n - 1 - k,), sz.TRUE, (n - 1 - i,)),)


def test_a_new_shape_operator_runs_through_its_entry():
    x = np.arange(5.0)
    node = Reverse(Input("x", ("N",), np.float64, "dense"))
    assert np.array_equal(evaluate(node, {"x": x}), x[::-1])


def test_lazy_interpret_binds_symbols_by_name():
    A = sf.symbol("A", shape=("I", "J"))
    y = (A * 2).sum(axis=1)
    d = np.arange(6.0).reshape(2, 3)
    assert np.array_equal(y.interpret(A=d), (d * 2).sum(axis=1))

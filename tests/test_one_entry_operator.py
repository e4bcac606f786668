"""A new shape operator is one entry and no other code (DESIGN §1, issue #10).

This file defines ``Flip`` — ``np.flip`` — as one ``ShapeOp`` subclass: its shape rule and
index maps, the configurations the verifier proves it on, its example for the language
reference and its random-program row. Nothing outside this file knows about it. Registered
in ``spec.SHAPE_OPERATORS`` (one line, ``registered`` below), it is

* interpreted by the reference interpreter (oracle: ``np.flip``);
* compiled by ``sf.jit`` into a sparse stream kernel, with csr, csc, coo and dense outputs
  from csr and csc inputs (oracle: ``np.flip``; containers: the ``storage.results`` rules);
* proved by Z3 over its own configurations, also by name and from ``sparsefold prove``;
* documented by the generated language reference;
* differential-tested, on its own and inside random programs drawn with its own row.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings

import sparsefold as sf
from sparsefold import verify
from sparsefold.cli import main
from sparsefold.spec import SHAPE_OPERATORS, docgen
from sparsefold.spec import sizes as sz
from sparsefold.spec.compute import symbolic_input
from sparsefold.spec.ir import Node, Piece, RandomRow, ShapeOp, normalize_axis
from sparsefold.storage.results import result_container
from sparsefold.verify.random_programs import operator_table
from sparsefold.verify.results import PROVED
from sparsefold.verify.strategies import sparse_arrays


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Flip(ShapeOp):
    """``np.flip(arg, axis)``: coordinate ``c`` on ``axis`` reads ``n - 1 - c``."""

    arg: Node
    axis: int

    def operands(self):
        return (self.arg,)

    def check(self, shapes):
        normalize_axis(self.axis, len(shapes[0]), what="flip axis")

    def shape_rule(self, shapes):
        return shapes[0]

    def pieces(self, shapes):
        (s,) = shapes
        a = normalize_axis(self.axis, len(s))
        k, i = sz.out_coords(len(s)), sz.in_coords(len(s))
        back = k[:a] + (sz.sub(sz.sub(s[a], 1), k[a]),) + k[a + 1:]
        fwd = i[:a] + (sz.sub(sz.sub(s[a], 1), i[a]),) + i[a + 1:]
        return (Piece(0, sz.TRUE, back, sz.TRUE, fwd),)

    @classmethod
    def configurations(cls):
        for r in range(1, 4):
            for a in range(r):
                yield Flip(symbolic_input("X", *(f"N{d}" for d in range(r))), a)

    @classmethod
    def examples(cls):
        return [("flip(A, axis=1)  with A: (I, J)", Flip(symbolic_input("A", "I", "J"), 1))]

    @classmethod
    def random_row(cls):
        return RandomRow(
            "flip", lambda shape, limits: 1 <= len(shape) <= limits.max_dims,
            lambda draw, st, shape, limits: {"axis": draw(st.integers(-len(shape),
                                                                      len(shape) - 1))},
            lambda x, axis: Flip(x, axis), "flip({0}, axis={axis})")


def flip(x, axis: int = 0) -> sf.LazyArray:
    """As a user exposes it."""
    return sf.apply_operator(Flip, x, axis=axis)


@pytest.fixture
def registered(monkeypatch):
    monkeypatch.setitem(SHAPE_OPERATORS, "flip", Flip)


A = np.array([[0, 1, 0, 2, 0],
              [0, 0, 0, 0, 0],
              [3, 0, 4, 0, 5],
              [0, 6, 0, 0, 7]], dtype=np.float64)


def _dense(x) -> np.ndarray:
    return x if isinstance(x, np.ndarray) else x.toarray()


# --- interpreted -------------------------------------------------------------------------------

@pytest.mark.parametrize("shape", [(0,), (1,), (5,), (3, 4), (2, 0, 3), (2, 3, 2)])
def test_interpreted_like_numpy(shape):
    data = np.arange(int(np.prod(shape)), dtype=np.float64).reshape(shape)
    for axis in range(-len(shape), len(shape)):
        got = flip(sf.asarray(data), axis).interpret()
        np.testing.assert_array_equal(got, np.flip(data, axis), strict=True)


# --- compiled ----------------------------------------------------------------------------------

@pytest.mark.cython
@pytest.mark.parametrize("fmt,out", [("csr", "csr"), ("csr", "coo"), ("csr", "dense"),
                                     ("csc", "csc")])
def test_compiled_in_every_output_format(fmt, out):
    a = sp.coo_array(A).asformat(fmt)
    for axis in (0, 1):
        got = sf.jit(lambda x, axis=axis: flip(x, axis), out=out)(a)
        np.testing.assert_array_equal(_dense(got), np.flip(A, axis))
        name, _ = result_container(out, 2, "scipy")
        assert type(got).__name__ == name.split(".")[-1]


@pytest.mark.cython
def test_compiled_as_a_sparse_stream_kernel(capsys):
    text = sf.show(lambda x: flip(x, 1), sp.csr_array(A), out="csr")
    assert "Strategy: stream" in text and "flip(%0, axis=1)" in text


# --- proved ------------------------------------------------------------------------------------

def test_proved_over_its_own_configurations():
    report = verify.prove_operator(Flip)
    assert report.status == PROVED
    assert len(report.instances) == len(list(Flip.configurations())) == 6
    # order is proved, not declared: flipping the last axis breaks row-major order
    x = sf.asarray(A).node
    assert verify.order_preserving(Flip(x, 1)) is False


def test_proved_by_name_and_by_sparsefold_prove(registered, capsys):
    assert verify.prove_operator("flip").status == PROVED
    assert main(["prove", "--only", "operator flip"]) == 0
    out = capsys.readouterr().out
    assert "operator flip" in out and "1 passed, 0 failed" in out


# --- documented --------------------------------------------------------------------------------

def test_documented_by_the_generated_reference(registered):
    text = docgen.render()
    assert "### `flip` (Flip)" in text
    assert "*Example:* `flip(A, axis=1)  with A: (I, J)`" in text
    assert "J - 1 - _k1" in text.split("### `flip` (Flip)")[1]


# --- differential tests ------------------------------------------------------------------------

@pytest.mark.cython
def test_differential_on_random_data():
    verify.differential(lambda x: flip(x, 1), sparse_arrays((4, 5), "csr"),
                        out=["csr", "dense"], settings=settings(max_examples=10,
                                                                deadline=None))


def _mentions_flip(program) -> bool:
    return "flip(" in program.source


@pytest.mark.cython
def test_differential_in_random_programs_drawn_with_its_row(registered):
    table = operator_table()  # the registered entry's own row is in it
    assert "flip" in table
    mix = {name: table[name] for name in ("flip", "slice", "reshape", "binary", "reduce")}
    seen = []

    @settings(max_examples=10, deadline=None)
    @given(verify.programs(operators=mix, max_leaves=2))
    def check(p):
        seen.append(_mentions_flip(p))
        verify.differential(p, *p.inputs, out=p.out)

    check()
    assert sum(seen) >= 3, "random programs should use the new operator"

"""sparsefold.aot_registry: when a program the JIT traced is a declared generic program."""

from __future__ import annotations

import numpy as np
import pytest

import sparsefold as sf
from sparsefold import aot
from sparsefold.aot_registry import _implied, unify
from sparsefold.lazy import LazyArray
from sparsefold.spec import sizes as sz
from sparsefold.spec.compute import Input


def _jit_program(fn, *shapes, fmt="csr", scalars=()):
    """The program sf.jit traces for arrays of these shapes (plus scalar arguments)."""
    import scipy.sparse as sp
    args = [sp.random_array(s, density=0.5, format=fmt, rng=0) for s in shapes]
    return sf.jit(fn).program_for(*args, *scalars)[0]


def _generic(fn, sig):
    return aot.trace_generic(aot.export(sig)(fn), sig)


HSTACK = aot.signature(aot.csr("float64"), aot.csr("float64"))


def test_a_jit_trace_is_the_generic_program_under_a_substitution():
    g, _, requires, _ = _generic(lambda a, b: sf.hstack([a, b]), HSTACK)
    p = _jit_program(lambda a, b: sf.hstack([a, b]), (5, 3), (5, 4))
    sigma = unify(g, p)
    assert sigma == {"d0_0": sz.Sym("n0"), "d0_1": sz.Sym("n1"), "d1_0": sz.Sym("n0"),
                     "d1_1": sz.Sym("n2")}
    assert requires == (sz.eq(sz.Sym("d0_0"), sz.Sym("d1_0")),)
    assert _implied(requires, sigma, ())  # n0 == n0


@pytest.mark.parametrize("shapes", [((5, 3), (5, 3)), ((3, 3), (3, 4)), ((1, 3), (1, 4)),
                                    ((0, 3), (0, 0))])
def test_size_patterns_and_sizes_zero_and_one_match(shapes):
    g, _, _, _ = _generic(lambda a, b: sf.hstack([a, b]), HSTACK)
    assert unify(g, _jit_program(lambda a, b: sf.hstack([a, b]), *shapes)) is not None


def test_a_trace_that_depends_on_a_size_being_one_does_not_match():
    sig = aot.signature(aot.csr("float64"))
    g, _, _, _ = _generic(lambda a: sf.squeeze(a) if 1 in a.shape else a * 2, sig)
    p = _jit_program(lambda a: sf.squeeze(a) if 1 in a.shape else a * 2, (1, 4))
    assert unify(g, p) is None


def test_other_operations_dtypes_formats_and_literals_do_not_match():
    g, _, _, _ = _generic(lambda a, b: sf.hstack([a, b]), HSTACK)
    assert unify(g, _jit_program(lambda a, b: sf.vstack([a, b]), (5, 3), (5, 3))) is None
    assert unify(g, _jit_program(lambda a, b: sf.hstack([a, b]), (5, 3), (5, 4),
                                 fmt="csc")) is None
    scaled, _, _, _ = _generic(lambda a: a * 2.0, aot.signature(aot.csr("float64")))
    assert unify(scaled, _jit_program(lambda a: a * 2.0, (3, 3))) is not None
    assert unify(scaled, _jit_program(lambda a: a * 3.0, (3, 3))) is None
    assert unify(scaled, _jit_program(lambda a: a * 2, (3, 3))) is None  # int literal


ROWS = aot.signature(aot.csr("float64"), aot.size("start"), aot.size("stop"))


@pytest.mark.parametrize("key, start, stop", [
    ((2, 7), 2, 7), ((None, 4), 0, 4), ((3, None), 3, "n0"), ((0, 100), 0, 100)])
def test_slice_bounds_bind_size_parameters(key, start, stop):
    g, _, _, params = _generic(lambda a, s, e: a[s:e], ROWS)
    assert params == ("start", "stop")
    p = _jit_program(lambda a: a[key[0]:key[1]], (9, 4))
    sigma = unify(g, p)
    assert sigma is not None
    assert sigma["start"] == sz.as_expr(start) and sigma["stop"] == sz.as_expr(stop)


@pytest.mark.parametrize("key", [(-3, None), (None, -1), (2, 8, 2), (None, None, -1)])
def test_negative_bounds_and_other_steps_do_not_match(key):
    g, _, _, _ = _generic(lambda a, s, e: a[s:e], ROWS)
    p = _jit_program(lambda a: a[slice(*key)], (9, 4))
    assert unify(g, p) is None


def test_preconditions_must_follow_from_the_traced_program():
    # G needs d0_1 == d1_0; a trace with those sizes unrelated does not give it
    a = LazyArray(Input("a0", (sz.Sym("p"), sz.Sym("q")), np.float64, "csr"))
    x = LazyArray(Input("a1", (sz.Sym("q"),), np.float64, "dense"))
    g, _, requires, _ = _generic(lambda a, x: a @ x, aot.signature(aot.csr("float64"),
                                                                    aot.dense("float64")))
    p = (a @ x).node
    sigma = unify(g, p)
    assert sigma is not None and _implied(requires, sigma, ())
    assert not _implied(requires, {**sigma, "d1_0": sz.Sym("r")}, ())
    assert _implied(requires, {**sigma, "d1_0": sz.Sym("r")},
                    (sz.eq(sz.Sym("q"), sz.Sym("r")),))

"""Partitioned lattices (``compiler/plan/lattice.py``: :func:`partitioned`): when every operand
matters only where its whole lattice point is present, a co-iteration meets each point by a
tight merge of its own (``lower_coiter._meet_points``) and steps over an operand's entries
where the rest of its point is absent. The analysis must say no wherever an operand's value
is read elsewhere too — an operand used twice, a union below an intersection — and the
kernels must equal NumPy on patterns where operands overlap partly (entries of one point's
operand inside another point's region)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

import sparsefold as sf
from sparsefold.compiler.plan.lattice import build
from sparsefold.lazy import canonical
from sparsefold.spec.compute import Input
from sparsefold.spec.printer import topological

pytestmark = pytest.mark.cython


def _mat(seed, density=0.35, shape=(23, 31)):
    rng = np.random.default_rng(seed)
    dense = np.where(rng.random(shape) < density, rng.integers(-4, 5, shape), 0)
    return dense.astype(np.float64)


DENSE = [_mat(s) for s in range(4)]
X = np.random.default_rng(9).random((23, 31))  # a dense (located) operand

PROGRAMS = {  # name: (fn over a, b, c, d, x; partitioned?)
    "mul_add": (lambda a, b, c, d, x: a * b + c, True),
    "two_products": (lambda a, b, c, d, x: a * b + c * d, True),
    "three_way_product_plus": (lambda a, b, c, d, x: a * b * c - d, True),
    "product_plus_two": (lambda a, b, c, d, x: a * b + c - d, True),
    "scaled_product_plus": (lambda a, b, c, d, x: a * b * x + c, True),
    "max_of_product_and_operand": (lambda a, b, c, d, x: sf.maximum(a * b, c), True),
    "product_alone": (lambda a, b, c, d, x: a * b, True),
    "union_only": (lambda a, b, c, d, x: a + b + c, False),
    "union_below_product": (lambda a, b, c, d, x: (a + b) * c, False),
    "operand_in_two_products": (lambda a, b, c, d, x: a * b + a * c, False),
    "max_times_minus": (lambda a, b, c, d, x: sf.maximum(a, b) * c - a, False),
    "dense_valued": (lambda a, b, c, d, x: a * b + x, False),
}


def _lattice(lazy):
    program, _ = canonical(lazy)
    leaves = [n for n in topological(program) if isinstance(n, Input) and
              not n.format.is_dense]
    return build(program, {n: k for k, n in enumerate(leaves)})


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_the_analysis(name):
    fn, expected = PROGRAMS[name]
    lazies = [sf.asarray(sp.csr_array(m)) for m in DENSE]
    lat = _lattice(fn(*lazies, sf.asarray(X)))
    assert lat.partitioned is expected


def test_an_operand_used_twice_is_not_partitioned():
    """``c`` is ``a`` (the same node): a * b + a has the single point {a}, which does not
    cover b — and a * b + a * c reads a in two terms."""
    a, b, c = (sf.asarray(sp.csr_array(m)) for m in DENSE[:3])
    assert not _lattice(a * b + a).partitioned
    assert not _lattice(sf.maximum(a, b) * a - a).partitioned
    assert _lattice(a * b + c).partitioned


@pytest.mark.parametrize("fmt,out", [("csr", "csr"), ("coo", "csr"), ("csc", "csr"),
                                     ("coo", "coo")])  # coo -> coo: the flat merge
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_kernels_equal_numpy(name, fmt, out):
    fn, _ = PROGRAMS[name]
    args = [sp.csr_array(m).asformat(fmt) for m in DENSE] + [X]
    out = "dense" if name == "dense_valued" else out
    got = sf.jit(fn, out=out)(*args)
    got = got if isinstance(got, np.ndarray) else got.toarray()
    expected = fn(*DENSE, X) if name not in ("max_of_product_and_operand", "max_times_minus") \
        else _numpy(name)
    np.testing.assert_array_equal(got, expected)


def _numpy(name):
    a, b, c, d = DENSE
    if name == "max_of_product_and_operand":
        return np.maximum(a * b, c)
    return np.maximum(a, b) * c - a


def test_a_point_met_inside_another_points_region():
    """Rows where a's entries sit under c's, b's under c's, and a and b meet only at some:
    the tight merge of {a, b} steps over a's and b's lone entries, and c is visited at every
    one of its keys whether {a, b} is met there or not."""
    a = np.zeros((3, 12))
    b = np.zeros((3, 12))
    c = np.zeros((3, 12))
    a[0, [0, 2, 4, 6, 8]] = [1, 2, 3, 4, 5]
    b[0, [1, 2, 5, 6, 11]] = [10, 20, 30, 40, 50]
    c[0, [0, 1, 2, 3, 11]] = [7, 7, 7, 7, 7]
    a[1, [3]] = 9           # a alone: nothing
    c[2, [0, 5, 9]] = 1     # c alone
    b[2, [5, 9, 10]] = 2
    a[2, [9, 10, 11]] = 3
    for fmt in ("csr", "coo"):
        args = [sp.csr_array(m).asformat(fmt) for m in (a, b, c)]
        got = sf.jit(lambda x, y, z: x * y + z, out="csr")(*args)
        np.testing.assert_array_equal(got.toarray(), a * b + c)
        assert got.has_sorted_indices
        np.testing.assert_array_equal(got.indptr, sp.csr_array(a * b + c).indptr)
        flat = sf.jit(lambda x, y, z: x * y + z, out="coo")(*args)
        np.testing.assert_array_equal(flat.toarray(), a * b + c)

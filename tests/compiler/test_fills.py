"""Fill values through the compiler (issue 16 item 7): the merge lattice follows the
operands' fills (``compiler/plan/lattice.py``), and compiled kernels agree with the interpreter
over pydata COO/GCXS arrays with random fills, n-ary expressions, reductions and shape
operators (Hypothesis)."""

import numpy as np
import pytest
import sparse
from hypothesis import given, settings
from hypothesis import strategies as st

import sparsefold as sf
from sparsefold.compiler.plan.lattice import build
from sparsefold.jit import compile_program
from sparsefold.lazy import canonical
from sparsefold.spec.compute import Input
from sparsefold.spec.printer import topological

pytestmark = pytest.mark.cython

FILLS = (0.0, 2.0, -2.0, 0.5, np.nan)


def _filled(dense_values, keep, fill, kind):
    dense = np.where(keep, dense_values, fill)
    coo = sparse.COO.from_numpy(dense, fill_value=fill)
    return sparse.GCXS.from_coo(coo, compressed_axes=(0,)) if kind == "gcxs" else coo


def _lattice(lazy):
    program, _ = canonical(lazy)
    leaves = [n for n in topological(program) if isinstance(n, Input)]
    return build(program, {n: k for k, n in enumerate(leaves)}), [n.name for n in leaves]


def _arr(fill, seed=0):
    rng = np.random.default_rng(seed)
    return sf.asarray(_filled(rng.integers(1, 5, (4, 3)).astype(float),
                              rng.random((4, 3)) < 0.5, fill, "coo"))


def test_annihilation_uses_the_fills():
    """x (fill 2) * y (fill 0): 0 wherever y is implicit, so only y is iterated; with
    both fills non-zero the product is dense-valued."""
    lat, names = _lattice(_arr(2.0, 1) * _arr(0.0, 2))
    assert not lat.universe and lat.describe(names) == "a2"
    lat, _ = _lattice(_arr(2.0, 1) * _arr(3.0, 2))
    assert lat.universe


def test_union_when_the_fills_cancel():
    """x (fill 2) + z (fill -2) is 0 where both are implicit: a union of their storage,
    not every coordinate; (y + 1) - 1 iterates y alone."""
    lat, names = _lattice(_arr(2.0, 1) + _arr(-2.0, 2))
    assert not lat.universe and len(lat.points) == 4  # present and stored of each
    lat, names = _lattice((_arr(0.0, 3) + 1) - 1)
    assert lat.describe(names) == "a0"
    lat, _ = _lattice(_arr(0.0, 3) + 1)
    assert lat.universe  # 1 where nothing is stored


def test_kernel_iterates_the_zero_filled_operand():
    x, y = _arr(2.0, 1), _arr(0.0, 2)
    program, values = canonical(x * y)
    source = compile_program(program, "coo").source_for(values)
    assert "co-iteration (flat) of a0, a1, a2 over a2" in source


_EXPRS = {
    "x * y": lambda x, y, z: x * y,
    "x + y": lambda x, y, z: x + y,
    "x * y + z": lambda x, y, z: x * y + z,
    "(x - z) * y": lambda x, y, z: (x - z) * y,
    "maximum(x, z) - y": lambda x, y, z: (np.maximum(x, z) if isinstance(x, np.ndarray)
                                          else sf.maximum(x, z)) - y,
}
_AFTER = {
    "none": lambda m, v: v,
    "sum0": lambda m, v: m.sum(v, axis=0),
    "max1": lambda m, v: m.max(v, axis=1),
    "sum": lambda m, v: m.sum(v),
    "T": lambda m, v: m.permute_dims(v, (1, 0)) if m is sf else v.T,
    "rows": lambda m, v: v[::2],
}


@st.composite
def _cases(draw):
    shape = (draw(st.integers(2, 6)), draw(st.integers(2, 6)))
    kind = draw(st.sampled_from(["coo", "gcxs"]))
    arrays = []
    for k in range(3):
        values = draw(st.lists(st.integers(-3, 3), min_size=shape[0] * shape[1],
                               max_size=shape[0] * shape[1]))
        keep = draw(st.lists(st.booleans(), min_size=len(values), max_size=len(values)))
        fill = draw(st.sampled_from(FILLS))
        arrays.append(_filled(np.array(values, float).reshape(shape),
                              np.array(keep).reshape(shape), fill, kind))
    expr = draw(st.sampled_from(sorted(_EXPRS)))
    after = draw(st.sampled_from(sorted(_AFTER)))
    out = draw(st.sampled_from([None, "coo", "dense"]))
    return arrays, expr, after, out


@settings(max_examples=15, deadline=None)
@given(_cases())
def test_compiled_agrees_with_interpreter_over_fills(case):
    arrays, expr, after, out = case
    lazies = [sf.asarray(a) for a in arrays]
    fn, then = _EXPRS[expr], _AFTER[after]
    with np.errstate(all="ignore"):
        try:
            lazy = then(sf, fn(*lazies))
        except sf.IllFormedProgram:
            return
        want = lazy.interpret()
        oracle = then(np, fn(*(np.asarray(a.todense()) for a in arrays)))
        np.testing.assert_allclose(want, oracle, rtol=1e-12, equal_nan=True)
        got = lazy.compute(out)
    if isinstance(got, np.ndarray):
        np.testing.assert_allclose(got, want, rtol=1e-12, equal_nan=True)
        return
    assert isinstance(got, sparse.SparseArray)
    np.testing.assert_allclose(np.asarray(got.todense()), want, rtol=1e-12, equal_nan=True)


def test_transpose_pushed_into_two_maps_keeps_both():
    """Regression (found by the test above): normalize pushed ``(m1 * m2).T`` into both
    maps' arguments through temporary views memoized by ``id``; a dead temporary's id was
    reused by the next, and ``m2`` came out as a copy of ``m1``. scipy inputs, no fill."""
    import scipy.sparse as sp
    mats = [sp.random(6, 6, density=0.4, random_state=s, format="coo") for s in range(3)]
    mask = sp.coo_array(mats[2] != 0)
    x, z, y, p = (sf.asarray(m) for m in (*mats, mask))
    lazy = ((x - z) * sf.where(p, y, np.float64(3.0))).T
    got = lazy.compute()
    np.testing.assert_array_equal(got.toarray() if hasattr(got, "toarray") else got,
                                  lazy.interpret())


def test_sum_of_a_filled_input_walks_its_storage():
    """sum over a filled input: the stored values summed over the storage, plus the fill
    once per implicit entry — no stage iterates the input's every coordinate."""
    a = sparse.COO.from_numpy(np.array([[1.0, 2, 2, 4], [2, 5, 2, 2], [2, 2, 2, 2]]),
                              fill_value=2.0)
    x = sf.asarray(a)
    for axis in (None, 0, 1):
        lazy = sf.sum(x, axis=axis)
        np.testing.assert_array_equal(lazy.compute(), np.sum(a.todense(), axis=axis))
    program, values = canonical(sf.sum(x, axis=0))
    source = compile_program(program, "dense").source_for(values)
    strategies = [line for line in source.splitlines() if line.startswith("# Strategy")]
    first_stages = " ".join(strategies[:-1])
    assert "every coordinate" not in first_stages and "a0 | a1" in first_stages

"""Gather kernels (compiler/run/gather.py) against the interpreter (the oracle) and NumPy.

Hypothesis draws the data, the index arrays (sorted, unsorted, with duplicates, negative,
empty) and boolean masks (all false, all true, random) for a few fixed program shapes, so
every example reuses the kernels of its format: a handful of builds, many examples.
"""

import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

import sparsefold as sf
from sparsefold.compiler.pipeline import Kernel
from sparsefold.lazy import canonical
from sparsefold.storage.levels import canonical_order
from sparsefold.verify.strategies import sparse_arrays

sys.path.insert(0, str(Path(__file__).resolve().parent))
from kernel_checks import check_result  # noqa: E402

pytestmark = pytest.mark.cython


def _index_arrays(n: int, kind: str):
    """Index arrays into an axis of size ``n`` of one ordering ``kind``."""
    if n == 0:
        return st.just(np.zeros(0, np.int64))
    base = st.lists(st.integers(-n, n - 1), max_size=8).map(lambda v: np.array(v, np.int64))
    if kind == "sorted":
        return st.lists(st.integers(0, n - 1), max_size=8, unique=True).map(
            lambda v: np.array(sorted(v), np.int64))
    if kind == "sorted_dups":
        return st.lists(st.integers(0, n - 1), max_size=8).map(
            lambda v: np.array(sorted(v), np.int64))
    return base  # unsorted, duplicates and negative indices


@st.composite
def _case(draw, fmt: str, ndim: int):
    shape = tuple(draw(st.integers(0 if d == 0 else 1, 5)) for d in range(ndim))
    a = draw(sparse_arrays(shape, fmt, "int64", max_nnz=12))
    axis = draw(st.integers(0, ndim - 1))
    kind = draw(st.sampled_from(["sorted", "sorted_dups", "unsorted"]))
    idx = draw(_index_arrays(shape[axis], kind))
    return a, axis, idx


def _check(y, out: str, library: str = "scipy"):
    check_result(y.compute(out=out), y.interpret(), out, library)


@pytest.mark.parametrize("fmt", ["csr", "csc", "coo"])
@settings(max_examples=20, deadline=None)
@given(data=st.data())
def test_gather_on_one_axis_matches_the_interpreter(fmt, data):
    a, axis, idx = data.draw(_case(fmt, 2))
    y = sf.take(a, idx, axis=axis)
    np.testing.assert_array_equal(y.interpret(), np.take(a.toarray(), idx, axis=axis))
    _check(y, fmt)


@settings(max_examples=20, deadline=None)
@given(data=st.data())
def test_gather_on_nd_coo_matches_the_interpreter(data):
    import sparse
    a, axis, idx = data.draw(_case("coo", 3))
    x = sparse.COO.from_scipy_sparse(a) if a.ndim == 2 else sparse.COO(a.coords, a.data,
                                                                         shape=a.shape)
    y = sf.take(x, idx, axis=axis)
    np.testing.assert_array_equal(y.interpret(), np.take(x.todense(), idx, axis=axis))
    _check(y, "coo", "pydata")


@pytest.mark.parametrize("fmt", ["csr", "csc", "coo"])
@settings(max_examples=15, deadline=None)
@given(data=st.data())
def test_boolean_masks(fmt, data):
    a = data.draw(sparse_arrays((data.draw(st.integers(1, 5)), 4), fmt, "int64", max_nnz=10))
    kind = data.draw(st.sampled_from(["none", "all", "some"]))
    n = a.shape[0]
    mask = {"none": np.zeros(n, bool), "all": np.ones(n, bool)}.get(
        kind, np.array(data.draw(st.lists(st.booleans(), min_size=n, max_size=n)), bool))
    y = sf.asarray(a)[mask]
    np.testing.assert_array_equal(y.interpret(), a.toarray()[mask])
    _check(y, fmt)
    full = a.toarray() != 0  # a 2-d mask: the nonzero pattern, a 1-d result
    z = sf.asarray(a)[full]
    np.testing.assert_array_equal(z.interpret(), a.toarray()[full])
    _check(z, "csr")


@pytest.mark.parametrize("key", [
    np.s_[[0, 2], [1, 1]], np.s_[[[0, 1], [2, 0]]], np.s_[:, [[3], [0]]],
    np.s_[np.array(-1), -2], np.s_[1, [0, 3, 3]], np.s_[[2, 0], 1:3],
], ids=str)
@pytest.mark.parametrize("fmt", ["csr", "csc", "coo"])
def test_mixed_keys(fmt, key):
    a = sp.random_array((3, 4), density=0.6, format=fmt, random_state=7)
    y = sf.asarray(a)[key]
    np.testing.assert_array_equal(y.interpret(), a.toarray()[key])
    out = "dense" if y.ndim == 0 else ("coo" if y.ndim > 2 else "csr")
    _check(y, out)


def test_fused_with_compute_and_traced_index():
    a = sp.random_array((30, 20), density=0.3, format="csr", random_state=1)
    b = sp.random_array((5, 20), density=0.5, format="csr", random_state=2)
    f = sf.jit(lambda x, i, y: x[i] * y + x[i])
    for idx in (np.array([3, 3, 0, 29, -1]), np.array([7, 1, 2, 2, 0])):
        got = f(a, idx, b)
        want = a.toarray()[idx] * b.toarray() + a.toarray()[idx]
        np.testing.assert_allclose(got.toarray(), want)


def test_out_of_range_is_an_index_error():
    a = sp.random_array((4, 3), density=0.5, format="csr", random_state=1)
    with pytest.raises(sf.IllFormedIndex, match="index 4 is out of bounds for axis 0 with "
                                               "size 4"):
        sf.asarray(a)[[0, 4]]
    f = sf.jit(lambda x, i: x[:, i])
    with pytest.raises(sf.InvalidIndex, match="index -4 is out of bounds for axis 1 with "
                                             "size 3"):
        f(a, np.array([0, -4]))
    with pytest.raises(IndexError):
        f(a, np.array([3]))


def _stage(y, out):
    """A gather at the root is the kernel's final stage: it assembles the result itself."""
    program, values = canonical(y)
    kernel = Kernel(program, out)
    assert not kernel.stages and kernel.strategy == "gather"
    return kernel.final, kernel.final(values)


def test_row_gather_keeps_order_without_a_reorder_and_says_so():
    a = sp.random_array((6, 5), density=0.5, format="csr", random_state=3)
    stage, res = _stage(sf.asarray(a)[np.array([5, 0, 0, 2])], "csr")
    assert "outer gather" in stage.header() and "REORDERED" not in stage.header()
    assert res.has_canonical_format
    np.testing.assert_array_equal(res.toarray(), a.toarray()[[5, 0, 0, 2]])


@pytest.mark.parametrize("idx", [[4, 0, 2], [0, 0, 3], [1, 2, 4]], ids=str)
def test_column_gather_states_the_reorder_and_is_canonical(idx):
    a = sp.random_array((6, 5), density=0.5, format="csr", random_state=3)
    stage, res = _stage(sf.asarray(a)[:, np.array(idx)], "csr")
    assert "counting inverse" in stage.header() and "REORDERED" in stage.header()
    rows = np.repeat(np.arange(6), np.diff(res.indptr))
    assert canonical_order([rows, res.indices])
    np.testing.assert_array_equal(res.toarray(), a.toarray()[:, idx])


@pytest.mark.parametrize("build", [
    lambda x: (x * 2)[[3, 0, 3]],          # the operand is computed by a stage first
    lambda x: x.T[:, [1, 0]],              # a transposed view
    lambda x: sf.abs(x[[2, 2], 1:]) + 1,   # gather, then a dense-valued map
], ids=["computed_operand", "transposed", "then_compute"])
def test_gather_inside_a_program(build):
    a = sp.random_array((4, 3), density=0.6, format="csr", random_state=5)
    y = build(sf.asarray(a))
    want = build(sf.asarray(a.toarray())).interpret()
    np.testing.assert_allclose(y.interpret(), want)
    for out in ("csr", "coo", "dense"):
        check_result(y.compute(out=out), want, out)


@pytest.mark.parametrize("empty", [1, 3000], ids=["counting_sort", "lexsort"])
def test_reorder_of_an_unsorted_column_gather(empty):
    """The reorder is a counting sort per mode, or lexsort when a mode (here the result's
    columns: ``empty`` of them read an empty column) is much larger than the entry count:
    both give the canonical result."""
    a = sp.csr_array(np.eye(3, 5)) * 3
    idx = np.r_[np.full(empty, 4), [2, 0, 1, 1, 0]]
    stage, res = _stage(sf.asarray(a)[:, idx], "csr")
    assert res.has_canonical_format
    rows = np.repeat(np.arange(3), np.diff(res.indptr))
    assert canonical_order([rows, res.indices])
    np.testing.assert_array_equal(res.toarray(), a.toarray()[:, idx])


def test_dense_operand_stays_dense():
    x = np.arange(12.0).reshape(3, 4)
    y = sf.asarray(x)[[2, 0], 1:]
    np.testing.assert_array_equal(y.compute(out="dense"), x[[2, 0], 1:])


def test_ahead_of_time_refuses_a_gather_clearly():
    from sparsefold.compiler.aot import kernel_variants
    a = sp.random_array((4, 3), density=0.5, format="csr", random_state=1)
    program, _ = canonical(sf.asarray(a)[[1, 0]])
    with pytest.raises(sf.IllFormedProgram, match="ahead-of-time kernels of integer-array "
                                                  "indexing"):
        kernel_variants(Kernel(program, "csr"), {"a0": "int32"})


@pytest.mark.parametrize("view", ["ravel", "row"])
def test_a_gather_from_an_axis_far_longer_than_its_entries_allocates_no_axis(view):
    """take from a flattened 2048^3 array (8.6e9 coordinates, 10^4 entries): the per-axis
    counters of the outer and inner gathers would allocate the axis (64 GiB; found by the
    program generator's scale check); such a gather is argsort + searchsorted instead."""
    import sparse
    rng = np.random.default_rng(0)
    shape = (2048,) * 3
    lin = rng.choice(2048 ** 3, 10_000, replace=False)
    x = sparse.COO(np.array(np.unravel_index(lin, shape)), rng.random(10_000), shape=shape)
    idx = np.array([int(lin[3]), 7, int(lin[3]), 2 ** 33 - 1])
    stored = np.ravel_multi_index(x.coords, shape)
    value = x.data[np.flatnonzero(stored == lin[3])[0]]
    assert 7 not in stored and 2 ** 33 - 1 not in stored
    if view == "ravel":
        got = sf.jit(lambda a: sf.take(a.ravel(), idx, axis=0), out="coo")(x)
        flat = np.zeros(4)
        flat[[0, 2]] = value
        np.testing.assert_array_equal(got.todense(), flat)
    else:
        got = sf.jit(lambda a: sf.take(a.reshape((1, -1)), idx, axis=1), out="coo")(x)
        assert got.shape == (1, 4) and got.nnz == 2
        np.testing.assert_array_equal(got.todense()[0, [0, 2]], [value] * 2)


@pytest.mark.parametrize("out", ["csc", "coo", None], ids=["csc", "coo", "temporary"])
def test_gather_of_a_float16_temporary(out):
    """A float16 temporary is stored as float32 and read back through a cast (scipy holds
    no float16); a gather of it reads the stored temporary and casts what it gathered
    (found by `sparsefold fuzz --programs 20 --seed 501`: the stage refused its operand)."""
    import sparse
    a = sparse.COO(np.array([[0], [0]]), np.array([True]), shape=(2, 4))
    b = sparse.COO(np.array([[0, 1, 2, 3]]), np.array([True, False, True, False]),
                   shape=(4,))
    rows, cols = np.array([0, 0, 1, 0]), np.array([1, -4, -4, -2])

    def f(x, y):
        g = sf.vstack([sf.unstack(x, axis=0)[0], sf.round(y)])[rows, cols]
        return g if out is not None else g * 2

    want = np.vstack([a.todense()[0], np.round(b.todense()).astype(np.float16)])[rows, cols]
    want = want if out is not None else want * 2
    got = sf.jit(f, out=out or "dense")(a, b)
    assert got.dtype == np.float16
    np.testing.assert_array_equal(got if isinstance(got, np.ndarray) else got.todense(), want)

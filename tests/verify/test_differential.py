"""Differential testing as a library (issue #4 part 7) and user-defined operators compiled
with no other code (part 8, compile half).

* **The harness catches what it promises.** Wrong compiled results are produced by wrapping
  ``JitFunction.__call__`` (values, unsorted/duplicated/out-of-range storage, wrong
  container, dtype, shape, exceptions, modified inputs); ``storage_problems`` is checked on
  hand-built scipy / pydata storage. A strategy-driven failure shrinks to one stored entry.
* **Random programs** (``verify.strategies.programs``): generated source rebuilds the same
  IR and interprets (cheap, many examples); compiled == interpreted on a capped number of
  programs (each new structure builds a kernel, ~1 s).
* **User operators** ``Flip``, ``Roll``, ``Diagonal`` (``user_ops.py``) applied with
  ``sf.apply_operator`` and compiled by ``sf.jit`` over csr/csc/coo/dense inputs and several
  out formats, against the interpreter *and* NumPy (``np.flip``, ``np.roll``,
  ``np.diagonal``); a wrong roll is caught because its two maps disagree.

Regression tests pin the four compiler bugs these tests found: a 0-d dense input in a stream
kernel, duplicate COO entries with int32/bool values, the error class of a failing size
precondition (fixed in aef8d60), and two dense inputs of different dtypes in one kernel.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
import sparse as pydata
from hypothesis import HealthCheck, find, given, settings
from hypothesis import strategies as st

import sparsefold as sf
from sparsefold import verify
from sparsefold.jit import JitFunction
from sparsefold.spec import sizes as sz
from sparsefold.spec.ops_concat import Concat
from sparsefold.verify.differential import DifferentialError, storage_problems, tolerance
from sparsefold.verify.random_programs import OPERATORS, Operator, Program
from sparsefold.verify.strategies import dense_arrays, programs, shapes, sparse_arrays

sys.path.insert(0, str(Path(__file__).resolve().parent))
from user_ops import Flip, Roll, WrongRoll, diagonal, flip, roll  # noqa: E402

cython = pytest.mark.cython


def _cap(n: int) -> int:
    """At most ``n`` examples under the ci profile (each new program structure builds a
    kernel); a tenth of the profile's count under a larger one."""
    return max(n, settings.default.max_examples // 10)


# a fixed 4x4 input whose even rows hold two entries each (room to unsort / duplicate)
A = sp.csr_array(np.array([[1.0, 0, 2, 0], [0, 0, 0, 5], [0, 3, 0, 4], [6, 0, 0, 0]]))


def _halves(a):
    return a[::2] * 3


_COMPILED_CALL = JitFunction.__call__


def _corrupt(monkeypatch, change):
    """Make every compiled call return ``change(result, args)``."""
    def call(self, *args):
        return change(_COMPILED_CALL(self, *args), args)
    monkeypatch.setattr(JitFunction, "__call__", call)


def _edited(r, **arrays):
    r = r.copy()
    for name, edit in arrays.items():
        setattr(r, name, edit(getattr(r, name).copy()))
    return r


def _swap_first_two(v):
    v[[0, 1]] = v[[1, 0]]
    return v


def _repeat_first(v):
    v[1] = v[0]
    return v


# --- the harness -------------------------------------------------------------------------------

@cython
def test_a_correct_kernel_passes_for_every_out():
    verify.differential(_halves, A, out=["csr", "coo", "dense"])


@cython
@pytest.mark.parametrize("change,message", [
    (lambda r, a: _edited(r, data=lambda v: v + np.eye(1, v.size)[0]),
     "values differ at 1 of 8 coordinates (at (0, 0): compiled 4.0, interpreted 3.0)"),
    (lambda r, a: _edited(r, indices=_swap_first_two, data=_swap_first_two),
     "indices not strictly increasing within a segment (position 1: 2 then 0)"),
    (lambda r, a: _edited(r, indices=_repeat_first),
     "indices not strictly increasing within a segment (position 1: 0 then 0)"),
    (lambda r, a: _edited(r, indices=lambda v: v + 2), "indices outside [0, 4)"),
    (lambda r, a: _edited(r, indptr=lambda v: v - np.eye(1, v.size, v.size - 1, v.dtype)[0]),
     "indptr[-1]=3, 4 indices, 4 values: expected all equal"),
    (lambda r, a: r.tocoo(), "expected a csr_array result for out='csr' (2-d), found scipy "
                             "coo_array"),
    (lambda r, a: r.astype(np.float32), "dtype float32 != interpreted float64"),
    (lambda r, a: r[:1], "shape (1, 4) != interpreted (2, 4)"),
], ids=["values", "unsorted", "duplicate", "out_of_range", "indptr", "container", "dtype",
        "shape"])
def test_a_wrong_compiled_result_is_caught(monkeypatch, change, message):
    _corrupt(monkeypatch, change)
    with pytest.raises(DifferentialError) as info:
        verify.differential(_halves, A, out="csr")
    assert message in str(info.value)


@cython
def test_the_message_shows_program_inputs_and_both_results(monkeypatch):
    _corrupt(monkeypatch, lambda r, a: _edited(r, data=lambda v: -v))
    with pytest.raises(AssertionError) as info:  # DifferentialError is an AssertionError
        verify.differential(_halves, A, out="csr")
    text = str(info.value)
    expected = A.toarray()[::2] * 3  # NumPy's value of the program
    shown = np.array2string(expected).splitlines()  # printed indented, line by line
    for piece in ["function: _halves", "out: 'csr'", "program (as compiled, sizes symbolic):",
                  "input a0: float64[n0, n0] csr", "slice(%0", "inputs:", "compiled:",
                  "interpreted:\n    numpy float64 (2, 4)", *shown]:
        assert piece in text, piece


@cython
def test_a_kernel_that_raises_or_modifies_its_input_is_caught(monkeypatch):
    def boom(r, a):
        raise RuntimeError("boom")
    _corrupt(monkeypatch, boom)
    with pytest.raises(DifferentialError, match="the compiled kernel raised RuntimeError: boom"):
        verify.differential(_halves, A, out="csr")

    def scribble(r, args):
        args[0].data[0] = 99.0
        return r
    _corrupt(monkeypatch, scribble)
    with pytest.raises(DifferentialError, match="the compiled kernel modified its input 0"):
        verify.differential(_halves, A.copy(), out="csr")


@cython
def test_float_tolerance_allows_reassociation_only():
    assert tolerance("int64") is None and tolerance("bool") is None
    assert tolerance("float32") == (1e-4, 1e-4) and tolerance("float64") == (1e-9, 1e-9)
    # the exact sum is 2; summed left to right in float64 it is 1 (1e16 + 1 rounds to 1e16):
    # engines that order the sum differently must both pass, the error being relative to the
    # terms (1e16), not to the result
    x = np.array([1e16, 1.0, -1e16, 1.0])
    verify.differential(lambda v: sf.sum(v), x)
    verify.differential(lambda v: sf.sum(v[::-1]), x)


@cython
@pytest.mark.parametrize("delta,ok", [(1e-12, True), (1e-6, False)])
def test_float_results_compare_within_the_tolerance(monkeypatch, delta, ok):
    _corrupt(monkeypatch, lambda r, a: r * (1 + delta))
    x = np.arange(6.0).reshape(2, 3)
    if ok:
        verify.differential(lambda v: v * 2, x, out="dense")
    else:
        with pytest.raises(DifferentialError, match="values differ at 5 of 6"):
            verify.differential(lambda v: v * 2, x, out="dense")


@cython
@pytest.mark.parametrize("low,ok", [("float32", True), ("float64", False)])
def test_a_result_is_judged_at_the_loosest_dtype_it_was_computed_in(monkeypatch, low, ok):
    """float32 values cast to a float64 result carry float32's rounding: an ulp of float32
    passes there (NumPy's and the kernel's complex64 expm1 differ by one), not where the
    whole program is float64."""
    _corrupt(monkeypatch, lambda r, a: r * (1 + 1e-7))
    x = np.arange(1.0, 7.0).reshape(2, 3).astype(low)
    fn = lambda v: sf.astype(sf.expm1(v), "float64")  # noqa: E731
    if ok:
        verify.differential(fn, x, out="dense")
    else:
        with pytest.raises(DifferentialError, match="values differ"):
            verify.differential(fn, x, out="dense")


@cython
def test_integer_results_are_exact_and_nan_equals_nan(monkeypatch):
    num = np.array([[0.0, 1.0], [0.0, -2.0]])
    den = np.array([[0.0, 0.0], [1.0, 0.0]])  # 0/0 = nan, 1/0 = inf, -2/0 = -inf
    verify.differential(lambda a, b: a / b, num, den, out="dense")
    _corrupt(monkeypatch, lambda r, a: r + (r == r.max()))
    with pytest.raises(DifferentialError, match=r"at \(1, 2\): compiled 7, interpreted 6"):
        verify.differential(lambda v: v + 1, np.arange(6).reshape(2, 3), out="dense")


def _roll_too_far(v):
    return roll(v, 5, axis=0)  # Roll requires shift <= size: 5 > 3 for the data below


@cython
def test_a_result_where_the_interpreter_rejects_the_data_is_caught(monkeypatch):
    x = np.arange(3.0)
    with pytest.raises(sf.InvalidData, match="precondition on sizes"):
        _roll_too_far(sf.asarray(x)).interpret()
    monkeypatch.setattr(JitFunction, "__call__", lambda self, *args: np.zeros(3))
    with pytest.raises(DifferentialError, match="the interpreter rejected the data"):
        verify.differential(_roll_too_far, x)


@cython
def test_both_engines_rejecting_the_data_is_agreement():
    # found by this harness: the compiler called a failing size precondition IllFormedProgram
    verify.differential(_roll_too_far, np.arange(3.0))


def test_an_ill_formed_program_is_the_programs_fault():
    with pytest.raises(sf.IllFormedProgram, match="reshape"):
        verify.differential(lambda v: v.reshape(7), np.zeros(3))
    with pytest.raises(TypeError, match="fn must be callable"):
        verify.differential("not a function", np.zeros(3))


@cython
def test_strategies_run_a_hypothesis_test():
    calls = []

    def program(a, v):
        calls.append(1)
        return (a * 2) @ v
    rows = st.tuples(st.integers(2, 4), st.just(5))  # one size pattern: one kernel per out
    verify.differential(program, sparse_arrays(rows, "csc", "float64", canonical=False),
                        dense_arrays((5,), "float64"), out=st.sampled_from(["dense", "coo"]),
                        settings=settings(max_examples=_cap(10), deadline=None,
                                          database=None, derandomize=True))
    assert len(calls) >= 10  # one interpretation per example (plus the traces)


@cython
def test_a_strategy_failure_shrinks_to_one_stored_entry(monkeypatch):
    def wrong_if_stored(r, a):
        return _edited(r, data=lambda v: v + 1) if r.nnz else r
    _corrupt(monkeypatch, wrong_if_stored)
    with pytest.raises(DifferentialError) as info:
        verify.differential(lambda a: a.T, sparse_arrays((3, 6), "csr", "int64"), out="csr",
                            settings=settings(max_examples=_cap(20), deadline=None,
                                              database=None, derandomize=True))
    assert "nnz=1\n" in str(info.value)


# --- storage checks on hand-built arrays ------------------------------------------------------

def _csr(data, indices, indptr, shape):
    a = sp.csr_array((np.array(data, float), np.array(indices), np.array(indptr)), shape=shape)
    return a


def test_storage_problems_of_compressed_arrays():
    assert storage_problems(sp.csr_array(A), "csr") == []
    assert storage_problems(sp.csc_array(A), "csc") == []
    assert storage_problems(sp.csr_array(np.array([0.0, 2, 0, 3])), "csr") == []  # 1-d
    unsorted = _csr([1, 2], [2, 0], [0, 2, 2], (2, 3))
    assert storage_problems(unsorted, "csr") == [
        "indices not strictly increasing within a segment (position 1: 2 then 0): unsorted "
        "or duplicated"]
    assert storage_problems(unsorted, "csr", canonical=False) == []
    # a new row may start lower: [0, 2 | 1] is canonical
    assert storage_problems(_csr([1, 2, 3], [0, 2, 1], [0, 2, 3], (2, 3)), "csr") == []
    bad = _csr([1, 2], [0, 2], [0, 1, 2], (2, 3))
    bad.indptr = np.array([1, 1, 2], dtype=bad.indptr.dtype)
    assert "indptr[0] is 1, expected 0" in storage_problems(bad, "csr")
    bad.indptr = np.array([0, 2, 1], dtype=bad.indptr.dtype)
    assert "indptr decreases at 1" in storage_problems(bad, "csr")
    bad.indptr = np.array([0, 1], dtype=bad.indptr.dtype)
    assert storage_problems(bad, "csr") == ["indptr has 2 entries, expected 3"]


def test_storage_problems_of_coordinate_arrays():
    def coo(rows, cols, shape=(3, 3)):
        a = sp.coo_array((np.ones(len(rows)), (np.array(rows), np.array(cols))), shape=shape)
        return a
    assert storage_problems(coo([0, 0, 2], [1, 2, 0]), "coo") == []
    assert storage_problems(coo([0, 2, 0], [1, 0, 2]), "coo") == [
        "coordinates not in strictly increasing row-major order (entry 2: (2, 0) then "
        "(0, 2)): unsorted or duplicated"]
    assert "unsorted or duplicated" in storage_problems(coo([1, 1], [2, 2]), "coo")[0]
    far = coo([0, 1], [0, 1])
    far.coords = (far.coords[0], np.array([0, 3]))
    assert storage_problems(far, "coo") == ["coords[1] outside [0, 3)"]
    cube = sp.coo_array((np.ones(2), (np.array([0, 0]), np.array([1, 1]), np.array([2, 1]))),
                        shape=(2, 2, 3))
    assert "entry 1: (0, 1, 2) then (0, 1, 1)" in storage_problems(cube, "coo")[0]


def test_storage_problems_of_pydata_arrays():
    dense = np.array([[0.0, 1.0], [2.0, 0.0]])
    assert storage_problems(pydata.COO.from_numpy(dense), "coo") == []
    assert storage_problems(pydata.GCXS.from_numpy(dense, compressed_axes=(0,)), "csr") == []
    swapped = pydata.COO(np.array([[1, 0], [0, 1]]), np.array([2.0, 1.0]), shape=(2, 2),
                         sorted=True, has_duplicates=False)  # claims sorted, is not
    assert "unsorted or duplicated" in storage_problems(swapped, "coo")[0]


# --- the program strategy (no kernels) ----------------------------------------------------------

@given(programs())
def test_generated_programs_are_well_typed_and_print_as_their_source(p):
    xs = [sf.asarray(a) for a in p.inputs]
    built = p(*xs)
    rebuilt = eval(p.source, {"sf": sf})(*xs)  # the printed lambda is the program
    assert rebuilt.node == built.node
    assert built.shape == p.root.shape
    value = built.interpret()
    assert value.shape == tuple(built.shape)


def test_failures_shrink_to_small_programs():
    no_db = settings(database=None, max_examples=500, derandomize=True,
                     suppress_health_check=[HealthCheck.filter_too_much])
    p = find(programs(), lambda p: "sf.concat" in p.source, settings=no_db)
    # e.g. lambda x0, x1: sf.expand_dims(sf.concat([x0, x1], axis=0), axis=0)
    assert _operators(p.root) <= 2 and len(p.inputs) <= 2, p.source
    assert max(a.size for a in p.inputs) <= 2, p


def _operators(t) -> int:
    return (t.op != "input") + sum(_operators(a) for a in t.args)


def test_sparse_arrays_can_be_non_canonical_with_wide_indices():
    no_db = settings(database=None, max_examples=300, derandomize=True)
    strategy = sparse_arrays(shapes(2, 2, 4), "csr", "int32", canonical=False,
                             index_dtype="int64")
    a = find(strategy, _has_duplicates, settings=no_db)
    assert a.indices.dtype == np.int64 and a.indptr.dtype == np.int64
    assert not a.has_canonical_format

    @settings(max_examples=_cap(40))
    @given(sparse_arrays(shapes(1, 2, 4), "coo", "int32", canonical=False))
    def values_still_nonzero(a):
        # duplicates are split values: summed, every drawn position holds a non-zero
        positions = {tuple(int(c[k]) for c in a.coords) for k in range(a.nnz)}
        assert np.count_nonzero(a.toarray()) == len(positions)
    values_still_nonzero()


def _has_duplicates(a) -> bool:
    b = a.copy()
    b.sum_duplicates()
    return b.nnz < a.nnz


# --- random programs, compiled ------------------------------------------------------------------

@cython
@settings(max_examples=_cap(25))
@given(programs())
def test_random_programs_compile_like_they_interpret(p: Program):
    verify.differential(p, *p.inputs, out=p.out)


@cython
def test_regression_dense_leaves_of_two_dtypes():
    # found by the random programs: one `dv` variable was declared for every dense leaf
    verify.differential(lambda a, b: sf.concat([a, b]), np.ones(3), np.ones(2, np.float32),
                        out="csr")


@cython
@pytest.mark.parametrize("out", ["dense", "csr"])
def test_regression_zero_d_dense_input(out):
    # found by the random programs (shrunk to `lambda x0: x0[()]`): the stream kernel
    # skipped zeros with a `continue` outside any loop
    verify.differential(lambda a: a, np.array(3.0), out=out)
    verify.differential(lambda a: a.reshape((1, 1)), np.array(0.0), out=out)


@cython
@pytest.mark.parametrize("dtype", ["int32", "bool"])
def test_regression_noncanonical_coo_small_values(dtype):
    # found by the random programs: summing duplicates promoted int32/bool values to int64
    a = sp.coo_array((np.array([1, 1], dtype=dtype), (np.array([1, 1]), np.array([0, 0]))),
                     shape=(2, 2))
    verify.differential(lambda x: x, a, out="coo")


# --- user-defined operators, compiled (part 8) ---------------------------------------------------

def _inputs(fmt: str, shape, dtype="float64"):
    """A fixed array of ``shape`` with an empty row and column, in ``fmt``."""
    rng = np.random.default_rng(7)
    dense = rng.integers(-4, 5, size=shape).astype(dtype) * (rng.random(shape) < 0.5)
    dense[1, :] = 0
    dense[:, -1] = 0
    if fmt == "dense":
        return dense
    return {"csr": sp.csr_array, "csc": sp.csc_array, "coo": sp.coo_array}[fmt](dense)


FORMATS = ["csr", "csc", "coo", "dense"]
OUTS = ["csr", "csc", "coo", "dense"]

USER_CASES = {  # name: (program, NumPy oracle, input shape)
    "flip": (lambda x: flip(x, axis=0), lambda d: np.flip(d, 0), (5, 7)),
    "flip_cols": (lambda x: flip(x, axis=1), lambda d: np.flip(d, 1), (5, 7)),
    "roll": (lambda x: roll(x, 2, axis=0), lambda d: np.roll(d, 2, axis=0), (5, 7)),
    "roll_cols": (lambda x: roll(x, 3, axis=1), lambda d: np.roll(d, 3, axis=1), (5, 7)),
    "diagonal": (lambda x: diagonal(x), np.diagonal, (6, 6)),
}
# every input format with two out formats, every out format twice per operator family
GRID = [(name, fmt, (OUTS[i], OUTS[(i + 1 + j) % 4]))
        for j, name in enumerate(USER_CASES) for i, fmt in enumerate(FORMATS)
        if (name in ("flip", "roll")) == (fmt in ("csr", "coo")) or name == "diagonal"]


def _dense(r):
    return r if isinstance(r, np.ndarray) else r.toarray()


@cython
@pytest.mark.parametrize("name,fmt,outs", GRID, ids=[f"{n}-{f}" for n, f, _ in GRID])
def test_user_operators_compile_with_no_other_code(name, fmt, outs):
    program, oracle, shape = USER_CASES[name]
    x = _inputs(fmt, shape)
    verify.differential(program, x, out=list(outs))
    for out in outs:  # and NumPy agrees with the compiled result
        np.testing.assert_array_equal(_dense(sf.jit(program, out=out)(x)), oracle(_dense(x)))


@cython
def test_user_operators_over_random_data():
    # sizes from disjoint ranges: one size pattern, so one kernel per program and out
    rect = st.tuples(st.integers(2, 4), st.integers(5, 7))
    square = st.integers(2, 6).map(lambda n: (n, n))
    few = settings(max_examples=_cap(12), deadline=None)
    verify.differential(lambda x: flip(x, axis=1),
                        sparse_arrays(rect, "coo", "int64", canonical=False), out="csr",
                        settings=few)
    verify.differential(lambda x: roll(x, 1, axis=0) * 2,
                        sparse_arrays(rect, "csr", "float64", explicit_zeros=True), out="coo",
                        settings=few)
    verify.differential(lambda x: diagonal(x) + 1, sparse_arrays(square, "csc", "int32"),
                        out="dense", settings=few)


def _axis_row(build, src):
    return Operator(lambda s, lim: len(s) >= 1,
                    lambda draw, s, lim: {"axis": draw(st.integers(-len(s), len(s) - 1))},
                    build, src)


@st.composite
def _roll_params(draw, s, lim):
    axis = draw(st.integers(0, len(s) - 1))
    return {"axis": axis, "shift": draw(st.integers(0, s[axis]))}


USER_ROWS = {
    "flip": _axis_row(lambda x, axis: flip(x, axis=axis), "flip({0}, axis={axis})"),
    "roll": Operator(lambda s, lim: len(s) >= 1,
                     lambda draw, s, lim: draw(_roll_params(s, lim)),
                     lambda x, shift, axis: roll(x, shift, axis=axis),
                     "roll({0}, {shift}, axis={axis})"),
    "diagonal": Operator(lambda s, lim: len(s) == 2 and s[0] == s[1],
                         lambda draw, s, lim: {},
                         lambda x: diagonal(x), "diagonal({0})"),
}
MIXED = {**{k: OPERATORS[k] for k in ("slice", "reshape", "concat", "map", "reduce")},
         **USER_ROWS}


@cython
@settings(max_examples=_cap(10))
@given(programs(operators=MIXED))
def test_random_programs_with_user_operators(p: Program):
    verify.differential(p, *p.inputs, out=p.out)


@cython
def test_a_wrong_operator_is_caught_because_its_maps_disagree():
    # WrongRoll's backward map (what the interpreter reads) turns the other way than its
    # forward map (what stream kernels follow over a sparse input). The compiler relies on
    # the two being inverse, so the entry is proved before it is compiled: refuted, with the
    # sizes that show it, instead of a kernel that disagrees with the interpreter.
    x = sp.csr_array(np.array([1.0, 2.0, 3.0]))
    interpreted = sf.apply_operator(WrongRoll, sf.asarray(x), shift=1, axis=0).interpret()
    assert not np.array_equal(interpreted, np.roll(x.toarray(), 1))
    with pytest.raises(DifferentialError, match=r"IllFormedProgram: operator wrongroll is "
                                                r"wrong: its obligation backward_forward\[0\] "
                                                r"is refuted on wrongroll\(X0\(Z0,\)"):
        verify.differential(lambda v: sf.apply_operator(WrongRoll, v, shift=1, axis=0), x)


# --- sf.apply_operator (front end, no kernels) -----------------------------------------------

def test_apply_operator_builds_checks_and_binds():
    data = np.arange(12.0).reshape(3, 4)
    y = sf.apply_operator(Roll, data, shift=2, axis=1)  # a NumPy array is wrapped
    assert isinstance(y.node, Roll) and y.node.shift == sz.as_expr(2)  # int -> size
    np.testing.assert_array_equal(y.interpret(), np.roll(data, 2, axis=1))
    s = sf.apply_operator(Roll, sf.symbol("X", ("N",)), shift="S", axis=0)
    assert s.node.shift == sz.Sym("S")
    a, b = sf.asarray(data), sf.asarray(data[:1])
    joined = sf.apply_operator(Concat, [a, b], axis=0)  # a tuple-of-operands field
    np.testing.assert_array_equal(joined.interpret(), np.concatenate([data, data[:1]]))
    with pytest.raises(sf.IllFormedProgram, match="flip axis 2 is out of bounds"):
        sf.apply_operator(Flip, a, axis=2)
    with pytest.raises(sf.IllFormedProgram, match="expected a ShapeOp subclass"):
        sf.apply_operator(np.flip, a)

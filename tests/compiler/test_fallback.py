"""The fallback evaluator (``compiler/fallback``) against the compiled kernels: the same
result, strictly (container, shape, dtype, index dtypes, the entries — stored zeros
included — in canonical order, and the values; ``fallback_checks.differences``) over the
compute group's programs, the common shape operators over every input format, random
programs (``verify.random_programs.programs``) and the zero algebra's edge cases; it never
densifies a sparse input; and it declines — the call then waits for the kernel — where
the kernel's own checks decide (invalid data, NaN beside an annihilating product, a
failed size precondition) or the program is beyond it.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings

import sparsefold as sf
from sparsefold.benchmarks import compute
from sparsefold.compiler.fallback import Declined, FallbackPlan, Unsupported, covers
from sparsefold.jit import JitFunction
from sparsefold.spec.errors import InvalidData
from sparsefold.verify.random_programs import programs

sys.path.insert(0, str(Path(__file__).parent))
from fallback_checks import differences, fallback_of, run_both  # noqa: E402

pytestmark = pytest.mark.cython


def _matrix(kind: str) -> sp.csr_array:
    rng = np.random.default_rng(7)
    a = sp.random_array((60, 60), density=0.08, format="csr", rng=rng, dtype=np.float64)
    if kind == "stored zeros":  # explicit zeros stay entries, as in the kernels
        a.data[::3] = 0.0
    elif kind == "empty rows":
        a = sp.csr_array(a.toarray() * (np.arange(60) % 4 == 0)[:, None])
    elif kind == "no entries":
        a = sp.csr_array((60, 60), dtype=np.float64)
    elif kind == "signed":  # sums that cancel: a product stores its structural zeros
        a.data = np.where(np.arange(a.nnz) % 2, 1.0, -1.0)
    return a


@pytest.mark.parametrize("kind", ["random", "stored zeros", "empty rows", "no entries",
                                  "signed"])
@pytest.mark.parametrize("name", compute.program_names())
def test_compute_group_programs_agree_with_their_kernels(name, kind):
    program = next(p for p in compute.PROGRAMS if p.name == name)
    case = program.prepare(compute.Operands(_matrix(kind)))
    for fn, args, _, _ in case.ours.probe_args():
        plan, values, library = fallback_of(fn, *args)
        got = plan(values, library)  # the fallback covers every compute-group program
        want = JitFunction(fn.fn, fn.out, wait=True)(*args)
        assert differences(want, got) == [], (name, kind)


def _inputs(fmt: str, shape=(7, 6), dtype=np.float64, seed=3):
    rng = np.random.default_rng(seed)
    dense = rng.random(shape) * (rng.random(shape) < 0.4)
    dense = dense.astype(dtype) if dtype is not bool else dense > 0
    if fmt == "dense":
        return dense
    return {"csr": sp.csr_array, "csc": sp.csc_array, "coo": sp.coo_array}[fmt](dense)


SHAPE_PROGRAMS = [
    ("hstack", lambda a, b: sf.concat([a, b], axis=1), 2),
    ("vstack", lambda a, b: sf.concat([a, b], axis=0), 2),
    ("stack", lambda a, b: sf.stack([a, b], axis=1), 2),
    ("slice rows", lambda a: a[1:6:2], 1),
    ("slice both", lambda a: a[::-2, 1:5], 1),
    ("reshape", lambda a: a.reshape(3, 14), 1),
    ("flatten", lambda a: a.reshape(-1), 1),
    ("transpose", lambda a: a.T, 1),
    ("broadcast", lambda a: sf.broadcast_to(a[2:3], (4, 6)), 1),
    ("expand", lambda a: sf.expand_dims(a, axis=1), 1),
    ("squeeze", lambda a: sf.squeeze(a[2:3], 0), 1),
    ("index row", lambda a: a[3], 1),
    ("index column", lambda a: a[:, 4], 1),
    ("pad", lambda a: sf.pad(a, ((1, 0), (0, 2))), 1),
    ("flip", lambda a: sf.flip(a, axis=1), 1),
    ("roll", lambda a: sf.roll(a, 2, axis=0), 1),
    ("mixed", lambda a, b: sf.concat([a[::2], b[1::2]], axis=0).T * 2.5, 2),
]


# (input format, result format) pairs, one per program in turn: every input and result
# format meets several operators, and the random programs mix them further (a grid of all
# of them would compile five times as many kernels — minutes of CI — for little more)
LAYOUTS = [("csr", None), ("csc", "csr"), ("coo", "coo"), ("dense", "csc"),
           ("csr", "dense")]


def _layouts(programs):
    return [(p, LAYOUTS[k % len(LAYOUTS)]) for k, p in enumerate(programs)]


@pytest.mark.parametrize("program,layout", _layouts(SHAPE_PROGRAMS),
                         ids=[f"{p[0]}-{f}-{o}" for p, (f, o) in _layouts(SHAPE_PROGRAMS)])
def test_shape_operators_agree_with_their_kernels(program, layout):
    (_, fn, arity), (fmt, out) = program, layout
    args = [_inputs(fmt, seed=s) for s in range(arity)]
    compiled, fallback = run_both(fn, *args, out=out)
    assert differences(compiled, fallback) == []


COMPUTE_PROGRAMS = [  # over a, b: (7, 6) in one format; x: 6 values, y: 7 (dense)
    ("add", lambda a, b, x, y: a + b), ("multiply", lambda a, b, x, y: a * b),
    ("a * b + a", lambda a, b, x, y: a * b + a),
    ("maximum", lambda a, b, x, y: sf.maximum(a, b)), ("a > b", lambda a, b, x, y: a > b),
    ("a + 1", lambda a, b, x, y: a + 1), ("(a + 1) * b", lambda a, b, x, y: (a + 1) * b),
    ("(a + 1) - 1", lambda a, b, x, y: (a + 1) - 1), ("a * 0", lambda a, b, x, y: a * 0),
    ("a[:6] + b[:6].T", lambda a, b, x, y: a[:6] + b[:6].T),
    ("a + x", lambda a, b, x, y: a + x), ("a * x", lambda a, b, x, y: a * x),
    ("sum", lambda a, b, x, y: sf.sum(a * b)),
    ("sum axis 0", lambda a, b, x, y: sf.sum(a, axis=0)),
    ("max axis 1", lambda a, b, x, y: sf.max(a - b, axis=1)),
    ("prod", lambda a, b, x, y: sf.prod(a + 1, axis=0)),
    ("any", lambda a, b, x, y: sf.any(a, axis=1)),
    ("mean", lambda a, b, x, y: sf.mean(a, axis=0)),
    ("matmul", lambda a, b, x, y: a @ b.T), ("matvec", lambda a, b, x, y: a @ x),
    ("vecmat", lambda a, b, x, y: y @ a), ("matvec + y", lambda a, b, x, y: a @ x + y),
    ("row scale", lambda a, b, x, y: a * y[:, None]),
    ("outer", lambda a, b, x, y: a[:, :1] * b[:1, :]),
    ("tensordot", lambda a, b, x, y: sf.tensordot(a.reshape(7, 2, 3), b.reshape(7, 2, 3),
                                                  axes=([0, 1], [0, 1]))),
    ("exp", lambda a, b, x, y: sf.exp(a) * b),
    ("where", lambda a, b, x, y: sf.where(a > 0.5, a, b)),
]


@pytest.mark.parametrize("program,layout", _layouts(COMPUTE_PROGRAMS),
                         ids=[f"{p[0]}-{f}-{o}" for p, (f, o) in _layouts(COMPUTE_PROGRAMS)])
def test_maps_reductions_and_products_agree_with_their_kernels(program, layout):
    (_, fn), (fmt, out) = program, layout
    a, b = _inputs(fmt, seed=1), _inputs(fmt, seed=2)
    compiled, fallback = run_both(fn, a, b, np.arange(6.0), np.arange(7.0) - 3, out=out)
    assert differences(compiled, fallback) == []


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.int64, bool, np.complex128])
def test_dtypes_and_int64_indices_agree(dtype):
    a, b = _inputs("csr", dtype=dtype, seed=1), _inputs("coo", dtype=dtype, seed=2)
    a.indices, a.indptr = a.indices.astype(np.int64), a.indptr.astype(np.int64)
    for fn in (lambda x, y: x * y + x, lambda x, y: sf.concat([x, y]).T, lambda x, y: x @ y.T,
               lambda x, y: sf.sum(x, axis=1)):
        compiled, fallback = run_both(fn, a, b)
        assert differences(compiled, fallback) == []


def test_pydata_inputs_agree():
    import sparse
    a = sparse.COO.from_numpy(_inputs("dense", seed=1))
    b = sparse.GCXS.from_numpy(_inputs("dense", seed=2), compressed_axes=(0,))
    for fn in (lambda x, y: x + y, lambda x, y: (x * y).T, lambda x, y: x @ y.T):
        compiled, fallback = run_both(fn, a, b)
        assert differences(compiled, fallback) == []


def test_filled_pydata_inputs_agree():
    """A fill value that is not 0 (``where(present, stored, fill)`` in the program) and the
    result's fill, as the call hands it back."""
    import sparse
    dense = _inputs("dense", shape=(5, 4), seed=3)
    a = sparse.COO.from_numpy(np.where(dense == 0, 2.0, dense), fill_value=2.0)
    b = sparse.COO.from_numpy(dense)
    for fn in (lambda x, y: x + y, lambda x, y: x * y, lambda x, y: x.T,
               lambda x, y: sf.sum(x, axis=0), lambda x, y: sf.concat([x, x])):
        compiled, fallback = run_both(fn, a, b)
        assert differences(compiled, fallback) == []
        assert getattr(compiled, "fill_value", None) == getattr(fallback, "fill_value", None)


def test_results_keep_the_kernels_entries():
    """The entries are the zero algebra's, not the nonzeros: stored zeros of an input, a
    product's structural zeros (a sum that cancels), arithmetic results of 0; a
    dense-valued result keeps only its nonzeros (``from_dense``), as the kernels do."""
    a = sp.csr_array(np.array([[1.0, 1.0, 0.0], [0.0, 0.0, 3.0], [4.0, 5.0, 0.0]]))
    b = sp.csr_array(np.array([[1.0, 0.0, 0.0], [-1.0, 1.0, 0.0], [0.0, 0.0, 0.0]]))
    cases = {"a @ b": (lambda x, y: x @ y, 4),     # row 0: 1 - 1 = 0 stays an entry
             "a * 0": (lambda x, y: x * 0, 5), "a - a": (lambda x, y: x - x, 5),
             "a + 1": (lambda x, y: x + 1, 9), "a == 0": (lambda x, y: x == 0, 4)}
    for name, (fn, nnz) in cases.items():
        compiled, fallback = run_both(fn, a, b, out="csr")
        assert differences(compiled, fallback) == [], name
        assert fallback.nnz == nnz, name


def test_index_widths_follow_the_sizes():
    """int64 output indices where a size passes int32 (a 70000 x 70000 matrix flattened has
    4.9e9 coordinates), as the kernels choose."""
    a = sp.csr_array((np.ones(3), (np.array([0, 5, 69999]), np.array([1, 69998, 3]))),
                     shape=(70000, 70000))
    compiled, fallback = run_both(lambda x: x.reshape(-1), a, out="coo")
    assert differences(compiled, fallback) == []
    assert fallback.coords[0].dtype == np.int64


@pytest.mark.parametrize("name,fn", [
    ("transpose", lambda a, x: a.T), ("slice", lambda a, x: a[::3, 5:]),
    ("reshape", lambda a, x: a.reshape(-1)), ("concat", lambda a, x: sf.concat([a, a])),
    ("add transpose", lambda a, x: a + a.T), ("row vector", lambda a, x: a * a[7:8, :]),
    ("matvec", lambda a, x: a @ x), ("a * 2 + a", lambda a, x: a * 2 + a),
])
def test_sparse_inputs_are_never_densified(name, fn, monkeypatch):
    """With a 32 MB memory limit (the fallback allows itself a quarter of it for any dense
    array) a 1e6 x 1e6 input of 200 entries is computed: any densified operand would be
    8 TB, and the fallback would decline instead."""
    monkeypatch.setenv("SPARSEFOLD_MEMORY_LIMIT", str(32 << 20))
    rng = np.random.default_rng(5)
    n = 1_000_000
    a = sp.csr_array((rng.random(200), (rng.integers(0, n, 200), rng.integers(0, n, 200))),
                     shape=(n, n))
    a.sum_duplicates()
    compiled, fallback = run_both(fn, a, np.ones(n))
    assert differences(compiled, fallback) == []


def _declines(fn, *args, out=None):
    plan, values, library = fallback_of(JitFunction(fn, out), *args)
    with pytest.raises(Declined):
        plan(values, library)


def test_declines_what_the_kernels_checks_decide():
    a = _inputs("csr", seed=1)
    bad = a.copy()
    bad.indices[0] = 99  # out of range: the kernel reports it
    with pytest.raises(InvalidData):
        JitFunction(lambda x: x * 2, wait=True)(bad)
    _declines(lambda x: x * 2, bad)
    nan = a.copy()
    nan.data[0] = np.nan  # 0 * nan is nan: the kernel runs its exact variant
    _declines(lambda x, y: x * y, nan, a)
    unsorted = sp.coo_array((np.ones(3), (np.array([2, 0, 2]), np.array([1, 1, 1]))),
                            shape=(3, 3))  # a duplicate, summed as scipy does: both agree
    compiled, fallback = run_both(lambda x: x * 2, unsorted, out="csr")
    assert differences(compiled, fallback) == [] and fallback.nnz == 2


def test_declines_beyond_its_budget(monkeypatch):
    """A dense-valued result of a 1e5 x 1e5 matrix is 80 GB: not the fallback's to try
    (the kernel reports it too large)."""
    monkeypatch.setenv("SPARSEFOLD_MEMORY_LIMIT", str(64 << 20))
    a = sp.csr_array((np.ones(2), (np.array([0, 1]), np.array([1, 0]))),
                     shape=(100_000, 100_000))
    _declines(lambda x: x + 1, a)


def test_unsupported_programs_are_named():
    """Nodes it does not evaluate make it decline the whole program, with the reason."""
    a = _inputs("csr", seed=1)
    jf = JitFunction(lambda x, i: x[i], None)
    program, out = jf.program_for(a, np.array([0, 2]))
    assert "Gather" in (covers(program, out) or "")
    with pytest.raises(Unsupported):
        FallbackPlan(program, out)
    program, out = JitFunction(lambda x: x * 2).program_for(a)
    assert covers(program, out) is None


# Reasons a random program's fallback may decline, all decided by the data or a kernel's
# checks (the kernel then raises, or computes what the fallback will not guess)
_DATA_REASONS = ("holds a NaN or an infinity", "over a zero-length axis",
                 "precondition does not hold")


@settings(max_examples=min(20, settings.default.max_examples))  # each compiles a kernel
@given(programs())
def test_random_programs_agree_with_their_kernels(p):
    jf = JitFunction(p, p.out, wait=True)
    try:
        with np.errstate(all="ignore"):
            compiled, raised = jf(*p.inputs), None
    except Exception as exc:  # noqa: BLE001 - then the fallback must not answer
        compiled, raised = None, exc
    try:
        plan, values, library = fallback_of(jf, *p.inputs)
    except Unsupported as exc:
        pytest.fail(f"a random program the fallback does not cover: {exc}")
    try:
        fallback = plan(values, library)
    except Declined as exc:
        assert raised is not None or any(r in str(exc) for r in _DATA_REASONS), str(exc)
        return
    assert raised is None, f"the kernel raised {raised!r} but the fallback answered"
    assert differences(compiled, fallback) == []

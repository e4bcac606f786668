"""The first answer obeys the kernels' cost rule (issue #38 §1): the fallback's work and
memory are bounded by the inputs' stored entries, the output and the extents — never rows
x columns. Where it cannot keep that bound it declines (the call then waits for its
kernel). Measured without timing: tracemalloc's peak of the fallback alone at N and at 4N
(NumPy reports its buffers to tracemalloc), against the growth of the stored sizes."""

from __future__ import annotations

import math
import sys
import tracemalloc
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

import sparsefold as sf
from sparsefold.compiler.fallback import Declined
from sparsefold.compiler.fallback.plan import DENSE_FLOOR
from sparsefold.jit import JitFunction
from sparsefold.verify import program_fuzz

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fallback_checks import differences, fallback_of, run_both  # noqa: E402

SLACK = 2.5            # memory ratio allowed per stored-size ratio (as the time rule)
BASE_BYTES = 1 << 20   # allocations that do not grow (tables, small temporaries)


def _peak(plan, values, library):
    """(the result or None when declined, the traced peak in bytes)."""
    tracemalloc.start()
    try:
        try:
            with np.errstate(all="ignore"):
                got = plan(values, library)
        except Declined:
            got = None
        return got, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def _matrix(n: int, seed: int, per_row: int = 10) -> sp.csr_array:
    rng = np.random.default_rng(seed)
    rows = np.repeat(np.arange(n), per_row)
    cols = rng.integers(0, n, rows.size)
    vals = rng.integers(1, 9, rows.size).astype(np.float64)
    m = sp.coo_array((vals, (rows, cols)), shape=(n, n)).tocsr()
    m.sum_duplicates()
    return m


# the issue's programs whose first answer grew 9-46x for 4x the entries
ISSUE_PROGRAMS = {
    "argmax(A, axis=1)": (lambda a, b: sf.argmax(a, axis=1)),
    "argmin(A, axis=0)": (lambda a, b: sf.argmin(a, axis=0)),
    "argmax(a - b, axis=0)": (lambda a, b: sf.argmax(a - b, axis=0)),
    "var(A, axis=1)": (lambda a, b: sf.var(a, axis=1)),
    "std(A, axis=0)": (lambda a, b: sf.std(a, axis=0)),
    "var(a + b)": (lambda a, b: sf.var(a + b)),
    "stack([a, b], axis=1)[:, 0]": (lambda a, b: sf.stack([a, b], axis=1)[:, 0]),
    "stack([a, b], axis=2)[:, :, 1]": (lambda a, b: sf.stack([a, b], axis=2)[:, :, 1]),
    "concat([a, b], axis=1)[:, -1]": (lambda a, b: sf.concat([a, b], axis=1)[:, -1]),
    "diff(a, axis=1)": (lambda a, b: sf.diff(a, axis=1)),
    "repeat(a, 2, axis=0)": (lambda a, b: sf.repeat(a, 2, axis=0)),
}


@pytest.mark.parametrize("name", list(ISSUE_PROGRAMS))
def test_the_fallback_grows_as_the_entries_or_declines(name):
    fn = ISSUE_PROGRAMS[name]
    seen = []
    for n in (1000, 4000):
        a, b = _matrix(n, 1), _matrix(n, 2)
        plan, values, library = fallback_of(JitFunction(fn, None, wait=True), a, b)
        got, peak = _peak(plan, values, library)
        stored = a.nnz + b.nnz + (0 if got is None else program_fuzz._stored(got))
        seen.append((got is not None, peak, stored))
    (_, peak_lo, s_lo), (answered_hi, peak_hi, s_hi) = seen
    # the rule: a dense n x n array at 4000^2 is 128 MB; the inputs are ~1 MB
    assert peak_hi <= SLACK * (s_hi / s_lo) * peak_lo + BASE_BYTES, \
        f"{name}: fallback peak {peak_lo} -> {peak_hi} bytes for stored {s_lo} -> {s_hi}"
    assert peak_hi < 16 * 4000 * 4000 // 8, f"{name}: {peak_hi} bytes: a rows x cols array"


@pytest.mark.parametrize("name", ["argmax(A, axis=1)", "var(A, axis=1)",
                                  "stack([a, b], axis=1)[:, 0]"])
def test_below_the_floor_the_fallback_answers_what_the_kernel_does(name):
    # small arrays: dense work under DENSE_FLOOR elements costs less than waiting
    n = int(math.isqrt(DENSE_FLOOR)) // 2
    a, b = _matrix(n, 3, per_row=3), _matrix(n, 4, per_row=3)
    compiled, got = run_both(ISSUE_PROGRAMS[name], a, b)
    assert not differences(compiled, got)


def test_a_declined_first_call_waits_for_the_kernel_and_is_right(tmp_path, monkeypatch):
    # tiering on (the default): argmax of a 3000^2 matrix is not answered on a 9M-element
    # dense array; the call waits for its kernel, and gets the kernel's answer
    from sparsefold import tiering
    a = _matrix(3000, 5)
    f = sf.jit(lambda x: sf.argmax(x, axis=1), wait=False)
    got = f(a)
    np.testing.assert_array_equal(got, np.argmax(a.toarray(), axis=1))
    assert tiering.last_call()["answered"] in ("waited", "kernel")


def _cases(seed: int, count: int):
    return program_fuzz.generate(seed, count, max_depth=4)


@pytest.mark.parametrize("case", _cases(3803, 30), ids=lambda c: f"p{c.index}")
def test_generated_programs_on_the_fallback_alone_grow_linearly(case):
    # a bounded sample of the random-program generator, scaled as the fuzzer's scale check
    # scales them (4 entries per row, every side >= 2 multiplied), at N and 4N
    fn = case.function()
    big = 1024
    while big >= 16:
        try:
            shapes = program_fuzz.scaled_inputs(case.inputs, big, empty=True)
            lazy = fn(*(sf.asarray(a) for a in shapes))
        except (sf.SparsefoldError, ValueError, TypeError, IndexError):
            pytest.skip("the program does not fit larger inputs")  # counted by -ra
        dense = [np.size(a) for a in shapes if isinstance(a, np.ndarray)]
        if max([math.prod(lazy.shape), *dense], default=0) <= program_fuzz.SCALE_MAX_ELEMENTS:
            break
        big //= 2
    if big < 16:
        pytest.skip("too large at any scale")
    runs = []
    for k, seed in ((big // 4, 2), (big, 1)):
        args = program_fuzz.scaled_inputs(case.inputs, k, seed=seed)
        try:
            plan, values, library = fallback_of(JitFunction(fn, case.out, wait=True), *args)
        except sf.SparsefoldError:
            pytest.skip("the program does not fit these sizes")
        except Exception as exc:  # noqa: BLE001 - the fallback does not cover it
            if type(exc).__name__ == "Unsupported":
                pytest.skip(f"not covered by the fallback: {exc}")
            raise
        got, peak = _peak(plan, values, library)
        stored = sum(program_fuzz._stored(a) for a in args) + 1 + (
            0 if got is None else program_fuzz._stored(got))
        runs.append((got is not None, peak, stored))
    (_, peak_lo, s_lo), (answered, peak_hi, s_hi) = runs
    assert peak_hi <= SLACK * (s_hi / s_lo) * peak_lo + BASE_BYTES, (
        f"{case.source} out={case.out}: the fallback's peak memory grew {peak_lo} -> "
        f"{peak_hi} bytes while stored sizes grew {s_lo} -> {s_hi} "
        f"({'answered' if answered else 'declined'} at 4N)")


def test_the_fallback_stops_at_its_deadline():
    # past the time building the kernel would take, the fallback declines between steps
    import time

    from sparsefold.compiler.fallback import SLOWER_THAN_BUILDING
    a, b = _matrix(200, 6), _matrix(200, 7)
    plan, values, library = fallback_of(JitFunction(lambda x, y: (x + y) * 2, None,
                                                    wait=True), a, b)
    with pytest.raises(Declined, match=SLOWER_THAN_BUILDING):
        plan(values, library, time.perf_counter() - 1.0)
    got = plan(values, library, time.perf_counter() + 600.0)
    np.testing.assert_array_equal(got.toarray(), (a.toarray() + b.toarray()) * 2)


def test_a_tiered_call_waits_when_the_fallback_would_take_longer(monkeypatch):
    # the policy: with a build estimate of 0 s, any fallback run is slower than building;
    # the call waits, gets the kernel's answer, and later calls do not try the fallback
    from sparsefold import tiering
    monkeypatch.setattr(tiering, "build_estimate", lambda kernel: -1.0)
    a, b = _matrix(300, 8), _matrix(300, 9)
    f = sf.jit(lambda x, y: sf.maximum(x, y) * 3 - x, wait=False)
    got = f(a, b)
    np.testing.assert_array_equal(got.toarray(),
                                  np.maximum(a.toarray(), b.toarray()) * 3 - a.toarray())
    assert tiering.last_call()["answered"] in ("waited", "kernel")


@pytest.mark.parametrize("key", [(slice(None, None, 2), slice(None)),
                                 (slice(None, None, -1), slice(None)),
                                 (slice(1, -1, 3), slice(2, None, 2)),
                                 (slice(-2, 0, -2), slice(1, 7)),
                                 (slice(5, 5), slice(None)),
                                 (slice(None), slice(None, None, -1))])
def test_row_and_column_slices_of_csr_on_the_fallback(key):
    # the fallback slices a CSR-held matrix through its indptr (scipy's row gather), then
    # keeps and renumbers columns; a reversed column order takes the general path
    a, b = _matrix(40, 10, per_row=4), _matrix(40, 11, per_row=4)
    compiled, got = run_both(lambda x, y: x[key] * 2 + y[key], a, b, out="csr")
    assert not differences(compiled, got)


@pytest.mark.parametrize("name", ["A.T @ x", "A.T + B", "A.T * 2 - A.T", "A.T + A"])
def test_a_csc_input_read_through_its_transpose(name):
    # a CSC input whose every use transposes it is valued as the transpose (its arrays are
    # the transpose's CSR); used directly too ("A.T + A"), it is read as before
    a = _matrix(50, 12, per_row=5).tocsc()
    b = _matrix(50, 13, per_row=5)
    x = np.arange(50, dtype=np.float64)
    fns = {"A.T @ x": (lambda p, q, v: p.T @ v), "A.T + B": (lambda p, q, v: p.T + q),
           "A.T * 2 - A.T": (lambda p, q, v: p.T * 2 - p.T),
           "A.T + A": (lambda p, q, v: p.T + p)}
    compiled, got = run_both(fns[name], a, b, x)
    assert not differences(compiled, got)


@pytest.mark.parametrize("axis", [0, 1])
def test_row_and_column_sums_of_csr_on_the_fallback(axis):
    # one bincount over the columns, or one sum per non-empty row (empty rows and a last
    # empty row included)
    a = _matrix(30, 14, per_row=3)
    a = sp.csr_array(a.multiply(np.arange(30)[:, None] % 4 != 1))  # every 4th row empty
    a.eliminate_zeros()
    a = sp.csr_array(sp.vstack([a, sp.csr_array((2, 30))]))
    compiled, got = run_both(lambda x: sf.sum(x[::-1] * 2, axis=axis), a)
    assert not differences(compiled, got)


REDUCED_MAPS = {
    "var(A, axis=1)": lambda a, b, e, r: sf.var(a, axis=1),
    "var(A, axis=0)": lambda a, b, e, r: sf.var(a, axis=0),
    "std(A, axis=0)": lambda a, b, e, r: sf.std(a, axis=0),
    "var(a + b)": lambda a, b, e, r: sf.var(a + b),
    "mean(exp(A), axis=1)": lambda a, b, e, r: sf.mean(sf.exp(a), axis=1),
    "max(A + e, axis=1)": lambda a, b, e, r: sf.max(a + e, axis=1),
    "min(A - r, axis=0)": lambda a, b, e, r: sf.min(a - r, axis=0),
    "sum(A * 2 + e, axis=1)": lambda a, b, e, r: sf.sum(a * 2 + e, axis=1),
    "sum(A + e, axis=0) (e varies along the axis)": lambda a, b, e, r: sf.sum(a + e, axis=0),
}


@pytest.mark.parametrize("name", list(REDUCED_MAPS))
def test_reductions_of_dense_valued_maps_on_the_fallback(name):
    # the map at the entries, then its value away from them once per uncovered coordinate
    # of each cell (the kernels' background rule); the same answer as the kernel
    rng = np.random.default_rng(15)
    a = _matrix(60, 16, per_row=4)
    a = sp.csr_array(sp.vstack([a[:59], sp.csr_array((1, 60))]))  # an empty row
    b = _matrix(60, 17, per_row=4)
    e, r = rng.random((60, 1)), rng.random(60)
    compiled, got = run_both(REDUCED_MAPS[name], a, b, e, r)
    assert not differences(compiled, got)

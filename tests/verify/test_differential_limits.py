"""``verify.differential`` as a user's tool (issue 12, part 5): several operands of one
drawn shape (``strategies.shared_shape``), no deadline to switch off, and a per-call time
limit that reports a kernel running past it instead of hanging the test run.

The hanging kernel is simulated: the kernel stage's call of a trusted user operator sleeps
for ten minutes (``StageKernel.__call__`` wrapped), since generated kernels are bounded by
their input sizes (issue 12, part 1) and no real kernel hangs."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import settings
from hypothesis import strategies as st

import sparsefold as sf
from sparsefold import verify
from sparsefold.compiler.kernel import StageKernel
from sparsefold.jit import JitFunction
from sparsefold.verify.differential import DifferentialError
from sparsefold.verify.strategies import dense_arrays, shared_shape, sparse_arrays

sys.path.insert(0, str(Path(__file__).resolve().parent))
from wrong_ops import Interleave  # noqa: E402

A = sp.random_array((4, 3), density=0.5, format="csr", random_state=3)


def _concrete(*shapes) -> bool:
    """Shapes of the interpreted call (the jit traces the function on symbolic sizes)."""
    return all(isinstance(n, int) for s in shapes for n in s)


def _interleave(x, y):
    return sf.apply_operator(Interleave, x, y, trust=True)


def test_operands_of_one_shared_shape():
    S = shared_shape(2, 2, 3)
    seen = []

    def fn(a, b, c):
        if _concrete(a.shape, b.shape, c.shape):
            seen.append((a.shape, b.shape, c.shape))
        return a * b + c

    # the user's settings keep the profile's deadline: differential switches it off
    verify.differential(fn, sparse_arrays(S, "csr"), sparse_arrays(S, "csc"),
                        dense_arrays(S), out="csr", settings=settings(max_examples=6))
    assert len(seen) >= 6
    assert all(a == b == c for a, b, c in seen)
    assert len({a for a, _, _ in seen}) > 1  # the shape is drawn, not fixed


def test_a_given_shape_strategy_is_shared():
    S = shared_shape(shape=st.tuples(st.integers(1, 3), st.just(2)))
    shapes = []
    verify.differential(lambda a, b: (_concrete(a.shape) and shapes.append((a.shape, b.shape)),
                                      a + b)[1],
                        sparse_arrays(S, "coo"), sparse_arrays(S, "csr"), out="csr",
                        settings=settings(max_examples=4))
    assert shapes and all(a == b and a[1] == 2 for a, b in shapes)


def test_each_shared_shape_is_its_own():
    S, T = shared_shape(2, 2, 4, min_side=1), shared_shape(2, 2, 4, min_side=1)
    pairs = []
    verify.differential(lambda a, b: (_concrete(a.shape, b.shape)
                                      and pairs.append((a.shape, b.shape)),
                                      sf.sum(a) + sf.sum(b))[1],
                        sparse_arrays(S, "csr"), sparse_arrays(T, "csr"),
                        settings=settings(max_examples=10))
    assert any(a != b for a, b in pairs)


def test_a_kernel_past_the_time_limit_is_reported_with_its_inputs(monkeypatch):
    verify.differential(_interleave, A, A, out="csr", time_limit=60)  # builds, passes
    original = StageKernel.__call__

    def hangs(self, *args, **kwargs):
        time.sleep(600)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(StageKernel, "__call__", hangs)
    t0 = time.monotonic()
    with pytest.raises(DifferentialError) as caught:
        verify.differential(_interleave, A, A, out="csr", time_limit=2)
    assert time.monotonic() - t0 < 120   # stopped, not waited for
    text = str(caught.value)
    assert text.startswith("differential: the compiled kernel ran past the time limit of 2 s "
                           "and was stopped")
    assert "inputs:\n    [0] scipy csr_array (format 'csr') float64 (4, 3), nnz=6" in text
    assert "interleave" in text


def test_under_a_time_limit_failures_are_still_found(monkeypatch):
    original = JitFunction.__call__

    def wrong(self, *args):
        return original(self, *args) * 2

    monkeypatch.setattr(JitFunction, "__call__", wrong)
    with pytest.raises(DifferentialError, match=r"values differ"):
        verify.differential(lambda a: a + a, A, out="csr", time_limit=60)


def test_under_a_time_limit_errors_and_rejections_are_as_without(monkeypatch):
    # both engines reject the data (a negative integer power): no failure
    verify.differential(lambda a, b: a ** b, np.array([2, 3]), np.array([1, -1]),
                        time_limit=60)

    def raises(self, *args):
        raise RuntimeError("boom in the kernel")

    monkeypatch.setattr(JitFunction, "__call__", raises)
    with pytest.raises(DifferentialError, match=r"the compiled kernel raised RuntimeError: "
                                                r"boom in the kernel"):
        verify.differential(lambda a: a * 2, A, out="csr", time_limit=60)


def test_a_time_limit_must_be_positive():
    with pytest.raises(ValueError, match=r"time_limit must be a positive number"):
        verify.differential(lambda a: a, A, time_limit=0)

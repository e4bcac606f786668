"""The program fuzzer compares the fallback (the first answer on default settings) with the
compiled kernel (issue #39 §2): it agrees on a program both answer, and the check reports
a fallback that answers wrongly or raises instead of declining."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

import sparsefold as sf
from sparsefold.jit import JitFunction
from sparsefold.verify.program_fuzz import fallback_check

pytestmark = pytest.mark.cython

A = sp.random_array((20, 30), density=0.2, format="csr", rng=np.random.default_rng(0))
B = sp.random_array((20, 30), density=0.2, format="csr", rng=np.random.default_rng(1))


def fn(a, b):
    return sf.maximum(a, b) * 2 - a


def test_the_fallback_agrees_with_the_kernel():
    assert fallback_check(fn, (A, B), "csr") is None
    assert fallback_check(lambda a: sf.var(a, axis=1), (A,), None) is None


def test_a_wrong_first_answer_is_reported(monkeypatch):
    real = JitFunction.fallback
    monkeypatch.setattr(JitFunction, "fallback", lambda self, *args: real(self, *args) * 3)
    assert "values differ" in fallback_check(fn, (A, B), "csr")
    monkeypatch.setattr(JitFunction, "fallback", lambda self, *args: real(self, *args)[:, 1:])
    assert "!=" in fallback_check(fn, (A, B), "csr")


def test_a_fallback_that_raises_instead_of_declining_is_reported(monkeypatch):
    def broken(self, *args):
        raise KeyError("a0")
    monkeypatch.setattr(JitFunction, "fallback", broken)
    assert "raised KeyError" in fallback_check(fn, (A, B), "csr")

"""Hypothesis: every built-in elementwise function (issue #16) compiled vs the interpreter,
over scipy csr/csc/coo operands of bool, int32, int64, float32, float64 and complex128.

A case is (function, dtype, format); each compiles one kernel (sizes are symbolic: the
drawn shapes and values reuse it, and the kernel cache is on disk), so the number of
*cases* per run is what bounds CI time: ``MAX_CASES`` drawn from the ~600 the compiler
handles (derandomized by the ``ci`` profile: the same ones every run; the ``large``
profile draws many more). Binary functions take two operands of one shape in one format
(their intersection/union merges); the values include zeros stored explicitly."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import sparsefold as sf
from sparsefold.spec.errors import IllFormedProgram
from sparsefold.spec.functions import FUNCTIONS
from sparsefold.verify.strategies import sparse_arrays

pytestmark = pytest.mark.cython

DTYPES = [np.dtype(t) for t in ("bool", "int32", "int64", "float32", "float64", "complex128")]
FORMATS = ("csr", "csc", "coo")
MAX_CASES = 16
MAX_COMPLEX_CASES = 6  # complex128 cases are a sixth of the total: drawn apart as well
# libm and NumPy's own loops may differ in the last bits
INEXACT = {"exp", "expm1", "log", "log1p", "log2", "log10", "sqrt", "sin", "cos", "tan",
           "asin", "acos", "atan", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh",
           "atan2", "hypot", "logaddexp", "divide", "reciprocal", "power", "sign"}


def _compiled(name: str, dt: np.dtype) -> bool:
    """NumPy has a loop for ``name`` on ``dt`` and the compiler a C reading for it."""
    fn = FUNCTIONS[name]
    try:
        with np.errstate(all="ignore"):
            out = np.asarray(fn.impl(*[np.zeros(1, dt)] * fn.arity))
        loop = fn.loop_dtypes((dt,) * fn.arity, out.dtype)[0]
    except (TypeError, ValueError):
        return False
    return fn.c_text(loop.kind) is not None


CASES = [(name, dt, fmt) for name in sorted(FUNCTIONS) if not name.startswith("astype_")
         and FUNCTIONS[name].arity in (1, 2)
         for dt in DTYPES if _compiled(name, dt) for fmt in FORMATS]


def _dense(x) -> np.ndarray:
    return x.toarray() if hasattr(x, "toarray") else np.asarray(x)


@settings(max_examples=MAX_CASES, suppress_health_check=[HealthCheck.too_slow])
@given(case=st.sampled_from(CASES), data=st.data())
def test_compiled_function_equals_interpreter(case, data):
    _check(case, data)


@settings(max_examples=MAX_COMPLEX_CASES, suppress_health_check=[HealthCheck.too_slow])
@given(case=st.sampled_from([c for c in CASES if c[1].kind == "c"]), data=st.data())
def test_compiled_complex_function_equals_interpreter(case, data):
    _check(case, data)


def _check(case, data) -> None:
    name, dt, fmt = case
    fn = FUNCTIONS[name]
    shape = data.draw(st.tuples(st.integers(2, 6), st.integers(2, 6)), label="shape")
    args = [data.draw(sparse_arrays(shape, fmt, dt, explicit_zeros=True), label=f"x{p}")
            for p in range(fn.arity)]
    if name.startswith("bitwise_") and "shift" in name and dt.kind in "iu":
        args[1] = abs(args[1])  # a negative shift count is tested in the conformance suite
    f = (lambda x: sf.apply(name, x)) if fn.arity == 1 else \
        (lambda x, y: sf.apply(name, x, y))
    with np.errstate(all="ignore"):
        expected = f(*[sf.asarray(a) for a in args]).interpret()
    out = "dense" if expected.dtype == np.float16 else None  # scipy has no float16
    try:
        with np.errstate(all="ignore"):
            got = _dense(sf.jit(f, out=out)(*args))
    except IllFormedProgram as exc:  # pragma: no cover - CASES lists compiled ones only
        pytest.fail(f"{name} of {dt} over {fmt} is not compiled: {exc}")
    assert got.dtype == expected.dtype and got.shape == expected.shape
    if name in INEXACT and expected.dtype.kind in "fc":
        rtol = 2e-3 if expected.dtype == np.float16 else \
            1e-5 if expected.dtype.itemsize <= 4 * (1 + (expected.dtype.kind == "c")) \
            else 1e-13
        np.testing.assert_allclose(got, expected, rtol=rtol, atol=0, equal_nan=True)
    else:
        np.testing.assert_array_equal(got, expected, strict=True)


def test_the_cases_cover_every_compiled_function_and_dtype():
    names = {n for n, _, _ in CASES}
    unary_binary = {n for n, f in FUNCTIONS.items()
                    if not n.startswith("astype_") and f.arity in (1, 2)}
    assert names == unary_binary
    assert {dt for _, dt, _ in CASES} == set(DTYPES)
    assert len(CASES) > 400

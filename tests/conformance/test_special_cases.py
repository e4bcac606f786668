"""The array API standard's special cases of elementwise functions (``special_cases.py``: 339
real-valued and 147 complex cases, transcribed from the standard) on the three engines:

* the reference interpreter, every case;
* the compiler: every case of a group — unary real, binary real, ternary (clip), unary
  complex — in one compiled kernel (``concat`` of each function over its cases: four
  kernels in all, so the whole table costs four builds);
* the array API namespace (``sparsefold.array_api``), every case, through its own
  functions and ``np.asarray`` (materialization).

The expected values are the standard's, not NumPy's: where NumPy differs (floor division
at infinities, complex ``expm1`` and ``tanh`` at infinities), the spec follows the standard
(``spec.function_table``), and these cases say so.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pytest

import sparsefold as sf
import sparsefold.array_api as xp

sys.path.insert(0, str(Path(__file__).resolve().parent))
from special_cases import COMPLEX, REAL, matches  # noqa: E402

_SF = {"pow": sf.pow, "clip": sf.clip, "round": sf.round}


def _fn(name: str):
    return _SF.get(name) or getattr(sf, name)


def _ids(rows):
    return [f"{f}{args}" for f, args, _ in rows]


def _check(f, args, want, got):
    if isinstance(want, tuple):  # complex
        ok = matches(got.real, want[0]) and matches(got.imag, want[1])
    else:
        ok = matches(got, want)
    assert ok, f"{f}{args}: expected {want}, found {got!r}"


def _inputs(args):
    return [np.array([complex(*a)]) if isinstance(a, tuple) else np.array([a])
            for a in args]


@pytest.mark.parametrize("f, args, want", REAL + COMPLEX, ids=_ids(REAL + COMPLEX))
def test_interpreter(f, args, want):
    got = _fn(f)(*(sf.asarray(a) for a in _inputs(args))).interpret()[0]
    _check(f, args, want, got)


@pytest.mark.parametrize("f, args, want", REAL + COMPLEX, ids=_ids(REAL + COMPLEX))
def test_namespace(f, args, want):
    got = np.asarray(getattr(xp, f)(*(xp.asarray(a) for a in _inputs(args))))[0]
    _check(f, args, want, got)


def _groups():
    real = {1: [], 2: [], 3: []}
    for row in REAL:
        real[len(row[1])].append(row)
    return {"real unary": real[1], "real binary": real[2], "clip": real[3],
            "complex unary": COMPLEX}


@pytest.mark.cython
@pytest.mark.parametrize("group", list(_groups()))
def test_compiled(group):
    """One kernel per group: each function over its cases' arguments, the results cast to
    float64 (complex128) and concatenated; every case is then checked."""
    rows = _groups()[group]
    by_function: dict[str, list] = {}
    for row in rows:
        by_function.setdefault(row[0], []).append(row)
    complex_ = group.startswith("complex")
    out_dtype = np.complex128 if complex_ else np.float64
    parts, order = [], []
    for f, cases in by_function.items():
        arity = len(cases[0][1])
        columns = [np.array([complex(*c[1][p]) if complex_ else c[1][p] for c in cases])
                   for p in range(arity)]
        y = _fn(f)(*(sf.asarray(col) for col in columns))
        parts.append(y.astype(out_dtype))
        order += cases
    got = sf.concat(parts).compute(out="dense")
    assert got.shape == (len(order),)
    failures = []
    for (f, args, want), value in zip(order, got):
        if isinstance(want, bool):
            value = bool(value)
        try:
            _check(f, args, want, value)
        except AssertionError as exc:
            failures.append(str(exc))
    assert not failures, "\n".join(failures)


def test_the_table_is_the_standards_not_numpys():
    """The cases where NumPy's own answer is not the standard's: the spec computes the
    standard's (a check that the table would catch a NumPy-valued engine)."""
    with np.errstate(all="ignore"):
        assert math.isnan(np.floor_divide(np.inf, 2.0))  # NumPy (Python's rule)
        assert np.expm1(np.complex128(complex(math.inf, 0.0))).imag != 0.0 or math.isnan(
            np.expm1(np.complex128(complex(math.inf, 0.0))).imag)
    assert ("floor_divide", (math.inf, 2.5), math.inf) in REAL

"""The type-promotion table (``spec.promotion``, the standard's 2024.12 table) on the three
engines, and its Z3 proof.

For every ordered pair of dtypes the standard's table has, ``x1 + x2``, ``x1 * x2``,
``where(c, x1, x2)`` and ``concat([x1, x2])`` must have the table's dtype — declared by
the spec before anything runs, and computed *in* that dtype: the operands hold each dtype's
extremes (``iinfo.max + iinfo.max`` wraps differently in int8 and int16; ``1 + 1e-10``
rounds differently in float32 and float64), so a value computed in any other dtype shows.
The expected values are NumPy's (which agrees with the table on every pair it has; checked
first). Engines: the interpreter and the namespace every pair; the compiler every pair too,
one kernel per left-hand dtype (13 kernels: each compares its pairs' sums and products with
NumPy's inside the kernel).
"""

from __future__ import annotations

import numpy as np
import pytest

import sparsefold as sf
import sparsefold.array_api as xp
from sparsefold.spec import promotion
from sparsefold.verify.promotion import prove_promotion

PAIRS = sorted(promotion.STANDARD, key=lambda p: (p[0].name, p[1].name))


def _sample(dt: np.dtype) -> np.ndarray:
    """Four values of ``dt`` whose sums and products depend on the dtype computed in."""
    if dt.kind == "b":
        return np.array([True, False, True, True])
    if dt.kind in "iu":
        info = np.iinfo(dt)
        return np.array([info.max, info.min, 1, info.max // 3], dtype=dt)
    if dt.kind == "f":
        return np.array([1.0, 1e-10, np.finfo(dt).max, -2.5], dtype=dt)
    return np.array([1 + 1e-10j, 1e-10, 3 - 1j, np.finfo(dt).max], dtype=dt)


def _numpy(op, a, b):
    with np.errstate(all="ignore"):
        return op(a, b)


def test_numpy_agrees_with_the_table():
    """NumPy 2 is the oracle below: it must promote every pair the standard defines as
    the standard does."""
    for (a, b), r in promotion.STANDARD.items():
        assert np.result_type(a, b) == r, (a, b)


def test_result_type_and_can_cast_read_the_table():
    for (a, b), r in promotion.STANDARD.items():
        assert xp.result_type(a, b) == r
        assert xp.result_type(xp.asarray(_sample(a)), b) == r
        assert xp.can_cast(a, b) == (r == b)
    assert xp.result_type(xp.int8, 1) == xp.int8        # a Python scalar is weak
    assert xp.result_type(xp.float32, 1.0) == xp.float32
    assert not xp.can_cast(xp.complex64, xp.float64)
    assert not xp.can_cast(xp.int64, xp.uint64)          # no pair, and not safe


@pytest.mark.parametrize("a, b", PAIRS, ids=[f"{a}-{b}" for a, b in PAIRS])
def test_interpreter_and_namespace(a, b):
    x, y = _sample(a), _sample(b)
    want_dtype = promotion.STANDARD[a, b]
    for name, op in (("add", np.add), ("multiply", np.multiply)):
        if a.kind == b.kind == "b" and name == "add":
            op = np.logical_or  # bool + bool is bool
        want = _numpy(op, x, y)
        program = getattr(sf, name)(sf.asarray(x), sf.asarray(y))
        assert program.dtype == want_dtype                       # the spec declares it
        got = program.interpret()
        assert got.dtype == want_dtype
        np.testing.assert_array_equal(got, want, strict=True)    # ... and computes in it
        got = np.asarray(getattr(xp, name)(xp.asarray(x), xp.asarray(y)))
        np.testing.assert_array_equal(got, want, strict=True)
    c = np.array([True, False, False, True])
    assert sf.where(sf.asarray(c), sf.asarray(x), sf.asarray(y)).dtype == want_dtype
    np.testing.assert_array_equal(np.asarray(xp.where(xp.asarray(c), xp.asarray(x),
                                                      xp.asarray(y))), np.where(c, x, y),
                                  strict=True)
    np.testing.assert_array_equal(np.asarray(xp.concat([xp.asarray(x), xp.asarray(y)])),
                                  np.concatenate([x, y]), strict=True)


LEFT = sorted({a for a, _ in PAIRS}, key=lambda d: d.name)


@pytest.mark.cython
@pytest.mark.parametrize("a", LEFT, ids=[d.name for d in LEFT])
def test_compiled(a):
    """One kernel per left-hand dtype: for each pair, how many of the sums and products
    the kernel computes differ from NumPy's (compared in the promoted dtype: exact)."""
    partners = [b for b_a, b in PAIRS if b_a == a]
    x = _sample(a)
    counts, arrays = [], []
    for b in partners:
        y = _sample(b)
        for op, np_op in ((sf.add, np.add), (sf.multiply, np.multiply)):
            if a.kind == b.kind == "b" and op is sf.add:
                continue
            got = op(sf.asarray(x), sf.asarray(y))
            assert got.dtype == promotion.STANDARD[a, b]
            want = sf.asarray(_numpy(np_op, x, y))
            wrong = (got != want) & ~(sf.isnan(got) & sf.isnan(want)) if \
                got.dtype.kind in "fc" else got != want
            counts.append(sf.sum(wrong.astype(np.int64)))
            arrays.append((b, np_op.__name__))
    result = sf.stack(counts).compute(out="dense")
    bad = [f"{a}{'+' if op == 'add' else '*'}{b}" for (b, op), n in zip(arrays, result) if n]
    assert not bad, f"computed in another dtype than the table's: {bad}"


def test_the_table_is_proved():
    report = prove_promotion()
    assert report.proved, report.failures


@pytest.mark.parametrize("change, broken", [
    # int16 with uint8 made int32: no longer the least upper bound (int16 holds both)
    ({("int16", "uint8"): "int32", ("uint8", "int16"): "int32"}, "least upper bound"),
    # only one direction changed: not commutative
    ({("int8", "int16"): "int32"}, "commutative"),
    # int16 with uint16 made int64: (int8 + uint8) + uint16 is int64, int8 + (uint8 +
    # uint16) int32
    ({("int16", "uint16"): "int64", ("uint16", "int16"): "int64"}, "associative"),
])
def test_wrong_tables_are_refuted(change, broken):
    table = dict(promotion.STANDARD)
    for (p, q), r in change.items():
        table[np.dtype(p), np.dtype(q)] = np.dtype(r)
    report = prove_promotion(table)
    assert report.statuses[broken] == "refuted", report.statuses

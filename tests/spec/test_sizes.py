"""Size/index expressions: folding, identities, the readings, equality."""

import numpy as np
import pytest

from sparsefold.spec import sizes as sz
from sparsefold.spec.errors import IllFormedProgram


def test_constant_folding_uses_python_floor_semantics():
    assert sz.floordiv(-7, 2) == sz.Const(-4)
    assert sz.mod(-7, 2) == sz.Const(1)


def test_division_by_zero_is_ill_formed():
    with pytest.raises(IllFormedProgram, match="division by zero"):
        sz.floordiv(3, 0)


def test_numpy_and_c_readings_agree_on_an_expression():
    I, k = sz.Sym("I"), sz.Sym("_k0")  # noqa: E741 - a size named I
    e = sz.select(sz.lt(k, I), k // 3 + k % 3, sz.minimum(k, I) * 2)
    ks = np.arange(20)
    got = sz.evaluate(e, {"I": 7, "_k0": ks})
    want = np.where(ks < 7, ks // 3 + ks % 3, np.minimum(ks, 7) * 2)
    assert np.array_equal(got, want)
    text = sz.to_c(e)
    assert "//" in text and "%" in text and " if " in text


def test_polynomial_equality():
    I, J, K = sz.Sym("I"), sz.Sym("J"), sz.Sym("K")  # noqa: E741 - sizes named I, J, K
    assert sz.definitely_equal(I * (J + K), I * J + K * I)
    assert not sz.definitely_equal(I * J, I + J)


def test_symbol_names_are_checked():
    with pytest.raises(IllFormedProgram, match="identifier"):
        sz.as_expr("_k0")
    with pytest.raises(IllFormedProgram, match="identifier"):
        sz.as_expr('x"); import os')

"""A piece whose guard names no coordinate (a constant, or a condition on sizes alone) is
honoured by every lowering: integer indexing of a stacked axis (``stack([a, b])[1]``) made
``a``'s piece the guard *false*, which the row-driven loops dropped as "a guard on the source
row, true by construction", so the kernel returned ``a + b`` (issue #27)."""

import sys
from pathlib import Path

import pytest

import sparsefold as sf

sys.path.insert(0, str(Path(__file__).resolve().parent))
from kernel_checks import check_result, make_input, run_both  # noqa: E402

pytestmark = pytest.mark.cython

PROGRAMS = {
    "stack0[0]": lambda a, b: sf.stack([a, b], axis=0)[0],
    "stack0[1]": lambda a, b: sf.stack([a, b], axis=0)[1],
    "stack0[-1]": lambda a, b: sf.stack([a, b], axis=0)[-1],
    "stack0[1,:,:]": lambda a, b: sf.stack([a, b], axis=0)[1, :, :],
    "stack1[:,0]": lambda a, b: sf.stack([a, b], axis=1)[:, 0],
    "stack1[:,1]": lambda a, b: sf.stack([a, b], axis=1)[:, 1],
    "stack2[...,1]": lambda a, b: sf.stack([a, b], axis=2)[..., 1],
    "stack3[1]*b": lambda a, b: sf.stack([a, b, a], axis=0)[1] * b,
    "stack3[2]+b": lambda a, b: sf.stack([a, b, a], axis=0)[2] + b,
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
@pytest.mark.parametrize("fmt, out", [("csr", "csr"), ("coo", "coo"), ("csc", "csr"),
                                      ("csr", "dense")])
def test_index_of_a_stacked_axis(name, fmt, out):
    a = make_input((4, 5), fmt, "float64", seed=1)
    b = make_input((4, 5), "csr", "float64", seed=2)
    got, expected = run_both(PROGRAMS[name], [a, b], out)
    check_result(got, expected, out)

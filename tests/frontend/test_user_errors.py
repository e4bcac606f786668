"""Errors a new user meets (issue #14, part 4), each naming what the user wrote: a list
passed to a jitted function, an array captured by a jitted function, out-of-range and
``indptr`` errors naming the array (and the row), an int64 overflow naming the caller's
axes; and ``sf.show``'s value, which a REPL echoes in one line.
"""

from __future__ import annotations

import code
import io
import sys
from contextlib import redirect_stdout

import numpy as np
import pytest
import scipy.sparse as sp

import sparsefold as sf

A = sp.csr_array(np.array([[1.0, 0, 2], [0, 3, 0]]))


def test_a_list_argument_is_named_and_explained():
    f = sf.jit(lambda x: x * 2)
    with pytest.raises(sf.InvalidData, match=r"^argument 1 of the jit function: expected a "
                       r"NumPy array, .* found builtins.list; convert it with np.asarray"):
        sf.jit(lambda x, y: x + y)(np.ones(2), [1.0, 2.0])
    with pytest.raises(sf.InvalidData, match=r"^argument 0 of the jit function: .*found "
                       r"builtins.dict$"):
        f({"a": 1})
    np.testing.assert_array_equal(f(np.asarray([1.0, 2.0])), [2.0, 4.0])  # the advice works


def test_a_captured_array_is_described_not_blamed_on_asarray():
    c = np.ones(3)
    with pytest.raises(sf.IllFormedProgram) as info:
        sf.jit(lambda x: x + c)(np.zeros(3))
    message = str(info.value)
    assert message.startswith("a jit function must compute from its arguments only, but it "
                              "uses an array that is not an argument (numpy.ndarray float64 "
                              "of shape (3,)), captured from the enclosing scope")
    assert "pass it as an argument instead" in message
    assert "asarray" not in message
    # the advice works
    np.testing.assert_array_equal(sf.jit(lambda x, y: x + y)(np.zeros(3), c), c)


def test_out_of_range_in_the_interpreter_names_the_array():
    bad = sp.csr_array((np.array([1.0, 2.0]), np.array([0, 7]), np.array([0, 1, 2])),
                       shape=(2, 3))
    with pytest.raises(sf.InvalidData, match=r"^a0: indices out of range \[0, 3\): found 0..7$"):
        (sf.asarray(bad) * 2).interpret()


@pytest.mark.parametrize("engine", ["interpret", "jit"])
@pytest.mark.parametrize("cls, axis", [(sp.csr_array, "row"), (sp.csc_array, "column")])
def test_indptr_errors_give_the_row(engine, cls, axis):
    bad = cls((np.array([1.0, 2.0]), np.array([0, 1]), np.array([0, 2, 1, 2])), shape=(3, 3))
    run = (lambda: (sf.asarray(bad) * 2).interpret()) if engine == "interpret" else \
        (lambda: sf.jit(lambda x: x * 2)(bad))
    with pytest.raises(sf.InvalidData, match=rf"^a0: indptr is not monotone non-decreasing: "
                                             rf"{axis} 1 spans \[2, 1\)$"):
        run()


def test_overflow_names_the_callers_axes():
    n = 2**62
    a = sp.coo_array((np.array([1.0, 2.0]), (np.array([0, 3]),)), shape=(n,))
    with pytest.raises(sf.InvalidData) as info:
        sf.jit(lambda x: sf.concat([x, x]), out="coo")(a)
    assert str(info.value) == (
        "the result would have shape (a0.shape[0] + a0.shape[0],) = (9223372036854775808,): "
        "more than 2**63 - 1 elements, so coordinates would overflow int64 "
        "(a0 has shape (4611686018427387904,))")
    # an intermediate array is named as the printed program names its node
    with pytest.raises(sf.InvalidData, match=r"^an intermediate array \(broadcastto\) would "
                       r"have shape \(4, a0.shape\[0\]\) = \(4, 4611686018427387904\): "):
        sf.jit(lambda x: sf.broadcast_to(x, (4, x.shape[0])) * 2, out="coo")(a)


def test_show_prints_once_and_returns_the_text(capsys):
    text = sf.show(lambda x: x[::2] * 2, A, out="csr")
    printed = capsys.readouterr().out
    assert printed == text + "\n"
    assert isinstance(text, str) and "run = sf_function(" in text
    assert repr(text) == f"<Cython source, {text.count(chr(10)) + 1} lines: printed above>"


def test_show_in_an_interactive_session_shows_the_kernel_once():
    console = code.InteractiveInterpreter({"sf": sf, "A": A})
    out = io.StringIO()
    hook = sys.displayhook
    try:
        with redirect_stdout(out):
            console.runsource("sf.show(lambda x: x[::2] * 2, A, out='csr')")
    finally:
        sys.displayhook = hook
    session = out.getvalue()
    assert session.count("run = sf_function(") == 1
    assert session.rstrip().endswith("lines: printed above>")


def test_zeros_made_inside_a_jit_function_are_constants_not_captures():
    # zeros (an empty COO array sparsefold makes) and x[key] = 0 (which places one) were
    # refused as "captured" arrays (found by the program generator)
    A = sp.random_array((5, 5), density=0.3, format="csr", rng=np.random.default_rng(0))
    f = sf.jit(lambda a: a + sf.array_api.zeros((5, 5)), out="csr")
    np.testing.assert_array_equal(f(A).toarray(), A.toarray())

    def zero_row(a):
        t = sf.array_api.asarray(a, copy=True)
        t[1] = 0
        return t
    got = sf.jit(zero_row, out="csr")(A).toarray()
    want = A.toarray()
    want[1] = 0
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(A.toarray()[1], sp.csr_array(A).toarray()[1])  # A kept

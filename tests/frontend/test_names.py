"""Inputs are named by position per program (``sparsefold.lazy.canonical``), not by a
process-wide counter: the same program built from fresh ``sf.asarray`` wrappers prints the
same, compiles to the same source and is built once.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

import sparsefold as sf
from sparsefold.compiler.run import build
from sparsefold.lazy import canonical

D = np.array([[1, 0, 2, 0, 3], [0, 4, 0, 0, 0], [5, 0, 0, 6, 0], [0, 0, 7, 0, 8],
              [9, 0, 0, 0, 1], [0, 2, 0, 3, 0], [4, 0, 5, 0, 0]], dtype=np.int16)


def test_printed_programs_name_inputs_by_first_use():
    a, b = sp.csr_array(D), sp.csr_array(D * 2)
    for _ in range(2):  # fresh wrappers each time: the counter moves, the names do not
        x, y = sf.asarray(a), sf.asarray(b)
        text = repr(sf.concat([y, x], axis=1) + 1)
        assert "input a0: int16[7, 5] csr" in text.splitlines()[1]
        assert "input a1: int16[7, 5] csr" in text.splitlines()[2]
        assert "a2" not in text


def test_same_program_from_fresh_wrappers_is_built_once(tmp_path, monkeypatch):
    monkeypatch.setenv("SPARSEFOLD_CACHE_DIR", str(tmp_path / "cache"))
    A = sp.csc_array(D)
    before = build.stats()
    results = [(sf.asarray(A)[1::3] * 7).compute(out="coo") for _ in range(3)]
    after = build.stats()
    assert after["builds"] - before["builds"] == 1
    assert after["disk_hits"] == before["disk_hits"]
    for r in results:
        np.testing.assert_array_equal(r.toarray(), D[1::3] * 7)


def test_show_of_fresh_wrappers_is_the_same_source(capsys):
    A = sp.csr_array(D)
    first = sf.show(sf.asarray(A)[::2] * 2, out="csr")
    second = sf.show(sf.asarray(A)[::2] * 2, out="csr")
    capsys.readouterr()
    assert first == second
    assert "input a0: int16[7, 5] csr" in first


def test_one_array_wrapped_twice_is_two_inputs():
    a = sp.csr_array(D)
    x, y = sf.asarray(a), sf.asarray(a)
    program, values = canonical(x * y)
    assert list(values) == ["a0", "a1"] and all(v is a for v in values.values())
    np.testing.assert_array_equal((x * y).interpret(), D * D)


def test_symbols_keep_their_names_and_are_not_reused():
    A = sf.symbol("a0", shape=(7, 5), dtype="int16", format="csr")
    x = sf.asarray(sp.csr_array(D))
    program, values = canonical(A + x)
    names = sorted(n.name for n in _inputs(program))
    assert names == ["a0", "a1"] and list(values) == ["a1"]
    np.testing.assert_array_equal((A + x).interpret(a0=sp.csr_array(D)), D + D)


def test_interpreter_errors_use_the_printed_names():
    bad = sp.csr_array((np.array([1.0, 2.0]), np.array([0, 7]), np.array([0, 1, 2])),
                       shape=(2, 3))
    good = sp.csr_array(np.ones((2, 3)))
    with pytest.raises(sf.InvalidData, match=r"^a1: indices out of range \[0, 3\)"):
        (sf.asarray(good) + sf.asarray(bad)).interpret()


def _inputs(program):
    from sparsefold.spec.compute import Input
    from sparsefold.spec.printer import topological
    return [n for n in topological(program) if isinstance(n, Input)]


def test_an_index_array_bound_in_a_jit_trace_never_takes_an_arguments_name(monkeypatch):
    """A jit trace names its arguments ``a<p>``; an index array bound inside the trace is
    ``bound<n>``. With one counter for both, a fresh process bound the key of
    ``take(vstack(...), [])`` as ``a0``, the first argument's name: the trace put the
    argument's float input in the gather's index (found by the program generator)."""
    import itertools

    from sparsefold import lazy
    monkeypatch.setattr(lazy, "_names", itertools.count())  # as in a fresh process
    a, b = sp.csr_array(D[:3].astype(float)), sp.csr_array(D[3:5].astype(float))
    for idx in (np.array([], dtype=np.int64), np.array([4, 0])):
        f = sf.jit(lambda x, y, i=idx: sf.take(sf.vstack([x, sf.floor(y)]), i, axis=0) * 0.5,
                   out="csr")
        got = f(a, b).toarray()
        want = np.vstack([a.toarray(), np.floor(b.toarray())])[idx] * 0.5
        np.testing.assert_array_equal(got, want)


def test_bound_names_are_reserved():
    with pytest.raises(sf.IllFormedProgram, match="reserved"):
        sf.symbol("bound0", (3,))


def test_a_copy_of_a_program_with_an_index_array_stays_traceable():
    """``asarray(x, copy=True)`` inside ``sf.jit`` of a program whose key holds an index
    array: the key's array is kept (a private copy already), not copied into an array jit
    would call captured (found by the program generator)."""
    a = sp.csr_array(D.astype(float))

    def f(x):
        y = sf.array_api.asarray(x[np.array([0, 2])], copy=True)
        y[0] = 1
        return y
    want = D[[0, 2]].astype(float)
    want[0] = 1
    np.testing.assert_array_equal(sf.jit(f, out="csr")(a).toarray(), want)

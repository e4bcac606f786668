"""Deliberately wrong user operators (issue 12, part 1): refused when their proof fails, and
— when a user trusts an entry whose proof is not decided — compiled with run-time checks
that make a wrong map an error or a wrong-but-bounded result, never a hang or a crash.

The operators are in ``wrong_ops.py``: colliding pieces (the issue's ``Interleave``), a
non-monotone forward map that is not the inverse of its backward map, out-of-range maps
(past the end by one, and far outside), and a divisor that can be 0. Each runs in a
subprocess (``wrong_ops_run.py``) with a timeout, compiled as ``sf.jit`` compiles a trusted
entry whose proof is unknown; the subprocess must finish, exit normally, and report for
every program and output format either an error naming the operator's maps or a result
whose storage is valid (memory-safe, though its values may be wrong).

Before these checks, the same programs (compiled with every entry trusted as proved) gave a
segmentation fault (``huge(a)`` into a dense output) and scipy arrays with coordinates
outside their shape (``huge(a)`` into COO).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

import sparsefold as sf
from sparsefold import verify
from sparsefold.spec.errors import IllFormedProgram
from sparsefold.verify import entries
from sparsefold.verify.results import UNKNOWN, Outcome, ProofResult

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from wrong_ops import WRONG, Interleave, ShiftOut  # noqa: E402

pytestmark = pytest.mark.cython

# what a run-time check says: the in-kernel range checks, the collision check after the
# sort, the divisor check before the kernel
CHECK_MESSAGES = ("maps not proved", "outside [0,", "forward maps collide")


def _run(name: str) -> list[dict]:
    done = subprocess.run([sys.executable, str(HERE / "wrong_ops_run.py"), name],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, (f"{name}: exit status {done.returncode} (a negative status "
                                  f"is a signal: a crash)\n{done.stdout}\n{done.stderr}")
    return [json.loads(line) for line in done.stdout.splitlines()]


@pytest.mark.parametrize("name", sorted(WRONG))
def test_a_trusted_wrong_operator_errs_or_stays_bounded(name):
    lines = _run(name)
    assert lines, f"{name}: no program ran"
    for line in lines:
        where = f"{name}: {line['program']} -> {line['out']}"
        if line["outcome"] == "error":
            assert line["error"].startswith("InvalidData: "), where + ": " + line["error"]
            assert any(m in line["error"] for m in CHECK_MESSAGES), where + ": " + line["error"]
        else:
            assert line["outcome"] == "result", where
            assert line["shape_ok"], where
            assert line["problems"] == [], f"{where}: invalid storage {line['problems']}"
    # the checks are what stopped them: every operator trips one on its first program
    assert any(line["outcome"] == "error" for line in lines), name


@pytest.mark.parametrize("name", sorted(WRONG))
def test_a_wrong_operator_is_refuted_before_compiling_even_when_trusted(name):
    a = sp.random_array((6, 5), density=0.4, format="csr", random_state=0)
    op = WRONG[name]
    if name == "interleave":
        fn = lambda x: sf.apply_operator(op, x, x, wrong=True, trust=True)  # noqa: E731
    elif name == "divide_by_size":
        fn = lambda x: sf.apply_operator(op, x[0], x[1, :4], trust=True)  # noqa: E731
    else:
        fn = lambda x: sf.apply_operator(op, x[0] if name == "scramble" else x,  # noqa: E731
                                         trust=True)
    with pytest.raises(IllFormedProgram, match=rf"operator {op.__name__.lower()} is wrong: "
                                               r"its obligation \w+(\[\d\])? is refuted"):
        sf.jit(fn, out="csr")(a)


def test_the_issue_interleave_is_a_clear_failure_of_differential_not_a_hang():
    a = sp.random_array((50, 40), density=0.2, format="csr", random_state=1)
    b = sp.random_array((50, 40), density=0.2, format="csr", random_state=2)
    with pytest.raises(verify.DifferentialError,
                       match=r"IllFormedProgram: operator interleave is wrong: its obligation "
                             r"backward_forward\[1\] is refuted"):
        verify.differential(lambda x, y: sf.apply_operator(Interleave, x, y, wrong=True),
                            a, b, out="csr")


def test_a_right_operator_is_proved_on_first_use_and_compiled_without_checks():
    a = sp.random_array((6, 5), density=0.4, format="csr", random_state=0)
    b = sp.random_array((6, 5), density=0.4, format="csr", random_state=3)
    f = sf.jit(lambda x, y: sf.apply_operator(Interleave, x, y), out="csr")
    got = f(a, b).toarray()
    want = np.empty((12, 5))
    want[0::2], want[1::2] = a.toarray(), b.toarray()
    np.testing.assert_array_equal(got, want)
    assert "Checked:" not in sf.show(f, a, b)
    assert entries.prove_entry(f.program_for(a, b)[0]).status == "proved"


def _undecided(monkeypatch):
    """Make every user entry's proof come back unknown (as a too-hard proof would)."""
    def unknown(node):
        return ProofResult("undecided", [Outcome("backward_forward[0]", UNKNOWN)])
    monkeypatch.setattr(entries, "prove_entry", unknown)


def test_an_undecided_entry_is_refused_unless_trusted(monkeypatch):
    _undecided(monkeypatch)
    a = sp.random_array((6, 5), density=0.4, format="csr", random_state=0)
    shifted = type("Shifted", (ShiftOut,), {"__slots__": ()})  # a class of its own to trust
    f = sf.jit(lambda x: sf.apply_operator(shifted, x, shift=0), out="csr")
    with pytest.raises(IllFormedProgram, match=r"operator shifted is not proved "
                                               r"\(backward_forward\[0\]: unknown\).*trust=True"):
        f(a)
    g = sf.jit(lambda x: sf.apply_operator(shifted, x, shift=0, trust=True), out="csr")
    np.testing.assert_array_equal(g(a).toarray(), a.toarray())  # shift 0: right, checked
    assert "Checked: the maps of shifted are not proved" in sf.show(g, a)
    h = sf.jit(lambda x: sf.apply_operator(shifted, x, shift=1), out="csr")
    with pytest.raises(sf.InvalidData, match=r"shifted \(maps not proved\): axis 0: the "
                                             r"operator mapped an entry to 6, outside \[0, 6\)"):
        h(a)  # the class is trusted now; its wrong instance is caught at run time


def test_trust_is_a_class_attribute_too(monkeypatch):
    _undecided(monkeypatch)
    trusted = type("TrustedShift", (ShiftOut,), {"__slots__": (), "trust": True})
    plain = type("PlainShift", (ShiftOut,), {"__slots__": ()})
    assert entries.is_trusted(trusted) and not entries.is_trusted(plain)
    node = sf.apply_operator(trusted, np.zeros((3, 2)), shift=0).node
    assert entries.check_entry(node) == ()


def test_an_entry_is_proved_again_when_its_definition_changes():
    key = entries.definition_key(Interleave)
    assert entries.definition_key(Interleave) == key
    changed = type("Interleave", (Interleave,), {"__slots__": (),
                                                 "shape_rule": lambda self, s: s[0]})
    assert entries.definition_key(changed) != key

"""``sparsefold prove``: the whole catalog once (exit status 0, one row per item, the final
line ``N passed, N failed``), a failing item makes the exit status non-zero, ``--smt2``.

Oracle: the row count is recomputed from the catalog itself (lemmas + operator entries +
rules + wrong rules), and the SMT-LIB dump is fed back to Z3, which must answer ``unsat``.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
import z3

from sparsefold.cli import main
from sparsefold.spec import SHAPE_OPERATORS
from sparsefold.spec.functions import FUNCTIONS
from sparsefold.verify import RULES, WRONG_RULES, lemmas
from sparsefold.verify import wrong_rules as wrong_module
from sparsefold.verify.results import REFUTED
from sparsefold.verify.rules import rule

FINAL = re.compile(r"^(\d+) passed, (\d+) failed$")


def test_the_whole_catalog_passes():
    # no time assertion: CI machines are shared and noisy (the timeout is a hang guard; the
    # proof time is reported by `sparsefold prove` itself)
    done = subprocess.run([sys.executable, "-m", "sparsefold.cli", "prove"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    lines = done.stdout.strip().splitlines()
    m = FINAL.match(lines[-1])
    # + 2: the counting-sort reorder row and the promotion-table row
    items = len(lemmas.LEMMAS) + 2 + len(SHAPE_OPERATORS) + len(FUNCTIONS) + len(RULES) + \
        len(WRONG_RULES)
    assert m and int(m.group(1)) == items and m.group(2) == "0", lines[-1]
    rows = [line for line in lines
            if re.match(r"^(lemma|reorder|promotion|operator|function|rule|wrong) ", line)]
    assert len(rows) == items
    expected = {"rule " + r.name: r.expect for r in RULES}
    for r in rows:  # a rule shows the status it expects: proved, or proved-real
        name = r.split("  ")[0].strip()
        if r.startswith("rule "):
            assert f" {expected[name]} " in r, r
        elif r.startswith("function "):  # Z3 proves, or a numeric probe checks (not proved)
            assert " proved " in r or " probed " in r, r
        elif not r.startswith("wrong "):
            assert " proved " in r, r
    assert all(" refuted " in r and "as expected" in r for r in rows if r.startswith("wrong "))
    assert "UNEXPECTED" not in done.stdout


def test_an_unexpected_status_makes_the_exit_status_non_zero(monkeypatch, capsys):
    claimed_wrong = rule("not_really_wrong", lambda x: x.T.T, lambda x: x, expect=REFUTED,
                         fails="value", x=("I", "J"))
    monkeypatch.setattr(wrong_module, "WRONG_RULES", [claimed_wrong])
    code = main(["prove", "--only", "not_really_wrong"])
    out = capsys.readouterr().out.strip().splitlines()
    assert code == 1
    assert out[-1] == "0 passed, 1 failed"
    assert any("UNEXPECTED" in line for line in out)


def test_only_matching_nothing_is_an_error(capsys):
    assert main(["prove", "--only", "no such item"]) == 2
    assert "no item matches --only 'no such item'" in capsys.readouterr().err


def test_only_filters_items(capsys):
    assert main(["prove", "--only", "rule slice_slice"]) == 0
    out = capsys.readouterr().out.strip().splitlines()
    assert FINAL.match(out[-1]).group(1) == "3"  # slice_slice, _steps, _start_steps


def test_smt2_dumps_a_query_z3_answers_unsat(capsys):
    assert main(["prove", "--smt2", "slice_concat_axis1"]) == 0
    text = capsys.readouterr().out
    assert text.startswith("; rule slice_concat_axis1") and "(check-sat)" in text
    s = z3.Solver()
    s.from_string(text)
    assert s.check() == z3.unsat


def test_smt2_of_an_unknown_rule_is_an_error(capsys):
    assert main(["prove", "--smt2", "no_such_rule"]) == 2
    assert "no rule named 'no_such_rule'" in capsys.readouterr().err


def test_kernel_prints_the_certificate_of_a_compiled_kernel(capsys):
    code = main(["prove", "--kernel", "sf.concat([a, b[::-1]], axis=0) * 2",
                 "-i", "a=csr:8x5", "-i", "b=coo:3x5", "--out", "csr"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert out.startswith("kernel certificate: proved  sha256:")
    assert "entry concat" in out and "entry slice" in out and "function multiply" in out


def test_kernel_inputs_must_be_spelled_out():
    with pytest.raises(SystemExit, match="NAME=FORMAT:SHAPE"):
        main(["prove", "--kernel", "a.T", "-i", "a=csr"])


def test_module_proves_a_users_own_rules_and_operators(monkeypatch, capsys):
    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parent))
    code = main(["prove", "--module", "my_rules"])
    out = capsys.readouterr().out.strip().splitlines()
    rows = {line.split()[1]: line for line in out[1:-2]}
    assert set(rows) == {"myflip", "unlisted", "reverse_twice", "slice_of_slice",
                         "slice_of_slice_wrong"}
    assert " proved " in rows["myflip"] and " proved " in rows["slice_of_slice"]
    assert " proved " in rows["reverse_twice"]
    assert " refuted " in rows["slice_of_slice_wrong"] and "as expected" in rows[
        "slice_of_slice_wrong"]
    # an operator without configurations() cannot be proved: a failure, not a silent pass
    assert "has no configurations()" in rows["unlisted"] and "UNEXPECTED" in rows["unlisted"]
    assert code == 1 and out[-1] == "4 passed, 1 failed"
    assert main(["prove", "--module", "my_rules", "--only", "myflip"]) == 0
    with pytest.raises(SystemExit, match="cannot import --module 'no_such_module_here'"):
        main(["prove", "--module", "no_such_module_here"])

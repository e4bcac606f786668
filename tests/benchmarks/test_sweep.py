"""``sparsefold bench --sweep`` at tiny sizes: a subset of the programs end to end (every one
correct, the CSV's columns, the report), a failing, crashing, hanging and wrong program
recorded as such without stopping the sweep, and the result check itself.

Every program is a child process that imports sparsefold and compiles its kernels (~2 s
each), so CI runs a subset; the run of every program (~69, a few minutes) is opt-in:
``SPARSEFOLD_SWEEP_ALL=1 pytest -m slow tests/benchmarks/test_sweep.py``."""

from __future__ import annotations

import csv
import os

import numpy as np
import pytest
import scipy.sparse as sp

from sparsefold.benchmarks import sweep
from sparsefold.cli import main

pytestmark = pytest.mark.cython

TINY = ["--sweep-n", "300", "--sweep-nnz", "3000", "--repeat", "2", "--no-progress"]
# one or two of each kind: n-ary, located line, view, dense-valued, reduction, contraction,
# sparse x sparse on the small tier, conversion
SUBSET = ["add3", "mul_v_add", "strided_mul", "add1", "sum1_mul", "matvec", "spgemm",
          "coo_to_csr"]


def _rows(out):
    with open(out / "sweep.csv", newline="") as fh:
        reader = csv.DictReader(fh)
        assert reader.fieldnames == sweep.FIELDS
        return list(reader)


def _check_all_correct(rows, names):
    assert [r["program"] for r in rows] == names
    for r in rows:
        assert r["correct"] == "yes", r
        assert r["error"] == "", r
        assert float(r["sparsefold_ms"]) > 0 and float(r["scipy_ms"]) > 0, r
        assert float(r["ratio"]) == pytest.approx(
            float(r["scipy_ms"]) / float(r["sparsefold_ms"]), rel=1e-2)
        assert 0 < float(r["rss_gb"]) < 4, r


def test_subset_is_correct(tmp_path, capsys):
    out = tmp_path / "sweep"
    assert main(["bench", "--sweep", *TINY, "--kernels", ",".join(SUBSET),
                 "--out", str(out)]) == 0
    rows = _rows(out)
    _check_all_correct(rows, SUBSET)
    by_name = {r["program"]: r for r in rows}
    assert by_name["add1"]["n"] == "3" and by_name["spgemm"]["n"] == "30"  # the tiers
    assert by_name["add3"]["result"] == "csr_array csr"
    assert by_name["matvec"]["result"] == "ndarray"
    printed = capsys.readouterr().out
    assert "| add3 | `A + B + C` | 300 | yes |" in printed
    assert f"geometric mean of scipy/ours over {len(SUBSET)} correct programs" in printed


@pytest.mark.slow
@pytest.mark.skipif(not os.environ.get("SPARSEFOLD_SWEEP_ALL"),
                    reason="every sweep program (minutes): set SPARSEFOLD_SWEEP_ALL=1")
def test_every_program_is_correct(tmp_path):
    rows = sweep.sweep(tmp_path, n=300, k=3000, repeat=2, progress=False)
    _check_all_correct(rows, [p.name for p in sweep.PROGRAMS])


INJECTED = '''
import os, signal, time
from sparsefold.benchmarks.sweep import Program

PROGRAMS = [
    Program("raises", "1 / 0", lambda A: 1 / 0, lambda A: A * 2),
    Program("crashes", "SIGKILL", lambda A: os.kill(os.getpid(), signal.SIGKILL),
            lambda A: A * 2),
    Program("scale", "A * 2", lambda A: A * 2, lambda A: A * 2),
    Program("wrong", "A * 3 vs A * 2", lambda A: A * 3, lambda A: A * 2),
    Program("scipy_fails", "A * 2 vs 1 / 0", lambda A: A * 2, lambda A: 1 / 0),
    Program("hangs", "sleep", lambda A: time.sleep(600), lambda A: A * 2),
]
'''


def test_failures_are_rows_and_the_sweep_goes_on(tmp_path):
    programs = tmp_path / "programs.py"
    programs.write_text(INJECTED)
    out = tmp_path / "sweep"
    rows = sweep.sweep(out, n=50, k=200, repeat=1, timeout=30,
                       programs_file=str(programs), progress=False)
    assert rows == _rows(out)
    by_name = {r["program"]: r for r in rows}
    assert list(by_name) == ["raises", "crashes", "scale", "wrong", "scipy_fails", "hangs"]

    raises = by_name["raises"]
    assert raises["correct"] == "no" and raises["sparsefold_ms"] == ""
    assert raises["error"].startswith("ZeroDivisionError: division by zero")
    assert float(raises["scipy_ms"]) > 0          # the other side still ran

    assert by_name["crashes"]["correct"] == "no"
    assert by_name["crashes"]["error"].startswith("SIGKILL")
    assert float(by_name["crashes"]["rss_gb"]) > 0  # from wait4: the child never reported

    assert by_name["scale"]["correct"] == "yes" and by_name["scale"]["error"] == ""

    wrong = by_name["wrong"]
    assert wrong["correct"] == "no" and float(wrong["sparsefold_ms"]) > 0
    assert wrong["error"].startswith("wrong: values differ at")

    assert by_name["scipy_fails"]["correct"] == "-"
    assert by_name["scipy_fails"]["error"].startswith("scipy: ZeroDivisionError")

    hangs = by_name["hangs"]
    assert hangs["correct"] == "no" and hangs["error"].startswith("Timeout: no result in 30 s")

    mean, count, below = sweep.geomean_ratio(rows)
    assert count == 1 and mean == pytest.approx(float(by_name["scale"]["ratio"]))
    report = sweep.report(rows, 50, 200)
    assert "wrong or failed: raises, crashes, wrong, hangs" in report


def test_unknown_program_name_is_refused(tmp_path):
    with pytest.raises(SystemExit, match="no sweep program named nope"):
        sweep.sweep(tmp_path, names=["add3", "nope"])


# ---- the result check, in process ----------------------------------------------------------

def _m(dense):
    return sp.csr_array(np.asarray(dense, dtype=np.float64))


def test_same_result_accepts_equal_results_in_any_container():
    a = _m([[1.0, 0, 2], [0, 3, 0]])
    assert sweep.same_result(a, a.tocoo(), "csr") == ""
    assert sweep.same_result(a.tocsc(), a, "csc") == ""
    assert sweep.same_result(a.toarray(), a, None) == ""           # dense vs sparse
    with_zero = sp.csr_array((np.array([1.0, 0, 2, 3]), np.array([0, 1, 2, 1]),
                              np.array([0, 3, 4])), shape=(2, 3))
    assert sweep.same_result(with_zero, a, "csr") == ""            # a stored zero is a zero
    assert sweep.same_result(np.float64(6.0), np.float64(6.0 + 1e-12), None) == ""


def test_same_result_finds_differences():
    a = _m([[1.0, 0, 2], [0, 3, 0]])
    b = _m([[1.0, 0, 2], [0, 3, 1e-3]])
    assert sweep.same_result(a, b, "csr").startswith("values differ at (1, 2)")
    assert sweep.same_result(a, a.T, "csr").startswith("shape (2, 3), expected (3, 2)")
    assert "expected a scipy csr array, found coo" in sweep.same_result(a.tocoo(), a, "csr")
    assert "expected a scipy csr array, found ndarray" in \
        sweep.same_result(a.toarray(), a, "csr")
    unsorted = sp.csr_array((np.array([2.0, 1, 3]), np.array([2, 0, 1]), np.array([0, 2, 3])),
                            shape=(2, 3))
    assert "not canonical" in sweep.same_result(unsorted, a, "csr")
    assert sweep.same_result(np.array([1.0, np.nan]), np.array([1.0, np.nan]), None) == ""
    assert sweep.same_result(np.array([1.0, 2.0]), np.array([1.0, np.nan]), None) != ""


def test_operands_are_deterministic_and_sized():
    ops, again = sweep.Operands(300, 3000), sweep.Operands(300, 3000)
    assert ops["A"].nnz == 3000 and ops["A"].format == "csr"
    assert (ops["A"] != again["A"]).nnz == 0
    assert ops["v"].shape == (1, 300) and ops["w"].shape == (300, 1) and ops["w"].format == "csc"
    assert ops["U"].nnz == 6000 and (ops["U"].tocsr() != ops["A"]).nnz == 0
    assert ops["S"].shape == (300, sweep.SKINNY_COLS)
    assert sweep.tier_size("small", 200_000, 2_000_000) == (20_000, 200_000)
    assert sweep.tier_size("dense", 200_000, 2_000_000) == (2_000, 20_000)
    for program in sweep.PROGRAMS:  # every argument is an operand, both sides alike
        names = sweep.operand_names(program.ours)
        assert names == sweep.operand_names(program.scipy), program.name
        for name in names:
            assert hasattr(sweep.Operands, "_make_" + name), (program.name, name)

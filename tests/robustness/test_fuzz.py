"""The malformed-input fuzzer (``sparsefold.verify.fuzz``) in CI: a bounded run in worker
subprocesses must show no failure and no crash, and the crash and hang detectors must
themselves be able to fail (a worker case that segfaults on purpose is reported as a crash
of that case, and the run continues after it).

The long run is off by default: ``SPARSEFOLD_FUZZ_ITERATIONS=5000 pytest -m slow
tests/robustness/test_fuzz.py`` (all configurations, dtypes and index widths; builds many
kernels). The bugs these runs found (/work/notes/compiler_failures.md §10-§16, fixed in
597eb60) each keep a targeted run as a regression test.
"""

import os

import pytest

from sparsefold.verify import fuzz

pytestmark = pytest.mark.cython

BOUNDED = 300  # 10 cases per core configuration: ~5 s with built kernels, ~30 s from cold

# A targeted run per bug the fuzzer found: (mutations, formats, programs) and a case count.
# Each showed its bug at 56d68ee (§10 as segfaults of the worker); all must pass now. Where
# possible the programs are core configurations of those formats, so the kernels are the
# bounded run's.
REGRESSIONS = {
    "§10 scipy csc storage whose shape claims another rank (segfault in scipy's tocoo)": (
        dict(mutations=("shape_rank",), formats=("csc",), programs=("collapse", "pad", "max0")),
        12),
    "§11 COO data longer than its coordinates": (
        dict(mutations=("data_long",), formats=("coo",), programs=("collapse_split",)), 4),
    "§12 pydata COO duplicates on the dense path (last value instead of the sum)": (
        dict(mutations=("duplicates",), formats=("pd_coo",), programs=("add",)), 4),
    "§13 pydata GCXS canonicalized in place": (
        dict(mutations=("unsorted",), formats=("pd_gcxs",), programs=("multiply",)), 4),
    "§14 pydata fill_value other than 0 ignored": (
        dict(mutations=("fill_value_nonzero",), programs=("add", "multiply")), 4),
    "§15 the dense path densified the caller's object (uint64 indices)": (
        dict(mutations=("index_uint64",), formats=("csc",), programs=("plus1",)), 4),
    "§16 the dense path did not check data of vectors and GCXS": (
        dict(mutations=("data_short", "data_2d"), formats=("pd_gcxs",), programs=("plus1",)),
        4),
}


@pytest.fixture(scope="module")
def bounded():
    return fuzz.run(BOUNDED, seed=0, jobs=2)


def test_bounded_run_has_no_failure_or_crash(bounded):
    assert len(bounded.results) == BOUNDED, bounded.summary()
    assert bounded.ok, bounded.summary()


def test_bounded_run_covers_every_mutation_family_format_and_output(bounded):
    """The run is not vacuous: every mutation, family, format and output was tried, and
    both errors and correct results came back."""
    seen = {key: {getattr(r, key) for r in bounded.results}
            for key in ("mutation", "family", "format", "out")}
    assert seen["mutation"] == {m.name for m in fuzz.MUTATIONS}
    assert seen["family"] == {p.family for p in fuzz.programs()}
    assert seen["format"] == {"csr", "csc", "coo", "pd_coo", "pd_gcxs", "vec", "coo1",
                              "pd_coo1"}
    assert seen["out"] == {"csr", "csc", "coo", "dense"}
    assert {"error", "correct"} <= {r.outcome for r in bounded.results}


@pytest.mark.parametrize("bug", [pytest.param(name, id=name.split()[0][1:])
                                 for name in REGRESSIONS])
def test_regression_targeted_run(bug):
    """The targeted run that found a bug: no failure and no crash (each case in a worker
    subprocess, so a returning segfault is reported, not suffered)."""
    only, n = REGRESSIONS[bug]
    report = fuzz.run(n, seed=3, jobs=2, **only)
    assert len(report.results) == n and report.ok, report.summary()
    assert {r.outcome for r in report.results} & {"error", "correct", "unread"}


def test_crash_detector_reports_the_case_and_continues():
    """A worker that segfaults on purpose (``ctypes.string_at(0)``) at case 2: the driver
    reports a crash of case 2 with the signal, restarts, and runs every other case."""
    report = fuzz.run(6, seed=0, jobs=1, inject={2: "crash"})
    crashes = report.crashes
    assert [r.index for r in crashes] == [2], report.summary()
    assert crashes[0].outcome == "crash"
    assert "signal 11" in crashes[0].detail and "Segmentation fault" in crashes[0].detail
    assert sorted(r.index for r in report.results) == list(range(6))
    assert report.restarts == 1 and not report.ok
    assert "1 failed" in report.summary() and "--replay 0:2" in report.summary()


def test_hang_detector_kills_the_worker_and_continues():
    report = fuzz.run(3, seed=0, jobs=1, inject={1: "hang"}, case_timeout=3)
    assert [(r.index, r.outcome) for r in report.crashes] == [(1, "hang")], report.summary()
    assert sorted(r.index for r in report.results) == [0, 1, 2]


def test_cases_are_deterministic():
    a, b = fuzz.make_case(7, 11), fuzz.make_case(7, 11)
    assert a.describe() == b.describe()
    assert repr(a.args[a.target]) == repr(b.args[b.target])
    assert (a.reference is None) == (b.reference is None)


def test_time_budget_stops_starting_cases():
    report = fuzz.run(100_000, seed=0, jobs=1, time_budget=0.0)
    assert len(report.results) < 100_000 and report.ok


@pytest.mark.slow
@pytest.mark.skipif(not os.environ.get("SPARSEFOLD_FUZZ_ITERATIONS"),
                    reason="long fuzz run: set SPARSEFOLD_FUZZ_ITERATIONS=N")
def test_long_fuzz_run():
    n = int(os.environ["SPARSEFOLD_FUZZ_ITERATIONS"])
    seed = int(os.environ.get("SPARSEFOLD_FUZZ_SEED", "1"))
    report = fuzz.run(n, seed=seed, full=True)
    print(report.summary())
    assert report.ok, report.summary()


def test_cli_fuzz_prints_the_summary(capsys):
    from sparsefold.cli import main
    rc = main(["fuzz", "--iterations", "4", "--seed", "0", "--jobs", "1"])
    out = capsys.readouterr().out
    last = out.strip().splitlines()[-1]
    assert last.endswith("failed") and "passed" in last
    assert rc == (0 if last.endswith(" 0 failed") else 1)
    assert "mutation" in out and "kernel family" in out and "output format" in out
    assert main(["fuzz", "--replay", "0:1"]) in (0, 1)
    assert '"index": 1' in capsys.readouterr().out

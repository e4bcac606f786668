"""The malformed-input fuzzer (``sparsefold.verify.fuzz``) in CI: a bounded run in worker
subprocesses must show no failure and no crash beyond the known bugs listed below, and the
crash and hang detectors must themselves be able to fail (a worker case that segfaults on
purpose is reported as a crash of that case, and the run continues after it).

The long run is off by default: ``SPARSEFOLD_FUZZ_ITERATIONS=5000 pytest -m slow
tests/robustness/test_fuzz.py`` (all configurations, dtypes and index widths; builds many
kernels). Each known bug has a strict xfail that passes once the bounded run no longer
shows it; the section numbers refer to /work/notes/compiler_failures.md.
"""

import os

import pytest

from sparsefold.verify import fuzz

pytestmark = pytest.mark.cython

BOUNDED = 300  # 10 cases per core configuration; ~5 s with built kernels, ~45 s from cold

# Known bugs: a predicate on a failed case, and a targeted run that shows the bug
# (mutations, formats, programs, cases). Sections of /work/notes/compiler_failures.md.
KNOWN = {
    "§10 scipy compressed array whose shape has another rank: scipy's tocoo unvalidated": (
        lambda r: r.mutation == "shape_rank" and r.format in ("csc", "csr", "vec"),
        dict(mutations=("shape_rank",), formats=("csc",), programs=("scale", "transpose")), 16),
    "§11 COO data longer than its coordinates is accepted": (
        lambda r: r.mutation in ("data_long", "coords_ragged") and "coo" in r.format,
        dict(mutations=("data_long",), formats=("coo", "pd_coo"), programs=("transpose",)), 4),
    "§12 pydata COO duplicates: dense-strategy kernels keep the last, not the sum": (
        lambda r: r.format.startswith("pd_coo") and r.mutation in ("duplicates",
                                                                   "explicit_zeros"),
        dict(mutations=("duplicates",), formats=("pd_coo",), programs=("plus1",)), 4),
    "§13 pydata GCXS canonicalized in place (the caller's arrays are sorted)": (
        lambda r: r.format == "pd_gcxs" and "was modified" in r.detail,
        dict(mutations=("unsorted",), formats=("pd_gcxs",), programs=("scale",)), 4),
    "§14 pydata fill_value other than 0 is ignored": (
        lambda r: r.mutation == "fill_value_nonzero",
        dict(mutations=("fill_value_nonzero",), programs=("scale",)), 4),
    "§15 the dense path densifies the caller's object (uint64 indices, unread tails)": (
        lambda r: (r.mutation == "index_uint64" and any(
            m in r.detail for m in ("unsupported data types", "only int indices"))) or
        (r.mutation == "indices_tail_unread" and r.format == "pd_gcxs"),
        dict(mutations=("index_uint64",), formats=("csr", "coo"), programs=("plus1",)), 4),
    "§16 the dense path does not check data of 1-d csr vectors and pydata GCXS": (
        lambda r: r.mutation in ("data_short", "data_2d", "data_long")
        and r.format in ("vec", "pd_gcxs"),
        dict(mutations=("data_short", "data_2d"), formats=("pd_gcxs",), programs=("plus1",)),
        4),
}


def _known(r) -> str | None:
    return next((name for name, (hit, _, _) in KNOWN.items() if hit(r)), None)


@pytest.fixture(scope="module")
def bounded():
    return fuzz.run(BOUNDED, seed=0, jobs=2)


def test_bounded_run_has_no_unknown_failure_or_crash(bounded):
    unknown = [r for r in bounded.failures if _known(r) is None]
    assert len(bounded.results) == BOUNDED, bounded.summary()
    assert not unknown, bounded.summary()


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


_TARGETED: dict[str, fuzz.FuzzReport] = {}


def _targeted(bug: str) -> fuzz.FuzzReport:
    """The targeted run at ``bug`` (each case in a worker subprocess, so the segfault of
    §10 is reported, not suffered); run once per session."""
    if bug not in _TARGETED:
        _, only, n = KNOWN[bug]
        _TARGETED[bug] = fuzz.run(n, seed=3, jobs=2, **only)
    return _TARGETED[bug]


@pytest.mark.parametrize("bug", [pytest.param(name, marks=pytest.mark.xfail(
    strict=True, reason=f"compiler_failures.md {name.split()[0]}"), id=name.split()[0][1:])
    for name in KNOWN])
def test_known_bug_fixed(bug):
    """No failure and no crash in the targeted run at a known bug."""
    report = _targeted(bug)
    assert report.ok, report.summary()
    assert {r.outcome for r in report.results} & {"error", "correct", "unread"}


@pytest.mark.parametrize("bug", [pytest.param(name, id=name.split()[0][1:]) for name in KNOWN])
def test_known_bug_is_what_its_targeted_run_shows(bug):
    """Today the targeted run fails only in the way its predicate describes (so the strict
    xfail above cannot pass, or fail, for an unrelated reason). Delete with the xfail when
    the bug is fixed."""
    report = _targeted(bug)
    assert report.failures and all(_known(r) == bug for r in report.failures), report.summary()


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
    report = fuzz.run(3, seed=0, jobs=1, inject={1: "hang"}, case_timeout=4)
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
    unknown = [r for r in report.failures if _known(r) is None]
    assert not unknown, report.summary()


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

"""Fuzzing compiled kernels with malformed and non-canonical sparse inputs (issue #6 §1, §2).

Each *case* takes a valid sparse input (scipy csr/csc/coo, 1-d csr/coo vectors, pydata
COO/GCXS), applies one *mutation* of ``fuzz_mutations.MUTATIONS`` (a broken ``indptr``,
coordinates out of range, index arrays of a foreign dtype, a stale ``has_canonical_format``
flag, unsorted or duplicated entries, ...) and calls one program of
``fuzz_cases.programs()`` (every kernel family: shape ops, maps, merges, reductions,
contractions) compiled for one output format. Every mutation states what is acceptable:

* ``invalid`` — :class:`InvalidData` / :class:`IllFormedProgram` whose message contains
  one of the mutation's pieces (it names the problem);
* ``valid`` — non-canonical but meaningful data: the result must equal the interpreter on
  the input's meaning, computed here independently (coordinates scatter-added with NumPy);
* ``either`` — coordinates out of range: an error as above, or (when the kernel never reads
  the bad entries, e.g. a row a strided slice skips) the result on the input with the bad
  entries *dropped*. A kernel that reads a bad entry gives neither;
* ``trusted`` — a stale ``has_canonical_format=True`` on unsorted or duplicated arrays. The
  flag may skip the sortedness scan (issue #6), never a memory check: any error named as
  above, or a result whose storage is memory-sound (values not guaranteed; counted apart).

Anything else — another exception, a wrong value, malformed result storage, a crash or a
hang — is a failure. Crashes are caught by running cases in a **worker subprocess**
(``python -m sparsefold.verify.fuzz --worker``) that writes each case's description to a
progress file before running it: when the worker dies (a negative return code is a signal),
the driver knows which case killed it, records it with its seed and restarts after it.

    from sparsefold.verify import fuzz
    report = fuzz.run(iterations=300, seed=0)       # bounded: the core configurations
    print(report.summary()); assert report.ok
    fuzz.replay(seed=0, index=17)                   # one case in this process, described

``sparsefold fuzz --iterations N --seed S [--time-budget SECONDS] [--full]`` is the CLI.
Everything is deterministic from ``(seed, index)``. This module is the driver, the worker,
the report and the CLI; ``fuzz_cases`` holds the programs and cases, ``fuzz_mutations`` the
malformations and the oracle's ``meaning``. User guide: ``docs/reliability.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import traceback
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from sparsefold.verify.fuzz_cases import CaseResult, make_case, programs, replay, run_case
from sparsefold.verify.fuzz_mutations import MUTATIONS

__all__ = ["run", "FuzzReport", "OUTCOMES", "make_case", "run_case", "replay", "programs",
           "MUTATIONS", "add_parser", "main"]

OUTCOMES = ("error", "correct", "unread", "trusted", "failure", "crash", "hang")
# outcomes that fail a run (the last two: random programs, ``--programs``)
FAILING = ("failure", "crash", "hang", "dense-work", "superlinear")
_STARTUP_TIMEOUT_S = 300.0  # a worker silent this long before its first case is stuck


# --- the worker: runs cases, reporting each before it starts ------------------------------

def _worker(seed: int, indices: range, full: bool, progress: Path, deadline: float | None,
            inject: dict[int, str], only: dict, cases: Path | None = None,
            scale: bool = True) -> int:
    import faulthandler
    faulthandler.enable()  # a crash leaves its Python stack on stderr for the report
    programs = None
    if cases is not None:  # random programs (program_fuzz), pickled by the driver
        import pickle
        programs = pickle.loads(cases.read_bytes())
    with open(progress, "a", buffering=1) as log:
        for index in indices:
            if deadline is not None and time.time() > deadline:
                log.write(json.dumps({"stopped": index}) + "\n")
                break
            log.write(json.dumps({"start": index}) + "\n")
            if inject.get(index) == "crash":  # proves the driver sees a dead worker
                import ctypes
                ctypes.string_at(0)
            if inject.get(index) == "hang":
                time.sleep(3600)
            try:
                if programs is not None:
                    from sparsefold.verify import program_fuzz
                    log.write(json.dumps({"case": programs[index].describe()}) + "\n")
                    result = program_fuzz.run_case(programs[index], scale=scale)
                else:
                    case = make_case(seed, index, full, **only)
                    log.write(json.dumps({"case": case.describe()}) + "\n")
                    result = run_case(case)
            except Exception as exc:  # noqa: BLE001 - a harness error is a failure too
                desc = {"index": index, "seed": seed, "mutation": "?", "group": "?",
                        "program": "?", "family": "?", "format": "?", "out": "?"}
                result = CaseResult.of(desc, "failure", "harness error: " + "".join(
                    traceback.format_exception(exc)[-3:]))
            log.write(json.dumps({"done": index, "result": result.__dict__}) + "\n")
    return 0


# --- the driver: spawns workers, detects crashes and hangs, restarts --------------------------

@dataclass
class FuzzReport:
    """Every case's result, and how the run went."""

    seed: int
    iterations: int
    full: bool
    jobs: int
    only: dict = field(default_factory=dict)
    results: list[CaseResult] = field(default_factory=list)
    seconds: float = 0.0
    restarts: int = 0
    programs: list | None = field(default=None, repr=False)  # run_programs' cases

    @property
    def failures(self) -> list[CaseResult]:
        return [r for r in self.results if r.outcome in FAILING]

    @property
    def crashes(self) -> list[CaseResult]:
        return [r for r in self.results if r.outcome in ("crash", "hang")]

    @property
    def ok(self) -> bool:
        return not self.failures

    def table(self, key: str) -> dict[str, Counter]:
        rows: dict[str, Counter] = {}
        for r in self.results:
            rows.setdefault(getattr(r, key), Counter())[r.outcome] += 1
        return dict(sorted(rows.items()))

    def summary(self) -> str:
        """Tables of outcomes by mutation, kernel family, input and output format; then
        every failure and crash with its replay command; then ``N passed, N failed``."""
        lines = [f"sparsefold fuzz: seed {self.seed}, {len(self.results)} of "
                 f"{self.iterations} cases ({'all' if self.full else 'core'} configurations), "
                 f"{self.jobs} worker(s), {self.seconds:.1f} s, {self.restarts} restart(s)"]
        for key, title in (("mutation", "mutation"), ("family", "kernel family"),
                           ("format", "input format"), ("out", "output format")):
            lines += ["", _format_table(title, self.table(key))]
        for r in self.failures:
            lines.append(f"\n{r.outcome.upper()} case {r.index} (seed {r.seed}): "
                         f"{r.mutation} / {r.program} / {r.format} -> {r.out}\n  "
                         + r.detail.strip().replace("\n", "\n  ")
                         + f"\n  replay: {self.replay_command(r.index)}")
        passed = len(self.results) - len(self.failures)
        lines.append(f"\n{passed} passed, {len(self.failures)} failed")
        return "\n".join(lines)

    def replay_command(self, index: int) -> str:
        """The command that runs case ``index`` of this run in one process."""
        flags = "".join(f" --{k} {','.join(v)}" for k, v in self.only.items() if v)
        return (f"python -m sparsefold.verify.fuzz --replay {self.seed}:{index}"
                f"{' --full' if self.full else ''}{flags}")

    def to_json(self) -> dict:
        return {"seed": self.seed, "iterations": self.iterations, "full": self.full,
                "only": self.only, "jobs": self.jobs, "seconds": self.seconds,
                "restarts": self.restarts,
                "results": [r.__dict__ for r in self.results]}


def _format_table(title: str, rows: dict[str, Counter]) -> str:
    cols = [o for o in OUTCOMES if any(c[o] for c in rows.values())] or ["error"]
    width = max([len(title)] + [len(k) for k in rows]) + 2
    head = title.ljust(width) + "".join(c.rjust(9) for c in cols) + "total".rjust(8)
    body = [k.ljust(width) + "".join(str(c[o]).rjust(9) for o in cols)
            + str(sum(c.values())).rjust(8) for k, c in rows.items()]
    total = Counter()
    for c in rows.values():
        total.update(c)
    foot = "total".ljust(width) + "".join(str(total[o]).rjust(9) for o in cols) \
        + str(sum(total.values())).rjust(8)
    return "\n".join([head, *body, foot])


class _Job:
    """One worker slot: the cases ``range(start, stop, step)`` still to run."""

    def __init__(self, todo: range, tmp: Path, slot: int):
        self.todo, self.tmp, self.slot = todo, tmp, slot
        self.proc: subprocess.Popen | None = None
        self.launches = 0

    def launch(self, seed: int, full: bool, deadline: float | None, inject: dict,
               only: dict, extra: tuple[str, ...] = ()) -> None:
        self.launches += 1
        tag = f"w{self.slot}-{self.launches}"
        self.progress = self.tmp / f"{tag}.jsonl"
        self.stderr_path = self.tmp / f"{tag}.err"
        self.offset, self.started, self.case, self.done = 0, None, None, set()
        cmd = [sys.executable, "-m", "sparsefold.verify.fuzz", "--worker", "--seed", str(seed),
               "--range", f"{self.todo.start}:{self.todo.stop}:{self.todo.step}",
               "--progress", str(self.progress)]
        if full:
            cmd.append("--full")
        if deadline is not None:
            cmd += ["--deadline", repr(deadline)]
        if inject:
            cmd += ["--inject", ",".join(f"{k}={v}" for k, v in sorted(inject.items()))]
        for key, names in only.items():
            if names:
                cmd += [f"--{_FLAGS.get(key, key)}", ",".join(names)]
        cmd += list(extra)
        self.stderr = open(self.stderr_path, "w")
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=self.stderr,
                                     env=dict(os.environ, PYTHONFAULTHANDLER="1"))
        self.last = time.time()

    def read(self, report: FuzzReport) -> None:
        """New progress lines: results are recorded, the running case remembered."""
        if not self.progress.exists():
            return
        with open(self.progress) as f:
            f.seek(self.offset)
            chunk = f.read()
        complete = chunk[:chunk.rfind("\n") + 1]
        self.offset += len(complete)
        for line in complete.splitlines():
            msg = json.loads(line)
            self.last = time.time()
            if "start" in msg:
                self.started, self.case = msg["start"], None
            elif "case" in msg:
                self.case = msg["case"]
            elif "done" in msg:
                report.results.append(CaseResult(**msg["result"]))
                self.done.add(msg["done"])
                self.started = None
            elif "stopped" in msg:
                self.todo = range(0)

    def stderr_tail(self, n: int = 25) -> str:
        self.stderr.flush()
        lines = self.stderr_path.read_text(errors="replace").splitlines()
        return "\n".join(lines[-n:])

    def lost(self, report: FuzzReport, outcome: str, why: str) -> None:
        """The running case killed (or hung) its worker: record it, skip past it."""
        index = self.started
        desc = self.case or {"index": index, "seed": report.seed, "mutation": "?",
                             "group": "?", "program": "?", "family": "?", "format": "?",
                             "out": "?"}
        desc = dict(desc, index=index, seed=report.seed)
        report.results.append(CaseResult.of(desc, outcome, f"{why}\n{self.stderr_tail()}"))
        self.todo = range(index + self.todo.step, self.todo.stop, self.todo.step)


def run(iterations: int, seed: int = 0, *, full: bool = False, jobs: int | None = None,
        time_budget: float | None = None, case_timeout: float = 300.0,
        mutations: tuple[str, ...] | None = None, formats: tuple[str, ...] | None = None,
        programs: tuple[str, ...] | None = None, inject: dict[int, str] | None = None,
        cases: Path | None = None, scale: bool = True) -> FuzzReport:
    """Run cases ``0 .. iterations-1`` of ``seed`` in worker subprocesses (``jobs`` at a
    time, default: up to 2 per CPU count); a worker that dies mid-case is recorded as a
    ``crash`` of that case and restarted after it; one silent for ``case_timeout`` seconds
    (a kernel build counts) is killed and its case recorded as a ``hang``. No new case
    starts after ``time_budget`` seconds. ``mutations`` / ``formats`` / ``programs``
    restrict the cases (a targeted run). ``inject`` maps case indices to "crash"/"hang"
    (testing the detector itself). ``cases``: a pickled list of
    ``program_fuzz.ProgramCase`` run instead of the malformed-input cases (``scale``: with
    their scale check); see :func:`run_programs`."""
    extra = () if cases is None else ("--cases", str(cases)) + (() if scale
                                                                 else ("--no-scale",))
    jobs = max(1, min(jobs or min(2, os.cpu_count() or 1), iterations or 1))
    only = {"mutations": tuple(mutations) if mutations else None,
            "formats": tuple(formats) if formats else None,
            "programs": tuple(programs) if programs else None}
    report = FuzzReport(seed, iterations, full, jobs, only)
    start = time.time()
    deadline = start + time_budget if time_budget is not None else None
    with tempfile.TemporaryDirectory(prefix="sparsefold-fuzz-") as tmp:
        slots = [_Job(range(w, iterations, jobs), Path(tmp), w) for w in range(jobs)]
        for job in slots:
            if job.todo:
                job.launch(seed, full, deadline, inject or {}, only, extra)
        while any(j.proc is not None for j in slots):
            time.sleep(0.05)
            for job in slots:
                if job.proc is None:
                    continue
                job.read(report)
                rc = job.proc.poll()
                # outside a case (a worker starting: importing NumPy, SciPy, Z3) the limit is
                # generous, so a loaded machine's slow start is not mistaken for a hang
                limit = case_timeout if job.started is not None else max(case_timeout,
                                                                          _STARTUP_TIMEOUT_S)
                if rc is None and time.time() - job.last > limit:
                    job.proc.kill()  # the worker we started, by its own handle
                    job.proc.wait()
                    job.read(report)
                    if job.started is None:
                        raise RuntimeError(f"fuzz worker silent for {limit:.0f} s "
                                           f"outside a case:\n{job.stderr_tail()}")
                    job.lost(report, "hang", f"no progress for {case_timeout:.0f} s")
                elif rc is None:
                    continue
                else:
                    job.read(report)
                    if job.started is not None:
                        why = (f"worker killed by signal {-rc}" if rc < 0 else
                               f"worker exited with code {rc}")
                        job.lost(report, "crash", why)
                    elif rc != 0:
                        raise RuntimeError(f"fuzz worker failed outside a case (code {rc}):"
                                           f"\n{job.stderr_tail()}")
                    else:
                        job.todo = range(0)
                job.stderr.close()
                job.proc = None
                if job.todo and (deadline is None or time.time() < deadline):
                    report.restarts += 1
                    job.launch(seed, full, deadline, inject or {}, only, extra)
    report.results.sort(key=lambda r: r.index)
    report.seconds = time.time() - start
    return report


# --- command line -----------------------------------------------------------------------------

def _options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--iterations", type=int, default=1000, help="number of cases")
    p.add_argument("--seed", type=int, default=0, help="run seed (cases are (seed, index))")
    p.add_argument("--time-budget", type=float, default=None,
                   help="start no case after this many seconds")
    p.add_argument("--full", action="store_true",
                   help="every program x format x output, dtypes and index widths (many "
                   "more kernels to build) instead of the core configurations")
    p.add_argument("--jobs", type=int, default=None, help="worker processes (default 2)")
    p.add_argument("--case-timeout", type=float, default=300.0,
                   help="seconds without progress before a worker counts as hung")
    p.add_argument("--json", type=Path, default=None, help="write every result here")
    p.add_argument("--mutations", default=None, help="only these mutations (comma list)")
    p.add_argument("--formats", default=None, help="only these input formats (comma list)")
    p.add_argument("--programs", type=int, default=None, metavar="N",
                   help="fuzz N random programs over the whole language instead "
                   "(compiled against the interpreter, checked for dense work and "
                   "superlinear time; verify/program_fuzz.py)")
    p.add_argument("--no-scale", action="store_true",
                   help="with --programs: skip the scale (linear work) check")
    p.add_argument("--depth", type=int, default=5, help="with --programs: at most this "
                   "many rows per program")
    p.add_argument("--only-programs", default=None,
                   help="only these programs of the malformed-input catalogue (comma list)")
    p.add_argument("--replay", default=None, metavar="SEED:INDEX",
                   help="run one case in this process and describe it")


def _run_cli(args: argparse.Namespace) -> int:
    if args.programs is not None:
        return _run_programs_cli(args)
    if args.replay:
        seed, index = (int(x) for x in args.replay.split(":"))
        result = replay(seed, index, args.full, **_only(args))
        return 0 if result.outcome not in ("failure",) else 1
    report = run(args.iterations, args.seed, full=args.full, jobs=args.jobs,
                 time_budget=args.time_budget, case_timeout=args.case_timeout, **_only(args))
    print(report.summary())
    if args.json:
        args.json.write_text(json.dumps(report.to_json(), indent=1))
    return 0 if report.ok else 1


def _only(args: argparse.Namespace) -> dict:
    return {k: tuple(v.split(",")) if v else None
            for k, v in (("mutations", args.mutations), ("formats", args.formats),
                         ("programs", args.only_programs))}


_FLAGS = {"programs": "only-programs"}  # run()'s keyword -> its command-line flag


def run_programs(count: int, seed: int = 0, *, jobs: int | None = None,
                 time_budget: float | None = None, case_timeout: float = 300.0,
                 scale: bool = True, max_depth: int = 5) -> FuzzReport:
    """``count`` random programs of ``seed`` (``program_fuzz.generate``) in worker
    subprocesses, each judged by ``program_fuzz.check``."""
    import pickle

    from sparsefold.verify import program_fuzz
    programs = program_fuzz.generate(seed, count, max_depth=max_depth)
    with tempfile.TemporaryDirectory(prefix="sparsefold-programs-") as tmp:
        path = Path(tmp) / "cases.pickle"
        path.write_bytes(pickle.dumps(programs))
        report = run(len(programs), seed, jobs=jobs, time_budget=time_budget,
                     case_timeout=case_timeout, cases=path, scale=scale)
    report.programs = programs
    return report


def _run_programs_cli(args: argparse.Namespace) -> int:
    from sparsefold.verify import program_fuzz
    if args.replay:
        seed, index = (int(x) for x in args.replay.split(":"))
        case = program_fuzz.generate(seed, max(args.programs, index + 1),
                                     max_depth=args.depth)[index]
        print(case.source, "out =", case.out)
        result = program_fuzz.run_case(case, scale=not args.no_scale)
        print(result.outcome, result.detail)
        return 0 if result.outcome in ("correct", "unsupported", "ill-formed") else 1
    report = run_programs(args.programs, args.seed, jobs=args.jobs,
                          time_budget=args.time_budget, case_timeout=args.case_timeout,
                          scale=not args.no_scale, max_depth=args.depth)
    print(program_fuzz.summary(report, args))
    if args.json:
        args.json.write_text(json.dumps(report.to_json(), indent=1))
    return 0 if report.ok else 1


def add_parser(subparsers) -> None:
    """Register ``sparsefold fuzz``."""
    p = subparsers.add_parser(
        "fuzz", help="throw malformed sparse inputs at compiled kernels (in subprocesses)",
        description=__doc__.split("\n\n")[0])
    _options(p)
    p.set_defaults(run=_run_cli)


def main(argv: list[str] | None = None) -> int:
    """``python -m sparsefold.verify.fuzz``: the CLI's options, plus ``--worker``."""
    p = argparse.ArgumentParser(prog="python -m sparsefold.verify.fuzz")
    _options(p)
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--range", default=None, help=argparse.SUPPRESS)
    p.add_argument("--progress", type=Path, default=None, help=argparse.SUPPRESS)
    p.add_argument("--deadline", type=float, default=None, help=argparse.SUPPRESS)
    p.add_argument("--inject", default="", help=argparse.SUPPRESS)
    p.add_argument("--cases", type=Path, default=None, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.worker:
        start, stop, step = (int(x) for x in args.range.split(":"))
        inject = {int(k): v for k, v in (x.split("=") for x in args.inject.split(",") if x)}
        return _worker(args.seed, range(start, stop, step), args.full, args.progress,
                       args.deadline, inject, _only(args), args.cases, not args.no_scale)
    return _run_cli(args)


if __name__ == "__main__":
    sys.exit(main())


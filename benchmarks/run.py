"""The runner behind ``sparsefold bench``: every selected kernel on every selected matrix,
each system warmed up, checked against scipy, then timed; one CSV row per (kernel, matrix,
system), appended as it is measured, so an interrupted run keeps what it measured.

Systems: ``sparsefold`` (one fused kernel), ``scipy``, ``pydata`` (pydata/sparse) or
``unfused`` (two sparsefold kernels and a materialized intermediate, fusion group), and
``floor`` (NumPy copies, see ``kernels.floor_arrays``).

Statuses: ok; timeout; wrong (differs from scipy — its time does not count); error (raised;
the message is in ``detail``); unchecked (scipy itself failed, so nothing could be checked);
unavailable (pydata/sparse not installed).
"""

from __future__ import annotations

import argparse
import csv
import gc
import datetime as _dt
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

from sparsefold.benchmarks import inputs
from sparsefold.benchmarks.check import Mismatch, baseline_entries, compare, result_entries
from sparsefold.benchmarks.timing import Timeout, best_of, call_with_timeout, steady_malloc

__all__ = ["FIELDS", "add_parser", "run", "run_suite", "select_matrices", "select_kernels",
           "read_rows"]

FIELDS = ("run_id", "kernel", "group", "matrix", "source", "rows", "cols", "nnz", "system",
          "status", "seconds", "first_seconds", "runs", "out_nnz", "detail")

# The warm-up call may compile (our kernel: ~1 s; pydata's numba: a few seconds the first
# time per signature), so it gets this much on top of the per-call timeout.
COMPILE_ALLOWANCE = 60.0


def _kernels():
    from sparsefold.benchmarks import kernels  # imports sparsefold's jit: deferred for --help
    return kernels


def select_kernels(names: list[str] | None):
    ks = _kernels()
    if not names:
        return list(ks.KERNELS)
    by_name = {k.name: k for k in ks.KERNELS}
    unknown = [n for n in names if n not in by_name and n not in ks.GROUPS]
    if unknown:
        raise SystemExit(f"unknown kernel(s) {', '.join(unknown)}; choose from "
                         f"{', '.join(by_name)} or a group ({', '.join(ks.GROUPS)})")
    return [k for k in ks.KERNELS if k.name in names or k.group in names]


def select_matrices(names: list[str] | None, *, quick: bool, scale: bool,
                    matrix_dir: Path | None) -> list[inputs.MatrixInfo]:
    real = inputs.suitesparse_infos(matrix_dir)
    generated = inputs.scale_infos()
    if names:
        by_name = {m.name: m for m in real + generated + [inputs.OVERHEAD]}
        unknown = [n for n in names if n not in by_name]
        if unknown:
            raise SystemExit(f"unknown matrix name(s) {', '.join(unknown)} (see --list)")
        chosen = [by_name[n] for n in names]
    elif quick:
        chosen = [m for m in real if m.name in inputs.QUICK_MATRICES]
    else:
        chosen = list(real)
    if scale:
        chosen += [m for m in generated if m not in chosen]
    if not names:  # the call-overhead probe runs first, with every default selection
        chosen.insert(0, inputs.OVERHEAD)
    return chosen


def _row(base: dict, system: str, status: str, **fields) -> dict:
    row = dict(base, system=system, status=status)
    row.update({k: v for k, v in fields.items() if v is not None})
    return {f: row.get(f, "") for f in FIELDS}


def _short(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}".replace("\n", " ")
    return text if len(text) <= 300 else text[:297] + "..."


def _measure(base, system, fn, check, repeat, timeout) -> dict:
    """Warm up ``fn`` (checking its result with ``check``, which returns the result's nnz),
    then time it. Returns the CSV row."""
    if fn is None:
        return _row(base, system, "unavailable", detail="pydata/sparse is not installed")
    try:
        result, first = call_with_timeout(fn, timeout + COMPILE_ALLOWANCE)
    except Timeout as exc:
        return _row(base, system, "timeout", detail=f"warm-up {exc}")
    except Exception as exc:  # any failure of the system under test is data, not a crash
        return _row(base, system, "error", detail=_short(exc))
    try:
        out_nnz = check(result)
    except Mismatch as exc:
        return _row(base, system, "wrong", first_seconds=f"{first:.6g}", detail=str(exc))
    except Exception as exc:
        return _row(base, system, "error", first_seconds=f"{first:.6g}",
                    detail="checking: " + _short(exc))
    del result
    timing = best_of(fn, repeat, timeout)
    if timing.status != "ok":
        return _row(base, system, timing.status, first_seconds=f"{first:.6g}",
                    runs=timing.runs, out_nnz=out_nnz, detail=f"a run exceeded {timeout:g} s")
    return _row(base, system, "ok", seconds=f"{timing.best:.6g}", first_seconds=f"{first:.6g}",
                runs=timing.runs, out_nnz=out_nnz)


def bench_case(kernel, info, matrix, run_id: str, repeat: int, timeout: float) -> list[dict]:
    """The CSV rows of one kernel on one matrix (scipy, sparsefold, other, floor)."""
    base = dict(run_id=run_id, kernel=kernel.name, group=kernel.group, matrix=info.name,
                source=info.source, rows=matrix.shape[0], cols=matrix.shape[1], nnz=matrix.nnz)
    systems = ("scipy", "sparsefold", kernel.other, "floor")
    try:
        case = kernel.prepare(matrix)
    except Exception as exc:
        return [_row(base, s, "error", detail="preparing inputs: " + _short(exc))
                for s in systems]
    reference = {}

    def check_scipy(result):
        reference["entries"] = baseline_entries(result)
        return reference["entries"].nnz

    def check_ours(result):
        got = result_entries(result, kernel.out)
        compare(got, reference["entries"], case.out_shape, kernel.compare)
        return got.nnz

    def check_other(result):
        got = (result_entries(result, kernel.out) if kernel.other == "unfused"
               else baseline_entries(result))
        compare(got, reference["entries"], case.out_shape, kernel.compare)
        return got.nnz

    rows = [_measure(base, "scipy", case.scipy, check_scipy, repeat, timeout)]
    if "entries" not in reference:  # scipy failed: nothing can be checked, nothing counts
        rows += [_row(base, s, "unchecked", detail="no scipy result to check against")
                 for s in systems[1:]]
        return rows
    rows.append(_measure(base, "sparsefold", case.ours, check_ours, repeat, timeout))
    rows.append(_measure(base, kernel.other, case.other, check_other, repeat, timeout))
    arrays = _kernels().floor_arrays(kernel, case, reference["entries"].nnz)
    rows.append(_measure(base, "floor", lambda: [a.copy() for a in arrays],
                         lambda _: reference["entries"].nnz, repeat, timeout))
    return rows


class _Progress:
    """tqdm when installed, else one line per matrix on stderr."""

    def __init__(self, total: int, enabled: bool):
        self._bar = None
        self._enabled = enabled
        if enabled:
            try:
                from tqdm import tqdm
                self._bar = tqdm(total=total, unit="case", file=sys.stderr,
                                 dynamic_ncols=True, smoothing=0.05)
            except ImportError:
                pass

    def describe(self, matrix: str, kernel: str) -> None:
        if self._bar is not None:
            self._bar.set_description_str(matrix, refresh=False)
            self._bar.set_postfix_str(kernel)
        elif self._enabled and kernel == "":
            print(f"bench: {matrix}", file=sys.stderr, flush=True)

    def advance(self) -> None:
        if self._bar is not None:
            self._bar.update(1)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()


def _append(csv_path: Path, rows: list[dict]) -> None:
    new = not csv_path.exists() or csv_path.stat().st_size == 0
    with open(csv_path, "a", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=FIELDS)
        if new:
            w.writeheader()
        w.writerows(rows)


def read_rows(csv_path: Path, run_id: str | None = None) -> tuple[str, list[dict]]:
    """(run id, rows) of ``run_id`` in the CSV, or of its last run."""
    with open(csv_path, newline="") as fh:
        rows = list(csv.DictReader(fh))
    if not rows:
        raise SystemExit(f"{csv_path} has no rows")
    run_id = run_id or rows[-1]["run_id"]
    return run_id, [r for r in rows if r["run_id"] == run_id]


def _versions() -> dict:
    import numpy
    import scipy

    import sparsefold
    found = {"python": platform.python_version(), "numpy": numpy.__version__,
             "scipy": scipy.__version__, "sparsefold": sparsefold.__version__}
    for mod in ("sparse", "numba", "Cython"):
        try:
            found[mod] = __import__(mod).__version__
        except ImportError:
            found[mod] = "not installed"
    return found


def _machine() -> dict:
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as fh:
            names = [ln.split(":", 1)[1].strip() for ln in fh if ln.startswith("model name")]
        cpu = names[0] if names else cpu
    except OSError:
        pass
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                                text=True, cwd=Path(__file__).parent, timeout=5).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        commit = ""
    load = os.getloadavg() if hasattr(os, "getloadavg") else None
    return {"cpu": cpu, "cores": os.cpu_count(), "platform": platform.platform(),
            "git_commit": commit, "load_average_at_start": load}


def run_suite(kernels, matrices, out_dir: Path, *, repeat: int = 10, timeout: float = 10.0,
              matrix_dir: Path | None = None, progress: bool = True,
              command: str = "", malloc: str = "steady") -> tuple[str, list[dict]]:
    """Run and record; returns (run id, rows). Matrices are loaded once each (from the .npz
    cache under ``out_dir/cache`` after the first time). ``malloc``: "steady" fixes the
    allocator's thresholds (``timing.steady_malloc``), "system" leaves them alone."""
    out_dir.mkdir(parents=True, exist_ok=True)
    run_id = _dt.datetime.now().strftime("%Y%m%dT%H%M%S")
    if malloc == "steady" and not steady_malloc():
        malloc = "system (mallopt unavailable)"
    meta = {"run_id": run_id, "command": command, "repeat": repeat, "timeout": timeout,
            "malloc": malloc,
            "kernels": [k.name for k in kernels], "matrices": [m.name for m in matrices],
            "versions": _versions(), "machine": _machine()}
    started = time.perf_counter()
    csv_path = out_dir / "results.csv"
    bar = _Progress(len(kernels) * len(matrices), progress)
    all_rows: list[dict] = []
    try:
        for info in matrices:
            bar.describe(info.name, "")
            matrix = inputs.load(info, matrix_dir, out_dir / "cache")
            for kernel in kernels:
                bar.describe(info.name, kernel.name)
                rows = bench_case(kernel, info, matrix, run_id, repeat, timeout)
                _append(csv_path, rows)
                all_rows += rows
                bar.advance()
            del matrix
            gc.collect()  # once per matrix: the timed runs themselves run with gc off
    finally:
        bar.close()
        meta["elapsed_seconds"] = round(time.perf_counter() - started, 1)
        meta["load_average_at_end"] = os.getloadavg() if hasattr(os, "getloadavg") else None
        meta["completed_cases"] = len(all_rows) // 4
        (out_dir / "runs").mkdir(exist_ok=True)
        with open(out_dir / "runs" / f"{run_id}.json", "w") as fh:
            json.dump(meta, fh, indent=2)
    return run_id, all_rows


def _names(values: list[str] | None) -> list[str] | None:
    if not values:
        return None
    return [n.strip() for v in values for n in v.split(",") if n.strip()]


def add_parser(subparsers) -> None:
    p = subparsers.add_parser(
        "bench", help="run the benchmark suite (15 kernels vs scipy.sparse / pydata/sparse)",
        description="The benchmark suite of BENCHMARKS.md: each kernel on each matrix, "
                    "checked against scipy, timed (min of --repeat runs after a warm-up), "
                    "with a summary table and plots.")
    p.add_argument("--quick", action="store_true",
                   help=f"all kernels on {len(inputs.QUICK_MATRICES)} representative "
                        f"matrices ({', '.join(inputs.QUICK_MATRICES)})")
    p.add_argument("--kernels", action="append", metavar="NAMES",
                   help="comma-separated kernel names or groups (hand-written, conversion, "
                        "fusion); default: all 15. 'dropin' instead times sparsefold.scipy "
                        "against scipy.sparse (benchmarks/dropin.py)")
    p.add_argument("--matrices", action="append", metavar="NAMES",
                   help="comma-separated matrix names (real or generated); default: all 60")
    p.add_argument("--scale", action="store_true",
                   help="add the generated scale inputs (1M, 4M, 16M nnz; rows*cols > 2^32)")
    p.add_argument("--out", type=Path, default=Path("benchmarks/results"), metavar="DIR",
                   help="results directory (default: benchmarks/results)")
    p.add_argument("--matrix-dir", type=Path, default=None, metavar="DIR",
                   help="the SuiteSparse .mtx.gz files and MANIFEST.tsv (default: "
                        "$SPARSEFOLD_MATRICES or ../shared/matrices)")
    p.add_argument("--repeat", type=int, default=10, help="timed runs per measurement")
    p.add_argument("--timeout", type=float, default=10.0,
                   help="seconds allowed per call (default 10)")
    p.add_argument("--malloc", choices=("steady", "system"), default="steady",
                   help="steady (default): fix glibc's mmap/trim thresholds so every system "
                        "is timed with reused output memory; system: leave them alone")
    p.add_argument("--no-plots", action="store_true", help="skip the PNG plots")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--report-only", action="store_true",
                   help="summarize a recorded run (the last one, or --run-id) without running")
    p.add_argument("--run-id", default=None, help="with --report-only: which run")
    p.add_argument("--list", action="store_true", help="list kernels and matrices and exit")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from sparsefold.benchmarks import report
    if args.list:
        for k in _kernels().KERNELS:
            print(f"kernel  {k.name:30} {k.group:13} {k.expression}")
        for m in select_matrices(None, quick=False, scale=True, matrix_dir=args.matrix_dir):
            print(f"matrix  {m.name:30} {m.source:12} {m.rows}x{m.cols}, nnz {m.nnz}")
        return 0
    out_dir = args.out
    if args.report_only:
        run_id, rows = read_rows(out_dir / "results.csv", args.run_id)
    elif "dropin" in (_names(args.kernels) or ()):  # sparsefold.scipy vs scipy: dropin.py
        from sparsefold.benchmarks import dropin
        return dropin.run(args, select_matrices(_names(args.matrices), quick=args.quick,
                                                scale=args.scale, matrix_dir=args.matrix_dir))
    else:
        kernels = select_kernels(_names(args.kernels))
        matrices = select_matrices(_names(args.matrices), quick=args.quick, scale=args.scale,
                                   matrix_dir=args.matrix_dir)
        command = "sparsefold " + " ".join(sys.argv[1:]) if sys.argv else ""
        run_id, rows = run_suite(kernels, matrices, out_dir, repeat=args.repeat,
                                 timeout=args.timeout, matrix_dir=args.matrix_dir,
                                 progress=not args.no_progress, command=command,
                                 malloc=args.malloc)
    text = report.write_report(rows, out_dir, run_id, plots=not args.no_plots)
    print(text)
    return 0

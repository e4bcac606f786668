"""The runner behind ``sparsefold bench``: every selected kernel on every selected matrix,
each system warmed up, checked against scipy, then timed; one CSV row per (kernel, matrix,
system), appended as it is measured, so an interrupted run keeps what it measured.

Groups (``--group``): ``paper`` — the 15 kernels of BENCHMARKS.md; ``compute`` — the
programs of ``compute.py`` (issue #11); ``all`` — both. ``--overhead`` instead runs the
call-overhead micro-benchmark (``overhead.py``).

Systems of the paper group: ``sparsefold`` (one fused kernel), ``scipy``, ``pydata``
(pydata/sparse) or ``unfused`` (two sparsefold kernels and a materialized intermediate,
fusion group), ``floor`` (NumPy copies, see ``kernels.floor_arrays``), and with ``--peers``
(the default when installed) GraphBLAS and tensora (``peers.py``, ``peer_kernels.py``).
Statuses: see ``measure.py``.
"""

from __future__ import annotations

import argparse
import csv
import datetime as _dt
import gc
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from sparsefold.benchmarks import inputs, peers
from sparsefold.benchmarks.check import (
    Entries,
    Mismatch,
    baseline_entries,
    compare,
    result_entries,
)
from sparsefold.benchmarks.measure import FIELDS, measure, peer_rows, row, short
from sparsefold.benchmarks.timing import steady_malloc

__all__ = ["FIELDS", "add_parser", "run", "run_suite", "select_matrices", "select_kernels",
           "select_programs", "read_rows", "bench_case", "GROUPS"]

GROUPS = ("paper", "compute", "all")


def _kernels():
    from sparsefold.benchmarks import kernels  # imports sparsefold's jit: deferred for --help
    return kernels


def _compute():
    from sparsefold.benchmarks import compute
    return compute


def select_kernels(names: list[str] | None):
    ks = _kernels()
    if not names:
        return list(ks.KERNELS)
    by_name = {k.name: k for k in ks.KERNELS}
    unknown = [n for n in names if n not in by_name and n not in ks.GROUPS
               and n not in _compute().program_names()]
    if unknown:
        raise SystemExit(f"unknown kernel(s) {', '.join(unknown)}; choose from "
                         f"{', '.join(by_name)} or a group ({', '.join(ks.GROUPS)}), or "
                         f"compute programs ({', '.join(_compute().program_names())})")
    return [k for k in ks.KERNELS if k.name in names or k.group in names]


def select_programs(names: list[str] | None):
    programs = _compute().PROGRAMS
    if not names:
        return list(programs)
    return [p for p in programs if p.name in names]


def select_matrices(names: list[str] | None, *, quick: bool, scale: bool,
                    matrix_dir: Path | None, compute: bool = False) -> list[inputs.MatrixInfo]:
    real = inputs.suitesparse_infos(matrix_dir)
    generated = inputs.compute_scale_infos() if compute else inputs.scale_infos()
    if names:
        known = real + inputs.compute_scale_infos() + [inputs.OVERHEAD]
        by_name = {m.name: m for m in known}
        unknown = [n for n in names if n not in by_name]
        if unknown:
            raise SystemExit(f"unknown matrix name(s) {', '.join(unknown)} (see --list)")
        chosen = [by_name[n] for n in names]
    elif quick:
        chosen = [m for m in real if m.name in inputs.QUICK_MATRICES]
    elif scale and compute:
        chosen = []  # the compute group's --scale run is the scale set alone
    else:
        chosen = list(real)
    if scale:
        chosen += [m for m in generated if m not in chosen]
    if not names and not compute:  # the call-overhead probe runs first in the paper group
        chosen.insert(0, inputs.OVERHEAD)
    return chosen


def _float32(e: Entries) -> Entries:
    """tensora computes in float64: its result rounded to the kernels' float32."""
    return Entries(e.shape, e.keys, e.values.astype(np.float32))


def bench_case(kernel, info, matrix, run_id: str, repeat: int, timeout: float,
               with_peers: bool = False) -> list[dict]:
    """The CSV rows of one kernel on one matrix (scipy, sparsefold, other, peers, floor)."""
    from sparsefold.benchmarks import peer_kernels
    base = dict(run_id=run_id, kernel=kernel.name, group=kernel.group, matrix=info.name,
                source=info.source, rows=matrix.shape[0], cols=matrix.shape[1], nnz=matrix.nnz)
    nt = peers.NT_THREADS
    systems = ("scipy", "sparsefold") + ((peers.SPARSEFOLD_NT,) if nt else ()) + \
        (kernel.other,) + (peers.PEER_SYSTEMS if with_peers else ()) + ("floor",)
    try:
        case = kernel.prepare(matrix)
    except Exception as exc:
        return [row(base, s, "error", detail="preparing inputs: " + short(exc))
                for s in systems]
    reference = {}

    def check_scipy(result):
        reference["entries"] = baseline_entries(result)
        return reference["entries"].nnz

    def checker(entries_of):
        def check(result):
            got = entries_of(result)
            compare(got, reference["entries"], case.out_shape, kernel.compare)
            return got.nnz
        return check

    def exported(x):
        if kernel.out == "dense" and not isinstance(x, np.ndarray) or \
                kernel.out != "dense" and getattr(x, "format", None) != kernel.out:
            raise Mismatch(f"expected a scipy {kernel.out} result, found {type(x).__name__}")
        return baseline_entries(x)

    rows = [measure(base, "scipy", case.scipy, check_scipy, repeat, timeout)]
    if "entries" not in reference:  # scipy failed: nothing can be checked, nothing counts
        rows += [row(base, s, "unchecked", detail="no scipy result to check against")
                 for s in systems[1:]]
        return rows
    ours = case.ours if not nt else peers.at_threads(case.ours, 1)
    rows.append(measure(base, "sparsefold", ours,
                        checker(lambda r: result_entries(r, kernel.out)), repeat, timeout))
    if nt:  # side by side with the 1-thread row: the same inputs, the same minute
        rows.append(measure(base, peers.SPARSEFOLD_NT, peers.at_threads(case.ours, nt),
                            checker(lambda r: result_entries(r, kernel.out)), repeat, timeout))
    rows.append(measure(base, kernel.other, case.other,
                        checker(lambda r: result_entries(r, kernel.out)
                                if kernel.other == "unfused" else baseline_entries(r)),
                        repeat, timeout, missing="pydata/sparse is not installed"))
    if with_peers:
        # a 1-d sparse result (the collapse kernels) is a 1 × L matrix in GraphBLAS
        vector = kernel.out == "csr" and len(case.out_shape) == 1
        rows += peer_rows(
            base, "csr1" if vector else kernel.out,
            lambda: peer_kernels.gb_call(kernel, case.operands),
            lambda: peer_kernels.tensora_call(kernel, case.operands),
            check_gb=checker(lambda r: peers.entries(r, case.out_shape)),
            check_export=checker(exported),
            check_tensora=checker(lambda t: _float32(peers.tensora_entries(t))),
            repeat=repeat, timeout=timeout)
    arrays = _kernels().floor_arrays(kernel, case, reference["entries"].nnz)
    rows.append(measure(base, "floor", lambda: [a.copy() for a in arrays],
                        lambda _: reference["entries"].nnz, repeat, timeout))
    return rows


class _Progress:
    """A tqdm bar when stderr is a terminal (and tqdm is installed); otherwise (piped, CI, a
    log file) one line per case on stderr, so a long run never sits silent."""

    def __init__(self, total: int, enabled: bool):
        self._bar = None
        self._enabled = enabled
        self._total = total
        self._done = 0
        self._started = time.perf_counter()
        if enabled and sys.stderr.isatty():
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
        elif self._enabled and kernel:
            print(f"bench [{self._done + 1}/{self._total}] {matrix}: {kernel} "
                  f"({time.perf_counter() - self._started:.0f} s)", file=sys.stderr,
                  flush=True)

    def advance(self) -> None:
        self._done += 1
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


def _versions(with_peers: bool) -> dict:
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
    if with_peers:  # importing them costs ~1 s: not in a run that does not use them
        found.update(peers.versions())
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


def _note_peers(with_peers: bool, progress: bool) -> dict:
    """Say once, before the run, which peers are used and which cannot be."""
    if not with_peers:
        return {"graphblas": "off", "tensora": "off"}
    status = {}
    for name in ("graphblas", "tensora"):
        ok, why = peers.available(name)
        status[name] = "used" if ok else why
        if not ok:
            print(f"bench: peer {name} is not available ({why}); its results are recorded "
                  f"as unavailable", file=sys.stderr, flush=True)
    if peers.available("graphblas")[0]:
        status["graphblas_threads"] = f"1 and {peers.gb_default_threads()} (default)"
    return status


def run_suite(kernels, matrices, out_dir: Path, *, repeat: int = 10, timeout: float = 10.0,
              matrix_dir: Path | None = None, progress: bool = True,
              command: str = "", malloc: str = "steady", with_peers: bool = False,
              programs=(), compute_matrices=()) -> tuple[str, list[dict]]:
    """Run and record; returns (run id, rows). The paper ``kernels`` run on ``matrices``,
    the compute ``programs`` on ``compute_matrices``. Matrices are loaded once each (from
    the .npz cache under ``out_dir/cache`` after the first time). ``malloc``: "steady"
    fixes the allocator's thresholds (``timing.steady_malloc``), "system" leaves them
    alone."""
    out_dir.mkdir(parents=True, exist_ok=True)
    run_id = _dt.datetime.now().strftime("%Y%m%dT%H%M%S")
    if malloc == "steady" and not steady_malloc():
        malloc = "system (mallopt unavailable)"
    meta = {"run_id": run_id, "command": command, "repeat": repeat, "timeout": timeout,
            "malloc": malloc, "peers": _note_peers(with_peers, progress),
            "kernels": [k.name for k in kernels], "matrices": [m.name for m in matrices],
            "programs": [p.name for p in programs],
            "compute_matrices": [m.name for m in compute_matrices],
            "versions": _versions(with_peers), "machine": _machine()}
    started = time.perf_counter()
    csv_path = out_dir / "results.csv"
    total = len(kernels) * len(matrices) + len(programs) * len(compute_matrices)
    bar = _Progress(total, progress)
    all_rows: list[dict] = []

    def record(rows):
        _append(csv_path, rows)
        all_rows.extend(rows)
        bar.advance()

    try:
        for info in matrices if kernels else ():
            bar.describe(info.name, "")
            matrix = inputs.load(info, matrix_dir, out_dir / "cache")
            for kernel in kernels:
                bar.describe(info.name, kernel.name)
                record(bench_case(kernel, info, matrix, run_id, repeat, timeout, with_peers))
            del matrix
            gc.collect()  # once per matrix: the timed runs themselves run with gc off
        if programs:
            from sparsefold.benchmarks.compute import Operands
            from sparsefold.benchmarks.compute_run import bench_program
        for info in compute_matrices if programs else ():
            bar.describe(info.name, "")
            ops = Operands(inputs.load(info, matrix_dir, out_dir / "cache"))
            for program in programs:
                bar.describe(info.name, program.name)
                record(bench_program(program, info, ops, run_id, repeat, timeout,
                                     with_peers=with_peers))
            del ops
            gc.collect()
    finally:
        bar.close()
        meta["elapsed_seconds"] = round(time.perf_counter() - started, 1)
        meta["load_average_at_end"] = os.getloadavg() if hasattr(os, "getloadavg") else None
        meta["completed_cases"] = bar._done
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
        "bench", help="run the benchmark suite (15 kernels vs scipy.sparse / pydata/sparse / "
                      "GraphBLAS / tensora; the compute group; call overhead)",
        description="The benchmark suite of BENCHMARKS.md: each kernel on each matrix, "
                    "checked against scipy, timed (min of --repeat runs after a warm-up), "
                    "with a summary table and plots.")
    p.add_argument("--group", choices=GROUPS, default="paper",
                   help="paper: the 15 kernels of the paper (default); compute: the compute "
                        "programs (A+B+C, A@A, SpMV, ...); all: both")
    p.add_argument("--quick", action="store_true",
                   help=f"on {len(inputs.QUICK_MATRICES)} representative matrices "
                        f"({', '.join(inputs.QUICK_MATRICES)}); the paper group without peers")
    peers_arg = p.add_mutually_exclusive_group()
    peers_arg.add_argument("--peers", dest="peers", action="store_true", default=None,
                           help="time GraphBLAS (1 and default threads) and tensora too "
                                "(default when installed, except with --quick)")
    peers_arg.add_argument("--no-peers", dest="peers", action="store_false",
                           help="no GraphBLAS / tensora baselines")
    p.add_argument("--overhead", action="store_true",
                   help="only the call-overhead micro-benchmark (tiny kernels, µs per call, "
                        "with a profile breakdown)")
    p.add_argument("--kernels", action="append", metavar="NAMES",
                   help="comma-separated kernel or program names, or paper groups "
                        "(hand-written, conversion, fusion); default: all. 'dropin' instead "
                        "times sparsefold.scipy against scipy.sparse (benchmarks/dropin.py)")
    p.add_argument("--matrices", action="append", metavar="NAMES",
                   help="comma-separated matrix names (real or generated); default: all 60")
    p.add_argument("--scale", action="store_true",
                   help="add the generated scale inputs (paper: 1M, 4M, 16M nnz, rows*cols > "
                        "2^32; compute: only those plus a 200000² matrix with 2M entries)")
    p.add_argument("--out", type=Path, default=Path("benchmarks/results"), metavar="DIR",
                   help="results directory (default: benchmarks/results)")
    p.add_argument("--matrix-dir", type=Path, default=None, metavar="DIR",
                   help="the SuiteSparse .mtx.gz files and MANIFEST.tsv (default: "
                        "$SPARSEFOLD_MATRICES or ../shared/matrices)")
    p.add_argument("--threads", type=int, default=None, metavar="N",
                   help="time sparsefold at 1 thread (sparsefold) and at N (sparsefold_nt), "
                        "and GraphBLAS's N-thread systems at N instead of its default")
    p.add_argument("--repeat", type=int, default=10, help="timed runs per measurement")
    p.add_argument("--timeout", type=float, default=10.0,
                   help="seconds allowed per call (default 10)")
    p.add_argument("--malloc", choices=("steady", "system"), default="steady",
                   help="steady (default): fix glibc's mmap/trim thresholds so every system "
                        "is timed with reused output memory; system: leave them alone")
    p.add_argument("--no-plots", action="store_true", help="skip the PNG plots")
    p.add_argument("--no-progress", action="store_true", help="no progress bar or lines")
    p.add_argument("--report-only", action="store_true",
                   help="summarize a recorded run (the last one, or --run-id) without running")
    p.add_argument("--run-id", default=None, help="with --report-only: which run")
    p.add_argument("--list", action="store_true", help="list kernels and matrices and exit")
    p.set_defaults(run=run)


def _list(args) -> int:
    for k in _kernels().KERNELS:
        print(f"kernel   {k.name:30} {k.group:13} {k.expression}")
    for prog in _compute().PROGRAMS:
        print(f"program  {prog.name:30} {'compute':13} {prog.expression}")
    infos = select_matrices(None, quick=False, scale=True, matrix_dir=args.matrix_dir)
    infos += [m for m in inputs.compute_scale_infos() if m not in infos]
    for m in infos:
        print(f"matrix   {m.name:30} {m.source:12} {m.rows}x{m.cols}, nnz {m.nnz}")
    return 0


def run(args: argparse.Namespace) -> int:
    from sparsefold.benchmarks import report
    if args.list:
        return _list(args)
    out_dir = args.out
    if args.overhead:
        from sparsefold.benchmarks import overhead
        return overhead.main(out_dir, repeat=args.repeat)
    if args.report_only:
        run_id, rows = read_rows(out_dir / "results.csv", args.run_id)
    elif "dropin" in (_names(args.kernels) or ()):  # sparsefold.scipy vs scipy: dropin.py
        from sparsefold.benchmarks import dropin
        return dropin.run(args, select_matrices(_names(args.matrices), quick=args.quick,
                                                scale=args.scale, matrix_dir=args.matrix_dir))
    else:
        names = _names(args.kernels)
        paper = args.group in ("paper", "all")
        compute = args.group in ("compute", "all")
        kernels = select_kernels(names) if paper else []
        programs = select_programs(names) if compute else []
        if names and not kernels and not programs:
            raise SystemExit(f"no {args.group} kernel or program among {', '.join(names)}")
        matrix_names = _names(args.matrices)
        matrices = select_matrices(matrix_names, quick=args.quick, scale=args.scale,
                                   matrix_dir=args.matrix_dir) if kernels else []
        compute_matrices = select_matrices(matrix_names, quick=args.quick, scale=args.scale,
                                           matrix_dir=args.matrix_dir, compute=True) \
            if programs else []
        # peers are on by default, except in the README's --quick paper run (its 2-minute
        # cold budget); --peers turns them on there too
        with_peers = args.peers if args.peers is not None else \
            not (args.quick and args.group == "paper")
        if args.threads is not None:
            if args.threads < 1:
                raise SystemExit(f"--threads must be at least 1, found {args.threads}")
            peers.NT_THREADS = args.threads
        command = "sparsefold " + " ".join(sys.argv[1:]) if sys.argv else ""
        run_id, rows = run_suite(kernels, matrices, out_dir, repeat=args.repeat,
                                 timeout=args.timeout, matrix_dir=args.matrix_dir,
                                 progress=not args.no_progress, command=command,
                                 malloc=args.malloc, with_peers=with_peers,
                                 programs=programs, compute_matrices=compute_matrices)
    text, written = report.write_report(rows, out_dir, run_id, plots=not args.no_plots)
    print(text)
    print(f"\nresults: {out_dir / 'results.csv'} (run {run_id})")
    for what, path in written:
        print(f"{what}: {path}")
    return 0

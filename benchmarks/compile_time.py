"""Compile time per kernel (issue #11: at most 3 s): ``sparsefold bench --compile-time``.

Each compute-group program (``compute.PROGRAMS``) is built from an empty kernel cache, in a
child process of its own (so nothing compiled earlier, in memory or on disk, is reused, and
the prebuilt kernels are not consulted: ``SPARSEFOLD_PREBUILT=0``), on 300 × 300 inputs — a
kernel does not depend on sizes. The figure is the CPU seconds of that child and its own
children (Cython runs in-process, gcc as a child), as the parent's ``RUSAGE_CHILDREN``
counts them, minus those of a baseline child that does everything but the calls (Python
start-up, imports, inputs): what a user's first call costs on one core, including Cython's
one-time start-up in a fresh process (~1.5 s, paid by the first kernel only). The kernel
cache's manifests give the wall-clock split between Cython and the C compiler.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

__all__ = ["measure", "report", "add_flag"]

_CHILD = r'''
import sys
import numpy as np, scipy.sparse as sp
from sparsefold.benchmarks import compute

name, call = sys.argv[1], sys.argv[2] == "call"
program = next(p for p in compute.PROGRAMS if p.name == name)
a = sp.random_array((300, 300), density=0.05, format="csr", rng=np.random.default_rng(1))
case = program.prepare(compute.Operands(a))
for fn, args, _, _ in case.ours.probe_args():
    if call:
        fn(*args)
'''


def _child_cpu(name: str, call: bool, env: dict) -> float:
    """CPU seconds of one child run (and of the processes it ran)."""
    import resource
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run([sys.executable, "-c", _CHILD, name, "call" if call else "skip"],
                          env=env, capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        raise RuntimeError(done.stderr.strip()[-300:])
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def measure(names: list[str] | None = None) -> list[dict]:
    """One row per program: CPU seconds of its first call, kernels built, Cython and C
    compiler seconds (from the cache manifests)."""
    from sparsefold.benchmarks import compute
    rows = []
    for program in compute.PROGRAMS:
        if names and program.name not in names:
            continue
        with tempfile.TemporaryDirectory(prefix="sf-compile-time-") as cache:
            env = dict(os.environ, SPARSEFOLD_CACHE_DIR=cache, SPARSEFOLD_PREBUILT="0",
                       SPARSEFOLD_NUM_THREADS="1", SPARSEFOLD_TIERED="0")
            try:
                baseline = _child_cpu(program.name, False, env)
                first = _child_cpu(program.name, True, env)
            except (RuntimeError, subprocess.TimeoutExpired) as exc:
                rows.append({"program": program.name, "error": str(exc)})
                continue
            manifests = [json.loads(p.read_text()) for p in Path(cache).glob("*/manifest.json")]
            rows.append({"program": program.name, "kernels": len(manifests),
                         "cpu_s": round(first - baseline, 2),
                         "cython_s": round(sum(m.get("cython_seconds", 0) for m in manifests), 2),
                         "cc_s": round(sum(m.get("cc_seconds", 0) for m in manifests), 2)})
    return rows


def report(rows: list[dict]) -> str:
    lines = ["| program | kernels | first call, CPU s | Cython wall s | C compiler wall s |",
             "|---|---|---|---|---|"]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['program']} | – | failed: {r['error']} | | |")
        else:
            lines.append(f"| {r['program']} | {r['kernels']} | {r['cpu_s']:.2f} | "
                         f"{r['cython_s']:.2f} | {r['cc_s']:.2f} |")
    per_kernel = [r["cpu_s"] / r["kernels"] for r in rows if r.get("kernels")]
    if per_kernel:
        lines.append("")
        lines.append(f"per kernel: median {statistics.median(per_kernel):.2f} CPU s, "
                     f"range {min(per_kernel):.2f}–{max(per_kernel):.2f} "
                     f"(load average {os.getloadavg()[0]:.1f})")
    return "\n".join(lines)


def add_flag(bench: argparse.ArgumentParser) -> None:
    """Add ``--compile-time`` to ``bench``: with it, ``bench`` measures compile time instead of
    running the suite."""
    bench.add_argument("--compile-time", action="store_true",
                       help="measure each compute-group program's compile time from an empty "
                            "kernel cache (CPU s, one child process per program) instead of "
                            "running the suite")
    suite = bench.get_default("run")

    def dispatch(args: argparse.Namespace) -> int:
        if not args.compile_time:
            return suite(args)
        rows = measure()
        print(report(rows))
        return 1 if any("error" in r for r in rows) else 0
    bench.set_defaults(run=dispatch)

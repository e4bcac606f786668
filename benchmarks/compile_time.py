"""First-call latency of a new kernel (issue #29: ≤ 0.5 s median wall): ``sparsefold bench
--compile-time``.

Each compute-group program (``compute.PROGRAMS``) is called once from an empty kernel cache,
in a child process of its own (so nothing compiled earlier, in memory or on disk, is reused;
the prebuilt kernels are not consulted: ``SPARSEFOLD_PREBUILT=0``), on 300 × 300 inputs — a
kernel does not depend on sizes — twice:

* **fresh**: the first call of a fresh process, so it pays Cython's one-time start-up (its
  compiler modules, its lexer: ~0.5 s, once per process);
* **warm**: after a first, unrelated kernel was built in the same process (Cython loaded),
  which is what every later new kernel of a session or a test run costs.

The wall time of the call is split with the build log (``build.build_log``): Cython
(in-process), the C compiler (a child process), loading the built module, and the rest
(tracing, planning, lowering, printing, running). Per kernel: a program's time over its
kernels (``A - A.T`` builds two).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

__all__ = ["measure", "report", "add_flag"]

_CHILD = r'''
import json, sys, time
import numpy as np, scipy.sparse as sp
import sparsefold as sf
from sparsefold.benchmarks import compute
from sparsefold.compiler.run import build

name, mode = sys.argv[1], sys.argv[2]
program = next(p for p in compute.PROGRAMS if p.name == name)
a = sp.random_array((300, 300), density=0.05, format="csr", rng=np.random.default_rng(1))
case = program.prepare(compute.Operands(a))
calls = case.ours.probe_args()
if mode == "warm":  # Cython loaded and run once: a kernel no program of the group shares
    warm = sp.random_array((6, 5), density=0.5, format="csc", rng=np.random.default_rng(2))
    sf.jit(lambda x: x * 3.5 - 1.25, out="dense")(warm)
build.build_log().clear()
started = time.perf_counter()
for fn, args, _, _ in calls:
    fn(*args)
wall = time.perf_counter() - started
print(json.dumps({"wall": wall, "builds": build.build_log()}))
'''


def _child(name: str, mode: str, env: dict) -> dict:
    done = subprocess.run([sys.executable, "-c", _CHILD, name, mode], env=env,
                          capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        raise RuntimeError(done.stderr.strip()[-300:])
    return json.loads(done.stdout.strip().splitlines()[-1])


def measure(names: list[str] | None = None) -> list[dict]:
    """One row per program: kernels built, wall seconds of the first call (fresh process
    and Cython warm), and the warm call's Cython, C compiler and load seconds."""
    from sparsefold.benchmarks import compute
    rows = []
    for program in compute.PROGRAMS:
        if names and program.name not in names:
            continue
        row = {"program": program.name}
        try:
            for mode in ("fresh", "warm"):
                with tempfile.TemporaryDirectory(prefix="sf-compile-time-") as cache:
                    env = dict(os.environ, SPARSEFOLD_CACHE_DIR=cache, SPARSEFOLD_PREBUILT="0",
                               SPARSEFOLD_NUM_THREADS="1",
                               SPARSEFOLD_TIERED="0")
                    found = _child(program.name, mode, env)
                row[f"{mode}_s"] = found["wall"]
                if mode == "warm":
                    builds = [b for b in found["builds"] if b.get("name_hint") != "runtime"]
                    row["kernels"] = len(builds)
                    for part in ("cython", "cc", "load"):
                        row[f"{part}_s"] = sum(b[f"{part}_seconds"] for b in builds)
        except (RuntimeError, subprocess.TimeoutExpired, ValueError) as exc:
            rows.append({"program": program.name, "error": str(exc)})
            continue
        rows.append(row)
    return rows


def report(rows: list[dict]) -> str:
    lines = ["| program | kernels | first call, fresh process (wall s) | first call, Cython warm "
             "(wall s) | Cython s | gcc s | load s | rest s |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['program']} | – | failed: {r['error']} | | | | | |")
            continue
        rest = r["warm_s"] - r["cython_s"] - r["cc_s"] - r["load_s"]
        lines.append(f"| {r['program']} | {r['kernels']} | {r['fresh_s']:.2f} | "
                     f"{r['warm_s']:.2f} | {r['cython_s']:.2f} | {r['cc_s']:.2f} | "
                     f"{r['load_s'] * 1000:.1f} ms | {rest:.2f} |")
    done = [r for r in rows if r.get("kernels")]
    if done:
        def median(key):
            return statistics.median(r[key] / r["kernels"] for r in done)
        warm = [r["warm_s"] / r["kernels"] for r in done]
        lines.append("")
        lines.append(
            f"per kernel, median: **{median('warm_s'):.2f} s wall with Cython warm** (range "
            f"{min(warm):.2f}–{max(warm):.2f}; Cython {median('cython_s'):.2f} s, gcc "
            f"{median('cc_s'):.2f} s, load {median('load_s') * 1000:.1f} ms), "
            f"{median('fresh_s'):.2f} s as a fresh process's first "
            f"(load average {os.getloadavg()[0]:.1f})")
    return "\n".join(lines)


def add_flag(bench: argparse.ArgumentParser) -> None:
    """Add ``--compile-time`` to ``bench``: with it, ``bench`` measures compile time instead of
    running the suite."""
    bench.add_argument("--compile-time", action="store_true",
                       help="measure each compute-group program's first-call latency from an "
                            "empty kernel cache (wall s: Cython, gcc, load; one child process "
                            "per program) instead of running the suite")
    suite = bench.get_default("run")

    def dispatch(args: argparse.Namespace) -> int:
        if not args.compile_time:
            return suite(args)
        rows = measure()
        print(report(rows))
        return 1 if any("error" in r for r in rows) else 0
    bench.set_defaults(run=dispatch)

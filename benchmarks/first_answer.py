"""Time to the first answer with tiered execution (issue 29): ``sparsefold bench
--first-answer [--matrices uniform_2M] [--kernels NAMES]``.

Each compute-group program (``compute.PROGRAMS``) is called once as a *new* tiered
function (``sf.jit(..., wait=False)``) on the compute group's operands of the matrix
(default ``uniform_2M``: 200000 x 200000, 2M entries), with an empty kernel cache of its
own (nothing on disk: the kernel must be built), in a process where the imports and
Cython's one-time start-up are done (a warm-up program, reported on its own line, paid
them). Per program:

* **first answer** — wall time from the call to its result: the trace, planning the
  kernel, the probe of the caches, scheduling the build, and the fallback's run;
* **tiering overhead** — the first answer minus the fallback's run (target: 50 ms);
* **fallback, in the call** — the fallback's run inside that call, while the background
  build runs beside it (Cython holds the GIL for a few hundred ms of each build);
* **kernel ready** — from the call until the compiled kernel answers (the build);
* **fallback / kernel / scipy** — warm run times (best of ``repeat``) of the fallback
  alone, the compiled kernel and scipy.sparse, side by side in this process.

A program the fallback does not answer (it declines) shows how it was answered instead.
Prebuilt kernels (``sparsefold/prebuilt.py``) are used as in any call: a program that is
one of them is answered by its kernel at once.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

__all__ = ["measure", "report", "add_flag"]


def _best(fn, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - started)
    return best


def _warm_up() -> dict:
    """A tiered first call of a small program no compute-group program shares: pays the
    imports and Cython's start-up; its own first answer and build time are reported."""
    import numpy as np
    import scipy.sparse as sp

    import sparsefold as sf
    a = sp.random_array((500, 500), density=0.02, format="csr", rng=np.random.default_rng(0))
    f = sf.jit(lambda x: (x * 0.5).T, wait=False)
    started = time.perf_counter()
    f(a)
    answer = time.perf_counter() - started
    f.wait()
    return {"first_answer_s": answer, "ready_s": time.perf_counter() - started}


def measure(names: list[str] | None = None, matrix: str = "uniform_2M",
            matrix_dir: Path | None = None, repeat: int = 3) -> tuple[dict, list[dict]]:
    """(the warm-up's figures, one row per program); run in a fresh kernel cache."""
    import numpy as np

    import sparsefold as sf
    from sparsefold import tiering
    from sparsefold.benchmarks import compute, inputs
    from sparsefold.compiler.fallback import Declined, FallbackPlan
    from sparsefold.storage.results import result_library
    known = {m.name: m for m in inputs.compute_scale_infos()}
    if matrix not in known:
        known.update({m.name: m for m in inputs.suitesparse_infos(matrix_dir)})
    if matrix not in known:
        raise SystemExit(f"unknown matrix {matrix!r}")
    with tempfile.TemporaryDirectory(prefix="sf-first-answer-") as cache:
        os.environ["SPARSEFOLD_CACHE_DIR"] = cache  # nothing built: every kernel is new
        warm = _warm_up()
        ops = compute.Operands(inputs.load(known[matrix], matrix_dir,
                                           Path(tempfile.gettempdir()) / "sf-matrices"))
        rows = []
        for program in compute.PROGRAMS:
            if names and program.name not in names:
                continue
            case = program.prepare(ops)
            if case.skip:
                rows.append({"program": program.name, "skip": case.skip})
                continue
            case.ours.probe_args()  # derived operands made before timing
            ((fn, args),) = case.ours.stages
            f = sf.jit(fn.fn, out=fn.out, wait=False)
            started = time.perf_counter()
            f(*args)
            first = time.perf_counter() - started
            last = tiering.last_call()
            f.wait()
            ready = time.perf_counter() - started
            program_, out = f.program_for(*args)
            values = {f"a{p}": a for p, a in enumerate(args)}
            row = {"program": program.name, "expression": program.expression,
                   "first_answer_s": first, "answered": last.get("answered", "kernel"),
                   "fallback_in_call_s": last.get("fallback_s", 0.0), "ready_s": ready}
            try:
                plan = FallbackPlan(program_, out, f._assumed.get(program_, ()))
                library = result_library(args)
                row["fallback_s"] = _best(lambda: plan(values, library), repeat)
            except Declined as exc:
                row["fallback_s"] = None
                row["declined"] = str(exc)
            with np.errstate(all="ignore"):
                row["kernel_s"] = _best(lambda: f(*args), repeat)
                row["scipy_s"] = _best(case.scipy, repeat)
            rows.append(row)
    return warm, rows


def _ms(x) -> str:
    return "–" if x is None else f"{x * 1e3:,.1f}"


def report(warm: dict, rows: list[dict], matrix: str = "uniform_2M") -> str:
    lines = [f"First answer with tiering on, {matrix} (new kernels, empty kernel cache; "
             f"load average {os.getloadavg()[0]:.1f}):", "",
             "| program | first answer, ms | tiering overhead, ms | fallback in the call, ms "
             "| kernel ready, s | fallback, ms | kernel, ms | scipy, ms | fallback / kernel |",
             "|---|---|---|---|---|---|---|---|---|"]
    overheads = []
    for r in rows:
        if "skip" in r:
            lines.append(f"| {r['program']} | skipped: {r['skip']} | | | | | | | |")
            continue
        if r["answered"] == "fallback":
            overhead = r["first_answer_s"] - r["fallback_in_call_s"]
            overheads.append(overhead)
            how = _ms(overhead)
        else:  # the kernel answered (prebuilt, or on disk), or the call waited
            how = f"({r['answered']})"
        ratio = "–" if r.get("fallback_s") is None or not r["kernel_s"] else \
            f"{r['fallback_s'] / r['kernel_s']:.1f}"
        lines.append(f"| {r['program']} | {_ms(r['first_answer_s'])} | {how} | "
                     f"{_ms(r['fallback_in_call_s']) if r['answered'] == 'fallback' else '–'}"
                     f" | {r['ready_s']:.2f} | {_ms(r.get('fallback_s'))} | "
                     f"{_ms(r['kernel_s'])} | {_ms(r['scipy_s'])} | {ratio} |")
    lines.append("")
    if overheads:
        lines.append(f"tiering overhead: median {statistics.median(overheads) * 1e3:.1f} ms, "
                     f"max {max(overheads) * 1e3:.1f} ms over {len(overheads)} programs "
                     f"answered by the fallback")
    lines.append(f"warm-up (a fresh process's first tiered call, 500 x 500: imports, "
                 f"Cython's start-up): first answer {warm['first_answer_s'] * 1e3:.0f} ms, "
                 f"kernel ready after {warm['ready_s']:.2f} s")
    return "\n".join(lines)


def add_flag(bench: argparse.ArgumentParser) -> None:
    """Add ``--first-answer`` to ``bench``; and make every other ``bench`` run measure
    compiled kernels only (``SPARSEFOLD_TIERED=0``: no call answers on the fallback)."""
    bench.add_argument("--first-answer", action="store_true",
                       help="measure the time to the first answer of each compute-group "
                            "program with tiering on (a fresh kernel cache; default matrix "
                            "uniform_2M), instead of running the suite")
    suite = bench.get_default("run")

    def dispatch(args: argparse.Namespace) -> int:
        if not args.first_answer:
            os.environ["SPARSEFOLD_TIERED"] = "0"  # benchmarks time compiled kernels
            return suite(args)
        names = [n for group in (args.kernels or []) for n in group.split(",") if n]
        matrices = [n for group in (args.matrices or []) for n in group.split(",") if n]
        matrix = matrices[0] if matrices else "uniform_2M"
        warm, rows = measure(names or None, matrix, args.matrix_dir, repeat=3)
        print(report(warm, rows, matrix))
        return 0
    bench.set_defaults(run=dispatch)

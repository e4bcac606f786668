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

__all__ = ["measure", "report", "measure_sweep", "report_sweep", "first_ratio", "add_flag"]


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
    from sparsefold.compiler.fallback import Declined
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
            row = {"program": program.name, "expression": program.expression,
                   "first_answer_s": first, "answered": last.get("answered", "kernel"),
                   "fallback_in_call_s": last.get("fallback_s", 0.0), "ready_s": ready}
            try:
                plan, values, library = _plan_as_tiering(f, args)
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
             "| kernel ready, s | fallback, ms | kernel, ms | scipy, ms | fallback / kernel "
             "| first answer × scipy |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    overheads, firsts = [], []
    for r in rows:
        if "skip" in r:
            lines.append(f"| {r['program']} | skipped: {r['skip']} | | | | | | | | |")
            continue
        if r["answered"] == "fallback":
            overhead = r["first_answer_s"] - r["fallback_in_call_s"]
            overheads.append(overhead)
            how = _ms(overhead)
        else:  # the kernel answered (prebuilt, or on disk), or the call waited
            how = f"({r['answered']})"
        fr = first_ratio(r)
        if fr is not None:
            firsts.append(fr)
        ratio = "–" if r.get("fallback_s") is None or not r["kernel_s"] else \
            f"{r['fallback_s'] / r['kernel_s']:.1f}"
        lines.append(f"| {r['program']} | {_ms(r['first_answer_s'])} | {how} | "
                     f"{_ms(r['fallback_in_call_s']) if r['answered'] == 'fallback' else '–'}"
                     f" | {r['ready_s']:.2f} | {_ms(r.get('fallback_s'))} | "
                     f"{_ms(r['kernel_s'])} | {_ms(r['scipy_s'])} | {ratio} | "
                     f"{'–' if fr is None else f'{fr:.2f}'} |")
    lines.append("")
    if firsts:
        lines.append(f"first answer × scipy (the fallback's warm run where it answered, else "
                     f"the first call's wall time): geometric mean "
                     f"{statistics.geometric_mean(firsts):.2f} over {len(firsts)} programs, "
                     f"{sum(x < 0.3 for x in firsts)} below 0.3")
    if overheads:
        lines.append(f"tiering overhead: median {statistics.median(overheads) * 1e3:.1f} ms, "
                     f"max {max(overheads) * 1e3:.1f} ms over {len(overheads)} programs "
                     f"answered by the fallback")
    lines.append(f"warm-up (a fresh process's first tiered call, 500 x 500: imports, "
                 f"Cython's start-up): first answer {warm['first_answer_s'] * 1e3:.0f} ms, "
                 f"kernel ready after {warm['ready_s']:.2f} s")
    return "\n".join(lines)


# --- the sweep's everyday programs on the default path ------------------------------------

def _plan_as_tiering(f, args):
    """The fallback plan a tiered call of ``f`` makes (told how the kernel assembles its
    result), its values and result library."""
    from sparsefold.compiler.fallback import FallbackPlan
    from sparsefold.jit import _is_scalar, _split_values, runnable_kernel
    from sparsefold.storage.results import result_library
    program, out = f.program_for(*args)
    requires = f._assumed.get(program, ())
    values = _split_values({f"a{p}": a for p, a in enumerate(args) if not _is_scalar(a)},
                           "mask")
    kernel = runnable_kernel(program, out, requires)
    compiled = getattr(kernel, "kernel", kernel)
    plan = FallbackPlan(program, out, requires, getattr(compiled, "assembles_densely", None))
    return plan, values, result_library(args)


def measure_sweep(n: int = 200_000, k: int = 2_000_000, names: list[str] | None = None,
                  repeat: int = 3, progress: bool = True) -> tuple[dict, list[dict]]:
    """The sweep's programs (``sweep.PROGRAMS``, at their tiers' sizes) on the default
    path: each a new tiered function, called once with an empty kernel cache (the first
    answer: fallback, or the wait for the kernel where it declines), checked against
    scipy; then the fallback alone, the kernel and scipy warm (best of ``repeat``)."""
    import sys

    import numpy as np

    import sparsefold as sf
    from sparsefold import tiering
    from sparsefold.benchmarks import sweep as sw
    from sparsefold.compiler.fallback import Declined, Unsupported
    rows = []
    with tempfile.TemporaryDirectory(prefix="sf-first-answer-") as cache:
        os.environ["SPARSEFOLD_CACHE_DIR"] = cache
        warm = _warm_up()
        operands: dict[str, sw.Operands] = {}
        for i, program in enumerate(sw.select(names)):
            rows_n, nnz = sw.tier_size(program.tier, n, k)
            ops = operands.setdefault(program.tier, sw.Operands(rows_n, nnz))
            args = [ops[a] for a in sw.operand_names(program.ours)]
            scipy_args = [ops[a] for a in sw.operand_names(program.scipy)]
            row = {"program": program.name, "expression": program.expression, "n": rows_n}
            try:
                f = sf.jit(program.ours, out=program.out, wait=False) if program.out else \
                    sf.jit(program.ours, wait=False)
                with np.errstate(all="ignore"):
                    started = time.perf_counter()
                    got = f(*args)
                    row["first_answer_s"] = time.perf_counter() - started
                last = tiering.last_call()
                row["answered"] = last.get("answered", "kernel")
                want = program.scipy(*scipy_args)
                row["mismatch"] = sw.same_result(got, want, program.out)
                row["scipy_s"] = _best(lambda: program.scipy(*scipy_args), repeat)
                try:
                    plan, values, library = _plan_as_tiering(f, args)
                    with np.errstate(all="ignore"):
                        row["fallback_s"] = _best(lambda: plan(values, library), repeat)
                except (Declined, Unsupported) as exc:
                    row["fallback_s"], row["declined"] = None, str(exc).split(":")[0][:60]
                f.wait()
                with np.errstate(all="ignore"):
                    row["kernel_s"] = _best(lambda: f(*args), repeat)
            except Exception as exc:  # noqa: BLE001 - reported in the table
                row["error"] = f"{type(exc).__name__}: {str(exc).splitlines()[0][:100]}"
            rows.append(row)
            if progress:
                print(f"first answer [{i + 1}] {program.name}: {row.get('answered', '-')} "
                      f"{_ms(row.get('first_answer_s'))} ms", file=sys.stderr, flush=True)
    return warm, rows


def first_ratio(r: dict) -> float | None:
    """scipy's time over the first answer's: the fallback's warm run where it answered,
    else the first call's wall time (the wait for the kernel)."""
    if "error" in r or r.get("mismatch") or not r.get("scipy_s"):
        return None
    if r.get("answered") == "fallback" and r.get("fallback_s"):
        return r["scipy_s"] / r["fallback_s"]
    return r["scipy_s"] / r["first_answer_s"]


def report_sweep(warm: dict, rows: list[dict], n: int, k: int) -> str:
    lines = [f"The default path (tiering on, empty kernel cache) on the sweep's programs, "
             f"N = {n}, K = {k} (tiers small N/10, dense N/100); load average "
             f"{os.getloadavg()[0]:.1f}:", "",
             "| program | N | answered | first call, ms | fallback, ms | kernel, ms | "
             "scipy, ms | first answer × scipy | kernel × scipy | note |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    firsts, kernels = [], []
    for r in rows:
        fr = first_ratio(r)
        kr = r["scipy_s"] / r["kernel_s"] if r.get("kernel_s") and r.get("scipy_s") and \
            not r.get("mismatch") and "error" not in r else None
        if fr is not None:
            firsts.append(fr)
        if kr is not None:
            kernels.append(kr)
        note = r.get("error") or (f"wrong: {r['mismatch']}" if r.get("mismatch") else "") or \
            (f"declined: {r['declined']}" if r.get("declined") else "")
        note = note.replace("|", "\\|")
        lines.append(f"| {r['program']} | {r['n']} | {r.get('answered', '–')} | "
                     f"{_ms(r.get('first_answer_s'))} | {_ms(r.get('fallback_s'))} | "
                     f"{_ms(r.get('kernel_s'))} | {_ms(r.get('scipy_s'))} | "
                     f"{'–' if fr is None else f'{fr:.2f}'} | "
                     f"{'–' if kr is None else f'{kr:.2f}'} | {note} |")

    def gm(xs):
        return statistics.geometric_mean(xs) if xs else float("nan")
    lines += ["", f"first answer × scipy: geometric mean {gm(firsts):.2f} over {len(firsts)} "
              f"programs, {sum(x < 0.3 for x in firsts)} below 0.3, "
              f"{sum(x < 0.8 for x in firsts)} below 0.8; steady state (kernel) × scipy: "
              f"{gm(kernels):.2f}",
              f"warm-up (imports, Cython's start-up): first answer "
              f"{warm['first_answer_s'] * 1e3:.0f} ms, kernel ready after "
              f"{warm['ready_s']:.2f} s"]
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
        if getattr(args, "sweep", False):  # --first-answer --sweep
            warm, rows = measure_sweep(args.sweep_n, args.sweep_nnz, names or None,
                                       repeat=3, progress=not args.no_progress)
            print(report_sweep(warm, rows, args.sweep_n, args.sweep_nnz))
            return 0
        matrices = [n for group in (args.matrices or []) for n in group.split(",") if n]
        matrix = matrices[0] if matrices else "uniform_2M"
        warm, rows = measure(names or None, matrix, args.matrix_dir, repeat=3)
        print(report(warm, rows, matrix))
        return 0
    bench.set_defaults(run=dispatch)

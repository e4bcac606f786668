"""The compute group's part of the report: per program, the status on every matrix (ok,
densifies — the compiler's plan would densify a sparse input, so it was not run —, skipped,
or the error), sparsefold's time and its speedup over scipy, each GraphBLAS figure, tensora,
and for fused programs over the unfused sparsefold pipeline; which programs densify today;
and, for runs on a few matrices, the same per matrix.
"""

from __future__ import annotations

import math
from collections import defaultdict

from sparsefold.benchmarks.peers import PEER_SYSTEMS

__all__ = ["sections", "program_table", "matrix_table", "LEGEND", "PER_MATRIX_UP_TO"]

# per-matrix tables only for runs on at most this many matrices (quick, scale, a selection)
PER_MATRIX_UP_TO = 8
_OTHERS = ("scipy", "graphblas_1t", "graphblas_nt", "graphblas_nt_scipy", "tensora",
           "unfused")
_HEAD = ("× scipy", "× GB 1t", "× GB Nt", "× GB Nt→scipy", "× tensora", "fused ÷ unfused")

LEGEND = """Columns: **plan** = the compiler's strategy for the fused kernel (from
`kernel.plan.strategy`; "dense" over a sparse input means it densifies). **status** = per
matrix: ok, densifies (the plan would allocate more than 2^27 dense elements, so it was not
run), skipped (the program does not apply: not square, or A @ A too big), or the error.
**time** = sparsefold's time, geometric mean over the matrices where it ran. **× X** = X's
time ÷ sparsefold's (above 1: sparsefold is faster), geometric mean over matrices where both
were correct; GB = GraphBLAS native output at 1 thread / its default N threads, "→scipy"
with the export to the scipy format; tensora's result stays native (a tensora Tensor);
**fused ÷ unfused** = the unfused sparsefold pipeline's time ÷ the fused kernel's (target ≥
1.3). "–": the peer cannot express the program, or nothing to compare."""


def _by_case(rows):
    """{program: {matrix: {system: row}}} in run order."""
    table: dict = defaultdict(dict)
    for r in rows:
        table[r["kernel"]].setdefault(r["matrix"], {})[r["system"]] = r
    return table


def _secs(r) -> float | None:
    return float(r["seconds"]) if r is not None and r["status"] == "ok" else None


def _geo(values):
    return math.exp(sum(map(math.log, values)) / len(values)) if values else None


def _ratio_cell(by_matrix: dict, other: str) -> str:
    ratios = []
    for systems in by_matrix.values():
        ours, theirs = _secs(systems.get("sparsefold")), _secs(systems.get(other))
        if ours and theirs:
            ratios.append(theirs / ours)
    if ratios:
        return f"{_geo(ratios):.2f}"
    return "–"


def _plans(by_matrix: dict) -> str:
    seen = []
    for systems in by_matrix.values():
        r = systems.get("sparsefold")
        if r is not None and r["detail"].startswith("plan: "):
            plan = r["detail"].split(";")[0][len("plan: "):]
            if plan not in seen:
                seen.append(plan)
    return ", ".join(seen) or "–"


def _status(by_matrix: dict) -> str:
    counts: dict[str, int] = defaultdict(int)
    first_error = ""
    for systems in by_matrix.values():
        r = systems.get("sparsefold")
        if r is None:
            continue
        counts[r["status"]] += 1
        if r["status"] in ("error", "wrong", "timeout") and not first_error:
            first_error = r["detail"].split("; ", 1)[-1][:120]
    total = sum(counts.values())
    text = ", ".join(f"{k} {v}/{total}" for k, v in counts.items())
    return text + (f" ({first_error})" if first_error else "")


def program_table(rows: list[dict]) -> str:
    cases = _by_case(rows)
    lines = ["| program | plan | status | time ms | " + " | ".join(_HEAD) + " |",
             "|---|---|---|---|" + "---|" * len(_HEAD)]
    for program, by_matrix in cases.items():
        times = [t for s in by_matrix.values() if (t := _secs(s.get("sparsefold")))]
        cells = []
        for other in _OTHERS:
            if other == "unfused":
                ratios = [u / f for s in by_matrix.values()
                          if (u := _secs(s.get("unfused"))) and (f := _secs(s.get("sparsefold")))]
                cells.append(f"{_geo(ratios):.2f}" if ratios else "–")
            else:
                cells.append(_ratio_cell(by_matrix, other))
        geo = _geo(times)
        lines.append(f"| {program} | {_plans(by_matrix)} | {_status(by_matrix)} | "
                     f"{'–' if geo is None else f'{geo * 1e3:.3g}'} | " + " | ".join(cells)
                     + " |")
    return "\n".join(lines)


def matrix_table(rows: list[dict]) -> str:
    """Per program and matrix: status, time and the ratios (for small runs)."""
    cases = _by_case(rows)
    lines = ["| program | matrix | status | time ms | " + " | ".join(_HEAD) + " |",
             "|---|---|---|---|" + "---|" * len(_HEAD)]
    for program, by_matrix in cases.items():
        for matrix, systems in by_matrix.items():
            ours = systems.get("sparsefold")
            t = _secs(ours)
            status = ours["status"] if ours else systems["scipy"]["status"]
            cells = [_ratio_cell({matrix: systems}, o) if o != "unfused" else
                     (f"{u / t:.2f}" if t and (u := _secs(systems.get("unfused"))) else "–")
                     for o in _OTHERS]
            lines.append(f"| {program} | {matrix} | {status} | "
                         f"{'–' if t is None else f'{t * 1e3:.3g}'} | " + " | ".join(cells)
                         + " |")
    return "\n".join(lines)


def _densifying(rows: list[dict]) -> list[str]:
    """Per program and pipeline: on how many matrices the plan was dense, how many of those
    ran (under the limits) and which did not."""
    dense: dict[str, list[dict]] = defaultdict(list)
    planned: dict[str, int] = defaultdict(int)
    for r in rows:
        if r["system"] in ("sparsefold", "unfused") and r["detail"].startswith("plan: "):
            key = f"{r['kernel']} ({r['system']})"
            planned[key] += 1
            if "dense" in r["detail"].split(";")[0]:
                dense[key].append(r)
    out = []
    for key, hits in dense.items():
        skipped = [r["matrix"] for r in hits if r["status"] == "densifies"]
        ran = len(hits) - len(skipped)
        text = (f"* {key}: a dense plan on {len(hits)}/{planned[key]} matrices; ran on {ran} "
                f"(under the limits), not run on {len(skipped)}")
        if skipped:
            shown = ", ".join(skipped[:6]) + (", ..." if len(skipped) > 6 else "")
            text += f" ({shown})"
        out.append(text)
    return out


def _peer_reasons(rows: list[dict]) -> list[str]:
    seen: dict[str, list[str]] = defaultdict(list)
    for r in rows:
        if r["system"] in PEER_SYSTEMS and r["status"] in ("n/a", "unavailable"):
            key = f"{r['status']}: {r['detail']}"
            name = f"{r['kernel']} ({r['system']})"
            if name not in seen[key]:
                seen[key].append(name)
    return [f"* {', '.join(names)} — {why}" for why, names in seen.items()]


def sections(rows: list[dict]) -> list[str]:
    parts = ["## Compute group", "", program_table(rows), "", LEGEND, ""]
    matrices = {r["matrix"] for r in rows}
    if len(matrices) <= PER_MATRIX_UP_TO:
        parts += ["### Per matrix", "", matrix_table(rows), ""]
    dense = _densifying(rows)
    if dense:
        parts += ["### Dense plans (the compiler densifies a sparse input)", ""] + dense + [""]
    skipped = sorted({f"* {r['kernel']} on {r['matrix']}: {r['detail']}" for r in rows
                      if r["status"] == "skipped" and r["system"] == "scipy"})
    if skipped:
        parts += ["### Skipped", ""] + skipped + [""]
    reasons = _peer_reasons(rows)
    if reasons:
        parts += ["### Peers without a figure", ""] + reasons + [""]
    return parts

"""Summary and plots of one benchmark run (rows as written by ``run``).

Per kernel, over the matrices where both systems of a ratio finished and were correct:
the geometric-mean speedup of sparsefold over scipy and over pydata/sparse (or, for the
fusion group, over the unfused pipeline), with min and max; the geometric-mean ratio of our
time to the floor, with min and max; the same two figures on matrices with >= 100k
nonzeros; and the slowest first call (compilation included, unless the kernel was already
in the disk cache). Scale inputs get their own table (per matrix, not averaged), since the
target there is that the speedup over scipy must not shrink from 1M to 16M nonzeros; and
the tiny overhead matrix gets a table of absolute times (the cost of one call). With peers,
a second table gives sparsefold's geometric-mean speedup over each GraphBLAS and tensora
figure ("–" where the peer cannot express the kernel, with the reason below the table). The
compute group's rows are summarized by ``compute_report``.
"""

from __future__ import annotations

import math
from collections import defaultdict
from pathlib import Path

from sparsefold.benchmarks import inputs
from sparsefold.benchmarks.peers import PEER_SYSTEMS

__all__ = ["summarize", "summary_table", "scale_table", "overhead_table", "failures", "plot",
           "write_report", "BIG_NNZ", "peer_table", "LEGEND"]

BIG_NNZ = 100_000
_SYSTEMS = ("sparsefold", "scipy", "pydata", "unfused", "floor") + PEER_SYSTEMS
_PEER_LABELS = {"graphblas_1t": "GraphBLAS 1 thread", "graphblas_nt": "GraphBLAS N threads",
                "graphblas_1t_scipy": "GraphBLAS 1 thread → scipy",
                "graphblas_nt_scipy": "GraphBLAS N threads → scipy", "tensora": "tensora"}

LEGEND = """Columns: **n** = matrices where sparsefold and scipy were both correct / matrices run.
**× scipy**, **× pydata/unfused** = the other system's time ÷ sparsefold's (above 1: sparsefold
is faster), geometric mean over matrices (min–max). **÷ floor** = sparsefold's time ÷ the
floor's, the time NumPy needs just to copy arrays of the output's size (fusion kernels: the
inputs'); 1.0 is the physical limit, 1.5 the target. **≥100k** = the same on matrices with
at least 100,000 entries; **scipy ÷ floor** = how far scipy itself is from the floor there.
**first call s** = the slowest warm-up call (includes compiling the kernel when it was not in
the disk cache). **not ok** = results that did not count (wrong, error, timeout, ...)."""

_PEER_LEGEND = """Each cell: the peer's time ÷ sparsefold's, geometric mean over matrices
(above 1: sparsefold is faster). GraphBLAS at 1 thread and at its default thread count;
"native" keeps its result as a GraphBLAS Matrix/Vector, "→ scipy" adds the export to the
kernel's scipy format; tensora's result always stays native (a tensora Tensor, float64).
Inputs are converted to each peer's format before timing (GraphBLAS's COO inputs are
coordinate arrays, and its build is timed). tensora's fusion figures time only the compute
part (the shape operator was applied in the untimed conversion). "–": the peer cannot
express the kernel (reason below)."""


def _cases(rows: list[dict]) -> dict:
    """{kernel: {matrix: {"nnz", "source", system: seconds or status}}} in run order."""
    table: dict = defaultdict(dict)
    for r in rows:
        case = table[r["kernel"]].setdefault(r["matrix"], {"nnz": int(r["nnz"]),
                                                            "source": r["source"]})
        case[r["system"]] = float(r["seconds"]) if r["status"] == "ok" else r["status"]
        if r["system"] == "sparsefold" and r["first_seconds"]:
            case["first"] = float(r["first_seconds"])
    return table


def _geo(values: list[float]) -> float | None:
    return math.exp(sum(map(math.log, values)) / len(values)) if values else None


def _ratios(cases: dict, num: str, den: str, min_nnz: int = 0, source: str | None = None):
    out = []
    for c in cases.values():
        a, b = c.get(num), c.get(den)
        if (isinstance(a, float) and isinstance(b, float) and b > 0 and c["nnz"] >= min_nnz
                and (source is None or c["source"] == source)):
            out.append(a / b)
    return out


def summarize(rows: list[dict], source: str | None = "suitesparse") -> list[dict]:
    """One dict per kernel: n, speedups and floor ratios (geo, min, max) as defined above,
    over matrices of ``source`` ("suitesparse", "scale", or None for all)."""
    out = []
    for kernel, cases in _cases(rows).items():
        groups = {r["group"] for r in rows if r["kernel"] == kernel}
        other = "unfused" if any("unfused" in c for c in cases.values()) else "pydata"
        chosen = {m: c for m, c in cases.items() if source is None or c["source"] == source}
        if not chosen:
            continue
        vs_scipy = _ratios(chosen, "scipy", "sparsefold")
        vs_other = _ratios(chosen, other, "sparsefold")
        floor = _ratios(chosen, "sparsefold", "floor")
        statuses = defaultdict(int)
        for c in chosen.values():
            for system in ("sparsefold", "scipy", other):
                if isinstance(c.get(system), str):
                    statuses[f"{system} {c[system]}"] += 1
        firsts = [c["first"] for c in chosen.values() if "first" in c]
        out.append({
            "kernel": kernel, "group": next(iter(groups)), "other": other,
            "matrices": len(chosen), "n": len(vs_scipy),
            "vs_scipy": (_geo(vs_scipy), min(vs_scipy, default=None),
                         max(vs_scipy, default=None)),
            "vs_other": (_geo(vs_other), min(vs_other, default=None),
                         max(vs_other, default=None)),
            "floor": (_geo(floor), min(floor, default=None), max(floor, default=None)),
            "big_vs_scipy": _geo(_ratios(chosen, "scipy", "sparsefold", BIG_NNZ)),
            "big_floor": _geo(_ratios(chosen, "sparsefold", "floor", BIG_NNZ)),
            "big_n": len(_ratios(chosen, "sparsefold", "floor", BIG_NNZ)),
            "big_scipy_floor": _geo(_ratios(chosen, "scipy", "floor", BIG_NNZ)),
            "first_max": max(firsts, default=None),
            "not_ok": dict(statuses),
        })
    return out


def _x(v: float | None, digits: int = 2) -> str:
    return "–" if v is None else f"{v:.{digits}f}"


def _span(t) -> str:
    geo, lo, hi = t
    return "–" if geo is None else f"{geo:.2f} ({lo:.2f}–{hi:.2f})"


def summary_table(summary: list[dict]) -> str:
    """Markdown: one row per kernel, then the geometric mean of each column over kernels."""
    lines = ["| kernel | n | × scipy: geo (min–max) | × pydata/unfused: geo (min–max) | "
             "÷ floor: geo (min–max) | ≥100k: × scipy | ≥100k: ÷ floor | ≥100k: scipy ÷ floor "
             "| first call s | not ok |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for s in summary:
        other = "unfused" if s["other"] == "unfused" else "pydata"
        bad = ", ".join(f"{k}: {v}" for k, v in sorted(s["not_ok"].items())) or ""
        big_n = f" (n={s['big_n']})" if s["big_n"] else ""
        lines.append(f"| {s['kernel']} | {s['n']}/{s['matrices']} | {_span(s['vs_scipy'])} | "
                     f"{_span(s['vs_other'])}{' unfused' if other == 'unfused' else ''} | "
                     f"{_span(s['floor'])} | {_x(s['big_vs_scipy'])} | "
                     f"{_x(s['big_floor'])}{big_n} | {_x(s['big_scipy_floor'])} | "
                     f"{_x(s['first_max'])} | {bad} |")
    cols = [[s[key][0] for s in summary if s[key][0] is not None]
            for key in ("vs_scipy", "vs_other", "floor")]
    lines.append(f"| **geometric mean over kernels** | | {_x(_geo(cols[0]))} | "
                 f"{_x(_geo(cols[1]))} | {_x(_geo(cols[2]))} | "
                 f"{_x(_geo([s['big_vs_scipy'] for s in summary if s['big_vs_scipy']]))} | "
                 f"{_x(_geo([s['big_floor'] for s in summary if s['big_floor']]))} | "
                 f"{_x(_geo([s['big_scipy_floor'] for s in summary if s['big_scipy_floor']]))}"
                 " | | |")
    return "\n".join(lines)


def scale_table(rows: list[dict]) -> str:
    """Markdown: per kernel and generated matrix, speedup over scipy and ratio to floor."""
    cases = _cases(rows)
    names = list(dict.fromkeys(r["matrix"] for r in rows if r["source"] == "scale"))
    if not names:
        return ""
    lines = ["| kernel | " + " | ".join(names) + " |", "|---|" + "---|" * len(names)]
    for kernel, by_matrix in cases.items():
        cells = []
        for name in names:
            c = by_matrix.get(name, {})
            ours, scipy, floor = c.get("sparsefold"), c.get("scipy"), c.get("floor")
            if not isinstance(ours, float):
                cells.append(str(ours or "–"))
                continue
            sp_ = f"{scipy / ours:.2f}×" if isinstance(scipy, float) else f"scipy {scipy}"
            fl = f"÷{ours / floor:.2f}" if isinstance(floor, float) else ""
            cells.append(f"{sp_} {fl}".strip())
        lines.append(f"| {kernel} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def overhead_table(rows: list[dict]) -> str:
    """Markdown: each system's time in µs on the tiny overhead matrix (= cost of a call)."""
    cases = _cases([r for r in rows if r["source"] == "overhead"])
    if not cases:
        return ""
    lines = ["| kernel | sparsefold µs | scipy µs | pydata / unfused µs | floor µs |",
             "|---|---|---|---|---|"]
    for kernel, by_matrix in cases.items():
        c = next(iter(by_matrix.values()))
        other = c.get("unfused", c.get("pydata"))
        cells = [f"{v * 1e6:.1f}" if isinstance(v, float) else str(v or "–")
                 for v in (c.get("sparsefold"), c.get("scipy"), other, c.get("floor"))]
        lines.append(f"| {kernel} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def failures(rows: list[dict]) -> list[str]:
    """One line per result that did not count (wrong, error, timeout, unchecked)."""
    return [f"{r['kernel']} on {r['matrix']}: {r['system']} {r['status']}"
            + (f" — {r['detail']}" if r["detail"] else "")
            for r in rows if r["status"] not in ("ok", "unavailable", "n/a", "skipped",
                                                  "densifies")]


_STYLE = {"sparsefold": ("tab:blue", "o"), "scipy": ("tab:orange", "s"),
          "pydata": ("tab:green", "^"), "unfused": ("tab:purple", "v"),
          "floor": ("0.5", "."), "graphblas_1t": ("tab:red", "D"),
          "graphblas_nt": ("tab:brown", "d"), "graphblas_1t_scipy": ("tab:pink", "P"),
          "graphblas_nt_scipy": ("tab:olive", "X"), "tensora": ("tab:cyan", "*")}


def plot(rows: list[dict], directory: Path, prefix: str = "") -> list[Path]:
    """Log-log scatter plots of time vs nnz, one panel per kernel and a point per matrix and
    system (the paper's figures), and speedup over scipy vs nnz. Returns the PNG paths."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cases = _cases([r for r in rows if r["source"] != "overhead"])
    if not cases:
        return []
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    grid = math.ceil(len(cases) / 3)
    fig, axes = plt.subplots(grid, 3, figsize=(15, 3.6 * grid), squeeze=False)
    fig2, axes2 = plt.subplots(grid, 3, figsize=(15, 3.2 * grid), squeeze=False)
    for i, (kernel, by_matrix) in enumerate(cases.items()):
        ax = axes[i // 3][i % 3]
        for system in _SYSTEMS:
            pts = [(c["nnz"], c[system]) for c in by_matrix.values()
                   if isinstance(c.get(system), float)]
            if pts:
                color, marker = _STYLE[system]
                ax.scatter(*zip(*pts), s=12, c=color, marker=marker, label=system, alpha=0.8)
        ax.set(xscale="log", yscale="log", title=kernel, xlabel="nnz", ylabel="seconds")
        ax.grid(True, which="major", alpha=0.3)
        ax.legend(fontsize=7, loc="upper left")
        bx = axes2[i // 3][i % 3]
        pts = [(c["nnz"], c["scipy"] / c["sparsefold"]) for c in by_matrix.values()
               if isinstance(c.get("scipy"), float) and isinstance(c.get("sparsefold"), float)]
        if pts:
            bx.scatter(*zip(*pts), s=12, c="tab:blue")
        bx.axhline(1.0, color="0.4", lw=0.8)
        bx.set(xscale="log", yscale="log", title=kernel, xlabel="nnz",
               ylabel="speedup over scipy")
        bx.grid(True, alpha=0.3)
    for j in range(len(cases), grid * 3):
        axes[j // 3][j % 3].axis("off")
        axes2[j // 3][j % 3].axis("off")
    for f, name in ((fig, f"{prefix}time_vs_nnz.png"), (fig2, f"{prefix}speedup_vs_nnz.png")):
        f.tight_layout()
        f.savefig(directory / name, dpi=90)
        plt.close(f)
        written.append(directory / name)
    return written


def peer_table(rows: list[dict]) -> str:
    """Markdown: per paper kernel, sparsefold's geometric-mean speedup over each peer figure,
    then the reasons behind every "–"."""
    rows = [r for r in rows if r["group"] != "compute" and r["source"] != "overhead"]
    present = [s for s in PEER_SYSTEMS if any(r["system"] == s for r in rows)]
    if not present:
        return ""
    cases = _cases(rows)
    reasons: dict[tuple[str, str], list[str]] = {}
    for r in rows:
        if r["system"] in present and r["status"] in ("n/a", "unavailable"):
            names = reasons.setdefault((_PEER_LABELS[r["system"]],
                                        f"{r['status']}: {r['detail']}"), [])
            if r["kernel"] not in names:
                names.append(r["kernel"])
    lines = ["| kernel | " + " | ".join(
        _PEER_LABELS[s] + ("" if s in ("tensora",) or s.endswith("_scipy") else " native")
        for s in present) + " |", "|---|" + "---|" * len(present)]
    for kernel, by_matrix in cases.items():
        cells = []
        for system in present:
            ratios = _ratios(by_matrix, system, "sparsefold")
            statuses = {c.get(system) for c in by_matrix.values()} - {None}
            if ratios:
                cells.append(f"{_geo(ratios):.2f} (n={len(ratios)})")
            elif statuses & {"n/a"}:
                cells.append("–")
            else:
                cells.append(", ".join(sorted(str(x) for x in statuses
                                              if not isinstance(x, float))) or "–")
        lines.append(f"| {kernel} | " + " | ".join(cells) + " |")
    text = "\n".join(lines) + "\n\n" + _PEER_LEGEND
    if reasons:
        text += "\n\n" + "\n".join(f"* {label} on {', '.join(kernels)} — {why}"
                                    for (label, why), kernels in reasons.items())
    return text


def write_report(rows: list[dict], out_dir: Path, run_id: str,
                 plots: bool = True) -> tuple[str, list[tuple[str, Path]]]:
    """Write ``summary-<run>.md`` (and plots under ``plots/<run>/``); return the text and
    [(what, path)] of the files written."""
    from sparsefold.benchmarks import compute_report
    paper = [r for r in rows if r["group"] != "compute"]
    compute = [r for r in rows if r["group"] == "compute"]
    parts = [f"# Benchmark run {run_id}", ""]
    for source, title in (("suitesparse", "SuiteSparse matrices"), ("scale", "Scale inputs")):
        summary = summarize(paper, source)
        if summary:
            parts += [f"## {title}", "", summary_table(summary), ""]
    if any(summarize(paper, s) for s in ("suitesparse", "scale")):
        parts += [LEGEND, ""]
    table = peer_table(paper)
    if table:
        parts += ["## Against the peers (paper kernels)", "", table, ""]
    table = scale_table(paper)
    if table:
        parts += ["## Scale inputs, per matrix (× scipy, ÷ floor)", "", table, ""]
    table = overhead_table(paper)
    if table:
        parts += [f"## Call overhead ({inputs.OVERHEAD.rows}×{inputs.OVERHEAD.cols}, "
                  f"{inputs.OVERHEAD.nnz} entries)", "", table, ""]
    if compute:
        parts += compute_report.sections(compute)
    bad = failures(rows)
    if bad:
        parts += ["## Results that did not count", ""] + [f"* {b}" for b in bad] + [""]
    written: list[tuple[str, Path]] = []
    if plots:
        try:
            paths = plot(paper, out_dir / "plots" / run_id) if paper else []
            if compute:
                paths += plot(compute, out_dir / "plots" / run_id, prefix="compute_")
            parts += ["## Plots", ""] + [f"* {p}" for p in paths] + [""]
            written += [("plot", p) for p in paths]
        except ImportError:
            parts += ["(plots skipped: matplotlib is not installed; "
                      "pip install -e \".[bench]\")", ""]
    text = "\n".join(parts)
    out_dir.mkdir(parents=True, exist_ok=True)
    summary_path = out_dir / f"summary-{run_id}.md"
    summary_path.write_text(text + "\n")
    return text, [("summary", summary_path)] + written

"""The ``dropin`` group of ``sparsefold bench``: each ``sparsefold.scipy`` function against
``scipy.sparse`` on the same call (``sparsefold bench --kernels dropin [--quick]``).

Per matrix M (canonical float32 CSR; its column halves L, R and row halves T, U as in the
suite's concat kernels), the calls are the ones code using
scipy makes: ``hstack([L, R])`` (csr and coo inputs), ``vstack([T, U])``, ``vstack(...,
format="csr")`` of COO blocks, ``bmat([[L, None], [None, R]])``, ``block_array`` into CSR,
``block_diag([T, U])``, ``tril(M)`` and ``triu(M, 1, format="csr")``. ``kron``,
``diags_array`` and ``random_array`` are scipy's own functions: not timed.

Each call is checked first (same class, format, dtype, shape and entries as scipy's; a
mismatch is recorded as ``wrong`` and its time does not count), then timed as the suite
times (the minimum of ``--repeat`` runs after a warm-up call; the warm-up's time is the
``first`` column: a layout's kernel is compiled on its first call unless prebuilt).
Rows go to ``OUT/dropin.csv``; the table printed at the end gives the median time per
call and the geometric mean of scipy's time over ours per function (> 1: we are faster).
"""

from __future__ import annotations

import csv
import datetime as _dt
import math
import statistics
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from sparsefold.benchmarks import inputs
from sparsefold.benchmarks.timing import Timeout, best_of, call_with_timeout

__all__ = ["CALLS", "cases", "run", "FIELDS"]

FIELDS = ("run_id", "call", "matrix", "rows", "cols", "nnz", "system", "status", "seconds",
          "first_seconds", "detail")

CALLS = ("hstack csr", "hstack coo", "vstack csr", "vstack coo->csr", "bmat",
         "block_array csr", "block_diag", "tril", "triu csr")


def cases(m: sp.csr_array) -> dict[str, object]:
    """call name -> ``f(module)``: the call made with ``sparsefold.scipy`` or scipy.sparse."""
    h, w = m.shape[1] // 2, m.shape[0] // 2
    left, right = m[:, :h].tocsr(), m[:, h:].tocsr()
    top, bottom = m[:w].tocsr(), m[w:].tocsr()
    lc, rc, tc, bc = left.tocoo(), right.tocoo(), top.tocoo(), bottom.tocoo()
    return {
        "hstack csr": lambda s: s.hstack([left, right]),
        "hstack coo": lambda s: s.hstack([lc, rc]),
        "vstack csr": lambda s: s.vstack([top, bottom]),
        "vstack coo->csr": lambda s: s.vstack([tc, bc], format="csr"),
        "bmat": lambda s: s.bmat([[left, None], [None, right]]),
        "block_array csr": lambda s: s.block_array([[left, None], [None, right]],
                                                   format="csr"),
        "block_diag": lambda s: s.block_diag([top, bottom]),
        "tril": lambda s: s.tril(m),
        "triu csr": lambda s: s.triu(m, 1, format="csr"),
    }


def _check(got, want) -> str | None:
    """Why ``got`` is not scipy's result, or None."""
    if type(got) is not type(want):
        return f"{type(got).__name__} instead of {type(want).__name__}"
    if (got.format, got.shape, got.dtype) != (want.format, want.shape, want.dtype):
        return f"{got.format} {got.shape} {got.dtype} instead of {want.format} " \
               f"{want.shape} {want.dtype}"
    g, w = got.tocoo(), want.tocoo()
    g.sum_duplicates()
    w.sum_duplicates()
    if g.nnz != w.nnz or not (np.array_equal(g.row, w.row) and np.array_equal(g.col, w.col)
                              and np.array_equal(g.data, w.data)):
        return "different entries"
    return None


def _measure(fn, repeat: int, timeout: float) -> tuple[object, dict]:
    try:
        result, first = call_with_timeout(fn, timeout + 60.0)  # may compile
    except Timeout as exc:
        return None, {"status": "timeout", "detail": f"warm-up {exc}"}
    except Exception as exc:  # noqa: BLE001 - a failure is data
        return None, {"status": "error", "detail": f"{type(exc).__name__}: {exc}"[:300]}
    timing = best_of(fn, repeat, timeout)
    row = {"status": timing.status, "first_seconds": f"{first:.6g}"}
    if timing.status == "ok":
        row["seconds"] = f"{timing.best:.6g}"
    return result, row


def run_matrix(info, m, run_id: str, repeat: int, timeout: float) -> list[dict]:
    import sparsefold.scipy as ours
    rows = []
    base = {"run_id": run_id, "matrix": info.name, "rows": m.shape[0], "cols": m.shape[1],
            "nnz": m.nnz}
    for name, call in cases(m).items():
        want, scipy_row = _measure(lambda: call(sp), repeat, timeout)
        rows.append({**base, "call": name, "system": "scipy", **scipy_row})
        got, our_row = _measure(lambda: call(ours), repeat, timeout)
        if got is not None and want is not None:
            why = _check(got, want)
            if why is not None:
                our_row = {**our_row, "status": "wrong", "detail": why, "seconds": ""}
        rows.append({**base, "call": name, "system": "sparsefold", **our_row})
    return rows


def summary(rows: list[dict]) -> str:
    """Per call: matrices measured, median seconds of each system, the geometric mean of
    scipy / sparsefold (> 1: sparsefold faster), and the slowest first call."""
    lines = [f"{'call':18} {'n':>3} {'scipy med':>11} {'ours med':>11} {'scipy/ours':>10} "
             f"{'min':>6} {'max':>6} {'first call':>10}",
             "(times in ms; scipy/ours: geometric mean over matrices of scipy's time divided "
             "by ours, > 1 means sparsefold is faster; first call: our slowest warm-up, "
             "which compiles a kernel unless it is prebuilt or cached)"]
    for call in CALLS:
        pairs, firsts, wrong = [], [], 0
        for matrix in dict.fromkeys(r["matrix"] for r in rows):
            sel = {r["system"]: r for r in rows if r["call"] == call and r["matrix"] == matrix}
            s, o = sel.get("scipy"), sel.get("sparsefold")
            if not s or not o:
                continue
            wrong += o["status"] == "wrong"
            if o.get("first_seconds"):
                firsts.append(float(o["first_seconds"]))
            if s["status"] == o["status"] == "ok":
                pairs.append((float(s["seconds"]), float(o["seconds"])))
        if not pairs:
            lines.append(f"{call:18} {0:>3}  (no measurement{'; wrong' if wrong else ''})")
            continue
        ratios = [a / b for a, b in pairs if b > 0]
        geo = math.exp(statistics.fmean(math.log(r) for r in ratios)) if ratios else math.nan
        lines.append(
            f"{call:18} {len(pairs):>3} {1e3 * statistics.median(a for a, _ in pairs):>11.3f} "
            f"{1e3 * statistics.median(b for _, b in pairs):>11.3f} {geo:>10.2f} "
            f"{min(ratios):>6.2f} {max(ratios):>6.2f} {max(firsts, default=0):>9.2f}s"
            + (f"  ({wrong} wrong)" if wrong else ""))
    return "\n".join(lines)


def run(args, matrices) -> int:
    """``sparsefold bench --kernels dropin``: every call on every selected matrix."""
    out_dir: Path = args.out
    out_dir.mkdir(parents=True, exist_ok=True)
    run_id = _dt.datetime.now().strftime("%Y%m%dT%H%M%S")
    csv_path = out_dir / "dropin.csv"
    new = not csv_path.exists() or csv_path.stat().st_size == 0
    all_rows = []
    with open(csv_path, "a", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=FIELDS)
        if new:
            writer.writeheader()
        for info in matrices:
            if info.source == "overhead":
                continue
            m = inputs.load(info, args.matrix_dir, out_dir / "cache")
            rows = run_matrix(info, m, run_id, args.repeat, args.timeout)
            writer.writerows(rows)
            fh.flush()
            all_rows += rows
            if not args.no_progress:
                print(f"dropin: {info.name} done", flush=True)
    text = summary(all_rows)
    (out_dir / f"dropin-{run_id}.txt").write_text(text + "\n")
    print(text)
    print(f"\nrows: {csv_path}\nsummary: {out_dir / f'dropin-{run_id}.txt'}")
    return 0

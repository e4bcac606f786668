"""Call-overhead micro-benchmark (issue #13: "call overhead ≤ 5 µs"): the time of one cached
call of a tiny kernel, where the data movement is nothing and the whole time is the fixed
cost — dispatch, input parsing, size binding, argument building, the compiled run, wrapping
the result. Reported only; no target is enforced here.

    sparsefold bench --overhead

Kernels: ``hstack`` of two 4 × 4 CSR arrays (CSR out), SpMV of a 4 × 4 CSR array and the sum
of three 4 × 4 CSR arrays (CSR out), float64, each with scipy's time for the same call beside
it, and sparsefold's time on its checked Python path (the generated module's fast entry,
``compiler/lower/fastcall.py``, switched off: how every call ran before it). Per call = the median
(and the minimum) over rounds of (a loop of ``calls`` calls) ÷ ``calls``; the rounds of the
two sparsefold paths alternate, so machine load falls on both alike.

Breakdown: the same calls under ``cProfile``; the functions that the jit entry point
(``JitFunction.__call__``) and the kernel's ``__call__`` call directly, each with its share
of the profiled call, applied to the unprofiled time (the profiler's own cost is spread
evenly, so the figures are estimates). The tree is read from the profile, not from a list of
known names, so it follows the compiler's structure as it changes.
"""

from __future__ import annotations

import cProfile
import datetime as _dt
import os
import pstats
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp

import sparsefold as sf

__all__ = ["per_call", "paths", "breakdown", "KERNELS", "report", "main"]

_hstack = sf.jit(lambda a, b: sf.hstack([a, b]), out="csr")
_spmv = sf.jit(lambda a, x: a @ x, out="dense")
_add3 = sf.jit(lambda a, b, c: a + b + c, out="csr")


def _tiny():
    a = sp.random_array((4, 4), density=0.5, format="csr", rng=np.random.default_rng(1))
    b = sp.random_array((4, 4), density=0.5, format="csr", rng=np.random.default_rng(2))
    c = sp.random_array((4, 4), density=0.5, format="csr", rng=np.random.default_rng(4))
    return a.tocsr(), b.tocsr(), c.tocsr(), np.random.default_rng(3).random(4)


def _kernels():
    a, b, c, x = _tiny()
    return {
        "spmv(4x4 csr) -> dense": (lambda: _spmv(a, x), lambda: a @ x),
        "hstack(4x4 csr, 4x4 csr) -> csr": (lambda: _hstack(a, b),
                                             lambda: sp.hstack([a, b], format="csr")),
        "add(3 x 4x4 csr) -> csr": (lambda: _add3(a, b, c), lambda: a + b + c),
    }


def _fast_entries(enabled: bool) -> None:
    """Switch the kernels' fast entries (``compiler/lower/fastcall.py``) on or off."""
    for jit_fn in (_spmv, _hstack, _add3):
        for entry in jit_fn._recent.values():
            kernel = entry.compiled
            if kernel is not None:
                kernel._fast_ok = enabled and not kernel.map_requires


def paths(fn, calls: int = 2000, rounds: int = 7) -> dict[str, list[float]]:
    """Seconds per call of ``fn`` on the fast entry and on the checked path, every round of
    one beside a round of the other."""
    fn()  # compile / warm
    out: dict[str, list[float]] = {"fast": [], "checked": []}
    try:
        for _ in range(rounds):
            for path in ("checked", "fast"):
                _fast_entries(path == "fast")
                t0 = time.perf_counter()
                for _ in range(calls):
                    fn()
                out[path].append((time.perf_counter() - t0) / calls)
    finally:
        _fast_entries(True)
    return out


KERNELS = tuple(_kernels())


def per_call(fn, calls: int = 2000, rounds: int = 7) -> float:
    """Seconds per call: the minimum over ``rounds`` of a loop of ``calls`` calls."""
    fn()  # compile / warm
    best = float("inf")
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        best = min(best, (time.perf_counter() - t0) / calls)
    return best


def _label(func) -> str:
    path, line, name = func
    module = Path(path).stem if path not in ("~", "") else "builtin"
    return f"{module}.{name}" if module != "builtin" else name


def _callees(stats: pstats.Stats, parent) -> list[tuple[str, float]]:
    """(label, cumulative seconds) of every function that ``parent`` calls directly, plus
    the parent's own time as "(self)"."""
    out = []
    for func, (_, _, _, _, callers) in stats.stats.items():
        if parent in callers:
            _, _, _, ct = callers[parent]
            out.append((_label(func), ct))
    out.sort(key=lambda t: -t[1])
    out.append(("(self)", stats.stats[parent][2]))
    return out


def _find(stats: pstats.Stats, file_end: str, name: str):
    for func in stats.stats:
        if func[0].endswith(file_end) and func[2] == name:
            return func
    return None


def breakdown(fn, calls: int = 3000) -> list[tuple[int, str, float]]:
    """[(depth, label, fraction of one profiled call)] for the jit entry point's direct
    callees (depth 0) and the compiled kernel's ``__call__``'s (depth 1)."""
    fn()
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(calls):
        fn()
    prof.disable()
    stats = pstats.Stats(prof)
    top = _find(stats, os.path.join("sparsefold", "jit.py"), "__call__")
    if top is None:
        return []
    total = stats.stats[top][3]
    if total <= 0:
        return []
    out = []
    kernel = None
    for label, seconds in _callees(stats, top):
        out.append((0, label, seconds / total))
        if label.endswith(".__call__") and kernel is None:
            kernel = next((f for f in stats.stats if _label(f) == label and
                           top in stats.stats[f][4]), None)
            if kernel is not None:
                out += [(1, sub, s / total) for sub, s in _callees(stats, kernel)]
    return out


def report(calls: int = 2000, rounds: int = 7) -> str:
    lines = ["| kernel | sparsefold µs/call (median, min) | checked path µs/call (median, "
             "min) | scipy µs/call |", "|---|---|---|---|"]
    trees = []
    for name, (ours, theirs) in _kernels().items():
        both = paths(ours, calls, rounds)
        t_scipy = per_call(theirs, calls, rounds)
        t_ours = float(np.median(both["fast"]))
        cells = [f"{np.median(both[p]) * 1e6:.2f} ({min(both[p]) * 1e6:.2f})"
                 for p in ("fast", "checked")]
        lines.append(f"| {name} | {cells[0]} | {cells[1]} | {t_scipy * 1e6:.2f} |")
        tree = breakdown(ours, calls)
        if tree:
            trees += [f"**{name}** — {t_ours * 1e6:.2f} µs per call; where it goes (share of "
                      f"a profiled call, × the unprofiled time):", ""]
            trees += [f"{'    ' * depth}* {label}: {frac * 100:.0f}% ≈ "
                      f"{frac * t_ours * 1e6:.2f} µs" for depth, label, frac in tree
                      if frac >= 0.005]
            trees.append("")
    text = "\n".join(["## Call overhead (cached calls of tiny kernels)", "", *lines, "",
                      "Target (issue #13): ≤ 5 µs per cached call — reported, not enforced.",
                      "", *trees,
                      "\"(self)\" of the kernel's `__call__` includes the compiled kernel's run: "
                      "Cython functions are invisible to cProfile."])
    return text


def main(out_dir: Path, repeat: int = 7) -> int:
    text = report(rounds=max(3, repeat))
    print(text)
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"overhead-{_dt.datetime.now().strftime('%Y%m%dT%H%M%S')}.md"
    path.write_text(text + "\n")
    print(f"\noverhead report: {path}")
    return 0

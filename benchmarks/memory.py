"""Peak memory of compiled kernels on a large input (issue #6 §3: "a 16M-nonzero kernel's peak
memory ≤ 1.2× (inputs + output) — measure and report").

    python -m sparsefold.benchmarks.memory                  # 16M entries, every kernel
    python -m sparsefold.benchmarks.memory --nnz 1000000 --kernels slice,scale --no-rss
    python -m sparsefold.benchmarks.memory --leaks 10000    # RSS growth over 10,000 calls

The input is the banded float32 CSR matrix of :mod:`benchmarks.inputs` with exactly ``nnz``
stored entries (``band_16M`` for the default); each kernel gets its operands prepared from
it (two column halves for hstack, two row halves for vstack, ...), so "inputs" means the
operands the call receives. Each kernel is first called on a same-shaped matrix with a few
entries, so compiling (Cython runs in-process) is not part of any figure. Two measurements:

* **traced** (in this process): :mod:`tracemalloc` sees every NumPy data allocation (NumPy
  reports them to it). Started after the operands exist, the call's traced peak ``P`` is
  what the call had allocated at its worst moment: temporaries plus output. The figure of
  the issue is ``ratio = (inputs + P) / (inputs + output)``, where *output* is the bytes of
  the returned arrays. *retained* is what is still traced after the call: what the result
  keeps alive, more than *output* when it views a larger buffer.
* **RSS** (``--rss``, default on): the same call in a fresh subprocess, with glibc told to
  map every block above 128 KiB freshly and return freed memory at once (so earlier frees
  cannot hide the call's allocations); the kernel's peak resident set is ``VmHWM`` after
  resetting it just before the call (``/proc/self/clear_refs``; else ``ru_maxrss``), minus
  ``VmRSS`` at that moment. It includes page granularity and anything not traced, and is
  reported as ``rss_ratio = (inputs + delta) / (inputs + output)``.

``--leaks CALLS`` (:func:`leak_check`) instead calls each kernel CALLS times on a 2000-entry
matrix after a warm-up and reports the RSS growth, and the traced growth over 2000 more calls.
"""

from __future__ import annotations

import argparse
import ctypes
import ctypes.util
import gc
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

import sparsefold as sf
from sparsefold.benchmarks import inputs

__all__ = ["KERNELS", "MemoryKernel", "MemoryResult", "band_matrix", "array_bytes",
           "retained_bytes", "measure", "measure_rss", "LeakResult", "leak_check", "rss_bytes",
           "main", "BOUND"]

BOUND = 1.2  # the bound on (inputs + peak during the call) / (inputs + output)


def _half_rows(a):
    return a[0:(a.shape[0] + 1) // 2:2, :]


@dataclass(frozen=True)
class MemoryKernel:
    """A kernel to measure: ``fn`` (a jit function), ``prepare(m)`` -> its operands, and
    ``reference(*operands)`` -> scipy/NumPy's result for checking ours."""

    name: str
    expression: str
    fn: Callable
    prepare: Callable[[sp.csr_array], tuple]
    reference: Callable[..., Any]


def _col_halves(m):
    h = m.shape[1] // 2
    return m[:, :h].tocsr(), m[:, h:].tocsr()


def _row_halves(m):
    h = m.shape[0] // 2
    return m[:h, :].tocsr(), m[h:, :].tocsr()


def _ones_vector(m):
    return m, np.ones(m.shape[1], dtype=np.float32)


KERNELS: dict[str, MemoryKernel] = {k.name: k for k in [
    MemoryKernel("hstack", "concat([a, b], axis=1) -> csr",
                 sf.jit(lambda a, b: sf.concat([a, b], axis=1), out="csr"), _col_halves,
                 lambda a, b: sp.hstack([a, b], format="csr")),
    MemoryKernel("vstack", "concat([a, b], axis=0) -> csr",
                 sf.jit(lambda a, b: sf.concat([a, b], axis=0), out="csr"), _row_halves,
                 lambda a, b: sp.vstack([a, b], format="csr")),
    MemoryKernel("slice", "a[0:(N+1)//2:2, :] -> csr", sf.jit(_half_rows, out="csr"),
                 lambda m: (m,), _half_rows),
    MemoryKernel("collapse", "a.reshape(-1) -> sparse vector (csr)",
                 sf.jit(lambda a: a.reshape(-1), out="csr"), lambda m: (m,),
                 lambda a: a.reshape(-1)),
    MemoryKernel("scale", "a * 2 -> csr", sf.jit(lambda a: a * 2, out="csr"),
                 lambda m: (m,), lambda a: a * 2),
    MemoryKernel("matvec", "a @ x -> dense", sf.jit(lambda a, x: a @ x, out="dense"),
                 _ones_vector, lambda a, x: a @ x),
]}


def band_matrix(nnz: int, *, rows: int | None = None,
                cache_dir: Path | None = None) -> sp.csr_array:
    """The benchmarks' banded float32 CSR matrix with exactly ``nnz`` entries (``band_1M``,
    ``band_4M``, ``band_16M`` through :func:`inputs.load` and its .npz cache; other counts
    from the same generator). ``rows`` forces the side (a few entries in a big matrix: the
    warm-up input, whose kernel variant — index widths — is the big one's)."""
    if rows is None:
        for info in inputs.scale_infos():
            if info.kind == "band" and info.nnz == nnz:
                return inputs.load(info, cache_dir=cache_dir)
        rows = inputs._band_side(nnz)
    return inputs._banded(rows, nnz, np.random.default_rng(nnz))


def _arrays(x) -> list[np.ndarray]:
    if isinstance(x, np.ndarray):
        return [x]
    if isinstance(x, (tuple, list)):
        return [a for item in x for a in _arrays(item)]
    found = [getattr(x, k) for k in ("data", "indices", "indptr", "row", "col")
             if isinstance(getattr(x, k, None), np.ndarray)]
    if not hasattr(x, "indptr") and isinstance(getattr(x, "coords", None), tuple):
        found += [c for c in x.coords if isinstance(c, np.ndarray)]
    return found


def _distinct(arrays: list[np.ndarray]) -> list[np.ndarray]:
    seen, out = set(), []
    for a in arrays:
        if id(a) not in seen:
            seen.add(id(a))
            out.append(a)
    return out


def array_bytes(x) -> int:
    """Bytes of the arrays of ``x`` (a NumPy array, a scipy sparse array or a tuple of them),
    each array counted once."""
    return sum(a.nbytes for a in _distinct(_arrays(x)))


def retained_bytes(x) -> int:
    """Bytes of the buffers ``x``'s arrays keep alive (a view counts its whole base)."""
    bases = []
    for a in _arrays(x):
        while isinstance(a.base, np.ndarray):
            a = a.base
        bases.append(a)
    return sum(a.nbytes for a in _distinct(bases))


@dataclass
class MemoryResult:
    """One kernel's figures; bytes unless named otherwise."""

    kernel: str
    nnz: int
    inputs: int
    output: int
    peak: int              # traced peak during the call (temporaries + output)
    retained: int          # traced bytes alive after the call (held by the result)
    seconds: float
    correct: bool | None = None    # None: not checked
    rss_delta: int | None = None   # peak RSS during the call minus RSS before it
    rss_method: str = ""

    @property
    def ratio(self) -> float:
        return (self.inputs + self.peak) / (self.inputs + self.output)

    @property
    def rss_ratio(self) -> float | None:
        if self.rss_delta is None:
            return None
        return (self.inputs + self.rss_delta) / (self.inputs + self.output)


def _same(ours, want) -> bool:
    """Equal values at equal coordinates (sparse results compared entry by entry: densifying
    a 16M-entry band matrix would take GiBs)."""
    if sp.issparse(ours) != sp.issparse(want) or tuple(ours.shape) != tuple(want.shape):
        return False
    if not sp.issparse(ours):
        return bool(np.allclose(np.asarray(ours), np.asarray(want), rtol=1e-5))
    a, b = sp.coo_array(ours), sp.coo_array(want)
    a.sum_duplicates()
    b.sum_duplicates()
    return a.nnz == b.nnz and all(np.array_equal(x, y) for x, y in zip(a.coords, b.coords)) \
        and bool(np.allclose(a.data, b.data, rtol=1e-5))


def _warm_up(kernel: MemoryKernel, m: sp.csr_array) -> None:
    """Compile and load the kernel variant the measured call will use, on a few entries."""
    tiny = band_matrix(min(m.nnz, 64), rows=m.shape[0])
    kernel.fn(*kernel.prepare(tiny))


def measure(name: str, m: sp.csr_array, *, check: bool = False) -> MemoryResult:
    """The traced figures of kernel ``name`` on operands prepared from ``m``."""
    kernel = KERNELS[name]
    _warm_up(kernel, m)
    args = kernel.prepare(m)
    gc.collect()
    was_tracing = tracemalloc.is_tracing()
    if not was_tracing:
        tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        before = tracemalloc.get_traced_memory()[0]
        started = time.perf_counter()
        out = kernel.fn(*args)
        seconds = time.perf_counter() - started
        current, peak = tracemalloc.get_traced_memory()
    finally:
        if not was_tracing:
            tracemalloc.stop()
    result = MemoryResult(name, m.nnz, array_bytes(args), array_bytes(out), peak - before,
                          current - before, seconds)
    if check:
        result.correct = _same(out, kernel.reference(*args))
    return result


# -- the RSS figure, in a fresh process per kernel ------------------------------------------

def _status_kib(field: str) -> int | None:
    try:
        text = Path("/proc/self/status").read_text()
    except OSError:
        return None
    found = re.search(rf"^{field}:\s+(\d+) kB", text, re.MULTILINE)
    return int(found.group(1)) if found else None


def _fresh_pages_allocator() -> None:
    """glibc: mmap every block above 128 KiB and trim freed heap at once (fixed thresholds
    also stop glibc from raising them as the process frees big blocks)."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        libc.mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
        libc.mallopt(-3, 128 * 1024)  # M_MMAP_THRESHOLD
        libc.mallopt(-1, 128 * 1024)  # M_TRIM_THRESHOLD
    except (OSError, AttributeError):
        pass


def _child(name: str, nnz: int, cache_dir: Path | None) -> dict:
    """Runs in the subprocess: one call of kernel ``name``, its RSS high-water delta."""
    _fresh_pages_allocator()
    kernel = KERNELS[name]
    m = band_matrix(nnz, cache_dir=cache_dir)
    _warm_up(kernel, m)
    args = kernel.prepare(m)
    del m
    gc.collect()
    method = "VmHWM reset"
    try:
        with open("/proc/self/clear_refs", "w") as handle:
            handle.write("5")  # resets VmHWM to the current RSS
    except OSError:
        method = "ru_maxrss"
    rss_before = _status_kib("VmRSS")
    hwm_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    out = kernel.fn(*args)
    if method == "VmHWM reset":
        peak = _status_kib("VmHWM")
    else:  # a lower bound when the process peaked higher before the call
        peak = max(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, hwm_before)
    return {"rss_delta": (peak - rss_before) * 1024, "rss_method": method,
            "output": array_bytes(out)}


def measure_rss(name: str, nnz: int, *, cache_dir: Path | None = None,
                timeout: float = 600) -> tuple[int, str]:
    """(peak RSS during the call minus RSS before it, method) in a fresh subprocess."""
    command = [sys.executable, "-m", "sparsefold.benchmarks.memory", "--child", name,
               "--nnz", str(nnz)]
    if cache_dir is not None:
        command += ["--matrix-cache", str(cache_dir)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    if done.returncode != 0:
        raise RuntimeError(f"memory child for {name} failed:\n{done.stderr[-3000:]}")
    report = json.loads(done.stdout.strip().splitlines()[-1])
    return report["rss_delta"], report["rss_method"]


# -- leaks: many calls, flat memory -----------------------------------------------------------

def rss_bytes() -> int:
    """This process's resident set size now (``/proc/self/statm``)."""
    with open("/proc/self/statm") as handle:
        return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


@dataclass
class LeakResult:
    """RSS and traced growth over ``calls`` calls after ``warm_up`` calls (bytes)."""

    kernel: str
    calls: int
    rss_growth: int
    traced_calls: int
    traced_growth: int
    seconds: float


def leak_check(name: str, m: sp.csr_array, *, calls: int = 10_000, warm_up: int = 1000,
               traced_calls: int = 2000) -> LeakResult:
    """Call kernel ``name`` on operands from ``m``: ``warm_up`` times, then ``calls`` times
    measuring the RSS before and after (with a full collection at both ends), then
    ``traced_calls`` more under tracemalloc (what Python-level allocations remain)."""
    kernel = KERNELS[name]
    args = kernel.prepare(m)
    for _ in range(warm_up):
        kernel.fn(*args)
    gc.collect()
    before = rss_bytes()
    started = time.perf_counter()
    for _ in range(calls):
        kernel.fn(*args)
    seconds = time.perf_counter() - started
    gc.collect()
    rss_growth = rss_bytes() - before
    was_tracing = tracemalloc.is_tracing()
    if not was_tracing:
        tracemalloc.start()
    try:
        gc.collect()
        first = tracemalloc.take_snapshot()
        for _ in range(traced_calls):
            kernel.fn(*args)
        gc.collect()
        second = tracemalloc.take_snapshot()
    finally:
        if not was_tracing:
            tracemalloc.stop()
    traced = sum(stat.size_diff for stat in second.compare_to(first, "filename"))
    return LeakResult(name, calls, rss_growth, traced_calls, traced, seconds)


# -- the table ------------------------------------------------------------------------------

def _mb(n: int | None) -> str:
    return "-" if n is None else f"{n / 2**20:.1f}"


def table(results: list[MemoryResult]) -> str:
    head = ("kernel", "inputs MiB", "output MiB", "peak MiB", "retained MiB", "ratio",
            "RSS delta MiB", "RSS ratio", "call s", "ok")
    rows = [head]
    for r in results:
        rows.append((r.kernel, _mb(r.inputs), _mb(r.output), _mb(r.peak), _mb(r.retained),
                     f"{r.ratio:.3f}", _mb(r.rss_delta),
                     "-" if r.rss_ratio is None else f"{r.rss_ratio:.3f}", f"{r.seconds:.3f}",
                     {None: "-", True: "yes", False: "NO"}[r.correct]))
    widths = [max(len(row[c]) for row in rows) for c in range(len(head))]
    lines = ["| " + " | ".join(cell.ljust(w) for cell, w in zip(row, widths)) + " |"
             for row in rows]
    lines.insert(1, "|" + "|".join("-" * (w + 2) for w in widths) + "|")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m sparsefold.benchmarks.memory",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--nnz", type=int, default=16_000_000)
    parser.add_argument("--kernels", default=",".join(KERNELS),
                        help=f"comma-separated, from {', '.join(KERNELS)}")
    parser.add_argument("--no-rss", dest="rss", action="store_false",
                        help="skip the subprocess RSS measurement")
    parser.add_argument("--no-check", dest="check", action="store_false",
                        help="skip comparing each result with scipy's")
    parser.add_argument("--matrix-cache", type=Path, default=None,
                        help="where the generated matrix is cached as .npz (default: a "
                             "temporary directory)")
    parser.add_argument("--json", type=Path, default=None, help="also write the rows here")
    parser.add_argument("--leaks", type=int, default=0, metavar="CALLS",
                        help="instead: RSS growth over CALLS calls of each kernel on a "
                             "2000-entry matrix")
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(_child(args.child, args.nnz, args.matrix_cache)))
        return 0
    names = [n.strip() for n in args.kernels.split(",") if n.strip()]
    unknown = [n for n in names if n not in KERNELS]
    if unknown:
        parser.error(f"unknown kernels {unknown}; known: {', '.join(KERNELS)}")
    if args.leaks:
        small = band_matrix(2000)
        print(f"{'kernel':<10} {'calls':>7} {'RSS growth KiB':>15} {'traced growth B':>16} "
              f"{'us/call':>8}")
        for name in names:
            r = leak_check(name, small, calls=args.leaks)
            print(f"{name:<10} {r.calls:>7} {r.rss_growth / 1024:>15.1f} "
                  f"{r.traced_growth:>16} {r.seconds / r.calls * 1e6:>8.1f}")
        return 0
    with tempfile.TemporaryDirectory(prefix="sf-memory-") as scratch:
        cache_dir = args.matrix_cache or Path(scratch)
        m = band_matrix(args.nnz, cache_dir=cache_dir)
        print(f"input: banded float32 CSR {m.shape[0]} x {m.shape[1]}, {m.nnz} entries, "
              f"{array_bytes(m) / 2**20:.1f} MiB", flush=True)
        results = []
        for name in names:
            result = measure(name, m, check=args.check)
            if args.rss:
                result.rss_delta, result.rss_method = measure_rss(name, args.nnz,
                                                                  cache_dir=cache_dir)
            results.append(result)
            print(f"  {name}: ratio {result.ratio:.3f}", flush=True)
    print(table(results))
    methods = {r.rss_method for r in results if r.rss_method}
    if methods:
        print(f"RSS method: {', '.join(sorted(methods))}")
    over = [r.kernel for r in results if r.ratio > BOUND]
    print(f"bound {BOUND}: " + ("all kernels within it" if not over else
                                f"exceeded by {', '.join(over)}"))
    if args.json:
        args.json.write_text(json.dumps(
            [asdict(r) | {"ratio": r.ratio, "rss_ratio": r.rss_ratio} for r in results],
            indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())

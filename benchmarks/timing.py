"""Timing: a warm-up call (its result is what gets checked), then the minimum of ``repeat``
``time.perf_counter()`` runs, each under a timeout.

The timeout is a ``SIGALRM`` interval timer when we are on the main thread of a POSIX
process: it interrupts Python-level work (pydata/sparse is mostly Python and numba calls)
as soon as control returns to the interpreter. A single long C call cannot be interrupted,
so every run is also measured and a run longer than the timeout counts as a timeout either
way. The garbage collector is off while timing (as ``timeit`` does), and a result is
released only after its clock stops. (A full ``gc.collect()`` costs ~0.1 s here — numba, Z3
and Cython keep many objects alive — so the runner collects once per matrix, not per run.)

**Allocator regime.** Every system allocates its output with NumPy, i.e. ``malloc``. glibc
serves a block above its *mmap threshold* with fresh pages (a page fault per 4 KiB, ~10x the
cost of writing the data) and returns heap memory to the OS past its *trim threshold*; both
thresholds move with the process's history, so the same call measured 0.17 ms or 2.5 ms
(scipy's CSR vstack on an 810k-entry matrix) depending on what ran before. ``steady_malloc``
fixes them — mmap only above 32 MiB (glibc's maximum), never trim below 512 MiB — so every
system and the floor are timed in the same, reproducible steady state: the one a long-running
program reaches, where freed output memory is reused. Arrays above 32 MiB (the 16M-entry
inputs' 64 MiB arrays) are still mmapped, for every system alike.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
import signal
import threading
import time
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

__all__ = ["Timeout", "Timing", "call_with_timeout", "best_of", "steady_malloc"]

_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3  # glibc's mallopt parameter numbers


def steady_malloc() -> bool:
    """Fix glibc's mmap and trim thresholds (see the module docstring); False where this is
    not glibc (the system's allocator is then used as it is)."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    return bool(mallopt(_M_MMAP_THRESHOLD, 32 * 2**20)) and \
        bool(mallopt(_M_TRIM_THRESHOLD, 512 * 2**20))


class Timeout(Exception):
    """A call ran longer than its limit."""


@dataclass(frozen=True)
class Timing:
    """``status`` "ok" or "timeout"; ``best`` the minimum over ``runs`` completed runs."""

    status: str
    best: float | None
    runs: int


@contextmanager
def _alarm(seconds: float):
    usable = (hasattr(signal, "setitimer") and seconds > 0
              and threading.current_thread() is threading.main_thread())
    if not usable:
        yield
        return

    def ring(signum, frame):
        raise Timeout(f"longer than {seconds:g} s")

    previous = signal.signal(signal.SIGALRM, ring)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def call_with_timeout(fn: Callable[[], Any], limit: float) -> tuple[Any, float]:
    """(result, seconds) of one call; raises Timeout past ``limit`` seconds."""
    with _alarm(limit):
        t0 = time.perf_counter()
        result = fn()
        elapsed = time.perf_counter() - t0
    if elapsed > limit:
        raise Timeout(f"took {elapsed:.3g} s, longer than {limit:g} s")
    return result, elapsed


# Calls longer than this get their cyclic garbage collected right after their clock stops
# (see best_of).
_COLLECT_AFTER_S = 1e-3


def best_of(fn: Callable[[], Any], repeat: int, limit: float) -> Timing:
    """The minimum of ``repeat`` timed calls of ``fn`` (already warmed up).

    The collector is off while timing, so a result held in a reference cycle (GraphBLAS and
    pydata objects are) is not freed by ``del``: with 16M-entry inputs, ten such results a
    measurement and fifteen kernels a matrix took one ``sparsefold bench --scale`` process
    past 24 GB and the OOM killer (rmat_16M, 2026-12-02). So after a call longer than
    ``_COLLECT_AFTER_S`` (never a call whose clock this could touch: it runs after the clock
    stopped) the youngest generation is collected — it holds everything made since the
    collector was switched off — and once more at the end."""
    times: list[float] = []
    enabled = gc.isenabled()
    gc.disable()
    try:
        for _ in range(repeat):
            result, elapsed = call_with_timeout(fn, limit)
            del result  # freed after the clock stopped
            times.append(elapsed)
            if elapsed > _COLLECT_AFTER_S:
                gc.collect(0)
    except Timeout:
        return Timing("timeout", None, len(times))
    finally:
        gc.collect(0)
        if enabled:
            gc.enable()
    return Timing("ok", min(times), len(times))

"""How many threads a kernel's parallel loops use (docs/threads.md).

The count for a call is, in order: ``sf.jit(..., threads=N)`` (held in a context variable
while that function runs), else ``$SPARSEFOLD_NUM_THREADS``, else the CPUs this process may
run on (``os.sched_getaffinity``). A call whose work — the stored entries its loops visit,
times any broadcast extent — is below :data:`PARALLEL_MIN_WORK` runs on one thread: starting
the team costs more than it saves there.

The count reaches the kernel as the calling thread's OpenMP setting (``omp_set_num_threads``
sets the ``nthreads-var`` of the calling thread only), which a parallel loop reads through
``sf_max_threads()`` (``parallel.py``). A kernel module's fast entry applies the same rule
from C (the shared runtime's ``sf_threads``, ``runtime.pyx``, reading
:data:`PARALLEL_MIN_WORK` and :func:`requested` here). So concurrent Python threads asking
for different counts do not disturb each other, and the kernels' signatures do not change.
"""

from __future__ import annotations

import contextlib
import contextvars
import ctypes
import functools
import os

from sparsefold.spec.errors import IllFormedProgram

__all__ = ["PARALLEL_MIN_WORK", "cpus", "default_threads", "check_threads", "requested",
           "explicit", "using", "threads_for", "apply", "openmp_runtime"]

# Measured 2026-12-01 (python -m sparsefold.benchmarks.threads): CSR SpMV, 16 entries a
# row, 1 and 2 threads interleaved call by call on this 2-core machine while ~10 processes
# competed for it. Best-of-run times: 2^10-2^12 entries equal (63-66 us, per-call overhead);
# 2^13 96 vs 93 us, 2^14 86 vs 82 us (noise level); 2^15 162 vs 126 us, 2^16 223 vs 184 us,
# 2^17 637 vs 516 us, 2^18 1157 vs 978 us (1.2-1.3x). So two threads pay from 2^15 entries.
# (Median times on that loaded machine were far worse with 2 threads at every size: a
# descheduled worker holds up the end of the loop. See docs/threads.md.)
PARALLEL_MIN_WORK = 1 << 15

_REQUESTED: contextvars.ContextVar[int | None] = contextvars.ContextVar(
    "sparsefold_threads", default=None)


def check_threads(n, what: str = "threads") -> int:
    """``n`` as a thread count (a positive int), else :class:`IllFormedProgram`."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise IllFormedProgram(f"{what} must be a positive integer, found {n!r}")
    return n


def default_threads() -> int:
    """``$SPARSEFOLD_NUM_THREADS`` if set, else the CPUs this process may run on."""
    configured = os.environ.get("SPARSEFOLD_NUM_THREADS")
    if configured:
        try:
            value = int(configured)
        except ValueError:
            value = 0
        return check_threads(value if value >= 1 else configured, "SPARSEFOLD_NUM_THREADS")
    return cpus()


@functools.lru_cache(maxsize=1)
def cpus() -> int:
    """The CPUs this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def requested() -> tuple[int, bool]:
    """(thread count, exact): jit's ``threads`` or ``$SPARSEFOLD_NUM_THREADS`` exactly,
    else the CPU count as an upper bound that OpenMP lowers on a busy machine."""
    n = _REQUESTED.get()
    if n is not None:
        return n, True
    if os.environ.get("SPARSEFOLD_NUM_THREADS"):
        return default_threads(), True
    return cpus(), False


def explicit() -> int:
    """The count :func:`using` holds (jit's ``threads=N``), else 0: what a kernel module's
    fast entry takes as ``threads`` (``compiler/lower/fastcall.py``), which reads the rest of the
    rule itself."""
    return _REQUESTED.get() or 0


@contextlib.contextmanager
def using(n: int | None):
    """Within the block, kernels use ``n`` threads (None: the default)."""
    token = _REQUESTED.set(None if n is None else check_threads(n))
    try:
        yield
    finally:
        _REQUESTED.reset(token)


def threads_for(work: int) -> tuple[int, bool]:
    """(threads, exact) for a call that visits ``work`` entries."""
    return (1, True) if work < PARALLEL_MIN_WORK else requested()


@functools.lru_cache(maxsize=1)
def openmp_runtime():
    """(``omp_set_num_threads``, ``omp_set_dynamic``) of the OpenMP runtime kernels link
    (libgomp for gcc), or None if none is loadable (kernels are then built without OpenMP:
    nothing to set)."""
    for name in ("libgomp.so.1", "libomp.so", "libomp.so.5", "libgomp.1.dylib",
                 "libomp.dylib"):
        try:
            lib = ctypes.CDLL(name)
        except OSError:
            continue
        setters = (lib.omp_set_num_threads, lib.omp_set_dynamic)
        for f in setters:
            f.argtypes, f.restype = [ctypes.c_int], None
        return setters
    return None


def apply(setting: tuple[int, bool]) -> None:
    """Make ``setting`` (threads, exact) the calling thread's OpenMP setting: exactly that
    many threads, or at most that many with OpenMP's dynamic adjustment on (libgomp then
    runs ``cpus - load average`` threads, at least 1: a kernel does not wait for workers a
    busy machine cannot schedule). Set on every call: a kernel module's fast entry sets the
    same two values from C (the runtime's ``sf_threads``), so no remembered setting can be
    trusted here."""
    setters = openmp_runtime()
    if setters is not None:
        setters[0](setting[0])
        setters[1](0 if setting[1] else 1)

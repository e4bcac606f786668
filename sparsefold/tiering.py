"""Tiered execution (issue 29): a call whose kernel is not built yet answers at once on the
fallback (``sparsefold.compiler.fallback``), while the kernel is built in the background;
the kernel answers every call from the moment it is ready.

One call of a kernel that is not known to be ready (``call``):

1. **probe** — the kernel runs inside ``build.no_build()``: what is loaded, prebuilt or
   intact in the disk cache is served as today, so a kernel built by an earlier process
   answers the first call itself. A variant that would need Cython and the C compiler
   raises ``WouldBuild`` before any loop runs (or after earlier stages ran, for a staged
   program whose later stage is missing);
2. **answer** — the fallback computes the result the kernel would return (the same
   container, format, dtype, index dtype and entries). Where it declines (a program or
   data it does not cover), the call waits for the kernel as an untiered call does: it
   builds the kernel itself, or waits for a background build of the same source (one
   build per source: ``build.load_module``'s per-source lock and per-key file lock);
3. **schedule** — once the answer is computed, the missing source and every other
   stage's variant for these arguments (``pipeline.Kernel.build_for``) are built by this
   process's one background thread. A build is Cython in this process, holding the GIL
   for about 0.2-0.3 s per kernel (~1 s for the first one, Cython's start-up), then gcc in
   a child process (~0.8 s), which does not; started before the answer, it made first
   answers 2-4x slower on 2 cores, so it starts after. Builds queue, one at a time: they
   take one core and leave the other to the caller.

Until the build finishes, calls with the same kinds of arguments answer on the fallback
without probing again; the first call after it probes, finds the kernel, and from then on
calls take the kernel's own fast entry.

**A build that fails** (a Cython or C compiler error: ``InternalError``, our bug) is
reported once, as a :class:`TieringWarning` with the compiler's message, by the next call
of that kernel; calls keep answering on the fallback (it computes the same results) and
are not built again in this process; a call the fallback declines then raises the error,
as an untiered call would. :func:`wait` (and ``JitFunction.wait``) raise it too.

**Processes.** Builds go through the kernel cache as every build does: atomic entries
under a file lock per key, so several processes asking for one kernel build it once and
none ever sees a partial entry; a process that probes while another builds answers on its
fallback. At interpreter exit the builds already queued are finished first (as
``concurrent.futures`` does), so the next process finds them in the cache; Ctrl-C stops
the wait, and a build stopped part-way leaves no cache entry (only a ``.build-*``
directory, ``sparsefold cache list``). A forked child starts with no builds in flight.

Tiering is on unless ``$SPARSEFOLD_TIERED`` is ``0`` (or a function passes
``sf.jit(..., wait=True)``): the test suite, the benchmarks, ``sparsefold bench``, ahead-of-
time builds and ``sparsefold.dask`` run compiled kernels on every call.
"""

from __future__ import annotations

import atexit
import os
import queue
import statistics
import threading
import time
import warnings
from collections import Counter
from typing import Any

import numpy as np

from sparsefold.compiler.fallback import (
    SLOWER_THAN_BUILDING,
    Declined,
    FallbackPlan,
    Unsupported,
)
from sparsefold.compiler.run import build

__all__ = ["TieringWarning", "enabled", "register", "call", "wait", "stats", "reset_stats",
           "last_call"]


class TieringWarning(UserWarning):
    """A kernel could not be built in the background; calls answer on the fallback."""


def enabled(wait: bool | None = None) -> bool:
    """Is a call tiered? ``wait``: the function's own choice (``sf.jit(..., wait=...)``);
    None: ``$SPARSEFOLD_TIERED`` (on unless ``0``)."""
    if wait is not None:
        return not wait
    return os.environ.get("SPARSEFOLD_TIERED", "1") != "0"


# --- counters ------------------------------------------------------------------------------------

_stats: Counter = Counter()
_stats_lock = threading.Lock()


def _count(what: str) -> None:
    with _stats_lock:
        _stats[what] += 1


def stats() -> dict[str, int]:
    """Counts of this process's tiered calls: ``compiled`` (the kernel answered),
    ``fallback`` (the fallback answered), ``waited`` (the fallback declined; the call
    waited for the kernel), ``builds`` (background builds started), ``failed`` (builds
    that failed), and ``declined: <reason>`` per reason the fallback gave."""
    with _stats_lock:
        return dict(_stats)


def reset_stats() -> None:
    with _stats_lock:
        _stats.clear()


_last = threading.local()


def last_call() -> dict:
    """How this thread's last tiered call was answered: ``answered`` ("kernel",
    "fallback" or "waited") and ``fallback_s``, the seconds the fallback ran (0 when it
    did not): what ``sparsefold bench --first-answer`` splits a first answer into."""
    return dict(getattr(_last, "call", {}))


# --- the background builder ----------------------------------------------------------------------

class _Job:
    """One background build: ``work()`` loads or builds modules; ``error`` is what it
    raised."""

    __slots__ = ("work", "finished", "error", "reported")

    def __init__(self, work):
        self.work = work
        self.finished = threading.Event()
        self.error: BaseException | None = None
        self.reported = False  # raised by wait() once

    def run(self) -> None:
        try:
            self.work()
        except BaseException as exc:  # noqa: BLE001 - reported to the caller, not here
            self.error = exc
            _count("failed")
        finally:
            self.work = None  # drop the arguments' arrays
            self.finished.set()

    def done(self) -> bool:
        return self.finished.is_set()


class _Builder:
    """One daemon thread building queued jobs in order."""

    def __init__(self):
        self.jobs: queue.Queue = queue.Queue()
        self.thread: threading.Thread | None = None
        self.lock = threading.Lock()

    def submit(self, job: _Job) -> None:
        with self.lock:
            if self.thread is None or not self.thread.is_alive():
                self.thread = threading.Thread(target=self._work, name="sparsefold-build",
                                               daemon=True)
                self.thread.start()
            self.jobs.put(job)

    def _work(self) -> None:
        while True:
            job = self.jobs.get()
            try:
                job.run()
            finally:
                self.jobs.task_done()

    def drain(self) -> None:
        """Wait until every queued job has run."""
        self.jobs.join()


_builder = _Builder()


def _at_exit() -> None:
    try:
        _builder.drain()
    except KeyboardInterrupt:  # pragma: no cover - interactive
        pass  # abandoned: a build stopped part-way leaves no cache entry


atexit.register(_at_exit)


# --- one kernel's tier ---------------------------------------------------------------------------

class _Tier:
    """A runnable kernel's background builds (by the kinds of arguments that need them) and
    its fallback plan."""

    __slots__ = ("kernel", "program", "out", "requires", "jobs", "lock", "_plan", "warned",
                 "slow")

    def __init__(self, kernel, program, out: str, requires: tuple):
        self.kernel, self.program, self.out, self.requires = kernel, program, out, requires
        self.jobs: dict[tuple, _Job] = {}
        self.lock = threading.Lock()
        self._plan: Any = None  # FallbackPlan, an Unsupported, or None (not made yet)
        self.warned = False
        self.slow = False  # the fallback ran past its deadline: wait while the build runs

    def plan(self):
        if self._plan is None:
            # the kernel's own choice of how its result is made (densely and converted, or
            # from entries), which its stages decide: the fallback follows it
            compiled = getattr(self.kernel, "kernel", self.kernel)  # (a prebuilt's kernel)
            dense = getattr(compiled, "assembles_densely", None)
            try:
                self._plan = FallbackPlan(self.program, self.out, self.requires, dense)
            except Unsupported as exc:
                self._plan = exc
            except Exception as exc:  # noqa: BLE001 - a fallback bug: the kernel answers
                self._plan = Unsupported(f"{type(exc).__name__}: {exc}")
        return self._plan

    def schedule(self, key: tuple, values: dict, missing: build.WouldBuild) -> _Job:
        with self.lock:
            job = self.jobs.get(key)
            if job is not None and (not job.done() or job.error is not None):
                return job  # in flight, or failed: not built again in this process
            kernel = self.kernel
            job = self.jobs[key] = _Job(lambda: _build(kernel, values, missing))
        _count("builds")
        _builder.submit(job)
        return job

    def failed(self) -> BaseException | None:
        for job in list(self.jobs.values()):
            if job.done() and job.error is not None:
                return job.error
        return None


def _build(kernel, values: dict, missing: build.WouldBuild) -> None:
    """The background job: the missing source, then every stage's variant for these
    arguments (arguments the checks reject build nothing more: the call reports them)."""
    build.load_module(missing.source, name_hint=missing.name_hint)
    build_for = getattr(kernel, "build_for", None)
    if build_for is not None:
        from sparsefold.spec.errors import IllFormedProgram, InvalidData
        try:
            build_for(values)
        except (InvalidData, IllFormedProgram):
            pass


_tiers: dict[int, _Tier] = {}
_tiers_lock = threading.Lock()


def register(kernel, program, out: str, requires: tuple = ()) -> None:
    """Remember what ``kernel`` (a runnable kernel of ``sparsefold.jit``) computes, for its
    fallback. Cheap when it is known already."""
    if id(kernel) in _tiers:
        return
    with _tiers_lock:
        _tiers.setdefault(id(kernel), _Tier(kernel, program, out, tuple(requires)))


def _signature(values: dict) -> tuple:
    """What selects a kernel variant, read cheaply off the arguments: each one's kind and
    index dtypes (a dense one's dtype and whether its last axis is contiguous)."""
    out = []
    for name, v in values.items():
        if isinstance(v, np.ndarray):
            out.append((name, v.dtype.str, v.ndim, v.ndim == 0 or v.strides[-1] == v.itemsize))
            continue
        parts = [getattr(v, a, None) for a in ("indptr", "indices")]
        coords = getattr(v, "coords", None)
        if isinstance(coords, tuple):
            parts += list(coords)
        elif isinstance(coords, np.ndarray):
            parts.append(coords)
        out.append((name, type(v).__name__, getattr(v, "format", None),
                    tuple(p.dtype.str for p in parts if isinstance(p, np.ndarray))))
    return tuple(out)


def call(kernel, values: dict, library: str):
    """``kernel(values, library)``, tiered (module docstring). ``kernel`` was
    :func:`register`-ed."""
    tier = _tiers.get(id(kernel))
    if tier is None:  # not registered (an internal caller): as untiered
        return kernel(values, library)
    key = _signature(values)
    job = tier.jobs.get(key)
    missing = None
    if job is None or (job.done() and job.error is None):
        try:
            with build.no_build():
                result = kernel(values, library)
        except build.WouldBuild as exc:
            missing = exc
        else:
            _count("compiled")
            _last.call = {"answered": "kernel", "fallback_s": 0.0}
            return result
    elif job.done() and not tier.warned:  # failed
        tier.warned = True
        warnings.warn(f"sparsefold: building a kernel in the background failed; its calls "
                      f"answer on the fallback (error: {job.error})", TieringWarning,
                      stacklevel=3)
    plan = tier.plan()
    started = time.perf_counter()
    if isinstance(plan, FallbackPlan) and tier.slow and job is not None and not job.done():
        _count(f"declined: {SLOWER_THAN_BUILDING}")  # known slower: wait for the build
    elif isinstance(plan, FallbackPlan):
        try:
            # no longer than building the kernel would take: past that, waiting answers
            # sooner (issue #38: the fallback must not cost more than compiling)
            result = plan(values, library, started + build_estimate(kernel))
        except Declined as exc:
            if str(exc) == SLOWER_THAN_BUILDING:
                tier.slow = True
            _count(f"declined: {_reason(exc)}")
        else:
            _count("fallback")
            _last.call = {"answered": "fallback", "fallback_s": time.perf_counter() - started}
            if missing is not None:
                # built once the answer is out: a build beside the fallback (Cython holds
                # the GIL) made first answers 2-4x slower (docs/benchmarks.md)
                tier.schedule(key, values, missing)
            return result
    else:
        _count(f"declined: {_reason(plan)}")
    _count("waited")  # the kernel answers: built here (or by a build already under way)
    _last.call = {"answered": "waited", "fallback_s": time.perf_counter() - started}
    return kernel(values, library)


BUILD_SECONDS = 0.7      # one kernel module, median on the 2-core machines (bench --compile-time)
CYTHON_START_SECONDS = 1.0  # a process's first build: Cython's imports and start-up


def build_estimate(kernel) -> float:
    """Seconds building ``kernel`` would take: its modules (a stage each, and the final
    kernel) at the median of this process's recent builds (:data:`BUILD_SECONDS` before
    the first), plus Cython's start-up when nothing was built yet. The fallback's
    deadline: past it, waiting for the kernel would have answered sooner."""
    log = build.build_log()[-16:]
    if log:
        per = statistics.median(b.get("cython_seconds", 0.0) + b.get("cc_seconds", 0.0) +
                                b.get("load_seconds", 0.0) for b in log)
    else:
        per = BUILD_SECONDS
    compiled = getattr(kernel, "kernel", kernel)  # (a prebuilt's kernel)
    modules = 1 + len(getattr(compiled, "stages", ()) or ())
    return per * modules + (0.0 if log else CYTHON_START_SECONDS)


def fallback_only(kernel, values: dict, library: str):
    """The fallback's answer for a :func:`register`-ed ``kernel`` (``JitFunction.fallback``):
    raises :class:`Declined` or :class:`Unsupported` where a tiered call would wait."""
    tier = _tiers.get(id(kernel))
    if tier is None:
        raise Unsupported("not a runnable kernel of sparsefold.jit")
    plan = tier.plan()
    if not isinstance(plan, FallbackPlan):
        raise plan
    return plan(values, library)


def _reason(exc: BaseException) -> str:
    text = str(exc)
    return text.split(":")[0] if len(text) > 80 else text


def wait(kernels=None, timeout: float | None = None) -> bool:
    """Wait for the background builds (of ``kernels``, runnable kernels; default: all);
    True when they finished within ``timeout`` seconds. Raises the error of a build that
    failed (an ``InternalError``), once: a later wait does not raise it again."""
    deadline = None if timeout is None else time.monotonic() + timeout
    tiers = list(_tiers.values()) if kernels is None else \
        [t for t in (_tiers.get(id(k)) for k in kernels) if t is not None]
    jobs = [job for tier in tiers for job in list(tier.jobs.values())]
    for job in jobs:
        left = None if deadline is None else max(0.0, deadline - time.monotonic())
        if not job.finished.wait(left):
            return False
    for job in jobs:
        if job.error is not None and not job.reported:
            job.reported = True
            raise job.error
    return True


def _after_fork() -> None:
    """A forked child has no builder thread and none of its parent's builds in flight."""
    global _builder
    _builder = _Builder()
    for tier in list(_tiers.values()):
        tier.jobs = {}
        tier.lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork)

"""One measurement = one CSV row: warm up a system's call, check its result, then time it.
Shared by the paper group (``run``) and the compute group (``compute_run``), including the
rows of the peer systems (GraphBLAS at 1 and default threads, native and exported; tensora).

Statuses: ok; timeout; wrong (differs from scipy — its time does not count); error (raised;
the message is in ``detail``); unchecked (scipy itself failed); unavailable (the library is
not installed or does not import); n/a (the system cannot express this kernel — ``detail``
says why); skipped (the program does not apply to this matrix); densifies (the compiler's
plan would densify a sparse input beyond the limit: not run).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sparsefold.benchmarks import peers
from sparsefold.benchmarks.check import Mismatch
from sparsefold.benchmarks.timing import Timeout, best_of, call_with_timeout

__all__ = ["FIELDS", "COMPILE_ALLOWANCE", "row", "short", "measure", "peer_rows"]

FIELDS = ("run_id", "kernel", "group", "matrix", "source", "rows", "cols", "nnz", "system",
          "status", "seconds", "first_seconds", "runs", "out_nnz", "detail")

# The warm-up call may compile (our kernel: ~1 s; pydata's numba or tensora's C: a few
# seconds the first time per signature), so it gets this much on top of the per-call timeout.
COMPILE_ALLOWANCE = 60.0


def row(base: dict, system: str, status: str, **fields) -> dict:
    r = dict(base, system=system, status=status)
    r.update({k: v for k, v in fields.items() if v is not None})
    return {f: r.get(f, "") for f in FIELDS}


def short(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}".replace("\n", " ")
    return text if len(text) <= 300 else text[:297] + "..."


def measure(base, system, fn, check, repeat, timeout, *, missing: str = "") -> dict:
    """Warm up ``fn`` (checking its result with ``check``, which returns the result's nnz),
    then time it. Returns the CSV row. ``fn`` None: the system is unavailable (``missing``
    says why)."""
    if fn is None:
        return row(base, system, "unavailable", detail=missing)
    try:
        result, first = call_with_timeout(fn, timeout + COMPILE_ALLOWANCE)
    except Timeout as exc:
        return row(base, system, "timeout", detail=f"warm-up {exc}")
    except Exception as exc:  # any failure of the system under test is data, not a crash
        return row(base, system, "error", detail=short(exc))
    try:
        out_nnz = check(result)
    except Mismatch as exc:
        return row(base, system, "wrong", first_seconds=f"{first:.6g}", detail=str(exc))
    except Exception as exc:
        return row(base, system, "error", first_seconds=f"{first:.6g}",
                   detail="checking: " + short(exc))
    del result
    timing = best_of(fn, repeat, timeout)
    if timing.status != "ok":
        return row(base, system, timing.status, first_seconds=f"{first:.6g}",
                   runs=timing.runs, out_nnz=out_nnz, detail=f"a run exceeded {timeout:g} s")
    return row(base, system, "ok", seconds=f"{timing.best:.6g}", first_seconds=f"{first:.6g}",
               runs=timing.runs, out_nnz=out_nnz)


def _build(library: str, build, systems: tuple[str, ...], base) -> tuple[Any, list[dict]]:
    """(zero-argument call, []) or (None, the rows that say why there is none). ``build`` is
    a reason (the system cannot express the kernel) or a function returning the call (inputs
    converted to the peer's format here, before timing) or such a reason."""
    ok, why = peers.available(library)
    if not ok:
        return None, [row(base, s, "unavailable", detail=why) for s in systems]
    if isinstance(build, str):
        return None, [row(base, s, "n/a", detail=build) for s in systems]
    try:
        call = build()
    except Exception as exc:
        return None, [row(base, s, "error", detail="preparing inputs: " + short(exc))
                      for s in systems]
    if isinstance(call, str):
        return None, [row(base, s, "n/a", detail=call) for s in systems]
    return call, []


def peer_rows(base: dict, out: str, gb_build, tensora_build, *,
              check_gb: Callable, check_export: Callable, check_tensora: Callable,
              repeat: int, timeout: float) -> list[dict]:
    """The rows of every peer system for one kernel on one matrix: GraphBLAS native and
    exported to ``out`` at 1 and default threads, then tensora."""
    rows: list[dict] = []
    gb_systems = tuple(s for s, _, _ in peers.GB_SYSTEMS)
    native, failed = _build("graphblas", gb_build, gb_systems, base)
    rows += failed
    if native is not None:
        for system, threads, export in peers.GB_SYSTEMS:
            fn = (lambda: peers.gb_export(native(), out)) if export else native
            with peers.gb_threads(threads if threads is not None else peers.NT_THREADS):
                rows.append(measure(base, system, fn, check_export if export else check_gb,
                                    repeat, timeout))
    call, failed = _build("tensora", tensora_build, (peers.TENSORA,), base)
    rows += failed
    if call is not None:
        rows.append(measure(base, peers.TENSORA, call, check_tensora, repeat, timeout))
    return rows

"""The memory budget of a call: how many bytes one allocation may take, and the error raised
(before allocating) when an output, temporary or workspace would not fit."""

from __future__ import annotations

import functools
import math
import os

import numpy as np

from sparsefold.spec.errors import InvalidData

__all__ = ["TooLarge", "memory_limit", "physical_memory", "nbytes", "show_bytes"]


class TooLarge(InvalidData, MemoryError):
    """An output or temporary would not fit in this machine's memory (raised before it is
    allocated). Also a ``MemoryError``, so code that catches NumPy's still works."""


def memory_limit() -> int:
    """Bytes one allocation may take: ``$SPARSEFOLD_MEMORY_LIMIT`` if set, else the
    machine's physical memory."""
    configured = os.environ.get("SPARSEFOLD_MEMORY_LIMIT")
    return int(configured) if configured else physical_memory()


@functools.lru_cache(maxsize=1)
def physical_memory() -> int:
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):  # pragma: no cover - non-POSIX
        return 1 << 62


def nbytes(specs: dict) -> int:
    """Bytes of the arrays ``specs`` describes (name -> (shape, dtype, fill))."""
    return sum(math.prod(s) * np.dtype(t).itemsize for s, t, _ in specs.values())


def show_bytes(n: int) -> str:
    for unit in ("bytes", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if n < 1024 or unit == "PiB":
            return f"{n:.0f} {unit}" if unit == "bytes" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} bytes"  # pragma: no cover

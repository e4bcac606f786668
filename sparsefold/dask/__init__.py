"""sparsefold on Dask: ``sf.jit`` functions called on ``dask.array`` arguments.

    import dask.array as da, sparsefold as sf
    a = da.from_array(scipy_csr, chunks=(100_000, -1))     # scipy.sparse or pydata chunks
    y = sf.jit(lambda a, x: sf.concat([a, a]) @ x)(a, x)  # a lazy dask.array, nothing run
    y.compute()                                           # one fused kernel per block

The function is traced once; its program is laid out in blocks following the arrays'
chunks, and every block becomes one task running a compiled sparsefold kernel over the
chunks it reads (``graph.py`` says how). Dask schedules the tasks (threads, processes or a
``distributed`` cluster); sparsefold has no scheduler of its own. See ``docs/dask.md``.

Needs the optional extra ``sparsefold[dask]`` (dask and distributed).
"""

from __future__ import annotations

try:
    import dask.array  # noqa: F401 - fail here, with the fix, when the extra is missing
except ImportError as exc:  # pragma: no cover - exercised without the extra only
    raise ImportError("sparsefold.dask needs dask: pip install 'sparsefold[dask]'") from exc

from sparsefold.dask.chunking import RechunkWarning
from sparsefold.dask.graph import call, plan

__all__ = ["call", "plan", "RechunkWarning", "is_dask_array"]


def is_dask_array(a) -> bool:
    """``a`` is a ``dask.array.Array`` (checked without importing dask elsewhere)."""
    return type(a).__module__.startswith("dask.array")

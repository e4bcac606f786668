"""Comparing a fallback result with the compiled kernel's, strictly: the same container
type, shape and dtype, the same storage arrays (index dtypes, ``indptr``, indices or
coordinates: the same entries, stored zeros included, in the same canonical order) and
the same values (floats within a reassociation tolerance: a sum may add in another
order; integers and booleans exactly)."""

from __future__ import annotations

import numpy as np

from sparsefold.compiler.fallback import FallbackPlan
from sparsefold.jit import JitFunction, _is_scalar, _split_values
from sparsefold.storage.describe import is_pydata_sparse, is_scipy_sparse
from sparsefold.storage.results import result_library

__all__ = ["differences", "fallback_of", "run_both"]


def _close(x: np.ndarray, y: np.ndarray) -> bool:
    if x.dtype.kind in "fc":
        scale = max([1.0] + [float(np.nanmax(np.abs(v[np.isfinite(v)])))
                             for v in (x, y) if np.isfinite(v).any()])
        rtol = 1e-4 if x.dtype in (np.float32, np.complex64, np.float16) else 1e-9
        return bool(np.allclose(x, y, rtol=rtol, atol=rtol * scale, equal_nan=True))
    return bool(np.array_equal(x, y))


def _storage(a) -> list[tuple[str, np.ndarray]]:
    if is_scipy_sparse(a):
        if a.format in ("csr", "csc"):
            return [("indptr", a.indptr), ("indices", a.indices)]
        return [(f"coords[{d}]", c) for d, c in enumerate(a.coords)]
    if type(a).__name__ == "GCXS":
        return [("indptr", a.indptr), ("indices", a.indices)]
    return [("coords", a.coords)]


def differences(compiled, fallback) -> list[str]:
    """What differs between the two results (empty: they agree)."""
    if type(compiled) is not type(fallback):
        return [f"container {type(compiled).__name__} != {type(fallback).__name__}"]
    out = []
    if tuple(compiled.shape) != tuple(fallback.shape):
        out.append(f"shape {compiled.shape} != {fallback.shape}")
    if compiled.dtype != fallback.dtype:
        out.append(f"dtype {compiled.dtype} != {fallback.dtype}")
    if out:
        return out
    if isinstance(compiled, np.ndarray):
        return [] if _close(compiled, fallback) else ["values"]
    if is_scipy_sparse(compiled) and compiled.format != fallback.format:
        return [f"format {compiled.format} != {fallback.format}"]
    if is_pydata_sparse(compiled) and type(compiled).__name__ == "GCXS" and \
            tuple(compiled.compressed_axes) != tuple(fallback.compressed_axes):
        return ["compressed axes"]
    for (name, x), (_, y) in zip(_storage(compiled), _storage(fallback)):
        if x.dtype != y.dtype:
            out.append(f"{name} dtype {x.dtype} != {y.dtype}")
        elif not np.array_equal(x, y):
            out.append(f"{name}: the entries differ (nnz {compiled.nnz} != {fallback.nnz})")
    if out:
        return out
    if is_scipy_sparse(fallback) and not getattr(fallback, "has_canonical_format", True):
        out.append("not flagged canonical")
    return out + ([] if _close(np.asarray(compiled.data), np.asarray(fallback.data))
                  else ["stored values"])


def fallback_of(jf: JitFunction, *args):
    """(the fallback plan of ``jf``'s program for these arguments as a tiered call makes
    it — told how the kernel assembles its result —, its values dict, the result
    library)."""
    from sparsefold.jit import runnable_kernel
    program, out = jf.program_for(*args)
    values = _split_values({f"a{p}": a for p, a in enumerate(args) if not _is_scalar(a)},
                           "mask")
    requires = jf._assumed.get(program, ())
    kernel = runnable_kernel(program, out, requires)
    compiled = getattr(kernel, "kernel", kernel)
    plan = FallbackPlan(program, out, requires, getattr(compiled, "assembles_densely", None))
    return plan, values, result_library(args)


def run_both(fn, *args, out=None):
    """(the compiled kernel's result, the fallback's, each as the call returns it: a
    pydata result of filled inputs gets its fill) for ``fn`` on ``args``."""
    from sparsefold.jit import _with_result_fill
    from sparsefold.spec.fills import has_fill
    jf = JitFunction(fn, out, wait=True)
    with np.errstate(all="ignore"):
        compiled = jf(*args)
    plan, values, library = fallback_of(jf, *args)
    got = plan(values, library)
    if has_fill(plan.program):
        got = _with_result_fill(plan.program, values, got)
    return compiled, got

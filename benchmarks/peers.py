"""Peer libraries as optional baselines (issue #13 part 1): python-graphblas
(SuiteSparse:GraphBLAS) and tensora (TACO's Python front end, C backend).

Both keep their own storage: every input is converted to the peer's format *before* timing
(``to_gb``, ``to_tensora_*``), and the timed call returns the peer's native object (a
GraphBLAS ``Matrix``/``Vector``/``Scalar``, a tensora ``Tensor``). GraphBLAS is also timed
with its output exported to the scipy format the kernel asks for (``gb_export``): the figure a
scipy user would see. Results are read back for checking by ``entries`` (GraphBLAS) and
``tensora_entries`` (tensora), never inside a timed call.

GraphBLAS runs at 1 thread and at its default thread count (``gb.ss.config["nthreads"]`` at
import: the machine's cores), set per measurement with ``gb_threads``. tensora's kernels are
float64 values and int32 indices only; it gets float64 copies of the inputs, and its C kernels
are compiled once per expression and format (``tensora_kernel``).

A peer that cannot be imported is reported once by ``available`` (with the reason) and its
systems are recorded as ``unavailable``; nothing else changes.
"""

from __future__ import annotations

import contextlib
import functools
from typing import Any

import numpy as np
import scipy.sparse as sp

from sparsefold.benchmarks.check import Entries, Mismatch

__all__ = ["GB_SYSTEMS", "TENSORA", "PEER_SYSTEMS", "available", "gb", "gb_threads",
           "gb_default_threads", "NT_THREADS", "SPARSEFOLD_NT", "at_threads", "to_gb", "gb_coo",
           "gb_from_coo", "gb_row", "gb_dense",
           "gb_export",
           "entries", "tensora_kernel", "to_tensora_csr", "to_tensora_csc",
           "to_tensora_dense", "to_tensora_vector", "tensora_entries", "versions"]

# (system name, threads: 1 or None for the default, exported to scipy?)
GB_SYSTEMS = (("graphblas_1t", 1, False), ("graphblas_nt", None, False),
              ("graphblas_1t_scipy", 1, True), ("graphblas_nt_scipy", None, True))
TENSORA = "tensora"
# ``sparsefold bench --threads N``: the N-thread systems (GraphBLAS's "nt" ones and
# "sparsefold_nt") run at N threads; None: GraphBLAS's default and no "sparsefold_nt" row
NT_THREADS: int | None = None
SPARSEFOLD_NT = "sparsefold_nt"
PEER_SYSTEMS = tuple(s for s, _, _ in GB_SYSTEMS) + (TENSORA,)


@functools.cache
def _import(name: str) -> tuple[Any, str]:
    """(module, "") or (None, why it cannot be used)."""
    try:
        if name == "graphblas":
            import graphblas
            graphblas.ss.config["nthreads"]  # the SuiteSparse backend, not just the API
            return graphblas, ""
        import tensora
        from tensora.compile import _cffi_ownership  # noqa: F401 (the C backend's ABI)
        return tensora, ""
    except Exception as exc:  # ImportError, or a broken binary wheel
        return None, f"{type(exc).__name__}: {exc}".splitlines()[0][:200]


def available(name: str) -> tuple[bool, str]:
    """(usable, reason when not) for "graphblas" or "tensora"."""
    mod, why = _import(name)
    return mod is not None, why


def gb():
    return _import("graphblas")[0]


@functools.cache
def at_threads(fn, n: int):
    """``fn`` with sparsefold's kernels held to ``n`` threads (in whatever thread calls it:
    the timing harness may call from a worker thread)."""
    from sparsefold.compiler.run.threads import using

    def call():
        with using(n):
            return fn()
    return call


def gb_default_threads() -> int:
    """GraphBLAS's thread count as it starts (before ``gb_threads`` changes it)."""
    return int(gb().ss.config["nthreads"])


@contextlib.contextmanager
def gb_threads(n: int | None):
    """Run GraphBLAS with ``n`` threads (None: its default) inside the block."""
    g = gb()
    default = gb_default_threads()
    g.ss.config["nthreads"] = default if n is None else n
    try:
        yield
    finally:
        g.ss.config["nthreads"] = default


def versions() -> dict[str, str]:
    out = {}
    g = gb()
    if g is not None:
        import suitesparse_graphblas as ssgb
        out["python-graphblas"] = g.__version__
        out["suitesparse-graphblas"] = ssgb.__version__
        out["graphblas_default_threads"] = str(gb_default_threads())
    else:
        out["python-graphblas"] = "unavailable: " + available("graphblas")[1]
    t = _import("tensora")[0]
    if t is not None:
        from importlib.metadata import version
        out["tensora"] = version("tensora")
    else:
        out["tensora"] = "unavailable: " + available("tensora")[1]
    return out


# ---- GraphBLAS ------------------------------------------------------------------------------

def to_gb(m):
    """A scipy sparse matrix (any format) as a GraphBLAS Matrix (row-major, copied)."""
    return gb().io.from_scipy_sparse(sp.csr_array(m) if m.format != "csr" else m)


def gb_coo(a) -> tuple[np.ndarray, np.ndarray, np.ndarray, int, int]:
    """A scipy COO matrix as GraphBLAS's COO input: (rows, cols, values, nrows, ncols) with
    its uint64 index type (converted here, before timing)."""
    return (a.row.astype(np.uint64), a.col.astype(np.uint64), a.data, *a.shape)


def gb_from_coo(coo):
    """GraphBLAS's build from COO arrays (``gb_coo``): the timed part of a COO-input kernel
    (GraphBLAS has no COO storage, so its COO "input" is the coordinate arrays)."""
    rows, cols, vals, nrows, ncols = coo
    return gb().Matrix.from_coo(rows, cols, vals, nrows=nrows, ncols=ncols)


def gb_row(v: sp.csr_array):
    """A 1-d scipy CSR vector as a 1 × L GraphBLAS Matrix: the form GraphBLAS's own reshape
    (``GxB_Matrix_reshape``, via ``Matrix.ss.reshape``) works on; python-graphblas's
    ``Vector.ss.reshape`` and ``Matrix.ss.flatten`` go through Python and are ~10× slower."""
    return gb().Matrix.from_coo(np.zeros(v.nnz, dtype=np.uint64),
                                v.indices.astype(np.uint64), v.data, nrows=1, ncols=v.shape[0])


def gb_dense(x: np.ndarray):
    """A NumPy vector or matrix as a full GraphBLAS Vector or Matrix."""
    g = gb()
    return g.Vector.from_dense(x) if x.ndim == 1 else g.Matrix.from_dense(x)


def gb_export(x, out: str):
    """A GraphBLAS result as the scipy/NumPy object the kernel asks for (``out``: "csr",
    "coo", "dense", or "csr1": a 1-d csr_array, from a Vector or a 1 × L Matrix; a Vector
    with ``out`` "csr" also becomes a 1-d csr_array)."""
    g = gb()
    if isinstance(x, g.Scalar):
        return np.asarray(x.value if x.value is not None else 0)
    if out == "dense":
        return x.to_dense(fill_value=0)
    if isinstance(x, g.Matrix) and x.nrows == 1 and out == "csr1":
        _, idx, val = x.to_coo()
        x = g.Vector.from_coo(idx, val, size=x.ncols)
    if isinstance(x, g.Vector):
        idx, val = x.to_coo()
        n = x.shape[0]
        index = np.int32 if n < 2**31 else np.int64
        return sp.csr_array((val, idx.astype(index), np.array([0, idx.size], dtype=index)),
                            shape=(n,))
    return g.io.to_scipy_sparse(x, format=out)


def entries(x, shape: tuple[int, ...] | None = None) -> Entries:
    """A GraphBLAS result's entries in row-major order (for checking, not timed). A 1 × L
    Matrix standing for a vector is read with ``shape`` (L,) (row-major keys are the same)."""
    g = gb()
    if isinstance(x, g.Scalar):
        return Entries((), None, np.asarray(x.value if x.value is not None else 0))
    if isinstance(x, g.Vector):
        idx, val = x.to_coo()
        order = np.argsort(idx, kind="stable")
        return Entries((x.shape[0],), idx[order].astype(np.int64), val[order])
    if isinstance(x, g.Matrix):
        r, c, val = x.to_coo()
        keys = r.astype(np.int64) * np.int64(x.ncols) + c.astype(np.int64)
        order = np.argsort(keys, kind="stable")
        own = (x.nrows, x.ncols)
        if shape is not None and len(shape) == 1 and own == (1, shape[0]):
            own = tuple(shape)
        return Entries(own, keys[order], val[order])
    raise Mismatch(f"expected a GraphBLAS Matrix, Vector or Scalar, found {type(x).__name__}")


# ---- tensora --------------------------------------------------------------------------------

@functools.cache
def tensora_kernel(assignment: str, formats: tuple[tuple[str, str], ...]):
    """The compiled C kernel of ``assignment`` (e.g. ``"y(i) = A(i,j) * x(j)"``) with tensora
    ``formats`` (``(("y", "d"), ("A", "ds"), ...)``); raises tensora's error when TACO finds
    no kernel."""
    from tensora import BackendCompiler, tensor_method
    return tensor_method(assignment, dict(formats), BackendCompiler.cffi)


def _taco(modes: tuple[int, ...], dims: tuple[int, ...], ordering: tuple[int, ...],
          levels: list[tuple[np.ndarray, np.ndarray] | None], vals: np.ndarray):
    """A tensora Tensor viewing NumPy arrays (no copy; the arrays are kept alive with it)."""
    from tensora import Tensor
    from tensora.compile._cffi_ownership import allocate_taco_structure, global_weakkeydict
    from tensora.compile._cffi_ownership import tensor_cdefs as ffi
    if any(d >= 2**31 for d in dims) or any(lv is not None and lv[1].size >= 2**31
                                            for lv in levels):
        raise ValueError("tensora indexes with int32: this input is too large for it")
    t = allocate_taco_structure(modes, dims, ordering)
    keep = global_weakkeydict[t]
    arrays = []
    index = ffi.cast("int32_t***", t.indices)
    for lv, level in enumerate(levels):
        if level is None:
            continue
        pos, crd = (np.ascontiguousarray(a, dtype=np.int32) for a in level)
        arrays += [pos, crd]
        index[lv][0] = ffi.cast("int32_t*", ffi.from_buffer(pos))
        index[lv][1] = ffi.cast("int32_t*", ffi.from_buffer(crd))
    vals = np.ascontiguousarray(vals, dtype=np.float64)
    arrays.append(vals)
    t.vals = ffi.cast("double*", ffi.from_buffer(vals))
    keep["numpy"] = arrays
    return Tensor(t)


def to_tensora_csr(m) -> Any:
    """Format "ds" (CSR), float64 values."""
    m = sp.csr_array(m)
    return _taco((0, 1), m.shape, (0, 1), [None, (m.indptr, m.indices)], m.data)


def to_tensora_csc(m) -> Any:
    """Format "d1s0" (CSC: columns outermost), float64 values."""
    c = sp.csc_array(m)
    return _taco((0, 1), m.shape, (1, 0), [None, (c.indptr, c.indices)], c.data)


def to_tensora_vector(v: sp.csr_array) -> Any:
    """A 1-d scipy CSR vector as format "s"."""
    return _taco((1,), v.shape, (0,), [(np.array([0, v.nnz]), v.indices)], v.data)


def to_tensora_dense(x: np.ndarray) -> Any:
    """A NumPy vector or row-major matrix as format "d" / "dd"."""
    x = np.ascontiguousarray(x)
    return _taco((0,) * x.ndim, x.shape, tuple(range(x.ndim)), [None] * x.ndim, x.ravel())


def tensora_entries(t) -> Entries:
    """A tensora Tensor's stored entries in row-major order (for checking, not timed).
    Reads the C arrays the kernel allocated; any level format and mode ordering."""
    from tensora.compile._cffi_ownership import tensor_cdefs as ffi
    c = t.cffi_tensor
    order = c.order
    dims = tuple(c.dimensions[0:order])
    ordering = tuple(c.mode_ordering[0:order])
    modes = tuple(c.mode_types[0:order])
    index = ffi.cast("int32_t***", c.indices)
    coords: list[np.ndarray] = []   # per level, the coordinate of every position
    count = 1
    for lv in range(order):
        n = dims[ordering[lv]]
        if modes[lv] == 0:  # dense: every parent position times every coordinate
            coords = [np.repeat(k, n) for k in coords] + [np.tile(np.arange(n), count)]
            count *= n
        else:
            pos = np.frombuffer(ffi.buffer(index[lv][0], 4 * (count + 1)), dtype=np.int32)
            crd = np.frombuffer(ffi.buffer(index[lv][1], 4 * int(pos[-1])), dtype=np.int32)
            coords = [np.repeat(k, np.diff(pos)) for k in coords] + [crd.astype(np.int64)]
            count = int(pos[-1])
    vals = np.frombuffer(ffi.buffer(c.vals, 8 * count), dtype=np.float64).copy() \
        if count else np.zeros(0)
    if order == 0:
        return Entries((), None, vals.reshape(()))
    by_dim = [None] * order
    for lv in range(order):
        by_dim[ordering[lv]] = coords[lv]
    keys = np.zeros(count, dtype=np.int64)
    for d in range(order):
        keys = keys * np.int64(dims[d]) + by_dim[d]
    sort = np.argsort(keys, kind="stable")
    return Entries(dims, keys[sort], vals[sort])

"""sparsefold's own prebuilt kernels: the common shape operations, built at install time.

A spec module like any package's (``sparsefold.aot``): ``setup.py`` generates these
kernels through the same path as ``sparsefold aot`` (``sparsefold.aot_generate.sources``)
into the extensions ``sparsefold._prebuilt0`` and ``sparsefold._prebuilt1`` (two parts,
compiled in parallel). :func:`load` binds them; ``sparsefold.aot_registry`` calls it the
first time the JIT needs a kernel, so any ``sf.jit`` function whose traced program is one of
these — ``sf.jit(lambda a, b: sf.hstack([a, b]))`` on two csr float64 arrays, say — runs on
the prebuilt kernel and compiles nothing.

Built: hstack and vstack of two arrays, the row slice ``a[start:stop]`` (also ``a[:stop]``
and ``a[start:]``), the transpose ``a.T`` (into the input's format) and the product
``a @ x`` with a dense vector (into a dense result), for csr, csc and coo arrays of float32
and float64 values with int32 or int64 indices, int32 output indices.
"""

from __future__ import annotations

from sparsefold import aot
from sparsefold import functions as _f
from sparsefold.jit import jit

__all__ = ["hstack", "vstack", "row_slice", "transpose", "spmv", "load", "EXTENSIONS",
           "PARTS"]

PARTS = 2
EXTENSIONS = tuple(f"sparsefold._prebuilt{k}" for k in range(PARTS))
FORMATS = ("csr", "csc", "coo")
DTYPES = ("float32", "float64")
INDEX = ("int32", "int64")


def _grid(*rest):
    """One signature per format, dtype and index dtype: ``rest`` are the arguments after
    the sparse ones (callables of the dtype), ``n`` sparse arguments first."""
    n, extra = rest[0], rest[1:]
    return [aot.signature(*[aot.array(f, d, index=i)] * n, *[e(d) for e in extra])
            for f in FORMATS for d in DTYPES for i in INDEX]


@aot.export(*_grid(2))
@jit
def hstack(a, b):
    return _f.hstack([a, b])


@aot.export(*_grid(2))
@jit
def vstack(a, b):
    return _f.vstack([a, b])


@aot.export(*_grid(1, lambda d: aot.size("start"), lambda d: aot.size("stop")))
@jit
def row_slice(a, start, stop):
    return a[start:stop]


@aot.export(*_grid(1))
@jit
def transpose(a):
    return _f.permute_dims(a, (1, 0))


@aot.export(*_grid(1, lambda d: aot.dense(d)))
@jit(out="dense")
def spmv(a, x):
    return _f.matmul(a, x)


def load() -> None:
    """Bind the prebuilt extensions (ImportError when they were not built)."""
    import importlib
    import sys
    aot.runtime()  # the kernels' shared runtime, before the extensions that call it
    modules = [importlib.import_module(name) for name in EXTENSIONS]
    aot.bind(modules, sys.modules[__name__])

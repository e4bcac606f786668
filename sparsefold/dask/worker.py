"""What runs inside a Dask task: a block program or a combine step, compiled once per process.

A task carries a block program as data (:func:`nodes.flatten`) and a token naming it. Each
process keeps one ``sf.jit`` function per token, so a worker traces a block program once
per argument signature and compiles it through ``compile_program``'s per-process table and
the kernel cache on disk (``compiler/run/build.py``: one build per key, a file lock per key, so
two worker processes never build the same kernel twice). Nothing here is compiled per task.
"""

from __future__ import annotations

import functools
import threading
from dataclasses import dataclass

import numpy as np

from sparsefold.dask.nodes import unflatten
from sparsefold.interop import is_pydata_sparse, is_scipy_sparse
from sparsefold.jit import JitFunction
from sparsefold.lazy import LazyArray
from sparsefold.spec.errors import InternalError

__all__ = ["BlockTask", "CombineTask", "run_block", "run_combine", "jit_for", "finish",
           "COMBINERS"]

# How partial results of each monoid combine: an elementwise function of the language.
COMBINERS = {"sum": "add", "prod": "multiply", "max": "maximum", "min": "minimum",
             "any": "logical_or", "all": "logical_and"}

_JITS: dict[tuple, JitFunction] = {}
_JITS_LOCK = threading.Lock()


@dataclass(frozen=True, slots=True)
class BlockTask:
    """One block program: ``flat`` (see ``nodes.flatten``), named by ``token``; ``out`` the
    result format (None: the first sparse chunk's); ``finish`` the chunk type the result
    is converted to (None: left as the kernel returns it)."""

    token: str
    flat: tuple
    out: str | None
    finish: str | None


@dataclass(frozen=True, slots=True)
class CombineTask:
    """Combine partial results of a reduction with ``monoid``'s elementwise function into
    format ``inner`` (None: the first sparse partial's), then make the result ``finish``'s
    chunk type in format ``out``."""

    monoid: str
    inner: str | None
    out: str | None
    finish: str | None


def _block_program(flat: tuple, *args: LazyArray) -> LazyArray:
    return LazyArray(unflatten(flat, [a.node for a in args]))


def _combined(fn_name: str, x: LazyArray, y: LazyArray) -> LazyArray:
    from sparsefold.functions import apply
    return apply(fn_name, x, y)


def jit_for(key: tuple, make) -> JitFunction:
    """This process's jit function for ``key`` (made by ``make()`` the first time)."""
    jf = _JITS.get(key)
    if jf is None:
        with _JITS_LOCK:
            jf = _JITS.get(key)
            if jf is None:
                jf = _JITS[key] = make()
    return jf


def block_jit(task: BlockTask) -> JitFunction:
    return jit_for(("block", task.token, task.out),
                   lambda: JitFunction(functools.partial(_block_program, task.flat), task.out,
                                       wait=True))


def run_block(task: BlockTask, *chunks):
    """A Dask task: the block program on its chunks."""
    return finish(block_jit(task)(*chunks), task.finish, task.out)


def run_combine(task: CombineTask, *parts):
    """A Dask task: partial results of a reduction combined into one."""
    # one binary kernel applied in turn, rather than one kernel per number of partials and
    # per result format; the result's type and format are then set by ``finish``
    name = COMBINERS[task.monoid]
    jf = jit_for(("combine", name, task.inner),
                 lambda: JitFunction(functools.partial(_combined, name), task.inner,
                                     wait=True))
    return finish(functools.reduce(jf, parts), task.finish, task.out)


def finish(x, kind: str | None, out: str | None = None):
    """``x`` as the chunk type ``kind``: "numpy", "scipy" (a 2-d sparse array in format
    ``out`` when scipy has it) or "pydata" (``sparse.COO``, the type dask concatenates);
    None leaves it alone."""
    if kind is None:
        return x
    if kind == "numpy":
        if is_scipy_sparse(x):
            return x.toarray()
        if is_pydata_sparse(x):
            return x.todense()
        return np.asarray(x)
    if kind == "scipy":
        import scipy.sparse as sp
        if is_pydata_sparse(x):
            x = sp.coo_array(x.to_scipy_sparse())
        elif not is_scipy_sparse(x):
            x = sp.csr_array(np.asarray(x))
        return x.asformat(out) if out in ("csr", "csc", "coo") and x.format != out else x
    if kind == "pydata":
        import sparse
        if isinstance(x, sparse.COO):
            return x
        if is_pydata_sparse(x):
            return x.tocoo()
        if is_scipy_sparse(x):
            return sparse.COO.from_scipy_sparse(x)
        return sparse.COO.from_numpy(np.asarray(x))
    raise InternalError(f"unknown chunk type {kind!r}")

"""Generic ahead-of-time programs, and recognising one in a program the JIT traced.

``sf.jit`` traces a function once per argument signature, numbering sizes by their equality
pattern (``a0: (n0, n1)``, ``a1: (n0, n2)``) and baking scalar arguments in as literals
(``a0[2:10]``). An ahead-of-time kernel is traced once per *declared* signature, every size
its own symbol and size arguments symbols too (``a0: (s0, s1)``, ``a1: (s2, s3)``,
``a0[start:stop]``); the size equalities it needs are its preconditions. A program ``P`` the
JIT traced *is* a registered generic program ``G`` when a substitution ``σ`` of ``G``'s
symbols turns ``G`` into ``P``: the same nodes, the same non-size parameters, every size of
``G`` mapped to ``P``'s (definitely equal), no symbol mapped to a negative number, and
every precondition of ``G`` true under ``σ`` or one of ``P``'s own. Then ``G``'s kernel,
called with the sizes ``σ`` gives its size parameters, computes ``P``; its stage variants
come from prebuilt modules when they were built (``compiler/run/build.py``).

``jit.runnable_kernel`` (the call path of every ``sf.jit`` function and of ``compute``)
asks :func:`find` before compiling a kernel, so calls use generic programs — sparsefold's
own (``sparsefold/prebuilt.py``, loaded on the first question) and those of any package
that bound its ahead-of-time extension (``sparsefold.aot.bind``).
"""

from __future__ import annotations

import dataclasses
import os
import threading
import warnings
from typing import Any

import numpy as np

from sparsefold.spec import sizes as sz
from sparsefold.spec.compute import Input
from sparsefold.spec.ir import Node
from sparsefold.spec.ops_index import Slice, normalize_slice
from sparsefold.spec.printer import topological

__all__ = ["register", "find", "unify", "BoundKernel", "PrebuiltWarning", "entries"]


class PrebuiltWarning(UserWarning):
    """sparsefold's own prebuilt kernels could not be loaded; kernels compile on first use."""


@dataclasses.dataclass(eq=False)
class _Entry:
    program: Node
    out: str
    requires: tuple[sz.Expr, ...]
    parameters: tuple[str, ...]    # symbols bound per call from size arguments
    origin: str                    # what declared it, for messages
    kernel: Any = None             # pipeline.Kernel, built on first match


_ENTRIES: dict[tuple, list[_Entry]] = {}
_LOCK = threading.RLock()
_OWN = {"loaded": False}


def _skeleton(program: Node) -> tuple:
    return tuple((type(n).__name__, n.dtype.str, n.ndim) +
                 ((n.name, str(n.format)) if isinstance(n, Input) else ())
                 for n in topological(program))


def register(program: Node, out: str, requires: tuple, parameters: tuple[str, ...],
             origin: str) -> None:
    """Make ``program`` (computed into ``out``, valid where ``requires`` hold) a generic
    program the JIT may recognise; ``parameters`` are its size-argument symbols."""
    entry = _Entry(program, out, tuple(requires), tuple(parameters), origin)
    with _LOCK:
        bucket = _ENTRIES.setdefault((out, _skeleton(program)), [])
        if not any(e.program == program and e.requires == entry.requires for e in bucket):
            bucket.append(entry)


def entries() -> list[tuple[str, Node, str]]:
    """(origin, program, out) of every registered generic program (for listings, tests)."""
    with _LOCK:
        return [(e.origin, e.program, e.out) for b in _ENTRIES.values() for e in b]


def find(program: Node, out: str, requires: tuple = ()):
    """A kernel computing ``program`` into ``out`` from a registered generic program, or
    None."""
    _load_own()
    with _LOCK:
        candidates = list(_ENTRIES.get((out, _skeleton(program)), ()))
    for entry in candidates:
        sigma = unify(entry.program, program)
        if sigma is None or not _implied(entry.requires, sigma, tuple(requires)):
            continue
        with _LOCK:
            if entry.kernel is None:
                from sparsefold.compiler.pipeline import Kernel
                entry.kernel = Kernel(entry.program, entry.out, requires=entry.requires)
        return BoundKernel(entry.kernel, {p: sigma[p] for p in entry.parameters}, program)
    return None


class BoundKernel:
    """A generic kernel standing for a traced program: called like ``pipeline.Kernel``, it
    passes the generic kernel the sizes the traced program gives its size parameters."""

    def __init__(self, kernel, sizes: dict[str, sz.Expr], program: Node):
        self.kernel = kernel
        self.source_program = program
        self._names = tuple(sizes)
        values = [sz.const_value(e) for e in sizes.values()]
        self._static = dict(zip(self._names, values)) if None not in values else None
        self._inputs = [n for n in topological(program) if isinstance(n, Input)]
        self._sizes_fn = sz.python_function(tuple(sizes.values()))

    def __call__(self, values: dict[str, Any], library: str = "scipy"):
        sizes = self._static
        if sizes is None:  # a parameter the traced program computes from its input sizes
            from sparsefold.compiler.kernel import bind_sizes
            env = bind_sizes(self._inputs, values, {})
            sizes = dict(zip(self._names, (int(v) for v in self._sizes_fn(env))))
        return self.kernel(values, library, sizes or None)

    def __getattr__(self, name: str):  # stages, sources, strategy, ... of the generic kernel
        return getattr(self.kernel, name)


# --- unification ------------------------------------------------------------------------------

def _size_like(v) -> bool:
    return isinstance(v, (sz.Expr, int, np.integer)) and not isinstance(v, (bool, np.bool_))


def _same(a, b) -> bool:
    if type(a) is not type(b):
        return False
    try:
        return bool(a == b)
    except (TypeError, ValueError):
        return False


def unify(g: Node, p: Node) -> dict[str, sz.Expr] | None:
    """``σ`` with ``σ(g) == p`` (see the module docstring), or None."""
    sigma: dict[str, sz.Expr] = {}
    deferred: list[tuple[sz.Expr, sz.Expr]] = []
    slices: list[tuple[Slice, Slice]] = []
    seen: set[tuple[int, int]] = set()

    def size(ge, pe) -> bool:
        ge, pe = sz.as_expr(ge), sz.as_expr(pe)
        if isinstance(ge, sz.Sym):
            if ge.name in sigma:
                return sz.definitely_equal(sigma[ge.name], pe)
            v = sz.const_value(pe)
            if v is not None and v < 0:  # a symbol is a non-negative size
                return False
            sigma[ge.name] = pe
            return True
        deferred.append((ge, pe))
        return True

    def param(gv, pv) -> bool:
        if isinstance(gv, sz.Expr) or isinstance(pv, sz.Expr):
            return _size_like(gv) and _size_like(pv) and size(gv, pv)
        if isinstance(gv, tuple) and isinstance(pv, tuple):
            return len(gv) == len(pv) and all(param(a, b) for a, b in zip(gv, pv))
        return _same(gv, pv)

    def node(gn: Node, pn: Node) -> bool:
        if (id(gn), id(pn)) in seen:
            return True
        if type(gn) is not type(pn) or gn.dtype != pn.dtype or gn.ndim != pn.ndim:
            return False
        seen.add((id(gn), id(pn)))
        for f in dataclasses.fields(gn):
            if not f.init:
                continue
            gv, pv = getattr(gn, f.name), getattr(pn, f.name)
            if isinstance(gv, Node):
                if not (isinstance(pv, Node) and node(gv, pv)):
                    return False
            elif isinstance(gv, tuple) and gv and all(isinstance(x, Node) for x in gv):
                if not (isinstance(pv, tuple) and len(pv) == len(gv) and
                        all(isinstance(y, Node) and node(x, y) for x, y in zip(gv, pv))):
                    return False
            elif isinstance(gn, Slice) and f.name == "slices":
                if not param(gv, _slice_defaults(gv, pv, pn.arg.shape)):
                    return False
                slices.append((gn, pn))
            elif not param(gv, pv):
                return False
        return True

    if not node(g, p):
        return None
    for ge, pe in deferred:
        if not sz.definitely_equal(sz.substitute(ge, sigma), pe):
            return None
    for gs, ps in slices:  # the meaning of a slice is its normalized (first, step, count)
        for n_g, t_g, n_p, t_p in zip(gs.arg.shape, gs.slices, ps.arg.shape, ps.slices):
            first_g, step_g, count_g = normalize_slice(n_g, *t_g)
            first_p, step_p, count_p = normalize_slice(n_p, *t_p)
            if step_g != step_p or not (
                    sz.definitely_equal(sz.substitute(first_g, sigma), first_p) and
                    sz.definitely_equal(sz.substitute(count_g, sigma), count_p)):
                return None
    return sigma


def _slice_defaults(g_slices, p_slices, p_shape):
    """``p``'s slice triples with an omitted start/stop written out (0 and the axis size,
    for positive steps) where ``g`` names a bound: ``a[:k]`` is ``a[0:k]``."""
    if not (isinstance(p_slices, tuple) and isinstance(g_slices, tuple)) or \
            len(p_slices) != len(g_slices) or len(p_slices) != len(p_shape):
        return p_slices
    out = []
    for (gs, ge, _), (ps, pe, pstep), n in zip(g_slices, p_slices, p_shape):
        if pstep is None or (isinstance(pstep, int) and pstep > 0):
            ps = 0 if ps is None and gs is not None else ps
            pe = n if pe is None and ge is not None else pe
        out.append((ps, pe, pstep))
    return tuple(out)


def _implied(g_requires, sigma, p_requires) -> bool:
    """Every precondition of ``G``, under ``σ``, is true or one of ``P``'s."""
    for r in g_requires:
        s = sz.substitute(r, sigma)
        if s == sz.TRUE or s in p_requires:
            continue
        if isinstance(s, sz.Op) and s.op == "eq" and (
                sz.definitely_equal(*s.args) or sz.eq(s.args[1], s.args[0]) in p_requires):
            continue
        return False
    return True


# --- sparsefold's own prebuilt kernels ----------------------------------------------------------

def _load_own() -> None:
    if _OWN["loaded"]:
        return
    with _LOCK:
        if _OWN["loaded"]:
            return
        _OWN["loaded"] = True
        if os.environ.get("SPARSEFOLD_PREBUILT", "1") == "0":
            return
        from sparsefold import prebuilt
        try:
            prebuilt.load()
        except ImportError as exc:
            warnings.warn(f"sparsefold's prebuilt kernels are not available ({exc}); every "
                          f"kernel is compiled on first use (needs Cython and a C compiler). "
                          f"Reinstall sparsefold to build them.", PrebuiltWarning,
                          stacklevel=4)

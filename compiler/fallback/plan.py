"""A program prepared for the fallback: what it covers (decided once per program), and one
call (bind sizes, check what the compiled kernel would check, evaluate, assemble the
result the compiled kernel would return).

The result follows the compiled kernels' choices (``compiler/README.md``, "Choices"): a
sparse result holds the entries the zero algebra gives, stored zeros included, in the
requested format's canonical order, with int32 indices when every size and the entry
count fit (int64 otherwise), wrapped by ``storage.results`` exactly as a kernel's output
is; a dense-valued result, a reduction and a dense product are computed densely and
converted by ``storage.results.from_dense``, as a kernel's dense assembly is.

Whatever the fallback cannot vouch for, it declines (:class:`Declined`) rather than
answer: data the kernel's checks must judge (invalid storage, a size precondition that
fails, a NaN or an infinity beside an annihilating product, a reduction with no identity
over nothing), results over its memory budget or beyond 2**30 entries (where a kernel's
index width follows its capacity bound), and any error of its own.
"""

from __future__ import annotations

import os
import time
from typing import Any

import numpy as np

from sparsefold.compiler.fallback.contract import find_contraction, sparse_valued_reduction
from sparsefold.compiler.fallback.evaluate import Context, evaluate_node, transposed_only
from sparsefold.compiler.fallback.located import nonzeros
from sparsefold.compiler.fallback.values import (
    I64,
    Broadcast,
    Budget,
    Declined,
    Sparse,
    canonical_order,
    is_zero,
)
from sparsefold.spec import SHAPE_OPERATORS
from sparsefold.spec import sizes as sz
from sparsefold.spec.compute import Input, Iota, Literal, Map, Reduce, SizeOf
from sparsefold.spec.errors import IllFormedProgram
from sparsefold.spec.ir import Node, ShapeOp
from sparsefold.spec.printer import topological
from sparsefold.storage.binding import bind_sizes
from sparsefold.storage.results import compress, from_dense, out_format, wrap_levels

__all__ = ["FallbackPlan", "Unsupported", "MAX_ENTRIES"]

_INT32_MAX = 2**31 - 1
# beyond this many entries a kernel's output index width follows its capacity bound (an
# upper bound the fallback does not reproduce): such calls wait for the kernel
MAX_ENTRIES = 2**30
_MAX_ELEMENTS = 2**62
_BUILTIN_SHAPE_OPS = frozenset(SHAPE_OPERATORS.values())
_INPUT_KINDS = {("full", "pos"), ("pos",)}
_BYTES_PER_ENTRY = 32  # a key, two coordinates and a value, roughly
# The work rule (Budget.cells): one dense array may hold LINEAR_FACTOR times the elements
# of the inputs (stored entries, dense arrays), the output when the kernel assembles it
# densely too, and the longest extent — or DENSE_FLOOR elements, whichever is more: below
# that, dense work costs well under a millisecond, less than waiting for a kernel (0.6 s).
LINEAR_FACTOR = 4
DENSE_FLOOR = 1 << 16
SLOWER_THAN_BUILDING = "slower than building its kernel"  # a deadline's decline


class Unsupported(Exception):
    """The fallback does not cover this program (its message says what it lacks)."""


def _memory_limit() -> int:
    """Bytes one allocation may take, as the compiled kernels read it (compiler/run/memory.py):
    ``$SPARSEFOLD_MEMORY_LIMIT``, else the machine's physical memory."""
    configured = os.environ.get("SPARSEFOLD_MEMORY_LIMIT")
    if configured:
        return int(configured)
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):  # pragma: no cover - non-POSIX
        return 1 << 62


def _covered(node: Node) -> str | None:
    """Why the fallback cannot evaluate ``node`` (None: it can)."""
    if isinstance(node, Input):
        kinds = node.format.kinds
        if node.format.is_dense or kinds in _INPUT_KINDS or (
                kinds and kinds[0] == "pos" and all(k == "one" for k in kinds[1:])):
            return None
        return f"an input stored as {node.format}"
    if isinstance(node, (Literal, SizeOf, Iota, Map, Reduce)):
        return None
    if isinstance(node, ShapeOp):
        if type(node) in _BUILTIN_SHAPE_OPS:
            return None
        return f"the user shape operator {type(node).__name__}"
    return f"{type(node).__name__} nodes"


class FallbackPlan:
    """``program`` computed into ``out`` (an ``out=`` name) by the fallback; ``requires``:
    the size equalities its trace assumed (checked per call, as the kernel checks them).
    Raises :class:`Unsupported` for a program it does not cover."""

    def __init__(self, program: Node, out: str, requires: tuple = (),
                 dense_result: bool | None = None):
        self.program, self.out = program, out
        # how the kernel makes its result, when the caller knows (a kernel's plan:
        # ``pipeline.Kernel.assembles_densely``): computed densely and converted, or
        # assembled from entries. None: as the fallback's own value is (a sparse value
        # with background 0 from its entries, anything else densely)
        self.dense_result = dense_result
        try:
            self.fmt = out_format(out, program.ndim)
        except IllFormedProgram as exc:
            raise Unsupported(str(exc)) from None
        nodes = topological(program)
        for n in nodes:
            why = _covered(n)
            if why is not None:
                raise Unsupported(f"the fallback does not evaluate {why}")
        self.contractions = {}
        for n in nodes:
            if isinstance(n, Reduce):
                found = find_contraction(n)
                if found is not None:
                    self.contractions[id(n)] = found
        sparse_valued = {id(n) for n in nodes if isinstance(n, Reduce) and
                         sparse_valued_reduction(n)}
        # a reduction reached from the root through single-piece shape operators (a
        # matmul's squeeze) is the kernel's root: its result is assembled densely
        below = program
        while isinstance(below, ShapeOp) and len(below.operands()) == 1 and \
                below.fill is None and len(below.index_map().pieces) == 1 and \
                None not in below.index_map().pieces[0].forward:
            below = below.operands()[0]
        if isinstance(below, Reduce):
            sparse_valued.discard(id(below))
        self.sparse_valued = frozenset(sparse_valued)
        needed = {id(program)}
        for n in reversed(nodes):  # from the root down: what the result needs
            if id(n) not in needed:
                continue
            c = self.contractions.get(id(n))
            needed.update(id(o) for o in (c.operands() if c else n.operands()))
        self.order = [n for n in nodes if id(n) in needed]
        last: dict[int, int] = {}
        for step, n in enumerate(self.order):
            c = self.contractions.get(id(n))
            for o in (c.operands() if c else n.operands()):
                last[id(o)] = step
        self._last = last  # values are dropped after their last use
        consumers: dict[int, list[Node]] = {}
        for n in self.order:
            c = self.contractions.get(id(n))
            for o in (c.operands() if c else n.operands()):
                consumers.setdefault(id(o), []).append(n)
        self._transposed = frozenset(id(n) for n in self.order if n is not program and
                                     transposed_only(n, consumers.get(id(n), [])))
        self.inputs = [n for n in nodes if isinstance(n, Input)]
        # a float product annihilates only beside finite operands: the kernel checks its
        # inputs and otherwise runs an exact variant; the fallback then declines
        self.relies_on_finite = any(
            isinstance(n, Map) and n.fn.annihilates and n.fn.annihilation_needs_finite and
            (n.dtype.kind in "fc" or any(a.dtype.kind in "fc" for a in n.args))
            for n in nodes)
        preconditions = tuple(requires) + tuple(
            n.index_map().requires for n in nodes if isinstance(n, ShapeOp))
        self._requires = sz.python_function(preconditions)
        self._extents = sz.python_function(tuple(sz.product(n.shape) for n in nodes))
        self._axes = sz.python_function(tuple(s for n in nodes for s in n.shape))
        # the result's elements count as output when the kernel computes it densely (a
        # dense format, or a sparse result the kernel converts from a dense one)
        fmt_dense = self.fmt.is_dense or bool(dense_result)
        self._out_cells = sz.python_function((sz.product(program.shape),)) if fmt_dense \
            else None

    def __call__(self, values: dict[str, Any], library: str = "scipy",
                 deadline: float | None = None):
        """The result for ``values`` (input name -> array), as the compiled kernel returns
        it for ``library`` ("scipy" or "pydata"); :class:`Declined` when it does not
        answer — also when ``deadline`` (a ``time.perf_counter()`` value: when building
        the kernel would have answered) passes between two of its steps."""
        try:
            with np.errstate(all="ignore"):
                return self._run(values, library, deadline)
        except Declined:
            raise
        except Exception as exc:  # noqa: BLE001 - the kernel answers instead, and decides
            raise Declined(f"{type(exc).__name__}: {exc}") from exc

    def _run(self, values: dict[str, Any], library: str, deadline: float | None = None):
        env = bind_sizes(self.inputs, values)
        try:
            holds = all(self._requires(env))
            extents = self._extents(env)
        except ZeroDivisionError:
            holds, extents = False, ()
        if not holds:
            raise Declined("a size precondition does not hold (the kernel reports it)")
        if any(e > _MAX_ELEMENTS for e in extents):
            raise Declined("an array of more than 2**62 elements")
        limit = _memory_limit() // 4
        budget = Budget(limit, limit // _BYTES_PER_ENTRY, self.linear_cells(values, env))
        ctx = Context(values, env, budget, self.contractions, self.sparse_valued,
                      self._transposed)
        for step, node in enumerate(self.order):
            if deadline is not None and time.perf_counter() > deadline:
                raise Declined(SLOWER_THAN_BUILDING)
            c = self.contractions.get(id(node))
            args = [] if c else [ctx.values[id(o)] for o in node.operands()]
            value = evaluate_node(node, args, ctx)
            if isinstance(node, Input):
                self._check_input(node, value)
            ctx.values[id(node)] = value
            for o in (c.operands() if c else node.operands()):
                if self._last.get(id(o)) == step and o is not self.program:
                    ctx.values.pop(id(o), None)
        return self._result(ctx.values[id(self.program)], ctx, library)

    def linear_cells(self, values: dict[str, Any], env: dict[str, int]) -> int:
        """The most elements one dense array of this call may hold (:class:`Budget`)."""
        stored = 0
        for node in self.inputs:
            a = values.get(node.name)
            n = getattr(a, "nnz", None)
            stored += int(n) if n is not None else int(np.size(a))
        out = self._out_cells(env)[0] if self._out_cells is not None else 0
        longest = max(self._axes(env), default=0)
        return max(DENSE_FLOOR, LINEAR_FACTOR * (stored + int(out) + int(longest)))

    def _check_input(self, node: Input, value) -> None:
        if isinstance(value, Sparse):
            if value.nnz > MAX_ENTRIES:
                raise Declined("an input of more than 2**30 entries")
            data = value.vals
        else:
            data = value.array
        if self.relies_on_finite and node.dtype.kind in "fc" and \
                not bool(np.all(np.isfinite(data))):
            raise Declined(f"{node.name} holds a NaN or an infinity (the kernel runs its "
                           f"exact variant)")

    def _result(self, value, ctx: Context, library: str):
        fmt, node = self.fmt, self.program
        entries = isinstance(value, (Sparse, Broadcast)) and is_zero(value.background)
        dense = not entries if self.dense_result is None else self.dense_result
        if not dense and not fmt.is_dense and not entries:
            # the kernel's result is a view of a value it computed densely first (a
            # temporary): its nonzeros
            value, entries = nonzeros(value, ctx.budget), True
        if entries and (not dense or fmt.is_dense):
            s = value.materialize(ctx.budget)
            if s.nnz > MAX_ENTRIES:
                raise Declined("a result of more than 2**30 entries")
            vals = np.array(s.vals, dtype=node.dtype, copy=True) if isinstance(node, Input) \
                else np.ascontiguousarray(s.vals, dtype=node.dtype)
            if fmt.is_dense:
                ctx.budget.dense(s.shape, node.dtype, "the result")
                dense = np.zeros(s.shape, dtype=node.dtype)
                if s.nnz:
                    dense[s.coords if s.shape else ()] = vals if s.shape else vals[0]
                return dense
            ix = np.int64 if max(s.shape + (s.nnz,), default=0) > _INT32_MAX else np.int32
            if s.csr is not None and fmt.kinds == ("full", "pos"):
                return self._compressed(s, vals, ix, library)
            order = fmt.mode_order
            crds = [s.coords[m] for m in order]
            sizes = tuple(s.shape[m] for m in order)
            perm = canonical_order(tuple(crds), sizes) if order != tuple(range(len(order))) \
                else None
            if perm is not None:
                crds = [c[perm] for c in crds]
                vals = vals[perm]
            arrays = compress([np.asarray(c, I64) for c in crds], fmt, s.shape, ix)
            return wrap_levels(fmt, s.shape, vals, arrays, library)
        ctx.budget.dense(ctx.shape(node), node.dtype, "the result")
        dense = np.asarray(value.full(ctx.budget))
        inputs = [a for a in ctx.arrays.values() if isinstance(a, np.ndarray)]
        if not dense.flags.writeable or dense.dtype != node.dtype or \
                any(np.may_share_memory(dense, a) for a in inputs):
            dense = np.array(dense, dtype=node.dtype, copy=True)  # never a view of an input
        return from_dense(dense, fmt, library)

    def _compressed(self, s: Sparse, vals: np.ndarray, ix, library: str):
        """A CSR or CSC result from a value held as CSR arrays (no coordinates made)."""
        indptr, indices = s.csr
        if self.fmt.mode_order == (1, 0):  # by columns: scipy's counting transpose
            import scipy.sparse as sp
            m = sp.csr_array((vals, indices, indptr), shape=s.shape).tocsc()
            indptr, indices, vals = m.indptr, m.indices, np.ascontiguousarray(m.data)
        arrays = {"pos1": np.asarray(indptr).astype(ix, copy=False),
                  "crd1": np.asarray(indices).astype(ix, copy=False)}
        return wrap_levels(self.fmt, s.shape, vals, arrays, library)

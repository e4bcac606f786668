"""The work a stage's plan does, stated as a bound (issue #27): ``O(nnz(a0) + n0)``.

Each plan kind says what its loops visit, in three kinds of quantity:

* ``nnz(X)`` — the entries an input (or a temporary) stores;
* an **extent** — a size the loops run over (output rows, a broadcast axis, every
  coordinate of a dense-valued result); and
* ``flops(X, Y)`` — a sparse product's multiply-adds (Σ over the driver's entries of the
  located row's entries), and ``out`` — the entries the stage writes.

A bound is a sum of monomials (:class:`Cost`). A monomial that multiplies two or more
extents — ``n0*n1``, every coordinate of a matrix — is *dense work* unless it is the
element count of a dense array the stage reads or writes anyway (``A + 1``'s dense result,
``B + x`` with a dense ``B``): a sparse program whose plan visits rows × columns while its
inputs and output are sparse is a planner bug (``Cost.dense_work``). The runtime refuses
such a plan above :data:`DENSE_WORK_LIMIT` coordinates unless the user allowed it
(``sf.jit(..., allow_dense_work=True)``; ``pipeline.Kernel``), and the test suite at any
size (``SPARSEFOLD_DENSE_WORK=error``).

The statements follow the lowerings (``lower_*.py``): a stream writes each piece's entries
once (times its broadcast extents: entries the output holds); a row-driven loop also steps
every output row; a co-iteration merges its operands' entries (and steps rows), a universe
visits every coordinate of its space — a dense-valued result's size (its output), or, under
a reduction, dense work; a contraction steps the driver's rows, does its
flops and appends its output; a sort adds ``out·log``; a reduction whose argument is
dense-valued visits its region and combines the rest per output cell (``n_out``).
``sparsefold fuzz --programs`` checks the statements empirically: a program whose time
grows faster than its stored sizes is reported whatever its bound says.
"""

from __future__ import annotations

import contextlib
import contextvars
import math
import os
from dataclasses import dataclass

import numpy as np
import z3

from sparsefold.compiler.plan.plans import CoiterPlan, ContractPlan, DensePlan, StreamPlan
from sparsefold.spec import sizes as sz
from sparsefold.spec.errors import IllFormedProgram
from sparsefold.spec.ir import Node
from sparsefold.spec.sizes_z3 import Reading, serialized

__all__ = ["Cost", "Monomial", "stage_cost", "DENSE_WORK_LIMIT", "dense_work_limit",
           "DenseWork", "allowing", "check_dense_work", "EXACT_CAPACITY_ABOVE"]

# coordinates a dense-work plan may visit before the runtime refuses it (~0.1 s of loops)
DENSE_WORK_LIMIT = 1 << 26
# below this many entries an upper-bound allocation costs less than an exact count: a row
# loop that skips rows (a strided slice) counts its entries first only above it (the checked
# call, ``kernel.StageKernel``, and the fast entry, ``lower/fastcall.py``, both)
EXACT_CAPACITY_ABOVE = 1 << 15


def dense_work_limit() -> int | None:
    """The refusal threshold in use: ``$SPARSEFOLD_DENSE_WORK`` is ``error`` (refuse at any
    size: the test suite), ``allow`` (never refuse) or a number of coordinates; default
    :data:`DENSE_WORK_LIMIT`. None: never refuse."""
    setting = os.environ.get("SPARSEFOLD_DENSE_WORK", "").strip().lower()
    if not setting:
        return DENSE_WORK_LIMIT
    if setting == "error":
        return 0
    if setting == "allow":
        return None
    try:
        return max(0, int(float(setting)))
    except ValueError:
        raise IllFormedProgram(f"SPARSEFOLD_DENSE_WORK must be 'error', 'allow' or a number "
                               f"of coordinates, found {setting!r}") from None


class DenseWork(IllFormedProgram):
    """A plan would visit every coordinate of a product of extents while its inputs and
    output are sparse: a gap of the planner, "not supported yet" at this size;
    ``allow_dense_work=True`` runs it anyway."""


_ALLOWED: contextvars.ContextVar[bool] = contextvars.ContextVar("allow_dense_work",
                                                                default=False)


@contextlib.contextmanager
def allowing(allow: bool = True):
    """Within: dense-work plans run at any size (``sf.jit(..., allow_dense_work=True)``)."""
    token = _ALLOWED.set(allow)
    try:
        yield
    finally:
        _ALLOWED.reset(token)


def check_dense_work(cost: Cost, env: dict[str, int], what: str = "this program",
                     nnz: dict[str, int] | None = None) -> None:
    """Raise :class:`DenseWork` when ``cost``'s dense-work monomials visit more coordinates
    at these sizes than :func:`dense_work_limit` allows (and the caller did not allow it)."""
    if not cost.dense_work or _ALLOWED.get():
        return
    limit = dense_work_limit()
    if limit is None:
        return
    n = cost.dense_coordinates(env, nnz)
    if n > limit:
        terms = " + ".join(dict.fromkeys(str(m) for m in cost.dense))
        raise DenseWork(
            f"not supported yet at this size: the plan for {what} visits every coordinate "
            f"of {terms} ({n:,} coordinates; its cost bound is {cost}) although its inputs "
            f"and output are sparse — a gap in the planner, please report it. Pass "
            f"allow_dense_work=True to sf.jit (or .compute) to run it anyway, or set "
            f"SPARSEFOLD_DENSE_WORK=allow; above {limit:,} coordinates it is refused "
            f"(SPARSEFOLD_DENSE_WORK=<number> sets the limit)")


@dataclass(frozen=True)
class Monomial:
    """A product of factors: ``entries`` (inputs whose stored entries multiply), ``extents``
    (size expressions), ``flops`` (a product's operands), ``out`` (the stage's written
    entries), ``log`` (times log of the same)."""

    entries: tuple[str, ...] = ()
    extents: tuple[sz.Expr, ...] = ()
    flops: tuple[str, ...] = ()
    out: bool = False
    log: bool = False

    def __str__(self) -> str:
        parts = [f"nnz({e})" for e in self.entries]
        parts += [_extent_text(x) for x in self.extents]
        if self.flops:
            parts.append(f"flops({', '.join(self.flops)})")
        if self.out:
            parts.append("out")
        text = "*".join(parts) or "1"
        return f"{text}*log" if self.log else text

    @property
    def product_of_extents(self) -> bool:
        """Two or more (symbolic) extents multiply: every coordinate of a matrix, or a
        stored entry repeated along two broadcast axes."""
        return len([x for x in self.extents if sz.const_value(x) is None]) >= 2 and \
            not self.flops and not self.out


def _extent_text(e: sz.Expr) -> str:
    text = str(e)
    return f"({text})" if any(c in text for c in "+-*/ ") else text


@dataclass(frozen=True)
class Cost:
    """A stage's bound: the sum of ``terms``; ``dense_work`` lists the monomials that are
    products of extents no dense array of the stage accounts for."""

    terms: tuple[Monomial, ...]
    dense: tuple[Monomial, ...] = ()

    @property
    def dense_work(self) -> bool:
        return bool(self.dense)

    def __str__(self) -> str:
        return "O(" + " + ".join(dict.fromkeys(str(t) for t in self.terms)) + ")"

    def __add__(self, other: Cost) -> Cost:
        return Cost(self.terms + other.terms, self.dense + other.dense)

    def dense_coordinates(self, env: dict[str, int], nnz: dict[str, int] | None = None) -> int:
        """The coordinates the dense-work monomials visit at these sizes (times the stored
        entries of the inputs they name, where ``nnz`` knows them)."""
        total = 0
        for m in self.dense:
            n = math.prod(int(sz.evaluate(x, env)) for x in m.extents)
            for name in m.entries:
                n *= max(1, (nnz or {}).get(name, 1))
            total += n
        return total


def _entries(pieces) -> list[Monomial]:
    """Each piece's stored entries, times its broadcast extents."""
    out = []
    for p in pieces:
        if p.leaf.format.is_dense:
            continue
        out.append(Monomial(entries=(p.leaf.name,),
                            extents=tuple(size for _, size in p.free)))
    return out


def _row_extent(shape, order) -> tuple[sz.Expr, ...]:
    return (shape[order[0]],) if len(shape) >= 1 else ()


def stage_cost(plan, program, fmt, inputs) -> Cost:
    """The bound of one stage (see the module docstring); ``inputs``: the stage's inputs
    (dense ones may account for a product of extents). A stream's entries repeated along
    broadcast axes are entries of its result (a broadcast materialized into a temporary
    when the consumer pairs it with another by intersection was once ``kron``'s dense
    work: that is planned as a "product" co-iteration now; the fuzzer's scale check
    catches any other)"""
    shape = tuple(program.shape)
    terms: list[Monomial] = []
    if plan is None:  # a gather stage (compiler/run/gather.py)
        terms.append(Monomial(out=True))
        terms += [Monomial(entries=(i.name,)) for i in inputs if not i.format.is_dense]
        terms += [Monomial(extents=tuple(i.shape)) for i in inputs if i.format.is_dense]
        return _judged(terms, program, fmt, inputs)
    if isinstance(plan, DensePlan):  # (every input dense: its work is the result's size)
        return Cost((Monomial(out=True) if not fmt.is_dense else Monomial(extents=shape),))
    elif isinstance(plan, StreamPlan):
        terms += _entries(plan.pieces)
        if plan.loop == "row" and len(shape) >= 1:
            terms.append(Monomial(extents=_row_extent(shape, fmt.mode_order)))
    elif isinstance(plan, CoiterPlan):
        if plan.lattice.universe and plan.reduction is None:
            # a dense-valued result (stored sparse or not): every coordinate may be an entry
            # of the output, which the walk writes — its size, not dense work
            terms.append(Monomial(extents=tuple(plan.space)) if fmt.is_dense else
                         Monomial(out=True))
        elif plan.lattice.universe:  # a reduction of it: the output is smaller than that
            terms.append(Monomial(extents=tuple(plan.space)))
        elif plan.mode == "product":  # every pair: the output's entries
            terms.append(Monomial(entries=tuple(p.leaf.name for p in plan.pieces)))
        else:
            terms += _entries(plan.pieces)
            if plan.mode == "row":
                terms.append(Monomial(extents=(plan.space[plan.order[0]],)))
    elif isinstance(plan, ContractPlan):
        terms += _entries(plan.driver.pieces)
        terms.append(Monomial(flops=(plan.driver.name, plan.located.name)))
        terms.append(Monomial(out=True))
        rows = plan.driver.pieces[0].leaf.shape
        terms.append(Monomial(extents=(rows[plan.driver.pieces[0].leaf.format.mode_order[0]],)))
    if getattr(plan, "assembly", "") in ("sort", "bucket"):
        terms.append(Monomial(out=True, log=plan.assembly == "sort"))
    reduction = getattr(plan, "reduction", None)
    if reduction is not None and reduction.background is not None:
        # the combine per output cell; of a nonzero constant into a sparse result every
        # cell is an entry (unless each coordinate reduced into it is stored): its size
        terms.append(Monomial(out=True) if _fills_cells(reduction, fmt)
                     else Monomial(extents=shape))
    return _judged(terms, program, fmt, inputs)


def _fills_cells(reduction, fmt) -> bool:
    """Does a reduction's background make every cell of a sparse result an entry: a nonzero
    constant (NaN included), not one value per cell (p55 of the program generator, #39)?"""
    bg = reduction.background
    if fmt.is_dense or isinstance(bg, Node):
        return False
    return bool(np.asarray(bg) != 0)


def _judged(terms, program, fmt, inputs) -> Cost:
    """The monomials that are products of extents no dense array of the stage (its dense
    output, a dense input) has as many elements as; a result's stored entries repeated
    along broadcast axes are entries of the stage's result."""
    arrays = [tuple(i.shape) for i in inputs if i.format.is_dense]
    if fmt.is_dense:
        arrays.append(tuple(program.shape))
    dense = []
    for m in terms:
        if not m.product_of_extents or m.entries:
            continue
        work = sz.product(m.extents)
        if not any(_at_most(work, sz.product(a)) for a in arrays):
            dense.append(m)
    return Cost(tuple(terms), tuple(dense))


@serialized
def _at_most(work: sz.Expr, elements: sz.Expr) -> bool:
    """``work <= elements`` for all sizes (equal products of the same symbols, or a proof
    over non-negative sizes)."""
    if sz.definitely_equal(work, elements):
        return True
    rd = Reading()
    solver = z3.Solver(ctx=rd.ctx)
    solver.set("rlimit", 200_000)
    for name in sz.free_symbols(work) | sz.free_symbols(elements):
        solver.add(rd.int(sz.Sym(name)) >= 0)
    solver.add(rd.int(work) > rd.int(elements))
    return solver.check() == z3.unsat

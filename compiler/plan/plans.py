"""Typed plans: what the planner (``planner.py``) decided for one kernel, read by the
lowerings. Every choice is a field, so a kernel header and ``sf.show`` can state it.

A program compiles to one or more *stages* (``pipeline.py``): each stage is one kernel with
one of these plans; a stage's result that a later stage reads (a reordered operand, a
materialized subexpression) is a temporary named in the later stage's header.
"""

from __future__ import annotations

from dataclasses import dataclass

from sparsefold.compiler.plan.lattice import Lattice
from sparsefold.compiler.plan.streams import StreamPiece
from sparsefold.spec import sizes as sz
from sparsefold.spec.compute import Input, Reduce
from sparsefold.spec.errors import InternalError
from sparsefold.spec.ir import Node, ShapeOp

__all__ = ["Operand", "Reduction", "StreamPlan", "CoiterPlan", "DensePlan", "ContractPlan",
           "Plan", "LOOPS", "ASSEMBLIES", "capacity_points"]

LOOPS = ("leaf", "row", "bulk")
ASSEMBLIES = ("dense", "accumulate", "append", "scatter", "bucket", "sort")


@dataclass(frozen=True)
class Operand:
    """A sparse operand of a co-iteration: a view's node and its pieces (disjoint)."""

    node: Node
    pieces: tuple[StreamPiece, ...]

    @property
    def name(self) -> str:
        leaves = dict.fromkeys(p.leaf.name for p in self.pieces)
        return "+".join(leaves)


@dataclass(frozen=True)
class Reduction:
    """A reduction at the root: ``node`` combines its argument over ``node.axes``; ``chain``
    are single-piece shape operators above it (a squeeze after matmul), whose forward maps
    carry the kept coordinates to the output's."""

    node: Reduce
    chain: tuple[ShapeOp, ...] = ()
    # the argument's value where no operand stores (``sum(A + 1)``: 1), when the plan visits
    # only stored coordinates and the runtime combines it for the rest (``kernel._finish``)
    background: object = None
    # a sum whose argument is ``E - total`` over the region, ``total`` (a node over located
    # operands, ``E``'s value outside it) summed by the runtime over the reduced axes and
    # added per output cell (``sum(A + x[None, :], axis=1)``: background.total)
    total: object = None

    @property
    def monoid(self) -> str:
        m = self.node.monoid
        return m if isinstance(m, str) else m.name

    def out_coords(self, coords: tuple) -> tuple[sz.Expr, ...]:
        """Output coordinates (index expressions) of the argument's coordinates ``coords``
        (symbols), through the kept axes and the chain."""
        kept = tuple(c for d, c in enumerate(coords) if d not in self.node.axes)
        for op in self.chain:
            (piece,) = op.index_map().pieces
            env = {sz.in_coords(len(kept))[d].name: c for d, c in enumerate(kept)}
            kept = tuple(sz.substitute(f, env) for f in piece.forward)
        return kept

    def chain_guard(self, coords: tuple) -> sz.Expr:
        kept = tuple(c for d, c in enumerate(coords) if d not in self.node.axes)
        guard = sz.TRUE
        for op in self.chain:
            (piece,) = op.index_map().pieces
            env = {sz.in_coords(len(kept))[d].name: c for d, c in enumerate(kept)}
            guard = sz.and_(guard, sz.substitute(piece.forward_guard, env))
            kept = tuple(sz.substitute(f, env) for f in piece.forward)
        return guard


@dataclass(frozen=True)
class StreamPlan:
    """The entries of one sparse view, each written once (or combined into a reduction).
    ``loop``: "leaf" (piece after piece), "row" (output rows outermost) or "bulk" (whole
    leaves copied). ``assembly``: "dense", "accumulate", "append" (proved in order),
    "scatter" (in order within each outer coordinate), "bucket" or "sort" (fallbacks)."""

    pieces: tuple[StreamPiece, ...]
    loop: str
    assembly: str
    finite: tuple[Input, ...] = ()
    reduction: Reduction | None = None

    def __post_init__(self):
        if self.loop not in LOOPS or self.assembly not in ASSEMBLIES:
            raise InternalError(f"bad stream plan {self.loop}/{self.assembly}")

    def describe(self) -> str:
        return f"stream ({len(self.pieces)} piece(s), {self.loop} loop)"


@dataclass(frozen=True)
class CoiterPlan:
    """Co-iteration of several sparse operands (or of one operand's disjoint pieces) under a
    merge lattice. ``space`` is the shape co-iterated (the root's, or the reduced
    argument's); ``order`` the order its coordinates are visited in; ``mode`` "flat"
    (cursors over whole leaves, keys linearized in ``order``) or "row" (output rows
    outermost, one row cursor per piece) or "product" (two operands whose stored axes are
    each other's broadcast axes, met by intersection: every pair of their entries is an
    output entry — ``A[:, None, :, None] * K[None, :, None, :]``, a Kronecker product —
    walked as nested loops over their stored entries). A universe lattice visits every
    coordinate."""

    root: Node
    operands: tuple[Operand, ...]
    lattice: Lattice
    mode: str
    order: tuple[int, ...]
    space: tuple[sz.Expr, ...]
    assembly: str
    reduction: Reduction | None = None
    exact: bool = False

    def __post_init__(self):
        if self.mode not in ("flat", "row", "product") or self.assembly not in ASSEMBLIES:
            raise InternalError(f"bad co-iteration plan {self.mode}/{self.assembly}")

    @property
    def finite(self) -> tuple[Input, ...]:
        return self.lattice.finite

    @property
    def pieces(self) -> tuple[StreamPiece, ...]:
        return tuple(p for o in self.operands for p in o.pieces)

    def describe(self) -> str:
        names = [o.name for o in self.operands]
        return (f"co-iteration ({self.mode}) of {', '.join(names)} over "
                f"{self.lattice.describe(names)}")


@dataclass(frozen=True)
class ContractPlan:
    """``out[i, j] = Σ_k X[i, k] · Y[k, j]`` row by row with a workspace (Gustavson):
    ``driver`` is iterated row by row (its rows are the output's outer coordinate), each of
    its entries ``(k, x)`` locates row ``k`` of ``located`` and scatters into a dense
    row-sized workspace; the touched coordinates are sorted and appended. ``transposed``:
    the output's storage order is column-major, so the roles are those of ``out.T = Y.T
    @ X.T``."""

    driver: Operand
    located: Operand
    product: Node          # the multiply node (its dtype is the accumulator's)
    reduction: Reduction
    transposed: bool = False
    assembly: str = "append"   # or "dense": the result's own rows are the workspace
    finite: tuple[Input, ...] = ()

    @property
    def pieces(self) -> tuple[StreamPiece, ...]:
        return self.driver.pieces + self.located.pieces

    def describe(self) -> str:
        return (f"contraction (Gustavson, workspace): rows of {self.driver.name} x "
                f"located rows of {self.located.name}")


@dataclass(frozen=True)
class DensePlan:
    """Every output coordinate computed from dense operands (all-dense programs only)."""

    reason: str = ""
    pieces: tuple = ()
    finite: tuple = ()
    reduction: None = None
    assembly: str = "dense"

    def describe(self) -> str:
        return "dense evaluation (every output coordinate)"


Plan = StreamPlan | CoiterPlan | ContractPlan | DensePlan


def capacity_points(plan) -> tuple[tuple[tuple[int, ...], ...], ...]:
    """How the output's capacity (an upper bound on its entries) adds up from the pieces'
    entries (times their broadcast extents): a sum over *points* of the smallest *operand*
    (a sum of pieces) of each. A co-iteration emits only where a lattice point's operands
    are all present, so a point contributes at most its smallest operand (``v * A`` with
    ``v`` a broadcast row: ``A``'s entries, not the broadcast's); any other plan, or a
    universe, contributes every piece."""
    if isinstance(plan, CoiterPlan) and not plan.lattice.universe:
        operands, first = [], 0
        for o in plan.operands:
            operands.append(tuple(range(first, first + len(o.pieces))))
            first += len(o.pieces)
        return tuple(tuple(operands[n] for n in sorted(point)) for point in plan.lattice.points)
    return tuple(((i,),) for i in range(len(plan.pieces)))

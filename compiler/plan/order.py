"""Is a stream in the output's storage order? Decided by a Z3 proof, never by a flag.

For pieces ``P_0 .. P_m`` iterated one after another, each over its leaf's entries in the
leaf's storage order (free broadcast variables innermost), the stream is *ordered* when

    e before e'  ⇒  key(e) <lex key(e')

where ``key`` is the entry's output coordinates permuted into the output's storage order —
the order property as ``spec.order`` states it (the verifier proves the same property of
every operator entry). Both sides are built from the composed forward maps
(``streams.py``), so the proof is about exactly the loops that will run. The query is the
negation, over symbolic sizes (Int ≥ 0), leaf coordinates in bounds and guards true, read
into Z3 by ``spec.sizes_z3``; ``unsat`` proves order. ``sat`` or ``unknown``
(deterministic ``rlimit``) means "not proved": the compiler then uses the sorting fallback,
which is always correct — so an unknown costs speed, never correctness.

Results are cached per stream structure (sizes stay symbolic, so one proof serves all sizes).
"""

from __future__ import annotations

import contextvars
import functools
from contextlib import contextmanager
from dataclasses import dataclass, replace

import z3

from sparsefold.compiler.plan.streams import StreamPiece
from sparsefold.spec import sizes as sz
from sparsefold.spec.order import Entry, arrives_in_order
from sparsefold.spec.sizes_z3 import Reading, serialized

__all__ = ["stream_is_ordered", "stream_is_row_ordered", "prune_guards", "implied_row_guards",
           "RLIMIT",
           "OrderQuery", "GuardQuery", "recording", "decide_order", "decide_implied_guards"]

RLIMIT = 2_000_000  # deterministic resource limit per query (not a wall-clock timeout)


def _reading() -> Reading:
    # Z3's main context: these queries are small, and one context keeps their terms shared
    return Reading("direct", ctx=z3.main_ctx())


def _entry(piece: StreamPiece, tag: str, out_order: tuple[int, ...]) -> Entry:
    """One entry of ``piece`` (its symbols renamed with ``tag``): iteration key (the leaf's
    levels in storage order, then the free variables), output key in storage order, and
    its domain (coordinates in bounds, guard true)."""
    ren = {sz.in_coord(d).name: sz.Sym(f"{sz.in_coord(d).name}{tag}")
           for d in range(piece.leaf.ndim)}
    ren.update({name: sz.Sym(f"{name}{tag}") for name, _ in piece.free})
    iteration, domain = [], []
    fmt = piece.leaf.format
    for level_no in range(piece.leaf.ndim):
        mode = fmt.mode_order[level_no] if not fmt.is_dense else level_no
        v = ren[sz.in_coord(mode).name]
        iteration.append(v)
        domain.append(sz.lt(v, piece.leaf.shape[mode]))
    for name, size in piece.free:
        iteration.append(ren[name])
        domain.append(sz.lt(ren[name], size))
    domain.append(sz.substitute(piece.guard, ren))
    coords = [sz.substitute(c, ren) for c in piece.coords]
    return Entry(tuple(iteration), tuple(coords[m] for m in out_order), tuple(domain))


@functools.lru_cache(maxsize=1024)
@serialized
def _ordered(pieces: tuple[StreamPiece, ...], out_order: tuple[int, ...],
             same_outer: bool = False) -> bool:
    for a in range(len(pieces)):
        for b in range(a, len(pieces)):
            first, second = _entry(pieces[a], "a", out_order), _entry(pieces[b], "b", out_order)
            assumptions, goal = arrives_in_order(first, second, same_source=a == b)
            if same_outer:
                assumptions += (sz.eq(first.key[0], second.key[0]),)
            rd = _reading()
            facts = [rd.pred(x) for x in assumptions]
            negated = z3.Not(rd.pred(goal))
            solver = z3.Solver(ctx=rd.ctx)
            solver.set("rlimit", RLIMIT)
            solver.add(*rd.nonneg, *facts, negated)  # every size and coordinate is >= 0
            if solver.check() != z3.unsat:
                return False
    return True


@dataclass(frozen=True)
class OrderQuery:
    """One order question the planner asked, and the answer it acted on (True: proved, the
    assembly appends; False: it sorts or buckets instead)."""

    pieces: tuple[StreamPiece, ...]
    out_order: tuple[int, ...]
    same_outer: bool   # row order (within an outer coordinate) rather than storage order
    answer: bool


_RECORD: contextvars.ContextVar[list | None] = contextvars.ContextVar(
    "sparsefold_order_queries", default=None)


@contextmanager
def recording():
    """Within the block, every order question the planner asks (:class:`OrderQuery`) and
    every guard a row-driven lowering leaves untested (:class:`GuardQuery`) is appended to
    the list this yields (``verify.kernels`` certifies a kernel from it)."""
    token = _RECORD.set([])
    try:
        yield _RECORD.get()
    finally:
        _RECORD.reset(token)


def _asked(pieces, out_order, same_outer: bool) -> bool:
    answer = _ordered(tuple(pieces), tuple(out_order), same_outer)
    log = _RECORD.get()
    if log is not None:
        log.append(OrderQuery(tuple(pieces), tuple(out_order), same_outer, answer))
    return answer


def decide_order(query: OrderQuery) -> bool:
    """The query proved again, without the cache."""
    return _ordered.__wrapped__(query.pieces, query.out_order, query.same_outer)


def stream_is_ordered(pieces: tuple[StreamPiece, ...], out_order: tuple[int, ...]) -> bool:
    """True when a proof shows the pieces' entries arrive in strictly increasing output
    storage order (so append-only assembly is correct)."""
    return _asked(pieces, out_order, False)


def stream_is_row_ordered(pieces: tuple[StreamPiece, ...], out_order: tuple[int, ...]) -> bool:
    """True when, among entries with the same outer output storage coordinate, arrival order
    is increasing: a stable bucket sort by that coordinate (or iterating it outermost)
    then yields storage order."""
    return _asked(pieces, out_order, True)


@functools.lru_cache(maxsize=4096)
@serialized
def _prune(piece: StreamPiece) -> StreamPiece:
    conj = sz.conjuncts(piece.guard)
    if not conj:
        return piece
    rd = _reading()
    domain = []
    for d, n in enumerate(piece.leaf.shape):
        v = rd.int(sz.in_coord(d))
        domain += [v >= 0, v < rd.int(n)]
    for name, size in piece.free:
        v = rd.int(sz.Sym(name))
        domain += [v >= 0, v < rd.int(size)]
    kept = list(conj)
    for g in conj:
        others = [c for c in kept if c is not g]
        solver = z3.Solver(ctx=rd.ctx)
        solver.set("rlimit", RLIMIT)
        solver.add(*domain, *[rd.int(c) != 0 for c in others], rd.int(g) == 0)
        solver.add(*[v >= 0 for name, v in rd.vars.items() if not name.startswith("_")])
        if solver.check() == z3.unsat:
            kept = others
    return replace(piece, guard=sz.and_(*kept))


def prune_guards(pieces: tuple[StreamPiece, ...]) -> tuple[StreamPiece, ...]:
    """Drop guard conjuncts a proof shows always hold on the leaf's domain (e.g. the
    ``i < n`` of a slice that keeps a whole axis), so loops test only what filters."""
    return tuple(_prune(p) for p in pieces)


@dataclass(frozen=True)
class GuardQuery:
    """A row-driven lowering's decision on one piece: the guards it leaves untested (proved
    implied on every source row it reads) — the rest of the piece's guard it tests."""

    piece: StreamPiece
    row: str
    rows: sz.Expr | None
    implied: tuple[sz.Expr, ...]


def implied_row_guards(piece: StreamPiece, row: str, rows: sz.Expr | None = None
                       ) -> tuple[sz.Expr, ...]:
    """:func:`decide_implied_guards`, cached; recorded (:func:`recording`) for the kernel's
    certificate."""
    implied = _implied(piece, row, rows)
    log = _RECORD.get()
    if log is not None:
        log.append(GuardQuery(piece, row, rows, implied))
    return implied


@functools.lru_cache(maxsize=4096)
def _implied(piece: StreamPiece, row: str, rows: sz.Expr | None) -> tuple[sz.Expr, ...]:
    return decide_implied_guards(piece, row, rows)


@serialized
def decide_implied_guards(piece: StreamPiece, row: str, rows: sz.Expr | None = None
                          ) -> tuple[sz.Expr, ...]:
    """The conjuncts of ``piece.guard`` on its leaf's outer coordinate alone that a Z3 proof
    shows hold on every source row a row-driven loop reads: output row ``row`` in ``[0,
    rows)`` (``rows`` None: unbounded above) where the piece's row guards hold, read back
    through its backward map. A row-driven lowering may leave exactly these untested; every
    other conjunct it tests. (``stack([a, b])[1]`` gives ``a``'s piece the guard false, which
    no output row implies: dropping it as "true on the source row" computed ``a + b``.)"""
    a = piece.leaf.format.mode_order[0]
    source = sz.in_coord(a).name
    row_sym = sz.Sym(row)
    owned = [g for g in sz.conjuncts(piece.out_guard) if _coords(g) <= {row}]
    back = piece.backward[a]
    if not _coords(back) <= {row}:
        return ()
    rd = _reading()
    assumptions = [rd.int(row_sym) >= 0] + [rd.int(g) != 0 for g in owned]
    if rows is not None:
        assumptions.append(rd.int(row_sym) < rd.int(rows))
    implied = []
    for g in sz.conjuncts(piece.guard):
        if not _coords(g) or not _coords(g) <= {source}:
            continue
        claim = sz.substitute(g, {source: back})
        solver = z3.Solver(ctx=rd.ctx)
        solver.set("rlimit", RLIMIT)
        solver.add(*assumptions, rd.int(claim) == 0)
        solver.add(*[v >= 0 for name, v in rd.vars.items() if not name.startswith("_")])
        if solver.check() == z3.unsat:
            implied.append(g)
    return tuple(implied)


def _coords(e: sz.Expr) -> set[str]:
    return {s for s in sz.free_symbols(e) if s.startswith("_")}

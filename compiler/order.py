"""Is a stream in the output's storage order? Decided by a Z3 proof, never by a flag.

For pieces ``P_0 .. P_m`` iterated one after another, each over its leaf's entries in the
leaf's storage order (free broadcast variables innermost), the stream is *ordered* when

    e before e'  ⇒  key(e) <lex key(e')

where ``key`` is the entry's output coordinates permuted into the output's storage order.
Both sides are built from the composed forward maps (``streams.py``), so the proof is about
exactly the loops that will run. The query is the negation, over symbolic sizes (Int ≥ 0),
leaf coordinates in bounds and guards true; ``unsat`` proves order. ``sat`` or ``unknown``
(deterministic ``rlimit``) means "not proved": the compiler then uses the sorting fallback,
which is always correct — so an unknown costs speed, never correctness.

Results are cached per stream structure (sizes stay symbolic, so one proof serves all sizes).
"""

from __future__ import annotations

import functools

import z3

from sparsefold.compiler.streams import StreamPiece
from sparsefold.spec import sizes as sz
from sparsefold.verify.z3_reading import Z3_TABLE, as_int

__all__ = ["stream_is_ordered", "stream_is_row_ordered", "prune_guards", "RLIMIT"]

RLIMIT = 2_000_000  # deterministic resource limit per query (not a wall-clock timeout)

def _term(e: sz.Expr, env: dict[str, z3.ArithRef]):
    """An integer Z3 term, through verify's Z3 reading of the size table."""
    def leaf(x):
        if isinstance(x, sz.Const):
            return z3.IntVal(x.value)
        if x.name not in env:
            env[x.name] = z3.Int(x.name)
        return env[x.name]
    return as_int(sz.read(e, Z3_TABLE, leaf))


def _lex_lt(a, b):
    if not a:
        return z3.BoolVal(False)
    return z3.Or(a[0] < b[0], z3.And(a[0] == b[0], _lex_lt(a[1:], b[1:])))


def _instance(piece: StreamPiece, tag: str, sizes: dict[str, z3.ArithRef], out_order):
    """Z3 terms for one entry of ``piece``: (iteration key, output key, constraints)."""
    ren = {f"_i{d}": sz.Sym(f"_i{d}{tag}") for d in range(piece.leaf.ndim)}
    ren.update({name: sz.Sym(f"{name}{tag}") for name, _ in piece.free})
    env = dict(sizes)
    cons = []
    it = []
    for level_no in range(piece.leaf.ndim):
        mode = piece.leaf.format.mode_order[level_no] if not piece.leaf.format.is_dense \
            else level_no
        v = _term(ren[f"_i{mode}"], env)
        n = _term(piece.leaf.shape[mode], env)
        cons += [v >= 0, v < n]
        it.append(v)
    for name, size in piece.free:
        v = _term(ren[name], env)
        cons += [v >= 0, v < _term(size, env)]
        it.append(v)
    cons.append(_term(sz.substitute(piece.guard, ren), env) != 0)
    coords = [_term(sz.substitute(c, ren), env) for c in piece.coords]
    key = [coords[m] for m in out_order]
    return it, key, cons


@functools.lru_cache(maxsize=1024)
def _ordered(pieces: tuple[StreamPiece, ...], out_order: tuple[int, ...],
             same_outer: bool = False) -> bool:
    sizes: dict[str, z3.ArithRef] = {}
    names = set()
    for p in pieces:
        for e in (*p.leaf.shape, p.guard, *p.coords, *(size for _, size in p.free)):
            names |= {s for s in sz.free_symbols(e) if not s.startswith("_")}
    for s in names:
        sizes[s] = z3.Int(s)
    for a in range(len(pieces)):
        for b in range(a, len(pieces)):
            it1, key1, c1 = _instance(pieces[a], "a", sizes, out_order)
            it2, key2, c2 = _instance(pieces[b], "b", sizes, out_order)
            before = _lex_lt(it1, it2) if a == b else z3.BoolVal(True)
            solver = z3.Solver()
            solver.set("rlimit", RLIMIT)
            solver.add(*[v >= 0 for v in sizes.values()], *c1, *c2, before,
                       z3.Not(_lex_lt(key1, key2)))
            if same_outer:
                solver.add(key1[0] == key2[0])
            if solver.check() != z3.unsat:
                return False
    return True


def stream_is_ordered(pieces: tuple[StreamPiece, ...], out_order: tuple[int, ...]) -> bool:
    """True when a proof shows the pieces' entries arrive in strictly increasing output
    storage order (so append-only assembly is correct)."""
    return _ordered(tuple(pieces), tuple(out_order))


def stream_is_row_ordered(pieces: tuple[StreamPiece, ...], out_order: tuple[int, ...]) -> bool:
    """True when, among entries with the same outer output storage coordinate, arrival order
    is increasing: a stable bucket sort by that coordinate (or iterating it outermost)
    then yields storage order."""
    return _ordered(tuple(pieces), tuple(out_order), True)


@functools.lru_cache(maxsize=4096)
def _prune(piece: StreamPiece) -> StreamPiece:
    from dataclasses import replace
    from sparsefold.compiler.cursors import conjuncts as _conjuncts
    conj = _conjuncts(piece.guard)
    if not conj:
        return piece
    sizes: dict[str, z3.ArithRef] = {}
    exprs = list(piece.leaf.shape) + conj + [size for _, size in piece.free]
    for e in exprs:
        for s in sz.free_symbols(e):
            if not s.startswith("_"):
                sizes[s] = z3.Int(s)
    env = dict(sizes)
    domain = [v >= 0 for v in sizes.values()]
    for d, n in enumerate(piece.leaf.shape):
        v = _term(sz.Sym(f"_i{d}"), env)
        domain += [v >= 0, v < _term(n, env)]
    for name, size in piece.free:
        v = _term(sz.Sym(name), env)
        domain += [v >= 0, v < _term(size, env)]
    kept = list(conj)
    for g in conj:
        others = [c for c in kept if c is not g]
        solver = z3.Solver()
        solver.set("rlimit", RLIMIT)
        solver.add(*domain, *[_term(c, env) != 0 for c in others], _term(g, env) == 0)
        if solver.check() == z3.unsat:
            kept = others
    return replace(piece, guard=sz.and_(*kept))


def prune_guards(pieces: tuple[StreamPiece, ...]) -> tuple[StreamPiece, ...]:
    """Drop guard conjuncts a proof shows always hold on the leaf's domain (e.g. the
    ``i < n`` of a slice that keeps a whole axis), so loops test only what filters."""
    return tuple(_prune(p) for p in pieces)

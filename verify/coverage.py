"""The composed plan covers exactly the program's support (issue 12, part 4), and the
reorder a bucket or scatter assembly performs is a permutation into storage order.

**Coverage.** A plan streams each sparse view as *pieces* (``compiler.plan.streams``): a leaf
input iterated over its stored entries, ``coords`` (the composed forward maps of every shape
operator on the way, free variables for broadcast axes), ``guard`` (which entries survive),
and the same path read backward: ``backward`` (output coordinate -> leaf coordinate) and
``out_guard`` (which output coordinates the piece owns). The program's value at ``k`` is,
by the operators' definitions (the interpreter's gather), the leaf's value at
``backward_p(k)`` for the piece ``p`` whose ``out_guard_p(k)`` holds, else 0. For one view
of shape ``S``, proved with Z3 for all sizes (leaf coordinates in their leaf's bounds):

* ``bounds[p]``: ``guard_p(i) ⇒ 0 <= coords_p(i) < S`` — every write is in the output (a
  stream that accumulates into a reduction's output has only this obligation: its
  entries combine there by the monoid);
* ``injective[p,q]``: two distinct entries (of one piece or of two) never map to one
  output coordinate — no collisions;
* ``round_trip[p]``: ``guard_p(i) ⇒ out_guard_p(coords_p(i)) and backward_p(coords_p(i))
  == i``, and ``0 <= k < S and out_guard_p(k) ⇒ backward_p(k)`` is in the leaf's bounds,
  ``guard_p`` holds there and ``coords_p(backward_p(k)) == k`` (free axes take ``k``'s
  value) — so the coordinates written are exactly those whose defining read is a stored
  entry: the stream's output support *is* the program's (values through elementwise
  layers are 0 where the function's zero algebra says, proved per function).

What it does not cover: the lowering from pieces to loops (the generated C is not read
back), nor the dense operands' reads (located reads go through the same backward maps,
whose bounds the entries' obligations prove one operator at a time).

**Reorder.** A ``bucket`` assembly sorts the kernel's entries stably by their outer output
coordinate (``np.argsort(kind="stable")``); a ``scatter`` assembly places entry ``e``, the
``k``-th entry of row ``r`` to arrive, at ``start(r) + k`` with ``start`` the prefix sum of
the row counts. Both place entries where a counting sort does: with ``cnt(r)`` the number
of entries of row ``r`` (``r < R``), ``start(0) = 0``, ``start(r + 1) = start(r) +
cnt(r)``, ``nnz = start(R)``, the entry ``(r, k)`` with ``k < cnt(r)`` goes to
``start(r) + k``. Proved with Z3 for all ``R`` and all counts: ``start`` is monotone (by
induction: base and step are two queries), and then the placement is *injective*, lands in
``[0, nnz)``, and is *lexicographic*: ``(r, k) <lex (r', k')`` ⇒ slot ``<`` slot'. An
injective map of the ``nnz`` entries into ``[0, nnz)`` is a bijection (pigeonhole: stated,
not proved by Z3), so the reorder is a permutation; and with the kernel's order fact "in
order within each outer coordinate" (the ``order (row)`` obligation) the result is strictly
increasing in storage order.
"""

from __future__ import annotations

import functools

import z3

from sparsefold.spec import sizes as sz
from sparsefold.spec.sizes_z3 import Reading, new_context, serialized
from sparsefold.verify.results import PROVED, REFUTED, UNKNOWN

__all__ = ["prove_coverage", "prove_reorder", "REORDER_STATEMENT", "RLIMIT"]

RLIMIT = 4_000_000  # deterministic resource limit per query (not a wall-clock timeout)

REORDER_STATEMENT = ("placement start(r) + k of the k-th entry of row r (start: prefix sums "
                     "of the row counts) is injective into [0, nnz) and lexicographic in "
                     "(r, k), for all row counts")


@serialized
def _check(rd: Reading, facts: list, goal, assumed: tuple = ()) -> str:
    solver = z3.Solver(ctx=rd.ctx)
    solver.add(*[rd.pred(e) for e in assumed])
    solver.set("rlimit", RLIMIT)
    solver.add(*facts, z3.Not(goal))
    solver.add(*rd.nonneg)  # every size and coordinate is >= 0
    answer = solver.check()
    return PROVED if answer == z3.unsat else REFUTED if answer == z3.sat else UNKNOWN


@serialized
def _entry(rd: Reading, piece, tag: str):
    """Z3 variables of one entry of ``piece`` (leaf coordinates, free variables), its
    domain (in bounds, guard true) and its output coordinates."""
    env = {}
    domain = []
    for d, n in enumerate(piece.leaf.shape):
        v = z3.Int(f"_i{d}{tag}", rd.ctx)
        env[sz.in_coord(d).name] = v
        domain += [v >= 0, v < rd.int(n)]
    for name, size in piece.free:
        v = z3.Int(f"{name}{tag}", rd.ctx)
        env[name] = v
        domain += [v >= 0, v < rd.int(size)]
    domain.append(rd.pred(piece.guard, env))
    return env, domain, [rd.int(c, env) for c in piece.coords]


@functools.lru_cache(maxsize=1024)
@serialized
def prove_coverage(pieces: tuple, shape: tuple, accumulate: bool = False,
                   assumed: tuple = ()) -> tuple[tuple[str, str], ...]:
    """``(obligation, status)`` for the pieces of one view of ``shape`` (see the module).
    ``accumulate``: the pieces' coordinates are a reduction's output coordinates, where
    entries combine by the monoid — only ``bounds`` is an obligation. ``assumed``: size
    equalities the trace assumed (the kernel checks them before it runs)."""
    out: list[tuple[str, str]] = []
    for p, piece in enumerate(pieces):
        rd = Reading("direct")
        env, domain, coords = _entry(rd, piece, "a")
        in_bounds = z3.And(*[z3.And(c >= 0, c < rd.int(n)) for c, n in zip(coords, shape)])
        out.append((f"bounds[{p}]", _check(rd, domain, in_bounds, assumed)))
        if accumulate:
            continue
        out.append((f"round_trip[{p}]", _round_trip(piece, shape, assumed)))
        for q in range(p, len(pieces)):
            rd = Reading("direct")
            env_a, dom_a, co_a = _entry(rd, piece, "a")
            env_b, dom_b, co_b = _entry(rd, pieces[q], "b")
            same = z3.And(*[a == b for a, b in zip(co_a, co_b)])
            if p == q:
                distinct = z3.Or(*[env_a[n] != env_b[n] for n in env_a])
                goal = z3.Implies(distinct, z3.Not(same))
            else:
                goal = z3.Not(same)
            out.append((f"injective[{p},{q}]", _check(rd, dom_a + dom_b, goal, assumed)))
    return tuple(out)


@serialized
def _round_trip(piece, shape, assumed) -> str:
    rd = Reading("direct")
    env, domain, coords = _entry(rd, piece, "a")
    k_env = {sz.out_coord(d).name: c for d, c in enumerate(coords)}
    owned = rd.pred(piece.out_guard, k_env)
    back = [rd.int(b, k_env) for b in piece.backward]
    leaf = [env[sz.in_coord(d).name] for d in range(piece.leaf.ndim)]
    forward = _check(rd, domain, z3.And(owned, *[b == i for b, i in zip(back, leaf)]), assumed)
    if forward != PROVED:
        return forward
    rd = Reading("direct")
    ks = [z3.Int(f"_k{d}", rd.ctx) for d in range(len(shape))]
    k_env = {sz.out_coord(d).name: k for d, k in enumerate(ks)}
    facts = [z3.And(k >= 0, k < rd.int(n)) for k, n in zip(ks, shape)]
    facts.append(rd.pred(piece.out_guard, k_env))
    back = [rd.int(b, k_env) for b in piece.backward]
    i_env = {sz.in_coord(d).name: b for d, b in enumerate(back)}
    for d, c in enumerate(piece.coords):  # a broadcast axis: the free variable is k's
        if isinstance(c, sz.Sym) and c.name in dict(piece.free):
            i_env[c.name] = ks[d]
    leaf_ok = [z3.And(b >= 0, b < rd.int(n)) for b, n in zip(back, piece.leaf.shape)]
    again = [rd.int(c, i_env) for c in piece.coords]
    goal = z3.And(*leaf_ok, rd.pred(piece.guard, i_env),
                  *[a == k for a, k in zip(again, ks)])
    return _check(rd, facts, goal, assumed)


@functools.lru_cache(maxsize=1)
@serialized
def prove_reorder() -> tuple[tuple[str, str], ...]:
    """``(obligation, status)`` of the counting-sort placement (see the module)."""
    ctx = new_context()
    Int = z3.IntSort(ctx)
    cnt = z3.Function("cnt", Int, Int)
    start = z3.Function("start", Int, Int)
    r, r2, k, k2, big_r = (z3.Int(n, ctx) for n in ("r", "r2", "k", "k2", "R"))
    nonneg = z3.ForAll([r], cnt(r) >= 0)
    defined = [start(z3.IntVal(0, ctx)) == 0,
               z3.ForAll([r], z3.Implies(r >= 0, start(r + 1) == start(r) + cnt(r))), nonneg]

    def check(facts, goal) -> str:
        solver = z3.Solver(ctx=ctx)
        solver.set("rlimit", RLIMIT)
        solver.add(*facts, z3.Not(goal))
        answer = solver.check()
        return PROVED if answer == z3.unsat else REFUTED if answer == z3.sat else UNKNOWN

    # monotone: P(d) := start(r) <= start(r + d) for every r >= 0, by induction on d >= 0
    d = z3.Int("d", ctx)
    base = check(defined, z3.ForAll([r], z3.Implies(r >= 0, start(r) <= start(r + 0))))
    step = check(defined + [d >= 0, r >= 0, start(r) <= start(r + d)],
                 start(r) <= start(r + d + 1))
    monotone = z3.ForAll([r, r2], z3.Implies(z3.And(0 <= r, r <= r2), start(r) <= start(r2)))
    placed = [0 <= r, r < big_r, 0 <= k, k < cnt(r), 0 <= r2, r2 < big_r, 0 <= k2,
              k2 < cnt(r2)]
    facts = defined + [monotone] + placed
    slot, slot2 = start(r) + k, start(r2) + k2
    in_range = check(facts, z3.And(0 <= slot, slot < start(big_r)))
    injective = check(facts, z3.Implies(z3.Or(r != r2, k != k2), slot != slot2))
    lexicographic = check(facts, z3.Implies(z3.Or(r < r2, z3.And(r == r2, k < k2)),
                                            slot < slot2))
    return (("start_monotone (induction base)", base), ("start_monotone (induction step)", step),
            ("in_range", in_range), ("injective", injective), ("lexicographic", lexicographic))

"""Every read of a located operand is within the bounds its guards allow (issue 12, part 4).

A kernel reads its *located* operands (dense arrays under elementwise maps, shape operators
and reductions) at coordinates computed by the backward direction of every definition —
what ``compiler.lower.values`` emits: a shape operator's operand at ``backward_p(k)`` under the
piece's guard ``guard_p(k)``, a map's arguments at its coordinates (NumPy broadcasting read
through ``broadcast_to``'s backward map), a reduction's argument over a loop ``0 <= r <
extent`` per reduced axis. Walking the same composition symbolically gives, for every dense
input reached, its coordinates and the conjunction of guards on the way; the obligation
``read[n]`` is

    domain and guards  ⇒  0 <= coordinate_d < size_d   for every axis d,

proved with Z3 for all sizes. The domain is where the kernel reads: for a stream, the
entries of its piece (leaf coordinates in bounds, the piece's guard true; the reads happen
at the layer's coordinates); for a co-iteration, every coordinate of the co-iterated space.

Sparse operands are not read this way: their entries are streamed, and their coordinates are
the coverage obligations' (``verify.coverage``). Not covered: contractions' located rows
(their operands are sparse, read through their cursors).
"""

from __future__ import annotations

import z3

from sparsefold.spec import sizes as sz
from sparsefold.spec.compute import Input, Map, Reduce
from sparsefold.spec.ir import Node, ShapeOp
from sparsefold.spec.ops_axes import BroadcastTo
from sparsefold.spec.sizes_z3 import Reading, serialized
from sparsefold.verify.coverage import RLIMIT
from sparsefold.verify.results import PROVED, REFUTED, UNKNOWN

__all__ = ["located_reads", "prove_reads"]


def _broadcast(arg: Node, out: Node, coords: tuple) -> tuple:
    if tuple(arg.shape) == tuple(out.shape):
        return coords
    piece = BroadcastTo(arg, out.shape).index_map().pieces[0]
    env = sz.out_binding(coords)
    return tuple(sz.substitute(b, env) for b in piece.backward)


def located_reads(node: Node, coords: tuple, guards: tuple = (), stop=frozenset(),
                  counter=None) -> list[tuple[Input, tuple, tuple]]:
    """(dense input, coordinates, guards) of every read ``node``'s value at ``coords``
    makes; nodes in ``stop`` (sparse operands a cursor reads) are not descended."""
    counter = counter if counter is not None else [0]
    if node in stop:
        return []
    if isinstance(node, Input):
        return [(node, coords, guards)] if node.format.is_dense else []
    if isinstance(node, Map):
        return [r for arg in node.args
                for r in located_reads(arg, _broadcast(arg, node, coords), guards, stop,
                                       counter)]
    if isinstance(node, Reduce):
        full, it, extra = [], iter(coords), []
        for d in range(node.arg.ndim):
            if d in node.axes:
                r = sz.Sym(f"_r{counter[0]}")
                counter[0] += 1
                full.append(r)
                extra.append(sz.lt(r, node.arg.shape[d]))
            else:
                full.append(next(it))
        return located_reads(node.arg, tuple(full), guards + tuple(extra), stop, counter)
    if isinstance(node, ShapeOp):
        env = sz.out_binding(coords)
        out = []
        for piece in node.index_map().pieces:
            guard = sz.substitute(piece.guard, env)
            sub = tuple(sz.substitute(b, env) for b in piece.backward)
            out += located_reads(node.operands()[piece.operand], sub, guards + (guard,), stop,
                                 counter)
        return out
    return []  # literals, sizes, coordinates: no read


@serialized
def prove_reads(reads, domain: tuple, assumed: tuple = ()) -> list[tuple[str, str]]:
    """``(read[n] of NAME, status)`` for each read (see the module); ``domain``: predicates
    over the coordinates' symbols."""
    out = []
    for n, (leaf, coords, guards) in enumerate(reads):
        rd = Reading("direct")
        solver = z3.Solver(ctx=rd.ctx)
        solver.set("rlimit", RLIMIT)
        facts = [rd.pred(e) for e in (*assumed, *domain, *guards)]
        goal = z3.And(*[z3.And(rd.int(c) >= 0, rd.int(c) < rd.int(size))
                        for c, size in zip(coords, leaf.shape)], rd.ctx)
        solver.add(*facts, z3.Not(goal), *rd.nonneg)
        answer = solver.check()
        out.append((f"read[{n}] of {leaf.name}",
                    PROVED if answer == z3.unsat else REFUTED if answer == z3.sat else UNKNOWN))
    return out

"""Plan iteration: a sparse-valued program as *streams* of stored entries (DESIGN §3.2).

A stream piece is one input (the *leaf*) iterated in its own storage order, with

* ``coords``: the output coordinates as index expressions over the leaf's coordinates
  (``_i0``, ``_i1``, ...) and free loop variables (``_f0``, ... — broadcasting),
* ``guard``: which leaf entries survive (slices filter),
* ``layers``: elementwise maps applied to the leaf's value on the way, each reading its
  other arguments *located* at the map's coordinates (dense operands, literals).

It is built by composing the operators' **forward** maps and forward guards — the entries in
``spec`` — from the leaves up: concat contributes one piece per operand (in order), slice a
guard, collapse/split/transpose a new coordinate expression, broadcast a free variable.
Every output entry comes from exactly one leaf entry, because forward maps are injective
(proved by verify), so no two pieces write the same coordinate.

What is not a stream (raises :class:`NotAStream`): a value whose fill is not 0 (``A + 1``),
maps of two sparse operands (a merge — planned separately), reductions below the root.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sparsefold.spec import sizes as sz
from sparsefold.spec.compute import Input, Literal, Map, Reduce
from sparsefold.spec.functions import zero_preserving
from sparsefold.spec.ir import Node, ShapeOp
from sparsefold.spec.ops_axes import BroadcastTo
from sparsefold.spec.printer import topological

__all__ = ["StreamPiece", "Layer", "NotAStream", "stream_pieces", "is_locatable",
           "finite_checks"]


class NotAStream(Exception):
    """The program (or a part of it) cannot be computed as a stream of stored entries."""


@dataclass(frozen=True, slots=True)
class Layer:
    """An elementwise map on the stream's value: argument ``driver`` is the stream, the
    others are located at ``coords`` (the map's output coordinates over leaf variables)."""

    node: Map
    driver: int
    coords: tuple[sz.Expr, ...]


@dataclass(frozen=True, slots=True)
class StreamPiece:
    """``coords``/``guard`` are the forward direction (leaf -> output); ``backward`` and
    ``out_guard`` the same path read backward (output coordinates ``_k*`` -> leaf
    coordinates, and which output coordinates this piece owns)."""

    leaf: Input
    coords: tuple[sz.Expr, ...]
    guard: sz.Expr
    free: tuple[tuple[str, sz.Expr], ...] = ()
    layers: tuple[Layer, ...] = field(default=())
    backward: tuple[sz.Expr, ...] = ()
    out_guard: sz.Expr = sz.TRUE


def is_locatable(node: Node) -> bool:
    """True when every value of ``node`` can be computed pointwise from dense inputs and
    literals (no sparse input below it)."""
    return all(not (isinstance(n, Input) and not n.format.is_dense) for n in topological(node))


def _zero_preserving(node: Map, driver: int) -> bool:
    """``f(..., 0 at driver, ...) == 0`` for every value the other arguments can take."""
    others = [a for d, a in enumerate(node.args) if d != driver]
    if all(isinstance(a, Literal) for a in others):
        return zero_preserving(node.fn, [a.dtype if d == driver else a.typed_value()
                                         for d, a in enumerate(node.args)])
    return driver in node.fn.annihilates


def stream_pieces(node: Node) -> tuple[StreamPiece, ...]:
    """The pieces whose entries are exactly the stored entries of ``node`` (fill 0)."""
    if isinstance(node, Input):
        nd = node.ndim
        return (StreamPiece(node, sz.in_coords(nd), sz.TRUE, backward=sz.out_coords(nd)),)
    if isinstance(node, ShapeOp):
        return _through_shape_op(node)
    if isinstance(node, Map):
        return _through_map(node)
    if isinstance(node, Literal):
        raise NotAStream("a scalar is not a sparse stream")
    if isinstance(node, Reduce):
        raise NotAStream("a reduction below the root is not streamed yet")
    raise NotAStream(f"no stream rule for {type(node).__name__}")


def _through_shape_op(node: ShapeOp) -> tuple[StreamPiece, ...]:
    im = node.index_map()
    if im.fill is not None and im.fill != 0:
        raise NotAStream(f"{type(node).__name__} fills with {im.fill!r}, not 0")
    return tuple(_compose(node, piece, sp) for piece in im.pieces
                 for sp in stream_pieces(node.operands()[piece.operand]))


def _compose(node: ShapeOp, piece, sp: StreamPiece) -> StreamPiece:
    """``sp`` (a stream of the piece's operand) seen through the piece's forward map."""
    env = sz.in_binding(sp.coords)
    free, coords = list(sp.free), []
    for d, f in enumerate(piece.forward):
        if f is None:  # broadcast: every coordinate of this axis receives the entry
            name = f"_f{len(free)}"
            free.append((name, node.shape[d]))
            coords.append(sz.Sym(name))
        else:
            coords.append(sz.substitute(f, env))
    guard = sz.and_(sp.guard, sz.substitute(piece.forward_guard, env))
    back = sz.out_binding(piece.backward)
    backward = tuple(sz.substitute(b, back) for b in sp.backward)
    out_guard = sz.and_(piece.guard, sz.substitute(sp.out_guard, back))
    return StreamPiece(sp.leaf, tuple(coords), guard, tuple(free), sp.layers, backward,
                       out_guard)


def _through_map(node: Map) -> tuple[StreamPiece, ...]:
    sparse = [d for d, a in enumerate(node.args) if not is_locatable(a)]
    if len(sparse) != 1:
        raise NotAStream("a map of several sparse operands needs a merge (not streamed)"
                         if sparse else "a map of dense operands is not sparse")
    driver = sparse[0]
    if not _zero_preserving(node, driver):
        raise NotAStream(f"{node.fn.name} does not map the fill value 0 to 0 here")
    arg = node.args[driver]
    inner = stream_pieces(arg)
    if arg.shape != node.shape:  # the stream itself is broadcast to the map's shape
        bcast = BroadcastTo(arg, node.shape)
        (piece,) = bcast.index_map().pieces
        inner = tuple(_compose(bcast, piece, sp) for sp in inner)
    return tuple(StreamPiece(p.leaf, p.coords, p.guard, p.free,
                             p.layers + (Layer(node, driver, p.coords),), p.backward,
                             p.out_guard) for p in inner)


def finite_checks(pieces) -> tuple[Input, ...]:
    """Dense inputs whose values must be finite for the stream to equal the definition:
    ``0 * nan`` is ``nan``, so skipping implicit zeros is exact only for finite operands."""
    need = []
    for p in pieces:
        for layer in p.layers:
            fn = layer.node.fn
            if not fn.annihilation_needs_finite or layer.node.dtype.kind not in "fc":
                continue
            for d, a in enumerate(layer.node.args):
                if d == layer.driver:
                    continue
                for n in topological(a):
                    if isinstance(n, Input) and n.dtype.kind in "fc" and n not in need:
                        need.append(n)
    return tuple(need)

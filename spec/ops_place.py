"""Place: ``x[key] = value`` as a shape operator, the two-piece counterpart of slicing.

``Place(base, value, slices)`` is ``base`` with the region a basic-indexing key selects —
one ``(start, stop, step)`` per axis, normalized as :class:`~sparsefold.spec.ops_index.Slice`
normalizes them to ``(first, step, count)`` — replaced by ``value``, an array of the
region's shape (``count`` per axis)::

    out[k] = value[(k - first) // step]   where every axis has  0 <= dist, dist % |step| == 0,
                                           dist // |step| < count   (dist = ±(k - first))
    out[k] = base[k]                       elsewhere

The two guards are complements, so they partition the output (the verifier proves it, with
the maps inverse and in bounds). Nothing is written anywhere: the front end's
``__setitem__`` makes the array a new program (an integer in the key is a slice of one;
``spec.indexing`` has the region's shape). Setting a region of a sparse array to a sparse
value stores nothing new; the base's entries outside the region are kept as they are.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sparsefold.spec.compute import symbolic_input
from sparsefold.spec.errors import IllFormedProgram
from sparsefold.spec.ir import Node, Piece, ShapeOp, require_equal, show_shape
from sparsefold.spec.ops_index import normalize_slice
from sparsefold.spec.sizes import (
    Sym,
    add,
    and_,
    as_expr,
    eq,
    floordiv,
    in_coords,
    le,
    lt,
    mod,
    mul,
    not_,
    out_coords,
    sub,
)

__all__ = ["Place"]


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Place(ShapeOp):
    """``base`` with ``base[s0, s1, ...] = value``: ``slices`` holds one ``(start, stop,
    step)`` per axis of ``base`` (``None`` entries as in Python); ``value`` has the shape of
    that region and ``base``'s dtype."""

    base: Node
    value: Node
    slices: tuple[tuple[Any, Any, Any], ...]

    def operands(self): return (self.base, self.value)

    def _normalized(self, s):
        return [normalize_slice(n, *t) for n, t in zip(s, self.slices)]

    def check(self, shapes):
        s, v = shapes
        if len(self.slices) != len(s):
            raise IllFormedProgram(
                f"place: expected one (start, stop, step) per axis of shape {show_shape(s)}, "
                f"found {len(self.slices)}")
        for t in self.slices:
            if len(t) != 3:
                raise IllFormedProgram(f"place: expected (start, stop, step), found {t!r}")
            for b in t[:2]:
                if b is not None:
                    as_expr(b)
        region = tuple(count for _, _, count in self._normalized(s))
        if len(v) != len(region):
            raise IllFormedProgram(
                f"place: the value has shape {show_shape(v)}, the region {show_shape(region)}")
        for a, b in zip(region, v):
            require_equal(a, b, "place: the value's shape and the region's")
        if self.base.dtype != self.value.dtype:
            raise IllFormedProgram(f"place: the value has dtype {self.value.dtype}, the array "
                                   f"{self.base.dtype}; cast the value first")

    def shape_rule(self, shapes):
        return shapes[0]

    def _inside(self, norm, coords):
        """The region's guard over ``coords`` and the value coordinate of each axis."""
        guards, where = [], []
        for c, (first, step, count) in zip(coords, norm):
            dist = sub(c, first) if step > 0 else sub(first, c)
            r = abs(step)
            guards += [le(0, dist), eq(mod(dist, r), 0), lt(floordiv(dist, r), count)]
            where.append(floordiv(dist, r))
        return and_(*guards), tuple(where)

    def pieces(self, shapes):
        s, _ = shapes
        norm = self._normalized(s)
        nd = len(s)
        k, i = out_coords(nd), in_coords(nd)
        inside_k, value_at = self._inside(norm, k)
        inside_i, _ = self._inside(norm, i)
        value_to = tuple(add(first, mul(i[d], step)) for d, (first, step, _) in enumerate(norm))
        return (Piece(0, not_(inside_k), k, not_(inside_i), i),
                Piece(1, inside_k, value_at, as_expr(1), value_to))

    @classmethod
    def configurations(cls):
        B, E = Sym("B"), Sym("E")
        for step in (1, -1, 2, -3):
            for start, stop in ((None, None), (B, E), (1, -1)):
                base = symbolic_input("X", "N0")
                probe = normalize_slice(base.shape[0], start, stop, step)[2]
                yield Place(base, symbolic_input("V", probe), ((start, stop, step),))
        base = symbolic_input("X", "N0", "N1")
        slices = ((B, E, 2), (None, None, -1))
        region = tuple(normalize_slice(n, *t)[2] for n, t in zip(base.shape, slices))
        yield Place(base, symbolic_input("V", *region), slices)

    @classmethod
    def examples(cls):
        base = symbolic_input("A", "I", "J")
        slices = ((1, None, 2), (0, 1, 1))
        region = tuple(normalize_slice(n, *t)[2] for n, t in zip(base.shape, slices))
        return [("A[1::2, 0:1] = V  with A: (I, J)",
                 Place(base, symbolic_input("V", *region), slices))]

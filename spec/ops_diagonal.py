"""Shape operators along a diagonal: ``diagonal`` (the diagonal as a new last axis) and
``triangle`` (``tril``/``triu``: a guard keeping one side of a diagonal, zero elsewhere).
Each class is one operator's whole entry (see ``ir.py``)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sparsefold.spec.compute import symbolic_input
from sparsefold.spec.errors import IllFormedProgram
from sparsefold.spec.ir import Node, Piece, RandomRow, ShapeOp, normalize_axis
from sparsefold.spec.sizes import (
    TRUE,
    add,
    eq,
    ge,
    in_coords,
    le,
    maximum,
    minimum,
    out_coords,
    sub,
)

__all__ = ["Diagonal", "Triangle"]


def _int(value, what: str) -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise IllFormedProgram(f"{what} must be an integer, found {value!r}")
    return int(value)


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Diagonal(ShapeOp):
    """``np.diagonal(arg, offset, axis1, axis2)``: axes ``axis1`` and ``axis2`` are removed
    and the diagonal ``arg[.., d + max(0, -offset), .., d + max(0, offset), ..]`` becomes
    the last axis, of length ``max(0, min(n1, n2 - offset))`` (``offset >= 0``) or
    ``max(0, min(n1 + offset, n2))``. Forward: an entry is on it when
    ``i2 - i1 == offset``."""

    arg: Node
    offset: int = 0
    axis1: int = 0
    axis2: int = 1

    def operands(self): return (self.arg,)

    def _axes(self, s) -> tuple[int, int]:
        if len(s) < 2:
            raise IllFormedProgram(f"diagonal: expected an array of 2 or more dimensions, "
                                   f"found {len(s)}")
        a1 = normalize_axis(self.axis1, len(s), what="diagonal axis1")
        a2 = normalize_axis(self.axis2, len(s), what="diagonal axis2")
        if a1 == a2:
            raise IllFormedProgram("diagonal: axis1 and axis2 cannot be the same")
        _int(self.offset, "diagonal offset")
        return a1, a2

    def check(self, shapes):
        self._axes(shapes[0])

    def shape_rule(self, shapes):
        (s,) = shapes
        a1, a2 = self._axes(s)
        off = int(self.offset)
        if off >= 0:
            length = minimum(s[a1], maximum(sub(s[a2], off), 0))
        else:
            length = minimum(maximum(add(s[a1], off), 0), s[a2])
        return tuple(n for d, n in enumerate(s) if d not in (a1, a2)) + (length,)

    def pieces(self, shapes):
        (s,) = shapes
        a1, a2 = self._axes(s)
        off = int(self.offset)
        nd = len(s)
        k, i = out_coords(nd - 1), in_coords(nd)
        rest = iter(k[:-1])
        d = k[-1]
        backward = tuple(add(d, max(0, -off)) if ax == a1 else add(d, max(0, off)) if ax == a2
                         else next(rest) for ax in range(nd))
        forward = tuple(i[ax] for ax in range(nd) if ax not in (a1, a2)) + \
            (sub(i[a1], max(0, -off)),)
        guard = eq(sub(i[a2], i[a1]), off)
        return (Piece(0, TRUE, backward, guard, forward),)

    @classmethod
    def configurations(cls):
        for off in (0, 1, 2, -1, -3):
            yield Diagonal(symbolic_input("X", "N0", "N1"), off, 0, 1)
            yield Diagonal(symbolic_input("X", "N0", "N1"), off, 1, 0)
        for a1, a2 in ((0, 2), (1, 2), (2, 0)):
            yield Diagonal(symbolic_input("X", "N0", "N1", "N2"), 1, a1, a2)

    @classmethod
    def examples(cls):
        return [("diagonal(A, offset=1)  with A: (I, J)",
                 Diagonal(symbolic_input("A", "I", "J"), 1, 0, 1))]

    @classmethod
    def random_row(cls):
        from sparsefold.spec.derived_shape import diagonal
        return RandomRow(
            "diagonal", lambda shape, limits: len(shape) >= 2,
            lambda draw, st, shape, limits: dict(zip(
                ("offset", "axis1", "axis2"),
                (draw(st.integers(-limits.max_side, limits.max_side)),
                 *draw(st.permutations(range(len(shape))))[:2]))),
            lambda x, offset, axis1, axis2: diagonal(x, offset, axis1, axis2),
            "sf.diagonal({0}, offset={offset}, axis1={axis1}, axis2={axis2})")


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Triangle(ShapeOp):
    """``np.tril(arg, k)`` (``upper`` False: keep ``j - i <= k``) or ``np.triu(arg, k)``
    (``upper`` True: keep ``j - i >= k``) over the last two axes ``(i, j)``; elsewhere the
    fill, 0. A guard on the identity map, the same in both directions."""

    arg: Node
    k: int = 0
    upper: bool = False

    def operands(self): return (self.arg,)

    @property
    def fill(self):
        return self.arg.dtype.type(0)

    def check(self, shapes):
        if len(shapes[0]) < 2:
            raise IllFormedProgram(f"{'triu' if self.upper else 'tril'}: expected an array "
                                   f"of 2 or more dimensions, found {len(shapes[0])}")
        _int(self.k, "tril/triu k")

    def shape_rule(self, shapes):
        return shapes[0]

    def _keep(self, c):
        diff = sub(c[-1], c[-2])
        return ge(diff, int(self.k)) if self.upper else le(diff, int(self.k))

    def pieces(self, shapes):
        nd = len(shapes[0])
        k, i = out_coords(nd), in_coords(nd)
        return (Piece(0, self._keep(k), k, self._keep(i), i),)

    @classmethod
    def configurations(cls):
        for upper in (False, True):
            for kk in (0, 1, -2):
                yield Triangle(symbolic_input("X", "N0", "N1"), kk, upper)
            yield Triangle(symbolic_input("X", "N0", "N1", "N2"), 1, upper)

    @classmethod
    def examples(cls):
        return [("tril(A, k=-1)  with A: (I, J)", Triangle(symbolic_input("A", "I", "J"), -1)),
                ("triu(A)  with A: (I, J)", Triangle(symbolic_input("A", "I", "J"), 0, True))]

    @classmethod
    def random_row(cls):
        from sparsefold.spec.derived_shape import tril, triu
        return RandomRow(
            "triangle", lambda shape, limits: len(shape) >= 2,
            lambda draw, st, shape, limits: {"k": draw(st.integers(-3, 3)),
                                             "upper": draw(st.booleans())},
            lambda x, k, upper: (triu if upper else tril)(x, k),
            lambda a, p: f"sf.{'triu' if p['upper'] else 'tril'}({a[0]}, k={p['k']})")

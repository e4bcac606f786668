"""Shape operators that reorder coordinates along one axis: flip and roll. Each class is one
operator's whole entry (see ``ir.py``)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sparsefold.spec.compute import symbolic_input
from sparsefold.spec.errors import IllFormedProgram
from sparsefold.spec.ir import Node, Piece, RandomRow, ShapeOp, normalize_axis
from sparsefold.spec.sizes import (
    TRUE,
    Expr,
    add,
    ge,
    in_coords,
    lt,
    maximum,
    mod,
    out_coords,
    sub,
)

__all__ = ["Flip", "Roll"]


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Flip(ShapeOp):
    """``np.flip(arg, axis)``: coordinate ``c`` on ``axis`` reads ``n - 1 - c``, in both
    directions (the map is its own inverse)."""

    arg: Node
    axis: int

    def operands(self): return (self.arg,)

    def check(self, shapes):
        normalize_axis(self.axis, len(shapes[0]), what="flip axis")

    def shape_rule(self, shapes):
        return shapes[0]

    def pieces(self, shapes):
        (s,) = shapes
        a = normalize_axis(self.axis, len(s))
        k, i = out_coords(len(s)), in_coords(len(s))
        back = k[:a] + (sub(sub(s[a], 1), k[a]),) + k[a + 1:]
        fwd = i[:a] + (sub(sub(s[a], 1), i[a]),) + i[a + 1:]
        return (Piece(0, TRUE, back, TRUE, fwd),)

    @classmethod
    def configurations(cls):
        for r in range(1, 4):
            for a in range(r):
                yield Flip(symbolic_input("X", *(f"N{d}" for d in range(r))), a)

    @classmethod
    def examples(cls):
        return [("flip(A, axis=1)  with A: (I, J)", Flip(symbolic_input("A", "I", "J"), 1))]

    @classmethod
    def random_row(cls):
        from sparsefold.spec.derived_shape import flip
        return RandomRow(
            "flip", lambda shape, limits: 1 <= len(shape) <= limits.max_dims,
            lambda draw, st, shape, limits: {"axis": draw(st.integers(-len(shape),
                                                                      len(shape) - 1))},
            lambda x, axis: flip(x, axis), "sf.flip({0}, axis={axis})")


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Roll(ShapeOp):
    """``np.roll(arg, shift, axis)``: coordinate ``c`` on ``axis`` reads ``(c - shift) mod
    n``. With ``s = shift mod n`` (a non-negative remainder, written without a negative
    dividend) it is two pieces of the same operand, each a shift, as a concat of the last
    ``s`` and the first ``n - s`` elements: ``c < s`` reads ``c + n - s``, the rest
    ``c - s``. Each piece keeps the order of its entries."""

    arg: Node
    shift: int
    axis: int

    def operands(self): return (self.arg,)

    def check(self, shapes):
        normalize_axis(self.axis, len(shapes[0]), what="roll axis")
        if isinstance(self.shift, (bool, np.bool_)) or \
                not isinstance(self.shift, (int, np.integer)):
            raise IllFormedProgram(f"roll: shift must be an integer, found {self.shift!r}")

    def shape_rule(self, shapes):
        return shapes[0]

    def _rotation(self, n: Expr) -> Expr:
        """``shift mod n`` in ``[0, n)`` (0 when n is 0), every dividend non-negative."""
        m = maximum(n, 1)
        s = int(self.shift)
        if s >= 0:
            return mod(s, m)
        return mod(sub(n, mod(-s, m)), m)

    def pieces(self, shapes):
        (s,) = shapes
        a = normalize_axis(self.axis, len(s))
        n = s[a]
        r = self._rotation(n)
        k, i = out_coords(len(s)), in_coords(len(s))
        head = Piece(0, lt(k[a], r), k[:a] + (add(k[a], sub(n, r)),) + k[a + 1:],
                     ge(i[a], sub(n, r)), i[:a] + (sub(i[a], sub(n, r)),) + i[a + 1:])
        tail = Piece(0, ge(k[a], r), k[:a] + (sub(k[a], r),) + k[a + 1:],
                     lt(i[a], sub(n, r)), i[:a] + (add(i[a], r),) + i[a + 1:])
        return (head, tail)

    @classmethod
    def configurations(cls):
        for r in (1, 2):
            for a in range(r):
                for shift in (0, 1, 3, -1, -4):
                    yield Roll(symbolic_input("X", *(f"N{d}" for d in range(r))), shift, a)

    @classmethod
    def examples(cls):
        return [("roll(A, 2, axis=1)  with A: (I, J)",
                 Roll(symbolic_input("A", "I", "J"), 2, 1))]

    @classmethod
    def random_row(cls):
        from sparsefold.spec.derived_shape import roll
        return RandomRow(
            "roll", lambda shape, limits: 1 <= len(shape) <= limits.max_dims,
            lambda draw, st, shape, limits: {
                "shift": draw(st.integers(-2 * limits.max_side, 2 * limits.max_side)),
                "axis": draw(st.integers(-len(shape), len(shape) - 1))},
            lambda x, shift, axis: roll(x, shift, axis),
            "sf.roll({0}, {shift}, axis={axis})")

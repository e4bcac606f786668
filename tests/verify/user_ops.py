"""User-defined shape operators shared by the verify tests: ``Flip``, ``Roll`` (and a
deliberately wrong ``WrongRoll``), ``Diagonal``. Each is one ``ShapeOp`` subclass and
nothing else: interpreted, compiled, proved and differential-tested with no other code.

``flip``, ``roll`` and ``diagonal`` are the front-end functions a user would write with
``sf.apply_operator``.

Not a test module (no ``test_`` prefix); the test files put this folder on ``sys.path``.
"""

from __future__ import annotations

from dataclasses import dataclass

import sparsefold as sf
from sparsefold.spec import sizes as sz
from sparsefold.spec.errors import IllFormedProgram
from sparsefold.spec.ir import Node, Piece, ShapeOp, normalize_axis, require_equal

__all__ = ["Flip", "Roll", "WrongRoll", "Diagonal", "flip", "roll", "diagonal"]


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Flip(ShapeOp):
    """``np.flip(arg, axis)``: coordinate ``c`` on ``axis`` reads ``n - 1 - c``."""

    arg: Node
    axis: int

    def operands(self):
        return (self.arg,)

    def check(self, shapes):
        normalize_axis(self.axis, len(shapes[0]), what="flip axis")

    def shape_rule(self, shapes):
        return shapes[0]

    def pieces(self, shapes):
        (s,) = shapes
        a = normalize_axis(self.axis, len(s))
        k, i = sz.out_coords(len(s)), sz.in_coords(len(s))
        back = k[:a] + (sz.sub(sz.sub(s[a], 1), k[a]),) + k[a + 1:]
        fwd = i[:a] + (sz.sub(sz.sub(s[a], 1), i[a]),) + i[a + 1:]
        return (Piece(0, sz.TRUE, back, sz.TRUE, fwd),)


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Roll(ShapeOp):
    """``np.roll(arg, shift, axis)`` for ``0 <= shift <= n``: element ``c`` moves to
    ``(c + shift) % n``, so output ``k`` reads ``(k + n - shift) % n``."""

    arg: Node
    shift: sz.Expr
    axis: int

    def operands(self):
        return (self.arg,)

    def check(self, shapes):
        normalize_axis(self.axis, len(shapes[0]), what="roll axis")
        v = sz.const_value(self.shift)
        if v is not None and v < 0:
            raise IllFormedProgram(f"roll: expected a shift >= 0, found {v}")

    def shape_rule(self, shapes):
        return shapes[0]

    def requires(self, shapes):
        return sz.le(self.shift, shapes[0][normalize_axis(self.axis, len(shapes[0]))])

    def _maps(self, s):
        a = normalize_axis(self.axis, len(s))
        n = s[a]
        k, i = sz.out_coords(len(s)), sz.in_coords(len(s))
        back = k[:a] + (sz.mod(sz.sub(sz.add(k[a], n), self.shift), n),) + k[a + 1:]
        fwd = i[:a] + (sz.mod(sz.add(i[a], self.shift), n),) + i[a + 1:]
        return back, fwd

    def pieces(self, shapes):
        back, fwd = self._maps(shapes[0])
        return (Piece(0, sz.TRUE, back, sz.TRUE, fwd),)


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class WrongRoll(Roll):
    """A roll whose backward map turns the wrong way (a bug on purpose)."""

    def pieces(self, shapes):
        (s,) = shapes
        _, fwd = self._maps(s)
        a = normalize_axis(self.axis, len(s))
        k = sz.out_coords(len(s))
        back = k[:a] + (sz.mod(sz.add(k[a], self.shift), s[a]),) + k[a + 1:]
        return (Piece(0, sz.TRUE, back, sz.TRUE, fwd),)


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Diagonal(ShapeOp):
    """``np.diagonal`` of a square matrix: ``out[k] = arg[k, k]``."""

    arg: Node

    def operands(self):
        return (self.arg,)

    def check(self, shapes):
        (s,) = shapes
        if len(s) != 2:
            raise IllFormedProgram(f"diagonal: expected a 2-d array, found {len(s)}-d")
        require_equal(s[0], s[1], "diagonal: axes 0 and 1")

    def shape_rule(self, shapes):
        return (shapes[0][0],)

    def pieces(self, shapes):
        k, i = sz.out_coords(1), sz.in_coords(2)
        return (Piece(0, sz.TRUE, (k[0], k[0]), sz.eq(i[0], i[1]), (i[0],)),)


# --- as a user exposes them --------------------------------------------------------------------

def flip(x, axis: int = 0) -> sf.LazyArray:
    return sf.apply_operator(Flip, x, axis=axis)


def roll(x, shift: int, axis: int = 0) -> sf.LazyArray:
    return sf.apply_operator(Roll, x, shift=shift, axis=axis)


def diagonal(x) -> sf.LazyArray:
    return sf.apply_operator(Diagonal, x)

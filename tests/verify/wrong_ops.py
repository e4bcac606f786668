"""Deliberately wrong user operators (issue 12, part 1), shared by
``test_wrong_operators.py`` and the script it runs in a subprocess.

Each is one ``ShapeOp`` subclass whose maps are wrong in one way the compiler must survive:

* ``Interleave`` (two (N, M) arrays to (2N, M), rows alternating) with ``wrong=True``: the
  odd piece's forward map forgets its ``+ 1``, so both pieces map onto the even rows
  (colliding pieces) — the operator of the issue;
* ``Scramble``: a forward map that is not monotone (``(3 i) % n``) and not the inverse of
  its backward map (the identity);
* ``ShiftOut``: forward ``i + shift`` and backward ``k + shift`` — out-of-range maps for
  ``shift >= 1`` (the last entries land past the end; dense reads past the end);
* ``Huge``: a forward map far outside every axis (``i * n * 1000003 + n``);
* ``DivideBySize``: maps that divide by a size that may be 0 (``i // (m - n + 1)`` with
  ``m`` the other operand's length): a division by zero if a kernel evaluated it.

Not a test module (no ``test_`` prefix); the tests put this folder on ``sys.path``.
"""

from __future__ import annotations

from dataclasses import dataclass

from sparsefold.spec import sizes as sz
from sparsefold.spec.ir import Node, Piece, ShapeOp, require_equal

__all__ = ["Interleave", "Scramble", "ShiftOut", "Huge", "DivideBySize", "WRONG"]


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Interleave(ShapeOp):
    """Rows of ``a`` at even, rows of ``b`` at odd output rows; ``wrong``: both at even."""

    a: Node
    b: Node
    wrong: bool = False

    def operands(self):
        return (self.a, self.b)

    def check(self, shapes):
        for d in range(2):
            require_equal(shapes[0][d], shapes[1][d], f"interleave: axis {d}")

    def shape_rule(self, shapes):
        return (sz.mul(2, shapes[0][0]), shapes[0][1])

    def pieces(self, shapes):
        k, i = sz.out_coords(2), sz.in_coords(2)
        half = (sz.floordiv(k[0], 2), k[1])
        odd = sz.mul(2, i[0]) if self.wrong else sz.add(sz.mul(2, i[0]), 1)
        return (Piece(0, sz.eq(sz.mod(k[0], 2), 0), half, sz.TRUE, (sz.mul(2, i[0]), i[1])),
                Piece(1, sz.eq(sz.mod(k[0], 2), 1), half, sz.TRUE, (odd, i[1])))


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Scramble(ShapeOp):
    """1-d: forward ``(3 i) % n`` (not monotone), backward the identity (not its inverse)."""

    arg: Node

    def operands(self):
        return (self.arg,)

    def shape_rule(self, shapes):
        return shapes[0]

    def pieces(self, shapes):
        (n,) = shapes[0]
        k, i = sz.out_coords(1), sz.in_coords(1)
        return (Piece(0, sz.TRUE, k, sz.TRUE, (sz.mod(sz.mul(3, i[0]), n),)),)


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class ShiftOut(ShapeOp):
    """Forward ``i + shift``, backward ``k + shift`` on axis 0: out of range at the end."""

    arg: Node
    shift: int = 1

    def operands(self):
        return (self.arg,)

    def shape_rule(self, shapes):
        return shapes[0]

    def pieces(self, shapes):
        nd = len(shapes[0])
        k, i = sz.out_coords(nd), sz.in_coords(nd)
        return (Piece(0, sz.TRUE, (sz.add(k[0], self.shift),) + k[1:], sz.TRUE,
                      (sz.add(i[0], self.shift),) + i[1:]),)


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Huge(ShapeOp):
    """Forward map far outside the output on axis 0 (the backward map is the identity)."""

    arg: Node

    def operands(self):
        return (self.arg,)

    def shape_rule(self, shapes):
        return shapes[0]

    def pieces(self, shapes):
        nd = len(shapes[0])
        n = shapes[0][0]
        k, i = sz.out_coords(nd), sz.in_coords(nd)
        far = sz.add(sz.mul(sz.mul(i[0], n), 1000003), n)
        return (Piece(0, sz.TRUE, k, sz.TRUE, (far,) + i[1:]),)


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class DivideBySize(ShapeOp):
    """1-d ``x`` and ``y``: output ``x`` with maps ``c // (len(y) - len(x) + 1)`` — the
    identity when the lengths agree, a division by zero when ``y`` is one shorter."""

    x: Node
    y: Node

    def operands(self):
        return (self.x, self.y)

    def shape_rule(self, shapes):
        return shapes[0]

    def pieces(self, shapes):
        (n,), (m,) = shapes
        d = sz.add(sz.sub(m, n), 1)
        k, i = sz.out_coords(1), sz.in_coords(1)
        return (Piece(0, sz.TRUE, (sz.floordiv(k[0], d),), sz.TRUE, (sz.floordiv(i[0], d),)),)


WRONG = {"interleave": Interleave, "scramble": Scramble, "shift_out": ShiftOut, "huge": Huge,
         "divide_by_size": DivideBySize}

"""Shape operators that add, drop, repeat or reorder axes: broadcast_to, expand_dims,
squeeze, permute_dims. Each class is one operator's whole entry (see ``ir.py``)."""

from __future__ import annotations

from dataclasses import dataclass

from sparsefold.spec.errors import IllFormedProgram
from sparsefold.spec.ir import Node, Piece, Shape, ShapeOp, normalize_axis, show_shape
from sparsefold.spec.sizes import TRUE, Const, Expr, and_, as_expr, assume_equal, \
    const_value, definitely_equal, eq, in_coords, out_coords

__all__ = ["BroadcastTo", "ExpandDims", "Squeeze", "PermuteDims", "broadcast_shapes"]


def _broadcast_pair(a: Expr, b: Expr) -> Expr | None:
    if definitely_equal(a, b) or b == Const(1):
        return a
    if a == Const(1):
        return b
    if assume_equal(a, b):  # tracing: equal sizes assumed, checked when the kernel runs
        return a
    return None


def broadcast_shapes(*shapes: Shape) -> Shape:
    """NumPy's broadcasting rule: align on the right; sizes equal, or one of them is 1.

    Symbolic sizes broadcast only when provably equal (``I`` with ``I``) or against 1."""
    ndim = max((len(s) for s in shapes), default=0)
    out: list[Expr] = [Const(1)] * ndim
    for s in shapes:
        for d, size in enumerate(s, start=ndim - len(s)):
            merged = _broadcast_pair(out[d], as_expr(size))
            if merged is None:
                found = ", ".join(show_shape(x) for x in shapes)
                raise IllFormedProgram(
                    f"shapes {found} cannot be broadcast: axis {d - ndim} has sizes "
                    f"{out[d]} and {size}; expected them equal or one of them 1")
            out[d] = merged
    return tuple(out)


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class BroadcastTo(ShapeOp):
    """Repeat ``arg`` to ``target`` by NumPy's rule: new leading axes, and size-1 axes
    stretched. Backward drops the new axes' coordinates and reads coordinate 0 of stretched
    axes; forward leaves those output coordinates free (one input element, many outputs)."""

    arg: Node
    target: tuple[Expr, ...]

    def operands(self): return (self.arg,)

    def check(self, shapes):
        (s,), t = shapes, self.target
        for n in t:
            v = const_value(as_expr(n))
            if v is not None and v < 0:
                raise IllFormedProgram(
                    f"broadcast_to: sizes must be non-negative, found {show_shape(t)}")
        if len(t) < len(s):
            raise IllFormedProgram(
                f"broadcast_to: cannot broadcast shape {show_shape(s)} to fewer dimensions "
                f"{show_shape(t)}")
        for d, size in enumerate(s):
            goal = t[len(t) - len(s) + d]
            if not (definitely_equal(size, goal) or size == Const(1) or
                    assume_equal(size, goal)):
                raise IllFormedProgram(
                    f"broadcast_to: cannot broadcast shape {show_shape(s)} to "
                    f"{show_shape(t)}: axis {d} has size {size}; expected {goal} or 1")

    def shape_rule(self, shapes):
        return self.target

    def _stretched(self, d: int, s: Shape) -> bool:
        goal = self.target[len(self.target) - len(s) + d]
        return s[d] == Const(1) and not definitely_equal(goal, 1)

    def pieces(self, shapes):
        (s,) = shapes
        lead = len(self.target) - len(s)
        k, i = out_coords(len(self.target)), in_coords(len(s))
        backward = tuple(Const(0) if self._stretched(d, s) else k[lead + d]
                         for d in range(len(s)))
        forward = (None,) * lead + tuple(None if self._stretched(d, s) else i[d]
                                         for d in range(len(s)))
        return (Piece(0, TRUE, backward, TRUE, forward),)


def _expand_axis(axis: int, ndim: int) -> int:
    return normalize_axis(axis, ndim + 1, what="expand_dims axis")


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class ExpandDims(ShapeOp):
    """Insert a size-1 axis at ``axis`` (of the output). Backward drops that coordinate;
    forward sets it to 0."""

    arg: Node
    axis: int

    def operands(self): return (self.arg,)

    def check(self, shapes):
        _expand_axis(self.axis, len(shapes[0]))

    def shape_rule(self, shapes):
        (s,) = shapes
        a = _expand_axis(self.axis, len(s))
        return s[:a] + (Const(1),) + s[a:]

    def pieces(self, shapes):
        (s,) = shapes
        a = _expand_axis(self.axis, len(s))
        k, i = out_coords(len(s) + 1), in_coords(len(s))
        return (Piece(0, TRUE, k[:a] + k[a + 1:], TRUE, i[:a] + (Const(0),) + i[a:]),)


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Squeeze(ShapeOp):
    """Drop size-1 axes ``axes``. Backward reads coordinate 0 there; forward drops them."""

    arg: Node
    axes: tuple[int, ...]

    def operands(self): return (self.arg,)

    def _axes(self, s: Shape) -> tuple[int, ...]:
        axes = tuple(normalize_axis(a, len(s), what="squeeze axis") for a in self.axes)
        if len(set(axes)) != len(axes):
            raise IllFormedProgram(f"squeeze: repeated axis in {self.axes}")
        return axes

    def check(self, shapes):
        (s,) = shapes
        for a in self._axes(s):
            if s[a] != Const(1):
                raise IllFormedProgram(
                    f"squeeze: axis {a} of shape {show_shape(s)} has size {s[a]}; expected 1")

    def shape_rule(self, shapes):
        (s,) = shapes
        drop = self._axes(s)
        return tuple(n for d, n in enumerate(s) if d not in drop)

    def pieces(self, shapes):
        (s,) = shapes
        drop = self._axes(s)
        k, i = iter(out_coords(len(s) - len(drop))), in_coords(len(s))
        backward = tuple(Const(0) if d in drop else next(k) for d in range(len(s)))
        forward = tuple(i[d] for d in range(len(s)) if d not in drop)
        guard = and_(*(eq(i[d], 0) for d in drop))
        return (Piece(0, TRUE, backward, guard, forward),)


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class PermuteDims(ShapeOp):
    """Reorder axes: output axis ``d`` is operand axis ``perm[d]`` (``np.transpose``)."""

    arg: Node
    perm: tuple[int, ...]

    def operands(self): return (self.arg,)

    def check(self, shapes):
        (s,) = shapes
        if sorted(self.perm) != list(range(len(s))):
            raise IllFormedProgram(
                f"permute_dims: expected a permutation of 0..{len(s) - 1}, found {self.perm}")

    def shape_rule(self, shapes):
        (s,) = shapes
        return tuple(s[p] for p in self.perm)

    def pieces(self, shapes):
        (s,) = shapes
        k, i = out_coords(len(s)), in_coords(len(s))
        inverse = {p: d for d, p in enumerate(self.perm)}
        backward = tuple(k[inverse[a]] for a in range(len(s)))
        forward = tuple(i[p] for p in self.perm)
        return (Piece(0, TRUE, backward, TRUE, forward),)

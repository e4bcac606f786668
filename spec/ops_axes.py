"""Shape operators that add, drop, repeat or reorder axes: broadcast_to, expand_dims,
squeeze, permute_dims. Each class is one operator's whole entry (see ``ir.py``)."""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from sparsefold.spec.compute import symbolic_input
from sparsefold.spec.errors import IllFormedProgram
from sparsefold.spec.ir import (
    Node,
    Piece,
    RandomRow,
    Shape,
    ShapeOp,
    broadcast_shapes,
    normalize_axis,
    show_shape,
)
from sparsefold.spec.sizes import (
    TRUE,
    Const,
    Expr,
    Sym,
    and_,
    as_expr,
    assume_equal,
    const_value,
    definitely_equal,
    eq,
    in_coords,
    out_coords,
)

__all__ = ["BroadcastTo", "ExpandDims", "Squeeze", "PermuteDims", "broadcast_shapes"]


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

    @classmethod
    def configurations(cls):
        for r in range(0, 3):
            for stretch in itertools.product((False, True), repeat=r):
                for lead in range(0, 3):
                    if r == 0 and lead == 0:
                        continue
                    shape = tuple(1 if s else f"N{d}" for d, s in enumerate(stretch))
                    target = tuple(Sym(f"L{d}") for d in range(lead)) + tuple(
                        Sym(f"T{d}") if s else Sym(f"N{d}") for d, s in enumerate(stretch))
                    yield BroadcastTo(symbolic_input("X", *shape), target)

    @classmethod
    def examples(cls):
        return [("broadcast_to(A, (N, I, J))  with A: (1, J)",
                 BroadcastTo(symbolic_input("A", 1, "J"), tuple(map(Sym, "NIJ"))))]

    @classmethod
    def random_row(cls):
        """Stretch size-1 axes to random sizes, sometimes with a new leading axis."""
        from sparsefold.spec.derived import broadcast_to

        def draw(draw, st, shape, limits):
            target = [draw(st.integers(0, limits.max_side)) if n == 1 else n for n in shape]
            if len(shape) < limits.max_dims and draw(st.booleans()):
                target.insert(0, draw(st.integers(0, limits.max_side)))
            return {"shape": tuple(target)}
        return RandomRow(
            "broadcast_to", lambda shape, limits: 1 in shape or len(shape) < limits.max_dims,
            draw, lambda x, shape: broadcast_to(x, shape), "sf.broadcast_to({0}, {shape})")


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

    @classmethod
    def configurations(cls):
        for r in range(0, 4):
            for a in range(r + 1):
                yield ExpandDims(symbolic_input("X", *(f"N{d}" for d in range(r))), a)

    @classmethod
    def examples(cls):
        return [("expand_dims(A, axis=1)  with A: (I, J)",
                 ExpandDims(symbolic_input("A", "I", "J"), 1))]

    @classmethod
    def random_row(cls):
        from sparsefold.spec.derived import expand_dims
        return RandomRow(
            "expand_dims", lambda shape, limits: len(shape) < limits.max_dims,
            lambda draw, st, shape, limits: {"axis": draw(st.integers(-len(shape) - 1,
                                                                      len(shape)))},
            lambda x, axis: expand_dims(x, axis), "sf.expand_dims({0}, axis={axis})")


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

    @classmethod
    def configurations(cls):
        for r in range(1, 4):
            for ones in itertools.product((False, True), repeat=r):
                if any(ones):
                    shape = tuple(1 if o else f"N{d}" for d, o in enumerate(ones))
                    yield Squeeze(symbolic_input("X", *shape),
                                  tuple(d for d, o in enumerate(ones) if o))

    @classmethod
    def examples(cls):
        return [("squeeze(A, axis=1)  with A: (I, 1, J)",
                 Squeeze(symbolic_input("A", "I", 1, "J"), (1,)))]

    @classmethod
    def random_row(cls):
        from sparsefold.spec.derived import squeeze
        return RandomRow(
            "squeeze", lambda shape, limits: 1 in shape,
            lambda draw, st, shape, limits: {"axis": draw(st.sampled_from(
                [d for d, n in enumerate(shape) if n == 1]))},
            lambda x, axis: squeeze(x, axis), "sf.squeeze({0}, axis={axis})")


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

    @classmethod
    def configurations(cls):
        for r in range(1, 5):
            for perm in itertools.permutations(range(r)):
                yield PermuteDims(symbolic_input("X", *(f"N{d}" for d in range(r))), perm)

    @classmethod
    def examples(cls):
        return [("permute_dims(A, (2, 0, 1))  with A: (I, J, K)",
                 PermuteDims(symbolic_input("A", "I", "J", "K"), (2, 0, 1)))]

    @classmethod
    def random_row(cls):
        from sparsefold.spec.derived import permute_dims
        return RandomRow(
            "permute_dims", lambda shape, limits: 2 <= len(shape) <= limits.max_dims,
            lambda draw, st, shape, limits: {"axes": tuple(draw(st.permutations(
                range(len(shape)))))},
            lambda x, axes: permute_dims(x, axes), "sf.permute_dims({0}, {axes})")

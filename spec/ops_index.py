"""Strided slicing, integer indexing and constant padding.

Slice bounds follow Python/NumPy exactly (negative indices count from the end, out-of-range
bounds are clipped, negative steps walk backwards). They are normalized once, here, to
``(first, step, count)`` per axis; then

* backward: ``c = first + k * step``
* forward guard (step > 0): ``first <= c``, ``(c - first) % step == 0`` and
  ``(c - first) // step < count`` (step < 0: the same with ``first - c`` and ``-step``)
* forward: ``k = (c - first) // step``  (step < 0: ``(first - c) // -step``)

Symbolic bounds (a size symbol such as ``"J"``) are taken to be non-negative.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from sparsefold.spec.compute import symbolic_input
from sparsefold.spec.errors import IllFormedArgument, IllFormedIndex, IllFormedProgram
from sparsefold.spec.ir import Node, Piece, RandomRow, ShapeOp, normalize_axis, show_shape
from sparsefold.spec.sizes import (
    TRUE,
    Const,
    Expr,
    Sym,
    add,
    and_,
    as_expr,
    ceil_div,
    const_value,
    eq,
    floordiv,
    in_coords,
    le,
    lt,
    maximum,
    minimum,
    mod,
    mul,
    out_coords,
    sub,
)

__all__ = ["Slice", "Index", "Pad", "normalize_slice"]


def _bound(c: Any, n: Expr, *, lo: int, hi: Expr) -> Expr:
    """A start/stop index normalized NumPy's way and clipped to ``[lo, hi]``."""
    v = const_value(as_expr(c))
    if v is not None and v < 0:
        return maximum(add(n, v), lo)
    return minimum(as_expr(c), hi)


def normalize_slice(n: Expr, start: Any, stop: Any, step: Any) -> tuple[Expr, int, Expr]:
    """``(first, step, count)`` of ``range(n)[start:stop:step]``, exactly as Python does."""
    if step is None:
        step = 1
    if isinstance(step, (bool, np.bool_)) or not isinstance(step, (int, np.integer)):
        raise IllFormedArgument(f"slice step must be a non-zero integer, found {step!r}")
    step = int(step)
    if step == 0:
        raise IllFormedProgram("slice step must be a non-zero integer, found 0")
    if step > 0:
        first = Const(0) if start is None else _bound(start, n, lo=0, hi=n)
        last = n if stop is None else _bound(stop, n, lo=0, hi=n)
        count = ceil_div(maximum(sub(last, first), 0), step)
    else:
        top = sub(n, 1)
        first = top if start is None else _bound(start, n, lo=-1, hi=top)
        last = Const(-1) if stop is None else _bound(stop, n, lo=-1, hi=top)
        count = ceil_div(maximum(sub(first, last), 0), -step)
    return first, step, count


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Slice(ShapeOp):
    """``arg[start0:stop0:step0, start1:stop1:step1, ...]``: one ``(start, stop, step)``
    triple per axis (``None`` entries as in Python)."""

    arg: Node
    slices: tuple[tuple[Any, Any, Any], ...]

    def operands(self): return (self.arg,)

    def _normalized(self, s):
        return [normalize_slice(n, *t) for n, t in zip(s, self.slices)]

    def check(self, shapes):
        (s,) = shapes
        if len(self.slices) != len(s):
            raise IllFormedProgram(
                f"slice: expected one (start, stop, step) per axis of shape {show_shape(s)}, "
                f"found {len(self.slices)}")
        for t in self.slices:
            if len(t) != 3:
                raise IllFormedProgram(f"slice: expected (start, stop, step), found {t!r}")
            for b in t[:2]:
                if b is not None:
                    as_expr(b)
        self._normalized(s)

    def shape_rule(self, shapes):
        return tuple(count for _, _, count in self._normalized(shapes[0]))

    def pieces(self, shapes):
        (s,) = shapes
        norm = self._normalized(s)
        k, i = out_coords(len(s)), in_coords(len(s))
        backward = tuple(add(first, mul(k[d], step)) for d, (first, step, _) in enumerate(norm))
        guards, forward = [], []
        for d, (first, step, count) in enumerate(norm):
            dist = sub(i[d], first) if step > 0 else sub(first, i[d])
            r = abs(step)
            guards += [le(0, dist), eq(mod(dist, r), 0), lt(floordiv(dist, r), count)]
            forward.append(floordiv(dist, r))
        return (Piece(0, TRUE, backward, and_(*guards), tuple(forward)),)

    @classmethod
    def configurations(cls):
        B, E = Sym("B"), Sym("E")
        for step in (1, -1, 2, -2, 3, -3):
            for start in (None, B, -2):
                for stop in (None, E, -1):
                    yield Slice(symbolic_input("X", "N0"), ((start, stop, step),))
        for steps in ((1, 2), (-1, 3), (2, -2), (-3, 1)):
            yield Slice(symbolic_input("X", "N0", "N1"),
                        ((B, E, steps[0]), (None, None, steps[1])))
        yield Slice(symbolic_input("X", "N0", "N1", "N2"),
                    ((None, E, 2), (B, None, -1), (1, -1, 3)))

    @classmethod
    def examples(cls):
        return [("A[1::2, ::-1]  with A: (I, J)",
                 Slice(symbolic_input("A", "I", "J"), ((1, None, 2), (None, None, -1)))),
                ("A[S:E:3]  with A: (N,) and size symbols S, E",
                 Slice(symbolic_input("A", "N"), (("S", "E", 3),)))]

    @classmethod
    def random_row(cls):
        """NumPy basic indexing (``spec.indexing``): slices, integers (index) and None
        (expand_dims) in one key."""
        from sparsefold.spec.indexing import getitem, key_source
        return RandomRow(
            "slice", lambda shape, limits: len(shape) <= limits.max_dims,
            lambda draw, st, shape, limits: {"key": draw(st.slice_keys(
                shape, allow_new_axes=len(shape) < limits.max_dims))},
            lambda x, key: getitem(x, key),
            lambda a, p: f"{a[0]}[{key_source(p['key'])}]")


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Index(ShapeOp):
    """``arg[..., index, ...]`` at ``axis``: the axis is dropped. Negative indices count from
    the end; an index out of range is ill-formed (symbolic: required ``0 <= index < n``)."""

    arg: Node
    axis: int
    index: Expr

    def operands(self): return (self.arg,)

    def _where(self, s) -> tuple[int, Expr]:
        a = normalize_axis(self.axis, len(s), what="index axis")
        idx, n = as_expr(self.index), s[a]
        v, nv = const_value(idx), const_value(n)
        if v is not None and nv is not None:
            if not -nv <= v < nv:
                raise IllFormedIndex(
                    f"index {v} is out of bounds for axis {a} with size {nv}")
            return a, Const(v % nv)
        if v is not None and v < 0:
            return a, add(n, v)
        return a, idx

    def check(self, shapes):
        a, idx = self._where(shapes[0])
        if const_value(idx) is not None and const_value(shapes[0][a]) is not None:
            return  # _where checked the range
        if self.requires(shapes) == Const(0):  # e.g. index J on an axis of size J
            raise IllFormedIndex(
                f"index {idx} is out of bounds for axis {a} with size {shapes[0][a]}")

    def shape_rule(self, shapes):
        (s,) = shapes
        a, _ = self._where(s)
        return s[:a] + s[a + 1:]

    def requires(self, shapes):
        (s,) = shapes
        a, idx = self._where(s)
        return and_(le(0, idx), lt(idx, s[a]))

    def pieces(self, shapes):
        (s,) = shapes
        a, idx = self._where(s)
        k, i = out_coords(len(s) - 1), in_coords(len(s))
        backward = k[:a] + (idx,) + k[a:]
        return (Piece(0, TRUE, backward, eq(i[a], idx), i[:a] + i[a + 1:]),)

    @classmethod
    def configurations(cls):
        for r in range(1, 4):
            for a in range(r):
                shape = [f"N{d}" for d in range(r)]
                yield Index(symbolic_input("X", *shape), a, Sym("P"))
                yield Index(symbolic_input("X", *shape), a, -1)

    @classmethod
    def examples(cls):
        return [("A[:, P]  with A: (I, J) and a size symbol P",
                 Index(symbolic_input("A", "I", "J"), 1, Sym("P"))),
                ("A[-1]  with A: (I, J)", Index(symbolic_input("A", "I", "J"), 0, Const(-1)))]

    # random programs draw indices through slice's row (an integer in the key)


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Pad(ShapeOp):
    """``np.pad(arg, widths, constant_values=value)``: ``widths`` is one ``(before, after)``
    per axis. Outside the interior the output is ``value`` — the fill value, 0 by default,
    so padding a sparse array stores nothing new."""

    arg: Node
    widths: tuple[tuple[Expr, Expr], ...]
    value: Any = 0

    def operands(self): return (self.arg,)

    @property
    def fill(self):
        return self.arg.dtype.type(self.value)

    def check(self, shapes):
        (s,) = shapes
        if len(self.widths) != len(s):
            raise IllFormedProgram(
                f"pad: expected one (before, after) per axis of shape {show_shape(s)}, "
                f"found {len(self.widths)}")
        for w in self.widths:
            if len(w) != 2:
                raise IllFormedProgram(f"pad: expected (before, after), found {w!r}")
            for x in w:
                v = const_value(as_expr(x))
                if v is not None and v < 0:
                    raise IllFormedProgram(f"pad: widths must be non-negative, found {x}")
        dt = self.arg.dtype
        try:
            with np.errstate(all="raise"):
                cast = np.asarray(self.value, dtype=dt)
                exact = cast == self.value or (np.isnan(cast) and np.isnan(self.value))
        except (TypeError, ValueError, OverflowError, FloatingPointError):
            exact = False
        if not np.all(exact) or np.ndim(self.value) != 0:
            raise IllFormedProgram(
                f"pad: the constant {self.value!r} is not exactly representable in {dt}")

    def shape_rule(self, shapes):
        (s,) = shapes
        return tuple(add(add(b, n), a) for n, (b, a) in zip(s, self.widths))

    def pieces(self, shapes):
        (s,) = shapes
        k, i = out_coords(len(s)), in_coords(len(s))
        guard = and_(*(and_(le(b, k[d]), lt(k[d], add(b, s[d])))
                       for d, (b, _) in enumerate(self.widths)))
        backward = tuple(sub(k[d], b) for d, (b, _) in enumerate(self.widths))
        forward = tuple(add(i[d], b) for d, (b, _) in enumerate(self.widths))
        return (Piece(0, guard, backward, TRUE, forward),)

    @classmethod
    def configurations(cls):
        P0, Q0 = Sym("P0"), Sym("Q0")
        yield Pad(symbolic_input("X", "N0"), ((P0, Q0),))
        yield Pad(symbolic_input("X", "N0"), ((Const(0), Q0),))
        yield Pad(symbolic_input("X", "N0"), ((P0, Const(0)),))
        for r in (2, 3):
            yield Pad(symbolic_input("X", *(f"N{d}" for d in range(r))),
                      tuple((Sym(f"P{d}"), Sym(f"Q{d}")) for d in range(r)))

    @classmethod
    def examples(cls):
        return [("pad(A, ((1, 2), (0, P)))  with A: (I, J)",
                 Pad(symbolic_input("A", "I", "J"),
                     ((Const(1), Const(2)), (Const(0), Sym("P"))), 0))]

    @classmethod
    def random_row(cls):
        """Constant padding of every axis by 0-2 on each side, with 0 or 1."""
        from sparsefold.spec.derived import pad
        return RandomRow(
            "pad", lambda shape, limits: 1 <= len(shape) <= limits.max_dims,
            lambda draw, st, shape, limits: {
                "widths": tuple((draw(st.integers(0, 2)), draw(st.integers(0, 2)))
                                for _ in shape),
                "value": draw(st.sampled_from([0, 0, 1]))},
            lambda x, widths, value: pad(x, widths, constant_values=value),
            "sf.pad({0}, {widths}, constant_values={value})")

"""Concat: the piecewise operator. Operand ``p`` owns output coordinates
``off_p <= k_axis < off_p + n_p`` on the concat axis, with ``off_p = n_0 + ... + n_{p-1}``;
the guards partition the output (the verifier proves it). Stack is expand_dims + concat
(``spec.derived``)."""

from __future__ import annotations

from dataclasses import dataclass

from sparsefold.spec import promotion
from sparsefold.spec.compute import symbolic_input
from sparsefold.spec.errors import IllFormedProgram
from sparsefold.spec.ir import (
    Node,
    Piece,
    RandomRow,
    ShapeOp,
    normalize_axis,
    require_equal,
    show_shape,
)
from sparsefold.spec.sizes import (
    TRUE,
    Const,
    Expr,
    add,
    and_,
    in_coords,
    le,
    lt,
    out_coords,
    sub,
)

__all__ = ["Concat"]


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Concat(ShapeOp):
    """Join ``args`` along ``axis`` (``np.concatenate``); dtypes promote by ``spec.promotion``."""

    args: tuple[Node, ...]
    axis: int

    def operands(self): return self.args

    def check(self, shapes):
        if not shapes:
            raise IllFormedProgram("concat: expected at least one array, found none")
        nd = len(shapes[0])
        if nd == 0:
            raise IllFormedProgram("concat: zero-dimensional arrays cannot be concatenated")
        a = normalize_axis(self.axis, nd, what="concat axis")
        for p, s in enumerate(shapes):
            if len(s) != nd:
                raise IllFormedProgram(
                    f"concat: all arrays must have the same number of dimensions; array 0 "
                    f"has shape {show_shape(shapes[0])} but array {p} has {show_shape(s)}")
            for d in range(nd):
                if d != a:
                    require_equal(shapes[0][d], s[d],
                                  f"concat: axis {d} of array 0 and array {p}")

    def _offsets(self, shapes) -> tuple[Expr, ...]:
        a = normalize_axis(self.axis, len(shapes[0]))
        offs, total = [], Const(0)
        for s in shapes:
            offs.append(total)
            total = add(total, s[a])
        return tuple(offs) + (total,)

    def shape_rule(self, shapes):
        a = normalize_axis(self.axis, len(shapes[0]))
        return shapes[0][:a] + (self._offsets(shapes)[-1],) + shapes[0][a + 1:]

    def result_dtype(self):
        return promotion.result_type(o.dtype for o in self.args)

    def pieces(self, shapes):
        nd = len(shapes[0])
        a = normalize_axis(self.axis, nd)
        offs = self._offsets(shapes)
        k, i = out_coords(nd), in_coords(nd)
        out = []
        for p, s in enumerate(shapes):
            lo, hi = offs[p], offs[p + 1]
            guard = and_(le(lo, k[a]), lt(k[a], hi))
            backward = k[:a] + (sub(k[a], lo),) + k[a + 1:]
            forward = i[:a] + (add(i[a], lo),) + i[a + 1:]
            out.append(Piece(p, guard, backward, TRUE, forward))
        return tuple(out)

    @classmethod
    def configurations(cls):
        for r in range(1, 4):
            for a in range(r):
                for n in (2, 3):
                    args = []
                    for p in range(n):
                        shape = [f"N{d}" for d in range(r)]
                        shape[a] = f"M{p}"
                        args.append(symbolic_input("XYZ"[p], *shape))
                    yield Concat(tuple(args), a)

    @classmethod
    def examples(cls):
        return [("concat([A, B], axis=1)  with A: (I, J), B: (I, K)",
                 Concat((symbolic_input("A", "I", "J"), symbolic_input("B", "I", "K")), 1))]

    @classmethod
    def random_row(cls):
        """Concat with one more operand that agrees off a random axis."""
        from sparsefold.spec.derived import concat

        def draw(draw, st, shape, limits):
            axis = draw(st.integers(-len(shape), len(shape) - 1))
            other = list(shape)
            other[axis] = draw(st.integers(0, limits.max_side))
            return {"axis": axis, "operands": [tuple(other)]}
        return RandomRow("concat", lambda shape, limits: 1 <= len(shape) <= limits.max_dims,
                         draw, lambda x, y, axis: concat([x, y], axis),
                         "sf.concat([{0}, {1}], axis={axis})")

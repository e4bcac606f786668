"""Collapse and split — the two halves of reshape — and reshape as a chain of them.

Both are row-major (C order), matching ``np.reshape``. With sizes ``n_a .. n_{b-1}`` and
strides ``st_m = n_{m+1} * ... * n_{b-1}``:

* collapse ``(i_a, ..., i_{b-1}) -> k``:  ``k = Σ i_m * st_m``;  ``i_m = (k // st_m) % n_m``
  (the outermost needs no ``% n_a`` because ``k < Π n``).
* split is the same pair of maps read in the other direction.
"""

from __future__ import annotations

from dataclasses import dataclass

from sparsefold.spec.compute import symbolic_input
from sparsefold.spec.errors import IllFormedProgram
from sparsefold.spec.ir import Node, Piece, RandomRow, Shape, ShapeOp, normalize_axis, show_shape
from sparsefold.spec.sizes import (
    TRUE,
    Const,
    Expr,
    Op,
    Sym,
    add,
    as_expr,
    assume_equal,
    assumed_equal,
    const_value,
    definitely_equal,
    floordiv,
    in_coords,
    mod,
    mul,
    out_coords,
    product,
)

__all__ = ["Collapse", "Split", "reshape_steps", "row_major_split", "row_major_join"]


def _equal(a: Expr, b: Expr) -> bool:
    """Equal sizes: on normal forms, or assumed equal by the trace (``sizes.assuming``: a
    precondition the kernel checks before it runs, e.g. ``n0 == 2`` of a tensordot of a
    traced axis with a constant one)."""
    return definitely_equal(a, b) or assume_equal(a, b)


def _known_equal(a: Expr, b: Expr) -> bool:
    """Equal sizes, asking only (a probe must not make an assumption)."""
    return definitely_equal(a, b) or assumed_equal(a, b)


def row_major_join(coords: tuple[Expr, ...], sizes: tuple[Expr, ...]) -> Expr:
    """``Σ coords[m] * Π sizes[m+1:]`` (Horner form)."""
    k: Expr = Const(0)
    for c, n in zip(coords, sizes):
        k = add(mul(k, n), c)
    return k


def row_major_split(k: Expr, sizes: tuple[Expr, ...]) -> tuple[Expr, ...]:
    """The inverse of :func:`row_major_join` for ``0 <= k < Π sizes``."""
    out = []
    for m in range(len(sizes)):
        stride = product(sizes[m + 1:])
        q = floordiv(k, stride)
        out.append(q if m == 0 else mod(q, sizes[m]))
    return tuple(out)


def _span(start: int, stop: int, ndim: int) -> tuple[int, int]:
    if not (isinstance(start, int) and isinstance(stop, int)) or not 0 <= start < stop <= ndim:
        raise IllFormedProgram(
            f"collapse: expected 0 <= start < stop <= {ndim} (a non-empty run of adjacent "
            f"axes), found start={start}, stop={stop}")
    return start, stop


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Collapse(ShapeOp):
    """Merge adjacent axes ``start .. stop-1`` into one axis, row-major."""

    arg: Node
    start: int
    stop: int

    def operands(self): return (self.arg,)

    def check(self, shapes):
        _span(self.start, self.stop, len(shapes[0]))

    def shape_rule(self, shapes):
        (s,) = shapes
        a, b = self.start, self.stop
        return s[:a] + (product(s[a:b]),) + s[b:]

    def pieces(self, shapes):
        (s,) = shapes
        a, b = self.start, self.stop
        k, i = out_coords(len(s) - (b - a) + 1), in_coords(len(s))
        backward = k[:a] + row_major_split(k[a], s[a:b]) + k[a + 1:]
        forward = i[:a] + (row_major_join(i[a:b], s[a:b]),) + i[b:]
        return (Piece(0, TRUE, backward, TRUE, forward),)

    @classmethod
    def configurations(cls):
        for r in range(1, 5):
            for a in range(r):
                for b in range(a + 1, r + 1):
                    yield Collapse(symbolic_input("X", *_sizes(r)), a, b)

    @classmethod
    def examples(cls):
        return [("reshape(A, (I*J, K))  with A: (I, J, K)",
                 Collapse(symbolic_input("A", "I", "J", "K"), 0, 2))]

    @classmethod
    def random_row(cls):
        """Reshape to a random target (``spec.derived.reshape``: collapses and splits)."""
        from sparsefold.spec.derived import reshape
        return RandomRow(
            "reshape", lambda shape, limits: len(shape) <= limits.max_dims,
            lambda draw, st, shape, limits: {"shape": draw(st.reshape_targets(
                shape, max_dims=limits.max_dims, max_side=limits.max_side))},
            lambda x, shape: reshape(x, shape), "{0}.reshape({shape})")


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Split(ShapeOp):
    """Split ``axis`` into axes of ``sizes`` (their product must equal its size), row-major."""

    arg: Node
    axis: int
    sizes: tuple[Expr, ...]

    def operands(self): return (self.arg,)

    def check(self, shapes):
        (s,) = shapes
        a = normalize_axis(self.axis, len(s), what="split axis")
        if not self.sizes:
            raise IllFormedProgram("split: expected at least one output size, found none")
        for n in self.sizes:
            v = const_value(n)
            if v is not None and v < 0:
                raise IllFormedProgram(f"split: sizes must be non-negative, found {n}")
        if not _equal(product(self.sizes), s[a]):
            raise IllFormedProgram(
                f"split: axis {a} of shape {show_shape(s)} has size {s[a]}; expected it to "
                f"equal the product of {show_shape(self.sizes)} = {product(self.sizes)}")

    def shape_rule(self, shapes):
        (s,) = shapes
        a = normalize_axis(self.axis, len(s))
        return s[:a] + tuple(self.sizes) + s[a + 1:]

    def pieces(self, shapes):
        (s,) = shapes
        a, m = normalize_axis(self.axis, len(s)), len(self.sizes)
        k, i = out_coords(len(s) + m - 1), in_coords(len(s))
        backward = k[:a] + (row_major_join(k[a:a + m], self.sizes),) + k[a + m:]
        forward = i[:a] + row_major_split(i[a], self.sizes) + i[a + 1:]
        return (Piece(0, TRUE, backward, TRUE, forward),)

    @classmethod
    def configurations(cls):
        for r in range(1, 4):
            for a in range(r):
                for m in (1, 2, 3) if r < 3 else (2, 3):
                    parts = tuple(Sym(f"S{j}") for j in range(m))
                    shape = list(_sizes(r))
                    shape[a] = product(parts)
                    yield Split(symbolic_input("X", *shape), a, parts)

    @classmethod
    def examples(cls):
        i, j = Sym("I"), Sym("J")
        return [("reshape(A, (I, J, K))  with A: (I*J, K)",
                 Split(symbolic_input("A", i * j, "K"), 0, (i, j)))]

    # random programs draw splits through collapse's reshape row


def _sizes(rank: int) -> tuple[str, ...]:
    """Distinct size symbols ``N0 .. N{rank-1}`` for a configuration's operand."""
    return tuple(f"N{d}" for d in range(rank))


# ---------------------------------------------------------------------------------------------
# reshape = a chain of collapses and splits

def _resolve_target(shape: Shape, target: tuple) -> tuple[Expr, ...]:
    """Replace one ``-1`` by the size that keeps the element count (NumPy's rule)."""
    target = tuple(as_expr(t) for t in target)
    holes = [d for d, t in enumerate(target) if t == Const(-1)]
    if len(holes) > 1:
        raise IllFormedProgram(f"reshape: can only specify one unknown dimension, found {target}")
    for t in target:
        v = const_value(t)
        if v is not None and v < -1:
            raise IllFormedProgram(f"reshape: sizes must be >= 0 or -1, found {t}")
    total = product(shape)
    if holes:
        h = holes[0]
        known = product(target[:h] + target[h + 1:])
        tv, kv = const_value(total), const_value(known)
        if tv is not None and kv is not None:
            if kv == 0 or tv % kv:
                raise IllFormedProgram(
                    f"reshape: cannot reshape array of size {tv} into shape "
                    f"{show_shape(target)}")
            fill: Expr = Const(tv // kv)
        else:
            fill = _exact_quotient(total, known)
            if fill is None:
                raise IllFormedProgram(
                    f"reshape: cannot infer -1 in {show_shape(target)} from size {total}")
        target = target[:h] + (fill,) + target[h + 1:]
    if not _equal(product(target), total):
        raise IllFormedProgram(
            f"reshape: cannot reshape array of shape {show_shape(shape)} (size {total}) into "
            f"shape {show_shape(target)} (size {product(target)})")
    return target


def _exact_quotient(total: Expr, known: Expr) -> Expr | None:
    """``total / known`` when ``known`` is a product of factors of ``total`` (symbolic)."""
    factors = list(_factors(total))
    for f in _factors(known):
        if f in factors:
            factors.remove(f)
        else:
            return None
    return product(factors)


def _factors(e: Expr) -> tuple[Expr, ...]:
    if isinstance(e, Op) and e.op == "mul":
        return _factors(e.args[0]) + _factors(e.args[1])
    return () if e == Const(1) else (e,)


def reshape_steps(shape: Shape, target: tuple) -> tuple[tuple[Expr, ...], list[tuple]]:
    """Plan ``reshape(shape -> target)`` as collapse/split steps.

    Returns the resolved target and a list of steps applied left to right:
    ``("collapse", start, stop)``, ``("split", axis, sizes)``, ``("squeeze", axis)`` (drop
    a size-1 axis) and ``("expand", axis, count)`` (insert size-1 axes). Axes are grouped
    where products of consecutive input and output sizes agree, so ``(I, J, K) -> (I, J*K)``
    is one collapse rather than collapse-everything-then-split.
    """
    target = _resolve_target(shape, target)
    groups = _groups(shape, target)
    steps: list[tuple] = []
    out_axis = 0
    for (ia, ib), (oa, ob) in groups:
        # this group occupies axes out_axis .. out_axis + (ib - ia) - 1 of the current array
        width = ib - ia
        if width > 1:
            steps.append(("collapse", out_axis, out_axis + width))
        if width == 0:  # no input axes: insert the (size-1) output axes
            steps.append(("expand", out_axis, ob - oa))
        elif ob == oa:  # no output axes: the (size-1) collapsed axis goes away
            steps.append(("squeeze", out_axis))
        elif ob - oa != 1:
            steps.append(("split", out_axis, target[oa:ob]))
        out_axis += ob - oa
    return target, steps


def _groups(shape: Shape, target: tuple[Expr, ...]):
    """Pair runs of input axes with runs of output axes having equal products."""
    if all(const_value(n) is not None for n in shape + target) and \
            0 in [const_value(n) for n in shape]:
        return [((0, len(shape)), (0, len(target)))]  # empty arrays: one group
    groups = []
    ia = oa = 0
    while ia < len(shape) or oa < len(target):
        ib, ob = ia, oa
        pin, pout = Const(1), Const(1)
        while True:
            if ib > ia and ob > oa and _known_equal(pin, pout):
                break
            if ib == len(shape) and ob == len(target):
                break
            grow_in = ob == len(target) or (ib < len(shape) and _smaller(pin, pout))
            if grow_in and ib < len(shape):
                pin = mul(pin, shape[ib])
                ib += 1
            else:
                pout = mul(pout, target[ob])
                ob += 1
        # trailing size-1 output axes belong to this group (keeps groups non-empty)
        while ob < len(target) and target[ob] == Const(1) and ib == len(shape):
            ob += 1
        if not _known_equal(pin, pout):
            return [((0, len(shape)), (0, len(target)))]  # no finer grouping: one group
        groups.append(((ia, ib), (oa, ob)))
        ia, oa = ib, ob
    return groups


def _smaller(a: Expr, b: Expr) -> bool:
    va, vb = const_value(a), const_value(b)
    if va is not None and vb is not None:
        return va < vb
    return len(_factors(a)) < len(_factors(b)) or (va is not None and vb is None)

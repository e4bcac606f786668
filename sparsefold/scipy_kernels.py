"""The compiled kernels behind ``sparsefold.scipy``: block layouts and ``tril``/``triu``.

Each is an ``sf.jit`` function, cached per layout (and output format), so a layout is traced
and compiled once and then serves every size, dtype and format of its blocks (the JIT keys
its kernels by those). Two-block ``hstack``/``vstack`` of csr, csc or coo arrays are among
sparsefold's prebuilt kernels (``sparsefold/prebuilt.py``): their first call compiles
nothing.

``Triangle`` is the shape operator ``tril``/``triu`` need: a guard and nothing else, written
as one ``ShapeOp`` entry as a user would (docs/verification.md), so it is interpreted,
compiled and proved like a built-in operator.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from sparsefold import functions as F
from sparsefold.jit import JitFunction, jit
from sparsefold.lazy import LazyArray
from sparsefold.spec import sizes as sz
from sparsefold.spec.errors import IllFormedProgram
from sparsefold.spec.ir import Node, Piece, ShapeOp
from sparsefold.spec.ops_index import Pad

__all__ = ["Triangle", "layout_kernel", "triangle_kernel"]


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Triangle(ShapeOp):
    """``tril(arg, k)`` (``lower``) or ``triu(arg, k)`` of a matrix: entry ``(i, j)`` is kept
    where ``j <= i + k`` (lower) or ``j >= i + k`` (upper); every other entry is 0. ``k`` is
    any int (negative: below the main diagonal)."""

    arg: Node
    k: int
    lower: bool
    fill = 0  # the dropped triangle reads as zeros (implicit entries of a sparse result)

    def operands(self):
        return (self.arg,)

    def check(self, shapes):
        if len(shapes[0]) != 2:
            raise IllFormedProgram(f"triangle: expected a 2-d array, found "
                                   f"{len(shapes[0])}-d")
        if isinstance(self.k, bool) or not isinstance(self.k, int):
            raise IllFormedProgram(f"triangle: k must be an int, found {self.k!r}")

    def shape_rule(self, shapes):
        return shapes[0]

    def _kept(self, c):
        bound = sz.add(c[0], self.k)
        return sz.le(c[1], bound) if self.lower else sz.ge(c[1], bound)

    def pieces(self, shapes):
        k, i = sz.out_coords(2), sz.in_coords(2)
        return (Piece(0, self._kept(k), k, self._kept(i), i),)


def _pad_columns(x: LazyArray, before, after) -> LazyArray:
    """``x`` with ``before`` and ``after`` zero columns (size expressions): a Pad node built
    directly, since ``sf.pad`` takes only ints and symbol names as widths."""
    if sz.const_value(sz.as_expr(before)) == 0 and sz.const_value(sz.as_expr(after)) == 0:
        return x
    widths = ((sz.as_expr(0), sz.as_expr(0)), (sz.as_expr(before), sz.as_expr(after)))
    return LazyArray(Pad(x.node, widths, 0), x.bindings)


def _size_sum(sizes) -> sz.Expr:
    total = sz.as_expr(0)
    for s in sizes:
        total = sz.add(total, s)
    return total


@functools.lru_cache(maxsize=512)
def layout_kernel(positions: tuple[tuple[int, int], ...], rows: int, cols: int,
                  out: str) -> JitFunction:
    """The block matrix with the given blocks at ``positions`` of a ``rows`` x ``cols`` grid
    (arguments in that order; every other cell is a zero block): each block row is its blocks
    side by side, a run of empty cells is zero columns padded onto the block before or after
    it (as wide as the column's blocks), rows without blocks are empty, then the rows are
    stacked."""
    def block_matrix(*blocks):
        at = dict(zip(positions, blocks))
        width = {}
        for (_, j), b in at.items():
            width.setdefault(j, b.shape[1])

        def cols_between(lo, hi):
            return _size_sum(width.get(j, 0) for j in range(lo, hi))

        stacked = []
        for i in range(rows):
            present = [(j, at[(i, j)]) for j in range(cols) if (i, j) in at]
            if not present:
                continue  # a block row without blocks has no rows
            pieces = []
            for n, (j, b) in enumerate(present):
                start = present[n - 1][0] + 1 if n else 0
                end = cols if n == len(present) - 1 else j + 1
                pieces.append(_pad_columns(b, cols_between(start, j), cols_between(j + 1, end)))
            stacked.append(F.concat(pieces, axis=1) if len(pieces) > 1 else pieces[0])
        return F.concat(stacked, axis=0) if len(stacked) > 1 else stacked[0]
    block_matrix.__name__ = f"block_matrix_{rows}x{cols}"
    return jit(block_matrix, out=out)


@functools.lru_cache(maxsize=256)
def triangle_kernel(k: int, lower: bool, out: str) -> JitFunction:
    def triangle(a):
        return F.apply_operator(Triangle, a, k=k, lower=lower)
    triangle.__name__ = f"{'tril' if lower else 'triu'}_{k}"
    return jit(triangle, out=out)

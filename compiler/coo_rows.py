"""A 2-d COO leaf read as rows, for the row-driven loop (``lower_stream.lower_rows``).

COO storage reaches a kernel in storage order: the runtime sorts it, or checks it, or
trusts scipy's canonical flag (``storage/levels.py``). Its rows are then runs of equal row
coordinates, so one cursor walking the leaf once finds each row's run where the previous
one ended: no search, no ``pos`` array, and the comparison that ends a run is also the
range check of the row coordinates it takes. Entries no row takes are range-checked after
the loop, so every stored row coordinate is checked; under a stale canonical flag (rows
out of order) some entries are not copied, and the result stays sound storage.
"""

from __future__ import annotations

from sparsefold.compiler.bounds import read_coordinate
from sparsefold.compiler.loops import INT, Bin, Expr, Lit, Load, Var, cast
from sparsefold.compiler.lowering import Lowering
from sparsefold.compiler.streams import StreamPiece

__all__ = ["coo_run_leaf", "CooRun"]


def coo_run_leaf(piece: StreamPiece) -> bool:
    """Is the piece's leaf 2-d COO (a non-unique outer coordinate, one inner coordinate per
    entry)?"""
    return piece.leaf.format.kinds == ("pos", "one") and piece.leaf.ndim == 2


class CooRun:
    """The cursor over one COO leaf: entries ``[q, end)`` are still unread. ``skip``: the
    loop may pass over source rows (a row guard, fewer output rows than source rows), whose
    entries are stepped over. Constructing it emits the cursor's start."""

    def __init__(self, low: Lowering, piece: StreamPiece, *, skip: bool):
        b = low.b
        self.leaf = piece.leaf
        arrays = low.leaf(piece.leaf)
        self.crd0, self.skip = arrays.crd[0], skip
        self.q, self.end = b.fresh("run_q"), b.fresh("run_end")
        with b.block(f"{self.leaf.name} ({self.leaf.format}) read as rows: one cursor over "
                     f"its entries, each row a run of equal row coordinates"):
            b.assign(self.q, Load(arrays.pos[0], Lit("0", INT)))
            b.assign(self.end, Load(arrays.pos[0], Lit("1", INT)))

    def row(self, low: Lowering, src: Var) -> tuple[Var, Expr]:
        """Advance over source row ``src`` (in range: the loop's own row): its run is
        ``[start, q)``, the ``(start, end)`` returned."""
        b, q, crd0 = low.b, self.q, self.crd0
        more = Bin("<", q, self.end)
        if self.skip:  # unsigned: a negative coordinate is never stepped over
            with b.while_(Bin("and", more, Bin("<", cast("uint64_t", Load(crd0, q)),
                                               cast("uint64_t", src)))):
                b.assign(q, q + 1)
        start = b.fresh("run_start")
        b.assign(start, q)
        with b.while_(Bin("and", more, Bin("==", Load(crd0, q), src))):
            b.assign(q, q + 1)
        return start, q

    def close(self, low: Lowering) -> None:
        """After the loop: the entries no row took have their row coordinate checked (out of
        range: reported; in range: rows the loop passed over, or rows out of order under a
        stale flag)."""
        b = low.b
        with b.block(f"{self.leaf.name}: the entries no row took have their row coordinate "
                     f"checked"):
            v, t = b.fresh("range_v"), b.fresh("t")
            with b.loop(t, self.q, self.end):
                read_coordinate(b, low.sites, self.leaf, 0, self.crd0, t, v)

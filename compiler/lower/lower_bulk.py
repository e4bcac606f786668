"""Bulk copies (DESIGN §3.3): whole leaves copied one after another when they are proved to
arrive in storage order with shifted coordinates (vstack of CSR or COO) — values and
coordinates by ``memcpy``-like copies, row starts by one pass over each leaf's ``pos``. A
compressed leaf copied whole into COO gets its row coordinates expanded from ``pos``
(``coo_rows.expand_rows``)."""

from __future__ import annotations

from sparsefold.compiler.emit.loops import INT, Bin, Lit, Load, Memcpy, cast
from sparsefold.compiler.lower.bounds import copy_coordinates
from sparsefold.compiler.lower.coo_rows import expand_rows
from sparsefold.compiler.lower.lowering import Lowering
from sparsefold.compiler.lower.outputs import AppendOut
from sparsefold.compiler.lower.values import index
from sparsefold.compiler.plan.facts import bulk_shifts, rows_expanded

__all__ = ["lower_bulk"]


def lower_bulk(low: Lowering, pieces, fmt, asm: AppendOut) -> None:
    """Whole leaves copied one after another (vstack of CSR or COO): values and coordinates
    by bulk copies, row starts by one pass over the leaf's ``pos`` — the plan scipy's own
    stack uses, valid because the pieces were proved to arrive in storage order."""
    b, kinds, ix = low.b, fmt.kinds, asm.ix
    count, base, t = b.fresh("seg_len"), b.fresh("seg_start"), b.fresh("t")
    n, cur = asm.n, asm.cur
    for k, piece in enumerate(pieces):
        leaf = piece.leaf
        arrays = low.leaf(leaf)
        shifts = [index(s) for s in bulk_shifts(piece, fmt, asm.dtype)]
        with b.block(f"piece {k}: all of {leaf.name} ({leaf.format}), coordinates shifted by "
                     f"({', '.join(str(sz_) for sz_ in bulk_shifts(piece, fmt, asm.dtype))})"):
            if kinds == ("full", "pos"):
                pos = arrays.pos[1]
                rows = index(leaf.shape[leaf.format.mode_order[0]])
                b.assign(base, Load(pos, Lit("0", INT)))
                b.comment("rows before this piece are empty; then this piece's row starts")
                with b.while_(Bin("<", cur, shifts[0])):
                    b.assign(cur, cur + 1)
                    b.store(asm.pos[1], cur, cast(ix, n))
                with b.loop(t, 0, rows):
                    b.store(asm.pos[1], Bin("+", Bin("+", shifts[0], t), Lit("1", INT)),
                            cast(ix, Bin("+", n, Bin("-", Load(pos, t + 1), base))))
                b.assign(cur, Bin("+", shifts[0], rows))
                b.assign(count, Bin("-", Load(pos, rows), base))
                levels = [(1, shifts[1])]
            elif rows_expanded(leaf.format.kinds, kinds):
                pos = arrays.pos[1]
                rows = index(leaf.shape[leaf.format.mode_order[0]])
                b.assign(base, Load(pos, Lit("0", INT)))
                b.assign(count, Bin("-", Load(pos, rows), base))
                expand_rows(low, pos, rows, base, count, asm, shifts[0])
                levels = [(1, shifts[1])]
            else:
                pos0 = arrays.pos[0]
                b.assign(base, Load(pos0, Lit("0", INT)))
                b.assign(count, Bin("-", Load(pos0, Lit("1", INT)), base))
                levels = [(lv, shifts[lv]) for lv in range(len(kinds))]
            b.emit(Memcpy(asm.val, n, arrays.val, base, count))
            for lv, shift in levels:
                copy_coordinates(b, low.sites, leaf, lv, dst=asm.crd[lv], dst_start=n,
                                 crd=arrays.crd[lv], src_start=base, count=count, shift=shift)
            b.assign(n, n + count)

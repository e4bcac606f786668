"""A compressed leaf's rows read in blocks, each block's coordinates range-checked in one pass.

The unblocked leaf loop (``lower_stream``) checks each row's coordinates in a pass of their
own before the row is read (``bounds.check_segment``). On short rows that pass is a loop set
up per row for a handful of compares: SpMV with ~10 entries per row ran ~25 % faster with it
deleted by hand (not shippable). Here the rows run in blocks of about :data:`BLOCK_ENTRIES`
entries: one vectorizable pass tests every coordinate of the block (``bounds.segment_bad``),
and a block found in range reads its rows with no test at all. A block with a bad coordinate
runs its rows exactly as the unblocked loop runs them (each row checked, the first bad
coordinate recorded, that row skipped), so the same coordinate is reported with the same
message. Blocks are whole rows, contiguous and in order: a parallel loop over blocks reports
the failure of the lowest failing block (``parallel.py``), which holds the first failing row.
"""

from __future__ import annotations

from collections.abc import Callable

from sparsefold.compiler.emit.loops import BOOL, INT, Bin, Cond, Expr, Lit, Load, Not
from sparsefold.compiler.lower.bounds import segment_bad
from sparsefold.compiler.lower.lowering import Lowering
from sparsefold.compiler.lower.outputs import Assembler, DenseOut
from sparsefold.compiler.lower.values import index
from sparsefold.compiler.plan.facts import coordinate_symbols
from sparsefold.compiler.plan.streams import StreamPiece
from sparsefold.spec import sizes as sz

__all__ = ["BLOCK_ENTRIES", "LONG_ROWS", "row_local", "blocks_apply", "blocked_rows"]

# entries per block: their indices (8 KiB as int32) are still in L1 when the block's rows read
# them. Measured on SpMV, 200000^2 with 10 entries per row, one thread: blocks of ~2600 and
# ~10000 entries ran alike (within 3 %), and both ~12 % faster than a check per row.
BLOCK_ENTRIES = 2048
# from this many entries per row on average the rows are checked one by one: each row's pass
# is long enough to vectorize on its own, and blocks measured ~5 % slower (SpMV on pkustk02,
# 75 per row, and bcsstk33, 68 per row) where they are ~8 % faster at 10 per row
LONG_ROWS = 32


def row_local(piece: StreamPiece) -> bool:
    """Does a CSR/CSC leaf's row write output cells of its own? When one output coordinate
    is the row's coordinate plus a constant: then two rows write cells that differ in that
    coordinate, never the same cell, and each cell sees its entries in the order one thread
    would add them (SpMV's row sums, a row reduction)."""
    if piece.leaf.format.kinds != ("full", "pos"):
        return False
    var = sz.in_coord(piece.leaf.format.mode_order[0]).name
    for c in piece.coords:
        shift = sz.substitute(c, {var: 0})
        if var not in sz.free_symbols(shift) and not coordinate_symbols(shift) and \
                sz.definitely_equal(c, sz.add(sz.Sym(var), shift)):
            return True
    return False


def blocks_apply(piece: StreamPiece, asm: Assembler) -> bool:
    """May the piece's rows be read in blocks? A CSR/CSC leaf read whole (no guard: every
    row is read, so a block's check reads no entry the loops would not), into a dense output
    (its cells are written by the same statements in either branch, with no state of its
    own), where each row writes cells of its own (:func:`row_local`: SpMV, SpMM, row sums).
    Where each entry scatters into the output (dense @ sparse, CSC SpMV) blocks were measured
    slower than a check per row (0.82-0.93x on 0.3M-0.8M entries, one thread)."""
    return (type(asm) is DenseOut and asm.passes == 1 and not piece.leaf.format.is_dense
            and piece.leaf.format.kinds == ("full", "pos") and not sz.conjuncts(piece.guard)
            and row_local(piece))


def blocked_rows(low: Lowering, piece: StreamPiece, parallel: bool,
                 nest: Callable[[tuple[Expr, Expr], bool], None]) -> None:
    """The loop over blocks (``parallel``: on threads), each block's check, and the piece's
    loop nest over the block's rows twice: ``nest(rows, False)`` reads them with no test,
    ``nest(rows, True)`` checks each row as the unblocked loop does."""
    b, leaf = low.b, piece.leaf
    arrays = low.leaf(leaf)
    pos, crd = arrays.pos[1], arrays.crd[1]
    rows = index(leaf.shape[leaf.format.mode_order[0]])
    span, blk, r0, r1 = b.fresh("blk_rows"), b.fresh("blk"), b.fresh("r0"), b.fresh("r1")
    long_rows = b.fresh("long_rows", BOOL)
    one = Lit("1", INT)
    stored = Bin("-", Load(pos, rows), Load(pos, Lit("0", INT)))
    b.comment(f"rows in blocks of about {BLOCK_ENTRIES} entries, each block's coordinates "
              f"checked in one pass")
    b.comment(f"(rows of {LONG_ROWS} entries or more on average: each row's, as it is read)")
    blocks_wanted = Bin("+", Bin("//", stored, Lit(str(BLOCK_ENTRIES), INT)), one)
    b.assign(span, Bin("+", Bin("//", rows, blocks_wanted), one))
    b.assign(long_rows, Bin(">=", Bin("//", stored, Lit(str(LONG_ROWS), INT)), rows))
    with b.loop(blk, 0, Bin("//", Bin("-", Bin("+", rows, span), one), span), parallel=parallel):
        b.assign(r0, Bin("*", blk, span))
        b.assign(r1, Cond(Bin("<", Bin("-", rows, r0), span), rows, Bin("+", r0, span)))
        start = Load(pos, r0)
        bad = segment_bad(b, leaf, 1, crd, start, Cond(long_rows, start, Load(pos, r1)), "blk")
        with b.if_(Bin("and", Not(long_rows), Not(bad))):
            nest((r0, r1), False)
        with b.else_():
            nest((r0, r1), True)

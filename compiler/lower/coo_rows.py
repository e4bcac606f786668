"""COO paths of the stream lowerings (``lower_stream.py``).

**A 2-d COO leaf read as rows**, for the row-driven loop (``lower_stream.lower_rows``).

COO storage reaches a kernel in storage order: the runtime sorts it, or checks it, or
trusts scipy's canonical flag (``storage/levels.py``). Its rows are then runs of equal row
coordinates, so one cursor walking the leaf once finds each row's run where the previous
one ended: no search, no ``pos`` array, and the comparison that ends a run is also the
range check of the row coordinates it takes. Entries no row takes are range-checked after
the loop, so every stored row coordinate is checked. Under a stale canonical flag (rows out
of order) an entry of a row the loop visits would be left behind or stepped over: the cursor
remembers the last row it visited, and an entry at or below it, found where the loop steps
over rows or left after the loop, is reported ("order"), so no entry is dropped silently.

**A compressed leaf copied whole into COO** (``lower_bulk.lower_bulk``): its row
coordinates expanded from ``pos`` (:func:`expand_rows`).
"""

from __future__ import annotations

from sparsefold.compiler.emit.loops import INT, Bin, Cond, Expr, If, Lit, Load, Raise, Var, cast
from sparsefold.compiler.lower.bounds import axis_size, leaf_label, read_coordinate
from sparsefold.compiler.lower.lowering import Lowering
from sparsefold.compiler.lower.outputs import AppendOut
from sparsefold.compiler.lower.values import index
from sparsefold.compiler.plan.streams import StreamPiece
from sparsefold.spec import sizes as sz

__all__ = ["CooRun", "expand_rows", "SHORT_ROWS",
           "scatter_applies", "lower_scatter"]


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
        self.last = b.fresh("run_last")  # the last source row visited, -1 before the first
        self.order = low.sites.site("order", leaf_label(piece.leaf, 0))
        with b.block(f"{self.leaf.name} ({self.leaf.format}) read as rows: one cursor over "
                     f"its entries, each row a run of equal row coordinates"):
            b.assign(self.q, Load(arrays.pos[0], Lit("0", INT)))
            b.assign(self.end, Load(arrays.pos[0], Lit("1", INT)))
            b.assign(self.last, Lit("-1", INT))

    def row(self, low: Lowering, src: Var) -> tuple[Var, Expr]:
        """Advance over source row ``src`` (in range: the loop's own row): its run is
        ``[start, q)``, the ``(start, end)`` returned."""
        b, q, crd0 = low.b, self.q, self.crd0
        more = Bin("<", q, self.end)
        if self.skip:  # unsigned: a negative coordinate is never stepped over
            with b.while_(Bin("and", more, Bin("<", cast("uint64_t", Load(crd0, q)),
                                               cast("uint64_t", src)))):
                self._in_order(b, Load(crd0, q))
                b.assign(q, q + 1)
        start = b.fresh("run_start")
        b.assign(start, q)
        with b.while_(Bin("and", more, Bin("==", Load(crd0, q), src))):
            b.assign(q, q + 1)
        b.assign(self.last, src)
        return start, q

    def _in_order(self, b, coordinate: Expr) -> None:
        """A coordinate passed over (never copied) must lie beyond every visited row: one at
        or below the last is an entry of a visited row, out of order."""
        b.emit(If(((Bin("<=", coordinate, self.last),
                    (Raise(self.order, (coordinate, self.last)),)),)))

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
                self._in_order(b, v)


# --- COO outputs: row coordinates from a compressed leaf ---------------------------------------

# Below this many entries per row on average, a leaf's row coordinates are expanded by marks
# and a running maximum (three flat passes) instead of a fill per row, whose loop exit is
# mispredicted on short rows of varying length. Measured (vstack of CSR into COO): on ~6
# entries per row, 16 ran 0.80x of 4 (which took the fill); always marking ran 1.75-1.90x
# of the fill on ~70 entries per row.
SHORT_ROWS = 16


def expand_rows(low: Lowering, pos, rows: Expr, base: Expr, count: Expr, asm,
                 shift: Expr) -> None:
    """``crd0[n + p - base] = r + shift`` for every entry ``p`` of row ``r``. ``pos`` is
    monotone (checked before the kernel's loops), so every index is in ``[n, n + count)``."""
    b, ix, n, crd0 = low.b, asm.ix, asm.n, asm.crd[0]
    r, t = b.fresh("r"), b.fresh("t")
    with b.if_(Bin("<", count, Bin("*", rows, Lit(str(SHORT_ROWS), INT)))):
        b.comment("short rows: zero, mark each nonempty row's first entry with its row, then "
                  "carry the running maximum forward (rows only grow)")
        with b.loop(t, 0, count):
            b.store(crd0, n + t, Lit("0", ix))
        with b.loop(r, 0, rows):
            with b.if_(Bin("<", Load(pos, r), Load(pos, r + 1))):
                b.store(crd0, Bin("+", n, Bin("-", Load(pos, r), base)), cast(ix, r + shift))
        run, v = b.fresh("row_run", ix), b.fresh("row_v", ix)
        b.assign(run, Lit("0", ix))
        with b.loop(t, 0, count):
            b.assign(v, Load(crd0, n + t))
            b.assign(run, Cond(Bin(">", v, run), v, run))
            b.store(crd0, n + t, run)
    with b.else_():
        with b.loop(r, 0, rows):
            with b.loop(t, Bin("-", Load(pos, r), base), Bin("-", Load(pos, r + 1), base)):
                b.store(crd0, n + t, cast(ix, r + shift))


# --- COO rows into CSR on short rows: count, prefix sum, scatter -------------------------------

def _shift(piece: StreamPiece, axis: int, level: int):
    """The constant ``s`` with output coordinate ``axis`` = leaf coordinate ``level`` + s,
    or None."""
    var = sz.in_coord(piece.leaf.format.mode_order[level]).name
    c = piece.coords[axis]
    s = sz.substitute(c, {var: 0})
    if {x for x in sz.free_symbols(s) if x.startswith("_")} or \
            not sz.definitely_equal(c, sz.add(sz.Sym(var), s)):
        return None
    return s


def scatter_applies(pieces, runs: dict, out_order, asm) -> bool:
    """May the rows be assembled by count and scatter instead of the row loop? Every piece
    a COO leaf walked whole (no row skipped), copied unchanged but for constant shifts, into
    CSR/CSC (the assembler itself, not a checked wrapper)."""
    return type(asm) is AppendOut and asm.kinds == ("full", "pos") and \
        len(runs) == len(pieces) and not any(r.skip for r in runs.values()) and all(
            not p.layers and p.guard == sz.TRUE and p.leaf.dtype == asm.dtype and
            _shift(p, out_order[0], 0) is not None and _shift(p, out_order[1], 1) is not None
            for p in pieces)


def lower_scatter(low: Lowering, pieces, runs: dict, out_order, rows: Expr, asm) -> None:
    """Count each output row's entries (the row coordinates' range check fused into the
    count), prefix-sum them into ``pos``, then place each piece's entries at their row's next
    slot, pieces in order (stable: each row gets its pieces' runs in order, as the row loop
    does), using ``pos`` itself as the cursors and shifting it back after. No loop per row.
    Each place is clamped below the total, so even storage changed under the call cannot
    write outside the output."""
    b, ix, pos = low.b, asm.ix, asm.pos[1]
    r, t, d, o = b.fresh("r"), b.fresh("t"), b.fresh("slot"), b.fresh("o_row")
    total = b.fresh("total")
    b.comment("short rows: count, prefix sum, scatter (no loop per row to mispredict)")
    with b.loop(r, 0, rows + 1):
        b.store(pos, r, Lit("0", ix))
    for n, piece in enumerate(pieces):
        run, v = runs[n], b.fresh("i0")
        with b.loop(t, run.q, run.end):
            read_coordinate(b, low.sites, piece.leaf, 0, run.crd0, t, v)
            b.assign(o, v + index(_shift(piece, out_order[0], 0)))
            b.store(pos, o + 1, cast(ix, Bin("+", Load(pos, o + 1), Lit("1", INT))))
    with b.loop(r, 0, rows):
        b.store(pos, r + 1, cast(ix, Bin("+", Load(pos, r + 1), Load(pos, r))))
    b.assign(total, Load(pos, rows))
    for n, piece in enumerate(pieces):
        run, arrays = runs[n], low.leaf(piece.leaf)
        crd1 = arrays.crd[1]
        bits = {"int32_t": 32, "int64_t": 64}[crd1.ctype]
        unsigned = f"uint{bits}_t"
        bad, c, lim = b.fresh(f"range_bad{bits}", unsigned), b.fresh(f"range_c{bits}", unsigned), \
            b.fresh(f"range_lim{bits}", unsigned)
        size = axis_size(piece.leaf, 1)
        b.assign(lim, cast(unsigned, Lit(f"({size.text} if {size.text} < <int64_t>2147483648 "
                                         f"else <int64_t>2147483648)", INT, size.uses))
                 if bits == 32 else cast(unsigned, size))
        b.assign(bad, Lit("0", unsigned))
        with b.loop(t, run.q, run.end):
            i0 = Load(run.crd0, t)
            b.assign(o, Cond(Bin("<", cast("uint64_t", i0), cast("uint64_t", axis_size(
                piece.leaf, 0))), i0, Lit("0", INT)) + index(_shift(piece, out_order[0], 0)))
            b.assign(d, Load(pos, o))
            b.assign(d, Cond(Bin("<", d, total), d, total - 1))
            b.store(pos, o, cast(ix, d + 1))
            b.assign(c, cast(unsigned, Load(crd1, t)))
            b.assign(bad, Bin("|", bad, Bin(">=", c, lim)))
            shift = index(_shift(piece, out_order[1], 1))
            if crd1.ctype == ix:  # same width: the sum wraps in the unsigned type (as a copy)
                column = cast(ix, Bin("+", c, cast(unsigned, shift)))
            else:
                column = Bin("+", cast(ix, Load(crd1, t)), cast(ix, shift))
            b.store(asm.crd[1], d, column)
            b.store(asm.val, d, Load(arrays.val, t))
        with b.if_(bad):
            v = b.fresh("range_v")
            with b.loop(t, run.q, run.end):
                read_coordinate(b, low.sites, piece.leaf, 1, crd1, t, v)
    b.comment("pos[r] now ends row r: shift it to start it")
    with b.loop(r, 0, rows):
        b.store(pos, rows - r, Load(pos, rows - r - 1))
    b.store(pos, Lit("0", INT), Lit("0", ix))
    b.assign(asm.n, total)

"""Lowering a stream — the entries of one sparse view — to loop IR (DESIGN §3.3).

A stream piece (``streams.py``) is a leaf seen through forward maps. Three loop shapes:

* **leaf loops** (:func:`lower_pieces`): one loop nest per piece over its leaf's levels in
  storage order, asking each level what it can do: a full level loops ``range(N)`` (child
  position ``p*N + i``), a ``pos``/``crd`` level loops its segment, a singleton reads one
  coordinate at its parent's position. Guard conjuncts are tested at the outermost loop
  where their variables are bound (a row slice skips whole rows); output coordinates are
  computed as early as possible; broadcast variables loop innermost.
* **row loops** (:func:`lower_rows`): output rows outermost; each piece reads its source
  row back through the backward map and copies it (a bulk copy when the row is copied
  unchanged but for a shifted inner coordinate: hstack of CSR). A COO leaf's rows are
  found by a cursor, as runs of equal row coordinates (``coo_rows.py``: hstack of COO).
* **bulk copies** (:func:`lower_bulk`): whole leaves copied one after another when they
  are proved to arrive in storage order with shifted coordinates (vstack).

Each entry is handed to an output assembler (``outputs.py``).
"""

from __future__ import annotations

from sparsefold.compiler.emit.cnames import ctype
from sparsefold.compiler.emit.loops import (
    INT,
    Array,
    Bin,
    Call,
    Expr,
    Lit,
    Load,
    Not,
    Store,
    Var,
    cast,
)
from sparsefold.compiler.lower.bounds import check_segment, copy_coordinates, read_coordinate
from sparsefold.compiler.lower.coo_rows import SHORT_ROWS, CooRun, lower_scatter, scatter_applies
from sparsefold.compiler.lower.lowering import Lowering
from sparsefold.compiler.lower.outputs import AppendOut, Assembler, DenseOut, ScatterOut
from sparsefold.compiler.lower.row_blocks import blocked_rows, blocks_apply, row_local
from sparsefold.compiler.lower.values import Values, convert, index, monoid_combine
from sparsefold.compiler.plan.facts import coo_run_leaf, coordinate_symbols
from sparsefold.compiler.plan.order import implied_row_guards
from sparsefold.compiler.plan.streams import StreamPiece
from sparsefold.spec import sizes as sz

__all__ = ["lower_pieces", "lower_rows", "lower_row_count", "row_guards"]


def _size_symbols(e: sz.Expr) -> set[str]:
    return {s for s in sz.free_symbols(e) if not s.startswith("_")}


class _LoopNest:
    """The loops of one piece as they are opened: which coordinate symbols are bound, and
    the guards and output coordinates still waiting for theirs."""

    def __init__(self, low: Lowering, piece: StreamPiece):
        self.low = low
        self.bound: set[str] = set()
        self.guards = sz.conjuncts(piece.guard)
        self.coords = list(piece.coords)
        self.coord_vars: list[Expr | None] = [None] * len(piece.coords)
        self.env: dict[str, Expr] = {}
        self.in_loop = False   # inside one of this piece's loops: a guard may `continue`
        self.opened = []       # context managers of guards opened outside any loop

    def bind(self, symbol: str, var: Expr) -> None:
        self.bound.add(symbol)
        self.env[symbol] = var
        self.place()

    def place(self) -> None:
        """Emit every guard and output coordinate whose variables are now all bound."""
        b = self.low.b
        ready = [g for g in self.guards if coordinate_symbols(g) <= self.bound]
        for g in ready:
            self.guards.remove(g)
            if self.in_loop:
                with b.if_(Not(index(g, self.env))):
                    b.cont()
            else:  # none of this piece's loops is open yet: guard the whole nest
                cm = b.if_(index(g, self.env))
                cm.__enter__()
                self.opened.append(cm)
        for d, c in enumerate(self.coords):
            if self.coord_vars[d] is None and coordinate_symbols(c) <= self.bound:
                o = b.fresh(f"o{d}")
                b.assign(o, index(c, self.env))
                self.coord_vars[d] = o


class _Loops:
    """Nested ``with`` contexts closed together (or down to a mark)."""

    def __init__(self):
        self.stack = []

    def open(self, cm) -> None:
        cm.__enter__()
        self.stack.append(cm)

    def close(self, down_to: int = 0) -> None:
        while len(self.stack) > down_to:
            self.stack.pop().__exit__(None, None, None)


class _Register:
    """A reduction's cell held in a register across the innermost loop (SpMV's row sum):
    started before the loop opens, combined into the output once after it closes. Used when
    the output coordinates are bound outside the innermost loop."""

    def __init__(self, low: Lowering, asm: DenseOut):
        self.low, self.asm = low, asm
        self.acc = low.b.fresh("acc", ctype(asm.dtype))
        self.count = low.b.fresh("acc_n") if asm.counts else None
        self.mark = None

    def start(self, loops: _Loops) -> None:
        b = self.low.b
        b.assign(self.acc, self.asm.identity())
        if self.count is not None:
            b.assign(self.count, Lit("0", INT))
        self.mark = len(loops.stack)

    def add(self, value: Expr) -> None:
        b = self.low.b
        b.assign(self.acc, monoid_combine(self.asm.monoid, self.acc,
                                          convert(value, self.asm.dtype), self.asm.dtype))
        if self.count is not None:
            b.assign(self.count, self.count + 1)

    def finish(self, loops: _Loops, coords) -> None:
        loops.close(self.mark)
        self.asm.combine(self.low, self.asm.cell(coords), self.acc,
                         self.count if self.count is not None else Lit("1", INT))


def lower_pieces(low: Lowering, pieces: tuple[StreamPiece, ...], asm: Assembler,
                 values: Values) -> None:
    """One loop nest per piece, in order, each entry handed to ``asm``. A two-pass assembler
    (count, then place) gets the loop nests twice."""
    b = low.b
    chunks = asm.blocks(low, pieces) if type(asm) is ScatterOut else None
    for pass_no in range(asm.passes):
        asm.begin_pass(low, pass_no)
        again = None
        if pass_no:  # the first pass read and checked every coordinate this one reads
            again = b.if_(Bin("==", Var("sf_bad", INT), Lit("0", INT)))
            again.__enter__()
        for n, piece in enumerate(pieces):
            with b.block(f"piece {n}: entries of {piece.leaf.name} ({piece.leaf.format}) in "
                         f"storage order -> output coordinates "
                         f"{', '.join(map(str, piece.coords))}"):
                if chunks is not None:  # ScatterOut.split_rows: a block of rows per thread
                    asm.chunk = b.fresh("chunk")
                    with b.loop(asm.chunk, 0, chunks, parallel=True, team=chunks):
                        size = index(piece.leaf.shape[piece.leaf.format.mode_order[0]])
                        rows = (Bin("//", Bin("*", asm.chunk, size), chunks),
                                Bin("//", Bin("*", asm.chunk + 1, size), chunks))
                        _piece_nest(low, piece, asm, values, rows, checked=pass_no > 0)
                elif blocks_apply(piece, asm):
                    blocked_rows(low, piece, _rows_parallel(piece, low),
                                 lambda rows, checked, piece=piece:
                                 _piece_nest(low, piece, asm, values, rows, checked))
                else:
                    _piece_nest(low, piece, asm, values, checked=pass_no > 0)
        if again is not None:
            again.__exit__(None, None, None)


def _piece_nest(low: Lowering, piece: StreamPiece, asm: Assembler, values: Values,
                rows: tuple[Expr, Expr] | None = None, rows_checked: bool = True,
                checked: bool = False) -> None:
    """The loop nest of one piece, each entry handed to ``asm``. ``rows``: the outer
    level's loop runs over these rows only (one block of ``row_blocks.blocked_rows``, or
    of ``ScatterOut.split_rows``); ``rows_checked`` False: the block's coordinates were all
    found in range, so the rows are read with no test; ``checked``: an earlier pass of the
    same loops checked every coordinate read here, and this one runs only if none failed,
    so no coordinate is tested."""
    b = low.b
    nest = _LoopNest(low, piece)
    loops = _Loops()
    nest.place()
    register = _Register(low, asm) if _register_applies(piece, asm) else None
    value = _open_leaf_loops(low, piece, nest, loops, register, rows, rows_checked,
                             checked)
    if piece.free and not isinstance(value, Var):  # read once, not per copy
        held = b.fresh("x", ctype(piece.leaf.dtype))
        b.assign(held, value)
        value = held
    for name, size in piece.free:
        var = b.fresh(name.lstrip("_"))
        loops.open(b.loop(var, 0, index(size, nest.env)))
        nest.in_loop = True
        nest.bind(name, var)
    if nest.guards:
        raise AssertionError(f"unplaced guards {nest.guards}")
    v = value
    if asm.needs_value:
        for layer in piece.layers:
            coords = tuple(index(c, nest.env) for c in layer.coords)
            v = values.map_with(layer.node, {layer.driver: v}, coords)
    if register is not None:
        register.add(v)
        register.finish(loops, tuple(nest.coord_vars))
    else:
        asm.emit(low, tuple(nest.coord_vars), v)
    loops.close()
    for cm in reversed(nest.opened):
        cm.__exit__(None, None, None)


def _innermost_level(piece: StreamPiece) -> int | None:
    """The leaf level whose loop is innermost (its last full or compressed level), when no
    broadcast loop comes after it."""
    if piece.free or piece.leaf.format.is_dense:
        return None
    levels = piece.leaf.format.levels
    iterating = [li for li, lv in enumerate(levels) if lv.full or lv.has_pos]
    return iterating[-1] if iterating else None


def _register_applies(piece: StreamPiece, asm) -> bool:
    """A reduction whose output coordinates are all bound by loops outside the innermost."""
    if not isinstance(asm, DenseOut) or asm.monoid is None:
        return False
    z = _innermost_level(piece)
    if z is None:
        return False
    fmt = piece.leaf.format
    outer = {sz.in_coord(fmt.mode_order[li]).name for li in range(z)}
    return all(coordinate_symbols(c) <= outer for c in piece.coords)


def _open_leaf_loops(low: Lowering, piece: StreamPiece, nest: _LoopNest, loops: _Loops,
                     register: _Register | None = None, rows: tuple[Expr, Expr] | None = None,
                     rows_checked: bool = True, checked: bool = False) -> Expr:
    """Open the loops over a leaf's stored entries; return its value at the innermost. A
    ``register`` starts right before the innermost loop opens. ``rows``, ``rows_checked``,
    ``checked``: see :func:`_piece_nest`."""
    b, leaf = low.b, piece.leaf
    names = sz.in_coords(leaf.ndim)
    if leaf.format.is_dense:
        coords = []
        for d in range(leaf.ndim):
            var = b.fresh(f"i{d}")
            loops.open(b.loop(var, 0, index(leaf.shape[d])))
            nest.in_loop = True
            coords.append(var)
            nest.bind(names[d].name, var)
        v = b.fresh(f"dv_{leaf.name}", ctype(leaf.dtype))
        b.assign(v, low.dense(leaf, tuple(coords)))
        if leaf.ndim:
            b.comment("a dense operand stores no zeros in a sparse result")
            with b.if_(Bin("==", v, Lit("0"))):
                b.cont()
        else:  # a 0-d operand: no loop to continue, guard its single element instead
            loops.open(b.if_(Bin("!=", v, Lit("0"))))
        return v
    arrays = low.leaf(leaf)
    parent: Expr = Lit("0", INT)
    for li, level in enumerate(leaf.format.levels):
        mode = leaf.format.mode_order[li]
        coord = b.fresh(f"i{mode}")
        pos = b.fresh(f"q{li}")
        if level.full:
            size = index(leaf.shape[mode])
            if li == 0 and rows is not None:
                loops.open(b.loop(coord, rows[0], rows[1]))
            else:
                loops.open(b.loop(coord, 0, size,
                                  parallel=li == 0 and _rows_parallel(piece, low)))
            nest.in_loop = True
            b.assign(pos, coord if _is_zero(parent) else Bin("+", Bin("*", parent, size), coord))
        elif level.has_pos:
            p = arrays.pos[li]
            in_block = li == 1 and rows is not None
            # a segment under a parent (a row): checked up front, with its row or its block
            row_checked = li > 0 and not (in_block and not rows_checked) and not checked
            if row_checked:
                bad = check_segment(b, low.sites, leaf, li, arrays.crd[li], Load(p, parent),
                                    Load(p, parent + 1))
                loops.open(b.if_(Not(bad)))
            if register is not None and li == _innermost_level(piece):
                register.start(loops)
            loops.open(b.loop(pos, Load(p, parent), Load(p, parent + 1)))
            nest.in_loop = True
            if li > 0 or checked:
                b.assign(coord, Load(arrays.crd[li], pos))
            else:
                read_coordinate(b, low.sites, leaf, li, arrays.crd[li], pos, coord)
        else:  # singleton: one coordinate at the parent's position
            pos = parent
            if checked:
                b.assign(coord, Load(arrays.crd[li], pos))
            else:
                read_coordinate(b, low.sites, leaf, li, arrays.crd[li], pos, coord)
        nest.bind(names[mode].name, coord)
        parent = pos
    return Load(arrays.val, parent)


def _rows_parallel(piece: StreamPiece, low: Lowering) -> bool:
    """May the leaf's outer (full) loop run its iterations on several threads? When the
    output is dense (``low.rows_parallel``: the kernel asked for it) and its cells are
    ``row_blocks.row_local``."""
    return low.rows_parallel and row_local(piece)


def _is_zero(e: Expr) -> bool:
    return isinstance(e, Lit) and e.text == "0"


# --- row loops --------------------------------------------------------------------------------

def row_guards(piece: StreamPiece, row: str) -> list[sz.Expr]:
    """The conjuncts of a piece's output guard that decide which output rows it owns: those
    about the output row alone, and those about no coordinate at all (a constant or a
    condition on sizes: ``stack([a, b])[1]`` gives ``a``'s piece the guard false, which
    must close every row to it)."""
    return [g for g in sz.conjuncts(piece.out_guard) if coordinate_symbols(g) <= {row}]


def _source_row(low: Lowering, piece: StreamPiece, row: str, r: Var, loops: _Loops) -> Var:
    """Inside the output-row loop: open the piece's row guards, then read its source row
    back through the backward map; returns the variable holding it."""
    b = low.b
    for g in row_guards(piece, row):
        loops.open(b.if_(index(g, {row: r})))
    a = piece.leaf.format.mode_order[0]
    src = b.fresh(f"i{a}")
    b.assign(src, index(piece.backward[a], {row: r}))
    return src


def lower_rows(low: Lowering, pieces: tuple[StreamPiece, ...], out_order, out_shape,
               asm: Assembler, values: Values) -> None:
    """The row-driven loop: for each output row, each piece's source row (found through the
    backward map) is copied in order. Used when the stream is ordered within a row, so the
    output is appended in storage order (e.g. hstack of CSR: rows interleave pieces)."""
    b = low.b
    r = b.fresh("r")
    row = sz.out_coord(out_order[0]).name
    fallback = None
    if _fill_parallel(low, pieces, asm):
        if asm.kinds == ("full", "pos"):  # the row starts are the result's own indptr
            _parallel_rows(low, pieces, out_order, out_shape, asm, values, r, row,
                           asm.pos[1], asm.ix)
            return
        # a COO result: with more than one thread, the row starts in a temporary of rows +
        # 1; else (or without it) the serial loop below, which one thread runs faster (the
        # parallel loop's outlined body kept gcc from vectorizing the row copies: 1.3x
        # slower on hstack into COO, measured)
        ptr = b.fresh("row_at", "int64_t*")
        cells = b.fresh("row_cells")
        b.assign(ptr, Lit("NULL", "int64_t*"))
        with b.if_(Bin(">", Lit("sf_max_threads()", INT), Lit("1", INT))):
            b.assign(cells, index(out_shape[out_order[0]]) + 1)
            b.assign(ptr, Lit(f"<int64_t*>calloc({cells.name}, 8)", "int64_t*", (cells,)))
        with b.if_(Bin("!=", ptr, Lit("NULL", "int64_t*"))):
            _parallel_rows(low, pieces, out_order, out_shape, asm, values, r, row,
                           Array(ptr.name, INT), INT)
            b.emit(Call("free", (ptr,)))
        fallback = b.else_()
        fallback.__enter__()
        r = b.fresh("r")
    runs = {n: CooRun(low, p, skip=bool(row_guards(p, row)) or not sz.definitely_equal(
                p.leaf.shape[p.leaf.format.mode_order[0]], out_shape[out_order[0]]))
            for n, p in enumerate(pieces) if coo_run_leaf(p)}
    rows = index(out_shape[out_order[0]])
    short = None
    if scatter_applies(pieces, runs, out_order, asm):
        entries = Lit(" + ".join(f"({x.end.name} - {x.q.name})" for x in runs.values()), INT)
        short = b.if_(Bin("<", entries, Bin("*", rows, Lit(str(SHORT_ROWS), INT))))
        with short:
            lower_scatter(low, pieces, runs, out_order, rows, asm)
        short = b.else_()
        short.__enter__()
    with b.block("row-driven loop: output rows outermost; each piece contributes its source "
                 "row (backward map), in piece order"):
        with b.loop(r, 0, rows):
            for n, piece in enumerate(pieces):
                with b.block(f"piece {n}: row of {piece.leaf.name} ({piece.leaf.format})"):
                    _row_piece(low, piece, out_order, r, row, asm, values, runs.get(n),
                               out_shape[out_order[0]])
            asm.end_row(low, r)
    for run in runs.values():  # (count and scatter checked every row coordinate)
        run.close(low)
    if short is not None:
        short.__exit__(None, None, None)
    if fallback is not None:
        fallback.__exit__(None, None, None)


def _fill_parallel(low: Lowering, pieces, asm) -> bool:
    """May the row-driven loop fill a CSR or 2-d COO output in parallel? When every output
    row's length is known before its entries are read — the sum of its pieces' source row
    lengths: no piece drops entries (no guard on an entry's coordinates, no broadcast) —
    each row's start is a prefix sum, and rows are filled independently at their own
    offsets."""
    if not low.rows_parallel or type(asm) is not AppendOut or \
            asm.kinds not in (("full", "pos"), ("pos", "one")):
        return False
    for piece in pieces:
        a = sz.in_coord(piece.leaf.format.mode_order[0]).name
        if piece.free or piece.leaf.format.kinds != ("full", "pos") or any(
                not coordinate_symbols(g) <= {a} for g in sz.conjuncts(piece.guard)):
            return False
    return True


def _parallel_rows(low, pieces, out_order, out_shape, asm: AppendOut, values, r, row,
                   pos: Array, ix: str) -> None:
    """Count, prefix sum, fill: the row lengths in parallel into ``pos[r + 1]`` (of C type
    ``ix``: the CSR result's indptr, or a temporary for a COO one), their prefix sum (one
    pass), then every row in parallel from ``pos[r]`` on. Each entry lands where the serial
    loop puts it: the result is bit-identical for any thread count."""
    b = low.b
    rows = index(out_shape[out_order[0]])
    with b.block("parallel rows, pass 1: each output row's length (its pieces' source rows)"):
        length = b.fresh("row_len")
        with b.loop(r, 0, rows, parallel=True):
            b.assign(length, Lit("0", INT))
            for piece in pieces:
                loops = _Loops()
                src = _source_row(low, piece, row, r, loops)
                p = low.leaf(piece.leaf).pos[1]
                b.assign(length, length + Bin("-", Load(p, src + 1), Load(p, src)))
                loops.close()
            b.store(pos, r + 1, cast(ix, length))
    t = b.fresh("t")
    with b.block("prefix sum: row starts"):
        with b.loop(t, 0, rows):
            b.store(pos, t + 1, cast(ix, Bin("+", Load(pos, t + 1), Load(pos, t))))
    whole, asm.n = asm.n, b.fresh("n_row")  # the row's own cursor: private to its thread
    r2 = b.fresh("r")
    with b.block("parallel rows, pass 2: each row filled from its start, pieces in order"):
        with b.loop(r2, 0, rows, parallel=True):
            b.assign(asm.n, Load(pos, r2))
            for n, piece in enumerate(pieces):
                with b.block(f"piece {n}: row of {piece.leaf.name} ({piece.leaf.format})"):
                    _row_piece(low, piece, out_order, r2, row, asm, values,
                               rows=out_shape[out_order[0]])
    asm.n = whole
    b.assign(whole, Load(pos, rows))


def _row_piece(low, piece, out_order, r, row, asm, values, run: CooRun | None = None,
               rows: sz.Expr | None = None) -> None:
    b, leaf = low.b, piece.leaf
    arrays = low.leaf(leaf)
    loops = _Loops()
    src = _source_row(low, piece, row, r, loops)
    a, c = leaf.format.mode_order
    nest = _LoopNest(low, piece)
    # forward guards on the source row alone that a proof shows hold on every row read back
    # from an output row this piece owns (order.implied_row_guards) are not tested again
    # (and one of no coordinate among the row guards _source_row opened is tested there)
    implied = implied_row_guards(piece, row, rows)
    per_row = row_guards(piece, row)
    nest.guards = [g for g in nest.guards if g not in implied and
                   not (not coordinate_symbols(g) and g in per_row)]
    nest.bind(sz.in_coord(a).name, src)
    if run is not None:
        start, end = run.row(low, src)
    else:
        start, end = Load(arrays.pos[1], src), Load(arrays.pos[1], src + 1)
    shift = _segment_shift(piece, nest, asm, out_order[1], sz.in_coord(c).name)
    if shift is not None:
        _segment_copy(low, leaf, arrays, asm, start, end, shift)
        loops.close()
        _close(nest)
        return
    q, coord = b.fresh("q1"), b.fresh(f"i{c}")
    bad = check_segment(b, low.sites, leaf, 1, arrays.crd[1], start, end)
    loops.open(b.if_(Not(bad)))
    loops.open(b.loop(q, start, end))
    nest.in_loop = True
    b.assign(coord, Load(arrays.crd[1], q))  # checked with the row
    nest.bind(sz.in_coord(c).name, coord)
    v: Expr = Load(arrays.val, q)
    for layer in piece.layers:
        coords = tuple(index(x, nest.env) for x in layer.coords)
        v = values.map_with(layer.node, {layer.driver: v}, coords)
    asm.emit(low, tuple(nest.coord_vars), v)
    loops.close()
    _close(nest)


def _close(nest: _LoopNest) -> None:
    """Close the guards the nest opened outside its loops (innermost first)."""
    for cm in reversed(nest.opened):
        cm.__exit__(None, None, None)
    nest.opened = []


def lower_row_count(low: Lowering, pieces: tuple[StreamPiece, ...], out_order,
                    out_shape) -> Var:
    """``total`` = the entries the row-driven loop will write: the lengths of the source rows
    of the output rows each piece owns. O(output rows), no entry read; lets the runtime
    allocate a strided slice's output at its size instead of its input's (``run`` checks
    rows monotone before it writes anything; a count from a malformed ``pos`` only sizes
    buffers that ``run`` then refuses to fill)."""
    b = low.b
    r, total = b.fresh("r"), b.fresh("total")
    row = sz.out_coord(out_order[0]).name
    b.assign(total, Lit("0", INT))
    for piece in pieces:  # a COO leaf's rows are not indexed: all its entries bound them
        if coo_run_leaf(piece):
            pos0 = low.leaf(piece.leaf).pos[0]
            b.assign(total, Bin("+", total, Bin("-", Load(pos0, Lit("1", INT)),
                                                Load(pos0, Lit("0", INT)))))
    with b.loop(r, 0, index(out_shape[out_order[0]])):
        for piece in pieces:
            if coo_run_leaf(piece):
                continue
            loops = _Loops()
            src = _source_row(low, piece, row, r, loops)
            pos = low.leaf(piece.leaf).pos[1]
            b.assign(total, Bin("+", total, Bin("-", Load(pos, src + 1), Load(pos, src))))
            loops.close()
    return total


def _segment_shift(piece, nest, asm, out_axis: int, inner: str):
    """When a piece copies its source row unchanged except for a constant shift of the inner
    coordinate (no guard on entries, no map, same dtype), that shift; else None. (Not into
    COO: a fused copy storing the row coordinate beside each entry measured 1.13-1.17x
    slower than the per-entry loop on rows of ~70 entries, 0.92x on rows of 2-6.)"""
    if not isinstance(asm, AppendOut) or asm.kinds != ("full", "pos"):
        return None
    if piece.layers or nest.guards or piece.leaf.dtype != asm.dtype:
        return None
    c = piece.coords[out_axis]
    shift = sz.substitute(c, {inner: 0})
    if inner in sz.free_symbols(shift) or \
            not sz.definitely_equal(c, sz.add(sz.Sym(inner), shift)):
        return None
    return shift


def _segment_copy(low: Lowering, leaf, arrays, asm: AppendOut, first: Expr, end: Expr,
                  shift) -> None:
    """Bulk copy of one source row ``[first, end)``: coordinates copied (shifted and
    range-checked) with the values in one loop."""
    b = low.b
    start, count = b.fresh("seg_start"), b.fresh("seg_len")
    b.comment("the row is copied unchanged: bulk copy (inner coordinate shifted)")
    b.assign(start, first)
    b.assign(count, Bin("-", end, start))
    n = asm.n
    copy_coordinates(b, low.sites, leaf, 1, dst=asm.crd[1], dst_start=n, crd=arrays.crd[1],
                     src_start=start, count=count, shift=index(shift),
                     also=(lambda t: Store(asm.val, n + t, Load(arrays.val, start + t)),))
    b.assign(n, n + count)


# --- bulk copies ------------------------------------------------------------------------------

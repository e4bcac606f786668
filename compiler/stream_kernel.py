"""Lowering streams to loop nests and emitting them (DESIGN §3.3–3.5).

Each stream piece becomes one loop nest over its leaf's levels in storage order, asking the
levels what they can do (``formats.py`` capabilities), never the format's name:

* a full (dense) level iterates ``for i in range(N)``; child position ``p*N + i``;
* a level with ``pos``/``crd`` iterates ``for q in range(pos[p], pos[p+1]): i = crd[q]``;
* a level with ``crd`` only (singleton) reads ``i = crd[p]`` at its parent's position.

Guards are split into conjuncts and each is tested at the outermost loop where its variables
are bound (a row slice skips whole rows); output coordinates are computed as early as
possible too. Free variables (broadcast) loop innermost. The entry is then handed to an
output *assembler* (``assembly.py``).
"""

from __future__ import annotations

from sparsefold.compiler.assembly import AppendOut, Assembler
from sparsefold.compiler.checks import copy_coordinates, read_coordinate
from sparsefold.compiler.cnames import array_var, ctype, index_ctype, storage_ctype
from sparsefold.compiler.pointwise import Body, Pointwise, expr_c
from sparsefold.compiler.source import Arg
from sparsefold.compiler.streams import StreamPiece
from sparsefold.spec import sizes as sz
from sparsefold.spec.compute import Input

__all__ = ["emit_pieces", "emit_rows", "emit_row_count", "row_loop_applies", "row_guards",
           "leaf_args", "dense_leaf", "dense_leaf_args", "bulk_shifts", "emit_bulk"]


def leaf_args(leaf: Input, index_dtypes: dict[str, str]) -> list[Arg]:
    """Pointer arguments for a sparse leaf's level arrays and values."""
    args = []
    for level_no, level in enumerate(leaf.format.levels):
        for part, present in (("pos", level.has_pos), ("crd", level.has_crd)):
            if present:
                name = array_var(leaf.name, f"{part}{level_no}")
                ct = index_ctype(index_dtypes[f"{part}{level_no}"])
                args.append(Arg(f"p_{name}", "ptr", ("input", leaf.name, f"{part}{level_no}"),
                                ct))
    val = array_var(leaf.name, "val")
    args.append(Arg(f"p_{val}", "ptr", ("input", leaf.name, "val"), storage_ctype(leaf.dtype)))
    return args


def dense_leaf(inp: Input, coords: tuple[str, ...]) -> str:
    """A dense input's element at coordinates (element strides are arguments)."""
    offset = " + ".join(f"{c}*{array_var(inp.name, f'st{d}')}"
                        for d, c in enumerate(coords)) or "0"
    return f"{array_var(inp.name, 'val')}[{offset}]"


def dense_leaf_args(inp: Input) -> list[Arg]:
    val = array_var(inp.name, "val")
    return [Arg(f"p_{val}", "addr", ("dense", inp.name), storage_ctype(inp.dtype))] + [
        Arg(array_var(inp.name, f"st{d}"), "int", ("stride", inp.name, d))
        for d in range(inp.ndim)]



class _LoopNest:
    """Tracks the loop nest of one piece: bound variables and pending hoistable work."""

    def __init__(self, body: Body, piece: StreamPiece, out_coords: tuple[sz.Expr, ...]):
        self.body = body
        self.bound: set[str] = set()
        self.guards = sz.conjuncts(piece.guard)
        self.coords = list(out_coords)
        self.coord_vars: list[str | None] = [None] * len(out_coords)
        self.env: dict[str, str] = {}
        self.in_loop = False  # inside one of this piece's own loops: guards may `continue`

    def bind(self, symbol: str, c_name: str) -> None:
        self.bound.add(symbol)
        self.env[symbol] = c_name
        self.flush()

    def flush(self) -> None:
        """Emit every guard and coordinate whose variables are now all bound."""
        ready = [g for g in self.guards if sz.free_symbols(g) <= self.bound | _sizes(g)]
        for g in ready:
            self.guards.remove(g)
            if self.in_loop:
                self.body.line(f"if not ({expr_c(g, self.env)}): continue")
            else:  # none of this piece's loops is open yet: guard the whole nest
                self.body.line(f"if {expr_c(g, self.env)}:")
                self.body.depth += 1
        for d, c in enumerate(self.coords):
            if self.coord_vars[d] is None and sz.free_symbols(c) <= self.bound | _sizes(c):
                name = self.body.declare(f"o{d}", "int64_t")
                self.body.line(f"{name} = {expr_c(c, self.env)}")
                self.coord_vars[d] = name


def _sizes(e: sz.Expr) -> set[str]:
    return {s for s in sz.free_symbols(e) if not s.startswith("_")}


def emit_pieces(body: Body, pieces: tuple[StreamPiece, ...], assembler: Assembler,
                pointwise: Pointwise) -> None:
    """Emit one loop nest per piece, in order, handing each entry to ``assembler``. An
    assembler with ``passes == 2`` (count, then place) gets the loop nests twice."""
    for pass_no in range(getattr(assembler, "passes", 1)):
        assembler.begin_pass(body, pass_no)
        for n, piece in enumerate(pieces):
            body.comment(f"piece {n}: entries of {piece.leaf.name} ({piece.leaf.format}) in "
                         f"storage order -> output coordinates "
                         f"{', '.join(map(str, piece.coords))}")
            depth = body.depth
            nest = _LoopNest(body, piece, piece.coords)
            nest.flush()
            value = _open_leaf_loops(body, piece.leaf, nest)
            for name, size in piece.free:
                var = body.declare(name.lstrip("_"), "int64_t")
                body.line(f"for {var} in range({expr_c(size, nest.env)}):")
                body.depth += 1
                nest.in_loop = True
                nest.bind(name, var)
            if nest.guards:
                raise AssertionError(f"unplaced guards {nest.guards}")
            v = value
            if assembler.needs_value:
                for layer in piece.layers:
                    coords = tuple(expr_c(c, nest.env) for c in layer.coords)
                    v = pointwise.map_with(layer.node, {layer.driver: v}, coords)
            assembler.emit(body, tuple(nest.coord_vars), v)
            body.depth = depth


def _open_leaf_loops(body: Body, leaf: Input, nest: _LoopNest) -> str:
    """Open the loops over a leaf's stored entries; return the C text of the value."""
    if leaf.format.is_dense:
        coords = []
        for d in range(leaf.ndim):
            var = body.declare(f"i{d}", "int64_t")
            body.line(f"for {var} in range({expr_c(leaf.shape[d], {})}):")
            body.depth += 1
            nest.in_loop = True
            coords.append(var)
            nest.bind(sz.in_coord(d).name, var)
        v = body.declare(f"dv_{leaf.name}", ctype(leaf.dtype))
        body.line(f"{v} = {dense_leaf(leaf, tuple(coords))}")
        if leaf.ndim:
            body.line(f"if {v} == 0: continue  # a dense operand stores no zeros in a sparse "
                      f"result")
        else:  # a 0-d operand: no loop to continue, guard its single element instead
            body.line(f"if {v} != 0:  # a dense operand stores no zeros in a sparse result")
            body.depth += 1
        return v
    parent = "0"
    for level_no, level in enumerate(leaf.format.levels):
        mode = leaf.format.mode_order[level_no]
        coord = body.declare(f"i{mode}", "int64_t")
        pos = body.declare(f"q{level_no}", "int64_t")
        if level.full:
            size = expr_c(leaf.shape[mode], {})
            body.line(f"for {coord} in range({size}):")
            body.depth += 1
            nest.in_loop = True
            body.line(f"{pos} = {parent} * {size} + {coord}" if parent != "0"
                      else f"{pos} = {coord}")
        elif level.has_pos:
            p = array_var(leaf.name, f"pos{level_no}")
            body.line(f"for {pos} in range({p}[{parent}], {p}[{parent} + 1]):")
            body.depth += 1
            nest.in_loop = True
            read_coordinate(body, leaf, level_no, pos, coord)
        else:  # singleton: one coordinate at the parent's position
            body.line(f"{pos} = {parent}")
            read_coordinate(body, leaf, level_no, pos, coord)
        nest.bind(sz.in_coord(mode).name, coord)
        parent = pos
    return f"{array_var(leaf.name, 'val')}[{parent}]"


def row_loop_applies(pieces: tuple[StreamPiece, ...], out_order: tuple[int, ...]) -> bool:
    """Can the output's outer storage coordinate drive the loop? Each leaf must have a full
    outer level whose coordinate alone decides the output row, read back by ``backward``;
    every piece guard must talk about the row or about the rest, never both."""
    if len(out_order) != 2:
        return False
    row = sz.out_coord(out_order[0]).name
    for p in pieces:
        lv = p.leaf.format.levels
        if p.free or p.leaf.format.is_dense or len(lv) != 2 or not lv[0].full:
            return False
        a = p.leaf.format.mode_order[0]
        if not _coords_within(p.backward[a], {row}) or \
                not _coords_within(p.coords[out_order[0]], {sz.in_coord(a).name}):
            return False
        for g in sz.conjuncts(p.out_guard):
            syms = {s for s in sz.free_symbols(g) if s.startswith("_")}
            if row in syms and len(syms) > 1:
                return False
    return True


def _coords_within(e: sz.Expr, allowed: set[str]) -> bool:
    """The coordinate symbols ``e`` mentions are among ``allowed`` (sizes do not count)."""
    return {s for s in sz.free_symbols(e) if s.startswith("_")} <= allowed


def row_guards(piece: StreamPiece, row: str) -> list[sz.Expr]:
    """The conjuncts of a piece's output guard that decide which output rows it owns."""
    return [g for g in sz.conjuncts(piece.out_guard) if row in sz.free_symbols(g)]


def _source_row(body: Body, piece: StreamPiece, row: str, r: str) -> str:
    """Inside the output-row loop (variable ``r``): open the piece's row guards, then read
    its source row back through the backward map; returns the C variable holding it."""
    for g in row_guards(piece, row):
        body.line(f"if {expr_c(g, {row: r})}:")
        body.depth += 1
    a = piece.leaf.format.mode_order[0]
    src = body.declare(f"i{a}", "int64_t")
    body.line(f"{src} = {expr_c(piece.backward[a], {row: r})}")
    return src


def emit_rows(body: Body, pieces: tuple[StreamPiece, ...], out_order, out_shape,
              assembler: Assembler, pointwise: Pointwise, index_dtypes) -> None:
    """The row-driven loop: for each output row, each piece's source row (found through the
    backward map) is copied in order. Used when the stream is ordered within a row, so the
    output is appended in storage order (e.g. hstack of CSR: rows interleave pieces)."""
    r = body.declare("r", "int64_t")
    assembler.row_driven = True
    row = sz.out_coord(out_order[0]).name
    body.comment("row-driven loop: output rows outermost; each piece contributes its source "
                 "row (backward map), in piece order")
    with body.block(f"for {r} in range({expr_c(out_shape[out_order[0]], {})}):"):
        for n, piece in enumerate(pieces):
            body.comment(f"piece {n}: row of {piece.leaf.name} ({piece.leaf.format})")
            depth = body.depth
            src = _source_row(body, piece, row, r)
            leaf = piece.leaf
            a = leaf.format.mode_order[0]
            nest = _LoopNest(body, piece, piece.coords)
            # forward guards on the source row alone hold by construction here: the row was
            # read back through the backward map from an output row this piece owns
            nest.guards = [g for g in nest.guards
                           if not _coords_within(g, {sz.in_coord(a).name})]
            body.line(f"q0 = {src}")
            body.declare("q0", "int64_t")
            nest.bind(sz.in_coord(a).name, src)
            b = leaf.format.mode_order[1]
            coord = body.declare(f"i{b}", "int64_t")
            body.declare("q1", "int64_t")
            pos = array_var(leaf.name, "pos1")
            shift = _segment_shift(piece, nest, assembler, out_order[1], sz.in_coord(b).name)
            if shift is not None:
                _emit_segment(body, leaf, assembler, expr_c(shift, nest.env),
                              index_dtypes[leaf.name]["crd1"])
                body.depth = depth
                continue
            body.line(f"for q1 in range({pos}[q0], {pos}[q0 + 1]):")
            body.depth += 1
            nest.in_loop = True
            read_coordinate(body, leaf, 1, "q1", coord)
            nest.bind(sz.in_coord(b).name, coord)
            v = f"{array_var(leaf.name, 'val')}[q1]"
            for layer in piece.layers:
                coords = tuple(expr_c(c, nest.env) for c in layer.coords)
                v = pointwise.map_with(layer.node, {layer.driver: v}, coords)
            assembler.emit(body, tuple(nest.coord_vars), v)
            body.depth = depth
        assembler.end_row(body, r)


def emit_row_count(body: Body, pieces: tuple[StreamPiece, ...], out_order, out_shape) -> None:
    """``total`` = the entries the row-driven loop of :func:`emit_rows` will write: the
    lengths of the source rows of the output rows each piece owns. O(output rows), no
    entry read; lets the runtime allocate a strided slice's output at its size instead of
    its input's (rows are checked monotone by ``run`` before it writes anything; a count
    from a malformed ``pos`` only sizes buffers that ``run`` then refuses to fill)."""
    r = body.declare("r", "int64_t")
    total = body.declare("total", "int64_t")
    row = sz.out_coord(out_order[0]).name
    body.line(f"{total} = 0")
    with body.block(f"for {r} in range({expr_c(out_shape[out_order[0]], {})}):"):
        for piece in pieces:
            depth = body.depth
            src = _source_row(body, piece, row, r)
            pos = array_var(piece.leaf.name, "pos1")
            body.line(f"{total} = {total} + ({pos}[{src} + 1] - {pos}[{src}])")
            body.depth = depth


def _segment_shift(piece, nest, assembler, out_axis: int, inner: str):
    """When a piece copies its source row unchanged except for a constant shift of the inner
    coordinate (no guard on entries, no map, same dtype), that shift; else None."""
    if not isinstance(assembler, AppendOut) or assembler.kinds != ("full", "pos"):
        return None
    if piece.layers or nest.guards or piece.leaf.dtype != assembler.dtype:
        return None
    c = piece.coords[out_axis]
    shift = sz.substitute(c, {inner: 0})
    if inner in sz.free_symbols(shift) or not sz.definitely_equal(c, sz.add(sz.Sym(inner), shift)):
        return None
    return shift


def _emit_segment(body: Body, leaf, assembler, shift: str, leaf_index) -> None:
    """Bulk copy of one source row: values by memcpy, coordinates copied (and shifted) in one
    loop that also range-checks them."""
    pos, val = array_var(leaf.name, "pos1"), array_var(leaf.name, "val")
    start, cnt = (body.declare(x, "int64_t") for x in ("seg_start", "seg_len"))
    body.comment("the row is copied unchanged: bulk copy (inner coordinate shifted)")
    body.line(f"{start} = {pos}[q0]")
    body.line(f"{cnt} = {pos}[q0 + 1] - {start}")
    copy_coordinates(body, leaf, 1, dst="(&out_crd1[n])", src_start=start, count=cnt,
                     shift=shift, out_type=assembler.ix, index_type=index_ctype(leaf_index),
                     also=(f"(&out_val[n])[t] = {val}[{start} + t]",))
    body.line(f"n = n + {cnt}")


def bulk_shifts(piece: StreamPiece, fmt, dtype) -> tuple[sz.Expr, ...] | None:
    """When a piece copies its whole leaf — same level kinds as the output, level by level,
    each output coordinate its leaf coordinate plus a constant shift, no guard, no map, same
    dtype — those shifts (in storage order); else None."""
    leaf = piece.leaf
    kinds = fmt.kinds
    if piece.free or piece.layers or piece.guard != sz.TRUE or leaf.dtype != dtype or \
            leaf.format.kinds != kinds:
        return None
    if kinds != ("full", "pos") and not (kinds and kinds[0] == "pos" and
                                         all(k == "one" for k in kinds[1:])):
        return None
    shifts = []
    for level in range(len(kinds)):
        c = piece.coords[fmt.mode_order[level]]
        var = sz.in_coord(leaf.format.mode_order[level]).name
        shift = sz.substitute(c, {var: 0})
        if not _coords_within(shift, set()) or \
                not sz.definitely_equal(c, sz.add(sz.Sym(var), shift)):
            return None
        shifts.append(shift)
    return tuple(shifts)


def emit_bulk(body: Body, pieces, fmt, out_shape, assembler, index_dtypes) -> None:
    """Whole leaves copied one after another (vstack of CSR or COO): values and coordinates
    by bulk copies, row starts by one pass over the leaf's ``pos`` — the plan scipy's own
    stack uses, valid because the pieces were proved to arrive in storage order."""
    kinds = fmt.kinds
    ix = assembler.ix
    cnt, base, t = (body.declare(x, "int64_t") for x in ("seg_len", "seg_start", "t"))
    for n, piece in enumerate(pieces):
        leaf = piece.leaf
        shifts = [expr_c(s, {}) for s in bulk_shifts(piece, fmt, assembler.dtype)]
        body.comment(f"piece {n}: all of {leaf.name} ({leaf.format}), coordinates shifted by "
                     f"({', '.join(shifts)})")
        a = lambda part: array_var(leaf.name, part)  # noqa: E731
        if kinds == ("full", "pos"):
            rows = expr_c(leaf.shape[leaf.format.mode_order[0]], {})
            body.line(f"{base} = {a('pos1')}[0]")
            body.comment("rows before this piece are empty; then this piece's row starts")
            with body.block(f"while cur < {shifts[0]}:"):
                body.line("cur = cur + 1")
                body.line(f"out_pos1[cur] = <{ix}>n")
            with body.block(f"for {t} in range({rows}):"):
                body.line(f"out_pos1[{shifts[0]} + {t} + 1] = <{ix}>(n + {a('pos1')}[{t} + 1]"
                          f" - {base})")
            body.line(f"cur = {shifts[0]} + {rows}")
            body.line(f"{cnt} = {a('pos1')}[{rows}] - {base}")
            levels = [(1, "crd1", shifts[1])]
        else:
            body.line(f"{base} = {a('pos0')}[0]")
            body.line(f"{cnt} = {a('pos0')}[1] - {base}")
            levels = [(lv, f"crd{lv}", shifts[lv]) for lv in range(len(kinds))]
        vt = storage_ctype(leaf.dtype)
        body.line(f"memcpy(&out_val[n], &{a('val')}[{base}], {cnt} * sizeof({vt}))")
        for lv, part, shift in levels:
            copy_coordinates(body, leaf, lv, dst=f"(&out_{part}[n])", src_start=base,
                             count=cnt, shift=shift, out_type=ix,
                             index_type=index_ctype(index_dtypes[leaf.name][part]))
        body.line(f"n = n + {cnt}")

"""What a lowering can do, as facts computed from levels and pieces: the planner asks them to
choose a plan, and the lowering that carries the plan out reads the same facts, so that a
plan is never chosen that its lowering cannot emit. Each reads level kinds (``Format.kinds``)
and a piece's maps (``streams.StreamPiece``), never a format's name.

* :func:`appendable` — an output format the append assembler (``lower/outputs.AppendOut``)
  fills in storage order;
* :func:`bulk_shifts` — a piece that is its whole leaf, shifted: copied by bulk copies
  (``lower/lower_bulk.py``), with :func:`rows_expanded` for CSR/CSC copied into COO;
* :func:`row_loop_applies` — the output's outer coordinate can drive the loop (row loops,
  ``lower/lower_stream.py``), with :func:`coo_run_leaf` (a COO leaf read as runs of rows,
  ``lower/coo_rows.py``) and :func:`broadcast_row` (a repeated source row);
* :func:`coordinate_symbols` — the coordinate symbols of an index expression.
"""

from __future__ import annotations

from sparsefold.compiler.plan.streams import StreamPiece
from sparsefold.spec import sizes as sz
from sparsefold.spec.formats import Format

__all__ = ["appendable", "bulk_shifts", "rows_expanded", "row_loop_applies", "coo_run_leaf",
           "broadcast_row", "coordinate_symbols"]


def coordinate_symbols(e: sz.Expr) -> set[str]:
    """The coordinate symbols (``_k*``, ``_i*``, ``_f*``) of an expression."""
    return {s for s in sz.free_symbols(e) if s.startswith("_")}


def appendable(fmt: Format) -> bool:
    """Formats ``lower/outputs.AppendOut`` fills: (full, pos), (pos,), (pos, pos), (pos,
    one...)."""
    kinds = fmt.kinds
    return kinds in (("full", "pos"), ("pos",), ("pos", "pos")) or bool(
        kinds and kinds[0] == "pos" and all(k == "one" for k in kinds[1:]))


def rows_expanded(leaf_kinds, out_kinds) -> bool:
    """CSR/CSC copied whole into 2-d COO: the row coordinates are expanded from ``pos``."""
    return leaf_kinds == ("full", "pos") and out_kinds == ("pos", "one")


def bulk_shifts(piece: StreamPiece, fmt, dtype) -> tuple[sz.Expr, ...] | None:
    """When a piece copies its whole leaf — same level kinds as the output, level by level,
    each output coordinate its leaf coordinate plus a constant shift, no guard, no map, same
    dtype — those shifts (in storage order); else None."""
    leaf = piece.leaf
    kinds = fmt.kinds
    if piece.free or piece.layers or piece.guard != sz.TRUE or leaf.dtype != dtype or \
            leaf.format.kinds != kinds and not rows_expanded(leaf.format.kinds, kinds):
        return None
    if kinds != ("full", "pos") and not (kinds and kinds[0] == "pos" and
                                         all(k == "one" for k in kinds[1:])):
        return None
    shifts = []
    for level in range(len(kinds)):
        c = piece.coords[fmt.mode_order[level]]
        var = sz.in_coord(leaf.format.mode_order[level]).name
        shift = sz.substitute(c, {var: 0})
        if coordinate_symbols(shift) or not sz.definitely_equal(c, sz.add(sz.Sym(var), shift)):
            return None
        shifts.append(shift)
    return tuple(shifts)


def coo_run_leaf(piece: StreamPiece) -> bool:
    """Is the piece's leaf 2-d COO (a non-unique outer coordinate, one inner coordinate per
    entry)?"""
    return piece.leaf.format.kinds == ("pos", "one") and piece.leaf.ndim == 2


def row_loop_applies(pieces: tuple[StreamPiece, ...], out_order: tuple[int, ...], *,
                     coo_runs: bool = False, broadcast_rows: bool = False) -> bool:
    """Can the output's outer storage coordinate drive the loop? Each leaf must have a full
    outer level whose coordinate alone decides the output row, read back by ``backward``;
    every piece guard must talk about the row or about the rest, never both. ``coo_runs``:
    a 2-d COO leaf also qualifies (its rows are read as runs, :func:`coo_run_leaf`; the
    caller must prove each such piece arrives in output order on its own).
    ``broadcast_rows``: a piece that repeats a source row along the output rows qualifies
    too (:func:`broadcast_row`; co-iteration's row cursors open ``backward(row)``)."""
    if len(out_order) != 2:
        return False
    row = sz.out_coord(out_order[0]).name
    for p in pieces:
        lv = p.leaf.format.levels
        repeated = broadcast_rows and broadcast_row(p, out_order)
        if (p.free and not repeated) or p.leaf.format.is_dense or len(lv) != 2 or not (
                lv[0].full or (coo_runs and coo_run_leaf(p))):
            return False
        a = p.leaf.format.mode_order[0]
        if not coordinate_symbols(p.backward[a]) <= {row} or (not repeated and not (
                coordinate_symbols(p.coords[out_order[0]]) <= {sz.in_coord(a).name})):
            return False
        for g in sz.conjuncts(p.out_guard):
            syms = coordinate_symbols(g)
            if row in syms and len(syms) > 1:
                return False
    return True


def broadcast_row(piece: StreamPiece, out_order: tuple[int, ...]) -> bool:
    """Does ``piece`` repeat one source row along the output's rows (``broadcast_to(v, (n,
    m))`` of a (1, m) row)? Its one free variable is the output row coordinate and nothing
    else reads it (not the inner coordinate, the guard or a layer): output row ``r`` holds
    source row ``backward(r)``'s entries, whatever ``r`` is."""
    if len(piece.free) != 1:
        return False
    free = piece.free[0][0]
    if not sz.definitely_equal(piece.coords[out_order[0]], sz.Sym(free)):
        return False
    others = [piece.coords[out_order[1]], piece.guard] + \
        [c for layer in piece.layers for c in layer.coords]
    return all(free not in sz.free_symbols(e) for e in others)

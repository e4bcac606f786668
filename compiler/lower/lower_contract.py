"""Lowering a contraction (``contract.py``) to loop IR: Gustavson's row-by-row product.

For each output row ``r`` (a row of the driver): every entry ``(k, x)`` of the driver's row
locates row ``k`` of the other operand, whose entries ``(c, y)`` add ``x * y`` into column
``c`` of the row. A sparse result accumulates in a workspace (``workspace.py``) and is
appended row by row in storage order; a dense result accumulates in its own row.

A sparse result is sized exactly: a ``count`` function runs the same loops without values
first (the symbolic pass of scipy's ``csr_matmat``), with the workspace's marks tagged
``r``; ``run`` tags rows ``rows + r`` so the marks ``count`` left need no clearing.

Into CSR (or CSC, transposed) the rows run in parallel (``low.rows_parallel``; see
docs/threads.md): ``count`` writes each row's length into ``row_pos[r + 1]`` from a parallel
row loop and prefix-sums them, so ``row_pos[r]`` is where row ``r`` starts; ``run`` fills
every row from there in parallel. Each thread owns one slice of the workspace (``team``
slices, as many as the runtime allocated); a row is computed by one thread in the order one
thread would, so the result is bit-identical for any thread count. With one thread the same
code runs as a plain loop. A dense result's rows (columns, transposed) are disjoint: its row
loop is parallel with no workspace at all.
"""

from __future__ import annotations

import numpy as np

from sparsefold.compiler.emit.cnames import ctype
from sparsefold.compiler.emit.loops import INT, Bin, Call, Expr, Lit, Load, Not, Param, Var, cast
from sparsefold.compiler.emit.parallel import THREAD_ID
from sparsefold.compiler.lower.bounds import check_segment
from sparsefold.compiler.lower.lower_stream import row_guards
from sparsefold.compiler.lower.lowering import Lowering
from sparsefold.compiler.lower.outputs import AppendOut, DenseOut
from sparsefold.compiler.lower.values import Values, convert, index
from sparsefold.compiler.lower.workspace import SortedWorkspace, Workspace
from sparsefold.compiler.plan.order import implied_row_guards
from sparsefold.compiler.plan.plans import ContractPlan, Operand
from sparsefold.spec import sizes as sz

__all__ = ["lower_contract", "lower_contract_count", "contract_sizes", "fills_rows_in_parallel",
           "TEAM"]

TEAM = "ws_team"  # the runtime's value: how many workspace slices it allocated


def fills_rows_in_parallel(asm) -> bool:
    """Does a sparse result take the count / prefix sum / parallel fill path? Into a CSR
    (CSC) output whose rows are appended independently; not through ``MapChecked`` (an
    unproved operator's stage), and not into a doubly compressed output (its row list is
    appended in order)."""
    return type(asm) is AppendOut and asm.kinds == ("full", "pos")


def _team(low: Lowering) -> Var:
    return Var(low._param(Param(TEAM, "int", ("out", TEAM))).name)


def contract_sizes(plan: ContractPlan):
    """(rows, columns) of the product as size expressions: driver rows × located columns."""
    return plan.driver.node.shape[0], plan.located.node.shape[1]


def _sizes(g: sz.Expr) -> set[str]:
    return {s for s in sz.free_symbols(g) if not s.startswith("_")}


class _Rows:
    """Walks the rows of one operand's matrix view: for row ``r`` (an IR expression), each
    piece's source row (guards, backward map), its entries, their column and value."""

    def __init__(self, low: Lowering, operand: Operand, tag: str, values: Values,
                 checked: bool = False):
        self.low, self.operand, self.tag, self.values = low, operand, tag, values
        self.checked = checked  # every coordinate was checked before the loops

    def check_all(self) -> Expr | None:
        """Check every coordinate of every piece's leaf in one pass before the loops (a
        located operand's rows are read many times); returns the OR of the flags."""
        flags = []
        b = self.low.b
        for piece in self.operand.pieces:
            arrays = self.low.leaf(piece.leaf)
            rows = index(piece.leaf.shape[piece.leaf.format.mode_order[0]])
            flags.append(check_segment(b, self.low.sites, piece.leaf, 1, arrays.crd[1],
                                       Load(arrays.pos[1], Lit("0", INT)),
                                       Load(arrays.pos[1], rows)))
        self.checked = True
        out = flags[0]
        for f in flags[1:]:
            out = Bin("|", out, f)
        return out

    def entries(self, r: Expr, body, ahead=None) -> None:
        """Emit ``body(column, value_fn)`` for every entry of row ``r`` (pieces in order);
        ``ahead(piece, arrays, q, src)`` first in each entry's iteration (a prefetch)."""
        b = self.low.b
        for n, piece in enumerate(self.operand.pieces):
            leaf = piece.leaf
            arrays = self.low.leaf(leaf)
            a, c = leaf.format.mode_order
            tag = f"{self.tag}{n if len(self.operand.pieces) > 1 else ''}"
            env_row = sz.out_binding((r,))
            owned = [index(g, env_row) for g in row_guards(piece, sz.out_coord(0).name)]
            cms = []
            for g in owned:
                cm = b.if_(g)
                cm.__enter__()
                cms.append(cm)
            src, q, inner = b.fresh(f"s_{tag}"), b.fresh(f"q_{tag}"), b.fresh(f"i_{tag}")
            b.assign(src, index(piece.backward[a], env_row))
            env = {sz.in_coord(a).name: src, sz.in_coord(c).name: inner}
            implied = implied_row_guards(piece, sz.out_coord(0).name,
                                         self.operand.node.shape[0])
            per_row = row_guards(piece, sz.out_coord(0).name)  # (opened above)
            guards = [g for g in sz.conjuncts(piece.guard) if g not in implied and
                      not (not sz.free_symbols(g) - _sizes(g) and g in per_row)]
            start, end = Load(arrays.pos[1], src), Load(arrays.pos[1], src + 1)
            bad = None
            if not self.checked:  # the row checked in one pass, skipped when bad
                bad = check_segment(b, self.low.sites, leaf, 1, arrays.crd[1], start, end)
                cm = b.if_(Not(bad))
                cm.__enter__()
                cms.append(cm)
            with b.loop(q, start, end):
                if ahead is not None:
                    ahead(piece, arrays, q, src)
                b.assign(inner, Load(arrays.crd[1], q))
                for g in guards:
                    with b.if_(Not(index(g, env))):
                        b.cont()
                col = b.fresh(f"c_{tag}")
                b.assign(col, index(piece.coords[1], env))

                def value(piece=piece, q=q, env=env, arrays=arrays) -> Expr:
                    v: Expr = Load(arrays.val, q)
                    for layer in piece.layers:
                        coords = tuple(index(x, env) for x in layer.coords)
                        v = self.values.map_with(layer.node, {layer.driver: v}, coords)
                    return v
                body(col, value)
            for cm in reversed(cms):
                cm.__exit__(None, None, None)


# How far ahead (in driver entries) the located row's position is fetched, and its entries:
# a located row is a random row of the other operand, whose pos, crd and val are cache misses
# the row before cannot hide (uniform 200000², ~10 per row: run 0.85 -> 0.65 s, count 0.16 ->
# 0.11 s, measured side by side; distances 1/3, 2/5 and 4/8 within noise of each other).
PREFETCH_ROW, PREFETCH_ENTRIES = 5, 2

def _prefetcher(low: Lowering, located: _Rows, values: bool):
    """``ahead`` for the driver's entries (``_Rows.entries``): the located row of the entry
    ``PREFETCH_ROW`` ahead has its position fetched, the one ``PREFETCH_ENTRIES`` ahead its
    coordinates (and values). Entries past the current row are read (the next rows' first
    ones) but only within the driver's stored entries, and a located row is fetched only when
    in range: the hint never reads outside an array. None when the located operand has
    several pieces (a view of several leaves)."""
    if len(located.operand.pieces) != 1:
        return None
    b = low.b
    lpiece = located.operand.pieces[0]
    larrays = low.leaf(lpiece.leaf)
    la = lpiece.leaf.format.mode_order[0]
    lrows = index(lpiece.leaf.shape[la])

    def ahead(piece, arrays, q, src) -> None:
        leaf = piece.leaf
        a, c = leaf.format.mode_order
        stored = Load(arrays.pos[1], index(leaf.shape[a]))
        for dist, kind in ((PREFETCH_ROW, "pos"), (PREFETCH_ENTRIES, "entries")):
            with b.if_(Bin("<", q + dist, stored)):
                col = index(piece.coords[1], {sz.in_coord(a).name: src,
                                              sz.in_coord(c).name: Load(arrays.crd[1],
                                                                        q + dist)})
                row = b.fresh("pf_row")
                b.assign(row, index(lpiece.backward[la], sz.out_binding((col,))))
                with b.if_(Bin("<", cast("uint64_t", row), cast("uint64_t", lrows))):
                    if kind == "pos":
                        _prefetch(b, larrays.pos[1], row)
                    else:
                        at = b.fresh("pf_at")
                        b.assign(at, Load(larrays.pos[1], row))
                        _prefetch(b, larrays.crd[1], at)
                        if values:
                            _prefetch(b, larrays.val, at)
    return ahead


def _prefetch(b, array, at: Var) -> None:
    b.emit(Call("__builtin_prefetch", (Lit(f"&{array.name}[{at.name}]", "", (at,)),)))


def _coords(plan: ContractPlan, r: Expr, c: Expr) -> tuple[Expr, Expr]:
    """Logical output coordinates of (driver row, located column)."""
    return (c, r) if plan.transposed else (r, c)


def lower_contract(low: Lowering, plan: ContractPlan, asm, fmt, program) -> None:
    b = low.b
    values = Values(b, low.dense, sites=low.sites)
    rows_n, cols_n = contract_sizes(plan)
    rows, cols = index(rows_n), index(cols_n)
    driver = _Rows(low, plan.driver, "d", values)
    located = _Rows(low, plan.located, "l", values)
    # a located row is read once per entry that points at it: all of them checked up front
    with b.if_(Not(located.check_all())):
        if low.rows_parallel and fills_rows_in_parallel(asm) and not low.sorted_workspace:
            _parallel_fill(low, plan, asm, values, driver, located, rows, cols)
        else:
            _product_rows(low, plan, asm, values, driver, located, rows, cols)


def _product_rows(low, plan, asm, values, driver, located, rows, cols) -> None:
    b = low.b
    product = plan.product
    acc_dtype = plan.reduction.node.dtype
    first, second = (1, 0) if plan.transposed else (0, 1)
    r = b.fresh("r")
    note = (f"Gustavson: for each row of {plan.driver.name}, its entries (k, x) locate row "
            f"k of {plan.located.name}; x * y accumulates ")
    if isinstance(asm, DenseOut):
        # a driver row writes only cells with its own row (column, transposed) coordinate
        parallel = low.rows_parallel and type(asm) is DenseOut
        with b.block(note + "in the dense result's row"):
            with b.loop(r, 0, rows, parallel=parallel):
                def each_x(k, x_value):
                    x = b.fresh("x", _ct(product.args[first].dtype))
                    b.assign(x, convert(x_value(), product.args[first].dtype))

                    def each_y(c, y_value):
                        given = {first: x, second: y_value()}
                        v = values.map_with(product, given, ())
                        cell = asm.cell(_coords(plan, r, c))
                        b.store(asm.val, cell, convert(Bin("+", Load(asm.val, cell),
                                                           convert(v, acc_dtype)), acc_dtype))
                    located.entries(k, each_y)
                driver.entries(r, each_x)
        return
    if low.sorted_workspace:
        ws = SortedWorkspace(low, cols, acc_dtype)
        note += ("as (column, arrival, value) in a sorted workspace (its rows are far shorter "
                 "than the result's); each column's sum is appended in order")
    else:
        ws = Workspace(low, cols, acc_dtype)
        note += "in a row workspace; the touched columns are appended in order"
    tag = b.fresh("tag")
    with b.block(note):
        with b.loop(r, 0, rows):
            b.assign(tag, Bin("+", rows, r))
            ws.start_row()
            _workspace_row(low, plan, asm, values, driver, located, ws, r, tag)


def _workspace_row(low, plan, asm, values, driver, located, ws: Workspace, r: Var,
                   tag: Var) -> None:
    """Row ``r`` of a sparse product: each entry (k, x) of the driver's row locates row k
    of the other operand, x * y accumulates in ``ws``; the touched columns go to ``asm`` in
    order."""
    b, product = low.b, plan.product
    first, second = (1, 0) if plan.transposed else (0, 1)

    def each_x(k, x_value):
        x = b.fresh("x", _ct(product.args[first].dtype))
        b.assign(x, convert(x_value(), product.args[first].dtype))

        def each_y(c, y_value):
            v = values.map_with(product, {first: x, second: y_value()}, ())
            ws.add(c, v, tag)
        located.entries(k, each_y)
    driver.entries(r, each_x, ahead=_prefetcher(low, located, values=True))
    ws.flush(tag, lambda c, v: asm.emit(low, _coords(plan, r, c), v))
    asm.end_row(low, r)


def _parallel_fill(low, plan, asm: AppendOut, values, driver, located, rows, cols) -> None:
    """Every row from its start ``row_pos[r]`` (``count`` wrote them), in parallel, each
    thread in its own workspace slice; each entry lands where the serial loop puts it."""
    b = low.b
    acc_dtype = plan.reduction.node.dtype
    row_pos = low.out("row_pos", INT)
    ws = Workspace(low, cols, acc_dtype)
    r, tag = b.fresh("r"), b.fresh("tag")
    whole, asm.n = asm.n, b.fresh("n_row")  # the row's own cursor: private to its thread
    with b.block(f"Gustavson, rows in parallel: for each row of {plan.driver.name}, its "
                 f"entries (k, x) locate row k of {plan.located.name}; x * y accumulates in "
                 f"this thread's workspace slice; the touched columns are written in order "
                 f"from the row's start (count's prefix sum)"):
        with b.loop(r, 0, rows, parallel=True, team=_team(low)):
            ws.slice_of(THREAD_ID)
            b.assign(tag, Bin("+", rows, r))
            b.assign(asm.n, Load(row_pos, r))
            ws.start_row()
            _workspace_row(low, plan, asm, values, driver, located, ws, r, tag)
    asm.n = whole
    b.assign(whole, Load(row_pos, rows))


def lower_contract_count(low: Lowering, plan: ContractPlan, rows_out: bool = False) -> Var:
    """The symbolic pass: ``total`` = the entries of the product (workspace tagged ``r``).
    ``rows_out`` (the parallel fill): the rows are counted in parallel, each thread in its
    own workspace slice, into ``row_pos[r + 1]``, then prefix-summed into row starts. With a
    sorted workspace (``low.sorted_workspace``) each row's *products* are counted instead,
    into ``row_pos[r + 1]`` and prefix-summed: ``total`` bounds the result's entries, and the
    runtime sizes the workspace by the largest row."""
    b = low.b
    values = Values(b, low.dense, sites=low.sites)
    rows_n, cols_n = contract_sizes(plan)
    rows, cols = index(rows_n), index(cols_n)
    ws = None if low.sorted_workspace else Workspace(low, cols, None)
    driver = _Rows(low, plan.driver, "d", values)
    located = _Rows(low, plan.located, "l", values)
    r, total = b.fresh("r"), b.fresh("total")
    b.assign(total, Lit("0", INT))
    # as in ``run``: a located row is read once per entry that points at it, so every located
    # coordinate is checked in one pass first (O(stored), not O(products))
    with b.if_(Not(located.check_all())):
        if low.sorted_workspace:
            return _count_products(low, driver, located, rows, total)
        if not rows_out:
            with b.loop(r, 0, rows):
                ws.start_row()
                driver.entries(r, lambda k, _x: located.entries(
                    k, lambda c, _y: ws.count(c, r)), ahead=_prefetcher(low, located, False))
                b.assign(total, total + ws.n)
            return total
        row_pos = low.out("row_pos", INT)
        with b.block("each row's length, rows in parallel (a workspace slice per thread)"):
            with b.loop(r, 0, rows, parallel=True, team=_team(low)):
                ws.slice_of(THREAD_ID)
                ws.start_row()
                driver.entries(r, lambda k, _x: located.entries(
                    k, lambda c, _y: ws.count(c, r)), ahead=_prefetcher(low, located, False))
                b.store(row_pos, r + 1, ws.n)
        t = b.fresh("t")
        with b.block("prefix sum: row starts"):
            b.store(row_pos, Lit("0", INT), Lit("0", INT))
            with b.loop(t, 0, rows):
                b.store(row_pos, t + 1, Bin("+", Load(row_pos, t + 1), Load(row_pos, t)))
        b.assign(total, Load(row_pos, rows))
    return total


def _count_products(low: Lowering, driver, located, rows: Expr, total: Var) -> Var:
    b = low.b
    row_pos = low.out("row_pos", INT)
    r, n = b.fresh("r"), b.fresh("products")
    with b.block("each row's product count (a sorted workspace holds a row's products), "
                 "prefix-summed"):
        b.store(row_pos, Lit("0", INT), Lit("0", INT))
        with b.loop(r, 0, rows):
            b.assign(n, Lit("0", INT))
            driver.entries(r, lambda k, _x: located.entries(
                k, lambda c, _y: b.assign(n, n + 1)))
            b.store(row_pos, r + 1, Bin("+", Load(row_pos, r), n))
        b.assign(total, Load(row_pos, rows))
    return total


def _ct(dt) -> str:
    return ctype(np.dtype(dt))


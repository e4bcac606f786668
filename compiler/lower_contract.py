"""Lowering a contraction (``contract.py``) to loop IR: Gustavson's row-by-row product.

For each output row ``r`` (a row of the driver): every entry ``(k, x)`` of the driver's row
locates row ``k`` of the other operand, whose entries ``(c, y)`` add ``x * y`` into column
``c`` of the row. A sparse result accumulates in a workspace (``workspace.py``) and is
appended row by row in storage order; a dense result accumulates in its own row.

A sparse result is sized exactly: a ``count`` function runs the same loops without values
first (the symbolic pass of scipy's ``csr_matmat``), with the workspace's marks tagged
``r``; ``run`` tags rows ``rows + r`` so the marks ``count`` left need no clearing.
"""

from __future__ import annotations

import numpy as np

from sparsefold.compiler.bounds import check_segment
from sparsefold.compiler.loops import INT, Bin, Expr, Lit, Load, Not, Var
from sparsefold.compiler.lower_stream import coordinate_symbols, row_guards
from sparsefold.compiler.lowering import Lowering
from sparsefold.compiler.outputs import DenseOut
from sparsefold.compiler.plans import ContractPlan, Operand
from sparsefold.compiler.values import Values, convert, index
from sparsefold.compiler.workspace import Workspace
from sparsefold.spec import sizes as sz

__all__ = ["lower_contract", "lower_contract_count", "contract_sizes"]


def contract_sizes(plan: ContractPlan):
    """(rows, columns) of the product as size expressions: driver rows × located columns."""
    return plan.driver.node.shape[0], plan.located.node.shape[1]


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

    def entries(self, r: Expr, body) -> None:
        """Emit ``body(column, value_fn)`` for every entry of row ``r`` (pieces in order)."""
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
            guards = [g for g in sz.conjuncts(piece.guard)
                      if not coordinate_symbols(g) <= {sz.in_coord(a).name}]
            start, end = Load(arrays.pos[1], src), Load(arrays.pos[1], src + 1)
            bad = None
            if not self.checked:  # the row checked in one pass, skipped when bad
                bad = check_segment(b, self.low.sites, leaf, 1, arrays.crd[1], start, end)
                cm = b.if_(Not(bad))
                cm.__enter__()
                cms.append(cm)
            with b.loop(q, start, end):
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
        with b.block(note + "in the dense result's row"):
            with b.loop(r, 0, rows):
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
    ws = Workspace(low, cols, acc_dtype)
    tag = b.fresh("tag")
    with b.block(note + "in a row workspace; the touched columns are appended in order"):
        with b.loop(r, 0, rows):
            b.assign(tag, Bin("+", rows, r))
            ws.start_row()

            def each_x(k, x_value):
                x = b.fresh("x", _ct(product.args[first].dtype))
                b.assign(x, convert(x_value(), product.args[first].dtype))

                def each_y(c, y_value):
                    v = values.map_with(product, {first: x, second: y_value()}, ())
                    ws.add(c, v, tag)
                located.entries(k, each_y)
            driver.entries(r, each_x)
            ws.flush(tag, lambda c, v: asm.emit(low, _coords(plan, r, c), v))
            asm.end_row(low, r)


def lower_contract_count(low: Lowering, plan: ContractPlan) -> Var:
    """The symbolic pass: ``total`` = the entries of the product (workspace tagged ``r``)."""
    b = low.b
    values = Values(b, low.dense, sites=low.sites)
    rows_n, cols_n = contract_sizes(plan)
    rows, cols = index(rows_n), index(cols_n)
    ws = Workspace(low, cols, None)
    driver = _Rows(low, plan.driver, "d", values)
    located = _Rows(low, plan.located, "l", values)
    r, total = b.fresh("r"), b.fresh("total")
    b.assign(total, Lit("0", INT))
    # as in ``run``: a located row is read once per entry that points at it, so every located
    # coordinate is checked in one pass first (O(stored), not O(products))
    with b.if_(Not(located.check_all())):
        with b.loop(r, 0, rows):
            ws.start_row()
            driver.entries(r, lambda k, _x: located.entries(k, lambda c, _y: ws.count(c, r)))
            b.assign(total, total + ws.n)
    return total


def _ct(dt) -> str:
    from sparsefold.compiler.cnames import ctype
    return ctype(np.dtype(dt))


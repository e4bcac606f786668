"""Co-iteration: a map of two sparse operands, merged in output order (DESIGN §3.2).

``A[::2] * B`` or ``flatten(A) * b``: each sparse argument is a single-piece stream (one
leaf seen through shape operators and unary maps) whose entries are *proved* to arrive in the
output's storage order (``order.py``). Each becomes a **cursor**: a position in its leaf's
storage plus the output key of the entry there, with an inline ``advance`` that skips entries
(and whole rows) its guards exclude. The merge is the classic two-finger walk:

* intersection, when the function annihilates both arguments (``multiply``, ``logical_and``):
  emit only where the keys agree;
* union, when ``f(0, 0) == 0`` (``add``, ``maximum``, ...): emit every key, reading the
  missing side as 0.

For floats, intersection skips ``f(0, x)`` with ``x`` stored — exact only when stored values
are finite (``0 * nan`` is ``nan``); the runtime checks and otherwise runs the union variant,
which evaluates every position either side stores. Output keys arrive strictly increasing,
so the result is appended in storage order.
"""

from __future__ import annotations

from dataclasses import dataclass

from sparsefold.compiler.assembly import Assembler
from sparsefold.compiler.checks import read_coordinate
from sparsefold.compiler.cnames import array_var, c_literal
from sparsefold.compiler.order import prune_guards, stream_is_ordered, stream_is_row_ordered
from sparsefold.compiler.pointwise import Body, Pointwise, expr_c
from sparsefold.compiler.stream_kernel import row_guards, row_loop_applies
from sparsefold.compiler.streams import NotAStream, StreamPiece, is_locatable, stream_pieces
from sparsefold.spec import sizes as sz
from sparsefold.spec.compute import Literal, Map
from sparsefold.spec.formats import Format
from sparsefold.spec.functions import zero_preserving
from sparsefold.spec.ir import Node

__all__ = ["MergePlan", "merge_plan", "emit_merge", "emit_row_merge", "pieces_mergeable",
           "emit_stream_merge"]


@dataclass(frozen=True)
class MergePlan:
    node: Map
    positions: tuple[int, int]          # argument positions of the two sparse operands
    pieces: tuple[StreamPiece, StreamPiece]
    intersect: bool
    rows: bool = False                  # output rows outermost (emit_row_merge)


def _walkable_by_cursor(piece: StreamPiece) -> bool:
    """One leaf walked by a single cursor: no free (broadcast) variables, and a CSR-like
    (full, then pos/crd) or COO-like (pos/crd, then singletons) level layout."""
    k = piece.leaf.format.kinds
    return not piece.free and (k == ("full", "pos") or (k and k[0] == "pos" and
                                                         all(x == "one" for x in k[1:])))


def merge_plan(program: Node, fmt: Format, *, union: bool = False) -> MergePlan | None:
    """A merge plan for ``program`` (a map of two sparse operands), or None."""
    if not isinstance(program, Map):
        return None
    sparse = [d for d, a in enumerate(program.args) if not is_locatable(a)]
    if len(sparse) != 2:
        return None
    fn = program.fn
    others = [a for d, a in enumerate(program.args) if d not in sparse]
    intersect = all(d in fn.annihilates for d in sparse) and not union
    if not intersect:
        if not all(isinstance(a, Literal) for a in others):
            return None
        if not zero_preserving(fn, [a.dtype if d in sparse else a.typed_value()
                                    for d, a in enumerate(program.args)]):
            return None
    pieces = []
    for d in sparse:
        arg = program.args[d]
        if arg.shape != program.shape:
            return None
        try:
            ps = stream_pieces(arg)
        except NotAStream:
            return None
        if len(ps) != 1 or not _walkable_by_cursor(ps[0]):
            return None
        ps = prune_guards(ps)
        pieces.append(ps[0])
    pieces = tuple(pieces)
    order = fmt.mode_order
    if len(order) == 2 and row_loop_applies(pieces, order) and all(
            stream_is_row_ordered((p,), order) for p in pieces):
        return MergePlan(program, (sparse[0], sparse[1]), pieces, intersect, rows=True)
    if not all(stream_is_ordered((p,), order) for p in pieces):
        return None
    return MergePlan(program, (sparse[0], sparse[1]), pieces, intersect)


class _Cursor:
    """Inline code for walking one leaf's entries in storage order, guards applied."""

    def __init__(self, body: Body, piece: StreamPiece, tag: str, out_order, pointwise):
        self.body, self.piece, self.tag, self.order = body, piece, tag, out_order
        self.pointwise = pointwise
        leaf = piece.leaf
        self.kinds = leaf.format.kinds
        self.q = body.declare(f"q_{tag}", "int64_t")
        self.done = body.declare(f"done_{tag}", "bint")
        self.row = body.declare(f"row_{tag}", "int64_t") if self.kinds[0] == "full" else None
        self.env: dict[str, str] = {}
        self.keys = [body.declare(f"key_{tag}{level}", "int64_t")
                     for level in range(len(out_order))]
        self.coords = {}
        for level_no in range(len(self.kinds)):
            mode = leaf.format.mode_order[level_no]
            self.coords[mode] = body.declare(f"i{mode}_{tag}", "int64_t")
            self.env[sz.in_coord(mode).name] = self.coords[mode]

    def _a(self, part: str) -> str:
        return array_var(self.piece.leaf.name, part)

    def init(self) -> None:
        b = self.body
        b.line(f"{self.done} = 0")
        if self.row is not None:
            b.line(f"{self.row} = 0")
            b.line(f"{self.q} = {self._a('pos1')}[0] - 1")
        else:
            b.line(f"{self.q} = {self._a('pos0')}[0] - 1")
        self.advance()

    def advance(self) -> None:
        b, piece, leaf = self.body, self.piece, self.piece.leaf
        guards = sz.conjuncts(piece.guard)
        b.line(f"{self.q} = {self.q} + 1")
        with b.block("while True:"):
            if self.row is not None:
                a = leaf.format.mode_order[0]
                rows = expr_c(leaf.shape[a], {})
                pos = self._a("pos1")
                b.line(f"while {self.row} < {rows} and {self.q} >= {pos}[{self.row} + 1]:")
                b.line(f"    {self.row} = {self.row} + 1")
                with b.block(f"if {self.row} >= {rows}:"):
                    b.line(f"{self.done} = 1")
                    b.line("break")
                b.line(f"{self.coords[a]} = {self.row}")
                on_row = [g for g in guards
                          if {s for s in sz.free_symbols(g) if s.startswith("_")}
                          <= {sz.in_coord(a).name}]
                for g in on_row:
                    guards.remove(g)
                    with b.block(f"if not ({expr_c(g, self.env)}):"):
                        b.line(f"{self.q} = {pos}[{self.row} + 1]")
                        b.line("continue")
                inner = leaf.format.mode_order[1]
                read_coordinate(b, leaf, 1, self.q, self.coords[inner])
            else:
                with b.block(f"if {self.q} >= {self._a('pos0')}[1]:"):
                    b.line(f"{self.done} = 1")
                    b.line("break")
                for level_no in range(len(self.kinds)):
                    mode = leaf.format.mode_order[level_no]
                    read_coordinate(b, leaf, level_no, self.q, self.coords[mode])
            for g in guards:
                with b.block(f"if not ({expr_c(g, self.env)}):"):
                    b.line(f"{self.q} = {self.q} + 1")
                    b.line("continue")
            for level, mode in enumerate(self.order):
                b.line(f"{self.keys[level]} = {expr_c(piece.coords[mode], self.env)}")
            b.line("break")

    def value(self) -> str:
        v = f"{self._a('val')}[{self.q}]"
        for layer in self.piece.layers:
            coords = tuple(expr_c(c, self.env) for c in layer.coords)
            v = self.pointwise.map_with(layer.node, {layer.driver: v}, coords)
        return v


def _lt(a: list[str], b: list[str]) -> str:
    if len(a) == 1:
        return f"{a[0]} < {b[0]}"
    return f"({a[0]} < {b[0]} or ({a[0]} == {b[0]} and {_lt(a[1:], b[1:])}))"


def emit_merge(body: Body, plan: MergePlan, fmt: Format, assembler: Assembler,
               pointwise: Pointwise) -> None:
    order = fmt.mode_order
    ca = _Cursor(body, plan.pieces[0], "a", order, pointwise)
    cb = _Cursor(body, plan.pieces[1], "b", order, pointwise)
    pa, pb = plan.positions
    node = plan.node

    def emit(known: dict[int, str], keys: list[str]) -> None:
        coords = [None] * len(order)
        for level, mode in enumerate(order):
            coords[mode] = keys[level]
        v = pointwise.map_with(node, known, tuple(coords))
        assembler.emit(body, tuple(coords), v)

    zero_a = c_literal(0, node.args[pa].dtype)
    zero_b = c_literal(0, node.args[pb].dtype)
    kind = "intersection" if plan.intersect else "union"
    body.comment(f"merge ({kind}) of {ca.piece.leaf.name} and {cb.piece.leaf.name}: two "
                 f"cursors walking their leaves in output storage order (proved)")
    ca.init()
    cb.init()
    if plan.intersect:
        with body.block(f"while not {ca.done} and not {cb.done}:"):
            with body.block(f"if {_lt(ca.keys, cb.keys)}:"):
                ca.advance()
            with body.block(f"elif {_lt(cb.keys, ca.keys)}:"):
                cb.advance()
            with body.block("else:"):
                emit({pa: ca.value(), pb: cb.value()}, ca.keys)
                ca.advance()
                cb.advance()
        return
    with body.block(f"while not ({ca.done} and {cb.done}):"):
        with body.block(f"if {cb.done} or (not {ca.done} and {_lt(ca.keys, cb.keys)}):"):
            emit({pa: ca.value(), pb: zero_b}, ca.keys)
            ca.advance()
        with body.block(f"elif {ca.done} or {_lt(cb.keys, ca.keys)}:"):
            emit({pa: zero_a, pb: cb.value()}, cb.keys)
            cb.advance()
        with body.block("else:"):
            emit({pa: ca.value(), pb: cb.value()}, ca.keys)
            ca.advance()
            cb.advance()


def emit_row_merge(body: Body, plan: MergePlan, fmt: Format, out_shape, assembler: Assembler,
                   pointwise: Pointwise) -> None:
    """The merge with output rows outermost: each operand's source row is found through its
    backward map, then the two rows are walked with one finger each, comparing only the inner
    coordinate. Used when both leaves have a full outer level that decides the output row."""
    order = fmt.mode_order
    row = sz.out_coord(order[0]).name
    r = body.declare("r", "int64_t")
    assembler.row_driven = True
    pa_, pb_ = plan.positions
    node = plan.node
    sides = []
    for tag, piece in zip("ab", plan.pieces):
        leaf = piece.leaf
        a, b = leaf.format.mode_order
        env = {sz.in_coord(a).name: body.declare(f"i{a}_{tag}", "int64_t"),
               sz.in_coord(b).name: body.declare(f"i{b}_{tag}", "int64_t")}
        guards = [g for g in sz.conjuncts(piece.guard)
                  if not {s for s in sz.free_symbols(g) if s.startswith("_")}
                  <= {sz.in_coord(a).name}]
        sides.append(dict(piece=piece, leaf=leaf, a=a, b=b, env=env, guards=guards,
                          p=body.declare(f"p_{tag}", "int64_t"),
                          e=body.declare(f"e_{tag}", "int64_t"),
                          j=body.declare(f"j_{tag}", "int64_t")))
    kind = "intersection" if plan.intersect else "union"
    body.comment(f"row-driven merge ({kind}): per output row, one finger per operand row, "
                 f"comparing inner coordinates (each row proved in order)")
    with body.block(f"for {r} in range({expr_c(out_shape[order[0]], {})}):"):
        for s in sides:
            piece, leaf = s["piece"], s["leaf"]
            owned = row_guards(piece, row)
            pos = array_var(leaf.name, "pos1")
            body.line(f"{s['p']} = 0")
            body.line(f"{s['e']} = 0")
            cond = " and ".join(f"({expr_c(g, {row: r})})" for g in owned) or "True"
            with body.block(f"if {cond}:"):
                src = s["env"][sz.in_coord(s["a"]).name]
                body.line(f"{src} = {expr_c(piece.backward[s['a']], {row: r})}")
                body.line(f"{s['p']} = {pos}[{src}]")
                body.line(f"{s['e']} = {pos}[{src} + 1]")
        with body.block("while True:"):
            for s in sides:  # move each finger to an entry its guards keep; read its key
                with body.block(f"while {s['p']} < {s['e']}:"):
                    inner = s["env"][sz.in_coord(s["b"]).name]
                    read_coordinate(body, s["leaf"], 1, s["p"], inner)
                    test = " and ".join(f"({expr_c(g, s['env'])})" for g in s["guards"])
                    if test:
                        body.line(f"if {test}: break")
                        body.line(f"{s['p']} = {s['p']} + 1")
                    else:
                        body.line("break")
                with body.block(f"if {s['p']} < {s['e']}:"):
                    body.line(f"{s['j']} = {expr_c(s['piece'].coords[order[1]], s['env'])}")
            A, B = sides

            def emit(known, j):
                coords = [None, None]
                coords[order[0]], coords[order[1]] = r, j
                v = pointwise.map_with(node, known, tuple(coords))
                assembler.emit(body, tuple(coords), v)

            def val(s):
                v = f"{array_var(s['leaf'].name, 'val')}[{s['p']}]"
                for layer in s["piece"].layers:
                    cs = tuple(expr_c(c, s["env"]) for c in layer.coords)
                    v = pointwise.map_with(layer.node, {layer.driver: v}, cs)
                return v
            has_a, has_b = f"{A['p']} < {A['e']}", f"{B['p']} < {B['e']}"
            step_a, step_b = f"{A['p']} = {A['p']} + 1", f"{B['p']} = {B['p']} + 1"
            if plan.intersect:
                body.line(f"if not ({has_a} and {has_b}): break")
                with body.block(f"if {A['j']} < {B['j']}:"):
                    body.line(step_a)
                with body.block(f"elif {B['j']} < {A['j']}:"):
                    body.line(step_b)
                with body.block("else:"):
                    emit({pa_: val(A), pb_: val(B)}, A["j"])
                    body.line(step_a)
                    body.line(step_b)
            else:
                body.line(f"if not ({has_a} or {has_b}): break")
                zero_a = c_literal(0, node.args[pa_].dtype)
                zero_b = c_literal(0, node.args[pb_].dtype)
                with body.block(f"if {has_a} and (not ({has_b}) or {A['j']} < {B['j']}):"):
                    emit({pa_: val(A), pb_: zero_b}, A["j"])
                    body.line(step_a)
                with body.block(f"elif {has_b} and (not ({has_a}) or {B['j']} < {A['j']}):"):
                    emit({pa_: zero_a, pb_: val(B)}, B["j"])
                    body.line(step_b)
                with body.block("else:"):
                    emit({pa_: val(A), pb_: val(B)}, A["j"])
                    body.line(step_a)
                    body.line(step_b)
        assembler.end_row(body, r)


MAX_MERGED_PIECES = 4


def pieces_mergeable(pieces: tuple[StreamPiece, ...], order) -> bool:
    """Can a stream whose pieces arrive out of order as a whole still be appended in one
    pass, by merging the pieces? Each piece must be a flat leaf walked in output storage
    order on its own (proved); pieces never share an output coordinate (they partition the
    output), so a merge by output key needs no combining."""
    return 2 <= len(pieces) <= MAX_MERGED_PIECES and all(
        _walkable_by_cursor(p) for p in pieces) and all(
        stream_is_ordered((p,), order) for p in pieces)



def emit_stream_merge(body: Body, pieces: tuple[StreamPiece, ...], fmt: Format,
                      assembler: Assembler, pointwise: Pointwise) -> None:
    """One pass over all pieces, each with a cursor in its own (proved) output order; the
    cursor with the smallest output key is emitted next. For hstack of COO this replaces a
    count pass plus a scatter pass: each entry is read once and written once, in place."""
    order = fmt.mode_order
    cursors = [_Cursor(body, p, f"s{n}", order, pointwise) for n, p in enumerate(pieces)]
    body.comment(f"merge of {len(pieces)} pieces by output key: one cursor per piece, each "
                 f"walking its leaf in output storage order (proved); pieces are disjoint")
    for c in cursors:
        c.init()
    with body.block("while not (" + " and ".join(c.done for c in cursors) + "):"):
        for n, c in enumerate(cursors):
            others = [f"({o.done} or {_lt(c.keys, o.keys)})" for o in cursors if o is not c]
            test = " and ".join([f"not {c.done}"] + others)
            with body.block(f"{'if' if n == 0 else 'elif'} {test}:"):
                coords = [None] * len(order)
                for level, mode in enumerate(order):
                    coords[mode] = c.keys[level]
                assembler.emit(body, tuple(coords), c.value())
                c.advance()

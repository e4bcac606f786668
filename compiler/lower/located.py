"""A broadcast sparse line located through a workspace instead of merged (``lower_coiter``).

In a two-operand intersection where one operand is one stored line repeated along an axis —
a row (1, n) broadcast over the rows of ``A * v``, or a column (n, 1) over the columns — a
merge would walk the line once per repetition (size x nnz steps: 5.2 s against scipy's 42 ms
for ``A * v`` on 200000² with nnz(v) = 20000, measured). Instead one pass writes each of the
line's entries' position (plus one; 0: none) into a ``calloc``ed workspace indexed by the
coordinate the line varies along (pages never touched cost nothing), and each entry of the
other operand reads its slot there. If the workspace cannot be allocated, the caller's merge
runs as before (``on`` is false).

* :class:`RowLine` — row-driven co-iteration: the line repeats along the output rows; keys
  are the inner coordinate.
* :class:`InnerLine` — flat co-iteration: the line repeats along the *inner* axis of the
  iteration order (``v * A`` with ``A`` CSC, whose result is CSC; ``A * w`` with a CSC column
  ``w``); the workspace is indexed by the outer coordinate.

In a two-operand intersection the walked operand's entries each read their slot (``merge``).
In any other lattice (``A * v + B``, ``(A + B) * v``, ``A * v * B``) the line is taken out of
the merge: the other operands' cursors are merged as usual, and at each key the merge meets
the line is *looked up* (``look``: one load) and counts as present where it stores an entry.
That needs every lattice point holding the line to hold another operand too (a point of the
line alone, ``A + v``, is met at keys only the line stores: it is merged).

The planner converts a line stored otherwise (a COO row, a CSR column) into CSR or CSC first
(``planner._stage_unlocatable_lines``), so both find it as such a line.
"""

from __future__ import annotations

from sparsefold.compiler.emit.loops import BOOL, INT, Array, Bin, Call, Cond, Lit, Load, Var
from sparsefold.compiler.lower.cursors import END, RowCursor
from sparsefold.compiler.lower.values import index
from sparsefold.compiler.plan.facts import broadcast_row
from sparsefold.spec import sizes as sz

__all__ = ["RowLine", "InnerLine"]


def _two_operand_intersection(co) -> bool:
    plan = co.plan
    return len(plan.space) == 2 and len(plan.operands) == 2 and \
        plan.lattice.points == (frozenset({0, 1}),) and all(len(cs) == 1 for cs in co.cursors)


def _locatable(co, line: int) -> bool:
    """May operand ``line`` be looked up instead of merged? Two-dimensional, one cursor, and
    every lattice point holding it holds another operand too (module doc)."""
    points = co.plan.lattice.points
    return len(co.plan.space) == 2 and len(co.plan.operands) >= 2 and \
        len(co.cursors[line]) == 1 and frozenset({line}) not in points and \
        any(line in p for p in points)


class _Line:
    """The workspace of one located line: operand ``walked`` is walked, operand ``line``
    looked up (by number: the parallel fill remakes its cursors for its second pass)."""

    def __init__(self, co, walked: int | None, line: int):
        b = co.low.b
        # walked: the other operand of a two-operand intersection (``merge``); None: the
        # line is looked up from a merge of the other operands (``look``)
        self.walked, self.line = walked, line
        self.ptr = b.fresh("ws_at", "int64_t*")
        self.ws = Array(self.ptr.name, INT)
        self.on = b.fresh("located", BOOL)

    def build(self, co, order: tuple[int, int], what: str) -> None:
        """One pass over the line with a row cursor of its own (the loops' cursors are
        private to them), read in ``order`` (its repeated axis first) and opened at
        repetition 0: every repetition reads the same stored line. Keys are the coordinate
        of ``order[1]``, the workspace's index."""
        b, plan = co.low.b, co.plan
        line = co.cursors[self.line][0]
        c = RowCursor(co.low, line.piece, f"{line.tag}_ws", order, co.values,
                      rows=plan.space[order[0]])
        repeats, size = index(plan.space[order[0]]), index(plan.space[order[1]])
        b.assign(self.on, Lit("False", BOOL))
        b.assign(self.ptr, Lit("NULL", "int64_t*"))
        with b.block(f"locate {plan.operands[self.line].name}'s broadcast row: the position "
                     f"of its entry at each {what}, one pass"):
            with b.if_(Bin("and", Bin(">", repeats, Lit("0", INT)),
                           Bin(">", size, Lit("0", INT)))):
                cells = b.fresh("ws_cells")
                b.assign(cells, size)
                b.assign(self.ptr, Lit(f"<int64_t*>calloc({cells.name}, 8)", "int64_t*",
                                       (cells,)))
                with b.if_(Bin("!=", self.ptr, Lit("NULL", "int64_t*"))):
                    b.assign(self.on, Lit("True", BOOL))
                    c.init(Lit("0", INT))
                    c.settle()
                    with b.while_(Bin("!=", c.key, END)):
                        b.store(self.ws, c.key, c.p + 1)
                        c.step()
                        c.settle()

    def _walk(self, co, k: Var, at, found) -> None:
        """The walked cursor (initialized) over its entries: ``k`` its key, the slot at
        ``at(x)`` read; ``found(x, y, q)`` where the line has an entry (``q`` its slot)."""
        b = co.low.b
        x, y = co.cursors[self.walked][0], co.cursors[self.line][0]
        q = b.fresh("at")
        x.settle()
        with b.while_(Bin("!=", x.key, END)):
            b.assign(k, x.key)
            b.assign(q, Load(self.ws, at(x)))
            with b.if_(Bin("!=", q, Lit("0", INT))):
                found(x, y, q)
            x.step()
            x.settle()

    def look(self, co, k: Var) -> Var:
        """At the merge's key ``k``: is the line stored there (a fresh flag)? Its cursor is
        placed on that entry (``_place``; where it is not, on none: nothing reads it), every
        variable assigned on both branches (a parallel row loop checks that)."""
        b = co.low.b
        q, found = b.fresh("at"), b.fresh("found", BOOL)
        b.assign(q, Load(self.ws, self._slot(co, k)))
        b.assign(found, Bin("!=", q, Lit("0", INT)))
        self._place(co, q, found)
        return found

    def free(self, co) -> None:
        b = co.low.b
        with b.if_(Bin("!=", self.ptr, Lit("NULL", "int64_t*"))):
            b.emit(Call("free", (self.ptr,)))


class RowLine(_Line):
    """Row-driven co-iteration: a broadcast row (no row guards) against a stored operand."""

    @staticmethod
    def make(co):
        order = co.plan.order
        n = len(co.plan.operands)
        for line in reversed(range(n)):
            if not _locatable(co, line):
                continue
            c = co.cursors[line][0]
            others = [o for o in range(n) if o != line]
            # the merge left must not be of repeated rows alone (nothing would be gained)
            if broadcast_row(c.piece, order) and not c.row_guards() and any(
                    not all(broadcast_row(x.piece, order) for x in co.cursors[o])
                    for o in others):
                walked = others[0] if _two_operand_intersection(co) else None
                return RowLine(co, walked, line)
        return None

    def open(self, co, r: Var) -> None:
        """Row ``r`` (the general case): the line's source row, the same for every r,
        assigned here (a parallel loop's iterations keep their own copy)."""
        y = co.cursors[self.line][0]
        co.low.b.assign(y.src, index(y.piece.backward[y.outer_mode], {y.row_symbol: r}))

    def _slot(self, co, k: Var):
        return k

    def _place(self, co, q: Var, found: Var | None = None) -> None:
        b, y = co.low.b, co.cursors[self.line][0]
        b.assign(y.p, q - 1)
        crd = Load(y.arrays.crd[1], y.p)
        b.assign(y.inner, crd if found is None else Cond(found, crd, Lit("0", INT)))

    def build(self, co) -> None:
        super().build(co, tuple(co.plan.order), "output column (instead of a merge per "
                                                 "output row)")

    def merge(self, co, r: Var, k: Var, acc, coords_of, visit) -> None:
        """Row ``r`` of a two-operand intersection: the walked operand's entries in order,
        each looked up by its key."""
        x = co.cursors[self.walked][0]
        x.init(r)
        self.open(co, r)

        def found(x, y, q):
            self._place(co, q)
            visit(co, {x: Lit("True", BOOL), y: Lit("True", BOOL)}, acc, coords_of, met=True)
        self._walk(co, k, lambda x: x.key, found)


class InnerLine(_Line):
    """Flat co-iteration: a line repeated along the inner axis of the iteration order,
    stored as that line (CSR row, CSC column), no layers or guards, against an operand
    without broadcasts."""

    @staticmethod
    def make(co):
        if len(co.plan.space) != 2:
            return None
        a, inner = co.plan.order
        n = len(co.plan.operands)
        for line in reversed(range(n)):
            if not _locatable(co, line):
                continue
            c = co.cursors[line][0]
            piece = c.piece
            others = [x for o in range(n) if o != line for x in co.cursors[o]]
            if any(x.free or x.dense for x in others) or c.dense or \
                    not broadcast_row(piece, (inner, a)) or \
                    piece.leaf.format.kinds != ("full", "pos") or \
                    piece.leaf.format.mode_order != (inner, a) or piece.layers or \
                    sz.conjuncts(piece.guard) or sz.conjuncts(piece.out_guard):
                continue
            walked = (1 - line) if _two_operand_intersection(co) else None
            return InnerLine(co, walked, line)
        return None

    def _slot(self, co, k: Var):
        """The outer coordinate of the linear key ``k`` (outer x inner size + inner)."""
        return Bin("//", k, index(co.plan.space[co.plan.order[1]]))

    def _place(self, co, q: Var, found: Var | None = None) -> None:
        # its position is all its value reads (no layers or guards read coordinates)
        y = co.cursors[self.line][0]
        co.low.b.assign(y.pos_vars[y.z], q - 1)

    def build(self, co) -> None:
        a, inner = co.plan.order
        super().build(co, (inner, a), "outer coordinate (instead of walking the inner axis "
                                      "at each one it stores)")

    def merge(self, co, k: Var, acc, visit) -> None:
        """The walked operand's entries in order, each looked up by its outer coordinate."""
        b = co.low.b
        co.cursors[self.walked][0].init()

        def found(x, y, q):
            # the line's cursor at that entry: its position and the output coordinates
            self._place(co, q)
            for d, oc in enumerate(y.out):
                b.assign(oc, x.out[d])
            visit(co, {x: Lit("True", BOOL), y: Lit("True", BOOL)}, acc,
                  lambda c: tuple(c.out), met=True)
        self._walk(co, k, lambda x: x.out[co.plan.order[0]], found)

"""Cursors over level storage: how co-iteration reads one piece of a sparse view.

A cursor walks one stream piece (``views.py``: a leaf seen through forward maps, with its
guards, broadcast variables and unary layers) and exposes, at each stop, the entry's output
coordinates, a ``key`` that orders stops, and the value. It asks the leaf's levels what they
can do (``formats.py`` capabilities) and never a format's name:

* :class:`FlatCursor` walks every stored entry of the leaf in storage order. The innermost
  non-singleton level's position runs linearly over all entries (children of consecutive
  parents are contiguous); each outer level's position follows it (``while q_child >=
  end(q_parent): q_parent += 1``), so empty rows cost one compare each; singleton levels
  share their parent's position; a dense leaf is an odometer of counters. Broadcast
  variables are counters innermost. ``key`` is the output coordinate linearized in the
  iteration order (it fits int64: every node's element count is checked at call time).
* :class:`RowCursor` walks one source row of a leaf whose outer level is full and decides
  the output row (found through the piece's backward map): the segment ``pos[s]..pos[s+1]``
  with ``key`` the output's inner coordinate.

Co-iteration (``lower_coiter.py``) uses a cursor in three steps, each emitted once per
cursor: ``init`` (before the loop), ``settle`` (move to the next entry its guards keep,
compute the key, or set ``key = INT64_MAX`` when done) and ``step`` (move past the current
stop). The order a cursor produces is never assumed: the planner proved it (``order.py``).
"""

from __future__ import annotations

from collections.abc import Callable

from sparsefold.compiler.emit.loops import BOOL, INT, Assign, Bin, Expr, If, Lit, Load, Not, Var
from sparsefold.compiler.lower.bounds import check_segment, read_coordinate
from sparsefold.compiler.lower.lowering import Lowering
from sparsefold.compiler.lower.values import Values, index
from sparsefold.compiler.plan.order import implied_row_guards
from sparsefold.compiler.plan.streams import StreamPiece
from sparsefold.spec import sizes as sz

__all__ = ["FlatCursor", "RowCursor", "END", "linear_key"]

END = Lit("INT64_MAX", INT)


def _coordinate_symbols(e: sz.Expr) -> set[str]:
    return {s for s in sz.free_symbols(e) if s.startswith("_")}


def linear_key(coords: list[Expr], shape, order) -> Expr:
    """The row-major linear index of ``coords`` taken in ``order`` over ``shape``."""
    key: Expr | None = None
    for m in order:
        c = coords[m]
        key = c if key is None else Bin("+", Bin("*", key, index(shape[m])), c)
    return key if key is not None else Lit("0", INT)


class FlatCursor:
    """Walks every entry of one piece in its leaf's storage order (see module doc)."""

    def __init__(self, low: Lowering, piece: StreamPiece, tag: str,
                 key: Callable[[list[Expr]], Expr], values: Values):
        self.low, self.piece, self.tag, self.values = low, piece, tag, values
        b = low.b
        leaf = piece.leaf
        self.key = b.fresh(f"key_{tag}")
        self.stale = b.fresh(f"stale_{tag}", BOOL)
        self.env: dict[str, Expr] = {}
        self.dense = leaf.format.is_dense
        levels = leaf.format.levels
        self.modes = leaf.format.mode_order if not self.dense else tuple(range(leaf.ndim))
        self.coord = {m: b.fresh(f"i{m}_{tag}") for m in self.modes}
        for m, v in self.coord.items():
            self.env[sz.in_coords(leaf.ndim)[m].name] = v
        self.free = [(name, b.fresh(f"{name.lstrip('_')}_{tag}"), size)
                     for name, size in piece.free]
        for name, var, _ in self.free:
            self.env[name] = var
        if self.dense:
            self.arrays = None
            self.z = None
            # a 0-d leaf not broadcast has no counter of its own: one stop, counted here
            self.once = b.fresh(f"once_{tag}") if not self.modes and not self.free else None
        else:
            self.arrays = low.leaf(leaf)
            iterating = [li for li, lv in enumerate(levels) if lv.full or lv.has_pos]
            self.z = iterating[-1]
            if not levels[self.z].has_pos:
                raise NotImplementedError("a flat cursor needs a compressed innermost level")
            self.pos_vars = {li: b.fresh(f"q{li}_{tag}") for li in iterating}
            self.end = b.fresh(f"end_{tag}")
        self.out = [b.fresh(f"o{d}_{tag}") for d in range(len(piece.coords))]
        self.key_of = key

    # --- level arithmetic ---------------------------------------------------------------
    def _position(self, li: int) -> Expr:
        """The position variable of level ``li`` (a singleton shares its parent's)."""
        while li not in self.pos_vars:
            li -= 1
        return self.pos_vars[li]

    def _children_end(self, li: int, parent: Expr) -> Expr:
        """One past the last level-``li`` position under parent position ``parent``."""
        lv = self.piece.leaf.format.levels[li]
        if lv.has_pos:
            return Load(self.arrays.pos[li], parent + 1)
        if lv.full:
            return Bin("*", parent + 1, self._size(li))
        return parent + 1  # singleton: one child

    def _children_start(self, li: int, parent: Expr) -> Expr:
        lv = self.piece.leaf.format.levels[li]
        if lv.has_pos:
            return Load(self.arrays.pos[li], parent)
        if lv.full:
            return Bin("*", parent, self._size(li))
        return parent

    def _size(self, li: int) -> Expr:
        return index(self.piece.leaf.shape[self.modes[li]])

    # --- the three steps ----------------------------------------------------------------
    def init(self) -> None:
        b = self.low.b
        b.assign(self.stale, True)
        if self.dense:
            for m in self.modes:
                b.assign(self.coord[m], Lit("0", INT))
            if self.once is not None:
                b.assign(self.once, Lit("0", INT))
        else:
            # positions of level li under the root: [start, end); the root is position 0
            start: Expr = Lit("0", INT)
            end: Expr = Lit("1", INT)
            for li in range(self.z + 1):
                start, end = self._children_start(li, start), self._children_start(li, end)
                if li in self.pos_vars:
                    b.assign(self.pos_vars[li], start)
                    start = self.pos_vars[li]
            b.assign(self.end, end)
        for _, var, _ in self.free:
            b.assign(var, Lit("0", INT))
        empty = [Bin("==", index(size), Lit("0")) for _, _, size in self.free]
        if self.dense:
            empty += [Bin("==", self._size(li), Lit("0")) for li in range(len(self.modes))]
        if empty:
            cond = empty[0]
            for e in empty[1:]:
                cond = Bin("or", cond, e)
            with b.if_(cond):  # a broadcast or dense axis of size 0: nothing to walk
                b.assign(self.key, END)
                b.assign(self.stale, False)

    def settle(self) -> None:
        """Emits: if stale, move to the next kept entry and compute key and coordinates.
        Without guards (and for a sparse leaf, whose entries are all kept) one test
        suffices; otherwise a loop skips the entries the guards drop."""
        b = self.low.b
        skips = bool(sz.conjuncts(self.piece.guard)) or self.dense
        with b.if_(self.stale):
            b.assign(self.stale, False)
            if skips:
                with b.while_(Lit("True", BOOL)):
                    with b.if_(self._exhausted()):
                        b.assign(self.key, END)
                        b.brk()
                    self._settle_at()
                    b.brk()
            else:
                with b.if_(self._exhausted()):
                    b.assign(self.key, END)
                with b.else_():
                    self._settle_at()

    def _exhausted(self) -> Expr:
        if self.dense:  # its outermost counter reached its size (it is never reset)
            var, size = self._dense_counters()[0]
            return Bin(">=", var, size)
        return Bin(">=", self.pos_vars[self.z], self.end)

    def _dense_counters(self) -> list[tuple[Expr, Expr]]:
        """A dense leaf's counters, outermost first: its coordinates, then its broadcast
        axes (a 0-d leaf has only those; with none, its one stop: seed 777 of the program
        fuzzer, #39)."""
        counters = [(self.coord[m], self._size(li)) for li, m in enumerate(self.modes)]
        counters += [(var, index(size)) for _, var, size in self.free]
        return counters or [(self.once, Lit("1", INT))]

    def _settle_at(self) -> None:
        """At a position inside the leaf: outer levels follow, coordinates are read, guards
        skip (``continue`` the settle loop), then coordinates and key."""
        b, piece, leaf = self.low.b, self.piece, self.piece.leaf
        guards = sz.conjuncts(piece.guard)
        if not self.dense:
            qz = self.pos_vars[self.z]
            # outer levels follow the innermost position (empty rows are passed here)
            child = qz
            for li in range(self.z - 1, -1, -1):
                if li not in self.pos_vars:
                    continue
                q = self.pos_vars[li]
                with b.while_(Bin(">=", child, self._children_end(self._child_level(li), q))):
                    b.assign(q, q + 1)
                child = q
            for li, lv in enumerate(leaf.format.levels):
                m = self.modes[li]
                if lv.has_crd:
                    read_coordinate(b, self.low.sites, leaf, li, self.arrays.crd[li],
                                    self._position(li), self.coord[m])
                elif li == 0:
                    b.assign(self.coord[m], self.pos_vars[0])
                else:
                    b.assign(self.coord[m], self.pos_vars[li] - Bin(
                        "*", self._position(li - 1), self._size(li)))
                # guards on the coordinates bound so far that skip a whole subtree
                bound = {sz.in_coords(leaf.ndim)[self.modes[k]].name for k in range(li + 1)}
                if li < self.z:
                    for g in [g for g in guards if _coordinate_symbols(g) <= bound]:
                        guards.remove(g)
                        with b.if_(Not(index(g, self.env))):
                            b.assign(qz, self._subtree_end(li))
                            b.cont()
        if self.dense:  # a dense operand stores no zeros in a sparse result
            with b.if_(Bin("==", self._raw_value(), Lit("0"))):
                self._step_code()
                b.cont()
        for g in guards:
            with b.if_(Not(index(g, self.env))):
                self._step_code()
                b.cont()
        for d, c in enumerate(piece.coords):
            b.assign(self.out[d], index(c, self.env))
        b.assign(self.key, self.key_of(list(self.out)))

    def _child_level(self, li: int) -> int:
        c = li + 1
        while c not in self.pos_vars:
            c += 1
        return c

    def _subtree_end(self, li: int) -> Expr:
        """The innermost position just past everything under level ``li``'s current one."""
        e: Expr = self._position(li) + 1
        for k in range(li + 1, self.z + 1):
            e = self._children_start(k, e)
        return e

    def step(self) -> None:
        """Emits: move past the current stop (the next ``settle`` finds the next one)."""
        self._step_code()
        self.low.b.assign(self.stale, True)

    def _step_code(self) -> None:
        b = self.low.b
        counters = [(var, index(size)) for _, var, size in self.free]
        if self.dense:
            counters = self._dense_counters()
            inner_stop = 0
        else:
            inner_stop = None
        _odometer(b, counters, carry_out=None if self.dense else self.pos_vars[self.z],
                  keep_outermost=inner_stop is not None)

    def _raw_value(self) -> Expr:
        leaf = self.piece.leaf
        if self.dense:
            return self.low.dense(leaf, tuple(self.coord[m] for m in self.modes))
        return Load(self.arrays.val, self._position(len(leaf.format.levels) - 1))

    def value(self) -> Expr:
        """The piece's value at the current stop (its unary layers applied)."""
        v = self._raw_value()
        for layer in self.piece.layers:
            coords = tuple(index(c, self.env) for c in layer.coords)
            v = self.values.map_with(layer.node, {layer.driver: v}, coords)
        return v


def _odometer(b, counters, *, carry_out, keep_outermost: bool) -> None:
    """Increment the innermost counter; on reaching its size reset it and carry outward; a
    carry out of every counter increments ``carry_out`` (the leaf position). A dense leaf's
    outermost counter is never reset: reaching its size means done."""
    def bump(k: int) -> tuple:
        if k < 0:
            return (Assign(carry_out, carry_out + 1),)
        var, size = counters[k]
        if k == 0 and keep_outermost:
            return (Assign(var, var + 1),)
        return (Assign(var, var + 1),
                If(((Bin(">=", var, size), (Assign(var, Lit("0", INT)),) + bump(k - 1)),)))
    for s in bump(len(counters) - 1):
        b.emit(s)


class RowCursor:
    """One source row of a piece whose leaf has a full outer level that decides the output
    row: the entries ``pos[s] .. pos[s+1]`` of row ``s = backward(r)``, inner output
    coordinate as ``key``."""

    def __init__(self, low: Lowering, piece: StreamPiece, tag: str, out_order, values: Values,
                 rows: sz.Expr | None = None):
        self.low, self.piece, self.tag, self.values = low, piece, tag, values
        b = low.b
        leaf = piece.leaf
        self.arrays = low.leaf(leaf)
        a, c = leaf.format.mode_order
        self.outer_mode, self.inner_mode = a, c
        self.row_symbol = sz.out_coord(out_order[0]).name
        self.inner_axis = out_order[1]
        self.src = b.fresh(f"s_{tag}")
        self.p = b.fresh(f"p_{tag}")
        self.e = b.fresh(f"e_{tag}")
        self.key = b.fresh(f"key_{tag}")
        self.stale = b.fresh(f"stale_{tag}", BOOL)
        self.inner = b.fresh(f"i{c}_{tag}")
        names = sz.in_coords(leaf.ndim)
        self.env = {names[a].name: self.src, names[c].name: self.inner}
        # a guard on the source row alone that a proof shows holds on every row this piece
        # owns (order.implied_row_guards) is not tested again; every other one is, per entry
        implied = implied_row_guards(piece, self.row_symbol, rows)
        per_row = self.row_guards()
        self.entry_guards = [g for g in sz.conjuncts(piece.guard) if g not in implied and
                             not (not _coordinate_symbols(g) and g in per_row)]

    def row_guards(self) -> list[sz.Expr]:
        """The output guard's conjuncts about the output row alone or about no coordinate
        (a constant: ``stack([a, b])[1]`` closes every row to ``a``)."""
        return [g for g in sz.conjuncts(self.piece.out_guard)
                if _coordinate_symbols(g) <= {self.row_symbol}]

    def init(self, r: Var) -> None:
        """At output row ``r``: open this piece's source row (or an empty segment)."""
        b = self.low.b
        pos = self.arrays.pos[1]
        env = {self.row_symbol: r}
        owned = [index(g, env) for g in self.row_guards()]
        if owned:  # rows this piece does not own get an empty segment
            b.assign(self.p, Lit("0", INT))
            b.assign(self.e, Lit("0", INT))
        cond = owned[0] if owned else Lit("True", BOOL)
        for o in owned[1:]:
            cond = Bin("and", cond, o)
        with b.if_(cond):
            b.assign(self.src, index(self.piece.backward[self.outer_mode], env))
            b.assign(self.p, Load(pos, self.src))
            b.assign(self.e, Load(pos, self.src + 1))
            # the row's coordinates checked in one pass; a bad row is recorded and skipped
            bad = check_segment(b, self.low.sites, self.piece.leaf, 1, self.arrays.crd[1],
                                self.p, self.e)
            with b.if_(bad):
                b.assign(self.e, self.p)
        b.assign(self.stale, True)
        b.assign(self.key, END)  # settle sets it; assigned here too for the parallel check
        if self.piece.layers:  # a layer's value may read the coordinate (``A * x[None, :]``)
            b.assign(self.inner, Lit("0", INT))  # where no entry set it: assigned for the check

    def settle(self) -> None:
        b = self.low.b
        with b.if_(self.stale):
            b.assign(self.stale, False)
            b.assign(self.key, END)
            # entries its guards drop are skipped; without guards the first entry is it
            loop = b.while_ if self.entry_guards else b.if_
            with loop(Bin("<", self.p, self.e)):
                b.assign(self.inner, Load(self.arrays.crd[1], self.p))  # checked with the row
                if self.entry_guards:
                    test = index(sz.and_(*self.entry_guards), self.env)
                    with b.if_(Not(test)):
                        b.assign(self.p, self.p + 1)
                        b.cont()
                b.assign(self.key, index(self.piece.coords[self.inner_axis], self.env))
                if self.entry_guards:
                    b.brk()

    def step(self) -> None:
        b = self.low.b
        b.assign(self.p, self.p + 1)
        b.assign(self.stale, True)

    def value(self) -> Expr:
        v: Expr = Load(self.arrays.val, self.p)
        env = dict(self.env)
        for layer in self.piece.layers:
            coords = tuple(index(c, env) for c in layer.coords)
            v = self.values.map_with(layer.node, {layer.driver: v}, coords)
        return v

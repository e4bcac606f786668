"""Lowering co-iteration to loop IR: any number of sparse operands, driven by a merge
lattice (``lattice.py``; DESIGN §3.2–3.3).

One loop serves every lattice. Each piece of each operand has a cursor (``cursors.py``);
per iteration the loop

1. settles the cursors that moved (each cursor's settle code appears once),
2. stops when no lattice point can still be met (every point has an operand whose cursors
   are all done),
3. takes the smallest key ``k`` among the cursors; an operand is *here* when one of its
   cursors sits on ``k`` (an operand's pieces are disjoint, so at most one does),
4. when the operands here contain a lattice point, evaluates the expression — operands not
   here read as 0 — and hands the value to the output,
5. steps the cursors that sat on ``k``.

Every iteration steps at least one cursor, so the loop ends after at most the operands'
stored entries (times broadcast extents). Keys increase for every cursor — proved by the
planner — so each output coordinate is produced once, in order. Intersections skip, unions
fill with zeros; ``a * b + c`` works the same way as ``a + b``.

A *universe* lattice (``a + 1``: nonzero where nothing is stored) visits every coordinate
of the space in row-major order, the cursors following along (an operand is here when its
key equals the current coordinate): memory is the dense output alone, and no sparse input
is densified.

A broadcast sparse line met by intersection is *located* through a workspace, not merged per
repetition (``located.py``): in a two-operand intersection the other operand's entries look
it up; in any other lattice it is taken out of the merge (``co.looking``) and looked up at
each key the merge of the others visits.

Reductions accumulate in a register where the output cell is fixed across the inner loop
(the row of ``sum(a * b, axis=1)``, the scalar of ``sum(a * b)``), else into the output.

Row-driven co-iteration runs its rows on several threads (``low.rows_parallel``; see
docs/threads.md) where each output row is written by its own iteration alone: into a dense
output (entries, or a row's reduction kept in a register), and into CSR. A CSR row's length
is only known after its merge, so with more than one thread a first parallel pass merges
every row only to count its entries into ``pos[r + 1]``, a prefix sum gives the row starts,
and a second parallel pass fills each row from its start; with one thread the count is
skipped and the same fill loop runs the rows in order, each starting where the last ended.
Either way every entry lands where one thread puts it: the result is bit-identical.
"""

from __future__ import annotations

from sparsefold.compiler.emit.cnames import c_literal, ctype
from sparsefold.compiler.emit.loops import (
    BOOL,
    INT,
    Bin,
    Cond,
    Expr,
    Lit,
    Load,
    Not,
    Var,
    cast,
)
from sparsefold.compiler.lower.cursors import END, FlatCursor, RowCursor, linear_key
from sparsefold.compiler.lower.located import InnerLine, RowLine
from sparsefold.compiler.lower.lowering import Lowering
from sparsefold.compiler.lower.outputs import AppendOut, Assembler, DenseOut
from sparsefold.compiler.lower.values import Values, convert, index, monoid_combine
from sparsefold.compiler.plan.plans import CoiterPlan
from sparsefold.spec import sizes as sz

__all__ = ["lower_coiter"]


def _tag(n: int) -> str:
    """Cursor names: a, b, c, ... (then x26, x27, ...)."""
    return chr(ord("a") + n) if n < 26 else f"x{n}"


def _any(terms: list[Expr]) -> Expr:
    out = terms[0]
    for t in terms[1:]:
        out = Bin("or", out, t)
    return out


def _all(terms: list[Expr]) -> Expr:
    out = terms[0]
    for t in terms[1:]:
        out = Bin("and", out, t)
    return out


class _Coiteration:
    def __init__(self, low: Lowering, plan: CoiterPlan, asm: Assembler):
        self.low, self.plan, self.asm = low, plan, asm
        self.values = Values(low.b, low.dense, sites=low.sites)
        self.space = plan.space
        self.ndim = len(plan.space)
        self.cursors: list[list] = []  # per operand, its cursors
        # a broadcast row located through a workspace (located.RowLine), or None
        self.located = None
        # while the located line's branch is emitted (the general case): that line, which
        # the merge leaves out and looks up at each key
        self.looking = None

    # --- pieces -----------------------------------------------------------------------
    def make_cursors(self, row: bool) -> None:
        order, space = self.plan.order, self.space
        for n, operand in enumerate(self.plan.operands):
            cs = []
            for m, piece in enumerate(operand.pieces):
                tag = _tag(n) + (str(m) if len(operand.pieces) > 1 else "")
                if row:
                    cs.append(RowCursor(self.low, piece, tag, order, self.values,
                                        rows=space[order[0]]))
                else:
                    cs.append(FlatCursor(self.low, piece, tag,
                                         lambda coords: linear_key(coords, space, order),
                                         self.values))
            self.cursors.append(cs)

    def all_cursors(self):
        return [c for cs in self.cursors for c in cs]

    def merged(self) -> list[int]:
        """The operands the merge walks: all but a line being looked up."""
        line = self.looking.line if self.looking is not None else None
        return [n for n in range(len(self.cursors)) if n != line]

    def merged_cursors(self):
        return [c for n in self.merged() for c in self.cursors[n]]

    def alive(self, n: int) -> Expr:
        return _any([Bin("!=", c.key, END) for c in self.cursors[n]])

    def continuing(self) -> Expr:
        """Can a lattice point still be met? A looked-up line is present wherever it may be:
        only the merged operands of each point are asked."""
        merged = set(self.merged())
        return _any([_all([self.alive(o) for o in sorted(p & merged)])
                     for p in self.plan.lattice.points])

    # --- the value at the current coordinate -------------------------------------------
    def operand_values(self, here: dict) -> dict:
        """Each operand's value: its cursor's where one is here, else 0."""
        b = self.low.b
        known = {}
        for n, operand in enumerate(self.plan.operands):
            v = b.fresh(f"x{n}", ctype(operand.node.dtype))
            zero = Lit(c_literal(0, operand.node.dtype), ctype(operand.node.dtype))
            if len(self.cursors[n]) == 1:
                c = self.cursors[n][0]
                with b.collect() as reads:
                    value = convert(c.value(), operand.node.dtype)
                if isinstance(here[c], Lit):  # known here (a run of one operand), or not
                    if here[c].text == "True":
                        for stmt in reads:
                            b.emit(stmt)
                    b.assign(v, value if here[c].text == "True" else zero)
                elif not reads:  # one select, not an assignment and a branch (measured faster)
                    b.assign(v, Cond(here[c], value, zero))
                else:  # statements computing the value run only where the cursor is here
                    b.assign(v, zero)
                    with b.if_(here[c]):
                        for stmt in reads:
                            b.emit(stmt)
                        b.assign(v, value)
                known[operand.node] = v
                continue
            b.assign(v, zero)
            for k, c in enumerate(self.cursors[n]):
                with (b.if_(here[c]) if k == 0 else b.elif_(here[c])):
                    b.assign(v, convert(c.value(), operand.node.dtype))
            known[operand.node] = v
        return known

    def evaluate(self, known: dict, coords: tuple[Expr, ...]) -> Expr:
        self.values.known = known
        v = self.values.value(self.plan.root, coords)
        self.values.known = {}
        return v


def lower_coiter(low: Lowering, plan: CoiterPlan, asm: Assembler) -> None:
    co = _Coiteration(low, plan, asm)
    if plan.lattice.universe:
        _universe(co)
    elif plan.mode == "row":
        _rows(co)
    elif plan.mode == "product":
        _product(co)
    else:
        _flat(co)


def _product(co: _Coiteration) -> None:
    """Every pair of the two operands' entries (planner._cartesian): nested loops, the outer
    operand's stored axes from its entry, the others from the inner's; the assembly sorts
    (the pairs arrive in the operands' order, not the output's)."""
    plan, b = co.plan, co.low.b
    co.make_cursors(row=False)
    (outer,), (inner,) = co.cursors
    owned = {d for d, c in enumerate(plan.operands[0].pieces[0].coords)
             if sz.free_symbols(c) & {s.name for s in sz.in_coords(
                 plan.operands[0].pieces[0].leaf.ndim)}}
    names = [o.name for o in plan.operands]
    with b.block(f"cartesian product of {names[0]} and {names[1]}: for each entry of "
                 f"{names[0]}, each entry of {names[1]} (their stored axes are each other's "
                 f"broadcast axes)"):
        outer.init()
        outer.settle()
        with b.while_(Bin("!=", outer.key, END)):
            inner.init()
            inner.settle()
            with b.while_(Bin("!=", inner.key, END)):
                coords = tuple(outer.out[d] if d in owned else inner.out[d]
                               for d in range(co.ndim))
                here = {outer: Lit("True", BOOL), inner: Lit("True", BOOL)}
                if isinstance(co.asm, _RowLength):
                    co.asm.emit(co.low, (), None)
                else:
                    known = co.operand_values(here)
                    _emit(co, coords, co.evaluate(known, coords), None)
                inner.step()
                inner.settle()
            outer.step()
            outer.settle()


# --- flat: cursors over whole leaves, keys linearized in the iteration order ----------------

def _flat(co: _Coiteration) -> None:
    plan, b = co.plan, co.low.b
    co.make_cursors(row=False)
    acc = _Accumulator.make(co, scope="all")
    names = [o.name for o in plan.operands]
    located = InnerLine.make(co)
    if located is not None:
        located.build(co)
    with b.block(f"co-iteration of {', '.join(names)} over "
                 f"{plan.lattice.describe(names)}: one cursor per piece, keys in "
                 f"storage order (proved); the smallest key is visited next"):
        k = b.fresh("k")
        if acc:
            acc.start()
        if located is not None:
            with b.if_(located.on):
                _located_merge(co, located, k, acc, lambda c: tuple(c.out))
            otherwise = b.else_()
            otherwise.__enter__()
        for c in co.all_cursors():
            c.init()
        _merge(co, k, acc, lambda c: tuple(c.out))
        if located is not None:
            otherwise.__exit__(None, None, None)
        if acc:
            acc.finish(tuple(Lit("0", INT) for _ in plan.space))
    if located is not None:
        located.free(co)


def _min_key(b, k: Var, cursors) -> None:
    b.assign(k, cursors[0].key)
    for c in cursors[1:]:
        with b.if_(Bin("<", c.key, k)):
            b.assign(k, c.key)


def _visit(co: _Coiteration, here: dict, acc, coords_of, met: bool = False) -> None:
    """At the current key: if the operands here meet a lattice point, evaluate and emit.
    ``met``: the key is one where a point is present (:func:`_meet_points`)."""
    b, plan = co.low.b, co.plan
    present = {}
    for n in range(len(plan.operands)):
        present[n] = _any([here[c] for c in co.cursors[n]])
    # every operand alone meets a point (a union): the smallest key is always emitted
    always = met or _union(co)
    cond = Lit("True", BOOL) if always else \
        _any([_all([present[o] for o in sorted(p)]) for p in plan.lattice.points])
    with b.if_(cond):
        if isinstance(co.asm, _RowLength):  # the count pass: no value is read
            co.asm.emit(co.low, (), None)
            return
        cursors = co.merged_cursors()  # a looked-up line is here only beside one of them
        shared = coords_of(cursors[0])
        if all(coords_of(c) == shared for c in cursors):
            coords = list(shared)   # row mode: (row, key) whichever cursor is here
        else:  # the coordinates of a cursor that is here
            coords = [b.fresh(f"k{d}") for d in range(co.ndim)]
            tests = {}  # a point's cursors are here together: the first of them tells
            for c in cursors:
                tests.setdefault(here[c], c)
            sure = [c for t, c in tests.items() if isinstance(t, Lit) and t.text == "True"]
            tests = {Lit("True", BOOL): sure[0]} if sure else \
                {t: c for t, c in tests.items() if not isinstance(t, Lit)}
            for i, (test, c) in enumerate(tests.items()):
                with (b.if_(test) if i == 0 else b.elif_(test)):
                    for d, x in enumerate(coords_of(c)):
                        b.assign(coords[d], x)
        known = co.operand_values(here)
        v = co.evaluate(known, tuple(coords))
        _emit(co, tuple(coords), v, acc)


def _emit(co: _Coiteration, coords: tuple[Expr, ...], v: Expr, acc) -> None:
    plan, low = co.plan, co.low
    if plan.reduction is None:
        co.asm.emit(low, coords, v)
        return
    if acc is not None:
        acc.add(v)
        return
    red = plan.reduction
    syms = sz.in_coords(len(coords))
    env = {s.name: c for s, c in zip(syms, coords)}
    out = tuple(index(e, env) for e in red.out_coords(syms))
    guard = red.chain_guard(syms)
    if guard != sz.TRUE:
        with low.b.if_(index(guard, env)):
            co.asm.emit(low, out, v)
    else:
        co.asm.emit(low, out, v)


class _Accumulator:
    """A reduction's cell kept in a register: across each row (``scope="row"``: the inner
    axis is reduced) or across the whole loop (``scope="all"``: everything is)."""

    def __init__(self, co: _Coiteration, scope: str):
        self.co, self.scope = co, scope
        b = co.low.b
        red = co.plan.reduction
        self.monoid = red.monoid
        self.dtype = red.node.dtype
        self.acc = b.fresh("acc", ctype(self.dtype))
        self.count = b.fresh("acc_n") if co.asm.counts else None

    @staticmethod
    def make(co: _Coiteration, scope: str):
        red = co.plan.reduction
        if red is None or not isinstance(co.asm, DenseOut) or red.chain_guard(
                sz.in_coords(co.ndim)) != sz.TRUE:
            return None
        axes = set(red.node.axes)
        if scope == "all" and axes == set(range(co.ndim)):
            return _Accumulator(co, scope)
        if scope == "row" and co.ndim == 2 and axes == {co.plan.order[1]}:
            return _Accumulator(co, scope)
        return None

    def start(self) -> None:
        b = self.co.low.b
        b.assign(self.acc, self.co.asm.identity())
        if self.count is not None:
            b.assign(self.count, Lit("0", INT))

    def add(self, v: Expr) -> None:
        b = self.co.low.b
        b.assign(self.acc, monoid_combine(self.monoid, self.acc, convert(v, self.dtype),
                                          self.dtype))
        if self.count is not None:
            b.assign(self.count, self.count + 1)

    def finish(self, coords: tuple[Expr, ...]) -> None:
        """Combine the register into the output cell of ``coords`` (argument coordinates)."""
        red = self.co.plan.reduction
        syms = sz.in_coords(len(coords))
        env = {s.name: c for s, c in zip(syms, coords)}
        out = tuple(index(e, env) for e in red.out_coords(syms))
        self.co.asm.combine(self.co.low, self.co.asm.cell(out), self.acc,
                            self.count if self.count is not None else Lit("1", INT))


# --- rows: output rows outermost, one row cursor per piece ----------------------------------

def _rows(co: _Coiteration) -> None:
    low, plan, b = co.low, co.plan, co.low.b
    co.make_cursors(row=True)
    co.located = RowLine.make(co)
    if co.located is not None:
        co.located.build(co)
    acc = _Accumulator.make(co, scope="row") or _Accumulator.make(co, scope="all")
    if plan.reduction is None and low.rows_parallel and type(co.asm) is AppendOut and \
            co.asm.kinds == ("full", "pos"):
        _parallel_fill(co)
        if co.located is not None:
            co.located.free(co)
        return
    # a row's iteration writes only cells of its own output row: its entries, or the one
    # cell its reduction register lands in (not through MapChecked: no proof there)
    parallel = low.rows_parallel and type(co.asm) is DenseOut and (
        plan.reduction is None or (acc is not None and acc.scope == "row"))
    a = plan.order[0]
    r = b.fresh("r")
    if acc is not None and acc.scope == "all":
        acc.start()
    with b.block(_note(co)):
        with b.loop(r, 0, index(plan.space[a]), parallel=parallel):
            _row_merge(co, r, acc)
            co.asm.end_row(low, r)
    if acc is not None and acc.scope == "all":
        acc.finish(tuple(Lit("0", INT) for _ in plan.space))
    if co.located is not None:
        co.located.free(co)


def _note(co: _Coiteration) -> str:
    names = [o.name for o in co.plan.operands]
    return (f"row-driven co-iteration of {', '.join(names)} over "
            f"{co.plan.lattice.describe(names)}: per output row, one cursor per piece over "
            f"its source row (inner coordinates in order, proved)")


def _row_merge(co: _Coiteration, r: Var, acc) -> None:
    """One output row's merge: every cursor opened on row ``r``, the smallest key visited
    until no lattice point can be met; a row register combined into its cell at the end."""
    b, plan = co.low.b, co.plan
    a, inner = plan.order
    k = b.fresh("k")
    if acc is not None and acc.scope == "row":
        acc.start()

    def coords_of(c, r=r, k=k):
        out = [None, None]
        out[a], out[inner] = r, k
        return tuple(out)
    located = co.located
    if located is not None:
        with b.if_(located.on):
            _located_merge(co, located, k, acc, coords_of, r)
        b_else = b.else_()
        b_else.__enter__()
    for c in co.all_cursors():
        c.init(r)
    _merge(co, k, acc, coords_of)
    if located is not None:
        b_else.__exit__(None, None, None)
    if acc is not None and acc.scope == "row":
        coords = [None, None]
        coords[a], coords[inner] = r, Lit("0", INT)
        acc.finish(tuple(coords))


def _located_merge(co: _Coiteration, located, k: Var, acc, coords_of, r=None) -> None:
    """Where the line's workspace was allocated: a two-operand intersection walks the other
    operand (``located.merge``); any other lattice merges the rest and looks the line up
    (``co.looking``). ``r``: the output row (row-driven), else None (flat)."""
    if located.walked is not None:
        if r is None:
            located.merge(co, k, acc, _visit)
        else:
            located.merge(co, r, k, acc, coords_of, _visit)
        return
    co.looking = located
    if r is not None:
        located.open(co, r)
    for c in co.merged_cursors():
        if r is None:
            c.init()
        else:
            c.init(r)
    _merge(co, k, acc, coords_of)
    co.looking = None


def _merge(co: _Coiteration, k: Var, acc, coords_of) -> None:
    """The loop over keys (flat or one row): until no lattice point can be met, the next
    key ``k`` where one may be, its value emitted if the operands there meet a point, the
    cursors there stepped.

    A partitioned lattice (``lattice.partitioned``: ``a * b + c``) meets each point by a
    tight merge of its own (:func:`_meet_points`) and visits only keys where a point is
    present. Otherwise every cursor takes part in one loop over the smallest key, a cursor
    settled right after its step (no test of a stale flag per cursor per iteration: A+B+C
    went from 1.24x to ~1.0x of scipy's time, measured); a union stops when that key is the
    end key, not after a test of every cursor (~10% less time on A+B+C, measured)."""
    b = co.low.b
    points = _disjoint_points(co)
    cursors = co.merged_cursors()
    for c in cursors:
        c.settle()
    with b.while_(Lit("True", BOOL)):
        if points is None:
            if _union(co):  # a point can be met while any cursor is: stop at the end key
                _min_key(b, k, cursors)
                with b.if_(Bin("==", k, END)):
                    b.brk()
            else:
                with b.if_(Not(co.continuing())):
                    b.brk()
                _min_key(b, k, cursors)
            here = {c: Bin("==", c.key, k) for c in cursors}
            if co.looking is not None:  # the line is here where it stores an entry at k
                here[co.cursors[co.looking.line][0]] = co.looking.look(co, k)
        else:
            here = _meet_points(co, k, points, acc, coords_of)
        _visit(co, here, acc, coords_of, met=points is not None)
        for c in cursors:
            with b.if_(here[c]):
                c.step()
                c.settle()


def _union(co: _Coiteration) -> bool:
    """Every merged operand alone is a lattice point: any key a cursor sits on is met."""
    return all(frozenset({n}) in co.plan.lattice.points for n in co.merged())


def _disjoint_points(co: _Coiteration):
    """The lattice's points as lists of cursors when it is partitioned and every operand has
    one cursor (one piece); else None."""
    if not co.plan.lattice.partitioned or any(len(cs) != 1 for cs in co.cursors) or \
            co.looking is not None:
        return None
    return [[co.cursors[n][0] for n in sorted(p)] for p in co.plan.lattice.points]


def _meet_points(co: _Coiteration, k: Var, points, acc, coords_of) -> dict:
    """Bring each intersecting point's cursors to a common key (step the ones behind the
    largest, as an intersection of two does, until all agree or one is done), ``k`` the
    smallest key a point is present at (break when none is), and each cursor *here* when
    its point is present at ``k``. Entries of an operand where the rest of its point is
    absent are stepped over: they are 0 in the result (the lattice is partitioned).

    A one-operand point then runs alone up to the next key of any other point (:func:`_run`):
    in ``A * B + C`` the products are rare and ``C``'s entries between them are visited by a
    loop that tests nothing else."""
    b = co.low.b
    keys = []
    for cs in points:
        if len(cs) == 1:
            keys.append(cs[0].key)
            continue
        if len(cs) == 2:  # the two-way intersection: fewer tests per step
            keys.append(_meet_two(b, *cs))
            continue
        with b.while_(_all([Bin("!=", c.key, END) for c in cs] + [_any(
                [Bin("!=", c.key, cs[0].key) for c in cs[1:]])])):
            top = b.fresh("k_top")
            b.assign(top, cs[0].key)
            for c in cs[1:]:
                with b.if_(Bin(">", c.key, top)):
                    b.assign(top, c.key)
            for c in cs:
                with b.if_(Bin("<", c.key, top)):
                    c.step()
                    c.settle()
        met = b.fresh("k_met")
        b.assign(met, END)
        with b.if_(_all([Bin("!=", c.key, END) for c in cs])):
            b.assign(met, cs[0].key)
        keys.append(met)
    for i, cs in enumerate(points):
        if len(cs) == 1 and len(points) > 1:
            _run(co, cs[0], [key for j, key in enumerate(keys) if j != i], k, acc, coords_of)
    with b.if_(_all([Bin("==", key, END) for key in keys])):
        b.brk()
    b.assign(k, keys[0])
    for key in keys[1:]:
        with b.if_(Bin("<", key, k)):
            b.assign(k, key)
    return {c: Bin("==", key, k) for cs, key in zip(points, keys) for c in cs}


def _meet_two(b, x, y) -> Var:
    """Step whichever of two cursors is behind until they agree (or the one ahead is done:
    no common key is left); the common key, else the end key."""
    with b.while_(Bin("!=", x.key, y.key)):
        with b.if_(Bin("<", x.key, y.key)):
            with b.if_(Bin("==", y.key, END)):
                b.brk()
            x.step()
            x.settle()
        with b.else_():
            with b.if_(Bin("==", x.key, END)):
                b.brk()
            y.step()
            y.settle()
    met = b.fresh("k_met")
    b.assign(met, END)
    with b.if_(Bin("==", x.key, y.key)):
        b.assign(met, x.key)
    return met


def _run(co: _Coiteration, c, others: list[Expr], k: Var, acc, coords_of) -> None:
    """Visit ``c``'s entries while its key is below every other point's: no other operand
    is here (they read as 0), and only ``c`` steps."""
    b = co.low.b
    bound = b.fresh("k_next")
    b.assign(bound, others[0])
    for key in others[1:]:
        with b.if_(Bin("<", key, bound)):
            b.assign(bound, key)
    with b.while_(Bin("<", c.key, bound)):
        b.assign(k, c.key)
        here = {x: Lit("True" if x is c else "False", BOOL) for x in co.all_cursors()}
        _visit(co, here, acc, coords_of, met=True)
        c.step()
        c.settle()


class _RowLength(Assembler):
    """Counts a row's entries instead of writing them (the parallel fill's first pass)."""

    def __init__(self, length: Var):
        self.length = length

    def emit(self, low, coords, value):
        low.b.assign(self.length, self.length + 1)


def _parallel_fill(co: _Coiteration) -> None:
    """Rows into CSR on several threads (module doc): count, prefix sum, fill. Each pass has
    cursors of its own (a parallel loop's variables are its iterations' alone)."""
    plan, b = co.plan, co.low.b
    asm: AppendOut = co.asm
    rows = index(plan.space[plan.order[0]])
    pos, ix = asm.pos[1], asm.ix
    team = b.fresh("team")
    b.assign(team, Lit("sf_max_threads()", INT))
    r, length, t = b.fresh("r"), b.fresh("row_len"), b.fresh("t")
    with b.if_(Bin(">", team, Lit("1", INT))):
        with b.block(_note(co) + "; pass 1 (rows in parallel): each row's length"):
            co.asm = _RowLength(length)
            with b.loop(r, 0, rows, parallel=True, team=team):
                b.assign(length, Lit("0", INT))
                _row_merge(co, r, None)
                b.store(pos, r + 1, cast(ix, length))
            co.asm = asm
        with b.block("prefix sum: row starts"):
            with b.loop(t, 0, rows):
                b.store(pos, t + 1, cast(ix, Bin("+", Load(pos, t + 1), Load(pos, t))))
    co.cursors = []
    co.make_cursors(row=True)
    whole, asm.n = asm.n, b.fresh("n_row")  # the row's own cursor: private to its thread
    r2 = b.fresh("r")
    with b.block("fill: each row from its start (pass 1's prefix sum; with one thread, where "
                 "the row before ended)"):
        with b.loop(r2, 0, rows, parallel=True, team=team):
            b.assign(asm.n, Load(pos, r2))
            _row_merge(co, r2, None)
            with b.if_(Bin("==", team, Lit("1", INT))):
                b.store(pos, r2 + 1, cast(ix, asm.n))
    asm.n = whole
    b.assign(whole, Load(pos, rows))


# --- universe: every coordinate, cursors following ------------------------------------------

def _universe(co: _Coiteration) -> None:
    """Dense-valued expressions: every coordinate of the space in row-major order; each
    cursor is here when its key equals the current coordinate."""
    plan, b = co.plan, co.low.b
    row = plan.mode == "row"
    co.make_cursors(row=row)
    names = [o.name for o in plan.operands]
    acc = _Accumulator.make(co, scope="all")
    if acc is not None:
        acc.start()
    with b.block(f"every coordinate of the result (it is nonzero where {', '.join(names)} "
                 f"store nothing); the cursors of {', '.join(names)} follow in storage "
                 f"order (proved)"):
        coords = [b.fresh(f"k{d}") for d in range(co.ndim)]
        lin = None
        if not row:
            for c in co.all_cursors():
                c.init()
            lin = b.fresh("lin")
            b.assign(lin, Lit("0", INT))
        loops = []
        for d in range(co.ndim):
            cm = b.loop(coords[d], 0, index(plan.space[d]))
            cm.__enter__()
            loops.append(cm)
            if row and d == 0:
                for c in co.all_cursors():
                    c.init(coords[0])
        for c in co.all_cursors():
            c.settle()
        key = coords[-1] if row else lin
        here = {c: Bin("==", c.key, key) for c in co.all_cursors()}
        known = co.operand_values(here)
        v = co.evaluate(known, tuple(coords))
        _emit(co, tuple(coords), v, acc)
        for c in co.all_cursors():
            with b.if_(here[c]):
                c.step()
        if lin is not None:
            b.assign(lin, lin + 1)
        for cm in reversed(loops):
            cm.__exit__(None, None, None)
    if acc is not None:
        acc.finish(tuple(Lit("0", INT) for _ in plan.space))

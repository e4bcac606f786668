"""Planning (DESIGN §3.2): how one kernel iterates, decided from the program's structure,
its level capabilities and proofs of order — never from a format's name.

* A program with no sparse input: :class:`~plans.DensePlan`.
* A sparse *view* (the stored entries of one operand seen through shape operators and
  zero-preserving maps — ``streams.py``): :class:`~plans.StreamPlan`, its loop and output
  assembly chosen from Z3 proofs that the entries arrive in the output's storage order
  (``order.py``).
* An elementwise expression of several sparse operands, or of one that is not
  zero-preserving: :class:`~plans.CoiterPlan` — a merge lattice (``lattice.py``) over the
  operands, each operand walked in the iteration order (proved).
* A reduction at the root over either: the same, accumulating into a dense result.
* ``sum(X * Y)`` contracting an axis of two sparse operands: :class:`~plans.ContractPlan`
  (Gustavson, a workspace per row).

When a part of the program cannot be read in the order the kernel needs — an operand stored
in another order (``A - A.T``), a subexpression that is not a view (``concat([A * B, C])``)
— the planner raises :class:`NeedsStage`: the pipeline computes that part first, into an
O(nnz) temporary in the needed order, and plans again with the temporary as an input.
"""

from __future__ import annotations

from dataclasses import replace
from itertools import permutations

from sparsefold.compiler.plan import contract
from sparsefold.compiler.plan.background import per_cell, summable
from sparsefold.compiler.plan.facts import (
    appendable,
    broadcast_row,
    bulk_shifts,
    coo_run_leaf,
    row_loop_applies,
)
from sparsefold.compiler.plan.lattice import Lattice
from sparsefold.compiler.plan.lattice import build as build_lattice
from sparsefold.compiler.plan.order import prune_guards, stream_is_ordered, stream_is_row_ordered
from sparsefold.compiler.plan.plans import (
    CoiterPlan,
    DensePlan,
    Operand,
    Plan,
    Reduction,
    StreamPlan,
)
from sparsefold.compiler.plan.streams import NotAStream, finite_checks, is_locatable, stream_pieces
from sparsefold.spec import sizes as sz
from sparsefold.spec.compute import Input, Map, Reduce
from sparsefold.spec.fills import filled_parts
from sparsefold.spec.formats import Format
from sparsefold.spec.functions import get_function
from sparsefold.spec.ir import Node, ShapeOp
from sparsefold.spec.ops_axes import BroadcastTo, ExpandDims
from sparsefold.spec.ops_reshape import Collapse, Split
from sparsefold.spec.printer import topological

__all__ = ["plan", "NeedsStage", "reduce_below", "has_sparse_input", "dense_valued",
           "sparse_product"]


class NeedsStage(Exception):
    """``node`` must be computed by a kernel of its own first; ``order`` is the storage
    order (a permutation of its axes) the consumer needs, or None for any; ``dense``: the
    node is dense-valued (its temporary is a dense array); ``squeeze``: the stage computes
    it without its size-1 axes (a matmul's inserted axis), which the consumer re-inserts."""

    def __init__(self, node: Node, order: tuple[int, ...] | None, why: str,
                 dense: bool = False, squeeze: bool = False, collapsed=None):
        super().__init__(why)
        self.node, self.order, self.why, self.dense = node, order, why, dense
        self.squeeze = squeeze
        # (a two-dimensional node to compute instead, how to rebuild ``node`` from its
        # temporary): ``node`` may be the program itself (``_collapse_for_line``)
        self.collapsed = collapsed


def has_sparse_input(node: Node) -> bool:
    return not is_locatable(node)


def reduce_below(program: Node) -> tuple[Reduce | None, tuple[ShapeOp, ...]]:
    """A reduction reached from the root through single-piece shape operators (squeeze
    after matmul, a reshape of the result), and those operators bottom-up."""
    chain: list[ShapeOp] = []
    node = program
    while isinstance(node, ShapeOp) and len(node.operands()) == 1 and node.fill is None:
        pieces = node.index_map().pieces
        if len(pieces) != 1 or None in pieces[0].forward:  # roll: two pieces of one operand
            return None, ()
        chain.append(node)
        node = node.operands()[0]
    if isinstance(node, Reduce):
        return node, tuple(chain[::-1])
    return None, ()


def dense_valued(program: Node) -> bool:
    """Is the result dense, as scipy's would be: no sparse input; a reduction that is not a
    sparse × sparse contraction (``A @ x``, ``A.sum(axis=0)``, ``sum(A * B, axis=1)``); or
    an expression nonzero where its operands store nothing (``A + 1``, ``A == 0``, and
    ``A @ x + y``: an argument that is itself dense-valued counts as dense)? The front
    end's default output format follows it."""
    if not has_sparse_input(program):
        return True
    red, _ = reduce_below(program)
    if red is not None:
        return not _sparse_contraction(red)
    if isinstance(program, Map):
        # a dense-valued argument computed on its own (``A @ x``) stands for a dense
        # input; a filled input ``where(present, stored, c)`` is read by the lattice at its
        # fill, so ``x != c`` stays sparse (argmax of a pydata array of fill 1 staged
        # rows x columns temporaries, #39)
        args = [Input(f"dense_valued{d}", a.shape, a.dtype, "dense")
                if has_sparse_input(a) and filled_parts(a) is None and dense_valued(a)
                else a for d, a in enumerate(program.args)]
        if any(x is not a for x, a in zip(args, program.args)):
            program = replace(program, args=tuple(args))
            if not has_sparse_input(program):
                return True
        try:
            operands = _operands(program, exact=False)
        except NeedsStage:
            return False
        return build_lattice(program, {o.node: n for n, o in enumerate(operands)}).universe
    return False


def sparse_product(red: Reduce):
    """``red`` as a sum of the product of two sparse operands: each operand's core and its
    axes (``contract.core``), or None (another monoid or function, an operand with no
    sparse input or a dense-valued one — ``A @ (B @ x)``, computed first, densely — a
    broadcast that no inserted axis explains). The one recognizer of the pattern: planning,
    normalization and the default output format all ask it."""
    found = contract.product_cores(red)
    if found is None or any(dense_valued(c) for c, _ in found):
        return None
    return found


def _sparse_contraction(red: Reduce) -> bool:
    """A sum of a product of two sparse operands in which one keeps an axis of its own
    (``A @ B``, ``A @ s`` with ``s`` a sparse vector): its result is sparse. Without such an
    axis (``sum(A * B, axis=1)``, a row-wise dot product) every kept cell sums a product
    over a whole line, and the result is a reduction like any other: dense."""
    found = sparse_product(red)
    if found is None:
        return False
    (_, ax), (_, ay) = found
    reduced = set(red.axes)
    return bool(set(ax) - set(ay) - reduced or set(ay) - set(ax) - reduced)


def plan(program: Node, fmt: Format, *, exact: bool = False, checked: bool = False) -> Plan:
    """The plan of one kernel computing ``program`` into ``fmt`` (pass 2 of the pipeline).
    ``exact``: no annihilation that needs finite operands (the runtime's fallback when an
    operand holds a NaN or an infinity). ``checked``: the root is an operator whose maps
    are not proved (``pipeline.Kernel``): only plans whose every output coordinate passes
    through the assembler's range check (leaf loops; append when the order is proved on
    the maps as written, else a sort), no reduction through its maps."""
    if not has_sparse_input(program):
        return DensePlan("no sparse input")
    red, chain = reduce_below(program) if not checked else (None, ())
    if red is not None:
        return _plan_reduction(red, chain, fmt, exact)
    pieces = _stream(program, exact)
    if pieces is not None:
        if checked:
            return _plan_checked_stream(prune_guards(pieces), fmt)
        return _plan_stream(prune_guards(pieces), program, fmt)
    return _plan_elementwise(program, program, fmt, exact, reduction=None)


def _plan_checked_stream(pieces, fmt: Format) -> StreamPlan:
    finite = finite_checks(pieces)
    if fmt.is_dense:
        return StreamPlan(pieces, "leaf", "dense", finite)
    if stream_is_ordered(pieces, fmt.mode_order):  # proved of the maps as written
        return StreamPlan(pieces, "leaf", "append", finite)
    return StreamPlan(pieces, "leaf", "sort", finite)


def _stream(node: Node, exact: bool):
    """The node's stream pieces, or None when it is not a view — or when the exact variant
    is asked for and the stream relies on finite operands."""
    try:
        pieces = stream_pieces(node)
    except NotAStream:
        return None
    if exact and finite_checks(pieces):
        return None
    return pieces


# --- one view: streams ------------------------------------------------------------------------

def _plan_stream(pieces, program: Node, fmt: Format) -> Plan:
    finite = finite_checks(pieces)
    if fmt.is_dense:
        return StreamPlan(pieces, "leaf", "dense", finite)
    order = fmt.mode_order
    # Whole leaves in order (vstack): bulk copies. Otherwise output rows outermost when the
    # leaves allow it: rows are closed once each and the inner loop is a plain copy; that
    # needs order only within a row.
    ordered = stream_is_ordered(pieces, order)
    if ordered and all(bulk_shifts(p, fmt, program.dtype) is not None for p in pieces):
        return StreamPlan(pieces, "bulk", "append", finite)
    if len(order) > 1 and row_loop_applies(pieces, order) and \
            stream_is_row_ordered(pieces, order):
        return StreamPlan(pieces, "row", "append", finite)
    if ordered:
        return StreamPlan(pieces, "leaf", "append", finite)
    if _coo_rows(pieces, fmt):
        # sorted COO read as rows (one cursor per leaf, no search): a plain copy per row
        # instead of a merge by key (hstack of COO into CSR)
        return StreamPlan(pieces, "row", "append", finite)
    if _pieces_mergeable(pieces, order):
        # each piece in order on its own (COO hstack): one pass merging the pieces by key
        operand = Operand(program, pieces)
        lattice = build_lattice(program, {program: 0})
        return CoiterPlan(program, (operand,), replace(lattice, finite=finite), "flat",
                          order, program.shape, "append")
    if len(order) == 2 and fmt.levels[0].full or fmt.kinds == ("pos", "one"):
        if stream_is_row_ordered(pieces, order):
            return StreamPlan(pieces, "leaf", "scatter", finite)
    if len(order) > 1 and stream_is_row_ordered(pieces, order):
        return StreamPlan(pieces, "leaf", "bucket", finite)
    return StreamPlan(pieces, "leaf", "sort", finite)


def _coo_rows(pieces, fmt: Format) -> bool:
    """May output rows drive the loop when some leaves are COO, read as runs of equal row
    coordinates? A cursor only moves forward, so each COO piece must arrive in output
    storage order on its own (proved): its source rows are visited in increasing order.
    Only into CSR/CSC: into COO, the merge measured 2.7x faster on rows of ~2 entries
    (a row loop pays mispredicted loop exits per row; the merge's keys compile to
    selects), the row loop 0.3-0.6x on rows of ~70 (docs/benchmarks.md)."""
    order = fmt.mode_order
    return len(order) == 2 and fmt.levels[0].full and any(coo_run_leaf(p) for p in pieces) and \
        row_loop_applies(pieces, order, coo_runs=True) and \
        stream_is_row_ordered(pieces, order) and \
        all(stream_is_ordered((p,), order) for p in pieces if coo_run_leaf(p))


MAX_MERGED_PIECES = 4


def _flat(piece) -> bool:
    """A leaf a flat cursor walks without broadcast counters: a compressed innermost
    level under full or compressed ones (CSR, CSC, COO, DCSR, sparse vectors)."""
    k = piece.leaf.format.kinds
    return not piece.free and bool(k) and (k == ("full", "pos") or (
        k[0] == "pos" and all(x in ("one", "pos") for x in k[1:])))


def _pieces_mergeable(pieces, order) -> bool:
    """Can pieces that arrive out of order as a whole be appended in one pass by merging
    them? Each piece must be walked in output storage order on its own (proved); pieces
    never share an output coordinate (they partition the output)."""
    return 2 <= len(pieces) <= MAX_MERGED_PIECES and all(_flat(p) for p in pieces) and all(
        stream_is_ordered((p,), order) for p in pieces)


# --- several operands: co-iteration -----------------------------------------------------------

def _operands(root: Node, exact: bool) -> list[Operand]:
    """The sparse operands of an elementwise expression: its maximal views. Raises
    :class:`NeedsStage` for a sparse part that is neither a view nor a map."""
    found: dict[Node, Operand] = {}

    def visit(node: Node) -> None:
        if node in found or not has_sparse_input(node):
            return
        pieces = _stream(node, exact)
        if pieces is not None:
            found[node] = Operand(node, prune_guards(pieces))
            return
        if isinstance(node, Map):
            for a in node.args:
                visit(a)
            return
        culprit = _not_a_view(node, exact)
        # computed without its literal size-1 axes (the matmul's: ``A @ x`` in ``A @ x + d``
        # is then planned as the SpMV it is, a register per row)
        if not has_sparse_input(culprit):  # a computed dense operand: a dense temporary
            raise NeedsStage(culprit, None, f"a computed dense operand of "
                                            f"{type(node).__name__}", dense=True, squeeze=True)
        raise NeedsStage(culprit, None, f"{type(culprit).__name__} over a sparse expression "
                                        f"is not a view", squeeze=True)
    visit(root)
    return list(found.values())


def _not_a_view(node: Node, exact: bool) -> Node:
    """The part of ``node`` (not a view) to compute first: below a shape operator, its
    first sparse operand that is not a view (``pad(a + 1)`` computes ``a + 1``); the node
    itself when its operands are views (a user operator with a fill, a reduction)."""
    if isinstance(node, ShapeOp):
        for o in node.operands():
            if has_sparse_input(o) and _stream(o, exact) is None:
                return _not_a_view(o, exact) if isinstance(o, ShapeOp) else o
        for o in node.operands():  # a computed dense operand beside sparse ones
            if not isinstance(o, Input) and not has_sparse_input(o) and \
                    _stream(o, exact) is None:
                return o
    return node


def _check_broadcasts(root: Node) -> None:
    """Sparse arguments of a map must have the map's shape (normalization makes broadcasts
    explicit views); a remaining one is computed first."""
    for n in topological(root):
        if isinstance(n, Map):
            for a in n.args:
                if has_sparse_input(a) and a.shape != n.shape:
                    raise NeedsStage(a, None, "a broadcast sparse operand")


def _orders(ndim: int, preferred: tuple[int, ...]):
    yield preferred
    for p in permutations(range(ndim)):
        if p != preferred:
            yield p


def _operand_ok(operand: Operand, order, row: bool) -> bool:
    if row:  # a broadcast row is read again for every output row (a row cursor each)
        return row_loop_applies(operand.pieces, order, broadcast_rows=True) and all(
            stream_is_row_ordered((p,), order) for p in operand.pieces)
    return all(_cursor_ok(p) and stream_is_ordered((p,), order) for p in operand.pieces)


def _stage_unlocatable_lines(operands, lattice, ndim: int) -> None:
    """A sparse row (1, n) or column (n, 1) repeated along the other axis, in a lattice whose
    every point holding it holds another operand (``A * v``, ``A * v + B``, ``(A + B) * v``),
    is *located* through a workspace (``located.py``) when its leaf is stored as the line it
    is: a row in CSR, a column in CSC. Stored otherwise (a COO row, a CSR column), its cursor
    would walk the repeated axis at every entry (nnz x size steps: 11 s for a COO row against
    a 200000² CSR matrix); the leaf is converted first instead, an O(nnz) temporary of the
    line."""
    if ndim != 2 or len(operands) < 2 or lattice.universe:
        return
    repeated = [n for n, o in enumerate(operands) if _repeated(o)]
    if len(repeated) != 1:
        return  # none is repeated, or several are (an outer product): nothing to locate
    n = repeated[0]
    if frozenset({n}) in lattice.points or not any(n in p for p in lattice.points):
        return  # met where the line alone stores (A + v): merged
    o = operands[n]
    p = o.pieces[0]
    leaf = p.leaf
    if leaf.format.is_dense or p.layers or len(p.free) != 1:
        return
    if leaf.ndim != 2:  # a line of another rank (a collapsed (n, 1, 1)): the line alone
        arg = getattr(o.node, "arg", None)
        if isinstance(o.node, BroadcastTo) and arg.ndim == 2 and not isinstance(arg, Input):
            for line in ((0, 1), (1, 0)):
                if broadcast_row(p, line):
                    raise NeedsStage(arg, line, f"{o.name} is a repeated line to locate, "
                                                f"stored with {leaf.ndim} dimensions")
        return
    for line in ((0, 1), (1, 0)):  # repeated along axis line[0], stored as line[1]'s line
        if broadcast_row(p, line) and not (leaf.format.kinds == ("full", "pos") and
                                           leaf.format.mode_order == line):
            raise NeedsStage(leaf, line, f"{o.name} is a repeated line to locate, "
                                         f"stored as {leaf.format}")


_BACKGROUND_MONOIDS = ("sum", "prod", "max", "min", "any", "all")


def _repeated(o: Operand) -> bool:
    """Is the operand one stored line (or block) repeated along an axis (a broadcast)?"""
    return len(o.pieces) == 1 and bool(o.pieces[0].free)


def _stage_product_of_repeated(root: Node, operands, ndim: int) -> None:
    """A repeated operand is located only in a two-dimensional co-iteration with no other
    repeated operand (``located.py``); elsewhere it is merged once per repetition (rows x
    its entries). When the expression holds a product of a repeated operand and operands
    that are not (``A * v`` in ``A * v * w``, ``A * v + B * w``, or in the three-dimensional
    space of ``(A * v) @ x``), that product is computed first, by a kernel of its own that
    locates the line, into an O(nnz) temporary: 2.2 GB and 2.7 s for ``(A * v) @ x`` on a
    20000² matrix became 1.4 ms (16.6 ms at 200000²)."""
    repeated = {o.node for o in operands if _repeated(o)}
    if not repeated or (ndim == 2 and len(repeated) == 1):
        return
    found = _product_of_repeated(root, repeated, {o.node for o in operands})
    if found is not None and found is not root:
        raise NeedsStage(found, None, "a product holding a repeated operand, located there",
                         squeeze=True)


def _product_of_repeated(node: Node, repeated: set, operands: set):
    """The innermost product ``x * y`` in ``node`` with exactly one repeated operand on one
    side and only operands that are not on the other (None if there is none)."""
    if not isinstance(node, Map) or node in operands:
        return None
    for a in node.args:
        found = _product_of_repeated(a, repeated, operands)
        if found is not None:
            return found
    if node.fn.name != "multiply" or len(node.args) != 2:
        return None
    sides = [_operands_under(a, operands) for a in node.args]
    for one, other in (sides, sides[::-1]):
        if len(one) == 1 and one <= repeated and other and not other & repeated:
            return node
    return None


def _operands_under(node: Node, operands: set) -> set:
    if node in operands:
        return {node}
    if isinstance(node, Map):
        return set().union(*(_operands_under(a, operands) for a in node.args))
    return set()


def _collapse_for_line(root: Node, operands, lattice, ndim: int) -> None:
    """An n-d expression (n > 2) with one repeated operand that varies along its last axis
    alone (``T * v``: ``v`` broadcast over ``T``'s leading axes) or its first alone: computed
    as a two-dimensional expression over the other axes collapsed into one (``(I*J, K)``),
    where the line is located (``located.py``), and split back. Otherwise the broadcast is
    merged once per repetition, or materialized (n0 x n1 x nnz(v) entries)."""
    if ndim < 3 or lattice.universe:
        return
    repeated = [n for n, o in enumerate(operands) if _repeated(o)]
    if len(repeated) != 1 or frozenset(repeated) in lattice.points:
        return
    line = operands[repeated[0]].node
    if not isinstance(line, BroadcastTo) or tuple(line.shape) != tuple(root.shape):
        return
    arg, shape = line.arg, tuple(root.shape)
    lead = ndim - arg.ndim
    varying = [d for d in range(ndim) if d >= lead and not (
        sz.const_value(arg.shape[d - lead]) == 1 and sz.const_value(shape[d]) != 1)]
    if varying == [ndim - 1]:  # (I, J, K) -> (I*J, K); the line a (1, K) row
        start, stop = 0, ndim - 1
        flat_line = ExpandDims(arg, 0) if arg.ndim == 1 else Collapse(arg, 0, arg.ndim - 1)
    elif varying == [0] and lead == 0:  # (I, J, K) -> (I, J*K); the line an (I, 1) column
        start, stop = 1, ndim
        flat_line = Collapse(arg, 1, ndim)
    else:
        return
    flat_shape = shape[:start] + (sz.product(shape[start:stop]),) + shape[stop:]
    memo: dict = {}

    def flat(node: Node) -> Node | None:
        if node is line:
            return BroadcastTo(flat_line, flat_shape)
        if node in memo:
            return memo[node]
        if isinstance(node, Map) and tuple(node.shape) == shape:
            args = [flat(a) for a in node.args]
            out = None if None in args else Map(node.fn, tuple(args))
        elif tuple(node.shape) == shape:
            out = Collapse(node, start, stop)
        elif node.ndim == 0:
            out = node
        else:
            out = None  # a dense argument broadcast by the map itself: left as it is
        memo[node] = out
        return out
    two_d = flat(root)
    if two_d is None:
        return
    sizes = shape[start:stop]
    raise NeedsStage(root, None, f"{operands[repeated[0]].name} is a line repeated over "
                                 f"{ndim - 1} axes: computed with them collapsed into one",
                     collapsed=(two_d, lambda temp: Split(temp, start, sizes)))


def _stored_axes(piece) -> frozenset[int]:
    """The output axes a piece's stored entries decide (the others are broadcast)."""
    free = {name for name, _ in piece.free}
    return frozenset(d for d, c in enumerate(piece.coords)
                     if not (sz.free_symbols(c) & free))


def _cartesian(operands, lattice: Lattice, reduction, fmt: Format):
    """Two operands met by intersection whose stored axes are each other's broadcast axes
    (``A[:, None, :, None] * K[None, :, None, :]``): every pair of their entries is an output
    entry. Returns the operands with their broadcasts dropped (each piece walks its own
    entries; the other's supply the broadcast coordinates: CoiterPlan mode "product"), or
    None. Not for reductions (nor a result with one stored entry per pair is not wanted)."""
    if reduction is not None or len(operands) != 2 or lattice.universe or \
            lattice.points != (frozenset({0, 1}),):
        return None
    if any(len(o.pieces) != 1 or not o.pieces[0].free or o.pieces[0].leaf.format.is_dense
           for o in operands):
        return None
    (a,), (b,) = (o.pieces for o in operands)
    ndim = len(a.coords)
    sa, sb = _stored_axes(a), _stored_axes(b)
    if sa & sb or (sa | sb) != frozenset(range(ndim)):
        return None
    out = []
    for o, p in ((operands[0], a), (operands[1], b)):
        zero = {name: sz.Const(0) for name, _ in p.free}
        coords = tuple(sz.substitute(c, zero) for c in p.coords)
        out.append(replace(o, pieces=(replace(p, free=(), coords=coords),)))
    return tuple(out)


def _unbroadcast(node: Node, order: tuple[int, ...]) -> tuple[Node, tuple[int, ...] | None]:
    """What to stage of an operand read out of order: below a broadcast, the view it repeats
    (``v[:, ::-1]`` of ``A * v[:, ::-1]``: an O(nnz(v)) temporary, not the broadcast's
    rows x nnz(v) entries), in ``order`` when it keeps the dimensions, else in any."""
    arg = getattr(node, "arg", None)
    if isinstance(node, BroadcastTo) and has_sparse_input(arg) and not isinstance(arg, Input):
        # (an input staged again would come back as it was: then the broadcast is staged)
        return arg, order if arg.ndim == node.ndim else None
    return node, order


def _cursor_ok(piece) -> bool:
    k = piece.leaf.format.kinds
    if piece.leaf.format.is_dense:
        return True
    return bool(k) and k[-1] in ("pos", "one") and any(x == "pos" for x in k)


def _plan_elementwise(root: Node, space_node: Node, fmt: Format, exact: bool,
                      reduction: Reduction | None) -> Plan:
    """Co-iteration of ``root`` (an elementwise expression over sparse operands) over
    ``space_node``'s coordinates, into ``fmt`` (or accumulated by ``reduction``)."""
    _check_broadcasts(root)
    operands = _operands(root, exact)
    numbering = {o.node: n for n, o in enumerate(operands)}
    lattice = build_lattice(root, numbering, exact=exact)
    ndim = root.ndim
    if reduction is not None and lattice.region and reduction.monoid in _BACKGROUND_MONOIDS \
            and (not isinstance(lattice.outside, Node) or per_cell(lattice.outside, reduction)):
        # a reduction of a dense-valued argument (``sum(A + 1)``, ``var(A, axis=1)``): visit
        # only the region where no sparse operand is implicit (the lattice's), and combine
        # the value outside it — a constant, or one per output cell (background.py) — once
        # per unvisited coordinate after the kernel (``kernel.combine_background``). Not
        # rows x columns steps.
        reduction = replace(reduction, background=lattice.outside)
        lattice = Lattice(lattice.region, lattice.finite)
    elif reduction is not None and lattice.region and reduction.monoid == "sum" and \
            not exact and isinstance(lattice.outside, Node) and summable(lattice.outside,
                                                                         reduction):
        # a sum whose argument E is, outside the region, a value B that varies along the
        # reduced axes (``sum(A + x[None, :], axis=1)``): E - B is 0 there, so the kernel
        # sums E - B over the region alone and the runtime adds B's sum over the reduced
        # axes, read off B's own (unbroadcast) values (background.total). Relies on B being
        # finite (inf - inf is nan): its inputs are checked, else the exact variant runs
        total = lattice.outside
        root = Map(get_function("subtract"), (root, total))
        reduction = replace(reduction, total=total)
        lattice = Lattice(lattice.region, tuple(dict.fromkeys(
            lattice.finite + tuple(n for n in topological(total) if isinstance(n, Input)
                                   and n.dtype.kind in "fc"))))
    product = _cartesian(operands, lattice, reduction, fmt)
    if product is not None:
        return CoiterPlan(root, product, lattice, "product", tuple(range(ndim)),
                          tuple(root.shape), "dense" if fmt.is_dense else "sort", None, exact)
    _stage_unlocatable_lines(operands, lattice, ndim)
    _stage_product_of_repeated(root, operands, ndim)
    _collapse_for_line(root, operands, lattice, ndim)
    dense_out = fmt.is_dense or reduction is not None or lattice.universe
    if reduction is not None:
        assembly = _reduced_assembly(reduction, fmt)
    elif dense_out:
        assembly = "dense"
    else:
        assembly = "append"
        if not appendable(fmt):
            raise NeedsStage(root, None, f"output format {fmt} is not appended directly")
    if lattice.universe or (assembly == "append"):
        # the dense result is visited row-major; a sparse one in its storage order
        candidates = [tuple(range(ndim)) if lattice.universe or dense_out else fmt.mode_order]
    else:
        candidates = list(_orders(ndim, tuple(range(ndim))))
    for order in candidates:
        row = ndim == 2 and all(_operand_ok(o, order, True) for o in operands)
        if row or all(_operand_ok(o, order, False) for o in operands):
            return CoiterPlan(root, tuple(operands), lattice, "row" if row else "flat",
                              tuple(order), tuple(root.shape), assembly, reduction, exact)
    # no order serves every operand: compute the first one that fails in the first order
    order = candidates[0]
    if ndim == 2 and any(_operand_ok(o, order, True) and any(
            broadcast_row(p, order) for p in o.pieces) for o in operands):
        # a broadcast row is read by rows only: the operands rows cannot drive (COO) are
        # reordered into an O(nnz) temporary, rather than the broadcast materialized at
        # rows x the row's entries
        for o in operands:
            if not _operand_ok(o, order, True):
                node, need = _unbroadcast(o.node, tuple(order))
                raise NeedsStage(node, need, f"{o.name} is read by rows beside a "
                                             f"broadcast row")
    for o in operands:
        if not _operand_ok(o, order, False):
            node, need = _unbroadcast(o.node, tuple(order))
            raise NeedsStage(node, need, f"{o.name} is not stored in the iteration order "
                                         f"{order}")
    raise NeedsStage(root, None, "no iteration order")  # pragma: no cover


# --- reductions -------------------------------------------------------------------------------

def _plan_reduction(red: Reduce, chain, fmt: Format, exact: bool) -> Plan:
    reduction = Reduction(red, chain)
    arg = red.arg
    found = sparse_product(red)
    if found is not None:
        contraction = contract.contraction(red, found, chain, fmt, _need_stage)
        if contraction is not None:
            return contraction
    pieces = _stream(arg, exact)
    if pieces is not None:
        pieces = prune_guards(_accumulated(pieces, reduction))
        return StreamPlan(pieces, "leaf", _reduced_assembly(reduction, fmt),
                          finite_checks(pieces), reduction)
    return _plan_elementwise(arg, arg, fmt, exact, reduction)


# monoids whose identity is zero: a cell no entry reaches is an implicit zero of the result
_SORTED_MONOIDS = ("sum", "any")


def _reduced_assembly(reduction: Reduction, fmt: Format) -> str:
    """How a reduction's cells are assembled: into a dense accumulator of the result's shape
    ("accumulate"), or — a sparse result of two or more axes, a monoid whose identity is
    zero, nothing combined per cell after the kernel — as the entries' contributions at
    their output coordinates, sorted and combined by the runtime ("sort": kernel._finish).
    A dense accumulator of a sparse n-d result is rows x columns of work and memory (a sum
    over the middle axis of a 3-d COO into CSR: found by the program generator, #39)."""
    if fmt.is_dense or len(fmt.kinds) < 2 or reduction.monoid not in _SORTED_MONOIDS or \
            reduction.background is not None or reduction.total is not None:
        return "accumulate"
    return "sort"


def _accumulated(pieces, reduction: Reduction) -> tuple:
    """Stream pieces of a reduction's argument, with output coordinates = the kept
    coordinates carried up through the chain's forward maps (their forward guards join the
    guard)."""
    out = []
    for p in pieces:
        coords = reduction.out_coords(p.coords)
        guard = sz.and_(p.guard, reduction.chain_guard(p.coords))
        out.append(replace(p, coords=coords, guard=guard))
    return tuple(out)


def _need_stage(node, order, why):
    raise NeedsStage(node, order, why)


"""Recognizing a sparse × sparse contraction: ``sum(X' * Y', axis=k)`` where ``X'`` and
``Y'`` are broadcasts of two sparse operands that share the summed axis (``A @ B``,
``tensordot`` of matrices). Contraction is not a node (DESIGN §1): it is this pattern.

Each operand's *core* is found by peeling the broadcasts and inserted axes above it; the
product's axes are then classified: ``i`` (only ``X`` varies along it), ``j`` (only ``Y``),
``k`` (both; summed). The plan computes ``out[i, j] = Σ_k X[i, k] · Y[k, j]`` row by row:
the *driver* (``X`` as (i, k), or ``Y`` as (j, k) when the output is stored column-major)
is walked row by row, and each of its entries locates a row of the other operand
(``Y`` as (k, j)). Both need rows: an operand stored otherwise (CSC for a row, COO) is
reordered into a temporary first (:class:`~planner.NeedsStage`).
"""

from __future__ import annotations

from sparsefold.compiler.plan.facts import row_loop_applies
from sparsefold.compiler.plan.order import prune_guards
from sparsefold.compiler.plan.plans import ContractPlan, Operand, Reduction
from sparsefold.compiler.plan.streams import NotAStream, is_locatable, stream_pieces
from sparsefold.spec import sizes as sz
from sparsefold.spec.compute import Map, Reduce
from sparsefold.spec.errors import IllFormedProgram
from sparsefold.spec.formats import Format
from sparsefold.spec.ir import Node
from sparsefold.spec.ops_axes import BroadcastTo, ExpandDims, PermuteDims

__all__ = ["contraction", "core", "product_cores"]


def core(node: Node) -> tuple[Node, tuple[int, ...]] | None:
    """``node`` without the broadcasts and inserted axes above it, and for each of the
    core's axes the axis of ``node`` it becomes; None when a broadcast stretches an axis
    that no inserted axis explains."""
    axes = list(range(node.ndim))          # current node's axes -> axes of ``node``
    stretched: set[int] = set()            # axes of ``node`` that are broadcast, not real
    while True:
        if isinstance(node, BroadcastTo):
            arg = node.arg
            lead = node.ndim - arg.ndim
            for d in range(lead):
                stretched.add(axes[d])
            for d in range(arg.ndim):
                if arg.shape[d] == sz.Const(1) and node.shape[d + lead] != sz.Const(1):
                    stretched.add(axes[d + lead])
            axes = axes[lead:]
            node = arg
        elif isinstance(node, ExpandDims):  # an inserted axis is never a real one
            inserted = node.axis % node.ndim
            axes = axes[:inserted] + axes[inserted + 1:]
            node = node.arg
        else:
            break
    real = [a for a in axes if a not in stretched]
    if len(real) != len(axes):
        return None
    return node, tuple(axes)


def _view(node: Node, axes: tuple[int, ...], want: tuple[int, int]):
    """``node`` (whose axes are product axes ``axes``) as a matrix with axes ``want``."""
    if axes == want:
        return node, (0, 1)
    return PermuteDims(node, (1, 0)), (1, 0)


def product_cores(red: Reduce):
    """``red`` as a sum of the product of two operands with sparse inputs: each operand's
    core and its axes (:func:`core`), or None (another monoid or function, an operand with
    no sparse input, a broadcast that no inserted axis explains). The pattern alone: whether
    a core is dense-valued, which makes it no sparse operand (``A @ (B @ x)``), is the
    planner's question (``planner.sparse_product``, the one recognizer that planning,
    normalization and the default output format ask)."""
    monoid = red.monoid if isinstance(red.monoid, str) else red.monoid.name
    arg = red.arg
    if monoid != "sum" or not isinstance(arg, Map) or arg.fn.name != "multiply" or \
            len(arg.args) != 2 or any(is_locatable(a) for a in arg.args):
        return None
    found = tuple(core(a) for a in arg.args)
    if None in found:
        return None
    return found


def contraction(red: Reduce, found, chain, fmt: Format, need_stage) -> ContractPlan | None:
    """The contraction plan for ``red``, whose sparse operands' cores are ``found``
    (``planner.sparse_product``); None if it is not a 2-d sparse × sparse contraction.
    ``need_stage(node, order, why)`` raises the planner's NeedsStage."""
    arg = red.arg
    (cx, ax), (cy, ay) = found
    reduced = set(red.axes)
    sx, sy = set(ax), set(ay)
    # a batch product: an axis both keep, beside an axis of each operand's own (when one
    # operand has no axis of its own, e.g. ``X @ y`` with one column whose inserted axis the
    # normalizer moved below a map, this is not a 2-d contraction; the general plans apply)
    if (sx & sy) - reduced and sx - sy - reduced and sy - sx - reduced:
        raise IllFormedProgram(
            "not supported yet by the compiler: a product of two sparse operands with batch "
            "axes (axes both keep without summing); use .interpret(), or loop over the batch")
    i = sorted(sx - sy - reduced)
    j = sorted(sy - sx - reduced)
    k = sorted(sx & sy & reduced)
    if len(i) != 1 or len(j) != 1 or len(k) != 1 or (sx & sy) - reduced or \
            reduced - (sx & sy) or cx.ndim != 2 or cy.ndim != 2:
        return None
    if chain:  # shape operators above the product: the product is computed first
        need_stage(red, None, "a matrix product below shape operators")
    i, j, k = i[0], j[0], k[0]
    kept = [d for d in range(arg.ndim) if d not in reduced]
    out_first = kept[fmt.mode_order[0]] if not fmt.is_dense else kept[0]
    transposed = out_first == j
    if not transposed:
        drv, drv_axes, want_d = cx, ax, (i, k)
        loc, loc_axes, want_l = cy, ay, (k, j)
    else:
        drv, drv_axes, want_d = cy, ay, (j, k)
        loc, loc_axes, want_l = cx, ax, (k, i)
    operands = []
    for node, axes, want, role in ((drv, drv_axes, want_d, "iterated by rows"),
                                  (loc, loc_axes, want_l, "located by rows")):
        view, order = _view(node, axes, want)
        try:
            pieces = stream_pieces(view)
        except NotAStream:
            need_stage(node, None, "an operand of a contraction that is not a view")
        if any(p.free for p in pieces) or not row_loop_applies(pieces, (0, 1)):
            need_stage(node, order, f"a contraction operand {role} is not stored by rows")
        operands.append(Operand(view, prune_guards(pieces)))
    return ContractPlan(operands[0], operands[1], arg, Reduction(red, tuple(chain)),
                        transposed, "dense" if fmt.is_dense else "append")

"""Contractions: ``outer``, ``dot`` (NumPy's n-d semantics), ``vecdot`` and ``einsum``, each
the sum of a broadcast product — no node of their own (DESIGN §1: contraction is
``Reduce(sum, Map(multiply, ...))``; the engines recognise the pattern).

``einsum`` is lowered operand by operand, left to right: a repeated label inside one operand
is its diagonal (the ``diagonal`` entry), each operand's axes are permuted into one label
order and padded with size-1 axes for the labels it lacks, the running product is multiplied
by the next operand, and every label no later operand and not the output uses is summed
away right there — so each step is a two-operand contraction (a matrix product when both
are sparse) and no step materializes the space of all labels. Sums accumulate in the
product's dtype (bool is *or*), as ``np.einsum`` does.
"""

from __future__ import annotations

from sparsefold.spec.compute import Map, Reduce
from sparsefold.spec.errors import IllFormedProgram
from sparsefold.spec.functions import get_function
from sparsefold.spec.ir import Node, normalize_axis
from sparsefold.spec.ops_axes import ExpandDims, PermuteDims
from sparsefold.spec.ops_diagonal import Diagonal

__all__ = ["outer", "dot", "vecdot", "einsum", "parse_subscripts"]


def _operand(x) -> Node:
    from sparsefold.spec.derived import operand
    return operand(x)


def _multiply(a: Node, b: Node) -> Map:
    return Map(get_function("multiply"), (a, b))


def outer(a: Node, b: Node) -> Node:
    """``np.outer``: both flattened, ``a[:, None] * b[None, :]``."""
    from sparsefold.spec.derived import reshape
    a, b = reshape(_operand(a), (-1,)), reshape(_operand(b), (-1,))
    return _multiply(ExpandDims(a, 1), ExpandDims(b, 0))


def dot(a: Node, b: Node) -> Node:
    """``np.dot``: a product with a 0-d array; the inner product of vectors; otherwise the
    sum over the last axis of ``a`` and the second-to-last of ``b`` (the last, when ``b``
    is 1-d), free axes of ``a`` first — ``tensordot(a, b, ([-1], [-2]))``."""
    from sparsefold.spec.derived import tensordot
    a, b = _operand(a), _operand(b)
    if a.ndim == 0 or b.ndim == 0:
        return _multiply(a, b)
    return tensordot(a, b, ([a.ndim - 1], [max(b.ndim - 2, 0)]))


def vecdot(a: Node, b: Node, axis: int = -1) -> Node:
    """The array API's ``vecdot``: ``sum(conj(a) * b, axis)`` over the broadcast shape."""
    a, b = _operand(a), _operand(b)
    if a.ndim == 0 or b.ndim == 0:
        raise IllFormedProgram("vecdot: operands must be at least 1-d, found a 0-d array")
    if a.dtype.kind == "c":
        a = Map(get_function("conj"), (a,))
    product = _multiply(a, b)
    ax = normalize_axis(axis, product.ndim, what="vecdot axis")
    if axis < 0 and (-axis > a.ndim or -axis > b.ndim):
        raise IllFormedProgram(f"vecdot: axis {axis} is out of bounds for the operands")
    return Reduce(product, (ax,), "sum", product.dtype)


_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


def parse_subscripts(subscripts: str, ndims: list[int]) -> tuple[list[list[str]], list[str]]:
    """``np.einsum``'s subscripts as label lists per operand and for the output. An
    ellipsis stands for the same broadcast labels everywhere (fresh ones, numbered from the
    right); without ``->`` the output is the ellipsis, then the labels used once, sorted."""
    if not isinstance(subscripts, str):
        raise IllFormedProgram(f"einsum: subscripts must be a str, found {subscripts!r}")
    text = subscripts.replace(" ", "")
    explicit = "->" in text
    lhs, _, rhs = text.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(ndims):
        raise IllFormedProgram(f"einsum: {len(terms)} operand subscripts for {len(ndims)} "
                               f"operands")
    for t in terms + ([rhs] if explicit else []):
        bad = set(t.replace("...", "")) - set(_LETTERS)
        if bad or t.count("...") > 1 or "." in t.replace("...", ""):
            raise IllFormedProgram(f"einsum: invalid subscript {t!r}")
    dots = 0
    parsed = []
    for t, nd in zip(terms, ndims):
        named = len(t.replace("...", ""))
        if "..." in t:
            extra = nd - named
            if extra < 0:
                raise IllFormedProgram(f"einsum: operand has {nd} dimensions, subscripts "
                                       f"{t!r} name more")
            dots = max(dots, extra)
            head, _, tail = t.partition("...")
            parsed.append(list(head) + [f"...{extra - e}" for e in range(extra)] + list(tail))
        else:
            if named != nd:
                raise IllFormedProgram(f"einsum: operand has {nd} dimensions but subscripts "
                                       f"{t!r} name {named}")
            parsed.append(list(t))
    ellipsis = [f"...{dots - e}" for e in range(dots)]
    if explicit:
        if "..." in rhs:
            head, _, tail = rhs.partition("...")
            out = list(head) + ellipsis + list(tail)
        else:
            out = list(rhs)
            if dots and any(lab.startswith("...") for t in parsed for lab in t):
                raise IllFormedProgram("einsum: output subscripts must include '...' when "
                                       "the operands do")
        if len(set(out)) != len(out):
            raise IllFormedProgram(f"einsum: output subscript {rhs!r} repeats a label")
        used = {lab for t in parsed for lab in t}
        if set(out) - used:
            raise IllFormedProgram(f"einsum: output label(s) {sorted(set(out) - used)} do "
                                   f"not appear in the operands")
    else:
        counts: dict[str, int] = {}
        for t in parsed:
            for lab in t:
                if not lab.startswith("..."):
                    counts[lab] = counts.get(lab, 0) + 1
        out = ellipsis + sorted(lab for lab, c in counts.items() if c == 1)
    return parsed, out


def _take_diagonals(node: Node, labels: list[str]) -> tuple[Node, list[str]]:
    """A label repeated within one operand reads its diagonal (moved to the last axis)."""
    labels = list(labels)
    while True:
        seen: dict[str, int] = {}
        pair = None
        for d, lab in enumerate(labels):
            if lab in seen:
                pair = (seen[lab], d)
                break
            seen[lab] = d
        if pair is None:
            return node, labels
        a1, a2 = pair
        lab = labels[a1]
        node = Diagonal(node, 0, a1, a2)
        labels = [x for d, x in enumerate(labels) if d not in (a1, a2)] + [lab]


def _align(node: Node, labels: list[str], order: list[str]) -> Node:
    """``node`` (axes ``labels``) with axes in ``order``: its own permuted, size-1 axes for
    the labels it lacks."""
    mine = [lab for lab in order if lab in labels]
    perm = tuple(labels.index(lab) for lab in mine)
    if perm != tuple(range(len(perm))):
        node = PermuteDims(node, perm)
    for d, lab in enumerate(order):
        if lab not in labels:
            node = ExpandDims(node, d)
    return node


def einsum(subscripts: str, *operands) -> Node:
    """``np.einsum(subscripts, *operands)`` (see the module docstring)."""
    if not operands:
        raise IllFormedProgram("einsum: expected at least one operand")
    nodes = [_operand(x) for x in operands]
    parsed, out = parse_subscripts(subscripts, [n.ndim for n in nodes])
    work = [_take_diagonals(n, labs) for n, labs in zip(nodes, parsed)]
    order: list[str] = list(out)
    for _, labs in work:
        order += [lab for lab in labs if lab not in order]
    acc, acc_labels = work[0]
    for step, (node, labs) in enumerate(work[1:], start=1):
        later = {lab for _, ls in work[step + 1:] for lab in ls} | set(out)
        union = _step_order(order, acc_labels, labs, later)
        acc = _multiply(_align(acc, acc_labels, union), _align(node, labs, union))
        acc_labels = union
        acc, acc_labels = _sum_away(acc, acc_labels, later)
    acc, acc_labels = _sum_away(acc, acc_labels, set(out))
    if acc_labels != out:
        acc = PermuteDims(acc, tuple(acc_labels.index(lab) for lab in out))
    return acc


def _step_order(order: list[str], a: list[str], b: list[str], later: set[str]) -> list[str]:
    """The label order of one two-operand step, as ``matmul`` lays it out: labels both keep
    (batch), those only ``a`` keeps, the summed ones, those only ``b`` keeps — the shape of
    ``a[..., :, :, None] * b[..., None, :, :]`` summed over one block, which the compiler
    contracts as a product (a summed last axis it could not stage)."""
    both = [lab for lab in order if lab in a or lab in b]
    gone = [lab for lab in both if lab not in later]
    kept = [lab for lab in both if lab in later]
    return ([lab for lab in kept if lab in a and lab in b] +
            [lab for lab in kept if lab in a and lab not in b] + gone +
            [lab for lab in kept if lab not in a])


def _sum_away(node: Node, labels: list[str], keep: set[str]) -> tuple[Node, list[str]]:
    gone = tuple(d for d, lab in enumerate(labels) if lab not in keep)
    if not gone:
        return node, labels
    return Reduce(node, gone, "sum", node.dtype), [lab for d, lab in enumerate(labels)
                                                   if d not in gone]

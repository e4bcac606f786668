"""Merge lattices: which sparse operands must be present for an expression to be nonzero
(TACO's iteration lattices, Kjolstad et al. 2017; DESIGN §3.2).

An elementwise expression ``E`` over sparse operands ``x_0 .. x_n`` (views, ``views.py``)
and located operands (dense arrays, literals) is nonzero only inside a *region* built from
the operands' stored coordinates. A lattice is a set of *points*, each a set of operands;
a point stands for the coordinates where all its operands are present, and the region is
the union of the points. Only the minimal points matter, and they are all we keep.

* an operand ``x``: ``{{x}}``;
* a located subtree (no sparse input below): ``{∅}`` — it may be nonzero anywhere;
* ``f(a_1 .. a_k)`` where ``f`` *annihilates* at position ``p`` (``f(.., 0 at p, ..) == 0``
  whatever the others are): the region lies inside ``a_p``'s, so the lattice is the
  pairwise union of the annihilating arguments' points (intersection: ``a * b`` gives
  ``{{a, b}}``);
* otherwise, when ``f`` is 0 wherever all its sparse arguments are 0: the union of the
  arguments' lattices (``a + b`` gives ``{{a}, {b}}``); ``(a + b) * c`` gives
  ``{{a, c}, {b, c}}``;
* otherwise, when the other arguments are literals (``a + 1``, ``a == 0``): the union
  too, but the subexpression is not 0 outside it (``build`` keeps that value: a parent
  may bring it back to 0, ``(a + 1) - 1``, or annihilate it);
* otherwise (``a + x`` with ``x`` dense): ``{∅}``, the *universe*. A root that is not 0
  outside its region is the universe too: the expression is dense-valued and the lowering
  iterates every coordinate.

Zero algebra comes from ``spec`` (``annihilates``, and the function evaluated at zeros with
the literal arguments it actually has). Both are proved on each function's C reading — the
text the kernels compute — by ``verify.zero_algebra``, run in CI by ``sparsefold prove``.
For floats, annihilation holds only when the other operands are finite (``0 * nan`` is
``nan``): :func:`build` records the inputs whose finiteness the lattice relies on, and an
*exact* lattice (``exact=True``) uses no annihilation that needs finiteness; the runtime
checks and falls back to it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from sparsefold.spec.compute import Input, Literal, Map
from sparsefold.spec.functions import zero_preserving
from sparsefold.spec.ir import Node
from sparsefold.spec.printer import topological

__all__ = ["Lattice", "build", "partitioned", "zero_where"]

Point = frozenset


@dataclass(frozen=True)
class Lattice:
    """Minimal points (frozensets of operand numbers); ``universe`` when the empty point is
    one of them (every coordinate may be nonzero)."""

    points: tuple[frozenset[int], ...]
    finite: tuple[Input, ...] = ()   # inputs whose finiteness the lattice relies on
    partitioned: bool = False        # see :func:`partitioned`
    # of a universe whose value outside a region of the operands is known (``A + 1``: the
    # points of ``A``, and 1): that region's points and the value there — a constant, or a
    # node over the located operands alone (``(A - m)**2`` with ``m`` dense: ``(0 - m)**2``)
    region: tuple[frozenset[int], ...] = ()
    outside: object = None

    @property
    def universe(self) -> bool:
        return frozenset() in self.points

    def describe(self, names: list[str]) -> str:
        if self.universe:
            return "every coordinate (dense-valued)"
        parts = [" & ".join(names[o] for o in sorted(p)) for p in self.points]
        return " | ".join(f"({p})" if "&" in p and len(parts) > 1 else p for p in parts)


def _minimal(points: set[frozenset]) -> tuple[frozenset, ...]:
    keep = [p for p in points if not any(q < p for q in points)]
    return tuple(sorted(set(keep), key=lambda p: (len(p), sorted(p))))


def zero_where(node: Map, zero_positions: set[int]) -> bool:
    """``f`` is 0 whenever its arguments at ``zero_positions`` are 0 and the others take the
    values they can take here: decided exactly when every other argument is a literal (the
    function evaluated at those values), else only through ``annihilates``."""
    fn = node.fn
    if any(p in fn.annihilates for p in zero_positions):
        return True
    if fn.name == "where" and 0 not in zero_positions and all(
            d in zero_positions or _plus_zero(node.args[d]) for d in (1, 2)):
        return True  # where(c, 0, y) where y is 0: 0 whatever c is (x[::2] = 0 in a trace)
    others = [d for d in range(len(node.args)) if d not in zero_positions]
    if not all(isinstance(node.args[d], Literal) for d in others):
        return False
    return _zero_at(node, zero_positions)


def _plus_zero(node: Node) -> bool:
    """A literal +0 (not -0.0: the implicit zero it would be stored as is +0)."""
    if not isinstance(node, Literal):
        return False
    v = complex(np.asarray(node.value).item())
    return v == 0 and np.copysign(1.0, v.real) > 0 and np.copysign(1.0, v.imag) > 0


def _zero_at(node: Map, zero_positions: set[int]) -> bool:
    """The function at zeros (of the argument dtypes) and its literal arguments is 0."""
    return zero_preserving(node.fn, [a.dtype if d in zero_positions else
                                     (a.value if a.weak else np.asarray(a.value, a.dtype))
                                     for d, a in enumerate(node.args)])


def _implicit(node: Node, args: list) -> object:
    """``node``'s value outside its region (``args``: its arguments' there; None for a
    located argument), by the function's NumPy meaning — what the interpreter computes
    there: a constant when every argument's is one, else a node over the located
    operands (the sparse arguments replaced by their values outside; a ``where`` whose
    condition is constant reads its branch)."""
    if not any(isinstance(v, Node) or (v is None and not isinstance(a, Literal))
               for a, v in zip(node.args, args)):
        vals = [a.typed_value() if isinstance(a, Literal) else v
                for a, v in zip(node.args, args)]
        with np.errstate(all="ignore"):
            return np.asarray(node.fn.impl(*vals)).astype(node.dtype)[()]
    parts: list[Node] = []
    for a, v in zip(node.args, args):
        if isinstance(v, Node):
            parts.append(v)
        elif v is None:
            parts.append(a)  # located: itself
        else:
            parts.append(Literal(np.asarray(v, a.dtype)[()]))
    if node.fn.name == "where" and isinstance(parts[0], Literal):
        return _outside_of(parts[1] if bool(parts[0].value) else parts[2], node)
    return Map(node.fn, tuple(parts))


def _outside_of(branch: Node, node: Node) -> object:
    """A ``where`` branch as ``node``'s outside value (its dtype; a literal as a constant)."""
    if isinstance(branch, Literal):
        return np.asarray(branch.typed_value()).astype(node.dtype)[()]
    return branch if branch.dtype == node.dtype else None


def _meets_nonfinite(node: Map, values: list, annihilating: list[int]) -> bool:
    """An argument other than the annihilating ones is NaN or infinite outside its region
    (a fill) or as a literal: where the annihilating argument is 0 the result need not
    be (the runtime's finiteness check reads stored values only)."""
    for d, a in enumerate(node.args):
        if d in annihilating:
            continue
        v = a.value if isinstance(a, Literal) else values[d]
        if isinstance(v, Node):  # a located expression: its inputs are checked at run time
            continue
        if v is not None and np.asarray(v).dtype.kind in "fc" and \
                not bool(np.all(np.isfinite(v))):
            return True
    return False


def _is_zero(v) -> bool:
    return v is not None and not isinstance(v, Node) and bool(np.asarray(v) == 0)


def build(root: Node, operands: dict[Node, int], *, exact: bool = False) -> Lattice:
    """The lattice of ``root``; ``operands`` numbers the sparse operands (their nodes)."""
    lattice = _build(root, operands, exact)
    if partitioned(root, operands, lattice, exact):
        lattice = replace(lattice, partitioned=True)
    return lattice


def _build(root: Node, operands: dict[Node, int], exact: bool) -> Lattice:
    """:func:`build` without the partition analysis.

    Beside its points, every subexpression has a value *outside its region* (where its
    sparse operands are all implicit): 0 for an operand, ``f`` of its arguments' for a
    map (``x + 1`` is 1 there; ``where(present, stored, c)``, a filled pydata input, is
    ``c``: ``spec/fills.py``). An argument annihilates only where that value is 0, and a
    map of sparse arguments is sparse whenever those values are literal: its region is
    the union of theirs. The root must be 0 outside its region, else it is dense-valued."""
    finite: list[Input] = []
    outside: dict[int, object] = {}

    def visit(node: Node) -> set[frozenset]:
        if node in operands:
            outside[id(node)] = np.zeros((), node.dtype)[()]
            return {Point({operands[node]})}
        if not isinstance(node, Map):
            return {Point()}  # located: may be nonzero anywhere
        subs = [visit(a) for a in node.args]
        sparse = {d for d, s in enumerate(subs) if s != {Point()}}
        fn = node.fn
        floats = node.dtype.kind in "fc" or any(a.dtype.kind in "fc" for a in node.args)
        usable = () if (exact and fn.annihilation_needs_finite and floats) else fn.annihilates
        values = [outside.get(id(a)) if d in sparse else None for d, a in enumerate(node.args)]
        annihilating = [d for d in sparse if d in usable and _is_zero(values[d])]
        if fn.annihilation_needs_finite and floats and _meets_nonfinite(node, values,
                                                                        annihilating):
            # 0 * nan is nan: a NaN fill (or literal) beside the zero annihilates nothing
            value = _implicit(node, values) if sparse else None
            if value is None:
                return {Point()}
            outside[id(node)] = value
            union = set()
            for d in sparse:
                union |= subs[d]
            return union
        if annihilating:
            points = {Point()}
            for d in annihilating:
                points = {p | q for p in points for q in subs[d]}
            if fn.annihilation_needs_finite and floats:
                for d, a in enumerate(node.args):
                    if d not in annihilating or len(annihilating) > 1:
                        finite.extend(n for n in topological(a)
                                      if isinstance(n, Input) and n.dtype.kind in "fc")
            outside[id(node)] = np.zeros((), node.dtype)[()]
            return points
        union = set()
        for d in sparse:
            union |= subs[d]
        if sparse and not all(_is_zero(values[d]) for d in sparse):
            # an argument is not 0 outside its region (a fill): the region is the union
            # of the arguments' when the others are literals, valued f(those values)
            value = _implicit(node, values)
            if value is None:
                return {Point()}
            outside[id(node)] = value
            return union
        if sparse:
            if exact and floats and fn.annihilation_needs_finite:
                # no annihilation: only an exact evaluation at the literals it has
                others = [d for d in range(len(node.args)) if d not in sparse]
                zero = all(isinstance(node.args[d], Literal) for d in others) and \
                    _zero_at(node, sparse)
            else:
                zero = zero_where(node, sparse)
            if zero:
                outside[id(node)] = np.zeros((), node.dtype)[()]
                return union
            value = _implicit(node, values)  # x + 1: 1 outside x's region
            if value is not None:
                outside[id(node)] = value
                return union
        return {Point()}

    points = visit(root)
    finite = tuple(dict.fromkeys(finite))
    if root not in operands and points != {Point()} and not _is_zero(outside.get(id(root))):
        # not 0 where nothing is stored: dense-valued; its region and the constant there
        # are kept (a reduction visits the region and combines the constant for the rest)
        return Lattice((frozenset(),), finite, region=_minimal(points),
                       outside=outside.get(id(root)))
    return Lattice(_minimal(points), finite)


def partitioned(root: Node, operands: dict[Node, int], lattice: Lattice, exact: bool) -> bool:
    """Every operand matters only where its whole point is present, so a co-iteration may
    meet each point by a tight merge of its own and step over an operand's entries where
    the rest of its point is absent (``a * b + c``: {a, b}, {c}).

    Holds when the points are disjoint, cover every operand, and each point ``P`` of more
    than one operand has a *term*: a subexpression ``T`` over exactly ``P``'s operands whose
    own lattice is ``{P}`` (``T`` is 0 unless all of ``P`` is present) and through which
    every use of ``P``'s operands passes (none is reached from the root without crossing
    ``T``). The minimal points alone do not decide it: ``maximum(a, b) * c - a`` has the
    points {a} and {b, c}, yet ``c`` matters wherever ``a`` is present."""
    points = lattice.points
    if lattice.universe or all(len(p) == 1 for p in points):
        return False
    numbers = sorted(n for p in points for n in p)
    if numbers != sorted(operands.values()) or len(set(numbers)) != len(numbers):
        return False
    nodes = topological(root)
    under: dict[int, frozenset] = {}
    for n in nodes:
        if n in operands:
            under[id(n)] = Point({operands[n]})
        else:
            under[id(n)] = Point().union(*(under[id(o)] for o in n.operands()))
    return all(len(p) == 1 or any(under[id(t)] == p and _is_term(t, p, root, operands, exact)
                                  for t in nodes)
               for p in points)


def _is_term(term: Node, point: frozenset, root: Node, operands: dict[Node, int],
             exact: bool) -> bool:
    own = {n: k for n, k in operands.items() if k in point}
    if _build(term, own, exact).points != (point,):
        return False
    stack, seen = [root], set()
    while stack:  # every path from the root to the point's operands crosses the term
        n = stack.pop()
        if n is term or id(n) in seen:
            continue
        seen.add(id(n))
        if n in operands:
            if operands[n] in point:
                return False
            continue
        stack.extend(n.operands())
    return True

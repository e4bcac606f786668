"""The obligations of one shape-operator entry, stated in the index-expression language.

For an operator instantiated on operands with symbolic shapes (an *instance*: a
:class:`~sparsefold.spec.ir.ShapeOp` node whose sizes are symbols), with output coordinates
``k`` in ``0 <= k < K`` and operand coordinates ``i`` in ``0 <= i < S_p``, and assuming the
entry's ``requires``:

=========================  =================================================================
``sizes``                   every output size is ≥ 0
``divisions``               every ``//`` and ``%`` reachable in a map, guard or size has a
                            divisor ≥ 1 and a dividend ≥ 0 (so Python, C and Z3 agree)
``backward_bounds[p]``      ``guard_p(k)  ==>  0 <= backward_p(k) < S_p``
``forward_bounds[p]``       ``forward_guard_p(i)  ==>  0 <= forward_p(i) < K``
``backward_forward[p]``     ``forward_guard_p(i)  ==>  guard_p(f(i)) and backward_p(f(i)) == i``
                            (a free output coordinate — broadcast — takes any in-range value)
``forward_backward[p]``     ``guard_p(k)  ==>  forward_guard_p(b(k)) and forward_p(b(k)) == k``
                            on the coordinates ``forward_p`` determines
``disjoint``                no output coordinate is claimed by two pieces
``cover``                   without a fill value, every output coordinate is claimed
``magnitude``               with every size ≤ M, every intermediate value of every map has
                            magnitude ≤ M + 8: int32 (int64) indices are safe while every
                            size is ≤ 2^31 - 9 (2^63 - 9) — see :data:`WIDTHS`
=========================  =================================================================

Properties (answers, not requirements), the order property of ``spec.order``: ``order[p]`` —
``forward_p`` is strictly increasing in row-major order on its domain; ``order[p<q]`` —
everything piece ``p`` produces precedes everything piece ``q`` produces. Order
preservation of the whole operator is their conjunction
(``verify.operators.order_preserving``).

Each obligation is ``(name, assumptions, goal)`` over size expressions, so that a model can be
checked without Z3 by the exact Python reading (:func:`holds`).
"""

from __future__ import annotations

from dataclasses import dataclass

from sparsefold.spec import sizes as sz
from sparsefold.spec.ir import ShapeOp
from sparsefold.spec.order import Entry, arrives_in_order
from sparsefold.verify.z3_reading import division_sites, subterms

__all__ = ["Obligation", "obligations", "properties", "holds", "py_eval", "failing_part",
           "WIDTHS", "SLACK"]

# Every intermediate value of every map has magnitude <= (largest size) + SLACK (the
# "magnitude" obligation), so indices of a width are safe while every size is at most
# WIDTHS[width] (a slice's count adds step - 1 before dividing, hence the slack).
SLACK = 8
WIDTHS = {"int32": 2 ** 31 - 1 - SLACK, "int64": 2 ** 63 - 1 - SLACK}


@dataclass(frozen=True)
class Obligation:
    """``assumptions ==> goal`` over size expressions (symbols are non-negative)."""

    name: str
    assumptions: tuple[sz.Expr, ...]
    goal: sz.Expr
    kind: str = "obligation"   # or "property"
    note: str = ""
    fallback: Obligation | None = None  # a weaker form, tried when this one is refuted


def _implies(a, b) -> sz.Expr:
    return sz.or_(sz.not_(a), b)


def _in_box(coords, shape) -> sz.Expr:
    return sz.and_(*(sz.and_(sz.le(0, c), sz.lt(c, n)) for c, n in zip(coords, shape)))


def _renamed(coords, prefix: str) -> dict[str, sz.Expr]:
    return {c.name: sz.Sym(prefix + c.name[2:]) for c in coords}


def _forward_image(piece, out_shape, tag: str):
    """The output coordinate a piece's forward map gives; free coordinates (``None``)
    become fresh symbols ``_f<tag><d>`` with their range as an assumption."""
    coords, assume = [], []
    for d, f in enumerate(piece.forward):
        if f is None:
            v = sz.Sym(f"_f{tag}{d}")
            coords.append(v)
            assume.append(sz.lt(v, out_shape[d]))
        else:
            coords.append(f)
    return tuple(coords), assume


def obligations(node: ShapeOp) -> list[Obligation]:
    """Every obligation of the instance ``node`` (see the module docstring)."""
    im = node.index_map()
    K, req = im.out_shape, im.requires
    k = sz.out_coords(len(K))
    out = [Obligation("sizes", (req,), sz.and_(*(sz.ge(n, 0) for n in K)))]
    sites = []
    for e in K + (req,):
        sites += list(division_sites(e))
    dom_out = _in_box(k, K)
    for p in im.pieces:
        S = im.in_shapes[p.operand]
        i = sz.in_coords(len(S))
        dom_in = _in_box(i, S)
        for e in (p.guard,) + p.backward:
            sites += [(sz.and_(dom_out, p.guard if e is not p.guard else sz.TRUE, path), a, b)
                      for path, a, b in division_sites(e)]
        for e in (p.forward_guard,) + tuple(f for f in p.forward if f is not None):
            g = p.forward_guard if e is not p.forward_guard else sz.TRUE
            sites += [(sz.and_(dom_in, g, path), a, b) for path, a, b in division_sites(e)]
        tag = f"[{p.operand}]" if len(im.pieces) > 1 or p.operand else "[0]"
        out.append(Obligation(f"backward_bounds{tag}", (req, dom_out, p.guard),
                              _in_box(p.backward, S)))
        image, free = _forward_image(p, K, "")
        known = [(c, n) for c, n, f in zip(image, K, p.forward) if f is not None]
        out.append(Obligation(f"forward_bounds{tag}", (req, dom_in, p.forward_guard),
                              _in_box([c for c, _ in known], [n for _, n in known])))
        at_image = dict(zip((c.name for c in k), image))
        back = tuple(sz.substitute(b, at_image) for b in p.backward)
        out.append(Obligation(
            f"backward_forward{tag}", (req, dom_in, p.forward_guard, *free),
            sz.and_(sz.substitute(p.guard, at_image), *(sz.eq(b, c) for b, c in zip(back, i)))))
        at_back = dict(zip((c.name for c in i), p.backward))
        fwd = [(sz.substitute(f, at_back), kd) for f, kd in zip(p.forward, k) if f is not None]
        out.append(Obligation(
            f"forward_backward{tag}", (req, dom_out, p.guard),
            sz.and_(sz.substitute(p.forward_guard, at_back), *(sz.eq(f, c) for f, c in fwd))))
    guards = [p.guard for p in im.pieces]
    if len(guards) > 1:
        pairs = [sz.not_(sz.and_(guards[a], guards[b]))
                 for a in range(len(guards)) for b in range(a + 1, len(guards))]
        out.append(Obligation("disjoint", (req, dom_out), sz.and_(*pairs)))
    if im.fill is None:
        out.append(Obligation("cover", (req, dom_out), sz.or_(*guards)))
    out.append(Obligation("divisions", (req,), sz.and_(
        *(_implies(path, sz.and_(sz.ge(b, 1), sz.ge(a, 0))) for path, a, b in sites))))
    out += _width_obligations(im, req)
    return out


def _width_obligations(im, req) -> list[Obligation]:
    K = im.out_shape
    k = sz.out_coords(len(K))
    terms = []
    for p in im.pieces:
        S = im.in_shapes[p.operand]
        i = sz.in_coords(len(S))
        dom_out, dom_in = _in_box(k, K), _in_box(i, S)
        for e in (p.guard,) + p.backward:
            g = p.guard if e is not p.guard else sz.TRUE
            terms += [(sz.and_(dom_out, g, path), t) for path, t in subterms(e)]
        for e in (p.forward_guard,) + tuple(f for f in p.forward if f is not None):
            g = p.forward_guard if e is not p.forward_guard else sz.TRUE
            terms += [(sz.and_(dom_in, g, path), t) for path, t in subterms(e)]
    sizes = sorted({s for e in K + tuple(n for S in im.in_shapes for n in S) + (req,)
                    for s in sz.free_symbols(e) if not s.startswith("_")})
    # one width-generic obligation: with every size <= M, every intermediate value has
    # magnitude <= M + SLACK (int32/int64 safety follow for M up to WIDTHS); an operator
    # that needs more room (a user's roll computes k + n) falls back to 2M, then 4M
    m = sz.Sym("_M")
    caps = [sz.le(sz.Sym(s), m) for s in sizes]
    caps += [sz.le(n, m) for n in K + tuple(n for S in im.in_shapes for n in S)]
    out = None
    for factor in (4, 2, 1):
        limit = sz.add(sz.mul(factor, m), SLACK)
        goal = sz.and_(*(_implies(path, sz.and_(sz.le(sz.sub(0, limit), t), sz.le(t, limit)))
                         for path, t in terms))
        bound = f"{factor}*M + {SLACK}" if factor > 1 else f"M + {SLACK}"
        note = "" if factor == 1 else (
            f"only |intermediate| <= {bound}: int32 indices need sizes <= "
            f"{(2 ** 31 - 1 - SLACK) // factor}")
        out = Obligation("magnitude", (req, *caps), goal, note=note, fallback=out)
    return [out]


def properties(node: ShapeOp) -> list[Obligation]:
    """Order preservation of each piece, and between consecutive pieces: the order property
    of ``spec.order`` (which the compiler proves of its streams) for the forward maps, with
    operands iterated in row-major order."""
    im = node.index_map()
    K, req = im.out_shape, im.requires

    def entry(p, tag: str, rename: bool) -> Entry:
        S = im.in_shapes[p.operand]
        i = sz.in_coords(len(S))
        j_map = _renamed(i, "_j") if rename else {}
        coords = tuple(j_map.get(c.name, c) for c in i)
        image, free = _forward_image(p, K, tag)
        image = tuple(sz.substitute(c, j_map) for c in image)
        guard = sz.substitute(p.forward_guard, j_map)
        return Entry(coords, image, (_in_box(coords, S), guard, *free))

    out = []
    for p in im.pieces:
        assume, goal = arrives_in_order(entry(p, "a", False), entry(p, "b", True),
                                        same_source=True)
        tag = f"[{p.operand}]" if len(im.pieces) > 1 or p.operand else "[0]"
        out.append(Obligation(f"order{tag}", (req, *assume), goal, "property"))
    for p, q in zip(im.pieces, im.pieces[1:]):
        assume, goal = arrives_in_order(entry(p, "a", False), entry(q, "b", True),
                                        same_source=False)
        out.append(Obligation(f"order[{p.operand}<{q.operand}]", (req, *assume), goal,
                              "property"))
    return out


# --- the exact Python reading, short-circuiting like C ----------------------------------------

def py_eval(e: sz.ExprLike, env: dict[str, int]) -> int:
    """Evaluate on Python ints (arbitrary precision, floor division); ``and``/``or``/
    ``select`` evaluate only what they use. Raises ``ZeroDivisionError`` as Python does."""
    e = sz.as_expr(e)
    if isinstance(e, sz.Const):
        return e.value
    if isinstance(e, sz.Sym):
        return env[e.name]
    a = e.args
    if e.op == "and":
        return int(bool(py_eval(a[0], env)) and bool(py_eval(a[1], env)))
    if e.op == "or":
        return int(bool(py_eval(a[0], env)) or bool(py_eval(a[1], env)))
    if e.op == "select":
        return py_eval(a[1], env) if py_eval(a[0], env) else py_eval(a[2], env)
    return int(sz.PYTHON[e.op](*(py_eval(x, env) for x in a)))


def holds(ob: Obligation, env: dict[str, int]) -> bool | None:
    """Whether the obligation's implication holds at ``env`` (``None``: the assumptions do
    not hold there, so the point says nothing). A division by zero counts as a failure."""
    try:
        if not all(py_eval(a, env) for a in ob.assumptions):
            return None
    except ZeroDivisionError:
        return None
    try:
        return bool(py_eval(ob.goal, env))
    except ZeroDivisionError:
        return False


def failing_part(goal: sz.Expr, env: dict[str, int]) -> str:
    """The first conjunct of ``goal`` that is false at ``env``, with its two sides' values:
    ``J - 1 - k1 < J is false (1 vs 1)``."""
    parts = [goal]
    while parts:
        e = parts.pop(0)
        if isinstance(e, sz.Op) and e.op == "and":
            parts = list(e.args) + parts
            continue
        try:
            if not py_eval(e, env):
                shown = str(e).replace("_k", "k").replace("_i", "i").replace("_j", "j")
                if isinstance(e, sz.Op) and len(e.args) == 2 and e.op not in ("and", "or"):
                    a, b = (py_eval(x, env) for x in e.args)
                    return f"{shown} is false ({a} vs {b})"
                return f"{shown} is false"
        except ZeroDivisionError:
            return f"{e} divides by zero"
    return str(goal)

"""Proving two programs equal for all sizes: ``prove_equal(lhs, rhs, when=...)``.

The question is split into obligations (Alive2's discipline), each decided on its own and
reported with its own status:

==================  ===========================================================================
``dtype``            both sides have the same dtype (syntactic)
``rank``             both sides have the same number of axes (syntactic)
``shape``            every axis has the same size, for all sizes satisfying the assumptions
``rhs_defined``      the right-hand side's preconditions hold and its size parameters (slice
                     bounds, pad widths, ...) are non-negative
``lhs_bounds``       every input read of the left-hand side is in bounds and every division
                     defined, at every output coordinate
``rhs_bounds``       the same for the right-hand side
``value``            both sides have the same value at every output coordinate
==================  ===========================================================================

*Assumptions*: sizes are non-negative; ``when`` holds; the left-hand side is well-formed
(its preconditions hold and its size parameters are non-negative). If no sizes satisfy the
assumptions the result is ``vacuous``.

Reductions (``verify.encode``: range terms) are related by facts the prover first derives
with their own queries, each a consequence of the definition of a sum over exact integers:
an empty range gives the identity; a one-element range its element; a range splits at any
point inside it (points are read off the guards in its body, e.g. a concat's offsets); and
two ranges of provably equal length whose bodies are provably equal at every index have
equal values (extensionality). Nothing else is assumed about reductions.
"""

from __future__ import annotations

import time

import z3

from sparsefold.spec import sizes as sz
from sparsefold.spec.ir import Node, show_shape
from sparsefold.spec.sizes_z3 import serialized
from sparsefold.verify.encode import Encoder, RangeTerm, Trace, float_arithmetic, order_only
from sparsefold.verify.obligations import Obligation, failing_part, holds
from sparsefold.verify.programs import as_node, preconditions, size_parameters
from sparsefold.verify.replay import Counterexample, find_counterexample
from sparsefold.verify.results import (
    PROVED,
    PROVED_REAL,
    REFUTED,
    UNKNOWN,
    VACUOUS,
    Outcome,
    ProofResult,
)
from sparsefold.verify.solver import RLIMIT, decide
from sparsefold.verify.z3_reading import Reading

__all__ = ["prove_equal", "assumptions_of", "smt2"]

FACT_RLIMIT = 1_000_000
MAX_RANGE_TERMS = 24


def _nonempty_reductions(node: Node) -> list[sz.Expr]:
    """A max/min (no identity) has a value only over a non-empty extent."""
    from sparsefold.spec.compute import Reduce
    from sparsefold.spec.printer import topological
    return [sz.ge(n.extent(), 1) for n in topological(node)
            if isinstance(n, Reduce) and n.monoid.identity is None]


def assumptions_of(lhs: Node, when: sz.Expr | None) -> list[sz.Expr]:
    """What a rule may assume: ``when`` and the left-hand side's well-formedness."""
    out = [when] if when is not None else []
    out += preconditions(lhs)
    out += [sz.ge(e, 0) for _, e in size_parameters(lhs)]
    out += _nonempty_reductions(lhs)
    return [a for a in out if a != sz.TRUE]


def _rhs_defined(rhs: Node) -> sz.Expr:
    return sz.and_(*preconditions(rhs), *(sz.ge(e, 0) for _, e in size_parameters(rhs)),
                   *_nonempty_reductions(rhs))


def _box(coords, shape) -> list:
    return [z3.And(0 <= c, c < n) for c, n in zip(coords, shape)]


class _Problem:
    """Both sides encoded under one reading of sizes (``reading``) and of values
    (``arith``: ``verify.encode.READINGS``), with the assumptions at a coordinate ``k``."""

    def __init__(self, reading: Reading, lhs: Node, rhs: Node, assume: list[sz.Expr],
                 arith: str = "exact"):
        self.rd = reading
        self.k = tuple(reading.var(sz.out_coord(d).name) for d in range(lhs.ndim))
        self.enc = Encoder(reading, arith, order=order_only(lhs, rhs))
        self.left_trace, self.right_trace = Trace(), Trace()
        self.left = self.enc.encode(lhs, self.k, self.left_trace)
        self.n_left_ranges = len(self.enc.ranges)
        self.right = self.enc.encode(rhs, self.k, self.right_trace)
        lshape = [self.enc.size(n) for n in lhs.shape]
        rshape = [self.enc.size(n) for n in rhs.shape]
        self.base = [reading.pred(a) for a in assume]
        self.in_left = _box(self.k, lshape)
        self.in_right = _box(self.k, rshape)

    def facts(self) -> list[z3.BoolRef]:
        """Proved facts about the range terms (see the module docstring)."""
        return _range_facts(self, self.base + self.in_left + self.in_right)


@serialized
def _check(rd: Reading, assumptions, goal, rlimit=FACT_RLIMIT) -> bool:
    s = z3.Solver(ctx=rd.ctx)
    s.set("rlimit", rlimit)
    s.add(*rd.nonneg, *rd.axioms, *assumptions, z3.Not(goal))
    return s.check() == z3.unsat


def _split_points(t: RangeTerm) -> list:
    """Boundaries ``m`` that guards in the body compare the index against (``j < m``,
    ``m <= j``, ...), free of the index itself."""
    out, seen = [], set()

    def visit(e):
        if e.get_id() in seen:
            return
        seen.add(e.get_id())
        if z3.is_app(e) and e.num_args() == 2 and (z3.is_le(e) or z3.is_lt(e) or z3.is_ge(e)
                                                    or z3.is_gt(e)):
            a, b = e.children()
            for x, y, flip in ((a, b, False), (b, a, True)):
                if z3.eq(x, t.var) and not _mentions(y, t.var):
                    # j < m, m <= j  split at m;  j <= m, m < j  split at m + 1
                    strict_upper = z3.is_lt(e) if not flip else z3.is_gt(e)
                    lower_closed = z3.is_ge(e) if not flip else z3.is_le(e)
                    out.append(y if strict_upper or lower_closed else y + 1)
        for c in e.children():
            visit(c)
    visit(t.body)
    return out


def _mentions(e, v) -> bool:
    if z3.eq(e, v):
        return True
    return any(_mentions(c, v) for c in e.children())


@serialized
def _segment(t: RangeTerm, name: str, start, length, valid) -> RangeTerm:
    body = t.body if start is None else z3.simplify(
        z3.substitute(t.body, (t.var, t.var + start)))
    return RangeTerm(z3.Real(name, t.var.ctx), t.var, length, body, t.monoid, t.dtype, t.combine,
                     t.identity, t.path, valid)


def _valid(t: RangeTerm):
    return t.valid if t.valid is not None else z3.BoolVal(True, t.var.ctx)


@serialized
def _range_facts(p: _Problem, assume) -> list[z3.BoolRef]:
    rd, terms, facts = p.rd, list(p.enc.ranges), []
    if not terms:
        return facts
    # splitting: each term at each boundary strictly inside it (three levels deep)
    frontier = list(terms)
    for _depth in range(3):
        new = []
        for t in frontier:
            points = []
            for m in _split_points(t):
                if any(z3.eq(z3.simplify(m), z3.simplify(x)) for x in points):
                    continue
                points.append(m)
                if len(terms) + len(new) + 2 > MAX_RANGE_TERMS:
                    break
                here = assume + ([t.path] if t.path is not None else [])
                if not _check(rd, here, z3.And(0 <= m, m <= t.length)) or \
                        _check(rd, here, m == 0) or _check(rd, here, m == t.length):
                    continue
                n = len(terms) + len(new)
                # a segment means a sum over a range only when the split point is inside;
                # without an identity (max, min) both segments must be non-empty
                inside = z3.And(_valid(t), 0 <= m, m <= t.length) if t.identity is not None \
                    else z3.And(_valid(t), 0 < m, m < t.length)
                head = _segment(t, f"_s{n}h", None, m, inside)
                tail = _segment(t, f"_s{n}t", m, t.length - m, inside)
                facts.append(z3.Implies(inside, t.value == t.combine(head.value, tail.value)))
                new += [head, tail]
        terms += new
        frontier = new
    for t in terms:
        if t.identity is not None:  # max/min of nothing has no value
            facts.append(z3.Implies(z3.And(_valid(t), t.length == 0), t.value == t.identity))
        facts.append(z3.Implies(z3.And(_valid(t), t.length == 1), t.value == z3.substitute(
            t.body, (t.var, z3.IntVal(0, rd.ctx)))))
    # extensionality between every pair with the same monoid and dtype, where both are read
    j = z3.Int("_jx", rd.ctx)
    for a in range(len(terms)):
        for b in range(a + 1, len(terms)):
            s, t = terms[a], terms[b]
            if s.monoid != t.monoid or s.dtype != t.dtype:
                continue
            both = z3.And(*(x for x in (s.path, t.path) if x is not None), _valid(s),
                          _valid(t))
            if not _check(rd, assume + [both], s.length == t.length):
                continue
            bodies = z3.substitute(s.body, (s.var, j)) == z3.substitute(t.body, (t.var, j))
            if _check(rd, assume + [both, 0 <= j, j < s.length], bodies):
                facts.append(z3.Implies(both, s.value == t.value))
    return facts


def _syntactic(name: str, ok: bool, note: str = "") -> Outcome:
    return Outcome(name, PROVED if ok else REFUTED, "syntactic", note=note)


@serialized
def prove_equal(lhs, rhs, *, when: sz.Expr | str | None = None, name: str | None = None,
                rlimit: int = RLIMIT, dtype: str = "float64",
                lhs_requires: tuple[sz.Expr, ...] = (), rhs_requires: tuple[sz.Expr, ...] = (),
                **arrays) -> ProofResult:
    """Prove ``lhs == rhs`` for all sizes satisfying ``when``.

    The sides are LazyArrays or IR nodes with symbolic sizes, or *functions* of pattern
    arrays whose shapes are the keyword arguments (``A=("N",)``; ``dtype`` for all of
    them): each side is then traced under ``sizes.assuming``, so a side that is ill-formed
    for some sizes (shapes that agree only when ``N`` is even) is refuted at ``rhs_defined``
    with those sizes. ``lhs_requires``/``rhs_requires``: size conditions each side needs
    (the left-hand side's are assumed, the right-hand side's proved).

    Returns a :class:`ProofResult`; ``.status`` is ``"proved"`` (exactly), ``"proved-real"``
    (in real arithmetic only: floating-point results may differ by rounding),
    ``"bounded"``, ``"refuted"`` (with a replayed ``.counterexample``), ``"unknown"`` or
    ``"vacuous"``."""
    if callable(lhs) and callable(rhs) and not hasattr(lhs, "node") \
            and not isinstance(lhs, Node):
        from sparsefold.verify.rules import rule
        inst = rule(name or "prove_equal", lhs, rhs, when if isinstance(when, str) or
                    when is None else None, dtype=dtype, **arrays).instances()[0]
        return prove_equal(inst.lhs, inst.rhs, when=inst.when if not isinstance(when, sz.Expr)
                           else when, name=name, rlimit=rlimit,
                           lhs_requires=tuple(lhs_requires) + inst.lhs_requires,
                           rhs_requires=tuple(rhs_requires) + inst.rhs_requires)
    t0 = time.perf_counter()
    lhs, rhs = as_node(lhs), as_node(rhs)
    if isinstance(when, str):
        from sparsefold.verify.conditions import parse_condition
        when = parse_condition(when)
    result = ProofResult(name or "prove_equal")
    assume = assumptions_of(lhs, when) + [r for r in lhs_requires if r != sz.TRUE]
    vac = _vacuity(assume)
    if vac is not None:
        result.obligations.append(vac)
        result.seconds = time.perf_counter() - t0
        return result
    any_sizes = _some_sizes(assume)

    def syntactic_cex(what: str):
        return find_counterexample(lhs, rhs, any_sizes, None, what)

    dtype_ok = lhs.dtype == rhs.dtype
    result.obligations.append(_syntactic("dtype", dtype_ok, f"{lhs.dtype} vs {rhs.dtype}"
                                         if not dtype_ok else ""))
    rank_ok = lhs.ndim == rhs.ndim
    result.obligations.append(_syntactic("rank", rank_ok, "" if rank_ok else
                                         f"{show_shape(lhs.shape)} vs {show_shape(rhs.shape)}"))
    for o in result.obligations:
        if o.status == REFUTED:
            o.counterexample = syntactic_cex(o.name)
    if not rank_ok:
        result.seconds = time.perf_counter() - t0
        return result
    shape_goal = sz.and_(*(sz.eq(a, b) for a, b in zip(lhs.shape, rhs.shape)))
    result.obligations.append(_sized(Obligation("shape", tuple(assume), shape_goal), lhs, rhs,
                                     rlimit))
    defined = sz.and_(_rhs_defined(rhs), *rhs_requires)
    result.obligations.append(_sized(Obligation("rhs_defined", tuple(assume), defined),
                                     lhs, rhs, rlimit))
    cache: dict[tuple[str, str], _Problem] = {}
    known = tuple(lhs_requires) + tuple(rhs_requires)

    def problem(mode: str, arith: str = "exact") -> _Problem:
        # both sides are encoded once per mode and value reading (one Z3 context);
        # obligations share the terms
        p = cache.get((mode, arith))
        if p is None:
            with sz.assuming(known):  # nodes built while encoding meet the same sizes
                p = cache[mode, arith] = _Problem(Reading(mode), lhs, rhs, assume, arith)
        return p

    def k_values(values):
        return tuple(values.get(sz.out_coord(d).name, 0) for d in range(lhs.ndim))

    def confirm(what):
        def run(values):
            return find_counterexample(lhs, rhs, values, k_values(values), what)
        return run

    def lhs_bounds(mode):
        p = problem(mode)
        goal = z3.And(p.left_trace.bounds_goal(p.rd.ctx), p.left_trace.divisions_goal(p.rd.ctx))
        return p.rd, p.base + p.in_left, goal

    def rhs_bounds(mode):
        p = problem(mode)
        goal = z3.And(p.right_trace.bounds_goal(p.rd.ctx), p.right_trace.divisions_goal(p.rd.ctx))
        return p.rd, p.base + p.in_right, goal

    def value_in(arith: str):
        def value(mode):
            p = problem(mode, arith)
            return p.rd, p.base + p.in_left + p.in_right + p.facts(), p.left == p.right
        return value

    def notes_of(d, arith: str) -> str:
        notes = [d.note] if d.note else []
        p = cache.get(("staged", arith)) or cache.get(("direct", arith))
        if p is not None:
            notes += p.left_trace.notes + p.right_trace.notes
        return "; ".join(dict.fromkeys(notes))

    for what, build in (("lhs_bounds", lhs_bounds), ("rhs_bounds", rhs_bounds)):
        d = decide(build, confirm=confirm(what), rlimit=rlimit)
        result.obligations.append(Outcome(what, d.status, d.method, d.seconds, d.bound,
                                          d.extra, d.note))
    result.obligations.append(_value(lhs, rhs, value_in, confirm("value"), notes_of, rlimit))
    result.seconds = time.perf_counter() - t0
    return result


def _value(lhs: Node, rhs: Node, value_in, confirm, notes_of, rlimit: int) -> Outcome:
    """The value obligation: exact first; for programs of max/min alone over floats, the
    NaN cases too; when the exact reading cannot decide a float program, the real reading
    (``verify.encode``), reported as ``proved-real``."""
    d = decide(value_in("exact"), confirm=confirm, rlimit=rlimit)
    floats = float_arithmetic(lhs, rhs)
    if d.status == PROVED and floats and order_only(lhs, rhs):
        dn = decide(value_in("nan"), confirm=confirm, rlimit=rlimit)
        seconds = d.seconds + dn.seconds
        if dn.status != PROVED:
            return Outcome("value", dn.status, dn.method, seconds, dn.bound, dn.extra,
                           "NaN cases: " + (notes_of(dn, "nan") or dn.status))
        return Outcome("value", PROVED, d.method, seconds,
                       note="max/min over floats: exact, NaN cases included")
    if d.status == UNKNOWN and floats:
        dr = decide(value_in("real"), confirm=confirm, rlimit=rlimit)
        seconds = d.seconds + dr.seconds
        if dr.status == PROVED:
            return Outcome("value", PROVED_REAL, f"{dr.method}, real", seconds,
                           note="in real arithmetic: floating point may differ by rounding")
        if dr.status == REFUTED:
            return Outcome("value", REFUTED, f"{dr.method}, real", seconds, dr.bound,
                           dr.extra, notes_of(dr, "real"))
    return Outcome("value", d.status, d.method, d.seconds, d.bound, d.extra,
                   notes_of(d, "exact"))


@serialized
def _vacuity(assume) -> Outcome | None:
    rd = Reading("direct")
    s = z3.Solver(ctx=rd.ctx)
    s.set("rlimit", RLIMIT)
    s.add(*[rd.pred(a) for a in assume])
    s.add(*rd.nonneg)
    r = s.check()
    if r == z3.unsat:
        return Outcome("assumptions", VACUOUS, "direct", note="no sizes satisfy the assumptions")
    if r != z3.sat:
        return Outcome("assumptions", UNKNOWN, "direct", note="resource limit")
    return None


@serialized
def _some_sizes(assume) -> dict[str, int]:
    """Small sizes satisfying the assumptions (for syntactic counterexamples)."""
    rd = Reading("direct")
    s = z3.Solver(ctx=rd.ctx)
    s.set("rlimit", RLIMIT)
    s.add(*[rd.pred(a) for a in assume], *rd.nonneg)
    for bound in (1, 2, 3, 4, 8, None):
        s.push()
        if bound is not None:
            s.add(*[v <= bound for v in rd.vars.values()])
        s.add(*[v >= 1 for v in rd.vars.values()])
        if s.check() == z3.sat:
            m = s.model()
            return {n: m.eval(v, model_completion=True).as_long() for n, v in rd.vars.items()}
        s.pop()
    if s.check() == z3.sat:
        m = s.model()
        return {n: m.eval(v, model_completion=True).as_long() for n, v in rd.vars.items()}
    return {}


@serialized
def _sized(ob: Obligation, lhs: Node, rhs: Node, rlimit: int) -> Outcome:
    """A size-level obligation: decided by Z3, confirmed by the Python reading and then
    replayed through the interpreter."""
    def build(mode):
        rd = Reading(mode)
        return rd, [rd.pred(a) for a in ob.assumptions], rd.pred(ob.goal)

    def confirm(values):
        if holds(ob, values) is not False:
            return None
        failing = f"{ob.name} fails: {failing_part(ob.goal, values)}"
        cx = find_counterexample(lhs, rhs, values, None, ob.name)
        if cx is None:  # the sizes are wrong but nothing observable differs (e.g. empty)
            cx = Counterexample(lhs, rhs, {k: v for k, v in values.items()
                                           if not k.startswith("_")}, None, ob.name)
            cx.reason = failing
        else:
            cx.reason = failing + (f"; replayed: {cx.reason}" if cx.reason else "")
        return cx

    d = decide(build, confirm=confirm, rlimit=rlimit)
    return Outcome(ob.name, d.status, d.method, d.seconds, d.bound, d.extra, d.note)


@serialized
def smt2(lhs, rhs, *, when=None, obligation: str = "value", mode: str = "staged") -> str:
    """The SMT-LIB text of one obligation's query (its negation, to be shown ``unsat``)."""
    lhs, rhs = as_node(lhs), as_node(rhs)
    if isinstance(when, str):
        from sparsefold.verify.conditions import parse_condition
        when = parse_condition(when)
    rd = Reading(mode)
    p = _Problem(rd, lhs, rhs, assumptions_of(lhs, when))
    if obligation == "value":
        assume, goal = p.base + p.in_left + p.in_right + p.facts(), p.left == p.right
    elif obligation == "lhs_bounds":
        assume, goal = p.base + p.in_left, z3.And(p.left_trace.bounds_goal(p.rd.ctx),
                                                  p.left_trace.divisions_goal(p.rd.ctx))
    elif obligation == "rhs_bounds":
        assume, goal = p.base + p.in_right, z3.And(p.right_trace.bounds_goal(p.rd.ctx),
                                                   p.right_trace.divisions_goal(p.rd.ctx))
    else:
        raise ValueError(f"no SMT-LIB dump for obligation {obligation!r}")
    s = z3.Solver(ctx=rd.ctx)
    s.add(*rd.nonneg, *rd.axioms, *assume, z3.Not(goal))
    return s.to_smt2()

"""Proofs of the shape-operator entries (DESIGN §4): every entry of ``SHAPE_OPERATORS`` on a
set of discrete configurations with symbolic sizes.

Discrete structure (ranks, axes, steps, number of operands, which bounds are given) is
enumerated here in Python; every size, bound and pad width stays a symbol. Each
configuration is an ordinary node over :class:`Input`\\ s with symbolic shapes, proved by
the obligations of ``verify.obligations``. User-defined operators are proved the same way:
pass instances of the new class to :func:`prove_operator`.

:func:`order_preserving` is what the compiler asks before assembling an output append-only:
its answer is the *proof result* of the order properties, cached per operator structure with
the sizes abstracted to symbols.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import time
from collections.abc import Iterable
from dataclasses import dataclass, field

from sparsefold.spec import SHAPE_OPERATORS
from sparsefold.spec import sizes as sz
from sparsefold.spec.compute import Input
from sparsefold.spec.errors import IllFormedProgram
from sparsefold.spec.ir import Node, ShapeOp
from sparsefold.spec.ops_axes import BroadcastTo, ExpandDims, PermuteDims, Squeeze
from sparsefold.spec.ops_concat import Concat
from sparsefold.spec.ops_index import Index, Pad, Slice
from sparsefold.spec.ops_reshape import Collapse, Split
from sparsefold.verify.counterexample import IndexCounterexample
from sparsefold.verify.obligations import Obligation, holds, obligations, properties
from sparsefold.verify.results import PROVED, REFUTED, UNKNOWN, VACUOUS, Outcome, \
    CombinedReport, ProofResult
from sparsefold.verify.solver import decide, satisfiable
from sparsefold.verify.z3_reading import Reading

__all__ = ["configurations", "prove_instance", "prove_operator", "OperatorReport",
           "order_preserving", "abstract_instance", "CONFIGURATIONS"]


def _x(shape, name: str = "X") -> Input:
    return Input(name, tuple(sz.as_expr(n) for n in shape), "float64", "dense")


def _sizes(rank: int, prefix: str = "N") -> tuple[str, ...]:
    return tuple(f"{prefix}{d}" for d in range(rank))


# --- configurations: discrete structure in Python, sizes symbolic ------------------------------

def _collapse():
    for r in range(1, 5):
        for a in range(r):
            for b in range(a + 1, r + 1):
                yield Collapse(_x(_sizes(r)), a, b)


def _split():
    for r in range(1, 4):
        for a in range(r):
            for m in (1, 2, 3) if r < 3 else (2, 3):
                parts = tuple(sz.Sym(f"S{j}") for j in range(m))
                shape = list(_sizes(r))
                shape[a] = sz.product(parts)
                yield Split(_x(shape), a, parts)


def _concat():
    for r in range(1, 4):
        for a in range(r):
            for n in (2, 3):
                args = []
                for p in range(n):
                    shape = list(_sizes(r))
                    shape[a] = f"M{p}"
                    args.append(_x(shape, "XYZ"[p]))
                yield Concat(tuple(args), a)


_STEPS = (1, -1, 2, -2, 3, -3)


def _slice():
    B, E = sz.Sym("B"), sz.Sym("E")
    starts = (None, B, -2)
    stops = (None, E, -1)
    for step in _STEPS:
        for start in starts:
            for stop in stops:
                yield Slice(_x(("N0",)), ((start, stop, step),))
    for steps in ((1, 2), (-1, 3), (2, -2), (-3, 1)):
        yield Slice(_x(("N0", "N1")), ((B, E, steps[0]), (None, None, steps[1])))
    yield Slice(_x(("N0", "N1", "N2")), ((None, E, 2), (B, None, -1), (1, -1, 3)))


def _index():
    for r in range(1, 4):
        for a in range(r):
            yield Index(_x(_sizes(r)), a, sz.Sym("P"))
            yield Index(_x(_sizes(r)), a, -1)


def _broadcast_to():
    for r in range(0, 3):
        for stretch in itertools.product((False, True), repeat=r):
            for lead in range(0, 3):
                shape = tuple(1 if s else f"N{d}" for d, s in enumerate(stretch))
                target = tuple(sz.Sym(f"L{d}") for d in range(lead)) + tuple(
                    sz.Sym(f"T{d}") if s else sz.Sym(f"N{d}") for d, s in enumerate(stretch))
                if r == 0 and lead == 0:
                    continue
                yield BroadcastTo(_x(shape), target)


def _expand_dims():
    for r in range(0, 4):
        for a in range(r + 1):
            yield ExpandDims(_x(_sizes(r)), a)


def _squeeze():
    for r in range(1, 4):
        for ones in itertools.product((False, True), repeat=r):
            if any(ones):
                shape = tuple(1 if o else f"N{d}" for d, o in enumerate(ones))
                yield Squeeze(_x(shape), tuple(d for d, o in enumerate(ones) if o))


def _permute_dims():
    for r in range(1, 5):
        for perm in itertools.permutations(range(r)):
            yield PermuteDims(_x(_sizes(r)), perm)


def _pad():
    yield Pad(_x(("N0",)), ((sz.Sym("P0"), sz.Sym("Q0")),))
    yield Pad(_x(("N0",)), ((sz.Const(0), sz.Sym("Q0")),))
    yield Pad(_x(("N0",)), ((sz.Sym("P0"), sz.Const(0)),))
    for r in (2, 3):
        yield Pad(_x(_sizes(r)), tuple((sz.Sym(f"P{d}"), sz.Sym(f"Q{d}")) for d in range(r)))


CONFIGURATIONS = {
    "collapse": _collapse, "split": _split, "concat": _concat, "slice": _slice,
    "index": _index, "broadcast_to": _broadcast_to, "expand_dims": _expand_dims,
    "squeeze": _squeeze, "permute_dims": _permute_dims, "pad": _pad,
}


def configurations(name: str) -> list[ShapeOp]:
    """The instances on which the entry called ``name`` is proved."""
    if name not in CONFIGURATIONS:
        raise IllFormedProgram(f"no configurations for operator {name!r}; known: "
                               f"{sorted(CONFIGURATIONS)}")
    return list(CONFIGURATIONS[name]())


# --- proving one instance --------------------------------------------------------------------

def describe(node: ShapeOp) -> str:
    """A one-line name for an instance: ``slice(X[N0], ((B, E, 2),))``."""
    from sparsefold.spec.ir import show_shape
    ops = ", ".join(f"{o.name}{show_shape(o.shape)}" if isinstance(o, Input) else "…"
                    for o in node.operands())
    params = ", ".join(f"{k}={_show(v)}" for k, v in node.params().items())
    return f"{type(node).__name__.lower()}({ops}{', ' if params else ''}{params})"


def _show(v) -> str:
    if isinstance(v, tuple):
        return "(" + ", ".join(_show(x) for x in v) + ("," if len(v) == 1 else "") + ")"
    return str(v)


def _decide(node: ShapeOp, ob: Obligation) -> Outcome:
    def build(mode):
        reading = Reading(mode)
        return reading, [reading.pred(a) for a in ob.assumptions], reading.pred(ob.goal)

    def confirm(values):
        if holds(ob, values) is False:
            return IndexCounterexample(node, ob.name, values)
        return None

    d = decide(build, confirm=confirm)
    if d.status == REFUTED and ob.fallback is not None:
        weaker = _decide(node, ob.fallback)
        if weaker.status == PROVED:
            return Outcome(ob.name, PROVED, weaker.method, d.seconds + weaker.seconds,
                           note=ob.fallback.note)
    return Outcome(ob.name, d.status, d.method, d.seconds, d.bound, d.extra, d.note)


def prove_instance(node: ShapeOp, *, with_properties: bool = True) -> ProofResult:
    """Every obligation (and the order properties) of one instance."""
    t0 = time.perf_counter()
    result = ProofResult(describe(node))
    req = node.index_map().requires
    vac = satisfiable(lambda reading: [reading.pred(req)])
    if vac == "unsat":
        result.obligations.append(Outcome("requires", VACUOUS, "direct",
                                          note="requires() admits no sizes"))
    for ob in obligations(node):
        result.obligations.append(_decide(node, ob))
    if with_properties:
        for ob in properties(node):
            result.properties.append(_decide(node, ob))
    result.seconds = time.perf_counter() - t0
    return result


# --- the operator-level API ------------------------------------------------------------------

@dataclass
class OperatorReport(CombinedReport):
    """The proofs of one operator over its configurations."""

    name: str
    instances: list[ProofResult] = field(default_factory=list)
    seconds: float = 0.0

    def _results(self) -> list[ProofResult]:
        return self.instances

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for o in self.obligations:
            out[o.status] = out.get(o.status, 0) + 1
        return out

    def order_summary(self) -> str:
        yes = sum(all(p.status == PROVED for p in r.properties) for r in self.instances)
        unknown = sum(any(p.status == UNKNOWN for p in r.properties) for r in self.instances)
        text = f"order-preserving in {yes}/{len(self.instances)} configurations"
        return text + (f" ({unknown} unknown)" if unknown else "")

    def __str__(self) -> str:
        c = ", ".join(f"{n} {s}" for s, n in sorted(self.counts().items()))
        head = f"{self.name}: {self.status} — {len(self.instances)} configurations, " \
               f"{len(self.obligations)} obligations ({c}); {self.order_summary()}; " \
               f"{self.seconds:.2f}s"
        bad = [str(r) for r in self.instances if r.status != PROVED]
        return "\n".join([head] + bad)


def prove_operator(what, *, with_properties: bool = True) -> OperatorReport:
    """Prove an operator entry: a name in ``SHAPE_OPERATORS`` (over its built-in
    configurations), a ShapeOp instance, or an iterable of instances (a user's operator)."""
    t0 = time.perf_counter()
    if isinstance(what, str):
        if what not in SHAPE_OPERATORS:
            raise IllFormedProgram(f"unknown shape operator {what!r}; known: "
                                   f"{sorted(SHAPE_OPERATORS)}")
        name, nodes = what, configurations(what)
    elif isinstance(what, ShapeOp):
        name, nodes = type(what).__name__.lower(), [what]
    elif isinstance(what, Iterable):
        nodes = list(what)
        if not nodes or not all(isinstance(n, ShapeOp) for n in nodes):
            raise IllFormedProgram("prove_operator: expected an operator name, a ShapeOp "
                                   "instance, or a non-empty list of instances")
        name = type(nodes[0]).__name__.lower()
    else:
        raise IllFormedProgram(f"prove_operator: expected an operator name or ShapeOp "
                               f"instances, found {type(what).__name__}")
    report = OperatorReport(name)
    for node in nodes:
        report.instances.append(prove_instance(node, with_properties=with_properties))
    report.seconds = time.perf_counter() - t0
    return report


# --- order preservation, as the compiler asks for it -----------------------------------------

def abstract_instance(node: ShapeOp) -> ShapeOp:
    """``node``'s operator on fresh inputs with its sizes replaced by symbols.

    Every size expression — operand sizes and expression-valued parameters — becomes a
    symbol (equal expressions the same symbol); 0, 1 and negative constants stay, since they
    select different structure (a stretched or squeezed axis, a bound counted from the end).
    Plain ``int`` parameters (axes, steps, permutations, integer slice bounds) stay as they
    are. A split keeps its operand axis equal to the product of its abstracted sizes. When
    abstraction does not give a well-formed node, the sizes are kept."""
    names: dict[sz.Expr, sz.Sym] = {}

    def abstract(v):
        if isinstance(v, tuple):
            return tuple(abstract(x) for x in v)
        if not isinstance(v, sz.Expr) or (sz.const_value(v) is not None
                                          and sz.const_value(v) <= 1):
            return v
        if v not in names:
            names[v] = sz.Sym(f"Z{len(names)}")
        return names[v]

    ops = node.operands()
    params = {f.name: abstract(getattr(node, f.name)) for f in dataclasses.fields(node)
              if f.init and not _is_operand_field(getattr(node, f.name))}
    shapes = [tuple(abstract(n) for n in o.shape) for o in ops]
    if isinstance(node, Split):
        a = node.axis % len(shapes[0])
        shapes[0] = shapes[0][:a] + (sz.product(params["sizes"]),) + shapes[0][a + 1:]
    try:
        return _rebuild(node, params, [_x(s, f"X{n}") for n, s in enumerate(shapes)])
    except IllFormedProgram:
        same = {f.name: getattr(node, f.name) for f in dataclasses.fields(node)
                if f.init and not _is_operand_field(getattr(node, f.name))}
        return _rebuild(node, same, [_x(o.shape, f"X{n}") for n, o in enumerate(ops)])


def _is_operand_field(v) -> bool:
    return isinstance(v, Node) or (isinstance(v, tuple) and bool(v)
                                   and all(isinstance(x, Node) for x in v))


def _rebuild(node: ShapeOp, params: dict, inputs: list) -> ShapeOp:
    where = {id(o): n for n, o in enumerate(node.operands())}
    changes = dict(params)
    for f in dataclasses.fields(node):
        v = getattr(node, f.name)
        if isinstance(v, Node):
            changes[f.name] = inputs[where[id(v)]]
        elif _is_operand_field(v):
            changes[f.name] = tuple(inputs[where[id(x)]] for x in v)
    return dataclasses.replace(node, **changes)


@functools.lru_cache(maxsize=4096)
def _order_result(instance: ShapeOp) -> tuple[str, tuple[Outcome, ...]]:
    outs = tuple(_decide(instance, ob) for ob in properties(instance))
    if all(o.status == PROVED for o in outs):
        return PROVED, outs
    if any(o.status == REFUTED for o in outs):
        return REFUTED, outs
    return UNKNOWN, outs


def order_preserving(node: ShapeOp) -> bool:
    """Whether iterating each operand in row-major order, operand after operand, yields the
    output coordinates in strictly increasing row-major order — as *proved* by Z3 for every
    size (cached by structure). ``False`` when refuted or undecided: the compiler then
    inserts its sort / count-and-scatter fallback."""
    return order_status(node)[0] == PROVED


def order_status(node: ShapeOp) -> tuple[str, tuple[Outcome, ...]]:
    """The order property's status and per-piece outcomes, for ``node``'s structure."""
    return _order_result(abstract_instance(node))


__all__.append("order_status")
__all__.append("describe")

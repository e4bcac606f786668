"""Proofs of the shape-operator entries (DESIGN §4): every entry of ``SHAPE_OPERATORS`` on a
set of discrete configurations with symbolic sizes.

Discrete structure (ranks, axes, steps, number of operands, which bounds are given) is
enumerated by each entry's ``configurations()`` (on the entry, in ``spec``); every size,
bound and pad width stays a symbol. Each configuration is an ordinary node over
:class:`Input`\\ s with symbolic shapes, proved by the obligations of
``verify.obligations``. User-defined operators are proved the same way: pass the new class
(its ``configurations()``) or instances of it to :func:`prove_operator`.

:func:`order_preserving` is what the compiler asks before assembling an output append-only:
its answer is the *proof result* of the order properties, cached per operator structure with
the sizes abstracted to symbols.
"""

from __future__ import annotations

import dataclasses
import functools
import time
from collections.abc import Iterable
from dataclasses import dataclass, field

from sparsefold.spec import SHAPE_OPERATORS
from sparsefold.spec import sizes as sz
from sparsefold.spec.compute import Input, symbolic_input
from sparsefold.spec.errors import IllFormedProgram
from sparsefold.spec.ir import Node, ShapeOp
from sparsefold.spec.ops_reshape import Split
from sparsefold.spec.sizes_z3 import serialized
from sparsefold.verify.counterexample import IndexCounterexample
from sparsefold.verify.obligations import Obligation, holds, obligations, properties
from sparsefold.verify.results import (
    PROVED,
    REFUTED,
    UNKNOWN,
    VACUOUS,
    CombinedReport,
    Outcome,
    ProofResult,
)
from sparsefold.verify.solver import decide, satisfiable
from sparsefold.verify.z3_reading import Reading

__all__ = ["configurations", "prove_instance", "prove_operator", "OperatorReport",
           "order_preserving", "abstract_instance", "CONFIGURATIONS"]


# --- configurations: on each entry (ShapeOp.configurations), sizes symbolic ----------------

# By name, as before: each value builds the instances the entry's configurations() gives.
CONFIGURATIONS = {name: cls.configurations for name, cls in SHAPE_OPERATORS.items()}


def configurations(name: str) -> list[ShapeOp]:
    """The instances on which the entry called ``name`` is proved (its
    ``configurations()``)."""
    cls = SHAPE_OPERATORS.get(name)
    nodes = list(cls.configurations()) if cls is not None else []
    if not nodes:
        known = sorted(n for n, c in SHAPE_OPERATORS.items() if list(c.configurations()))
        raise IllFormedProgram(f"no configurations for operator {name!r}; known: {known}")
    return nodes


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


@serialized
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
    """Prove an operator entry: a name in ``SHAPE_OPERATORS`` or a ShapeOp subclass (over
    its ``configurations()``), a ShapeOp instance, or an iterable of instances."""
    t0 = time.perf_counter()
    if isinstance(what, type) and issubclass(what, ShapeOp):
        name, nodes = what.__name__.lower(), list(what.configurations())
        if not nodes:
            raise IllFormedProgram(f"prove_operator: {what.__name__} has no configurations(); "
                                   f"pass instances of it instead")
    elif isinstance(what, str):
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
        return _rebuild(node, params, [symbolic_input(f"X{n}", *s) for n, s in enumerate(shapes)])
    except IllFormedProgram:
        same = {f.name: getattr(node, f.name) for f in dataclasses.fields(node)
                if f.init and not _is_operand_field(getattr(node, f.name))}
        return _rebuild(node, same, [symbolic_input(f"X{n}", *o.shape)
                                     for n, o in enumerate(ops)])


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

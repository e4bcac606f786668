"""Pass 1 of the pipeline (DESIGN §3.1): rewrite a program with proved rule instances.

A rule instance's left-hand side, traced on symbolic inputs, is a *template*: its inputs are
pattern variables (matching any subprogram), its size symbols pattern symbols (matching any
non-negative size expression), its discrete parameters (axes, steps, permutations) must match
exactly. A match is used only when

* ``proved(instance)`` says so — the prover is a parameter (the compiler does not prove;
  ``sparsefold.verify`` does, and the front end hands its cached prover in). With no prover
  nothing is applied;
* its ``when`` condition, with the matched sizes substituted, is valid for all non-negative
  sizes (decided by Z3, through ``spec.sizes_z3``);
* the matched inputs share one dtype (``int64`` for rules proved with exact integer sums),
  and the new program has the old one's shape and dtype.

Rules rewrite bottom-up to a fixed point, within a step budget.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Iterable

import numpy as np
import z3

from sparsefold.spec import sizes as sz
from sparsefold.spec.compute import Input, Literal
from sparsefold.spec.errors import InternalError, SparsefoldError
from sparsefold.spec.functions import ElementwiseFunction
from sparsefold.spec.ir import Node
from sparsefold.spec.ops_index import Slice
from sparsefold.spec.printer import topological
from sparsefold.spec.programs import rebuild, substitute_program
from sparsefold.spec.rules import PROVED, Rule, RuleInstance
from sparsefold.spec.sizes_z3 import Reading, serialized

__all__ = ["optimize", "rewrite", "match", "applicable_instances", "Rewrite", "Prover"]

Prover = Callable[[RuleInstance], bool]


@dataclasses.dataclass
class _Binding:
    inputs: dict[str, Node] = dataclasses.field(default_factory=dict)
    sizes: dict[str, sz.Expr] = dataclasses.field(default_factory=dict)
    deferred: list[tuple[sz.Expr, sz.Expr]] = dataclasses.field(default_factory=list)


@functools.lru_cache(maxsize=4096)
@serialized
def _valid(e: sz.Expr) -> bool:
    """``e`` holds for every non-negative value of its symbols (Z3, small resource limit)."""
    if e == sz.TRUE:
        return True
    rd = Reading("direct")
    s = z3.Solver(ctx=rd.ctx)
    s.set("rlimit", 500_000)
    goal = rd.pred(e)
    s.add(*rd.nonneg, z3.Not(goal))
    return s.check() == z3.unsat


def _unify(t: sz.Expr, e, b: _Binding) -> bool:
    e = sz.as_expr(e) if not isinstance(e, sz.Expr) else e
    if isinstance(t, sz.Sym):
        if t.name in b.sizes:
            return sz.definitely_equal(b.sizes[t.name], e)
        if not _valid(sz.ge(e, 0)):  # the proof took every symbol to be non-negative
            return False
        b.sizes[t.name] = e
        return True
    if isinstance(t, sz.Const):
        return sz.definitely_equal(t, e)
    b.deferred.append((t, e))
    return True


def _params(node: Node, name: str):
    v = getattr(node, name)
    if isinstance(node, Slice) and name == "slices":  # step None means 1
        return tuple((s0, s1, 1 if st is None else st) for s0, s1, st in v)
    return v


def _unify_value(t, v, b: _Binding) -> bool:
    if isinstance(t, tuple):
        return isinstance(v, tuple) and len(t) == len(v) and all(
            _unify_value(x, y, b) for x, y in zip(t, v))
    if isinstance(t, sz.Expr):
        if v is None or isinstance(v, bool) or not isinstance(v, (int, sz.Expr)):
            return False
        return _unify(t, v, b)
    if isinstance(t, ElementwiseFunction):
        return isinstance(v, ElementwiseFunction) and t.name == v.name
    if t is None or v is None:
        return t is None and v is None
    if isinstance(t, int) and isinstance(v, sz.Const):
        return t == v.value
    return type(t) is type(v) and t == v


def _match(t: Node, n: Node, b: _Binding) -> bool:
    if isinstance(t, Input):
        if t.name in b.inputs:
            return b.inputs[t.name] == n
        if n.ndim != t.ndim or not all(_unify(x, y, b) for x, y in zip(t.shape, n.shape)):
            return False
        b.inputs[t.name] = n
        return True
    if type(t) is not type(n):
        return False
    if isinstance(t, Literal):
        return t.weak == n.weak and type(t.value) is type(n.value) and t.value == n.value
    for f in dataclasses.fields(t):
        if not f.init:
            continue
        tv, nv = getattr(t, f.name), getattr(n, f.name)
        if isinstance(tv, Node):
            if not _match(tv, nv, b):
                return False
        elif isinstance(tv, tuple) and tv and all(isinstance(x, Node) for x in tv):
            if not (isinstance(nv, tuple) and len(nv) == len(tv)
                    and all(_match(x, y, b) for x, y in zip(tv, nv))):
                return False
        elif not _unify_value(_params(t, f.name), _params(n, f.name), b):
            return False
    return True


def match(inst: RuleInstance, node: Node) -> _Binding | None:
    """The binding of ``inst``'s pattern variables that makes its left-hand side ``node``."""
    b = _Binding()
    if not _match(inst.lhs, node, b):
        return None
    for t, e in b.deferred:
        if not sz.free_symbols(t) <= set(b.sizes):
            return None
        if not sz.definitely_equal(sz.substitute(t, b.sizes), e):
            return None
    return b


def _dtype_ok(r: Rule, b: _Binding) -> bool:
    dtypes = {n.dtype for n in b.inputs.values()}
    if len(dtypes) > 1:
        return False
    return r.dtype != "int64" or dtypes <= {np.dtype("int64")}


@functools.lru_cache(maxsize=None)
def _head(r: Rule) -> tuple[RuleInstance, ...]:
    return tuple(r.instances())


def applicable_instances(rules: Iterable[Rule]) -> dict[type, list[RuleInstance]]:
    """Instances of optimizing rules, grouped by the node type of their left-hand side."""
    out: dict[type, list[RuleInstance]] = {}
    for r in rules:
        if not r.optimize or r.expect != PROVED:
            continue
        for inst in _head(r):
            out.setdefault(type(inst.lhs), []).append(inst)
    return out


@dataclasses.dataclass
class Rewrite:
    """One applied rewrite, for logs and tests."""

    rule: str
    before: Node
    after: Node


def _apply(inst: RuleInstance, node: Node, proved: Prover) -> Node | None:
    b = match(inst, node)
    if b is None or not _dtype_ok(inst.rule, b):
        return None
    if inst.when is not None:
        if not sz.free_symbols(inst.when) <= set(b.sizes):
            return None
        if not _valid(sz.substitute(inst.when, b.sizes)):
            return None
    if not proved(inst):
        return None
    try:
        new = substitute_program(inst.rhs, b.sizes, b.inputs)
    except SparsefoldError:
        return None
    if new == node:  # e.g. x[::1][::s] is traced as x[::s]: nothing to gain
        return None
    if new.dtype != node.dtype or new.ndim != node.ndim or not all(
            sz.definitely_equal(x, y) or _valid(sz.eq(x, y))
            for x, y in zip(new.shape, node.shape)):
        return None
    return new


def rewrite(root: Node, proved: Prover, rules: Iterable[Rule] | None = None, *,
            max_steps: int = 1000, log: list | None = None) -> Node:
    """``root`` with the instances ``proved`` accepts applied bottom-up to a fixed point;
    ``log`` (a list) receives :class:`Rewrite` records. ``rules`` defaults to the catalog."""
    if rules is None:
        from sparsefold.spec.catalog import RULES
        rules = RULES
    by_head = applicable_instances(rules)
    done: dict[int, tuple[Node, Node]] = {}  # id -> (node, result); holding node keeps id
    steps = [0]

    def visit(node: Node) -> Node:
        if id(node) in done:
            return done[id(node)][1]
        out = rebuild(node, visit)
        changed = True
        while changed and steps[0] < max_steps:
            changed = False
            for inst in by_head.get(type(out), ()):
                new = _apply(inst, out, proved)
                if new is not None:
                    steps[0] += 1
                    if log is not None:
                        log.append(Rewrite(inst.label, out, new))
                    out = visit(new) if new is not out else out
                    changed = type(out) in by_head
                    break
        done[id(node)] = (node, out)
        done.setdefault(id(out), (out, out))
        return out

    for node in topological(root):  # children first, so recursion stays shallow
        visit(node)
    return done[id(root)][1]


def optimize(program: Node, proved: Prover | None = None) -> Node:
    """Pass 1: ``program`` rewritten with the catalog's instances that ``proved`` accepts
    (none without a prover). The result has the same shape, dtype and inputs."""
    if proved is None:
        return program
    out = rewrite(program, proved)
    if out.shape != program.shape or out.dtype != program.dtype:
        raise InternalError(f"optimize changed {program.dtype}{program.shape} into "
                            f"{out.dtype}{out.shape}")
    return out

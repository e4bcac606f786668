"""Rewrite rules as data (STYLE 7): ``Rule(name, lhs, rhs, when=...)``, proved by
``verify.equal`` for symbolic sizes.

A rule's sides are functions of *pattern arrays* (symbolic inputs, one per parameter name,
with the shapes given to :func:`rule`) returning programs; ``when`` is a condition on sizes
written as Python text. Discrete parameters (steps, axes, permutations) are a ``grid``: each
grid point is an *instance*, proved on its own with every size symbolic — so a rule is proved
exactly for the discrete cases it lists, and the optimizer applies it only to those.

Wrong rules (``expect="refuted"``) name the obligation that must fail (``fails=``), like
Alive2's ``; ERROR:`` tests: the verifier itself is tested by them.
"""

from __future__ import annotations

import inspect
import itertools
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from sparsefold.spec import sizes as sz
from sparsefold.spec.compute import Input
from sparsefold.spec.ir import Node
from sparsefold.verify.conditions import parse_condition
from sparsefold.verify.equal import prove_equal
from sparsefold.verify.programs import as_node
from sparsefold.verify.results import PROVED, REFUTED, CombinedReport, ProofResult

__all__ = ["Rule", "rule", "RuleInstance", "RuleReport", "prove_rule", "prove_instance"]


@dataclass(frozen=True, eq=False)
class Rule:
    """``lhs -> rhs`` when ``when``; see the module docstring."""

    name: str
    lhs: Callable
    rhs: Callable
    when: str | None = None
    arrays: tuple[tuple[str, tuple], ...] = ()
    dtype: str = "float64"
    grid: tuple[dict, ...] = ({},)
    expect: str = PROVED
    fails: str | None = None
    optimize: bool = True
    family: str = ""

    def instances(self) -> list[RuleInstance]:
        return [_instantiate(self, params) for params in self.grid]

    def __repr__(self) -> str:
        return f"<Rule {self.name}>"


def rule(name: str, lhs: Callable, rhs: Callable, when: str | None = None, *,
         dtype: str = "float64", grid: dict | list | None = None, expect: str = PROVED,
         fails: str | None = None, optimize: bool = True, family: str = "",
         **arrays) -> Rule:
    """Build a :class:`Rule`. ``arrays`` give each pattern array's shape (size symbols as
    strings or expressions); ``grid`` is a dict of discrete parameter values (their
    product is taken) or a list of parameter dicts."""
    if grid is None:
        points: tuple[dict, ...] = ({},)
    elif isinstance(grid, dict):
        keys = list(grid)
        points = tuple(dict(zip(keys, vals)) for vals in itertools.product(*grid.values()))
    else:
        points = tuple(grid)
    return Rule(name, lhs, rhs, when, tuple(arrays.items()), dtype, points, expect, fails,
                optimize, family)


@dataclass(eq=False)
class RuleInstance:
    """One grid point of a rule: both sides traced on symbolic inputs."""

    rule: Rule
    params: dict
    lhs: Node
    rhs: Node
    when: sz.Expr | None

    @property
    def label(self) -> str:
        if not self.params:
            return self.rule.name
        inner = ", ".join(f"{k}={v}" for k, v in self.params.items())
        return f"{self.rule.name}[{inner}]"

    @property
    def key(self) -> tuple:
        return (id(self.rule), tuple(sorted((k, repr(v)) for k, v in self.params.items())))


def _symbolic(name: str, shape: tuple, dtype: str):
    from sparsefold.lazy import LazyArray
    return LazyArray(Input(name, tuple(sz.as_expr(n) for n in shape), np.dtype(dtype),
                           "dense"))


def _instantiate(r: Rule, params: dict) -> RuleInstance:
    arrays = {name: _symbolic(name, shape, r.dtype) for name, shape in r.arrays}

    def call(fn):
        wanted = inspect.signature(fn).parameters
        args = {k: v for k, v in {**arrays, **params}.items() if k in wanted}
        return as_node(fn(**args))

    when = parse_condition(r.when) if r.when else None
    return RuleInstance(r, dict(params), call(r.lhs), call(r.rhs), when)


_PROOFS: dict[tuple, ProofResult] = {}


def prove_instance(inst: RuleInstance) -> ProofResult:
    """The proof of one instance (cached for the process)."""
    result = _PROOFS.get(inst.key)
    if result is None:
        result = _PROOFS[inst.key] = prove_equal(inst.lhs, inst.rhs, when=inst.when,
                                                 name=inst.label)
    return result


@dataclass
class RuleReport(CombinedReport):
    """The proofs of every instance of a rule, judged against what the rule expects."""

    rule: Rule
    results: list[ProofResult] = field(default_factory=list)
    seconds: float = 0.0

    def _results(self) -> list[ProofResult]:
        return self.results

    @property
    def as_expected(self) -> bool:
        """Proved rules: every instance proved. Wrong rules: every instance refuted at the
        named obligation, with a counterexample that replays through the interpreter."""
        if self.rule.expect != REFUTED:
            return all(r.status == self.rule.expect for r in self.results)
        for r in self.results:
            hits = [o for o in r.obligations if o.status == REFUTED
                    and (self.rule.fails is None or o.name == self.rule.fails)]
            if not hits or not all(o.counterexample is not None and o.counterexample.replay()
                                   for o in hits):
                return False
        return True

    def __str__(self) -> str:
        head = f"{self.rule.name}: {self.status} ({len(self.results)} instances, " \
               f"{self.seconds:.2f}s)"
        return "\n".join([head] + [str(r) for r in self.results if r.status != PROVED])


def prove_rule(r: Rule) -> RuleReport:
    """Prove every instance of ``r``."""
    t0 = time.perf_counter()
    report = RuleReport(r)
    for inst in r.instances():
        report.results.append(prove_instance(inst))
    report.seconds = time.perf_counter() - t0
    return report

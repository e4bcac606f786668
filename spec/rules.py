"""Rewrite rules as data (STYLE 7): ``Rule(name, lhs, rhs, when=...)`` over spec nodes.

A rule's sides are functions of *pattern arrays* (symbolic inputs, one per parameter name,
with the shapes given to :func:`rule`) returning programs; ``when`` is a condition on sizes
written as Python text. Discrete parameters (steps, axes, permutations) are a ``grid``: each
grid point is an *instance*, traced on its own with every size symbolic — so a rule is
proved (by ``sparsefold.verify``) exactly for the discrete cases it lists, and the
optimizer (``sparsefold.compiler.plan.optimize``) applies it only to those.

Wrong rules (``expect=REFUTED``) name the obligation that must fail (``fails=``), like
Alive2's ``; ERROR:`` tests: the verifier itself is tested by them. A rule about
floating-point sums or products that holds in real arithmetic (up to rounding) expects
``PROVED_REAL``; the optimizer applies only rules proved exactly.

Sides are traced under ``sizes.assuming``: sizes a side needs equal but that are not equal
for every size (``A[::2] + B[1::2]`` needs ``(N + 1) // 2 == N // 2``) become that side's
*requirements*, so a side that is ill-formed for some sizes is a refutation with those
sizes, not an exception.
"""

from __future__ import annotations

import inspect
import itertools
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from sparsefold.spec import sizes as sz
from sparsefold.spec.compute import Input
from sparsefold.spec.conditions import parse_condition
from sparsefold.spec.ir import Node
from sparsefold.spec.programs import as_node

__all__ = ["Rule", "rule", "RuleInstance", "PROVED", "PROVED_REAL", "REFUTED", "trace_side"]

# What a rule expects of its proof (the verifier's status names).
PROVED, PROVED_REAL, REFUTED = "proved", "proved-real", "refuted"


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
    lhs_requires: tuple[sz.Expr, ...] = ()   # size equalities the sides' tracing assumed
    rhs_requires: tuple[sz.Expr, ...] = ()

    @property
    def label(self) -> str:
        if not self.params:
            return self.rule.name
        inner = ", ".join(f"{k}={v}" for k, v in self.params.items())
        return f"{self.rule.name}[{inner}]"

    @property
    def key(self) -> tuple:
        return (id(self.rule), tuple(sorted((k, repr(v)) for k, v in self.params.items())))


def trace_side(fn: Callable, args: dict) -> tuple[Node, tuple[sz.Expr, ...]]:
    """``fn`` called with the arguments it names, under ``sizes.assuming``: the program and
    the size equalities it had to assume."""
    wanted = inspect.signature(fn).parameters
    with sz.assuming() as assumed:
        node = as_node(fn(**{k: v for k, v in args.items() if k in wanted}))
    return node, tuple(assumed)


def _instantiate(r: Rule, params: dict) -> RuleInstance:
    arrays = {name: Input(name, tuple(sz.as_expr(n) for n in shape), np.dtype(r.dtype),
                          "dense")
              for name, shape in r.arrays}
    when = parse_condition(r.when) if r.when else None
    lhs, lhs_requires = trace_side(r.lhs, {**arrays, **params})
    rhs, rhs_requires = trace_side(r.rhs, {**arrays, **params})
    return RuleInstance(r, dict(params), lhs, rhs, when, lhs_requires, rhs_requires)

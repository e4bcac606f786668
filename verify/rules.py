"""Proving rewrite rules (DESIGN §4): every instance of a rule is proved by ``verify.equal``
for symbolic sizes.

Rules are language data (:mod:`sparsefold.spec.rules`: ``Rule``, ``RuleInstance``; the
catalog is :mod:`sparsefold.spec.catalog`). This module proves them: :func:`prove_instance`
(cached per process), :func:`prove_rule` (every instance, judged against what the rule
expects) and :func:`instance_proved`, the prover the compiler's optimize pass is given.

:func:`rule` here is the user-facing constructor: its sides are written with the front end
(``x[a:b]``, ``x.T``, ``sf.concat``), so pattern arrays reach them as ``LazyArray``\\ s.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from sparsefold.spec.ir import Node
from sparsefold.spec.rules import PROVED, REFUTED, Rule, RuleInstance
from sparsefold.spec.rules import rule as _spec_rule
from sparsefold.verify.equal import prove_equal
from sparsefold.verify.results import CombinedReport, ProofResult

__all__ = ["Rule", "rule", "RuleInstance", "RuleReport", "prove_rule", "prove_instance",
           "instance_proved"]


def rule(name: str, lhs: Callable, rhs: Callable, when: str | None = None, **kwargs) -> Rule:
    """A :class:`~sparsefold.spec.rules.Rule` whose sides are written with the front end:
    each pattern array is a ``LazyArray`` over a symbolic input. Keywords as
    :func:`sparsefold.spec.rules.rule` (``dtype``, ``grid``, ``expect``, ``fails``,
    ``optimize``, ``family`` and the pattern arrays' shapes)."""
    return _spec_rule(name, _front_end(lhs), _front_end(rhs), when, **kwargs)


def _front_end(side: Callable) -> Callable:
    @functools.wraps(side)  # the signature says which pattern arrays the side takes
    def traced(**args):
        import sparsefold as sf
        return side(**{k: sf.LazyArray(v) if isinstance(v, Node) else v
                       for k, v in args.items()})
    return traced


_PROOFS: dict[tuple, ProofResult] = {}


def prove_instance(inst: RuleInstance) -> ProofResult:
    """The proof of one instance (cached for the process)."""
    result = _PROOFS.get(inst.key)
    if result is None:
        result = _PROOFS[inst.key] = prove_equal(
            inst.lhs, inst.rhs, when=inst.when, name=inst.label,
            lhs_requires=inst.lhs_requires, rhs_requires=inst.rhs_requires)
    return result


def instance_proved(inst: RuleInstance) -> bool:
    """Whether ``inst`` is proved exactly: what the optimize pass may apply (never a rule
    proved only in real arithmetic — it would change floating-point results)."""
    return prove_instance(inst).status == PROVED


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

"""Honest proof results (Alive2's discipline): what was proved, how, and what failed.

Statuses, in the order a reader should trust them:

* ``proved`` — valid for every value of the symbolic sizes (unbounded integers), exactly:
  equal floating-point values, not rounded reals (NaN where the other side has NaN;
  ``-0.0`` and ``0.0`` count as equal values, as ``==`` compares them).
* ``proved-real`` — valid for every size in *real arithmetic*: floating-point ``+``, ``-``,
  ``*`` and sums/products read as exact real operations. The exact proof did not go
  through (floating-point sums are not associative); in floating point the two sides may
  differ by rounding — by reassociation for the catalog's rules — and nothing is claimed
  for inputs holding NaN or infinities. Never applied by the optimizer.
* ``bounded`` — valid for every size ≤ :attr:`Outcome.bound` only; the unbounded queries ran
  out of resources. Never printed as "proved".
* ``refuted`` — a counterexample was found *and confirmed* by an independent evaluation
  (the Python reading of the sizes, or the reference interpreter).
* ``unknown`` — Z3's deterministic resource limit (``rlimit``) was reached, or a model could
  not be confirmed (the encoding abstracts something the model exploited).
* ``vacuous`` — the preconditions admit no sizes at all, so nothing was shown.

For a *property* (order preservation) ``refuted`` is an answer, not a failure.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sparsefold.spec.rules import PROVED, PROVED_REAL, REFUTED  # what a rule may expect

__all__ = ["PROVED", "PROVED_REAL", "BOUNDED", "REFUTED", "UNKNOWN", "VACUOUS", "STATUSES",
           "Outcome", "ProofResult", "combine_status", "CombinedReport"]

BOUNDED, UNKNOWN, VACUOUS = "bounded", "unknown", "vacuous"
STATUSES = (PROVED, PROVED_REAL, BOUNDED, REFUTED, UNKNOWN, VACUOUS)


@dataclass
class Outcome:
    """The result of one obligation (or property): status, how it was decided, how long."""

    name: str
    status: str
    method: str = ""              # "staged", "direct", "bounded", "syntactic", "lemma"
    seconds: float = 0.0
    bound: int | None = None      # for "bounded": sizes <= bound
    counterexample: Any = None    # confirmed counterexample for "refuted"
    note: str = ""

    def __str__(self) -> str:
        how = f" ({self.method}{'' if self.bound is None else f', sizes <= {self.bound}'})" \
            if self.method else ""
        note = f" — {self.note}" if self.note else ""
        return f"{self.name}: {self.status}{how}{note}"


def combine_status(statuses) -> tuple[str, int | None]:
    """The status of a conjunction of obligations and, for ``bounded``, the smallest bound.

    ``refuted`` beats ``unknown`` (a confirmed counterexample settles the question), which
    beats ``vacuous``, ``bounded``, ``proved-real`` and ``proved``."""
    statuses = list(statuses)
    names = [s if isinstance(s, str) else s.status for s in statuses]
    for s in (REFUTED, UNKNOWN, VACUOUS):
        if s in names:
            return s, None
    bounds = [s.bound for s in statuses if not isinstance(s, str) and s.status == BOUNDED]
    if BOUNDED in names:
        return BOUNDED, min(b for b in bounds if b is not None) if bounds else None
    if PROVED_REAL in names:
        return PROVED_REAL, None
    return PROVED, None


class _JudgedByObligations:
    """``status`` and ``bound`` of anything with ``obligations``: their conjunction."""

    @property
    def status(self) -> str:
        return combine_status(self.obligations)[0]

    @property
    def bound(self) -> int | None:
        return combine_status(self.obligations)[1]


@dataclass
class ProofResult(_JudgedByObligations):
    """Everything proved about one item (an operator configuration, a rule, two programs)."""

    name: str
    obligations: list[Outcome] = field(default_factory=list)
    properties: list[Outcome] = field(default_factory=list)
    seconds: float = 0.0
    note: str = ""

    @property
    def counterexample(self):
        """The first confirmed counterexample of a refuted obligation, else ``None``."""
        for o in self.obligations:
            if o.status == REFUTED and o.counterexample is not None:
                return o.counterexample
        return None

    @property
    def failed(self) -> list[Outcome]:
        return [o for o in self.obligations if o.status not in (PROVED, PROVED_REAL)]

    @property
    def exact(self) -> bool:
        """Proved bit for bit (``proved``), not only in real arithmetic."""
        return self.status == PROVED

    def __str__(self) -> str:
        head = f"{self.name}: {self.status}"
        if self.bound is not None:
            head += f" (sizes <= {self.bound})"
        lines = [head + f"  [{len(self.obligations)} obligations, {self.seconds:.2f}s]"]
        for o in self.obligations + self.properties:
            lines.append("  " + str(o))
            if o.counterexample is not None:
                lines.append("    " + str(o.counterexample).replace("\n", "\n    "))
        return "\n".join(lines)

    def __repr__(self) -> str:
        return f"<ProofResult {self.name}: {self.status}>"


class CombinedReport(_JudgedByObligations):
    """Shared reading of a report over several :class:`ProofResult` (an operator's
    configurations, a rule's instances): subclasses say which results with ``_results``."""

    def _results(self) -> list[ProofResult]:
        raise NotImplementedError

    @property
    def obligations(self) -> list[Outcome]:
        return [o for r in self._results() for o in r.obligations]

    @property
    def counterexample(self):
        for r in self._results():
            if r.counterexample is not None:
                return r.counterexample
        return None

"""Z3 proofs about the type-promotion table (``spec.promotion``).

The standard's table is a partial join: :func:`prove_promotion` encodes it over a Z3
enumeration of the thirteen dtypes — ``join`` and ``defined`` as functions fixed by one
axiom per ordered pair, the cast order as ``can_cast`` — and proves, for every dtype:

* **idempotent**: ``join(a, a) == a``;
* **commutative**: ``join(a, b)`` is defined exactly when ``join(b, a)`` is, and equal;
* **associative**: where both ``join(join(a, b), c)`` and ``join(a, join(b, c))`` are
  defined they are equal, and one is defined exactly when the other is;
* **least upper bound** in the cast order: ``join(a, b)`` is one both cast to, and casts to
  every other such dtype;
* **extended**: ``spec.promotion.promote`` (the table plus NumPy's answers for the pairs it
  leaves out) agrees with the table on every pair it has, and is commutative.

A failed property comes back with the dtypes Z3 found (``PromotionReport.failures``). The
same table is what every elementwise function's result dtype reads, so these are facts
about what every engine computes.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
import z3

from sparsefold.spec import promotion
from sparsefold.spec.sizes_z3 import new_context, serialized

__all__ = ["PromotionReport", "prove_promotion", "PROMOTION_STATEMENT"]

PROMOTION_STATEMENT = ("the standard's promotion table is an idempotent, commutative, "
                       "associative least-upper-bound join; promote() extends it")


@dataclass
class PromotionReport:
    """Each property's status ("proved" or "refuted") and, for a refuted one, a
    counterexample (dtype names)."""

    statuses: dict[str, str] = field(default_factory=dict)
    failures: dict[str, tuple[str, ...]] = field(default_factory=dict)
    seconds: float = 0.0

    @property
    def proved(self) -> bool:
        return all(s == "proved" for s in self.statuses.values())


@serialized
def prove_promotion(table=None) -> PromotionReport:
    """Prove the properties of the module docstring for ``table`` (``{(dtype, dtype):
    dtype}``; default: ``spec.promotion.STANDARD``; a test hands it wrong ones)."""
    table = promotion.STANDARD if table is None else table
    t0 = time.perf_counter()
    ctx = new_context()
    names = list(promotion.DTYPE_NAMES)
    sort, consts = z3.EnumSort("DType", names, ctx=ctx)
    by_name = dict(zip(names, consts))
    dt = {np.dtype(n): by_name[n] for n in names}
    join = z3.Function("join", sort, sort, sort)
    defined = z3.Function("defined", sort, sort, z3.BoolSort(ctx))
    can_cast = z3.Function("can_cast", sort, sort, z3.BoolSort(ctx))
    axioms = []
    for a in promotion.DTYPES:
        for b in promotion.DTYPES:
            hit = table.get((a, b))
            axioms.append(defined(dt[a], dt[b]) == z3.BoolVal(hit is not None, ctx))
            if hit is not None:
                axioms.append(join(dt[a], dt[b]) == dt[hit])
            axioms.append(can_cast(dt[a], dt[b]) == z3.BoolVal(
                hit is not None and hit == b, ctx))
    a, b, c, u = (z3.Const(n, sort) for n in "abcu")
    ab, bc = join(a, b), join(b, c)
    left_ok = z3.And(defined(a, b), defined(ab, c))
    right_ok = z3.And(defined(b, c), defined(a, bc))
    claims = {
        "idempotent": z3.ForAll([a], z3.And(defined(a, a), join(a, a) == a)),
        "commutative": z3.ForAll([a, b], z3.And(
            defined(a, b) == defined(b, a),
            z3.Implies(defined(a, b), join(a, b) == join(b, a)))),
        "associative": z3.ForAll([a, b, c], z3.And(
            left_ok == right_ok,
            z3.Implies(left_ok, join(ab, c) == join(a, bc)))),
        "least upper bound": z3.ForAll([a, b, u], z3.Implies(defined(a, b), z3.And(
            can_cast(a, ab), can_cast(b, ab),
            z3.Implies(z3.And(can_cast(a, u), can_cast(b, u)), can_cast(ab, u))))),
    }
    report = PromotionReport()
    for name, claim in claims.items():
        s = z3.Solver(ctx=ctx)
        s.add(*axioms)
        s.add(z3.Not(claim))
        if s.check() == z3.unsat:
            report.statuses[name] = "proved"
        else:
            report.statuses[name] = "refuted"
            report.failures[name] = _witness(s.model(), claim)
    report.statuses["extended"], bad = _extension()
    if bad:
        report.failures["extended"] = bad
    report.seconds = time.perf_counter() - t0
    return report


def _witness(model, claim) -> tuple[str, ...]:
    """The dtypes of a counterexample: the quantified variables' values, by name."""
    return tuple(str(d) for d in model.decls())


def _extension() -> tuple[str, tuple[str, ...]]:
    """``promote`` agrees with the table and is commutative on every pair (checked over the
    finite domain: it is NumPy's function, not a table Z3 could read)."""
    for a in promotion.DTYPES:
        for b in promotion.DTYPES:
            p = promotion.promote(a, b)
            hit = promotion.STANDARD.get((a, b))
            if (hit is not None and p != hit) or p != promotion.promote(b, a):
                return "refuted", (a.name, b.name)
    return "proved", ()

"""What is proved about gather (``spec.ops_gather``), whose map reads an index array.

The closed-form proofs of ``verify.operators`` (bijection, forward∘backward) do not apply:
gather's map is data, and its forward direction is a relation (duplicates). What holds for
*every* index array is proved here with the array as an uninterpreted function
``idx: Int -> Int`` over symbolic sizes, each fact under exactly the condition the runtime
checks before a kernel runs:

* ``bounds`` — after the range check ``-n <= idx[k] < n``, the normalized index
  ``norm(idx[k])`` is in ``[0, n)``: the backward map never reads outside the operand.
* ``normalized_sorted_orders_outputs`` — if the normalized index array is non-decreasing
  (checked at run time, O(K)), then ``norm(idx[k1]) < norm(idx[k2])`` implies
  ``k1 < k2``: entries the inner gather emits in input order arrive in output order.
* ``strictly_increasing_is_injective`` — strictly increasing: each input coordinate is read
  by at most one output coordinate (the inner gather on a mode that is not innermost keeps
  order only then).

The outer gather's order (segment ``k`` copied whole, in ``k`` order) follows from its loop
structure for any index array; it needs no fact about the data.

Each is also checked to be *needed*: without its condition Z3 finds a counterexample
(``WRONG_FACTS`` must be refuted), so the proofs cannot pass vacuously.
"""

from __future__ import annotations

import z3

from sparsefold.spec.sizes_z3 import serialized

__all__ = ["FACTS", "WRONG_FACTS", "prove_facts"]


def _norm(v, n):
    return z3.If(v < 0, v + n, v)


@serialized
def _setup():
    n, big_k = z3.Ints("n K")
    idx = z3.Function("idx", z3.IntSort(), z3.IntSort())
    k, k1, k2, j = z3.Ints("k k1 k2 j")
    in_range = z3.ForAll([j], z3.Implies(z3.And(0 <= j, j < big_k),
                                         z3.And(-n <= idx(j), idx(j) < n)))
    m = lambda x: _norm(idx(x), n)  # noqa: E731
    sorted_ = z3.ForAll([k1, k2], z3.Implies(z3.And(0 <= k1, k1 < k2, k2 < big_k),
                                             m(k1) <= m(k2)))
    strictly = z3.ForAll([k1, k2], z3.Implies(z3.And(0 <= k1, k1 < k2, k2 < big_k),
                                              m(k1) < m(k2)))
    return n, big_k, idx, k, k1, k2, in_range, m, sorted_, strictly


def _facts(wrong: bool):
    n, big_k, idx, k, k1, k2, in_range, m, sorted_, strictly = _setup()
    valid = z3.And(0 <= k1, k1 < big_k, 0 <= k2, k2 < big_k)
    return {
        "bounds": ([n >= 0, 0 <= k, k < big_k] + ([] if wrong else [in_range]),
                   z3.And(0 <= m(k), m(k) < n)),
        "normalized_sorted_orders_outputs": (
            [valid] + ([] if wrong else [sorted_]), z3.Implies(m(k1) < m(k2), k1 < k2)),
        "strictly_increasing_is_injective": (
            [valid] + ([] if wrong else [strictly]), z3.Implies(m(k1) == m(k2), k1 == k2)),
    }


@serialized
def _prove(assumptions, claim, timeout_ms: int) -> str:
    s = z3.Solver()
    s.set("timeout", timeout_ms)
    s.add(*assumptions)
    s.add(z3.Not(claim))
    r = s.check()
    if r == z3.unsat:
        return "proved"
    return "refuted" if r == z3.sat else "unknown"


def prove_facts(*, wrong: bool = False, timeout_ms: int = 20000) -> dict[str, str]:
    """``{fact: "proved" | "refuted" | "unknown"}``; ``wrong=True`` drops each fact's
    condition (every one must then be refuted)."""
    return {name: _prove(a, c, timeout_ms) for name, (a, c) in _facts(wrong).items()}


FACTS = tuple(_facts(False))
WRONG_FACTS = FACTS

"""Deciding one obligation: the fallback chain staged → direct → bounded, with Z3's
deterministic resource limit, counterexample shrinking and independent confirmation.

An obligation is given as ``build(mode) -> (reading, assumptions, goal)`` — the builder makes
(or reuses) a :class:`Reading` of that mode, each with its own Z3 context; it is *valid*
when the assumptions imply the goal for all values of the symbols. The chain:

1. ``staged`` reading (named quotients + proved lemma instances), then ``direct`` (Z3's own
   div/mod), each under ``rlimit``. ``unsat`` of the negation is a proof for all sizes.
2. If neither decides, ``bounded``: the direct query with every size ≤ ``bound``; ``unsat``
   there is reported as ``bounded`` (never as ``proved``).

A ``sat`` answer is shrunk toward small sizes and coordinates (0, 1, 2, 3, 4, 8, ...) and
handed to ``confirm``, an evaluation that does not use Z3; only a confirmed model makes the
obligation ``refuted``. An unconfirmed model falls through to the next method and, at the
end, to ``unknown``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import z3

from sparsefold.spec.sizes_z3 import serialized
from sparsefold.verify import lemmas
from sparsefold.verify.results import BOUNDED, PROVED, REFUTED, UNKNOWN
from sparsefold.verify.z3_reading import Reading

__all__ = ["Decision", "decide", "satisfiable", "RLIMIT", "BOUND", "model_values"]

RLIMIT = 3_000_000          # per query; roughly 0.5 s of Z3 work on this machine
SHRINK_RLIMIT = 400_000
BOUND = 8                   # sizes <= BOUND for the bounded fallback

Build = Callable[[str], tuple[Reading, list, z3.BoolRef]]


@dataclass
class Decision:
    status: str
    method: str
    seconds: float
    values: dict[str, int] | None = None    # the confirmed model, for "refuted"
    bound: int | None = None
    note: str = ""
    extra: object = None                    # whatever confirm() returned (a replay)
    work: int = 0                           # Z3 resource units spent (rlimit count)


def model_values(model: z3.ModelRef, reading: Reading) -> dict[str, int]:
    return {name: model.eval(v, model_completion=True).as_long()
            for name, v in reading.vars.items()}


def _is_size(name: str) -> bool:
    return not name.startswith("_")


@serialized
def _solver(reading: Reading, assumptions, rlimit: int) -> z3.Solver:
    s = z3.Solver(ctx=reading.ctx)
    s.set("rlimit", rlimit)
    s.add(*reading.nonneg, *reading.axioms, *assumptions)
    return s


def _shrink(s: z3.Solver, reading: Reading, values: dict[str, int]) -> dict[str, int]:
    """Greedily lower each size, then each coordinate, keeping the query satisfiable: try
    0, 1, 2, 3, 4, 8, half and one less, and repeat from each improvement (a few rounds)."""
    s.set("rlimit", SHRINK_RLIMIT)
    order = sorted(values, key=lambda n: (not _is_size(n), n))
    for name in order:
        v = reading.vars[name]
        for _round in range(8):
            current = values[name]
            improved = False
            for candidate in sorted({0, 1, 2, 3, 4, 8, current // 2, current - 1}):
                if not 0 <= candidate < current:
                    continue
                s.push()
                s.add(v == candidate)
                if s.check() == z3.sat:
                    values = model_values(s.model(), reading)
                    improved = True
                s.pop()
                if improved:
                    break
            if not improved:
                break
        s.add(v == values[name])  # consistent: values come from the latest model
    return values


def decide(build: Build, *, confirm: Callable[[dict[str, int]], object] | None = None,
           rlimit: int = RLIMIT, bound: int = BOUND, methods: Sequence[str] = ("staged", "direct"),
           shrink: bool = True) -> Decision:
    """Decide the validity of ``build``'s obligation. ``confirm(values)`` returns a truthy
    object when the model really violates the obligation (it is stored as ``extra``)."""
    t0 = time.perf_counter()
    notes = []
    for method in methods:
        if method == "staged" and not lemmas.all_proved():
            continue
        reading, assumptions, goal = build(method)
        s = _solver(reading, assumptions, rlimit)
        s.add(z3.Not(goal))
        r = s.check()
        if r == z3.unsat:
            return Decision(PROVED, method, time.perf_counter() - t0, work=_work(s))
        if r == z3.sat:
            values = model_values(s.model(), reading)
            if shrink:
                values = _shrink(s, reading, values)
            evidence = confirm(values) if confirm is not None else True
            if evidence:
                return Decision(REFUTED, method, time.perf_counter() - t0, values,
                                extra=evidence)
            notes.append(f"{method}: model not confirmed")
        else:
            notes.append(f"{method}: resource limit")
    if bound:
        reading, assumptions, goal = build("direct")
        caps = [v <= bound for name, v in reading.vars.items() if _is_size(name)]
        s = _solver(reading, assumptions + caps, rlimit)
        s.add(z3.Not(goal))
        r = s.check()
        if r == z3.unsat:
            return Decision(BOUNDED, "bounded", time.perf_counter() - t0, bound=bound,
                            note="; ".join(notes), work=_work(s))
        if r == z3.sat:
            values = _shrink(s, reading, model_values(s.model(), reading)) if shrink \
                else model_values(s.model(), reading)
            evidence = confirm(values) if confirm is not None else True
            if evidence:
                return Decision(REFUTED, "bounded", time.perf_counter() - t0, values,
                                extra=evidence)
            notes.append("bounded: model not confirmed")
        else:
            notes.append("bounded: resource limit")
    return Decision(UNKNOWN, "", time.perf_counter() - t0, note="; ".join(notes))


def _work(s: z3.Solver) -> int:
    stats = s.statistics()
    return int(stats.get_key_value("rlimit count")) if "rlimit count" in stats.keys() else 0


@serialized
def satisfiable(build_assumptions: Callable[[Reading], list], *, rlimit: int = RLIMIT) -> str:
    """``"sat"``, ``"unsat"`` or ``"unknown"`` for a set of assumptions (vacuity check)."""
    reading = Reading("direct")
    assumptions = build_assumptions(reading)
    s = _solver(reading, assumptions, rlimit)
    return str(s.check())

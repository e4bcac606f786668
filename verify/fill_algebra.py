"""Fill-value facts of the built-in functions (issue 16 item 7; ``spec/fills.py``), proved on
the same C reading as their zero algebra (``verify/zero_algebra.py``).

With fills the lattice asks two more things. (1) Where an operand is implicit it is its
fill, so the lattice evaluates f at the fills (NumPy, as the interpreter does) to decide
whether a union is 0 where nothing is stored; the kernels compute with the C text at the
stored coordinates, where absent operands are their fills: the two readings must agree
on whether f at those values is 0. Proved here for sample fills per kind, on the C reading.
(2) A filled input is ``where(present, stored, c)``: its C reading is ``c`` where nothing
is stored and the stored value elsewhere, for every ``c`` (proved on ``where``'s text).
Annihilation beside a fill needs nothing new: the lattice uses ``annihilates[p]`` only
where argument p is 0 outside its region and the others' fills are finite, which is the
premise ``annihilates[p]`` is proved under.
"""

from __future__ import annotations

import time

import numpy as np
import z3

from sparsefold.spec.functions import ElementwiseFunction
from sparsefold.spec.sizes_z3 import new_context, serialized
from sparsefold.verify.zero_algebra import KINDS, Fact, _decide, _read_kind, _Reader, _Unread

__all__ = ["prove_fill_values", "FILL_SAMPLES"]

FILL_SAMPLES = {"f": (0.0, -0.0, 1.0, -2.0, 0.5, float("nan"), float("inf")),
                "i": (0, 1, -2, 3), "b": (False, True)}


@serialized
def prove_fill_values(fn: ElementwiseFunction) -> list[Fact]:
    """``fills[kind]``: at every tuple of sample fills of ``kind`` (where NumPy computes
    without an integer error), ``f``'s C reading is 0 exactly when NumPy's ``f`` is; and,
    for ``where``, ``fill_form``: the reading of a filled input."""
    import itertools
    facts: list[Fact] = []
    for kind, samples in FILL_SAMPLES.items():
        if _read_kind(fn, kind) is not None:
            continue
        ctx = new_context()
        rd = _Reader(ctx, kind)
        text = fn.c_text(kind)
        t0 = time.perf_counter()
        checked, wrong, unread = 0, [], None
        for values in itertools.product(samples, repeat=fn.arity):
            typed = [np.asarray(v, KINDS[kind]) for v in values]
            try:
                with np.errstate(all="ignore" if kind == "f" else "raise"):
                    numpy_zero = bool(np.asarray(fn.impl(*typed)) == 0)
            except (FloatingPointError, ZeroDivisionError, ValueError, OverflowError):
                continue  # the data's fault in NumPy too (integer division by 0)
            try:
                term = rd.read(text, [rd.const(v) for v in values])
            except _Unread as exc:
                unread = str(exc)
                break
            zero = z3.simplify(rd.is_zero(term))
            c_zero = z3.is_true(zero) if z3.is_true(zero) or z3.is_false(zero) else \
                _decide(ctx, z3.BoolVal(True, ctx), zero)[0] == "proved"
            checked += 1
            if c_zero != numpy_zero:
                wrong.append(f"f({', '.join(_show_sample(v) for v in values)}): C "
                             f"{'==' if c_zero else '!='} 0, NumPy "
                             f"{'==' if numpy_zero else '!='} 0")
        if unread is not None or not checked:
            continue
        status = "refuted" if wrong else "proved"
        detail = "; ".join(wrong[:3]) if wrong else \
            f"zero at {checked} sample fill tuples exactly where NumPy's is"
        facts.append(Fact(f"fills[{kind}]", kind, status, time.perf_counter() - t0, detail))
    if fn.name == "where":
        facts.append(_prove_fill_form(fn))
    return facts


def _show_sample(v) -> str:
    return repr(v) if not isinstance(v, float) or v == v else "nan"


@serialized
def _prove_fill_form(fn: ElementwiseFunction) -> Fact:
    """``where(False, x, c) == c`` and ``where(True, x, c) == x`` bit for bit (NaN and
    ``-0.0`` included), for every double ``x`` and ``c``: a filled input's reading."""
    ctx = new_context()
    rd = _Reader(ctx, "f")
    x, c = rd.var("x"), rd.var("c")
    text = fn.c_text("f")
    t0 = time.perf_counter()
    implicit = rd.read(text, [z3.BoolVal(False, ctx), x, c])
    stored = rd.read(text, [z3.BoolVal(True, ctx), x, c])
    goal = z3.And(implicit == c, stored == x)  # structural equality of IEEE terms
    status, detail = _decide(ctx, z3.BoolVal(True, ctx), goal)
    return Fact("fill_form", "f", status, time.perf_counter() - t0,
                detail or "where(False, x, c) is c, where(True, x, c) is x")

"""A checked numeric probe of the zero algebra where Z3 does not read a function's C text
(``verify.zero_algebra``): transcendental libm calls (``exp``, ``sin``, ``atan2``, ...), a
helper with a loop (integer ``power``), and the kinds the Z3 reading has no sort for
(unsigned integers, complex values).

For each dtype of the kind NumPy has a loop for (bool; int8, int64; uint8, uint64; float32,
float64; complex64, complex128) the probe evaluates the function's NumPy meaning — what the
lattice evaluates (``zero_preserving``) and what the conformance suite ties the kernels to —
on zero, ``-0.0`` and extreme values (±inf, NaN, the smallest subnormal, the largest finite
value, ...):

* ``at_zero``: ``f(0, .., 0)`` per dtype — recorded, not checked: the lattice asks NumPy
  itself per dtype (integer ``reciprocal`` gives 0 in int8 and the smallest int64 in int64,
  C's conversion of inf). The detail says whether ``f(-0.0, ..)`` differs: a stored
  ``-0.0`` is an explicit entry and is computed, so a difference there is not a failure;
* ``annihilates[p]``: ``f(.., 0 at p, ..) == 0`` for every sampled value of the other
  arguments (finite ones only when the function declares ``annihilation_needs_finite``).

A fact that holds on every sample is ``probed`` — never ``proved``: samples are not all
values. One that fails is ``refuted``, with the values.
"""

from __future__ import annotations

import itertools
import time

import numpy as np

__all__ = ["PROBE_DTYPES", "probe_kind", "samples"]

PROBE_DTYPES = {
    "b": (np.dtype(bool),), "i": (np.dtype(np.int8), np.dtype(np.int64)),
    "u": (np.dtype(np.uint8), np.dtype(np.uint64)),
    "f": (np.dtype(np.float32), np.dtype(np.float64)),
    "c": (np.dtype(np.complex64), np.dtype(np.complex128)),
}


def samples(dt: np.dtype) -> np.ndarray:
    """Zero, small values and the extremes of ``dt``."""
    if dt.kind == "b":
        return np.array([False, True])
    if dt.kind in "iu":
        info = np.iinfo(dt)
        vals = [0, 1, 2, 3, 7, info.max, info.max - 1] + ([-1, -2, -3, info.min]
                                                           if dt.kind == "i" else [])
        return np.array(vals, dtype=dt)
    real = np.dtype(dt.char.lower()) if dt.kind == "c" else dt
    info = np.finfo(real)
    reals = np.array([0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 3.0, np.pi, info.smallest_subnormal,
                      -info.smallest_subnormal, info.tiny, info.max, -info.max, np.inf,
                      -np.inf, np.nan], dtype=real)
    if dt.kind == "f":
        return reals
    few = reals[[0, 1, 2, 5, 8, 11, 13, 14, 15]]
    return np.array([complex(a, b) for a, b in itertools.product(few, few)], dtype=dt)


def _is_zero(values) -> np.ndarray:
    return np.asarray(values) == 0


def _call(fn, args):
    with np.errstate(all="ignore"):
        return np.asarray(fn.impl(*args))


def _has_loop(fn, dt) -> bool:
    try:
        _call(fn, [np.zeros(1, dt)] * fn.arity)
    except (TypeError, ValueError):
        return False
    return True


def probe_kind(fn, kind: str, fact_type) -> list:
    """The probed facts of ``fn`` in dtype kind ``kind`` (``fact_type``: the caller's
    ``Fact``), or ``[]`` when NumPy has no loop for the kind."""
    dts = [dt for dt in PROBE_DTYPES[kind] if _has_loop(fn, dt)]
    if not dts:
        return []
    facts = []
    t0 = time.perf_counter()
    zero_ness = {str(dt): bool(_is_zero(_call(fn, [np.zeros((), dt)] * fn.arity)))
                 for dt in dts}
    detail = "; ".join(f"f(0, ..) {'==' if z else '!='} 0 in {d}" for d, z in zero_ness.items())
    if kind in "fc":
        neg = [dt for dt in dts if bool(_is_zero(_call(fn, [np.full((), -0.0, dt)] * fn.arity)))
               != zero_ness[str(dt)]]
        if neg:
            detail += f"; f(-0.0, ..) differs in {', '.join(map(str, neg))}"
    facts.append(fact_type("at_zero", kind, "probed", time.perf_counter() - t0, detail))
    for p in fn.annihilates:
        t0 = time.perf_counter()
        bad = None
        for dt in dts:
            vals = samples(dt)
            if fn.annihilation_needs_finite and dt.kind in "fc":
                vals = vals[np.isfinite(vals)]
            grid = [g.ravel() for g in np.meshgrid(*([vals] * (fn.arity - 1)), indexing="ij")]
            args = grid[:p] + [np.zeros(grid[0].shape if grid else (), dt)] + grid[p:]
            out = _call(fn, args)
            wrong = np.flatnonzero(~_is_zero(out))
            if wrong.size:
                i = wrong[0]
                shown = ", ".join(f"x{q}={a[i]!r}" for q, a in enumerate(args) if q != p)
                bad = f"{dt}: {shown} gives {out.ravel()[i]!r}"
                break
        n = sum(samples(dt).size ** (fn.arity - 1) for dt in dts)
        facts.append(fact_type(
            f"annihilates[{p}]", kind, "refuted" if bad else "probed", time.perf_counter() - t0,
            bad or f"{n} samples in {', '.join(map(str, dts))}"
            + (" (others finite)" if fn.annihilation_needs_finite and kind in "fc" else "")))
    return facts

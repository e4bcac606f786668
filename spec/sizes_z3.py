"""The Z3 reading of the index-expression table (DESIGN §4, STYLE 9): the one translation of
size expressions into Z3 terms, used by the verifier's proofs and by the compiler's order
proofs.

:data:`Z3_TABLE` is built from the NumPy reading (``sizes.NUMPY``) by explicit overrides, the
way tinygrad builds ``z3_alu = python_alu | {...}``: ``add``/``sub``/``mul``/``mod`` keep their
NumPy entries (NumPy applies them to Z3 terms through Python's operators, and Z3's ``mod``
agrees with Python's for the divisors ≥ 1 the language uses); the rest are overridden
because NumPy would ask a Z3 term for its truth value.

Conventions of the reading:

* Unbounded ``Int`` for sizes and coordinates (bit-vector encodings of div/mod time out;
  fixed-width overflow is a separate obligation, see ``verify.obligations``). Every symbol is
  non-negative, as the language says: :class:`Reading` offers ``x >= 0`` for each one.
* Predicates are integers in the language (true is 1); here comparisons give Z3 ``Bool`` and
  the logical operators coerce, so ``and``/``or``/``select`` read naturally.
* ``floordiv``/``mod`` are Z3's Euclidean ``div``/``mod``. They agree with Python's floor
  division and with C's truncating division exactly when the divisor is ≥ 1 and the
  dividend ≥ 0; the verifier proves every place the language divides is such a place.

Two readings are offered. ``direct`` uses Z3's own ``div``/``mod``. ``staged`` names every
quotient and remainder as fresh variables with their defining constraints and adds
instances of the division lemmas (uniqueness of division, ``a // (b*c) == (a // c) // b``,
``a % (b*c) == c*((a // c) % b) + a % c``; ``verify.lemmas`` proves them); nonlinear
row-major maps of rank > 2 are proved this way in milliseconds where the direct query does
not finish.

Threads. Z3's contexts, terms and solvers are not thread-safe, and its Python API frees a
term (``Z3_dec_ref``) in ``__del__``, in whichever thread the garbage collector runs. So:

* every Z3 query of the process runs under one re-entrant lock, :data:`Z3_LOCK`, taken by
  the :func:`serialized` decorator on each function that builds Z3 terms (the compiler's
  order, guard, cost and rule-validity proofs and every prover of ``verify``); and
* every context the process uses — Z3's main context and each :func:`new_context` — has
  Z3's concurrent reference-count decrement on (``Z3_enable_concurrent_dec_ref``): a term
  freed in another thread, or after the lock was released, is queued by Z3 under its own
  mutex and released by the next call of the thread that holds the lock.

``SPARSEFOLD_Z3_STRICT=1`` makes every other Z3 API call of the process raise
:class:`Z3OutsideLock` when its thread does not hold the lock (the stress tests in
``tests/robustness/test_compile_threads.py`` run their children this way), so a missed
entry is found deterministically, not only when two threads happen to collide.
"""

from __future__ import annotations

import functools
import os
import threading
from collections.abc import Callable, Iterable

import z3

from sparsefold.spec import sizes as sz

__all__ = ["Z3_TABLE", "Z3_LOCK", "Reading", "Z3OutsideLock", "as_bool", "as_int",
           "new_context", "serialized"]

# --- threads ---------------------------------------------------------------------------------

Z3_LOCK = threading.RLock()  # held by every thread while it builds or asks Z3 terms


def serialized(fn: Callable) -> Callable:
    """``fn`` run under :data:`Z3_LOCK` (re-entrant: provers calling provers are fine)."""
    @functools.wraps(fn)
    def locked(*args, **kwargs):
        with Z3_LOCK:
            return fn(*args, **kwargs)
    locked.z3_serialized = True
    return locked


def _concurrent(ctx: z3.Context) -> z3.Context:
    z3.Z3_enable_concurrent_dec_ref(ctx.ref())
    return ctx


def new_context() -> z3.Context:
    """A fresh Z3 context whose terms may be freed from any thread."""
    return _concurrent(z3.Context())


class Z3OutsideLock(RuntimeError):
    """Strict mode: a Z3 API call by a thread that does not hold :data:`Z3_LOCK`."""


# Calls that are safe in any thread once concurrent decrements are on (the garbage
# collector's), and those that make or read no context.
_ANY_THREAD = ("_dec_ref", "Z3_del_context", "Z3_get_error_code", "Z3_get_error_msg",
               "Z3_get_version", "Z3_get_full_version", "Z3_mk_config", "Z3_del_config",
               "Z3_set_param_value", "Z3_global_param_set")


def _strict() -> None:
    """Wrap every Z3 API function the Python API calls with a check that this thread
    holds :data:`Z3_LOCK` (``SPARSEFOLD_Z3_STRICT=1``; slow, for stress tests)."""
    import z3.z3 as api
    for name, fn in list(vars(api).items()):
        if not name.startswith("Z3_") or not callable(fn) or \
                any(name.endswith(t) or name == t for t in _ANY_THREAD):
            continue

        def checked(*args, _fn=fn, _name=name):
            if not Z3_LOCK._is_owned():
                raise Z3OutsideLock(f"{_name} called by thread "
                                    f"{threading.current_thread().name} without Z3_LOCK")
            return _fn(*args)
        setattr(api, name, checked)


with Z3_LOCK:
    _concurrent(z3.main_ctx())  # terms the verifier makes in Z3's default context
if os.environ.get("SPARSEFOLD_Z3_STRICT") == "1":
    _strict()


def as_int(x):
    """A Z3 integer term (a predicate becomes 0/1)."""
    return z3.If(x, 1, 0) if z3.is_bool(x) else x


def as_bool(x):
    """A Z3 Boolean term (an integer predicate is true when non-zero)."""
    return x if z3.is_bool(x) else x != 0


def _min(a, b):
    a, b = as_int(a), as_int(b)
    return z3.If(a <= b, a, b)


def _max(a, b):
    a, b = as_int(a), as_int(b)
    return z3.If(a >= b, a, b)


def _select(c, a, b):
    if z3.is_bool(a) and z3.is_bool(b):
        return z3.If(as_bool(c), a, b)
    return z3.If(as_bool(c), as_int(a), as_int(b))


def _compare(fn: Callable) -> Callable:
    return lambda a, b: fn(as_int(a), as_int(b))


# Z3's "/" on Int terms is its Euclidean div (Python's "//" is not defined on Z3 terms).
Z3_TABLE: dict[str, Callable] = sz.NUMPY | {
    "floordiv": lambda a, b: as_int(a) / as_int(b),
    "min": _min,
    "max": _max,
    "lt": _compare(lambda a, b: a < b), "le": _compare(lambda a, b: a <= b),
    "eq": _compare(lambda a, b: a == b), "ne": _compare(lambda a, b: a != b),
    "gt": _compare(lambda a, b: a > b), "ge": _compare(lambda a, b: a >= b),
    "and": lambda a, b: z3.And(as_bool(a), as_bool(b)),
    "or": lambda a, b: z3.Or(as_bool(a), as_bool(b)),
    "not": lambda a: z3.Not(as_bool(a)),
    "select": _select,
}

class Reading:
    """Translates size expressions to Z3 terms, one Z3 ``Int`` per symbol name.

    ``mode`` is ``"direct"`` (Z3's div/mod) or ``"staged"`` (named quotients plus lemma
    instances, collected in :attr:`axioms`). :attr:`nonneg` holds ``x >= 0`` for every
    symbol created so far — the language's convention that sizes and coordinates are
    non-negative.
    """

    def __init__(self, mode: str = "direct", ctx: z3.Context | None = None):
        if mode not in ("direct", "staged"):
            raise ValueError(f"unknown reading {mode!r}")
        self.mode = mode
        # a fresh context per reading: an answer must not depend on what else the process
        # asked Z3 before (term ids steer Z3's heuristics, and so the rlimit a query needs)
        self.ctx = ctx if ctx is not None else new_context()
        self.vars: dict[str, z3.ArithRef] = {}
        self.axioms: list[z3.BoolRef] = []
        self._pairs: dict[tuple[int, int], tuple[z3.ArithRef, z3.ArithRef]] = {}
        self._values: dict[int, list[tuple[z3.ArithRef, z3.BoolRef]]] = {}

    @property
    def table(self) -> dict[str, Callable]:
        # built on demand: storing bound methods on self would make a reference cycle, and
        # Z3 contexts kept alive by cycles make every new context slower
        if self.mode == "direct":
            return Z3_TABLE
        return Z3_TABLE | {"floordiv": self._floordiv, "mod": self._mod}

    # --- symbols --------------------------------------------------------------------------
    def var(self, name: str) -> z3.ArithRef:
        """The Z3 integer for a symbol (created on first use; non-negative)."""
        v = self.vars.get(name)
        if v is None:
            v = self.vars[name] = z3.Int(name, self.ctx)
        return v

    @property
    def nonneg(self) -> list[z3.BoolRef]:
        return [v >= 0 for v in self.vars.values()]

    def leaf(self, e: sz.Expr):
        if isinstance(e, sz.Const):
            return z3.IntVal(e.value, self.ctx)
        return self.var(e.name)

    def term(self, e: sz.ExprLike, env: dict | None = None):
        """The Z3 term of ``e``; ``env`` may bind symbol names to Z3 terms instead."""
        if env:
            def leaf(x):
                if isinstance(x, sz.Sym) and x.name in env:
                    return env[x.name]
                return self.leaf(x)
        else:
            leaf = self.leaf
        return sz.read(e, self.table, leaf)

    def pred(self, e: sz.ExprLike, env: dict | None = None) -> z3.BoolRef:
        return as_bool(self.term(e, env))

    def int(self, e: sz.ExprLike, env: dict | None = None) -> z3.ArithRef:
        return as_int(self.term(e, env))

    # --- the staged division encoding -------------------------------------------------------
    def _floordiv(self, a, b):
        a, b = as_int(a), as_int(b)
        if z3.is_mul(b) and len(b.children()) == 2:
            # lemma "nested": a // (x*y) == (a // y) // x for x, y >= 1
            x, y = b.children()
            q, _ = self._pair(a, b)
            nested = self._floordiv(self._floordiv(a, y), x)
            self.axioms.append(z3.Implies(z3.And(x >= 1, y >= 1), q == nested))
            return nested
        return self._pair(a, b)[0]

    def _mod(self, a, b):
        a, b = as_int(a), as_int(b)
        if z3.is_mul(b) and len(b.children()) == 2:
            # lemma "nested_mod": a % (x*y) == y*((a // y) % x) + a % y for x, y >= 1
            x, y = b.children()
            _, r = self._pair(a, b)
            nested = y * self._mod(self._floordiv(a, y), x) + self._mod(a, y)
            self.axioms.append(z3.Implies(z3.And(x >= 1, y >= 1), r == nested))
            return nested
        return self._pair(a, b)[1]

    def _pair(self, a, b):
        """Quotient and remainder of ``a`` by ``b`` as fresh variables (lemma "euclid")."""
        key = (a.get_id(), b.get_id())
        if key in self._pairs:
            return self._pairs[key]
        n = len(self._pairs)
        q, r = z3.Int(f"_q{n}", self.ctx), z3.Int(f"_r{n}", self.ctx)
        self._pairs[key] = (q, r)
        pos = b >= 1
        self.axioms.append(z3.Implies(pos, z3.And(a == b * q + r, 0 <= r, r < b)))
        # lemma "small": 0 <= a < b  ==>  a // b == 0 and a % b == a
        self.axioms.append(z3.Implies(z3.And(pos, 0 <= a, a < b), z3.And(q == 0, r == a)))
        # lemma "uniqueness": a == t*b + s with 0 <= s < b  ==>  a // b == t and a % b == s
        for t, s, premise in self._decompositions(a, b):
            self.axioms.append(z3.Implies(z3.And(pos, 0 <= s, s < b, premise),
                                          z3.And(q == t, r == s)))
            known = z3.And(pos, 0 <= s, s < b, premise)
            self._values.setdefault(q.get_id(), []).append((t, known))
        return q, r

    def _decompositions(self, a, b) -> Iterable[tuple]:
        """Ways to read ``a`` as ``t*b + s`` syntactically, looking through quotients whose
        value an earlier uniqueness instance established (under a premise)."""
        candidates = [(a, z3.BoolVal(True, self.ctx))] + self._values.get(a.get_id(), [])
        for value, premise in candidates:
            for t, s in _linear_in(value, b):
                yield t, s, premise


def _linear_in(a, b) -> Iterable[tuple]:
    """``(t, s)`` with ``a`` syntactically ``t*b + s`` (or ``b*t + s``, or ``t*b``)."""
    if z3.is_add(a) and len(a.children()) == 2:
        x, y = a.children()
        for m, s in ((x, y), (y, x)):
            for t in _factor_out(m, b):
                yield t, s
    for t in _factor_out(a, b):
        yield t, z3.IntVal(0, a.ctx)


def _factor_out(m, b) -> Iterable:
    if z3.is_mul(m) and len(m.children()) == 2:
        u, v = m.children()
        if z3.eq(v, b):
            yield u
        if z3.eq(u, b):
            yield v

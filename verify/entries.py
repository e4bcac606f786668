"""Operator entries are checked before the compiler relies on their maps (issue 12, part 1).

The compiler streams a sparse operand through an entry's *forward* maps and reads located
operands through its *backward* maps; it assumes what the entry's obligations state
(``verify.obligations``): bijection on the domain, bounds, disjoint pieces, divisors ≥ 1.
:func:`check_entry` is what the compiler is handed (``compiler.pipeline.OperatorCheck``;
``sf.jit`` wires it, as it wires the rule prover into the optimize pass):

* a **built-in** entry (``spec.SHAPE_OPERATORS``) is proved once, in CI, by
  ``sparsefold prove`` over its configurations: ``None`` (proved);
* a **user** entry is proved on first use — the node's structure with its sizes abstracted
  to symbols (``operators.abstract_instance``), so one proof serves every size — and the
  result is cached for the process by the entry's *definition* (its class and the code of
  its methods: redefining or patching a method proves again):

  - proved → ``None``;
  - refuted → :class:`IllFormedProgram` with the counterexample;
  - not decided (unknown, bounded, vacuous) → :class:`IllFormedProgram`, unless the user
    trusts the entry (``sf.apply_operator(Op, ..., trust=True)``, :func:`trust`, or
    ``trust = True`` in the class body). A trusted entry is compiled with run-time checks:
    the size conditions returned here (its divisors ≥ 1) are checked before the kernel
    runs, and the compiler computes the operator in a stage of its own whose output
    coordinates and dense reads are range-checked (``compiler.lower.bounds.MapChecked``).

A refuted entry is refused even when trusted: a confirmed counterexample says its maps are
wrong, and a kernel would compute something other than its definition.
"""

from __future__ import annotations

import hashlib
import threading
import weakref

from sparsefold.spec import SHAPE_OPERATORS
from sparsefold.spec import sizes as sz
from sparsefold.spec.errors import IllFormedProgram
from sparsefold.spec.ir import ShapeOp
from sparsefold.verify.results import PROVED, REFUTED, ProofResult
from sparsefold.verify.z3_reading import division_sites

__all__ = ["check_entry", "prove_entry", "trust", "is_trusted", "definition_key",
           "runtime_conditions", "clear_cache"]

_TRUSTED: weakref.WeakSet = weakref.WeakSet()
_PROOFS: dict[tuple, ProofResult] = {}
_LOCK = threading.Lock()


def trust(cls: type) -> type:
    """Trust the entry ``cls`` when its proof is not decided (unknown or bounded): kernels
    run with run-time checks instead of being refused. Returns ``cls`` (usable as a
    decorator). A refuted entry stays refused."""
    if not (isinstance(cls, type) and issubclass(cls, ShapeOp)):
        raise IllFormedProgram(f"trust: expected a ShapeOp subclass, found {cls!r}")
    _TRUSTED.add(cls)
    return cls


def is_trusted(cls: type) -> bool:
    return cls in _TRUSTED or getattr(cls, "trust", False) is True


def _builtin(cls: type) -> bool:
    return any(cls is c for c in SHAPE_OPERATORS.values())


def _code_digest(h, obj, seen: set[int]) -> None:
    code = getattr(obj, "__code__", None)
    if code is None or id(code) in seen:
        return
    seen.add(id(code))
    h.update(code.co_code)
    h.update(repr(code.co_names).encode())
    for c in code.co_consts:
        if hasattr(c, "co_code"):
            _code_digest(h, type("f", (), {"__code__": c})(), seen)
        else:
            h.update(repr(c).encode())


def definition_key(cls: type) -> str:
    """A digest of the entry's definition: the code of every method its classes (below
    ``ShapeOp``) define, with their names and constants."""
    h = hashlib.sha256()
    seen: set[int] = set()
    for klass in cls.__mro__:
        if klass is ShapeOp or not issubclass(klass, ShapeOp):
            continue
        h.update(klass.__qualname__.encode())
        for name, attr in sorted(vars(klass).items()):
            fn = getattr(attr, "__func__", attr)
            if callable(fn):
                h.update(name.encode())
                _code_digest(h, fn, seen)
    return h.hexdigest()[:16]


def clear_cache() -> None:
    with _LOCK:
        _PROOFS.clear()


def prove_entry(node: ShapeOp) -> ProofResult:
    """The obligations of ``node``'s entry on its structure with sizes abstracted (cached
    per definition and structure)."""
    from sparsefold.verify.operators import abstract_instance, prove_instance
    instance = abstract_instance(node)
    key = (type(node), definition_key(type(node)), instance)
    with _LOCK:
        hit = _PROOFS.get(key)
    if hit is not None:
        return hit
    result = prove_instance(instance, with_properties=False)
    with _LOCK:
        _PROOFS[key] = result
    return result


def runtime_conditions(node: ShapeOp) -> tuple[tuple[sz.Expr, str], ...]:
    """The size conditions a trusted, unproved entry's maps need at run time: each divisor
    of its guards and maps is ≥ 1 (a division by zero would stop the process). A divisor
    that depends on coordinates cannot be checked once per call: refused."""
    name = type(node).__name__.lower()
    out: list[tuple[sz.Expr, str]] = []
    for p in node.index_map().pieces:
        for e in (p.guard, p.forward_guard, *p.backward, *(f for f in p.forward if f is not None)):
            for _, _, divisor in division_sites(e):
                coords = [s for s in sz.free_symbols(divisor) if s.startswith("_")]
                if coords:
                    raise IllFormedProgram(
                        f"operator {name} is not proved and divides by {divisor}, which "
                        f"depends on coordinates: it cannot be checked at run time; prove "
                        f"its entry (verify.prove_operator)")
                cond = (sz.ge(divisor, 1), f"operator {name} (maps not proved) divides by "
                                           f"{divisor}, which must be >= 1")
                if cond[0] != sz.TRUE and cond not in out:
                    out.append(cond)
    return tuple(out)


def _printable(node: ShapeOp) -> None:
    """The entry's maps must be printable as C (a symbol that is no identifier is rejected
    with the compiler's own message), before anything is proved about them."""
    for p in node.index_map().pieces:
        for e in (p.guard, p.forward_guard, *p.backward, *(f for f in p.forward if f is not None)):
            sz.to_c(e)


def check_entry(node: ShapeOp) -> tuple[tuple[sz.Expr, str], ...] | None:
    """The compiler's operator check (``compiler.pipeline.OperatorCheck``): ``None`` when
    ``node``'s entry is proved, the run-time conditions when it is trusted but not proved;
    raises :class:`IllFormedProgram` when it is refuted, or not proved and not trusted."""
    cls = type(node)
    if _builtin(cls):
        return None  # proved in CI over the entry's configurations (sparsefold prove)
    _printable(node)
    result = prove_entry(node)
    status = result.status
    name = cls.__name__.lower()
    if status == PROVED:
        return None
    if status == REFUTED:
        bad = [o for o in result.obligations if o.status == REFUTED]
        cx = result.counterexample
        raise IllFormedProgram(
            f"operator {name} is wrong: its obligation {bad[0].name} is refuted on "
            f"{result.name}"
            + (f" ({cx})" if cx is not None else "") + "; the compiler relies on it, so the "
            "operator is not compiled (verify.prove_operator shows every obligation)")
    if not is_trusted(cls):
        undecided = ", ".join(f"{o.name}: {o.status}" for o in result.obligations
                              if o.status != PROVED)
        raise IllFormedProgram(
            f"operator {name} is not proved ({undecided}); the compiler relies on its maps. "
            f"Pass trust=True to sf.apply_operator (or set trust = True on the class) to "
            f"run it with run-time checks")
    return runtime_conditions(node)

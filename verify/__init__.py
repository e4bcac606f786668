"""sparsefold.verify — machine-checked index maps and rewrite rules (DESIGN §4).

    from sparsefold import verify
    verify.prove_operator("collapse")          # every obligation of the collapse entry
    r = verify.prove_equal(lhs, rhs)           # two programs with symbolic sizes
    r.status                                   # "proved" | "proved-real" | "refuted" | ...
    r.counterexample                           # None, or .replay() / .as_test()
    verify.prove_kernel(sf.jit(f), *examples)  # what the compiler relies on for one kernel
    sf.jit(f, certify=True)                    # kernels whose headers carry that digest
    verify.order_preserving(node)              # the proved order property of an operator
    verify.rewrite(program)                    # the optimize pass with proved rules only
    verify.differential(fn, *inputs_or_strategies, out="csr", time_limit=60)
                                               # compiled == interpreted, calls time-limited
    verify.programs()                          # Hypothesis strategy of random programs

Modules, in reading order: ``z3_reading`` (obligation walkers; the Z3 reading of sizes is
``spec.sizes_z3``), ``lemmas``, ``solver`` (staged → direct → bounded, deterministic
``rlimit``), ``results``, ``obligations`` + ``operators`` (operator entries), ``encode`` +
``equal`` (programs), ``replay`` (counterexamples through the interpreter), ``rules``
(proving the rules of ``spec.catalog``) + ``wrong_rules``, ``rewrite`` (the compiler's
optimize pass with these proofs), ``cli`` (``sparsefold prove``), ``differential``
(compiled kernels against the interpreter), ``entries`` (operator entries checked before
compiling), ``zero_algebra`` (functions' zero facts on their C text), ``coverage`` (a plan's
pieces cover exactly the output support; the counting-sort reorder), ``reads`` (located
reads within bounds), ``kernels``
(per-kernel certificates), ``limited`` (a compiled call under a time limit). ``strategies`` and
``random_programs`` (Hypothesis, a test dependency) are imported on their own.
"""

from sparsefold.verify.catalog import RULES, get_rule
from sparsefold.verify.differential import DifferentialError, differential
from sparsefold.verify.equal import prove_equal, smt2
from sparsefold.verify.kernels import KernelCertificate, prove_kernel
from sparsefold.verify.operators import (
    order_preserving,
    order_status,
    prove_instance,
    prove_operator,
)
from sparsefold.verify.results import (
    BOUNDED,
    PROVED,
    PROVED_REAL,
    REFUTED,
    STATUSES,
    UNKNOWN,
    VACUOUS,
    Outcome,
    ProofResult,
)
from sparsefold.verify.rewrite import rewrite
from sparsefold.verify.rules import Rule, prove_rule, rule
from sparsefold.verify.wrong_rules import WRONG_RULES

__all__ = [
    "prove_operator", "prove_instance", "order_preserving", "order_status", "prove_equal",
    "smt2", "Rule", "rule", "prove_rule", "RULES", "WRONG_RULES", "get_rule", "rewrite",
    "ProofResult", "Outcome", "STATUSES", "PROVED", "PROVED_REAL", "BOUNDED", "REFUTED",
    "UNKNOWN", "VACUOUS", "differential", "DifferentialError", "programs", "prove_kernel",
    "KernelCertificate",
]


def programs(**kwargs):
    """Random well-typed programs: ``verify.strategies.programs`` (needs Hypothesis, a test
    dependency, so it is imported on first use)."""
    from sparsefold.verify.strategies import programs as _programs
    return _programs(**kwargs)

"""sparsefold.compiler.fallback — a program evaluated at once, without compiling it: the
first answer of a tiered call (``sparsefold.tiering``) while its kernel builds.

A vectorized NumPy/scipy evaluator of the spec IR over sparse storage (DESIGN §3's
"never densify a sparse input" holds here too: memory O(inputs + output)). Imports
``spec`` and ``storage`` only — none of the compiler's passes — so it is an independent
reading of the language, differential-tested against the compiled kernels
(``tests/compiler/test_fallback.py``)::

    plan = FallbackPlan(program, "csr", requires)   # Unsupported: not covered
    result = plan(values, library="scipy")          # Declined: not answered; else the
                                                    # result the kernel would return

``covers(program, out)`` says why a program is not covered (None when it is).
"""

from sparsefold.compiler.fallback.plan import (
    MAX_ENTRIES,
    SLOWER_THAN_BUILDING,
    FallbackPlan,
    Unsupported,
)
from sparsefold.compiler.fallback.values import Declined

__all__ = ["FallbackPlan", "Unsupported", "Declined", "covers", "MAX_ENTRIES",
           "SLOWER_THAN_BUILDING"]


def covers(program, out: str) -> str | None:
    """None when the fallback evaluates ``program`` into ``out``, else why not."""
    try:
        FallbackPlan(program, out)
    except Unsupported as exc:
        return str(exc)
    return None

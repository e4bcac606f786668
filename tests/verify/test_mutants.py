"""The mutation check (issue #27): each known bug injected into a copy of the compiler
(``verify.mutants``, a child process per mutant) is caught by random programs over the
whole language within a budget. A generator that cannot catch an injected bug is not done.
"""

import pytest

from sparsefold.verify.mutants import MUTANTS, run_mutant

pytestmark = pytest.mark.cython

# the seed of tests/verify/test_language_programs.py: the programs a mutant leaves
# unchanged reuse the kernels that test built
SEED, PROGRAMS, SECONDS = 2027, 120, 900


@pytest.mark.parametrize("name", sorted(MUTANTS))
def test_mutant_is_caught(name):
    result = run_mutant(name, programs=PROGRAMS, seed=SEED, time_budget=SECONDS)
    assert result["caught"], f"mutant {name} ({MUTANTS[name][0]}) not caught: {result}"

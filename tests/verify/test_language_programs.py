"""Random programs over the whole language, compiled against the interpreter (issue #27): a
bounded run of ``sparsefold fuzz --programs`` in this process. Every program must agree with
the interpreter (values, dtype, canonical storage) and its plan must do no dense work (a
product of extents with sparse inputs and output); the scale check (timing) runs in
``sparsefold fuzz --programs``, not here. A failure prints the program as a regression
test."""

import pytest

from sparsefold.verify import program_fuzz

pytestmark = pytest.mark.cython

SEED, COUNT = 2027, 60
_CASES = program_fuzz.generate(SEED, COUNT)
_OK = ("correct", "unsupported", "ill-formed")


@pytest.mark.parametrize("case", _CASES, ids=[f"p{c.index}" for c in _CASES])
def test_generated_program(case):
    outcome, detail, info = program_fuzz.check(case, scale=False)
    assert outcome in _OK, f"{outcome}: {case.source} out={case.out}\n{detail}\n" \
                           f"{program_fuzz.as_test(case)}"


def test_few_are_unsupported_or_ill_formed():
    # the generator draws programs the compiler runs: refusals stay a small minority
    results = [program_fuzz.check(c, scale=False)[0] for c in _CASES[:20]]
    assert sum(r in ("unsupported", "ill-formed") for r in results) <= 5, results

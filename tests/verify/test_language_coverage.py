"""The random-program generator sees the whole language (issue #27): every public form has a
row (or a stated reason why no program builds it), and sampled programs reach every spec
entry, elementwise function and monoid — so an operator added without a generator fails
here, before the differential tests could miss it."""

from collections import Counter

import pytest
from hypothesis import HealthCheck, Phase, given, seed, settings

import sparsefold as sf
from sparsefold.spec.printer import topological
from sparsefold.verify.language import (
    NOT_DRAWN,
    drawn_names,
    language_programs,
    language_table,
    surface,
)

# the rarest rows (binary functions of a restricted domain: atan2, bitwise_and) come out
# about 5 times in 1500 programs, which left some undrawn by chance; 4000 (~30 s, no kernel)
SAMPLES = 4000


def test_every_public_form_has_a_generator():
    drawn = drawn_names()
    missing = sorted(n for n in surface() if n not in drawn and n not in NOT_DRAWN)
    assert not missing, f"public forms no random program draws (add a row to " \
                        f"verify/language.py, or a reason to NOT_DRAWN): {missing}"
    stale = sorted(n for n in NOT_DRAWN if n in drawn or n not in surface())
    assert not stale, f"NOT_DRAWN names that are drawn, or no longer public: {stale}"
    assert all(reason.strip() for reason in NOT_DRAWN.values())


def test_a_new_function_is_drawn_with_no_other_code():
    # elementwise rows are derived from spec.FUNCTIONS as it is when the table is built
    from sparsefold.spec.functions import FUNCTIONS as table
    table_names = {k[3:] for k in language_table() if k.startswith("fn:")}
    assert table_names == set(table)


@pytest.fixture(scope="module")
def sample():
    """Programs of the generator as CI draws them (no kernel is built)."""
    programs = []

    @seed(27)
    @settings(max_examples=SAMPLES, database=None, phases=[Phase.generate], deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(language_programs())
    def collect(p):
        programs.append(p)
    collect()
    return programs


def _nodes(program):
    return topological(program(*program.inputs).node)


_REACHED = """
import json
from hypothesis import HealthCheck, Phase, given, seed, settings
from sparsefold.spec import FUNCTIONS, MONOIDS, SHAPE_OPERATORS
from sparsefold.spec.compute import Map, Reduce
from sparsefold.spec.ops_gather import Gather
from sparsefold.spec.printer import topological
from sparsefold.verify.language import language_programs
kinds, functions, monoids = set(), set(), set()

@seed(27)
@settings(max_examples={samples}, database=None, phases=[Phase.generate], deadline=None,
          suppress_health_check=list(HealthCheck))
@given(language_programs())
def collect(p):
    for n in topological(p(*p.inputs).node):
        kinds.add(type(n).__name__)
        if isinstance(n, Map):
            functions.add(n.fn.name)
        if isinstance(n, Reduce):
            monoids.add(n.monoid if isinstance(n.monoid, str) else n.monoid.name)
collect()
entries = {{c.__name__ for c in SHAPE_OPERATORS.values()}} | {{Gather.__name__}}
print(json.dumps({{"entries": sorted(entries - kinds),
                  "functions": sorted(set(FUNCTIONS) - functions),
                  "monoids": sorted(set(MONOIDS) - monoids)}}))
"""


def test_sampled_programs_reach_every_entry_function_and_monoid():
    # in a fresh interpreter: the sample depends on the table of functions, which other
    # tests of a worker extend (register_function), and an extended table shifts every
    # draw (in one xdist worker copysign went undrawn)
    import json
    import subprocess
    import sys
    done = subprocess.run([sys.executable, "-c", _REACHED.format(samples=SAMPLES)],
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    missing = json.loads(done.stdout.strip().splitlines()[-1])
    assert not missing["entries"], f"spec entries no sampled program uses: " \
                                   f"{missing['entries']}"
    assert not missing["functions"], \
        f"functions no sampled program applies: {missing['functions']}"
    assert not missing["monoids"], f"monoids never reduced: {missing['monoids']}"


def test_depths_reach_five(sample):
    def depth(t):
        return max([0] + [depth(a) for a in t.args]) + (t.op != "input")
    depths = Counter(depth(p.root) for p in sample)
    assert max(depths) >= 5 and min(depths) >= 1, dict(depths)


_CANONICAL = {"float64": [(3, 4), (4,), (2, 3, 4), (1, 4), (4, 1), ()],
              "int64": [(3, 4), (4,)], "bool": [(3, 4), (4,)]}


@pytest.mark.parametrize("key", sorted(language_table()))
def test_every_row_builds_a_program(key):
    """Each row, on some canonical input it applies to, draws parameters and builds (a row
    that never builds would draw nothing)."""
    import numpy as np
    from hypothesis import strategies as st

    from sparsefold.spec.errors import IllFormedProgram
    from sparsefold.verify.language import LANGUAGE_LIMITS
    from sparsefold.verify.random_programs import _leaf
    op = language_table()[key]
    inputs = [(dt, shape) for dt, shapes in _CANONICAL.items() for shape in shapes
              if op.requires(shape, LANGUAGE_LIMITS)]
    assert inputs, f"{key}: applies to none of the canonical shapes"
    built = []

    @seed(len(key))
    @settings(max_examples=40, database=None, phases=[Phase.generate], deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(st.data())
    def attempt(data):
        dt, shape = data.draw(st.sampled_from(inputs))
        x = sf.asarray((np.arange(1, 1 + int(np.prod(shape))) % 3).astype(dt).reshape(shape))
        params = dict(op.draw(data.draw, shape, LANGUAGE_LIMITS))
        more = [data.draw(_leaf(LANGUAGE_LIMITS, tuple(w))).lazy
                for w in params.pop("operands", [])]
        try:
            built.append(op.build(x, *more, **params))
        except IllFormedProgram:
            pass
    attempt()
    assert built, f"{key}: no drawn use built a program"


def test_inputs_cover_every_storage(sample):
    from sparsefold.verify.program_fuzz import _brief
    kinds = {_brief(a).rstrip("0123456789()fil") for p in sample for a in p.inputs}
    ranks = {getattr(a, "ndim", 0) for p in sample for a in p.inputs
             if type(a).__module__.startswith(("scipy", "sparse"))}
    fills = any(getattr(a, "fill_value", 0) != 0 for p in sample for a in p.inputs)
    assert {"csr", "csc", "coo", "dense", "pydata"} <= kinds, kinds
    assert 3 in ranks and fills


def test_the_stack_index_family_is_drawn(sample):
    # the programs of issue #27's silent wrong result: a stacked axis indexed by an integer
    found = [p.source for p in sample if "sf.stack(" in p.source and "[" in p.source.split(
        "sf.stack(", 1)[1].split(")", 1)[-1][:6]]
    assert found, "no sampled program indexes a stack"
    assert sf.stack  # (the public function the row draws)

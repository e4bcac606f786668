"""Every conformance test that evaluates a program takes an ``engine`` (``engines.py``):
the interpreter, or a compiled kernel with out="csr", "csc", "coo" or "dense".

Which cases run on which engine (the README of this folder says why):

* the interpreter runs **every** case;
* the compiled engines run a stratified subset: per test function, ``CASES_PER_FUNCTION``
  of its cases spread evenly over its parameter list (first and last included), each on
  the next compiled engine in a rotation that runs through the whole suite — so every test
  function is compiled, and the four output formats get a quarter of the compiled cases
  each. ``SPARSEFOLD_CONFORMANCE=all`` runs every case on every engine (tens of minutes:
  each case is its own kernel); ``SPARSEFOLD_CONFORMANCE=<n>`` takes n cases per function.

The compiled items not in the subset are deselected (pytest reports how many).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

_HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(_HERE))  # --import-mode=importlib: engines.py is found from here
from engines import COMPILED, ENGINES, Engine  # noqa: E402

CASES_PER_FUNCTION = 3


def pytest_generate_tests(metafunc):
    if "engine" in metafunc.fixturenames:
        metafunc.parametrize("engine", ENGINES, indirect=True)


@pytest.fixture
def engine(request) -> Engine:
    return Engine(request.param, request)


def _spread(n: int, k: int) -> list[int]:
    """``k`` indices spread evenly over ``range(n)``, the first and last included."""
    if k >= n:
        return list(range(n))
    if k == 1:
        return [n // 2]
    return sorted({round(i * (n - 1) / (k - 1)) for i in range(k)})


def pytest_collection_modifyitems(config, items):
    policy = os.environ.get("SPARSEFOLD_CONFORMANCE", str(CASES_PER_FUNCTION))
    if policy == "all":
        return
    per_function = int(policy)
    cases: dict[tuple, list[tuple]] = {}   # function -> its cases, in collection order
    compiled: dict[tuple, pytest.Item] = {}
    for item in items:
        spec = getattr(item, "callspec", None)
        if spec is None or "engine" not in spec.params or _HERE not in item.path.parents:
            continue
        engine = spec.params["engine"]
        function = (str(item.path), item.originalname)
        case = tuple(sorted((k, i) for k, i in spec.indices.items() if k != "engine"))
        ids = cases.setdefault(function, [])
        if case not in ids:
            ids.append(case)
        if engine != "interp":
            compiled[(function, case, engine)] = item
    keep = set()
    rotation = 0
    for function, ids in cases.items():
        for j, index in enumerate(_spread(len(ids), per_function)):
            engine = COMPILED[(rotation + j) % len(COMPILED)]
            keep.add((function, ids[index], engine))
        rotation += min(per_function, len(ids))
    deselected = [item for key, item in compiled.items() if key not in keep]
    if deselected:
        drop = {id(item) for item in deselected}
        config.hook.pytest_deselected(items=deselected)
        items[:] = [item for item in items if id(item) not in drop]

"""The generated language reference: docs/language.md must be exactly what the spec renders,
document every operator, function, monoid and format, and its derived-operator programs must
be the ones the front end builds (and mean what NumPy means)."""

from __future__ import annotations

import difflib
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import sparsefold as sf
from sparsefold.spec import FUNCTIONS, MONOIDS, SHAPE_OPERATORS, docgen
from sparsefold.spec import sizes as sz
from sparsefold.spec.formats import FORMAT_NAMES

ROOT = Path(__file__).resolve().parents[2]

DOC = ROOT / "docs" / "language.md"
REGENERATE = "regenerate it with: python -m sparsefold.spec.docgen > docs/language.md"


@pytest.fixture(scope="module")
def rendered() -> str:
    return docgen.render()


def test_committed_reference_is_the_rendered_one(rendered):
    assert DOC.exists(), f"docs/language.md is missing; {REGENERATE}"
    committed = DOC.read_text(encoding="utf-8")
    if committed != rendered:
        diff = "\n".join(list(difflib.unified_diff(
            committed.splitlines(), rendered.splitlines(), "docs/language.md", "render()",
            lineterm="", n=1))[:40])
        pytest.fail(f"docs/language.md is out of date with the spec; {REGENERATE}\n{diff}")


def test_module_entry_point_prints_the_reference(rendered):
    # a fresh interpreter: also shows the reference does not depend on test-time state
    out = subprocess.run([sys.executable, "-m", "sparsefold.spec.docgen"], check=True,
                         capture_output=True, text=True, cwd=ROOT).stdout
    assert out == rendered


def test_every_shape_operator_is_documented(rendered):
    for name, cls in SHAPE_OPERATORS.items():
        assert f"### `{name}` ({cls.__name__})" in rendered, f"{name} is not documented"
        assert name in docgen.EXAMPLES
        first_line = cls.__doc__.strip().splitlines()[0]
        assert first_line in rendered


def test_every_function_monoid_format_and_index_operator_is_documented(rendered):
    for name, fn in FUNCTIONS.items():
        assert f"| `{name}` | {fn.arity} |" in rendered, f"function {name} is not documented"
    for name in MONOIDS:
        assert f"| `{name}` |" in rendered, f"monoid {name} is not documented"
    for name in FORMAT_NAMES:
        assert f"| `{name}` |" in rendered, f"format {name} is not documented"
    for name in sz.OPS:
        assert f"| `{name}` |" in rendered, f"index operator {name} is not documented"
    for name in docgen.DERIVED:
        assert f"### `{name}`" in rendered


@pytest.mark.parametrize("name", sorted(docgen.EXAMPLES))
def test_examples_instantiate_their_operator_and_print_its_maps(name, rendered):
    for call, build in docgen.EXAMPLES[name]:
        node = build()
        assert type(node) is SHAPE_OPERATORS[name]
        assert f"*Example:* `{call}`" in rendered
        im = node.index_map()
        section = rendered.split(f"*Example:* `{call}`")[1].split("*Example:*")[0]
        assert str(im.out_shape[0]) in section if im.out_shape else True
        for piece in im.pieces:
            for e in piece.backward + tuple(x for x in piece.forward if x is not None):
                assert str(e) in section, f"{name}: map {e} missing from its section"


def test_an_operator_without_an_example_is_an_error(monkeypatch):
    class Mystery(SHAPE_OPERATORS["squeeze"]):
        """A stand-in for a newly added operator."""
    monkeypatch.setitem(SHAPE_OPERATORS, "mystery", Mystery)
    with pytest.raises(KeyError, match="no documentation example for shape operator"):
        docgen.render()


# --- the derived operators are what the front end builds -------------------------------------

def _front_end() -> dict[str, list]:
    A, B = sf.symbol("A", shape=("I", "J")), sf.symbol("B", shape=("I", "K"))
    A3 = sf.symbol("A", shape=("I", "J", "K"))
    I, J, K = (sz.Sym(s) for s in "IJK")  # noqa: E741 - the sizes' names in the reference
    v, w = sf.symbol("v", shape=("N",)), sf.symbol("w", shape=("N",))
    return {
        "reshape": [sf.reshape(A3, (I, J * K)), sf.reshape(A, (-1,)),
                    sf.reshape(sf.symbol("A", shape=(I * J,)), (I, J))],
        "stack": [sf.stack([A, sf.symbol("B", shape=("I", "J"))], axis=0)],
        "hstack": [sf.hstack([A, B]), sf.hstack([v, sf.symbol("w", shape=("K",))])],
        "vstack": [sf.vstack([A, sf.symbol("B", shape=("K", "J"))]), sf.vstack([v, w])],
        "matmul": [A @ sf.symbol("B", shape=("J", "K")), A @ sf.symbol("x", shape=("J",))],
        "tensordot": [sf.tensordot(A3, sf.symbol("B", shape=("J", "K", "N")), axes=2)],
        "dot": [sf.dot(A3, sf.symbol("B", shape=("N", "K", "J")))],
        "outer": [sf.outer(v, sf.symbol("w", shape=("K",)))],
        "vecdot": [sf.vecdot(A, sf.symbol("B", shape=("I", "J")))],
        "einsum": [sf.einsum("ij,jk,kl->il", A, sf.symbol("B", shape=("J", "K")),
                             sf.symbol("C", shape=("K", "N"))),
                   sf.einsum("ii->i", sf.symbol("A", shape=("N", "N")))],
        "swapaxes / matrix_transpose": [sf.symbol("A", shape=("N", "I", "J")).mT],
        "tile / repeat": [sf.tile(A, (2, 3)), sf.repeat(A, 2, axis=0)],
        "diff": [sf.diff(A, axis=1)],
        "reshape(order='F')": [A.reshape((J, I), order="F")],
        "block_array": [sf.block_array([[A, None], [None, sf.symbol("B", shape=("K", "N"))]])],
        "gather: x[i], take, compress, boolean masks": [
            A[:, sf.symbol("i", shape=("K",), dtype="int64")],
            sf.symbol("A", shape=("I", "J", "N"))[sf.symbol("i", shape=("K",), dtype="int64"),
                                                 :, sf.symbol("j", shape=("K",),
                                                              dtype="int64")]],
        "mean": [sf.mean(A, axis=1)],
        "var / std": [sf.var(A, axis=0, correction=1)],
        "argmax / argmin": [sf.argmax(A, axis=1)],
        "nansum / nanprod / nanmax / nanmin / nanmean / nanvar / nanstd": [
            sf.nanmax(A, axis=0)],
        "count_nonzero": [sf.count_nonzero(A)],
        "max(explicit=True)": [sf.max(A, axis=1, explicit=True)],
    }


def test_derived_programs_are_the_front_ends():
    documented = docgen.derived_programs()
    built = _front_end()
    assert set(documented) == set(built)
    for name, examples in documented.items():
        for (call, node), lazy in zip(examples, built[name], strict=True):
            assert node == lazy.node, (f"{name}: the reference shows a different program for "
                                       f"{call} than the front end builds; update "
                                       f"DERIVED in spec/docgen.py and {REGENERATE}")


_NUMPY = {
    "reshape": [lambda A: A.reshape(A.shape[0], -1), lambda A: A.reshape(-1),
                lambda A: A.reshape(3, -1)],
    "stack": [lambda A, B: np.stack([A, B], axis=0)],
    "hstack": [lambda A, B: np.hstack([A, B]), lambda v, w: np.hstack([v, w])],
    "vstack": [lambda A, B: np.vstack([A, B]), lambda v, w: np.vstack([v, w])],
    "matmul": [np.matmul, np.matmul],
    "tensordot": [lambda A, B: np.tensordot(A, B, axes=2)],
    "dot": [np.dot],
    "outer": [np.outer],
    "vecdot": [np.vecdot],
    "einsum": [lambda A, B, C: np.einsum("ij,jk,kl->il", A, B, C),
               lambda A: np.einsum("ii->i", A)],
    "swapaxes / matrix_transpose": [lambda A: np.matrix_transpose(A)],
    "tile / repeat": [lambda A: np.tile(A, (2, 3)), lambda A: np.repeat(A, 2, axis=0)],
    "diff": [lambda A: np.diff(A, axis=1)],
    "reshape(order='F')": [lambda A: A.reshape(A.shape[::-1], order="F")],
    "block_array": [lambda A, B: np.block([[A, np.zeros((A.shape[0], B.shape[1]))],
                                           [np.zeros((B.shape[0], A.shape[1])), B]])],
    "gather: x[i], take, compress, boolean masks": [lambda A, i: A[:, i],
                                                     lambda A, i, j: A[i, :, j]],
    "mean": [lambda A: np.mean(A, axis=1)],
    "var / std": [lambda A: np.var(A, axis=0, ddof=1)],
    "argmax / argmin": [lambda A: np.argmax(A, axis=1)],
    "nansum / nanprod / nanmax / nanmin / nanmean / nanvar / nanstd": [
        lambda A: np.nanmax(A, axis=0)],
    "count_nonzero": [np.count_nonzero],
    "max(explicit=True)": [lambda A: np.where((A != 0).any(axis=1),
                                              np.where(A != 0, A, -np.inf).max(axis=1), 0)],
}
_SHAPES = {"I": 3, "J": 4, "K": 2, "N": 5}


def test_derived_programs_mean_what_numpy_means():
    rng = np.random.default_rng(0)
    for name, examples in docgen.derived_programs().items():
        for (call, node), oracle in zip(examples, _NUMPY[name], strict=True):
            inputs = _inputs(node)
            if not all(isinstance(d, (sz.Sym, sz.Const)) for n in inputs for d in n.shape):
                continue  # e.g. A: (I*J,) — the interpreter binds sizes from plain symbols
            # integer inputs are index arrays: in range for every axis (the smallest is 3)
            arrays = {n.name: rng.integers(-3, 3 if n.dtype.kind == "i" else 4, tuple(
                int(sz.evaluate(d, _SHAPES)) for d in n.shape)).astype(n.dtype)
                      for n in inputs}
            got = sf.LazyArray(node).interpret(**arrays)
            want = oracle(*(arrays[n.name] for n in inputs))
            np.testing.assert_array_equal(got, want, err_msg=f"{name}: {call}")


def _inputs(node):
    from sparsefold.spec import Input, topological
    return [n for n in topological(node) if isinstance(n, Input)]

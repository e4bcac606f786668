"""Golden files pin the generated Cython of a few small kernels (STYLE 12).

A change to emission shows up here as a readable diff. After checking the new text is
right, regenerate with ``SPARSEFOLD_UPDATE_GOLDEN=1 pytest tests/compiler/test_golden.py``.
No kernel is built: this only generates source.
"""

import os
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

import sparsefold as sf
from sparsefold.jit import JitFunction, compile_program

GOLDEN = Path(__file__).parent / "golden"


def _csr(shape, fmt="csr"):
    d = np.zeros(shape, dtype=np.float32)
    d.flat[::3] = 1
    return sp.coo_array(d).asformat(fmt)


CASES = {
    "csr_hstack": (lambda a, b: sf.concat([a, b], axis=1), (_csr((4, 3)), _csr((4, 2))), "csr"),
    "coo_collapse": (lambda a: a.reshape(-1), (_csr((4, 3), "coo"),), "csr"),
    "csr_slice_mul_csr": (lambda a, b: a[0:(a.shape[0] + 1) // 2:2, :] * b,
                          (_csr((6, 4)), _csr((2, 4))), "csr"),
    "vstack_spmv": (lambda a, b, x: sf.concat([a, b], axis=0) @ x,
                    (_csr((3, 4)), _csr((2, 4)), np.ones(4, np.float32)), "dense"),
}


def _source(name: str) -> str:
    fn, args, out = CASES[name]
    program, out = JitFunction(fn, out).program_for(*args)
    values = {f"a{p}": a for p, a in enumerate(args) if not isinstance(a, (int, float))}
    return compile_program(program, out).source_for(values)


@pytest.mark.parametrize("name", sorted(CASES))
def test_generated_source_matches_golden(name):
    text = _source(name)
    path = GOLDEN / f"{name}.pyx"
    if os.environ.get("SPARSEFOLD_UPDATE_GOLDEN"):
        path.write_text(text)
    assert path.exists(), f"missing golden file {path}; run with SPARSEFOLD_UPDATE_GOLDEN=1"
    assert text == path.read_text(), (
        f"generated Cython for {name} changed; inspect the diff and, if it is right, "
        f"regenerate with SPARSEFOLD_UPDATE_GOLDEN=1")


def test_generation_is_deterministic():
    assert _source("csr_hstack") == _source("csr_hstack")


def _coo_hstack_source(parts: int) -> str:
    coo = _csr((4, 3), "coo")
    args = [coo if k % 2 == 0 else _csr((4, 2), "coo") for k in range(parts)]
    program, out = JitFunction(lambda *xs: sf.concat(list(xs), axis=1), "coo").program_for(
        *args)
    return compile_program(program, out).source_for({f"a{k}": a for k, a in enumerate(args)})


def test_fallback_is_announced_in_the_source():
    """A stream that cannot be proved in order says so in the generated code (hstack of
    more COO pieces than the merge takes)."""
    text = _coo_hstack_source(5)
    assert "FALLBACK" in text and "sort" in text


def test_pieces_in_order_each_are_merged():
    """hstack of two COO arrays: each piece is in order on its own, so one merging pass
    replaces the sort."""
    text = _coo_hstack_source(2)
    assert "FALLBACK" not in text
    assert "merge of 2 pieces by output key" in text


def test_show_prints_every_strategy(capsys):
    """sf.show returns (and prints) the source for stream, merge and dense plans alike."""
    a = _csr((4, 3))
    for fn, strategy in [(lambda x, y: sf.concat([x, y], axis=1), "stream"),
                         (lambda x, y: x * y, "merge"), (lambda x, y: x + 1, "dense")]:
        text = sf.show(fn, a, a, out="csr")
        assert text.startswith("# cython:") and "def run(" in text
        assert f"Strategy: {strategy}" in text
    assert "def run(" in capsys.readouterr().out

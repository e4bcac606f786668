"""Golden files pin the generated Cython of a few small kernels (STYLE 12): one per loop-IR
feature — leaf loops, row loops with segment copies, bulk copies, count-and-scatter,
co-iteration (flat, by rows, over every coordinate), register accumulation, a contraction
with a workspace, and a staged reorder.

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
    "csr_vstack_bulk": (lambda a, b: sf.concat([a, b], axis=0), (_csr((3, 4)), _csr((2, 4))),
                        "csr"),
    "csr_transpose_scatter": (lambda a: a.T, (_csr((4, 3)),), "csr"),
    "coo_hstack_merge": (lambda a, b: sf.concat([a, b], axis=1),
                         (_csr((4, 3), "coo"), _csr((4, 2), "coo")), "coo"),
    "add3_coo_flat": (lambda a, b, c: a * b + c,
                      (_csr((4, 3), "coo"), _csr((4, 3), "coo"), _csr((4, 3), "coo")), "coo"),
    "sum_rows_of_union": (lambda a, b: sf.max(a + b, axis=1), (_csr((4, 3)), _csr((4, 3))),
                          "dense"),
    "plus_one_universe": (lambda a: a + 1, (_csr((4, 3)),), "dense"),
    "spgemm_workspace": (lambda a, b: a @ b, (_csr((4, 3)), _csr((3, 5))), "csr"),
    "a_minus_at_staged": (lambda a: a - a.T, (_csr((4, 4), "csc"),), "csr"),
}


def _source(name: str) -> str:
    fn, args, out = CASES[name]
    jf = JitFunction(fn, out)
    program, out = jf.program_for(*args)
    kernel = compile_program(program, out, jf._assumed.get(program, ()))
    values = {f"a{p}": a for p, a in enumerate(args) if not isinstance(a, (int, float))}
    return kernel.source_for(values)


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
    assert "co-iteration of a0+a1" in text


def test_show_prints_every_strategy(capsys):
    """sf.show returns (and prints) the source for stream, co-iteration, contraction and
    dense-valued plans alike, every stage of a staged one."""
    a = _csr((4, 3))
    sq = _csr((3, 3), "csc")
    for fn, args, strategy in [
            (lambda x, y: sf.concat([x, y], axis=1), (a, a), "stream"),
            (lambda x, y: x * y, (a, a), "co-iteration"),
            (lambda x, y: x + 1, (a, a), "every coordinate (dense-valued)"),
            (lambda x, y: x @ y.T, (a, a), "contraction"),
            (lambda x, y: x - x.T, (sq, sq), "Stage: computes temporary tmp0")]:
        text = sf.show(fn, *args, out="csr")
        assert text.startswith("# cost of ") and "\n# cython:" in text
        assert "run = sf_function(" in text
        assert strategy in text, strategy
    assert "run = sf_function(" in capsys.readouterr().out


def test_show_prints_the_variant_a_call_runs(capsys):
    """A contiguous dense operand runs the unit-stride variant, whose fast entry refuses
    strided rows; a strided one runs the other. sf.show prints the one the call runs."""
    a = _csr((40, 30))
    x = np.arange(30.0)
    contiguous = sf.show(lambda m, v: m @ v, a, x)
    strided = sf.show(lambda m, v: m @ v, a, np.arange(60.0)[::2])
    assert "in_a1.strides[0] != 1:" in contiguous and "in_a1.strides[0] == 1:" not in contiguous
    assert "in_a1.strides[0] == 1:" in strided
    capsys.readouterr()

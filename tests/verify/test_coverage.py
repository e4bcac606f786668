"""The composed plan covers exactly the program's support, and the counting-sort reorder is
a permutation (``verify.coverage``).

Oracles: the deliberately wrong operators of ``wrong_ops.py``, whose maps collide, leave the
output or do not invert each other — each must fail the obligation named for that defect —
and the same operators written right, which must be proved."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from sparsefold.compiler.plan.streams import stream_pieces
from sparsefold.spec import sizes as sz
from sparsefold.spec.compute import Input, Reduce
from sparsefold.spec.formats import named_format
from sparsefold.spec.ops_concat import Concat
from sparsefold.spec.ops_index import Slice
from sparsefold.verify.coverage import prove_coverage, prove_reorder
from sparsefold.verify.reads import located_reads, prove_reads

sys.path.insert(0, str(Path(__file__).resolve().parent))
from wrong_ops import Interleave, Scramble, ShiftOut  # noqa: E402

N, M = sz.Sym("N"), sz.Sym("M")


def _csr(name, shape):
    return Input(name, shape, np.dtype("float64"), named_format("csr", len(shape)))


def _coverage(node) -> dict[str, str]:
    return dict(prove_coverage(stream_pieces(node), tuple(node.shape)))


def test_a_right_interleave_covers_its_output_exactly():
    got = _coverage(Interleave(_csr("a", (N, M)), _csr("b", (N, M))))
    assert got == {"bounds[0]": "proved", "round_trip[0]": "proved",
                   "injective[0,0]": "proved", "injective[0,1]": "proved",
                   "bounds[1]": "proved", "round_trip[1]": "proved",
                   "injective[1,1]": "proved"}


def test_colliding_pieces_are_not_injective():
    got = _coverage(Interleave(_csr("a", (N, M)), _csr("b", (N, M)), wrong=True))
    assert got["injective[0,1]"] == "refuted"
    assert got["round_trip[1]"] == "refuted"   # odd rows are owned but never written
    assert got["bounds[0]"] == got["bounds[1]"] == "proved"


def test_an_out_of_range_map_fails_bounds():
    got = _coverage(ShiftOut(_csr("a", (N, M))))
    assert got["bounds[0]"] == "refuted"
    assert got["injective[0,0]"] == "proved"


def test_a_map_that_is_not_the_inverse_fails_the_round_trip():
    got = _coverage(Scramble(_csr("v", (N,))))
    assert got["round_trip[0]"] == "refuted"
    assert got["bounds[0]"] == "proved"


def test_a_concat_of_slices_is_covered():
    a, b = _csr("a", (N, M)), _csr("b", (N, M))
    node = Concat((Slice(a, ((None, None, -1), (1, None, 2))), b), 1)
    assert set(_coverage(node).values()) == {"proved"}


def test_the_counting_sort_placement_is_a_lexicographic_injection():
    got = dict(prove_reorder())
    assert got == {"start_monotone (induction base)": "proved",
                   "start_monotone (induction step)": "proved", "in_range": "proved",
                   "injective": "proved", "lexicographic": "proved"}


def test_a_reducing_stream_has_only_bounds():
    got = prove_coverage(stream_pieces(ShiftOut(_csr("a", (N, M)))), (N, M), True)
    assert dict(got) == {"bounds[0]": "refuted"}


# --- located reads (verify.reads) ----------------------------------------------------------

def _dense(name, shape):
    return Input(name, shape, np.dtype("float64"), named_format("dense", len(shape)))


def _read_statuses(node) -> list[str]:
    ks = sz.out_coords(node.ndim)
    reads = located_reads(node, ks)
    domain = tuple(sz.lt(k, n) for k, n in zip(ks, node.shape))
    return [s for _, s in prove_reads(reads, domain)]


def test_reads_through_shape_operators_and_reductions_are_in_bounds():
    x = _dense("x", (N, M))
    node = Slice(Reduce(Concat((x, Slice(x, ((None, None, -1), (None, None, None)))), 0), (1,),
                        "sum"),
                 ((1, None, 2),))
    assert _read_statuses(node) == ["proved", "proved"]


def test_a_read_past_the_end_is_refuted():
    assert _read_statuses(ShiftOut(_dense("x", (N, M)))) == ["refuted"]
    assert _read_statuses(Scramble(_dense("v", (N,)))) == ["proved"]  # identity backward


def test_sparse_operands_are_not_located_reads():
    a = _csr("a", (N, M))
    assert located_reads(Concat((a, _dense("x", (N, M))), 0), sz.out_coords(2))[0][0].name \
        == "x"
    assert len(located_reads(a, sz.out_coords(2))) == 0

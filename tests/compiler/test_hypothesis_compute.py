"""Hypothesis: general sparse compute (issue #11) through the compiler, against the interpreter.

* ``test_random_nary`` — two to four operands, each in a drawn storage format (csr, csc,
  coo, sometimes dense) seen through a drawn shape-operator view (transpose, reversed rows,
  every other row, split of a flat vector, broadcast row, column slice, concat of two
  halves), folded by a random expression of add / subtract / multiply / maximum / minimum /
  ``where`` and comparisons (one operand sometimes used twice), optionally followed by a
  reduction or by a contraction with one more sparse operand; compiled for a drawn output
  format. Each example is a new kernel, so
  the count is capped (derandomized under the ci profile).
* ``test_random_contraction`` — ``view(a) @ view(b)`` with both operands in drawn formats and
  views, optionally combined elementwise with a third operand: sparse x sparse contractions
  (Gustavson) through shape operators.
* ``test_every_format_combination_*`` — fixed n-ary and contraction programs over the
  combinations of the sparse formats, with Hypothesis data: one kernel per combination and
  several examples each (sizes drawn from disjoint ranges keep the signature fixed). By
  default a pairwise covering (every pair of operands meets every pair of formats: 9 of the
  27 triples); ``SPARSEFOLD_FORMAT_COMBINATIONS=all`` runs every combination (each is a
  kernel build, minutes on 2 cores).

Every sparse result's storage is checked (container, canonical order, ``indptr``), not only
its values, by ``kernel_checks.check_result``; and no stage of the compiled kernel may take
the dense strategy while reading a sparse input.
"""

from __future__ import annotations

import itertools
import os
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import Phase, given, settings
from hypothesis import strategies as st

import sparsefold as sf
from sparsefold.jit import compile_program
from sparsefold.verify.strategies import dense_arrays, sparse_arrays

sys.path.insert(0, str(Path(__file__).resolve().parent))
from kernel_checks import check_result  # noqa: E402

pytestmark = pytest.mark.cython

SPARSE = ("csr", "csc", "coo")
OUTS = ("csr", "csc", "coo", "dense")


# Every example is a kernel build (~1-3 s): shrinking a failure can take many minutes, so
# these tests report the first failing example as drawn (its program is in the message).
NO_SHRINK = (Phase.explicit, Phase.reuse, Phase.generate)


def _cap(n: int) -> int:
    limit = settings.default.max_examples
    return min(limit, max(n, limit // 10))


def _views(r: int, c: int):
    """(name, stored shape, view): ways for an (r, c) operand to be seen through shape
    operators; the compiler must co-iterate each in the output's order, reordering an
    operand whose storage order disagrees, never densifying it."""
    return [
        ("identity", (r, c), lambda y: y),
        ("transpose", (c, r), lambda y: y.T),
        ("reversed", (r, c), lambda y: y[::-1]),
        ("every_other_row", (2 * r, c), lambda y: y[::2]),
        ("split_of_flat", (r * c,), lambda y: y.reshape(r, c)),
        ("broadcast_row", (1, c), lambda y: sf.broadcast_to(y, (r, c))),
        ("column_slice", (r, c + 2), lambda y: y[:, 1:-1]),
        ("concat_halves", (r + 1, c), lambda y: sf.concat([y[1:], y[:1]], axis=0)[:r]),
    ]


@st.composite
def _operand(draw, r: int, c: int, dtype: str, *, dense_ok: bool = True):
    """(stored array, view name, view): one operand of logical shape (r, c)."""
    name, stored, view = draw(st.sampled_from(_views(r, c)))
    fmts = [f for f in SPARSE if len(stored) == 2 or f != "csc"]
    if dense_ok and draw(st.integers(0, 4)) == 0:
        fmts = ["dense"]
    fmt = draw(st.sampled_from(fmts))
    x = draw(dense_arrays(stored, dtype) if fmt == "dense"
             else sparse_arrays(stored, fmt, dtype))
    return x, name, view


_BINARY = {
    "add": lambda a, b: a + b,
    "subtract": lambda a, b: a - b,
    "multiply": lambda a, b: a * b,
    "maximum": sf.maximum,
    "minimum": sf.minimum,
}


@st.composite
def _expression(draw, k: int):
    """(description, fn of k operands): a random expression tree over operands 0..k-1 —
    every operand used once, and sometimes one of them twice (the same node in two places:
    its value matters wherever either use does), combined in a drawn order by drawn
    operators."""
    leaves = list(range(k))
    twice = draw(st.sampled_from([None, None, *range(k)]))
    if twice is not None:
        leaves.append(twice)
    order = draw(st.permutations(leaves))
    terms = [(f"x{i}", lambda xs, i=i: xs[i]) for i in order]
    while len(terms) > 1:
        j = draw(st.integers(0, len(terms) - 2))
        (da, fa), (db, fb) = terms[j], terms[j + 1]
        kind = draw(st.sampled_from([*sorted(_BINARY), "where"] if j + 2 < len(terms)
                                    else sorted(_BINARY)))
        if kind == "where":  # consumes three terms: where(a > 0, b, c)
            dc, fc = terms[j + 2]
            node = (f"where({da} > 0, {db}, {dc})",
                    lambda xs, fa=fa, fb=fb, fc=fc: sf.where(fa(xs) > 0, fb(xs), fc(xs)))
            terms[j:j + 3] = [node]
            continue
        op = _BINARY[kind]
        node = (f"{kind}({da}, {db})", lambda xs, fa=fa, fb=fb, op=op: op(fa(xs), fb(xs)))
        terms[j:j + 2] = [node]
    return terms[0]


def _no_densified_sparse_input(fn, args, out) -> None:
    jf = sf.jit(fn, out=out)
    program, fmt = jf.program_for(*args)
    kernel = compile_program(program, fmt, jf._assumed.get(program, ()))
    for stage in [s for _, s in kernel.stages] + [kernel.final]:
        if stage.strategy == "dense":
            assert all(i.format.is_dense for i in stage.inputs), (
                f"stage {stage.strategy} reads a sparse input densely")


def _run(fn, args, out, note):
    lazies = [sf.asarray(a) for a in args]
    expected = fn(*lazies).interpret()
    got = sf.jit(fn, out=out)(*args)
    try:
        rtol = 1e-9 if np.asarray(expected).dtype.kind in "fc" else None
        check_result(got, expected, out, rtol=rtol)
        _no_densified_sparse_input(fn, args, out)
    except AssertionError as exc:
        kinds = ", ".join(f"{type(a).__name__}{getattr(a, 'format', '')} {a.shape}"
                          for a in args)
        raise AssertionError(f"{note}; inputs: {kinds}; out={out}\n{exc}") from exc


@st.composite
def nary_programs(draw):
    r, c = draw(st.integers(0, 4)), draw(st.integers(1, 4))
    dtype = draw(st.sampled_from(["float64", "int64"]))
    k = draw(st.integers(2, 4))
    operands = [draw(_operand(r, c, dtype)) for _ in range(k)]
    desc, expr = draw(_expression(k))
    views = [v for _, _, v in operands]
    tail = draw(st.sampled_from(["none", "none", "sum", "max", "sum0", "matmul"]))
    args = [x for x, _, _ in operands]
    if tail == "matmul":  # one more sparse operand: (r, c) @ (c, n)
        n = draw(st.integers(1, 3))
        d, dname, dview = draw(_operand(c, n, dtype, dense_ok=False))
        args.append(d)
        desc = f"({desc}) @ {dname}(x{k})"

        def fn(*xs, views=views, expr=expr, dview=dview):
            return expr([v(x) for v, x in zip(views, xs[:-1])]) @ dview(xs[-1])
    else:
        def fn(*xs, views=views, expr=expr, tail=tail):
            y = expr([v(x) for v, x in zip(views, xs)])
            if tail == "sum":
                return sf.sum(y, axis=1)
            if tail == "sum0":
                return sf.sum(y, axis=0)
            if tail == "max" and r > 0:
                return sf.max(y, axis=0)
            return y
        if tail != "none":
            desc = f"{tail}({desc})"
    names = ", ".join(f"x{i}={name}" for i, (_, name, _) in enumerate(operands))
    return fn, args, draw(st.sampled_from(OUTS)), f"{desc} with {names}"


@settings(max_examples=_cap(12), phases=NO_SHRINK)
@given(nary_programs())
def test_random_nary(case):
    fn, args, out, note = case
    _run(fn, args, out, note)


@st.composite
def contraction_programs(draw):
    m, k, n = draw(st.integers(0, 4)), draw(st.integers(1, 4)), draw(st.integers(1, 4))
    dtype = draw(st.sampled_from(["float64", "int64"]))
    a, na, va = draw(_operand(m, k, dtype, dense_ok=False))
    b, nb, vb = draw(_operand(k, n, dtype, dense_ok=False))
    third = draw(st.sampled_from([None, "add", "multiply"]))
    if third is None:
        return (lambda x, y: va(x) @ vb(y)), [a, b], draw(st.sampled_from(OUTS)), \
            f"{na}(a) @ {nb}(b)"
    c, nc, vc = draw(_operand(m, n, dtype))
    op = _BINARY[third]
    return ((lambda x, y, z: op(va(x) @ vb(y), vc(z))), [a, b, c],
            draw(st.sampled_from(OUTS)), f"{third}({na}(a) @ {nb}(b), {nc}(c))")


@settings(max_examples=_cap(10), phases=NO_SHRINK)
@given(contraction_programs())
def test_random_contraction(case):
    fn, args, out, note = case
    _run(fn, args, out, note)


# --- every format combination, one kernel each ------------------------------------------------

ALL_COMBINATIONS = os.environ.get("SPARSEFOLD_FORMAT_COMBINATIONS") == "all"


def _triples():
    """Format triples: all 27, or the orthogonal array (i, j, i + j mod 3) in which every two
    positions see all 9 format pairs."""
    if ALL_COMBINATIONS:
        return list(itertools.product(SPARSE, repeat=3))
    return [(SPARSE[i], SPARSE[j], SPARSE[(i + j) % 3]) for i in range(3) for j in range(3)]


def _pairs_with_out():
    """(format a, format b, output): every pair, each with both outputs under ``all``,
    otherwise with one output, alternating."""
    pairs = list(itertools.product(SPARSE, repeat=2))
    if ALL_COMBINATIONS:
        return [(fa, fb, out) for fa, fb in pairs for out in ("csr", "coo")]
    return [(fa, fb, ("csr", "coo")[n % 2]) for n, (fa, fb) in enumerate(pairs)]


def _nary_views(a, b, c):
    return a * b[::-1] + c.T


@settings(max_examples=_cap(6), phases=NO_SHRINK)
@given(m=st.integers(2, 5), n=st.integers(6, 9), data=st.data())
@pytest.mark.parametrize("fa,fb,fc", _triples())
def test_every_format_combination_nary(fa, fb, fc, m, n, data):
    a = data.draw(sparse_arrays((m, n), fa, "float64"), label="a")
    b = data.draw(sparse_arrays((m, n), fb, "float64"), label="b")
    c = data.draw(sparse_arrays((n, m), fc, "float64"), label="c")
    _run(_nary_views, [a, b, c], "csr", f"a*b[::-1]+c.T over {fa},{fb},{fc}")


def _contract_views(a, b):
    return sf.concat([a, a[::-1]], axis=0) @ b.T


@settings(max_examples=_cap(6), phases=NO_SHRINK)
@given(m=st.integers(2, 5), k=st.integers(6, 9), n=st.integers(10, 12), data=st.data())
@pytest.mark.parametrize("fa,fb,out", _pairs_with_out())
def test_every_format_combination_contraction(fa, fb, out, m, k, n, data):
    a = data.draw(sparse_arrays((m, k), fa, "float64"), label="a")
    b = data.draw(sparse_arrays((n, k), fb, "float64"), label="b")
    _run(_contract_views, [a, b], out, f"vstack(a, a[::-1]) @ b.T over {fa},{fb}")

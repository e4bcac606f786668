"""Hypothesis over chunkings: fixed programs (those of ``test_operations``, so they reuse its
kernels; this module runs after it), random data and random chunkings of every operand, the
Dask result against ``sf.jit`` on the whole arrays.

Row blocks have 4..6 rows and column blocks 10..12 columns, so a matrix is never square
and blocks rarely have a size-1 axis (only where two operands' chunks refine into one):
most examples reuse the kernels of earlier ones. Derandomized, 8 examples per program.
"""

import sys
from pathlib import Path

import dask.array as da
import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

import sparsefold as sf

sys.path.insert(0, str(Path(__file__).resolve().parent))
from helpers import assert_same, integer_valued, run_both  # noqa: E402

pytestmark = pytest.mark.cython

PROGRAMS = {
    "map3": lambda a, b, c: sf.maximum(a, b) * c - a,
    "vstack_spmv": lambda a, b, x: sf.concat([a, b]) @ x,
    "slice_times": lambda a, h, _: a[::2] * h,
    "sum_axis0": lambda a, b, _: a.sum(axis=0),
    "transpose": lambda a, b, _: a.T,
}


@st.composite
def chunking(draw, total=None, lo=4, hi=6, parts=(2, 3)):
    """Chunk sizes in [lo, hi] (``parts`` of them), or a random partition of ``total``
    into pieces of at least 2."""
    if total is None:
        n = draw(st.integers(*parts))
        return tuple(draw(st.integers(lo, hi)) for _ in range(n))
    cuts = draw(st.sets(st.integers(2, total - 2), max_size=3)) if total >= 4 else set()
    bounds = sorted({0, total} | {c for c in cuts})
    sizes = tuple(b - a for a, b in zip(bounds, bounds[1:]))
    return sizes if min(sizes) >= 2 else (total,)


@pytest.mark.parametrize("name", sorted(PROGRAMS))
@settings(max_examples=8, deadline=None, derandomize=True, database=None)
@given(data=st.data())
def test_chunked_equals_single_machine(data, name):
    fn = PROGRAMS[name]
    rows = data.draw(chunking(), label="row chunks of a")
    cols = data.draw(chunking(lo=10, hi=12, parts=(1, 2)), label="column chunks of a")
    shape = (sum(rows), sum(cols))
    seed = data.draw(st.integers(0, 2**16), label="seed")
    a = sp.csr_array(integer_valued(shape, seed))
    if name == "slice_times":
        second_shape = ((shape[0] + 1) // 2, shape[1])
    else:
        second_shape = shape
    b = sp.csr_array(integer_valued(second_shape, seed + 1))
    b_rows = data.draw(chunking(second_shape[0]), label="row chunks of b")
    b_cols = data.draw(chunking(shape[1]), label="column chunks of b")
    x = np.arange(shape[1], dtype=np.float64) % 7 - 3
    third = a if name == "map3" else x
    dask_third = da.from_array(a, chunks=(rows, cols)) if name == "map3" else \
        da.from_array(x, chunks=(data.draw(chunking(shape[1]), label="chunks of x"),))
    want, got, lazy = run_both(
        fn, (a, b, third),
        (da.from_array(a, chunks=(rows, cols)), da.from_array(b, chunks=(b_rows, b_cols)),
         dask_third), scheduler="sync")
    assert_same(want, got)
    assert lazy.shape == got.shape

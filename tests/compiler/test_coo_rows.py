"""COO paths (issue #13). ``hstack`` of COO into CSR runs a row loop in which each COO
operand is walked by one cursor, every row a run of equal row coordinates
(``compiler/lower/coo_rows.py``), instead of a merge by key. ``vstack`` of CSR into COO copies each
operand whole, its row coordinates expanded from ``indptr`` (``lower_stream._expand_rows``:
marks and a running maximum on short rows, a fill per row on long ones).

Differential tests against scipy on the intended dense value: sorted and unsorted COO,
duplicates (summed, as scipy does), empty rows, a stale canonical flag, CSR beside COO,
int32 and int64 coordinates; coordinates out of range fail with the same ``InvalidData``
text as before, whether the row or the column coordinate is bad and wherever it sits.
"""

import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

import sparsefold as sf
from sparsefold.verify.differential import storage_problems

sys.path.insert(0, str(Path(__file__).resolve().parent))
from kernel_checks import check_result  # noqa: E402

pytestmark = pytest.mark.cython

hstack_csr = sf.jit(lambda a, b: sf.concat([a, b], axis=1), out="csr")


@st.composite
def coo_operands(draw, rows: int, cols: int, index_dtype: str, *, order: str):
    """A scipy COO array of (rows, cols): ``order`` "sorted" (canonical, flag set),
    "sorted_unflagged" (canonical entries, flag cleared), "shuffled" (entries in random
    order), "duplicates" (some coordinates stored twice, shuffled). Whole rows are left
    empty often (the row loop must pass over them)."""
    full_rows = draw(st.lists(st.booleans(), min_size=rows, max_size=rows))
    cells = [(r, c) for r in range(rows) if full_rows[r] for c in range(cols)]
    chosen = sorted(draw(st.sets(st.sampled_from(cells), max_size=len(cells))) if cells
                    else set())
    values = draw(st.lists(st.integers(1, 9), min_size=len(chosen), max_size=len(chosen)))
    entries = [(r, c, float(v)) for (r, c), v in zip(chosen, values)]
    if order == "duplicates" and entries:
        extra = draw(st.lists(st.sampled_from(entries), min_size=1, max_size=4))
        entries += [(r, c, 1.0) for r, c, _ in extra]
    if order in ("shuffled", "duplicates"):
        entries = draw(st.permutations(entries))
    ix = np.dtype(index_dtype)
    r = np.array([e[0] for e in entries], dtype=ix)
    c = np.array([e[1] for e in entries], dtype=ix)
    v = np.array([e[2] for e in entries], dtype=np.float64)
    a = sp.coo_array((v, (r, c)), shape=(rows, cols))
    a.coords = (r, c)  # scipy may narrow the index dtype: set it as drawn
    a.has_canonical_format = order == "sorted"
    return a


def _dense(a) -> np.ndarray:
    return np.asarray(a.toarray())  # scipy sums duplicates


@settings(max_examples=40, deadline=None)
@given(rows=st.integers(2, 7), c1=st.integers(1, 4), c2=st.integers(5, 8),
       index_dtype=st.sampled_from(["int32", "int64"]),
       order=st.sampled_from(["sorted", "sorted_unflagged", "shuffled", "duplicates"]),
       data=st.data())
def test_hstack_of_coo_into_csr_matches_scipy(rows, c1, c2, index_dtype, order, data):
    a = data.draw(coo_operands(rows, c1, index_dtype, order=order), label="a")
    b = data.draw(coo_operands(rows, c2, index_dtype, order=order), label="b")
    before = [x.copy() for x in (*a.coords, a.data, *b.coords, b.data)]
    got = hstack_csr(a, b)
    check_result(got, np.hstack([_dense(a), _dense(b)]), "csr", exact_pattern=True)
    for old, new in zip(before, (*a.coords, a.data, *b.coords, b.data)):
        np.testing.assert_array_equal(old, new)  # the caller's arrays are not touched


@settings(max_examples=20, deadline=None)
@given(rows=st.integers(2, 7), c1=st.integers(1, 4), c2=st.integers(5, 8),
       order=st.sampled_from(["sorted", "shuffled"]), data=st.data())
def test_hstack_of_csr_beside_coo(rows, c1, c2, order, data):
    a = data.draw(coo_operands(rows, c1, "int32", order="sorted"), label="a").tocsr()
    b = data.draw(coo_operands(rows, c2, "int32", order=order), label="b")
    got = hstack_csr(a, b)
    check_result(got, np.hstack([a.toarray(), _dense(b)]), "csr", exact_pattern=True)


def test_the_kernel_reads_coo_rows_with_a_cursor_not_a_merge():
    a = sp.coo_array(np.eye(3, 4))
    b = sp.coo_array(np.eye(3, 5))
    text = sf.show(hstack_csr, a, b)
    assert "row loop" in text and "read as rows" in text and "co-iteration" not in text


def _coo(r, c, shape, dtype="int32", flag=True):
    """COO storage exactly as given (scipy would refuse bad coordinates at construction)."""
    zeros = np.zeros(len(r), dtype)
    a = sp.coo_array((np.ones(len(r)), (zeros, zeros)), shape=shape)
    a.coords = (np.array(r, dtype), np.array(c, dtype))
    a.has_canonical_format = flag
    return a


@pytest.mark.parametrize("dtype", ["int32", "int64"])
@pytest.mark.parametrize("flag", [True, False])
@pytest.mark.parametrize("bad_row, where", [(3, "last"), (7, "last"), (-1, "first"),
                                            (-5, "middle")])
def test_a_row_coordinate_out_of_range_is_invalid_data(dtype, flag, bad_row, where):
    rows = [0, 1, 2]
    at = {"first": 0, "middle": 1, "last": 3}[where]
    r = rows[:at] + [bad_row] + rows[at:]
    c = [0] * len(r)
    a = _coo(r, c, (3, 2), dtype, flag)
    b = _coo([0, 2], [1, 0], (3, 3), dtype)
    with pytest.raises(sf.InvalidData, match=rf"a0: coords\[0\] out of range \[0, 3\): "
                                             rf"found {bad_row}"):
        hstack_csr(a, b)


@pytest.mark.parametrize("dtype", ["int32", "int64"])
@pytest.mark.parametrize("bad_col", [2, 9, -1])
def test_a_column_coordinate_out_of_range_is_invalid_data(dtype, bad_col):
    a = _coo([0, 1], [1, 0], (3, 2), dtype)
    b = _coo([0, 1, 2], [0, bad_col, 2], (3, 2), dtype)
    with pytest.raises(sf.InvalidData, match=rf"a1: coords\[1\] out of range \[0, 2\): "
                                             rf"found {bad_col}"):
        hstack_csr(a, b)


@pytest.mark.parametrize("r", [[2, 0, 1], [1, 1, 0], [0, 2, 2, 1]])
def test_a_stale_canonical_flag_gives_sound_storage(r):
    """Unsorted rows under ``has_canonical_format = True``: the flag is trusted (values are
    not guaranteed), but the result's storage must stay memory-sound."""
    a = _coo(r, list(range(len(r))), (3, 4), flag=True)
    b = _coo([0, 2], [1, 0], (3, 2))
    try:
        got = hstack_csr(a, b)
    except sf.InvalidData:
        return
    assert not storage_problems(got, "csr", canonical=False)


hstack_rows_csr = sf.jit(lambda a, b: sf.concat([a[1:5], b[1:5]], axis=1), out="csr")


@pytest.mark.parametrize("program", ["whole", "row_slice"])
@pytest.mark.parametrize("per_row", [3, 30])  # both sides of the short-row threshold (16)
@pytest.mark.parametrize("seed", range(4))
def test_a_stale_canonical_flag_never_drops_entries_silently(program, per_row, seed):
    """Shuffled entries under ``has_canonical_format = True``: the cursor that reads rows as
    runs would leave an out-of-order entry behind, or step over it when the loop passes over
    rows (a row slice). Either the result holds every entry (the short-row scatter does not
    depend on order) or the call fails naming the order; never a silently smaller result."""
    rng = np.random.default_rng(seed)
    dense = np.zeros((6, per_row + 2))
    dense[:, :per_row] = rng.integers(1, 9, size=(6, per_row))
    good = sp.coo_array(dense)
    perm = rng.permutation(good.nnz)
    a = sp.coo_array((good.data[perm], (good.row[perm], good.col[perm])), shape=dense.shape)
    a.has_canonical_format = True
    fn, rows = (hstack_csr, slice(None)) if program == "whole" else (hstack_rows_csr,
                                                                     slice(1, 5))
    try:
        got = fn(a, good)
    except sf.InvalidData as e:
        assert "a0: coords[0] is not sorted by row: an entry of row" in str(e)
        assert "(a stale has_canonical_format flag?)" in str(e)
        return
    assert not storage_problems(got, "csr", canonical=False)
    np.testing.assert_array_equal(got.toarray(), np.hstack([dense[rows], dense[rows]]))


# --- vstack of CSR into COO: row coordinates expanded from indptr -----------------------------

vstack_coo = sf.jit(lambda a, b: sf.concat([a, b], axis=0), out="coo")


@st.composite
def csr_operands(draw, rows: int, cols: int, index_dtype: str):
    """A canonical scipy CSR array: each row empty, short or full (rows of up to 40
    entries, so both sides of the short-row threshold, 16 per row, are drawn)."""
    dense = np.zeros((rows, cols))
    for r in range(rows):
        kind = draw(st.sampled_from(["empty", "short", "full"]))
        if kind == "short":
            columns = draw(st.sets(st.integers(0, cols - 1), min_size=1, max_size=2))
            dense[r, sorted(columns)] = 1
        elif kind == "full":
            dense[r, :] = np.arange(1, cols + 1)
    a = sp.csr_array(dense)
    a.indices = a.indices.astype(index_dtype)
    a.indptr = a.indptr.astype(index_dtype)
    return a


@settings(max_examples=40, deadline=None)
@given(r1=st.integers(1, 6), r2=st.integers(7, 12), cols=st.integers(2, 40),
       index_dtype=st.sampled_from(["int32", "int64"]), data=st.data())
def test_vstack_of_csr_into_coo_matches_scipy(r1, r2, cols, index_dtype, data):
    a = data.draw(csr_operands(r1, cols, index_dtype), label="a")
    b = data.draw(csr_operands(r2, cols, index_dtype), label="b")
    got = vstack_coo(a, b)
    check_result(got, np.vstack([a.toarray(), b.toarray()]), "coo", exact_pattern=True)


def test_vstack_of_csr_into_coo_is_two_bulk_copies():
    text = sf.show(vstack_coo, sp.csr_array(np.eye(3)), sp.csr_array(np.eye(4, 3)))
    assert "bulk loop" in text and "running maximum" in text


@pytest.mark.parametrize("rows_per_entry", [1, 20])  # short rows and long rows
def test_vstack_of_csr_into_coo_rejects_bad_storage(rows_per_entry):
    a = sp.csr_array(np.ones((3, rows_per_entry)))
    bad = a.copy()
    bad.indices[-1] = rows_per_entry + 4
    with pytest.raises(sf.InvalidData, match=rf"a1: indices out of range \[0, "
                                             rf"{rows_per_entry}\): found {rows_per_entry + 4}"):
        vstack_coo(a, bad)
    bad = a.copy()
    bad.indptr[1], bad.indptr[2] = bad.indptr[2], bad.indptr[1]
    bad.has_canonical_format = False
    with pytest.raises(sf.InvalidData, match="indptr|monotone"):
        vstack_coo(a, bad)


@pytest.mark.parametrize("index_dtype", ["int32", "int64"])
@pytest.mark.parametrize("per_row", [1, 3, 15, 16, 17, 40])  # around the short-row threshold
def test_vstack_of_csr_into_coo_on_both_sides_of_the_short_row_threshold(index_dtype, per_row):
    rng = np.random.default_rng(per_row)
    parts = []
    for rows in (5, 9):
        dense = np.zeros((rows, 48))
        for r in range(rows):
            if r % 4 != 1:  # some empty rows, first and last rows stored
                dense[r, np.sort(rng.choice(48, per_row, replace=False))] = r + 1
        a = sp.csr_array(dense)
        a.indices, a.indptr = a.indices.astype(index_dtype), a.indptr.astype(index_dtype)
        parts.append(a)
    got = vstack_coo(*parts)
    check_result(got, np.vstack([p.toarray() for p in parts]), "coo", exact_pattern=True)


@pytest.mark.parametrize("order", ["sorted", "shuffled"])
@pytest.mark.parametrize("per_row", [1, 3, 7, 8, 9, 40])  # around the short-row threshold
def test_hstack_of_coo_into_csr_on_both_sides_of_the_short_row_threshold(order, per_row):
    """Below 16 entries per output row on average the kernel counts and scatters; above, it
    runs the row loop (each operand here holds about half of a row)."""
    rng = np.random.default_rng(per_row)
    parts = []
    for cols in (50, 60):
        dense = np.zeros((9, cols))
        for r in range(9):
            if r % 4 != 1:  # some empty rows, first and last rows stored
                dense[r, np.sort(rng.choice(cols, per_row, replace=False))] = r + 1
        a = sp.coo_array(dense)
        if order == "shuffled":
            p = rng.permutation(a.nnz)
            a = sp.coo_array((a.data[p], (a.coords[0][p], a.coords[1][p])), shape=a.shape)
        parts.append(a)
    got = hstack_csr(*parts)
    check_result(got, np.hstack([p.toarray() for p in parts]), "csr", exact_pattern=True)


@pytest.mark.parametrize("per_row", [1, 40])
@pytest.mark.parametrize("bad", ["row", "column"])
def test_out_of_range_coordinates_on_short_and_long_rows(per_row, bad):
    r = [x for x in range(3) for _ in range(per_row)]
    c = [x for _ in range(3) for x in range(per_row)]
    a = _coo(r, c, (3, per_row))
    r2, c2 = list(r), list(c)
    if bad == "row":
        r2[-1] = 3
        pattern = r"a1: coords\[0\] out of range \[0, 3\): found 3"
    else:
        c2[len(c2) // 2] = per_row
        pattern = rf"a1: coords\[1\] out of range \[0, {per_row}\): found {per_row}"
    with pytest.raises(sf.InvalidData, match=pattern):
        hstack_csr(a, _coo(r2, c2, (3, per_row)))

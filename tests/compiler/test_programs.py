"""Compute programs through the compiler, compared with the interpreter (or scipy/NumPy):
elementwise maps with scalars, sparse × dense and sparse × sparse (intersection and union
merges), reductions, matmul with dense operands, fused flatten × vector, NaN/inf operands,
explicit stored zeros, non-canonical inputs, invalid data (``InvalidData``, never a crash),
``sf.show`` and ``LazyArray.compute``.

Kernel count matters (~1 s each): tests that only vary the *data* reuse the kernels of
earlier tests by keeping program, formats, dtypes and index widths the same.
"""

import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

import sparsefold as sf

sys.path.insert(0, str(Path(__file__).resolve().parent))
from kernel_checks import (
    check_result,
    default_out,
    make_input,
    run_both,
    with_index_dtype,  # noqa: E402
)

pytestmark = pytest.mark.cython


def _both(fn, args, out, *, default: str | None = None, **kw):
    """``default``: the documented default output when ``out`` is None (else the first sparse
    argument's format)."""
    got, expected = run_both(fn, args, out)
    check_result(got, expected, out or default or default_out(args), **kw)
    return got, expected


# --- elementwise with scalars -----------------------------------------------------------------

SCALAR_MAPS = [
    ("times2", lambda x: x * 2, "csr", "csr", "float64"),
    ("negative", lambda x: -x, "coo", "coo", "int64"),
    ("abs", lambda x: sf.abs(x), "csc", "csc", "float32"),
    ("divide", lambda x: x / 4, "csr", "coo", "int32"),
    ("greater", lambda x: x > 0, "csr", "csr", "float64"),
    ("plus1", lambda x: x + 1, "csr", "csr", "float64"),  # dense-valued
    ("plus1_dense", lambda x: x + 1, "csc", "dense", "int32"),
    ("rsub_dcsr", lambda x: 3 - x, "coo", "dcsr", "float64"),
]


@pytest.mark.parametrize("name, fn, fmt, out, dtype", SCALAR_MAPS, ids=[m[0] for m in SCALAR_MAPS])
def test_elementwise_with_scalars(name, fn, fmt, out, dtype):
    for zero in (False, True):
        for shape in ((4, 6), (7, 3)):
            _both(fn, [make_input(shape, fmt, dtype, seed=len(name), zero=zero)], out)


def test_dense_valued_map_stores_every_position():
    """``x + 1`` has fill 1: a sparse result of it stores (at least) every position whose
    value is nonzero, including those where x has no stored entry."""
    x = make_input((4, 6), "csr", "float64", seed=8)
    got, expected = _both(lambda a: a + 1, [x], "csr")
    assert got.nnz >= np.count_nonzero(expected)
    assert np.count_nonzero(expected) > x.nnz


# --- sparse x dense, sparse x sparse ----------------------------------------------------------

def test_sparse_times_dense():
    A = make_input((5, 6), "csr", "float64", seed=1)
    D = np.arange(30, dtype=np.float64).reshape(5, 6) - 10
    _both(lambda a, d: a * d, [A, D], "csr", exact_pattern=False)
    got, _ = _both(lambda d, a: d * a, [D, A.tocsc()], "csc")
    assert got.nnz <= A.nnz  # a multiply never stores where A stores nothing
    row = np.arange(6, dtype=np.float64)  # broadcast a dense row over every row
    _both(lambda a, r: a * r, [A, row], "csr")


SPARSE_PAIRS = [
    ("multiply", lambda a, b: a * b, "csr", "csr"),
    ("multiply_slice", lambda a, b: a[::2] * b, "csr", "csr"),
    ("add", lambda a, b: a + b, "csr", "csr"),
    ("maximum", lambda a, b: sf.maximum(a, b), "coo", "coo"),
    ("subtract", lambda a, b: a - b, "csc", "csc"),
    ("minimum_to_dcsr", lambda a, b: sf.minimum(a, b), "csr", "dcsr"),
    ("multiply_to_dense", lambda a, b: a * b, "csr", "dense"),
]


@pytest.mark.parametrize("name, fn, fmt, out", SPARSE_PAIRS, ids=[p[0] for p in SPARSE_PAIRS])
def test_sparse_times_sparse(name, fn, fmt, out):
    rows = 9 if name == "multiply_slice" else 5
    for seed, (da, db) in enumerate(((0.5, 0.5), (0.9, 0.2), (0.0, 0.6), (1.0, 1.0))):
        a = make_input((rows, 6), fmt, "float64", density=da, seed=seed)
        b = make_input((5, 6), fmt, "float64", density=db, seed=seed + 10)
        got, expected = _both(fn, [a, b], out)
        if out != "dense":  # a merge stores at most what the operands store between them
            assert got.nnz <= a.nnz + b.nnz


def test_intersection_result_is_the_scipy_product():
    a = make_input((5, 6), "csr", "float64", density=0.6, seed=3)
    b = make_input((5, 6), "csr", "float64", density=0.6, seed=4)
    got = sf.jit(lambda x, y: x * y, out="csr")(a, b)
    ref = a.multiply(b).tocsr()
    ref.eliminate_zeros()
    np.testing.assert_array_equal(got.toarray(), ref.toarray())
    assert got.nnz == ref.nnz


# --- reductions ----------------------------------------------------------------------------

REDUCTIONS = [
    ("sum0", lambda x: sf.sum(x, axis=0), "csr", "float64", 0.4),
    ("sum1", lambda x: sf.sum(x, axis=1), "csc", "int32", 0.4),
    ("sum_all", lambda x: sf.sum(x), "coo", "float64", 0.4),
    ("sum_keepdims", lambda x: sf.sum(x, axis=1, keepdims=True), "csr", "float32", 0.4),
    ("max1", lambda x: sf.max(x, axis=1), "csr", "float64", 0.4),
    ("min0", lambda x: sf.min(x, axis=0), "csc", "int64", 0.4),
    ("prod1", lambda x: sf.prod(x, axis=1), "csr", "float64", 0.9),
    ("prod_all", lambda x: sf.prod(x), "coo", "int64", 1.0),
    ("any1", lambda x: sf.any(x, axis=1), "csr", "bool", 0.3),
    ("all0", lambda x: sf.all(x, axis=0), "coo", "bool", 0.8),
]


@pytest.mark.parametrize("name, fn, fmt, dtype, density", REDUCTIONS,
                         ids=[r[0] for r in REDUCTIONS])
def test_reductions(name, fn, fmt, dtype, density):
    """Default output (dense, as scipy's reductions; 0-d results are NumPy); all-zero inputs
    too."""
    for zero in (False, True):
        for shape in ((4, 6), (5, 3)):
            x = make_input(shape, fmt, dtype, density=density, seed=len(name), zero=zero)
            _both(fn, [x], None if name != "sum_all" else "coo", default="dense",
                  rtol=1e-5 if dtype == "float32" else None)


def test_reduction_of_a_full_row_and_negative_values():
    """max over a row of negative stored values and implicit zeros is 0; over a full row
    of negatives it is the largest of them (the interpreter says which)."""
    d = np.array([[-3.0, -1.0, -2.0], [-4.0, 0.0, -5.0], [0.0, 0.0, 0.0]])
    got, expected = _both(lambda x: sf.max(x, axis=1), [sp.csr_array(d)], None,
                          default="dense")
    np.testing.assert_array_equal(np.asarray(expected), [-1.0, 0.0, 0.0])


# --- matmul with dense operands ----------------------------------------------------------

def test_spmv_of_vstack():
    a = make_input((4, 6), "csr", "float64", seed=1)
    b = make_input((3, 6), "csr", "float64", seed=2)
    x = np.linspace(-1, 2, 6)
    got, _ = _both(lambda p, q, v: sf.vstack([p, q]) @ v, [a, b, x], "dense", rtol=1e-12)
    np.testing.assert_allclose(got, sp.vstack([a, b]) @ x, rtol=1e-12)


def test_spmm_and_spmv():
    A = make_input((5, 4), "csr", "float64", seed=5)
    X = np.arange(12, dtype=np.float64).reshape(4, 3) / 7
    got, _ = _both(lambda a, m: a @ m, [A, X], "dense", rtol=1e-12)
    np.testing.assert_allclose(got, A @ X, rtol=1e-12)
    C = make_input((5, 4), "csc", "float32", seed=6)
    v = np.arange(4, dtype=np.float32)
    got, _ = _both(lambda a, m: a @ m, [C, v], "dense", rtol=1e-5)
    np.testing.assert_allclose(got, C @ v, rtol=1e-5)
    got, _ = _both(lambda m, a: m @ a, [X.T.copy(), A.T.tocsr()], "dense", rtol=1e-12)


def test_matmul_to_sparse_output():
    A = make_input((5, 4), "csr", "float64", seed=5)
    X = np.arange(12, dtype=np.float64).reshape(4, 3) / 7
    _both(lambda a, m: a @ m, [A, X], "csr", rtol=1e-12)


# --- fusion: flatten(A) * b ----------------------------------------------------------------

@pytest.mark.parametrize("bfmt", ["csr", "coo"])
def test_flatten_times_sparse_vector(bfmt):
    A = make_input((4, 6), "csr", "float64", seed=2, density=0.6)
    flat = A.reshape((1, 24)).toarray()[0]
    b = make_input((24,), bfmt, "float64", seed=3, density=0.6)
    shifted = sp.csr_array(np.roll(flat, -1)) if bfmt == "csr" else \
        sp.coo_array(np.roll(flat, -1))
    for vec in (b, shifted):
        got, _ = _both(lambda a, v: a.reshape(-1) * v, [A, vec], "csr")
        ref = A.reshape((1, 24)).multiply(vec.toarray().reshape(1, 24))
        np.testing.assert_array_equal(got.toarray(), ref.toarray()[0])


# --- NaN and inf ---------------------------------------------------------------------------

def _with_specials(shape, seed):
    d = make_input(shape, "dense", "float64", seed=seed, density=0.7)
    d[0, 0] = np.nan
    d[1, 2] = np.inf
    d[-1, -1] = -np.inf
    return d


def test_sparse_times_dense_with_nan_and_inf():
    """0 * nan and 0 * inf are nan: positions A does not store still become nan."""
    A = make_input((4, 5), "csr", "float64", seed=1)
    A = sp.csr_array(A.toarray() * (np.arange(5) != 0))  # A[0, 0] is an implicit zero
    D = _with_specials((4, 5), seed=2)
    got, expected = _both(lambda a, d: a * d, [A, D], "csr")
    assert np.isnan(expected[0, 0])
    got, expected = _both(lambda a, d: a * d, [A, D], "dense")


def test_sparse_times_sparse_with_stored_nan():
    a = sp.csr_array(np.array([[0.0, 2.0, 0.0], [1.0, 0.0, 3.0]]))
    b = sp.csr_array(np.array([[np.nan, 1.0, np.inf], [2.0, 0.0, 0.0]]))
    for x, y in ((a, b), (b, a)):
        got, expected = _both(lambda p, q: p * q, [x, y], "csr")
        assert np.isnan(expected[0, 0]) and np.isnan(expected[0, 2])


def test_sum_with_nan_and_inf():
    D = _with_specials((4, 5), seed=3)
    S = sp.csr_array(D)
    _both(lambda x: sf.sum(x, axis=0), [S], None, default="dense")
    _both(lambda x: sf.max(x, axis=1), [S], None, default="dense")


# --- explicit zeros and non-canonical inputs ------------------------------------------------

def _explicit_zeros():
    """A CSR whose stored values include zeros (scipy keeps them)."""
    a = make_input((4, 6), "csr", "float64", seed=11, density=0.5)
    a.data[::3] = 0.0
    return a


def test_explicit_stored_zeros():
    a = _explicit_zeros()
    assert np.any(a.data == 0)
    _both(lambda x: x * 2, [a], "csr")
    _both(lambda x: sf.sum(x, axis=0), [a], "csr")
    _both(lambda x: sf.max(x, axis=1), [a], "csr")
    _both(lambda x, y: x * y, [a, make_input((4, 6), "csr", "float64", seed=1)], "csr")
    got, expected = _both(lambda x: sf.concat([x, x], axis=0), [a, ], "csr")
    np.testing.assert_array_equal(got.toarray(), np.vstack([a.toarray()] * 2))


def _noncanonical():
    """(name, array) pairs holding the same values as ``_reference()`` in storage scipy
    calls non-canonical: unsorted, duplicated, or merely not flagged canonical."""
    ref = _reference()
    coo = ref.tocoo()
    perm = np.random.default_rng(0).permutation(coo.nnz)
    unsorted = sp.coo_array((coo.data[perm], (coo.row[perm], coo.col[perm])), shape=ref.shape)
    # duplicates: split each value in two halves stored at the same position
    dup_data = np.concatenate([coo.data / 2, coo.data / 2])
    dups = sp.coo_array((dup_data, (np.tile(coo.row, 2), np.tile(coo.col, 2))), shape=ref.shape)
    csr_unsorted = ref.copy()
    for r in range(ref.shape[0]):
        lo, hi = csr_unsorted.indptr[r:r + 2]
        csr_unsorted.indices[lo:hi] = csr_unsorted.indices[lo:hi][::-1]
        csr_unsorted.data[lo:hi] = csr_unsorted.data[lo:hi][::-1]
    csr_unsorted.has_sorted_indices = False
    csr_dups = sp.csr_array((dup_data, (np.tile(coo.row, 2), np.tile(coo.col, 2))),
                            shape=ref.shape)  # scipy keeps duplicates given as triplets
    unflagged = ref.copy()
    unflagged.has_canonical_format = False
    return [("coo_unsorted", unsorted), ("coo_duplicates", dups),
            ("csr_unsorted", csr_unsorted), ("csr_duplicates", csr_dups),
            ("csr_unflagged", unflagged)]


def _reference():
    return make_input((5, 6), "csr", "float64", seed=21, density=0.5)


@pytest.mark.parametrize("name", ["coo_unsorted", "coo_duplicates", "csr_unsorted",
                                  "csr_duplicates", "csr_unflagged"])
def test_non_canonical_inputs(name):
    x = dict(_noncanonical())[name]
    ref = _reference().toarray()
    np.testing.assert_array_equal(x.toarray(), ref)  # the fixture holds what it claims
    other = make_input((5, 6), x.format, "float64", seed=22, density=0.5)
    for fn in (lambda a: a.T, lambda a: sf.concat([a, a], axis=1), lambda a: a * 2):
        got, expected = _both(fn, [x], "csr")
        np.testing.assert_array_equal(expected, np.asarray(fn(sf.asarray(ref)).interpret()))
    got, _ = _both(lambda a, b: a * b, [x, other], x.format)
    np.testing.assert_array_equal(_dense(got), ref * other.toarray())
    got, _ = _both(lambda a, b: a + b, [x, other], x.format)
    np.testing.assert_array_equal(_dense(got), ref + other.toarray())


def _dense(a):
    return a if isinstance(a, np.ndarray) else a.toarray()


def test_non_canonical_input_is_not_modified():
    x = dict(_noncanonical())["csr_unsorted"]
    before = (x.indptr.copy(), x.indices.copy(), x.data.copy())
    sf.jit(lambda a: a.T, out="csr")(x)
    for b, a in zip(before, (x.indptr, x.indices, x.data)):
        np.testing.assert_array_equal(a, b)


# --- invalid data ------------------------------------------------------------------------

def _csr():
    return make_input((3, 4), "csr", "float64", seed=4, density=0.5)


def _bad_indptr_order():
    a = _csr()
    a.indptr[1], a.indptr[2] = a.indptr[2], a.indptr[1]
    return a


def _bad_index():
    a = _csr()
    a.indices[-1] = 1_000_000
    return a


def _negative_index():
    a = _csr()
    a.indices[0] = -1
    return a


def _short_indptr():
    a = _csr()
    a.indptr = a.indptr[:-1].copy()
    return a


def _indptr_past_end():
    a = _csr()
    a.indptr[-1] = a.indices.shape[0] + 5
    return a


def _short_data():
    a = _csr()
    a.data = a.data[:-1].copy()
    return a


def _coo_out_of_range():
    a = _csr().tocoo()
    a.coords = (a.coords[0], a.coords[1] + 10)
    return a


def _coo_ragged():
    a = _csr().tocoo()
    a.coords = (a.coords[0], a.coords[1][:-1].copy())
    return a


INVALID = [
    ("indptr_not_monotone", _bad_indptr_order, "monotone"),
    ("index_out_of_range", _bad_index, "out of range"),
    ("negative_index", _negative_index, "out of range"),
    ("indptr_wrong_length", _short_indptr, "indptr"),
    ("indptr_past_indices", _indptr_past_end, "indptr"),
    ("data_too_short", _short_data, "stored values"),
    ("coo_out_of_range", _coo_out_of_range, "out of range"),
    ("coo_ragged_coords", _coo_ragged, r"coords\[1\]"),
]

# programs of each strategy: stream (shape op, map), accumulate (sum), dense (non-zero fill:
# the input is densified, which must not read malformed storage)
INVALID_PROGRAMS = [
    ("transpose", lambda a: a.T),
    ("times2", lambda a: a * 2),
    ("sum1", lambda a: sf.sum(a, axis=1)),
    ("plus1", lambda a: a + 1),
    ("pad_const", lambda a: sf.pad(a, 1, constant_values=5)),
]


@pytest.mark.parametrize("program", INVALID_PROGRAMS, ids=[p[0] for p in INVALID_PROGRAMS])
@pytest.mark.parametrize("name, make, message", INVALID, ids=[i[0] for i in INVALID])
def test_invalid_data_raises(name, make, message, program):
    bad = make()
    with pytest.raises(sf.InvalidData, match=message):
        sf.jit(program[1], out="csr")(bad)


def test_invalid_data_in_a_merge():
    with pytest.raises(sf.InvalidData, match="out of range"):
        sf.jit(lambda a, b: a * b, out="csr")(_bad_index(), _csr())
    with pytest.raises(sf.InvalidData, match="monotone"):
        sf.jit(lambda a, b: a + b, out="csr")(_csr(), _bad_indptr_order())


@pytest.mark.parametrize("fmt", ["bsr", "dia", "lil", "dok"])
def test_other_scipy_formats_are_converted(fmt):
    A = make_input((4, 6), "csr", "float64", seed=1)
    got = sf.jit(lambda a: a.T, out="csr")(A.asformat(fmt))
    check_result(got, A.toarray().T, "csr", exact_pattern=True)


def test_wrong_index_dtype_and_value_dtype():
    a = _csr()
    a.indices = a.indices.astype(np.float64)
    with pytest.raises(sf.InvalidData, match="index array"):
        sf.jit(lambda x: x.T, out="csr")(a)


def test_mismatched_sizes_raise():
    """Arrays whose sizes disagree with a traced signature are rejected, not misread."""
    f = sf.jit(lambda a, b: a * b, out="csr")
    with pytest.raises(sf.IllFormedProgram, match="cannot be broadcast"):
        f(make_input((4, 6), "csr"), make_input((4, 5), "csr"))


# --- sf.show and compute ----------------------------------------------------------------

def test_show_returns_cython_with_header(capsys):
    A = make_input((4, 6), "csr", "float64", seed=1)
    text = sf.show(lambda a: a[::2] * 2, A, out="csr")
    assert capsys.readouterr().out.strip() == text.strip()
    head = text.split("cdef void _run_body(")[0]
    assert "# sparsefold kernel" in head
    assert "# Program:" in head and "input a0" in head and "slice" in head
    assert "multiply" in head
    assert "Strategy:" in head
    assert "run = sf_function(" in text and "nogil" in text
    assert text == sf.show(lambda a: a[::2] * 2, A, out="csr")  # deterministic


def test_show_of_a_lazy_array(capsys):
    A = make_input((4, 6), "csr", "float64", seed=1)
    text = sf.show(sf.asarray(A)[::2] * 2, out="csr")
    capsys.readouterr()
    assert "# Program:" in text and "run = sf_function(" in text


def test_compute_on_lazy_arrays():
    A = make_input((9, 6), "csr", "float64", seed=1)
    B = make_input((5, 6), "csr", "float64", seed=2)
    y = sf.asarray(A)[::2] * sf.asarray(B)
    expected = y.interpret()
    for out in ("csr", "dense", "coo"):
        check_result(y.compute(out=out), expected, out)
    check_result(y.compute(), expected, "csr")  # default: the first sparse input's format
    z = sf.concat([sf.asarray(A), sf.asarray(A.tocoo())], axis=0)
    check_result(z.compute(out="csc"), z.interpret(), "csc", exact_pattern=True)


def test_index_width_int64_inputs_give_same_result():
    A = make_input((5, 6), "csr", "float64", seed=1)
    B = with_index_dtype(A.copy(), "int64")
    f = sf.jit(lambda a: a[::2] * 2, out="csr")
    np.testing.assert_array_equal(f(A).toarray(), f(B).toarray())


def test_int64_coordinates_chosen_per_call():
    """Collapsing a 70000 x 70000 matrix (int32 indices) needs int64 coordinates."""
    n = 70_000
    A = sp.csr_array((np.array([1.0, 2.0, 3.0]), (np.array([0, 50_000, n - 1]),
                                                  np.array([5, n - 2, n - 1]))), shape=(n, n))
    A = with_index_dtype(A, "int32")
    got = sf.jit(lambda a: a.reshape(-1), out="coo")(A)
    assert got.shape == (n * n,)
    np.testing.assert_array_equal(got.coords[0], [5, 50_000 * n + n - 2, n * n - 1])
    np.testing.assert_array_equal(got.data, [1.0, 2.0, 3.0])


def test_scipy_matrix_and_read_only_inputs():
    """spmatrix inputs give sparray results; read-only buffers are read in place."""
    A = make_input((4, 6), "csr", "float64", seed=1)
    M = sp.csr_matrix(A)
    got = sf.jit(lambda a: a[::2] * 2, out="csr")(M)
    check_result(got, A.toarray()[::2] * 2, "csr")
    for arr in (A.data, A.indices, A.indptr):
        arr.flags.writeable = False
    check_result(sf.jit(lambda a: a[::2] * 2, out="csr")(A), A.toarray()[::2] * 2, "csr")


def test_strided_dense_operands():
    """Non-contiguous and Fortran-ordered dense operands."""
    A = make_input((5, 6), "csr", "float64", seed=1)
    D = (np.arange(60, dtype=np.float64).reshape(5, 12) - 20)[:, ::2]
    _both(lambda a, d: a * d, [A, D], "csr")
    _both(lambda a, d: a * d, [A, np.asfortranarray(D)], "csr")


def test_tensordot_of_a_traced_axis_with_a_constant_one():
    # found by the language generator (issue #27): x1's length is traced as n0 and assumed
    # equal to 2 (the padded, sliced x0's); normalizing the contraction reshapes under that
    # assumption, which reshape and split refused ("cannot reshape (n0,) into (2, 1)")
    x0 = sp.coo_array((np.array([], dtype="float32"), (np.array([], dtype="int64"),)),
                      shape=(1,))
    x1 = sp.coo_array((np.array([-9, 7]), (np.array([0, 1]),)), shape=(2,))
    def fn(a, b):
        return sf.all(sf.isfinite(sf.tensordot(
            sf.pad(a, ((2, 0),), constant_values=0)[None, None, ::-2], b, axes=1)),
            axis=None, keepdims=True)
    from sparsefold import verify
    verify.differential(fn, x0, x1, out="csr")


@pytest.mark.parametrize("out", ["csr", "coo", "dense"])
@pytest.mark.parametrize("fa, fk", [("csr", "csr"), ("coo", "csc"), ("csc", "coo")])
def test_kronecker_product_by_broadcasting_pairs_entries(fa, fk, out):
    # A[:, None, :, None] * K[None, :, None, :]: the two views' stored axes are each other's
    # broadcast axes, so every pair of entries is an output entry (co-iteration "product");
    # each broadcast was stored before (O(nnz(K) n^2) entries, dense work)
    rng = np.random.default_rng(3)
    A = sp.random_array((7, 5), density=0.3, format=fa, rng=rng)
    K = sp.random_array((3, 4), density=0.5, format=fk, rng=rng)
    fn = sf.jit(lambda a, k: (a[:, None, :, None] * k[None, :, None, :]).reshape(
        a.shape[0] * k.shape[0], a.shape[1] * k.shape[1]), out=out)
    got = fn(A, K)
    got = got if isinstance(got, np.ndarray) else got.toarray()
    np.testing.assert_array_equal(got, sp.kron(A, K).toarray())
    assert not fn.kernel_for(A, K).cost.dense_work
    assert any(s.plan is not None and getattr(s.plan, "mode", "") == "product"
               for _, s in fn.kernel_for(A, K).stages)


def test_a_float16_temporary_is_stored_as_float32():
    # found by the language generator: round() of a bool pydata input is float16, staged
    # into a sparse temporary before the matmul; scipy.sparse holds no float16
    import sparse

    from sparsefold import verify
    verify.differential(
        lambda x0, x1, x2: sf.astype(sf.abs((sf.round(x0, 0) @ x1) + x2), "float64"),
        sparse.COO(np.array([[0, 1], [0, 1]]), np.array([True, True]), shape=(3, 2),
                   fill_value=False),
        sp.csr_array(np.array([[1, 0, 2], [0, 3, 0]], dtype=np.int64)),
        np.array(0.5, dtype="float32"), out="csr")


@pytest.mark.parametrize("out", ["csr", "coo"])
def test_a_reduction_over_no_axes_is_its_argument(out):
    # tensordot(A, s, axes=0) is a sum over no axes; it was planned as a reduction into a
    # dense n x n accumulator compressed after (found by the program generator's scale
    # check: 17x time for 4x entries), and its stated cost said O(nnz) all the same
    A = sp.random_array((40, 40), density=0.05, format="csr", rng=np.random.default_rng(5))
    s = np.asarray(-2.5)
    fn = sf.jit(lambda a, b: sf.tensordot(a, b, axes=0), out=out)
    np.testing.assert_array_equal(fn(A, s).toarray(), -2.5 * A.toarray())
    kernel = fn.kernel_for(A, s)
    assert not kernel.cost.dense_work
    assert all(getattr(st.plan, "assembly", None) not in ("dense", "accumulate")
               for _, st in kernel.stages + [(None, kernel.final)])
    # the dtype of the (empty) reduction stays: an integer sum is the platform integer
    x = np.arange(6, dtype=np.int8).reshape(2, 3)
    got = sf.jit(lambda a: sf.sum(a, axis=()))(x)
    np.testing.assert_array_equal(got, np.sum(x, axis=()))
    assert got.dtype == np.sum(x, axis=()).dtype


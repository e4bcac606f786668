"""Regressions found by the program generator and ``sparsefold fuzz --programs`` (issue #39),
each at its mechanism: the program as found, variants of it, and the cost bound its plan
states (``kernel_for(...).cost``: no product of extents with sparse inputs and output).
Results are compared with NumPy on the dense arrays."""

import numpy as np
import pytest
import scipy.sparse as sp
import sparse

import sparsefold as sf

pytestmark = pytest.mark.cython


def _dense(a):
    if hasattr(a, "todense"):
        return np.asarray(a.todense())
    return np.asarray(a)


def _coo3(shape, density, seed, dtype="float64", fill=0.0):
    return sparse.random(shape, density=density, random_state=seed,
                         fill_value=fill).astype(dtype)


# --- a reduction over a middle axis into a sparse n-d result (p55 of seed 2027) -----------
# It was accumulated in a dense array of the result's shape (rows x columns) and made sparse
# after; now each entry's contribution is buffered at its output coordinate, sorted and
# combined (planner._reduced_assembly, kernel.combine_duplicates)

def _where_sum(x0, x1, x2):
    return sf.einsum('ijk->ik', sf.where(x0, x1, x2))


@pytest.mark.parametrize("out", ["csr", "csc", "coo"])
def test_sum_over_middle_axis_is_sorted_not_dense(out):
    x0 = _coo3((30, 20, 10), 0.05, 1, "float32")
    x1 = _coo3((30, 20, 10), 0.05, 2)
    x2 = _coo3((30, 20, 10), 0.05, 3)
    jf = sf.jit(_where_sum, out=out)
    got = jf(x0, x1, x2)
    expected = np.where(_dense(x0), _dense(x1), _dense(x2)).sum(axis=1)
    np.testing.assert_allclose(_dense(got), expected, rtol=1e-12)
    kernel = jf.kernel_for(x0, x1, x2)
    assert not kernel.cost.dense_work, kernel.cost
    assert kernel.final.plan.assembly == "sort", kernel.final.plan.assembly


def test_p55_filled_operand_is_a_dense_valued_result():
    # x2's fill 1.0 makes where(...) 1 wherever x0 and x2 store nothing: every output cell
    # is an entry, so combining the background per cell is the output's size, not dense work
    x0 = sparse.COO(np.zeros((3, 0), np.int64), np.array([], "float32"), shape=(4, 2, 2))
    x1 = sp.coo_array((np.array([]), (np.array([], np.int64),) * 3), shape=(4, 2, 2))
    x2 = sparse.COO(np.zeros((3, 0), np.int64), np.array([]), shape=(4, 2, 2), fill_value=1.0)
    jf = sf.jit(_where_sum, out="csr")
    got = jf(x0, x1, x2)
    np.testing.assert_array_equal(_dense(got), np.full((4, 2), 2.0))
    assert not jf.kernel_for(x0, x1, x2).cost.dense_work


@pytest.mark.parametrize("program, numpy", [
    (lambda a: sf.sum(a, axis=1), lambda a: a.sum(axis=1)),
    (lambda a: sf.sum(a * a, axis=(1,)), lambda a: (a * a).sum(axis=1)),
    (lambda a: sf.any(a, axis=1), lambda a: a.any(axis=1)),
    (lambda a: sf.sum(a - a, axis=1), lambda a: (a - a).sum(axis=1)),  # nothing stored
], ids=["sum", "sum_square", "any", "cancel"])
def test_middle_axis_reductions_agree_with_numpy(program, numpy):
    a = _coo3((25, 7, 12), 0.1, 4)
    jf = sf.jit(program, out="csr")
    got = jf(a)
    expected = numpy(_dense(a))
    np.testing.assert_allclose(_dense(got), expected, rtol=1e-12)
    assert got.nnz == np.count_nonzero(expected)  # no explicit zeros stored
    kernel = jf.kernel_for(a)
    assert not kernel.cost.dense_work, kernel.cost
    assert kernel.final.plan.assembly == "sort"


def test_middle_axis_sum_at_a_shape_no_dense_accumulator_fits():
    # 10**10 output cells: a rows x columns accumulator could not even be allocated
    n = 100_000
    rng = np.random.default_rng(5)
    coords = np.stack([rng.integers(0, n, 500), rng.integers(0, 3, 500),
                       rng.integers(0, n, 500)])
    coords[:, 1] = coords[:, 0]  # a duplicate (i, k) reached from two j
    coords[1, 1] = (coords[1, 0] + 1) % 3
    data = rng.standard_normal(500)
    a = sparse.COO(coords, data, shape=(n, 3, n))
    got = sf.jit(lambda x: sf.sum(x, axis=1), out="csr")(a)
    expected = sp.csr_array((data, (coords[0], coords[2])), shape=(n, n))  # sums duplicates
    expected.eliminate_zeros()
    assert got.nnz == expected.nnz
    assert abs(sp.csr_array(got.to_scipy_sparse()) - expected).max() < 1e-12


# --- a 0-d dense operand beside sparse scalars (seed 777) ---------------------------------
# stack([A.ravel()[0], A.ravel()[0], x]) co-iterates a 0-d dense leaf: its cursor had no
# coordinate to count its one stop with (cursors.Cursor._exhausted: IndexError)

def _scalar(x0):
    return sf.reshape(x0, (-1,))[0, ...]


ZERO_D_PROGRAMS = {
    "seed777": (lambda x0, x1: sf.compress([True, False, True], sf.clip(
        sf.stack([_scalar(x0), _scalar(x0), x1], axis=0), 0.5, 3), axis=0),
        lambda a, x: np.compress([True, False, True],
                                 np.clip(np.stack([a[0, 0], a[0, 0], x]), 0.5, 3))),
    "stack": (lambda x0, x1: sf.stack([_scalar(x0), x1], axis=0),
              lambda a, x: np.stack([a[0, 0], x])),
    "stack_first": (lambda x0, x1: sf.stack([x1, _scalar(x0)], axis=0),
                    lambda a, x: np.stack([x, a[0, 0]])),
    "add": (lambda x0, x1: _scalar(x0) + x1, lambda a, x: a[0, 0] + x),
    "maximum": (lambda x0, x1: sf.maximum(_scalar(x0), x1), lambda a, x: np.maximum(a[0, 0], x)),
    # dense-valued: every coordinate is visited (the co-iteration's universe)
    "clip_stack": (lambda x0, x1: sf.clip(sf.stack([x1, _scalar(x0)], axis=0), 0.5, 3),
                   lambda a, x: np.clip(np.stack([x, a[0, 0]]), 0.5, 3)),
    "plus1": (lambda x0, x1: sf.stack([_scalar(x0), x1, _scalar(x0)], axis=0) + 1,
              lambda a, x: np.stack([a[0, 0], x, a[0, 0]]) + 1),
    "cos_add": (lambda x0, x1: sf.cos(_scalar(x0) + x1), lambda a, x: np.cos(a[0, 0] + x)),
    "stack_sum": (lambda x0, x1: sf.sum(sf.stack([x0[0, 0], x1]), axis=0),
                  lambda a, x: np.stack([a[0, 0], x]).sum(axis=0)),
}


@pytest.mark.parametrize("name", list(ZERO_D_PROGRAMS))
@pytest.mark.parametrize("stored", [True, False], ids=["stored", "empty"])
@pytest.mark.parametrize("x1", [np.array(1.5, "float32"), np.array(0.0, "float32"),
                                np.array(3, "int32")], ids=["f32", "zero", "i32"])
def test_zero_d_dense_beside_sparse_scalars(name, stored, x1):
    program, numpy = ZERO_D_PROGRAMS[name]
    x0 = sp.csr_array(np.array([[2.0]])) if stored else sp.csr_array((1, 1))
    got = sf.jit(program)(x0, x1)
    np.testing.assert_allclose(_dense(got), numpy(x0.toarray(), x1), rtol=1e-6)


# --- argmax/argmin of a filled pydata array (sparsefold fuzz --programs 400 --seed 4242) ----
# vecdot(argmax(x0, axis=0), logical_not(x1)) grew 25-40x for 4x the entries when x0 had a
# fill: the arg-reduction singled out 0, so x != 0 was dense-valued, and planner.dense_valued
# took where(present, stored, c) for a dense operand; rows x columns temporaries were staged

def _no_rows_by_columns(kernel):
    # no term of the bound multiplies extents, and no temporary is a dense matrix
    assert not kernel.cost.dense_work, kernel.cost
    assert not any(m.product_of_extents for m in kernel.cost.terms), kernel.cost
    dense = [t.name for t, _ in kernel.stages if t.format.is_dense and t.ndim >= 2]
    assert not dense, (dense, kernel.cost)


ARG_PROGRAMS = {
    "vecdot_not": (lambda a, b: sf.vecdot(sf.argmax(a, axis=0), sf.logical_not(b)),
                   lambda a, b: np.vecdot(a.argmax(axis=0), np.logical_not(b))),
    "vecdot_pos": (lambda a, b: sf.vecdot(sf.argmax(a, axis=0), sf.positive(b)),
                   lambda a, b: np.vecdot(a.argmax(axis=0), b)),
    "argmin1": (lambda a, b: sf.argmin(a, axis=1) + sf.sum(b, axis=1),
                lambda a, b: a.argmin(axis=1) + b.sum(axis=1)),
}


@pytest.mark.parametrize("name", list(ARG_PROGRAMS))
@pytest.mark.parametrize("fill", [1.0, 0.5, -2.0])
def test_arg_reduction_of_a_filled_array_stays_sparse(name, fill):
    program, numpy = ARG_PROGRAMS[name]
    a = _coo3((40, 30), 0.1, 6, fill=fill)
    # stored values equal to the fill, and above and below it
    a = sparse.COO(a.coords, np.where(np.arange(a.nnz) % 3 == 0, fill, a.data - 0.5),
                   shape=a.shape, fill_value=fill)
    b = _coo3((40, 30), 0.1, 7)
    jf = sf.jit(program)
    np.testing.assert_allclose(_dense(jf(a, b)), numpy(_dense(a), _dense(b)), rtol=1e-12)
    _no_rows_by_columns(jf.kernel_for(a, b))


@pytest.mark.parametrize("fill", [2, -1])
def test_integer_arg_reduction_of_a_filled_array(fill):
    rng = np.random.default_rng(8)
    coords = np.unique(rng.integers(0, 12, (2, 40)), axis=1)
    a = sparse.COO(coords, rng.integers(-3, 4, coords.shape[1]), shape=(12, 12),
                   fill_value=fill)
    for program, numpy in ((lambda x: sf.argmax(x, axis=0), lambda x: x.argmax(axis=0)),
                           (lambda x: sf.argmin(x, axis=1), lambda x: x.argmin(axis=1))):
        jf = sf.jit(program)
        np.testing.assert_array_equal(_dense(jf(a)), numpy(_dense(a)))
        _no_rows_by_columns(jf.kernel_for(a))


# --- a dense-valued pydata result handed back with its fill (seed 4242) --------------------
# nanmean(asin(x0), axis=(1,), keepdims=True) @ x1 with filled COO inputs into CSC: the
# kernels' bound was the output's size, but storage.fills.with_fill rebuilt the result
# through pydata's GCXS -> COO -> argsort of every cell (30x the time for 16x the entries)

def test_filled_dense_valued_result_is_built_without_pydata_conversions(monkeypatch):
    x0 = _coo3((30, 40), 0.2, 9, fill=0.5)
    x1 = _coo3((1, 40), 0.5, 10, fill=1.0)
    program = lambda a, b: sf.nanmean(sf.asin(a), axis=(1,), keepdims=True,  # noqa: E731
                                      dtype='float64') @ b
    jf = sf.jit(program, out="csc")
    jf(x0, x1)  # built
    for cls in (sparse.COO, sparse.GCXS):
        monkeypatch.setattr(cls, "from_numpy", _refused)
    got = jf(x0, x1)
    monkeypatch.undo()
    with np.errstate(all="ignore"):
        expected = np.nanmean(np.arcsin(_dense(x0)), axis=1, keepdims=True) @ _dense(x1)
    np.testing.assert_allclose(_dense(got), expected, rtol=1e-12)
    assert not jf.kernel_for(x0, x1).cost.dense_work


def _refused(*args, **kwargs):
    raise AssertionError("a filled result was rebuilt through pydata's from_numpy")


@pytest.mark.parametrize("fill", [1.0, -0.5, np.nan])
@pytest.mark.parametrize("kind", ["coo", "csr", "csc", "coo3"])
def test_with_fill_matches_pydata(kind, fill):
    from sparsefold.storage.fills import with_fill
    rng = np.random.default_rng(11)
    d = rng.choice([0.0, 1.0, -0.5, 2.0, np.nan], size=(4, 3, 2) if kind == "coo3" else (6, 5))
    if kind.startswith("coo"):
        got, expected = with_fill(sparse.COO.from_numpy(d), fill), \
            sparse.COO.from_numpy(d, fill_value=fill)
        np.testing.assert_array_equal(got.coords, expected.coords)
    else:
        ax = (0,) if kind == "csr" else (1,)
        got = with_fill(sparse.GCXS.from_numpy(d, compressed_axes=ax), fill)
        expected = sparse.GCXS.from_numpy(d, compressed_axes=ax, fill_value=fill)
        np.testing.assert_array_equal(got.indptr, expected.indptr)
        np.testing.assert_array_equal(got.indices, expected.indices)
        assert got.compressed_axes == expected.compressed_axes
    assert got.nnz == expected.nnz
    np.testing.assert_array_equal(got.todense(), expected.todense())


# --- zeros placed over a region of symbolic size (seed 4242) -------------------------------
# y = block_array([[sqrt(x0)], [x1]]); y[::2] = 0 in a jit trace placed a dense temporary of
# broadcast zeros over the region (rows/2 x columns visited for a result that stores less
# than its inputs); now where(region(coordinates), 0, y), which the lattice iterates as y
# alone (where(c, 0, 0) is 0 whatever c is: lattice.zero_where)

def _block(x0, x1):
    return sf.block_array([[sf.sqrt(x0)], [x1]])


PLACE_KEYS = {"rows2": np.s_[::2], "rows1_3": np.s_[1::3], "cols2": np.s_[:, ::2],
              "reversed": np.s_[-2::-2, 1:5], "tail": np.s_[3:], "all": np.s_[:],
              "row": np.s_[2], "empty": np.s_[5:2], "ellipsis": np.s_[..., 1::2]}


@pytest.mark.parametrize("out", ["csr", "dcsr", None])
@pytest.mark.parametrize("key", list(PLACE_KEYS))
def test_zeros_placed_over_a_symbolic_region_stay_sparse(key, out):
    x0 = sp.random_array((9, 7), density=0.4, random_state=1, format="csr")
    x1 = sp.random_array((4, 7), density=0.4, random_state=2, format="csr")
    x0.data[0] = np.nan  # overwritten inside the region, kept outside

    def program(a, b):
        y = _block(a, b)
        y[PLACE_KEYS[key]] = 0.0
        return y
    jf = sf.jit(program, out=out)
    got = jf(x0, x1)
    expected = np.vstack([np.sqrt(x0.toarray()), x1.toarray()])
    expected[PLACE_KEYS[key]] = 0.0
    np.testing.assert_array_equal(_dense(got), expected)
    assert not isinstance(got, np.ndarray)  # a sparse result, as scipy's
    kernel = jf.kernel_for(x0, x1)
    _no_rows_by_columns(kernel)

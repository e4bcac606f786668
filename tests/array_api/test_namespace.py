"""sparsefold.array_api: the namespace, its arrays' protocols, creation functions (which
results are sparse), assignment, and when programs are computed and by which engine.

The data-apis conformance suite runs outside CI (docs/array_api.md, "Conformance"); these
are the properties it does not check: sparsity, laziness, kernel reuse, interop."""

from __future__ import annotations

import sys

import array_api_compat
import numpy as np
import pytest
import scipy.sparse as sp

import sparsefold as sf
import sparsefold.array_api as xp
from sparsefold import materialize
from sparsefold.spec.errors import IllFormedProgram

STANDARD_NAMES = """
arange asarray empty empty_like eye from_dlpack full full_like linspace meshgrid ones ones_like
tril triu zeros zeros_like astype can_cast finfo iinfo isdtype result_type abs acos acosh add
asin asinh atan atan2 atanh bitwise_and bitwise_left_shift bitwise_invert bitwise_or
bitwise_right_shift bitwise_xor ceil clip conj copysign cos cosh divide equal exp expm1 floor
floor_divide greater greater_equal hypot imag isfinite isinf isnan less less_equal log log1p
log2 log10 logaddexp logical_and logical_not logical_or logical_xor maximum minimum multiply
negative nextafter not_equal positive pow real reciprocal remainder round sign signbit sin sinh
square sqrt subtract tan tanh trunc take take_along_axis matmul matrix_transpose tensordot
vecdot broadcast_arrays broadcast_to concat expand_dims flip moveaxis permute_dims repeat
reshape roll squeeze stack tile unstack argmax argmin count_nonzero nonzero searchsorted where
unique_all unique_counts unique_inverse unique_values argsort sort cumulative_prod
cumulative_sum max mean min prod std sum var all any diff __array_namespace_info__
bool int8 int16 int32 int64 uint8 uint16 uint32 uint64 float32 float64 complex64 complex128
e inf nan pi newaxis
""".split()
LINALG = ("cholesky cross det diagonal eigh eigvalsh inv matmul matrix_norm matrix_power "
          "matrix_rank matrix_transpose outer pinv qr slogdet solve svd svdvals tensordot "
          "trace vecdot vector_norm").split()
FFT = ("fft ifft fftn ifftn rfft irfft rfftn irfftn hfft ihfft fftfreq rfftfreq fftshift "
       "ifftshift").split()


def _csr(n=6, m=7, seed=3):
    return sp.random_array((n, m), density=0.4, format="csr", random_state=seed,
                           data_sampler=np.random.default_rng(seed).normal)


@pytest.fixture
def compiled(monkeypatch):
    """Every materialization by compiled kernels (the interpreter's threshold 0)."""
    monkeypatch.setattr(materialize, "INTERPRET_MAX", 0)


def _kernels() -> int:
    return len(sys.modules["sparsefold.jit"]._KERNELS)


# --- the namespace ---------------------------------------------------------------------------

def test_every_name_of_the_standard_is_there():
    assert xp.__array_api_version__ == "2024.12"
    assert [n for n in STANDARD_NAMES if not hasattr(xp, n)] == []
    assert [n for n in LINALG if not hasattr(xp.linalg, n)] == []
    assert [n for n in FFT if not hasattr(xp.fft, n)] == []


def test_arrays_report_their_namespace_and_the_ecosystem_finds_it():
    x = xp.asarray(_csr())
    assert x.__array_namespace__() is xp
    assert x.__array_namespace__(api_version="2023.12") is xp
    with pytest.raises(ValueError, match="api_version"):
        x.__array_namespace__(api_version="1999.01")
    assert array_api_compat.is_array_api_obj(x)
    assert array_api_compat.array_namespace(x, xp.asarray([1.0])) is xp
    assert array_api_compat.array_namespace(sf.asarray(np.ones(2))) is xp  # one array class
    assert x.device == xp.CPU and x.to_device("cpu") is x
    with pytest.raises(ValueError, match="CPU only"):
        x.to_device("cuda:0")


def test_dtypes_and_inspection():
    assert xp.float64 == np.dtype("float64") and xp.asarray([1.0]).dtype == xp.float64
    assert xp.isdtype(xp.int8, "signed integer") and xp.isdtype(xp.uint8, ("bool", "integral"))
    assert not xp.isdtype(xp.float32, "complex floating")
    f = xp.finfo(xp.complex64)
    assert f.dtype == xp.float32 and isinstance(f.eps, float) and f.bits == 32
    i = xp.iinfo(xp.asarray(np.int16(3)))
    assert (i.min, i.max, i.bits) == (-32768, 32767, 16)
    info = xp.__array_namespace_info__()
    assert info.default_dtypes() == {"real floating": xp.float64,
                                     "complex floating": xp.complex128,
                                     "integral": xp.int64, "indexing": xp.int64}
    assert set(info.dtypes(kind="unsigned integer")) == {"uint8", "uint16", "uint32",
                                                         "uint64"}
    assert info.devices() == [xp.CPU] and info.capabilities()["boolean indexing"]
    with pytest.raises(IllFormedProgram, match="casting complex"):
        xp.astype(xp.asarray([1j]), xp.float64)


# --- creation: sparse where the standard allows -------------------------------------------------

def test_creation_results_that_are_sparse_store_nothing_they_need_not():
    z = xp.zeros((1000, 2000), dtype=xp.float32).compute()
    assert sp.issparse(z) and z.nnz == 0 and z.dtype == np.float32
    assert xp.full((3, 4), 0.0).compute().nnz == 0          # a +0 fill is zeros
    e = xp.eye(5, 7, k=2).compute()
    assert sp.issparse(e) and e.nnz == 5 and np.array_equal(e.toarray(), np.eye(5, 7, k=2))
    assert np.array_equal(np.asarray(xp.eye(4, k=-3)), np.eye(4, k=-3))
    assert xp.zeros_like(xp.asarray(_csr())).compute().nnz == 0
    t = xp.tril(xp.asarray(_csr())).compute()
    assert sp.issparse(t) and np.array_equal(t.toarray(), np.tril(_csr().toarray()))


def test_creation_results_that_are_dense_are_lazy_constants():
    o = xp.ones((10 ** 6, 10 ** 6))        # 8 TB if it were held: it is a broadcast scalar
    assert o.shape == (10 ** 6, 10 ** 6) and not o.bindings
    a = _csr()
    y = (xp.ones(a.shape) * xp.asarray(a)).compute()   # ones * sparse stays sparse
    assert sp.issparse(y) and y.nnz == a.nnz
    m = xp.full((2, 2), -0.0)                           # -0.0 is not +0: dense
    assert np.signbit(np.asarray(m)).all()
    np.testing.assert_array_equal(np.asarray(xp.full((2, 3), 7, dtype=xp.int8)),
                                  np.full((2, 3), 7, np.int8), strict=True)
    np.testing.assert_array_equal(np.asarray(xp.arange(2, 11, 3)), np.arange(2, 11, 3),
                                  strict=True)
    np.testing.assert_allclose(np.asarray(xp.arange(0.5, 2.0, 0.25)),
                               np.arange(0.5, 2.0, 0.25))
    np.testing.assert_array_equal(np.asarray(xp.linspace(0, 1, 7)), np.linspace(0, 1, 7))
    np.testing.assert_array_equal(np.asarray(xp.linspace(0, 1, 4, endpoint=False)),
                                  np.linspace(0, 1, 4, endpoint=False))
    v = sp.coo_array(np.array([0.0, 2.0, 0.0]))
    gx, gy = xp.meshgrid(xp.asarray(v), xp.asarray(np.arange(2.0)))
    want = np.meshgrid(v.toarray(), np.arange(2.0))
    assert np.array_equal(np.asarray(gx), want[0]) and np.array_equal(np.asarray(gy), want[1])
    assert sp.issparse(gx.compute())                   # a grid of a sparse vector: sparse


def test_asarray_copies_exactly_when_asked():
    a = np.arange(4.0)
    shared, copied = xp.asarray(a), xp.asarray(a, copy=True)
    a[0] = 9.0
    assert float(shared[0]) == 9.0 and float(copied[0]) == 0.0
    with pytest.raises(ValueError, match="copy=False"):
        xp.asarray(a, dtype=xp.float32, copy=False)
    with pytest.raises(ValueError, match="copy=False"):
        xp.asarray([1, 2], copy=False)
    assert xp.asarray([True, 2]).dtype == xp.int64 and xp.asarray(1j).dtype == xp.complex128
    assert np.array_equal(np.from_dlpack(xp.asarray(a) * 2), a * 2)


# --- arrays: scalars, assignment, in-place -------------------------------------------------------

def test_scalar_conversions_compute_zero_d_arrays():
    x = xp.asarray(_csr())
    assert float(xp.sum(x)) == pytest.approx(_csr().sum())
    assert bool(xp.any(x != 0)) and int(xp.count_nonzero(x)) == _csr().nnz
    assert [0, 1, 2][xp.asarray(np.int64(2))] == 2         # __index__
    with pytest.raises(TypeError, match="ambiguous"):
        bool(x)
    with pytest.raises(TypeError, match="complex"):
        float(xp.asarray(1j))
    with pytest.raises(TypeError, match="symbolic inputs"):
        bool(sf.symbol("A", ("I",))[0] > 0)


def test_assignment_writes_numpy_arrays_and_rebuilds_programs():
    a = np.arange(6.0).reshape(2, 3)
    x = xp.asarray(a)
    alias = xp.asarray(x, copy=False)
    x[0, ::2] = -1.0                                         # NumPy's write, seen by both
    assert a[0, 0] == -1.0 and float(alias[0, 2]) == -1.0
    s = _csr()
    y = xp.asarray(s)
    y[1:3, :] = 0.0                                          # a sparse array stays sparse
    y[y > 0.5] = 0.5
    want = s.toarray()
    want[1:3] = 0.0
    want[want > 0.5] = 0.5
    got = y.compute()
    assert sp.issparse(got) and np.array_equal(got.toarray(), want)
    assert np.array_equal(s.toarray()[1:3], _csr().toarray()[1:3])   # s was not written
    z = xp.asarray(_csr())
    z[0] = xp.asarray(np.arange(7.0))                        # a value of the region's shape
    assert np.array_equal(np.asarray(z)[0], np.arange(7.0))
    w = xp.asarray(np.zeros(5))
    w[xp.asarray(np.array([True, False, True, False, False]))] = xp.asarray([1.0, 2.0])
    assert np.array_equal(np.asarray(w), [1.0, 0, 2.0, 0, 0])
    w[xp.asarray(np.array([0, 1]))] = 5.0    # a NumPy array: NumPy's own assignment
    assert np.array_equal(np.asarray(w), [5.0, 5.0, 2.0, 0, 0])
    with pytest.raises(IndexError, match="boolean mask"):  # a program: not supported
        y[xp.asarray(np.array([0, 1]))] = 1.0


def test_in_place_operators_keep_the_dtype():
    x = xp.asarray(np.arange(3, dtype=np.int8))
    x += 1
    x *= xp.asarray(np.int8(2))
    assert x.dtype == xp.int8 and np.array_equal(np.asarray(x), [2, 4, 6])
    y = xp.asarray(_csr())
    y -= y                                                   # a program: still lazy, sparse
    assert sp.issparse(y.compute()) and np.all(np.asarray(y) == 0)
    with pytest.raises(IllFormedProgram, match="same_kind"):
        x += 1.5


# --- engines: the interpreter below the threshold, one kernel per structure above ----------------

def test_small_programs_are_interpreted_without_compiling():
    before = _kernels()
    x = xp.asarray(np.random.default_rng(0).normal(size=(30, 30)))
    for k in range(20):
        assert float(xp.sum(xp.sin(x) * k)) == pytest.approx(np.sum(np.sin(x) * k))
    assert _kernels() == before


def test_a_loop_over_sizes_compiles_one_kernel(compiled):
    before = _kernels()
    for n in (40, 55, 70):
        a = _csr(n, n + 1, seed=n)
        assert float(xp.sum(xp.asarray(a) * 3.0)) == pytest.approx(3 * a.sum())
    assert _kernels() - before == 1


def test_ordering_and_set_functions_on_sparse_arrays(compiled):
    a = _csr()
    d = a.toarray()
    x = xp.asarray(a)
    s = xp.sort(x, axis=1).compute()
    assert sp.issparse(s) and np.array_equal(s.toarray(), np.sort(d, axis=1))
    assert np.array_equal(xp.sort(x, axis=0, descending=True).compute().toarray(),
                          np.flip(np.sort(d, axis=0), 0))
    assert np.array_equal(np.asarray(xp.argsort(x, axis=1)), np.argsort(d, 1, kind="stable"))
    u = xp.unique_all(x)
    values, index, inverse, counts = np.unique(d, return_index=True, return_inverse=True,
                                               return_counts=True)
    assert np.array_equal(np.asarray(u.values), values)
    assert np.array_equal(np.asarray(u.indices), index)
    assert np.array_equal(np.asarray(u.counts), counts)
    assert np.array_equal(np.asarray(u.inverse_indices), inverse.reshape(d.shape))
    v = xp.sort(xp.reshape(x, (-1,)))
    probe = np.array([-1.0, 0.0, 0.25, 3.0])
    for side in ("left", "right"):
        assert np.array_equal(np.asarray(xp.searchsorted(v, xp.asarray(probe), side=side)),
                              np.searchsorted(np.sort(d.ravel()), probe, side=side))
    assert np.allclose(np.asarray(xp.cumulative_sum(x, axis=1, include_initial=True)),
                       np.concatenate([np.zeros((6, 1)), np.cumsum(d, 1)], axis=1))
    assert np.array_equal(np.asarray(xp.nonzero(x)[1]), np.nonzero(d)[1])
    assert np.array_equal(np.asarray(x[x > 0.5]), d[d > 0.5])


def test_ordering_nodes_are_not_fused_into_jit_kernels():
    with pytest.raises(IllFormedProgram, match="not fused into a kernel"):
        sf.jit(lambda a: xp.sort(a))(np.array([3.0, 1.0]))


def test_descending_argsort_is_stable():
    x = np.array([1, 3, 1, 2, 3])
    got = np.asarray(xp.argsort(xp.asarray(x), descending=True))
    assert list(got) == [1, 4, 3, 0, 2]


def test_linalg_and_fft():
    a = np.array([[4.0, 1.0], [1.0, 3.0]])
    x = xp.asarray(a)
    np.testing.assert_allclose(np.asarray(xp.linalg.solve(x, xp.asarray([1.0, 2.0]))),
                               np.linalg.solve(a, [1.0, 2.0]))
    np.testing.assert_allclose(np.asarray(xp.linalg.matrix_norm(x, ord=1)),
                               np.linalg.norm(a, 1))
    np.testing.assert_allclose(np.asarray(xp.linalg.matrix_power(x, 3)),
                               np.linalg.matrix_power(a, 3))
    np.testing.assert_allclose(np.asarray(xp.linalg.cross(xp.asarray([1.0, 0, 0]),
                                                          xp.asarray([0.0, 1, 0]))), [0, 0, 1])
    np.testing.assert_allclose(np.asarray(xp.fft.fft(xp.asarray(np.arange(4.0)))),
                               np.fft.fft(np.arange(4.0)))
    np.testing.assert_array_equal(np.asarray(xp.fft.fftfreq(5, d=0.5)),
                                  np.fft.fftfreq(5, d=0.5))
    s = xp.fft.fftshift(xp.asarray(_csr()), axes=0).compute()  # a roll: stays sparse
    assert sp.issparse(s) and np.array_equal(s.toarray(),
                                             np.fft.fftshift(_csr().toarray(), axes=0))

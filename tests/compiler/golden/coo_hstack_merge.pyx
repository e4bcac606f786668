# cost of result: O(nnz(a0) + nnz(a1))
# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
# cython: initializedcheck=False, nonecheck=False
# sparsefold kernel: coiterate -> coo
# sparsefold compiler 0.2.0; source hash 368b114e7003ee3f
#
# Program:
#   %0 = input a0: float32[n0, n1] coo
#   %1 = input a1: float32[n0, n2] coo
#   %2 = concat(%0, %1, axis=1)                  : float32(n0, n1 + n2)
# Strategy: co-iteration (flat) of a0+a1 over a0+a1; Output: coo, appended in storage order (order
#   proved for every piece; no sort needed).

from libc.stdint cimport int8_t, int16_t, int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t, INT64_MAX
from libc.math cimport NAN, INFINITY, fabs, pow
from libc.string cimport memcpy
from libc.stdlib cimport calloc, free
from cpython.buffer cimport (PyBUF_ANY_CONTIGUOUS, PyBUF_WRITABLE, PyBuffer_Release,
                             PyObject_GetBuffer)


cdef void* _sf_address(object array, Py_ssize_t itemsize, bint writable) except? NULL:
    # Address of a contiguous buffer's first item; BufferError if not contiguous (or not
    # writable when it must be), ValueError if its items are not itemsize bytes wide.
    cdef Py_buffer view
    PyObject_GetBuffer(array, &view, PyBUF_ANY_CONTIGUOUS | (PyBUF_WRITABLE if writable else 0))
    cdef void* address = view.buf
    cdef Py_ssize_t found = view.itemsize
    PyBuffer_Release(&view)
    if found != itemsize:
        raise ValueError(f"expected items of {itemsize} bytes, got {found}")
    return address


cdef extern from *:
    ctypedef float* float_restrict "float * __restrict__"
    ctypedef int32_t* int32_t_restrict "int32_t * __restrict__"
    ctypedef int64_t* int64_t_restrict "int64_t * __restrict__"

def _sf_fail(site, a, b, c):
    # the first failed check of the call: which array, what was found
    from sparsefold.spec.errors import InvalidData
    kind, what = _SF_SITES[site - 1]
    if kind == "pos":
        raise InvalidData(f"{what} is not monotone non-decreasing: row {a} spans [{b}, {c})")
    if kind == "map":
        raise InvalidData(f"{what}: the operator mapped an entry to {a}, outside [0, {b})")
    if kind == "order":
        raise InvalidData(f"{what} is not sorted by row: an entry of row {a} comes after row "
                          f"{b} was read (a stale has_canonical_format flag?)")
    raise InvalidData(f"{what} out of range [0, {b}): found {a}")

_SF_SITES = (
    ('range', 'a0: coords[0]'),
    ('range', 'a0: coords[1]'),
    ('range', 'a1: coords[0]'),
    ('range', 'a1: coords[1]'),
)

from cpython.exc cimport PyErr_Clear
from cpython.long cimport PyLong_AsLongLongAndOverflow, PyLong_CheckExact
from libc.stdlib cimport getenv
cdef extern from *:
    """
    #define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
    #include <numpy/arrayobject.h>
    static int sf_np_import(void) { import_array1(-1); return 0; }
    #define sf_np_data(a) PyArray_DATA((PyArrayObject*)(a))
    #define sf_np_ndim(a) PyArray_NDIM((PyArrayObject*)(a))
    #define sf_np_dims(a) PyArray_DIMS((PyArrayObject*)(a))
    #define sf_np_strides(a) PyArray_STRIDES((PyArrayObject*)(a))
    #define sf_np_itemsize(a) PyArray_ITEMSIZE((PyArrayObject*)(a))
    #define sf_np_descr(a) ((void*)PyArray_DESCR((PyArrayObject*)(a)))
    #define sf_np_c_contiguous(a) PyArray_IS_C_CONTIGUOUS((PyArrayObject*)(a))
    static PyObject* sf_np_empty(npy_intp n, PyObject* descr) {
        Py_INCREF(descr);  /* PyArray_Empty steals it */
        return PyArray_Empty(1, &n, (PyArray_Descr*)descr, 0);
    }
    """
    # NumPy's C API (the include path is the build's, numpy.get_include()): the buffer
    # protocol and np.empty's argument parsing were a fifth of a small call
    int sf_np_import() except -1
    void* sf_np_data(object) noexcept
    int sf_np_ndim(object) noexcept
    Py_ssize_t* sf_np_dims(object) noexcept
    Py_ssize_t* sf_np_strides(object) noexcept
    Py_ssize_t sf_np_itemsize(object) noexcept
    void* sf_np_descr(object) noexcept
    bint sf_np_c_contiguous(object) noexcept
    object sf_np_empty(Py_ssize_t, object)
sf_np_import()
import numpy as _np
import scipy.sparse as _sp
from sparsefold.compiler.fastcall_runtime import (
    COO as _SF_COO, COO_DICT as _SF_COO_DICT, CSC as _SF_CSC, CSC_DICT as _SF_CSC_DICT,
    CSR as _SF_CSR, CSR_DICT as _SF_CSR_DICT, NDARRAY as _SF_NDARRAY,
    NEW as _SF_NEW, PHYSICAL as _SF_PHYSICAL, VECTOR_DICT as _SF_VECTOR_DICT,
    ZEROS as _SF_ZEROS,
    compressed_array as _sf_compressed_array,
    coo_array as _sf_coo_array, memory_limit as _sf_memory_limit_checked,
    threads as _SF_THREADS)


cdef int _sf_thread_count(double work, int requested, int* dynamic) noexcept:
    # compiler/threads.py's count for a call whose loops visit ``work`` entries, as
    # threads_for(work) gives it: one below PARALLEL_MIN_WORK (read each call: tests lower
    # it), else jit's threads=N (``requested``), else threads.requested(); ``dynamic``: OpenMP
    # may lower it on a busy machine. 0: the rule raised (a bad $SPARSEFOLD_NUM_THREADS), and
    # the checked path raises it
    dynamic[0] = 0
    if work < _SF_THREADS.PARALLEL_MIN_WORK:
        return 1
    if requested > 0:
        return requested
    try:
        count, exact = _SF_THREADS.requested()
    except Exception:
        PyErr_Clear()
        return 0
    dynamic[0] = not exact
    return count


cdef inline int64_t _sf_floordiv(int64_t a, int64_t b) noexcept nogil:
    # Python's a // b for b >= 1 (the fast entry checks divisors first); the module's
    # cdivision truncates toward zero, which differs for a negative a
    cdef int64_t q = a / b
    if q * b != a and a < 0:
        q -= 1
    return q


cdef inline int64_t _sf_mod(int64_t a, int64_t b) noexcept nogil:
    # Python's a % b for b >= 1: in [0, b)
    cdef int64_t r = a % b
    if r < 0:
        r += b
    return r


cdef bint _sf_nonfinite32(const void* values, int64_t n) noexcept nogil:
    # Whether any of n float32 values is inf or nan (np.isfinite's question): its exponent
    # bits are all set, so adding one to them carries into the top bit. Integer operations
    # vectorize under the kernels' flags, where a float compare OR-ed into an int did not
    # (1.6 ns an entry: the fast entry's finite check cost more than the kernel)
    cdef const uint32_t* bits = <const uint32_t*>values
    cdef uint32_t seen = 0
    cdef int64_t t
    for t in range(n):
        seen = seen | ((bits[t] & <uint32_t>0x7f800000) + <uint32_t>0x00800000)
    return (seen >> 31) != 0


cdef bint _sf_nonfinite64(const void* values, int64_t n) noexcept nogil:
    # The same for float64 values (11 exponent bits)
    cdef const uint64_t* bits = <const uint64_t*>values
    cdef uint64_t seen = 0
    cdef int64_t t
    for t in range(n):
        seen = seen | ((bits[t] & <uint64_t>0x7ff0000000000000) + <uint64_t>0x0010000000000000)
    return (seen >> 63) != 0


cdef object _sf_compressed(object cls, dict layout, object data, object indices,
                           object indptr, tuple shape):
    # A scipy CSR/CSC result, the object storage.results._compressed_array builds
    if layout is None:
        return _sf_compressed_array(cls, data, indices, indptr, shape)
    out = _SF_NEW(cls)
    d = dict(layout)
    d["data"], d["indices"], d["indptr"], d["_shape"] = data, indices, indptr, shape
    out.__dict__ = d
    return out


cdef object _sf_vector(object data, object indices, Py_ssize_t itemsize, tuple shape):
    # A 1-d CSR result, the object storage.results._container builds: indptr [0, nnz] of
    # the indices' dtype (itemsize 4 or 8)
    indptr = sf_np_empty(2, indices.dtype)
    if itemsize == 4:
        (<int32_t*>sf_np_data(indptr))[0] = 0
        (<int32_t*>sf_np_data(indptr))[1] = <int32_t>len(data)
    else:
        (<int64_t*>sf_np_data(indptr))[0] = 0
        (<int64_t*>sf_np_data(indptr))[1] = len(data)
    return _sf_compressed(_sp.csr_array, _SF_VECTOR_DICT, data, indices, indptr, shape)


cdef object _sf_coo(dict layout, object data, tuple coords, tuple shape):
    # A scipy COO result, the object storage.results._coo_array builds
    if layout is None:
        return _sf_coo_array(_sp.coo_array, data, coords, shape)
    out = _SF_NEW(_sp.coo_array)
    d = dict(layout)
    d["data"], d["coords"], d["_shape"] = data, coords, shape
    out.__dict__ = d
    return out


cdef object _sf_trim(object array, int64_t n, object dtype, Py_ssize_t itemsize):
    # The first n entries of an output buffer only this call references, as kernel.trim
    # gives them: a large one shrunk in place (realloc); a small one copied into an exact
    # new array instead, since NumPy's resize costs about 1 us a call (keyword parsing), an
    # allocation and a copy of at most 4 KiB a third of that
    if len(array) <= n:
        return array
    if n * itemsize > 4096:
        array.resize(n, refcheck=False)
        return array
    out = sf_np_empty(n, dtype)
    if n:
        memcpy(sf_np_data(out), sf_np_data(array), n * itemsize)
    return out


cdef int64_t _sf_memory_limit():
    # kernel.memory_limit(), without reading os.environ in Python when the variable is unset
    cdef const char* configured = getenv(b"SPARSEFOLD_MEMORY_LIMIT")
    if configured == NULL or configured[0] == 0:
        return _SF_PHYSICAL
    try:
        return min(_sf_memory_limit_checked(), INT64_MAX)
    except Exception:  # the checked path reports it
        PyErr_Clear()
        return -1


cdef bint _sf_shape(object shape, int ndim, int64_t* dims):
    # A tuple of ``ndim`` Python ints in [0, 2**62): its values; False otherwise (the checked
    # path reads any other shape)
    cdef int overflow
    cdef int d
    if type(shape) is not tuple or len(<tuple>shape) != ndim:
        return False
    for d in range(ndim):
        item = (<tuple>shape)[d]
        if not PyLong_CheckExact(item):
            return False
        dims[d] = PyLong_AsLongLongAndOverflow(item, &overflow)
        if overflow or dims[d] < 0 or dims[d] >= (<int64_t>1 << 62):
            return False
    return True


cdef void* _sf_contiguous(object array, object dtype, Py_ssize_t* length) noexcept:
    # The first item of a 1-d C-contiguous ndarray of exactly ``dtype``; NULL otherwise.
    if type(array) is not _SF_NDARRAY or sf_np_descr(array) != <void*>dtype:
        return NULL
    if sf_np_ndim(array) != 1 or not sf_np_c_contiguous(array):
        return NULL
    length[0] = sf_np_dims(array)[0]
    return sf_np_data(array)


cdef void* _sf_strided(object array, object dtype, int ndim, Py_ssize_t* shape,
                       Py_ssize_t* strides) noexcept:
    # An ndarray of exactly ``dtype`` and rank: its shape and element strides; NULL when its
    # strides are not whole elements (the checked path copies it then).
    cdef int d
    cdef Py_ssize_t item
    if type(array) is not _SF_NDARRAY or sf_np_descr(array) != <void*>dtype:
        return NULL
    if sf_np_ndim(array) != ndim:
        return NULL
    item = sf_np_itemsize(array)
    for d in range(ndim):
        shape[d] = sf_np_dims(array)[d]
        if sf_np_strides(array)[d] % item:
            return NULL
        strides[d] = sf_np_strides(array)[d] // item
    return sf_np_data(array)


cdef void* _sf_out(object array) noexcept:
    # An output array this entry allocated (C-contiguous, writable)
    return sf_np_data(array)


cdef void _run_body(
        int64_t S_n0,
        int64_t S_n1,
        int64_t S_n2,
        int32_t_restrict out_crd0,
        int32_t_restrict out_crd1,
        float_restrict out_val,
        int64_t_restrict in_a0_pos0,
        int32_t_restrict in_a0_crd0,
        int32_t_restrict in_a0_crd1,
        float_restrict in_a0_val,
        int64_t_restrict in_a1_pos0,
        int32_t_restrict in_a1_crd0,
        int32_t_restrict in_a1_crd1,
        float_restrict in_a1_val,
        int64_t* sf_ret,
) noexcept nogil:
    cdef bint stale_a0, stale_a1
    cdef float x0
    cdef int64_t end_a0, end_a1, i0_a0, i0_a1, i1_a0, i1_a1, k, k0, k1, key_a0, key_a1, m, n
    cdef int64_t o0_a0, o0_a1, o1_a0, o1_a1, q0_a0, q0_a1, sf_a, sf_b, sf_bad, sf_c
    sf_bad = 0
    n = 0
    m = 0
    # co-iteration of a0+a1 over a0+a1: one cursor per piece, keys in storage order (proved); the smallest key is visited next
    stale_a0 = True
    q0_a0 = in_a0_pos0[0]
    end_a0 = in_a0_pos0[1]
    stale_a1 = True
    q0_a1 = in_a1_pos0[0]
    end_a1 = in_a1_pos0[1]
    if stale_a0:
        stale_a0 = False
        if q0_a0 >= end_a0:
            key_a0 = INT64_MAX
        else:
            i0_a0 = in_a0_crd0[q0_a0]
            if <uint64_t>i0_a0 >= <uint64_t>S_n0:
                if sf_bad == 0:
                    sf_bad = 1
                    sf_a = i0_a0
                    sf_b = S_n0
                    sf_c = 0
                i0_a0 = 0
            i1_a0 = in_a0_crd1[q0_a0]
            if <uint64_t>i1_a0 >= <uint64_t>S_n1:
                if sf_bad == 0:
                    sf_bad = 2
                    sf_a = i1_a0
                    sf_b = S_n1
                    sf_c = 0
                i1_a0 = 0
            o0_a0 = i0_a0
            o1_a0 = i1_a0
            key_a0 = o0_a0 * (S_n1 + S_n2) + o1_a0
    if stale_a1:
        stale_a1 = False
        if q0_a1 >= end_a1:
            key_a1 = INT64_MAX
        else:
            i0_a1 = in_a1_crd0[q0_a1]
            if <uint64_t>i0_a1 >= <uint64_t>S_n0:
                if sf_bad == 0:
                    sf_bad = 3
                    sf_a = i0_a1
                    sf_b = S_n0
                    sf_c = 0
                i0_a1 = 0
            i1_a1 = in_a1_crd1[q0_a1]
            if <uint64_t>i1_a1 >= <uint64_t>S_n2:
                if sf_bad == 0:
                    sf_bad = 4
                    sf_a = i1_a1
                    sf_b = S_n2
                    sf_c = 0
                i1_a1 = 0
            o0_a1 = i0_a1
            o1_a1 = (i1_a1 + S_n1)
            key_a1 = o0_a1 * (S_n1 + S_n2) + o1_a1
    while True:
        k = key_a0
        if key_a1 < k:
            k = key_a1
        if k == INT64_MAX:
            break
        if key_a0 == k:
            k0 = o0_a0
            k1 = o1_a0
        elif key_a1 == k:
            k0 = o0_a1
            k1 = o1_a1
        x0 = (<float>0.0)
        if key_a0 == k:
            x0 = in_a0_val[q0_a0]
        elif key_a1 == k:
            x0 = in_a1_val[q0_a1]
        out_crd0[n] = <int32_t>k0
        out_crd1[n] = <int32_t>k1
        out_val[n] = x0
        n = n + 1
        if key_a0 == k:
            q0_a0 = q0_a0 + 1
            stale_a0 = True
            if stale_a0:
                stale_a0 = False
                if q0_a0 >= end_a0:
                    key_a0 = INT64_MAX
                else:
                    i0_a0 = in_a0_crd0[q0_a0]
                    if <uint64_t>i0_a0 >= <uint64_t>S_n0:
                        if sf_bad == 0:
                            sf_bad = 1
                            sf_a = i0_a0
                            sf_b = S_n0
                            sf_c = 0
                        i0_a0 = 0
                    i1_a0 = in_a0_crd1[q0_a0]
                    if <uint64_t>i1_a0 >= <uint64_t>S_n1:
                        if sf_bad == 0:
                            sf_bad = 2
                            sf_a = i1_a0
                            sf_b = S_n1
                            sf_c = 0
                        i1_a0 = 0
                    o0_a0 = i0_a0
                    o1_a0 = i1_a0
                    key_a0 = o0_a0 * (S_n1 + S_n2) + o1_a0
        if key_a1 == k:
            q0_a1 = q0_a1 + 1
            stale_a1 = True
            if stale_a1:
                stale_a1 = False
                if q0_a1 >= end_a1:
                    key_a1 = INT64_MAX
                else:
                    i0_a1 = in_a1_crd0[q0_a1]
                    if <uint64_t>i0_a1 >= <uint64_t>S_n0:
                        if sf_bad == 0:
                            sf_bad = 3
                            sf_a = i0_a1
                            sf_b = S_n0
                            sf_c = 0
                        i0_a1 = 0
                    i1_a1 = in_a1_crd1[q0_a1]
                    if <uint64_t>i1_a1 >= <uint64_t>S_n2:
                        if sf_bad == 0:
                            sf_bad = 4
                            sf_a = i1_a1
                            sf_b = S_n2
                            sf_c = 0
                        i1_a1 = 0
                    o0_a1 = i0_a1
                    o1_a1 = (i1_a1 + S_n1)
                    key_a1 = o0_a1 * (S_n1 + S_n2) + o1_a1
    sf_ret[0] = n
    sf_ret[1] = m
    sf_ret[2] = sf_bad
    sf_ret[3] = sf_a
    sf_ret[4] = sf_b
    sf_ret[5] = sf_c


def run(
        int64_t S_n0,
        int64_t S_n1,
        int64_t S_n2,
        object p_out_crd0,
        object p_out_crd1,
        object p_out_val,
        object p_in_a0_pos0,
        object p_in_a0_crd0,
        object p_in_a0_crd1,
        object p_in_a0_val,
        object p_in_a1_pos0,
        object p_in_a1_crd0,
        object p_in_a1_crd1,
        object p_in_a1_val,
):
    cdef int64_t sf_ret[6]
    sf_ret[2] = 0
    cdef int32_t_restrict out_crd0 = <int32_t_restrict>_sf_address(p_out_crd0, sizeof(int32_t), 1)
    cdef int32_t_restrict out_crd1 = <int32_t_restrict>_sf_address(p_out_crd1, sizeof(int32_t), 1)
    cdef float_restrict out_val = <float_restrict>_sf_address(p_out_val, sizeof(float), 1)
    cdef int64_t_restrict in_a0_pos0 = <int64_t_restrict>_sf_address(
        p_in_a0_pos0, sizeof(int64_t), 0)
    cdef int32_t_restrict in_a0_crd0 = <int32_t_restrict>_sf_address(
        p_in_a0_crd0, sizeof(int32_t), 0)
    cdef int32_t_restrict in_a0_crd1 = <int32_t_restrict>_sf_address(
        p_in_a0_crd1, sizeof(int32_t), 0)
    cdef float_restrict in_a0_val = <float_restrict>_sf_address(p_in_a0_val, sizeof(float), 0)
    cdef int64_t_restrict in_a1_pos0 = <int64_t_restrict>_sf_address(
        p_in_a1_pos0, sizeof(int64_t), 0)
    cdef int32_t_restrict in_a1_crd0 = <int32_t_restrict>_sf_address(
        p_in_a1_crd0, sizeof(int32_t), 0)
    cdef int32_t_restrict in_a1_crd1 = <int32_t_restrict>_sf_address(
        p_in_a1_crd1, sizeof(int32_t), 0)
    cdef float_restrict in_a1_val = <float_restrict>_sf_address(p_in_a1_val, sizeof(float), 0)
    with nogil:
        _run_body(S_n0, S_n1, S_n2, out_crd0, out_crd1, out_val, in_a0_pos0, in_a0_crd0,
            in_a0_crd1, in_a0_val, in_a1_pos0, in_a1_crd0, in_a1_crd1, in_a1_val, sf_ret)
    if sf_ret[2]:
        _sf_fail(sf_ret[2], sf_ret[3], sf_ret[4], sf_ret[5])
    return (sf_ret[0], sf_ret[1])


_SF_DT_FLOAT32 = _np.dtype(_np.float32)
_SF_DT_INT32 = _np.dtype(_np.int32)


def fast(object v_a0, object v_a1, *, int threads=0):
    # the happy path of a call (compiler/fastcall.py); None: take the
    # checked path
    cdef int64_t S_n0
    cdef int64_t S_n1
    cdef int64_t S_n2
    cdef bint canonical_a0
    cdef bint canonical_a1
    cdef int64_t capacity
    cdef double capacity_bound
    cdef object coords_a0
    cdef object coords_a1
    cdef int32_t* crd0_a0
    cdef int32_t* crd0_a1
    cdef int32_t* crd1_a0
    cdef int32_t* crd1_a1
    cdef Py_ssize_t len_crd0_a0
    cdef Py_ssize_t len_crd0_a1
    cdef Py_ssize_t len_crd1_a0
    cdef Py_ssize_t len_crd1_a1
    cdef Py_ssize_t len_val_a0
    cdef Py_ssize_t len_val_a1
    cdef int64_t limit
    cdef int64_t nnz_a0
    cdef int64_t nnz_a1
    cdef int32_t* optr_crd0
    cdef int32_t* optr_crd1
    cdef float* optr_val
    cdef int64_t out_d0
    cdef int64_t out_d1
    cdef int64_t pos0_a0[2]
    cdef int64_t pos0_a1[2]
    cdef int64_t sf_ret[6]
    cdef int64_t shape_a0[2]
    cdef int64_t shape_a1[2]
    cdef Py_ssize_t t
    cdef bint unordered
    cdef float* val_a0
    cdef float* val_a1
    if type(v_a0) is not _SF_COO[0] and type(v_a0) is not _SF_COO[1]:
        return None
    canonical_a0 = getattr(v_a0, 'has_canonical_format', None) is True
    if not _sf_shape(getattr(v_a0, '_shape', None), 2, shape_a0):
        return None
    S_n0 = shape_a0[0]
    S_n1 = shape_a0[1]
    coords_a0 = getattr(v_a0, 'coords', None)
    if type(coords_a0) is not tuple or len(coords_a0) != 2:
        return None
    val_a0 = <float*>_sf_contiguous(getattr(v_a0, 'data', None), _SF_DT_FLOAT32, &len_val_a0)
    if val_a0 == NULL:
        return None
    nnz_a0 = len_val_a0
    crd0_a0 = <int32_t*>_sf_contiguous(coords_a0[0], _SF_DT_INT32, &len_crd0_a0)
    if crd0_a0 == NULL:
        return None
    if len_crd0_a0 != nnz_a0:
        return None
    crd1_a0 = <int32_t*>_sf_contiguous(coords_a0[1], _SF_DT_INT32, &len_crd1_a0)
    if crd1_a0 == NULL:
        return None
    if len_crd1_a0 != nnz_a0:
        return None
    unordered = False
    if not canonical_a0:
        with nogil:
            for t in range(1, nnz_a0):
                if not (crd0_a0[t - 1] < crd0_a0[t] or (crd0_a0[t - 1] == crd0_a0[t] and (crd1_a0[t - 1] < crd1_a0[t]))):
                    unordered = True
                    break
    if unordered:
        return None
    if nnz_a0 > 0 and (shape_a0[0] == 0 or shape_a0[1] == 0):
        return None
    pos0_a0[0] = 0
    pos0_a0[1] = nnz_a0
    if type(v_a1) is not _SF_COO[0] and type(v_a1) is not _SF_COO[1]:
        return None
    canonical_a1 = getattr(v_a1, 'has_canonical_format', None) is True
    if not _sf_shape(getattr(v_a1, '_shape', None), 2, shape_a1):
        return None
    if S_n0 != shape_a1[0]:
        return None
    S_n2 = shape_a1[1]
    coords_a1 = getattr(v_a1, 'coords', None)
    if type(coords_a1) is not tuple or len(coords_a1) != 2:
        return None
    val_a1 = <float*>_sf_contiguous(getattr(v_a1, 'data', None), _SF_DT_FLOAT32, &len_val_a1)
    if val_a1 == NULL:
        return None
    nnz_a1 = len_val_a1
    crd0_a1 = <int32_t*>_sf_contiguous(coords_a1[0], _SF_DT_INT32, &len_crd0_a1)
    if crd0_a1 == NULL:
        return None
    if len_crd0_a1 != nnz_a1:
        return None
    crd1_a1 = <int32_t*>_sf_contiguous(coords_a1[1], _SF_DT_INT32, &len_crd1_a1)
    if crd1_a1 == NULL:
        return None
    if len_crd1_a1 != nnz_a1:
        return None
    unordered = False
    if not canonical_a1:
        with nogil:
            for t in range(1, nnz_a1):
                if not (crd0_a1[t - 1] < crd0_a1[t] or (crd0_a1[t - 1] == crd0_a1[t] and (crd1_a1[t - 1] < crd1_a1[t]))):
                    unordered = True
                    break
    if unordered:
        return None
    if nnz_a1 > 0 and (shape_a1[0] == 0 or shape_a1[1] == 0):
        return None
    pos0_a1[0] = 0
    pos0_a1[1] = nnz_a1
    if S_n0 >= 1073741824:
        return None
    if S_n1 >= 1073741824:
        return None
    if S_n2 >= 1073741824:
        return None
    out_d0 = S_n0
    out_d1 = (S_n1 + S_n2)
    limit = _sf_memory_limit()
    capacity_bound = <double>len_val_a0 + <double>len_val_a1
    if capacity_bound > 1.152921504606847e+18:
        return None
    capacity = len_val_a0 + len_val_a1
    if capacity > 2147483647 or out_d0 > 2147483647 or out_d1 > 2147483647:
        return None
    if <double>(capacity) * 4 + <double>(capacity) * 4 + <double>(capacity) * 4 > <double>limit:
        return None
    try:
        o_val = sf_np_empty(capacity, _SF_DT_FLOAT32)
        o_crd0 = sf_np_empty(capacity, _SF_DT_INT32)
        o_crd1 = sf_np_empty(capacity, _SF_DT_INT32)
    except MemoryError:
        return None
    optr_val = <float*>_sf_out(o_val)
    if optr_val == NULL:
        return None
    optr_crd0 = <int32_t*>_sf_out(o_crd0)
    if optr_crd0 == NULL:
        return None
    optr_crd1 = <int32_t*>_sf_out(o_crd1)
    if optr_crd1 == NULL:
        return None
    sf_ret[2] = 0
    with nogil:
        _run_body(S_n0, S_n1, S_n2, <int32_t*>optr_crd0, <int32_t*>optr_crd1, <float*>optr_val, <int64_t*>&pos0_a0[0], <int32_t*>crd0_a0, <int32_t*>crd1_a0, <float*>val_a0, <int64_t*>&pos0_a1[0], <int32_t*>crd0_a1, <int32_t*>crd1_a1, <float*>val_a1, sf_ret)
    if sf_ret[2]:
        _sf_fail(sf_ret[2], sf_ret[3], sf_ret[4], sf_ret[5])
    cdef int64_t n = sf_ret[0]
    o_val = _sf_trim(o_val, n, _SF_DT_FLOAT32, 4)
    o_crd0 = _sf_trim(o_crd0, n, _SF_DT_INT32, 4)
    o_crd1 = _sf_trim(o_crd1, n, _SF_DT_INT32, 4)
    return _sf_coo(_SF_COO_DICT, o_val, (o_crd0, o_crd1, ), (out_d0, out_d1, ))

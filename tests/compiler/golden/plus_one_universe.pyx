# cost of result: O(n0*n1)
# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
# cython: initializedcheck=False, nonecheck=False
# sparsefold kernel: coiterate -> dense
# sparsefold compiler 0.2.0; source hash 96a183ab54ac3496
#
# Program:
#   %0 = input a0: float32[n0, n1] csr
#   %1 = literal 1: int64
#   %2 = map(%0, %1, fn=add)                     : float32(n0, n1)
# Strategy: co-iteration (row) of a0 over every coordinate (dense-valued); Output: dense, each
#   entry written once.

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
    ('pos', 'a0: indptr'),
    ('range', 'a0: indices'),
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
        int32_t_restrict in_a0_pos1,
        int32_t_restrict in_a0_crd1,
        float_restrict in_a0_val,
        float_restrict out_val,
        int64_t* sf_ret,
) noexcept nogil:
    cdef bint stale_a
    cdef float v, x0
    cdef int64_t e_a, i1_a, k0, k1, key_a, p_a, pos_bad, range_v, s_a, sf_a, sf_b, sf_bad, sf_c, t
    cdef int64_t t_2
    cdef uint32_t row_bad32, row_lim32
    sf_bad = 0
    # a0: rows in order before anything reads them
    pos_bad = 0
    for t in range(S_n0):
        pos_bad = pos_bad | (in_a0_pos1[t + 1] < in_a0_pos1[t])
    if pos_bad and sf_bad == 0:
        for t in range(S_n0):
            if in_a0_pos1[t + 1] < in_a0_pos1[t]:
                if sf_bad == 0:
                    sf_bad = 1
                    sf_a = t
                    sf_b = in_a0_pos1[t]
                    sf_c = in_a0_pos1[t + 1]
                break
    if sf_bad == 0:
        # every coordinate of the result (it is nonzero where a0 store nothing); the cursors of a0 follow in storage order (proved)
        for k0 in range(S_n0):
            s_a = k0
            p_a = in_a0_pos1[s_a]
            e_a = in_a0_pos1[s_a + 1]
            row_lim32 = <uint32_t>(S_n1 if S_n1 < <int64_t>2147483648 else <int64_t>2147483648)
            row_bad32 = 0
            for t_2 in range(p_a, e_a):
                row_bad32 = row_bad32 | (<uint32_t>in_a0_crd1[t_2] >= row_lim32)
            if row_bad32:
                for t_2 in range(p_a, e_a):
                    range_v = in_a0_crd1[t_2]
                    if <uint64_t>range_v >= <uint64_t>S_n1:
                        if sf_bad == 0:
                            sf_bad = 2
                            sf_a = range_v
                            sf_b = S_n1
                            sf_c = 0
                        range_v = 0
            if row_bad32:
                e_a = p_a
            stale_a = True
            key_a = INT64_MAX
            for k1 in range(S_n1):
                if stale_a:
                    stale_a = False
                    key_a = INT64_MAX
                    if p_a < e_a:
                        i1_a = in_a0_crd1[p_a]
                        key_a = i1_a
                x0 = in_a0_val[p_a] if key_a == k1 else (<float>0.0)
                v = <float>(x0 + (<float>1))
                out_val[k0 * S_n1 + k1] = v
                if key_a == k1:
                    p_a = p_a + 1
                    stale_a = True
    sf_ret[0] = 0
    sf_ret[1] = sf_bad
    sf_ret[2] = sf_a
    sf_ret[3] = sf_b
    sf_ret[4] = sf_c


def run(
        int64_t S_n0,
        int64_t S_n1,
        object p_in_a0_pos1,
        object p_in_a0_crd1,
        object p_in_a0_val,
        object p_out_val,
):
    cdef int64_t sf_ret[5]
    sf_ret[1] = 0
    cdef int32_t_restrict in_a0_pos1 = <int32_t_restrict>_sf_address(
        p_in_a0_pos1, sizeof(int32_t), 0)
    cdef int32_t_restrict in_a0_crd1 = <int32_t_restrict>_sf_address(
        p_in_a0_crd1, sizeof(int32_t), 0)
    cdef float_restrict in_a0_val = <float_restrict>_sf_address(p_in_a0_val, sizeof(float), 0)
    cdef float_restrict out_val = <float_restrict>_sf_address(p_out_val, sizeof(float), 1)
    with nogil:
        _run_body(S_n0, S_n1, in_a0_pos1, in_a0_crd1, in_a0_val, out_val, sf_ret)
    if sf_ret[1]:
        _sf_fail(sf_ret[1], sf_ret[2], sf_ret[3], sf_ret[4])
    return sf_ret[0]


_SF_DT_FLOAT32 = _np.dtype(_np.float32)
_SF_DT_INT32 = _np.dtype(_np.int32)


def fast(object v_a0, *, int threads=0):
    # the happy path of a call (compiler/fastcall.py); None: take the
    # checked path
    cdef int64_t S_n0
    cdef int64_t S_n1
    cdef int32_t* crd1_a0
    cdef Py_ssize_t len_crd1_a0
    cdef Py_ssize_t len_pos1_a0
    cdef Py_ssize_t len_val_a0
    cdef int64_t limit
    cdef int64_t nnz_a0
    cdef float* optr_val
    cdef int64_t out_d0
    cdef int64_t out_d1
    cdef int32_t* pos1_a0
    cdef int64_t sf_ret[5]
    cdef int64_t shape_a0[2]
    cdef float* val_a0
    if type(v_a0) is not _SF_CSR[0] and type(v_a0) is not _SF_CSR[1]:
        return None
    if getattr(v_a0, '_has_canonical_format', None) is not True:
        return None
    if not _sf_shape(getattr(v_a0, '_shape', None), 2, shape_a0):
        return None
    S_n0 = shape_a0[0]
    S_n1 = shape_a0[1]
    pos1_a0 = <int32_t*>_sf_contiguous(getattr(v_a0, 'indptr', None), _SF_DT_INT32, &len_pos1_a0)
    if pos1_a0 == NULL:
        return None
    crd1_a0 = <int32_t*>_sf_contiguous(getattr(v_a0, 'indices', None), _SF_DT_INT32, &len_crd1_a0)
    if crd1_a0 == NULL:
        return None
    val_a0 = <float*>_sf_contiguous(getattr(v_a0, 'data', None), _SF_DT_FLOAT32, &len_val_a0)
    if val_a0 == NULL:
        return None
    if len_pos1_a0 != shape_a0[0] + 1 or pos1_a0[0] != 0:
        return None
    nnz_a0 = pos1_a0[shape_a0[0]]
    if nnz_a0 < 0 or nnz_a0 > len_crd1_a0 or nnz_a0 > len_val_a0:
        return None
    if nnz_a0 > 0 and (shape_a0[0] == 0 or shape_a0[1] == 0):
        return None
    if S_n0 >= 2147483648:
        return None
    if S_n1 >= 2147483648:
        return None
    out_d0 = S_n0
    out_d1 = S_n1
    limit = _sf_memory_limit()
    if (<double>out_d0 * <double>out_d1) * 4 > <double>limit:
        return None
    try:
        o_val = _SF_ZEROS((out_d0, out_d1, ), _SF_DT_FLOAT32)
    except MemoryError:
        return None
    optr_val = <float*>_sf_out(o_val)
    if optr_val == NULL:
        return None
    sf_ret[1] = 0
    with nogil:
        _run_body(S_n0, S_n1, <int32_t*>pos1_a0, <int32_t*>crd1_a0, <float*>val_a0, <float*>optr_val, sf_ret)
    if sf_ret[1]:
        _sf_fail(sf_ret[1], sf_ret[2], sf_ret[3], sf_ret[4])
    return o_val

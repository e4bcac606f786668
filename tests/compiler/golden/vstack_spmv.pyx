# cost of result: O(nnz(a0) + nnz(a1))
# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
# cython: initializedcheck=False, nonecheck=False
# sparsefold kernel: stream -> dense
# sparsefold compiler 0.2.0; source hash da74eb8a2b889185
#
# Program:
#   %0 = input a0: float32[n0, n1] csr
#   %1 = input a1: float32[n2, n1] csr
#   %2 = concat(%0, %1, axis=0)                  : float32(n0 + n2, n1)
#   %3 = expanddims(%2, axis=2)                  : float32(n0 + n2, n1, 1)
#   %4 = input a2: float32[n1] dense
#   %5 = expanddims(%4, axis=1)                  : float32(n1, 1)
#   %6 = expanddims(%5, axis=0)                  : float32(1, n1, 1)
#   %7 = broadcastto(%6, target=(n0 + n2, n1, 1)) : float32(n0 + n2, n1, 1)
#   %8 = map(%3, %7, fn=multiply)                : float32(n0 + n2, n1, 1)
#   %9 = reduce(%8, axes=(1,), monoid=sum, dtype_request=float32) : float32(n0 + n2, 1)
#   %10 = squeeze(%9, axes=(1,))                 : float32(n0 + n2,)
# Strategy: stream (2 piece(s), leaf loop); Output: dense, each entry combined with sum.
# Valid when a2 are finite (0 * inf is nan); the runtime checks and otherwise runs the exact
#   variant.

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

from cython.parallel cimport prange, threadid

cdef extern from *:
    """
    #ifdef _OPENMP
    #include <omp.h>
    /* the threads a parallel region gets now: with dynamic adjustment on, libgomp may run
       fewer than omp_get_max_threads() (cpus - load average), and a two-pass parallel fill
       planned for two threads would run both passes on one (2x the serial time, measured) */
    static int sf_team_now(void) {
        int n = omp_get_max_threads();
        if (n > 1 && omp_get_dynamic()) {
            #pragma omp parallel
            {
                #pragma omp master
                n = omp_get_num_threads();
            }
        }
        return n < 64 ? n : 64;
    }
    #define sf_max_threads() sf_team_now()
    #define sf_set_threads(n, dynamic) (omp_set_dynamic(dynamic), omp_set_num_threads(n))
    #else
    #define sf_max_threads() 1
    #define sf_set_threads(n, dynamic) ((void)0)
    #endif
    """
    int sf_max_threads() nogil
    void sf_set_threads(int, int) nogil

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
    ('pos', 'a1: indptr'),
    ('range', 'a0: indices'),
    ('range', 'a1: indices'),
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
        int32_t_restrict in_a0_pos1,
        int32_t_restrict in_a0_crd1,
        float_restrict in_a0_val,
        int32_t_restrict in_a1_pos1,
        int32_t_restrict in_a1_crd1,
        float_restrict in_a1_val,
        float_restrict out_val,
        float_restrict in_a2_val,
        int64_t* sf_ret,
) noexcept nogil:
    cdef bint long_rows, long_rows_2
    cdef float acc, acc_2, acc_3, acc_4, v, v_2, v_3, v_4
    cdef int64_t blk, blk_2, blk_rows, blk_rows_2, i0, i0_2, i0_3, i0_4, i1, i1_2, i1_3, i1_4, o0
    cdef int64_t o0_2, o0_3, o0_4, pos_bad, q0, q0_2, q0_3, q0_4, q1, q1_2, q1_3, q1_4, r0, r0_2
    cdef int64_t r1, r1_2, range_v, range_v_2, sf_a, sf_b, sf_bad, sf_c, t, t_2, t_3, t_4, t_5
    cdef uint32_t blk_bad32, blk_bad32_2, blk_lim32, blk_lim32_2, row_bad32, row_bad32_2
    cdef uint32_t row_lim32, row_lim32_2
    cdef int sf_nt, sf_t, sf_pick, sf_tid
    cdef int64_t sf_lo, sf_hi
    cdef int64_t sf_terr[512]
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
    # a1: rows in order before anything reads them
    pos_bad = 0
    for t in range(S_n2):
        pos_bad = pos_bad | (in_a1_pos1[t + 1] < in_a1_pos1[t])
    if pos_bad and sf_bad == 0:
        for t in range(S_n2):
            if in_a1_pos1[t + 1] < in_a1_pos1[t]:
                if sf_bad == 0:
                    sf_bad = 2
                    sf_a = t
                    sf_b = in_a1_pos1[t]
                    sf_c = in_a1_pos1[t + 1]
                break
    if sf_bad == 0:
        # piece 0: entries of a0 (csr) in storage order -> output coordinates _i0
        # rows in blocks of about 2048 entries, each block's coordinates checked in one pass
        # (rows of 32 entries or more on average: each row's, as it is read)
        blk_rows = S_n0 // ((in_a0_pos1[S_n0] - in_a0_pos1[0]) // 2048 + 1) + 1
        long_rows = (in_a0_pos1[S_n0] - in_a0_pos1[0]) // 32 >= S_n0
        # parallel: iterations on OpenMP threads (identical results for any thread count)
        sf_hi = (S_n0 + blk_rows - 1) // blk_rows
        sf_nt = sf_max_threads()
        for sf_t in range(sf_nt * 8):
            sf_terr[sf_t] = 0
        for blk in prange(sf_hi, num_threads=sf_nt, schedule='static'):
            sf_tid = threadid()
            r0 = blk * blk_rows
            r1 = S_n0 if S_n0 - r0 < blk_rows else r0 + blk_rows
            blk_lim32 = <uint32_t>(S_n1 if S_n1 < <int64_t>2147483648 else <int64_t>2147483648)
            blk_bad32 = 0
            for t_2 in range(in_a0_pos1[r0], in_a0_pos1[r0] if long_rows else in_a0_pos1[r1]):
                blk_bad32 = blk_bad32 | (<uint32_t>in_a0_crd1[t_2] >= blk_lim32)
            if not long_rows and not blk_bad32:
                for i0 in range(r0, r1):
                    q0 = i0
                    o0 = i0
                    acc = (<float>0.0)
                    for q1 in range(in_a0_pos1[q0], in_a0_pos1[q0 + 1]):
                        i1 = in_a0_crd1[q1]
                        v = <float>(in_a0_val[q1] * in_a2_val[i1])
                        acc = <float>(acc + v)
                    out_val[o0] = <float>(out_val[o0] + acc)
            else:
                for i0_2 in range(r0, r1):
                    q0_2 = i0_2
                    o0_2 = i0_2
                    row_lim32 = <uint32_t>(S_n1 if S_n1 < <int64_t>2147483648 else <int64_t>2147483648)
                    row_bad32 = 0
                    for t_3 in range(in_a0_pos1[q0_2], in_a0_pos1[q0_2 + 1]):
                        row_bad32 = row_bad32 | (<uint32_t>in_a0_crd1[t_3] >= row_lim32)
                    if row_bad32:
                        for t_3 in range(in_a0_pos1[q0_2], in_a0_pos1[q0_2 + 1]):
                            range_v = in_a0_crd1[t_3]
                            if <uint64_t>range_v >= <uint64_t>S_n1:
                                if sf_terr[sf_tid * 8] == 0:
                                    sf_terr[sf_tid * 8] = 3
                                    sf_terr[sf_tid * 8 + 1] = blk
                                    sf_terr[sf_tid * 8 + 2] = range_v
                                    sf_terr[sf_tid * 8 + 3] = S_n1
                                    sf_terr[sf_tid * 8 + 4] = 0
                                range_v = 0
                    if not row_bad32:
                        acc_2 = (<float>0.0)
                        for q1_2 in range(in_a0_pos1[q0_2], in_a0_pos1[q0_2 + 1]):
                            i1_2 = in_a0_crd1[q1_2]
                            v_2 = <float>(in_a0_val[q1_2] * in_a2_val[i1_2])
                            acc_2 = <float>(acc_2 + v_2)
                        out_val[o0_2] = <float>(out_val[o0_2] + acc_2)
        sf_pick = -1
        for sf_t in range(sf_nt):
            if sf_terr[sf_t * 8] != 0:
                if sf_pick < 0 or sf_terr[sf_t * 8 + 1] < sf_terr[sf_pick * 8 + 1]:
                    sf_pick = sf_t
        if sf_pick >= 0 and sf_bad == 0:
            sf_bad = sf_terr[sf_pick * 8]
            sf_a = sf_terr[sf_pick * 8 + 2]
            sf_b = sf_terr[sf_pick * 8 + 3]
            sf_c = sf_terr[sf_pick * 8 + 4]
        # piece 1: entries of a1 (csr) in storage order -> output coordinates _i0 + n0
        # rows in blocks of about 2048 entries, each block's coordinates checked in one pass
        # (rows of 32 entries or more on average: each row's, as it is read)
        blk_rows_2 = S_n2 // ((in_a1_pos1[S_n2] - in_a1_pos1[0]) // 2048 + 1) + 1
        long_rows_2 = (in_a1_pos1[S_n2] - in_a1_pos1[0]) // 32 >= S_n2
        # parallel: iterations on OpenMP threads (identical results for any thread count)
        sf_hi = (S_n2 + blk_rows_2 - 1) // blk_rows_2
        sf_nt = sf_max_threads()
        for sf_t in range(sf_nt * 8):
            sf_terr[sf_t] = 0
        for blk_2 in prange(sf_hi, num_threads=sf_nt, schedule='static'):
            sf_tid = threadid()
            r0_2 = blk_2 * blk_rows_2
            r1_2 = S_n2 if S_n2 - r0_2 < blk_rows_2 else r0_2 + blk_rows_2
            blk_lim32_2 = <uint32_t>(S_n1 if S_n1 < <int64_t>2147483648 else <int64_t>2147483648)
            blk_bad32_2 = 0
            for t_4 in range(in_a1_pos1[r0_2], in_a1_pos1[r0_2] if long_rows_2 else in_a1_pos1[r1_2]):
                blk_bad32_2 = blk_bad32_2 | (<uint32_t>in_a1_crd1[t_4] >= blk_lim32_2)
            if not long_rows_2 and not blk_bad32_2:
                for i0_3 in range(r0_2, r1_2):
                    q0_3 = i0_3
                    o0_3 = (i0_3 + S_n0)
                    acc_3 = (<float>0.0)
                    for q1_3 in range(in_a1_pos1[q0_3], in_a1_pos1[q0_3 + 1]):
                        i1_3 = in_a1_crd1[q1_3]
                        v_3 = <float>(in_a1_val[q1_3] * in_a2_val[i1_3])
                        acc_3 = <float>(acc_3 + v_3)
                    out_val[o0_3] = <float>(out_val[o0_3] + acc_3)
            else:
                for i0_4 in range(r0_2, r1_2):
                    q0_4 = i0_4
                    o0_4 = (i0_4 + S_n0)
                    row_lim32_2 = <uint32_t>(S_n1 if S_n1 < <int64_t>2147483648 else <int64_t>2147483648)
                    row_bad32_2 = 0
                    for t_5 in range(in_a1_pos1[q0_4], in_a1_pos1[q0_4 + 1]):
                        row_bad32_2 = row_bad32_2 | (<uint32_t>in_a1_crd1[t_5] >= row_lim32_2)
                    if row_bad32_2:
                        for t_5 in range(in_a1_pos1[q0_4], in_a1_pos1[q0_4 + 1]):
                            range_v_2 = in_a1_crd1[t_5]
                            if <uint64_t>range_v_2 >= <uint64_t>S_n1:
                                if sf_terr[sf_tid * 8] == 0:
                                    sf_terr[sf_tid * 8] = 4
                                    sf_terr[sf_tid * 8 + 1] = blk_2
                                    sf_terr[sf_tid * 8 + 2] = range_v_2
                                    sf_terr[sf_tid * 8 + 3] = S_n1
                                    sf_terr[sf_tid * 8 + 4] = 0
                                range_v_2 = 0
                    if not row_bad32_2:
                        acc_4 = (<float>0.0)
                        for q1_4 in range(in_a1_pos1[q0_4], in_a1_pos1[q0_4 + 1]):
                            i1_4 = in_a1_crd1[q1_4]
                            v_4 = <float>(in_a1_val[q1_4] * in_a2_val[i1_4])
                            acc_4 = <float>(acc_4 + v_4)
                        out_val[o0_4] = <float>(out_val[o0_4] + acc_4)
        sf_pick = -1
        for sf_t in range(sf_nt):
            if sf_terr[sf_t * 8] != 0:
                if sf_pick < 0 or sf_terr[sf_t * 8 + 1] < sf_terr[sf_pick * 8 + 1]:
                    sf_pick = sf_t
        if sf_pick >= 0 and sf_bad == 0:
            sf_bad = sf_terr[sf_pick * 8]
            sf_a = sf_terr[sf_pick * 8 + 2]
            sf_b = sf_terr[sf_pick * 8 + 3]
            sf_c = sf_terr[sf_pick * 8 + 4]
    sf_ret[0] = 0
    sf_ret[1] = sf_bad
    sf_ret[2] = sf_a
    sf_ret[3] = sf_b
    sf_ret[4] = sf_c


def run(
        int64_t S_n0,
        int64_t S_n1,
        int64_t S_n2,
        object p_in_a0_pos1,
        object p_in_a0_crd1,
        object p_in_a0_val,
        object p_in_a1_pos1,
        object p_in_a1_crd1,
        object p_in_a1_val,
        object p_out_val,
        size_t p_in_a2_val,
):
    cdef int64_t sf_ret[5]
    sf_ret[1] = 0
    cdef int32_t_restrict in_a0_pos1 = <int32_t_restrict>_sf_address(
        p_in_a0_pos1, sizeof(int32_t), 0)
    cdef int32_t_restrict in_a0_crd1 = <int32_t_restrict>_sf_address(
        p_in_a0_crd1, sizeof(int32_t), 0)
    cdef float_restrict in_a0_val = <float_restrict>_sf_address(p_in_a0_val, sizeof(float), 0)
    cdef int32_t_restrict in_a1_pos1 = <int32_t_restrict>_sf_address(
        p_in_a1_pos1, sizeof(int32_t), 0)
    cdef int32_t_restrict in_a1_crd1 = <int32_t_restrict>_sf_address(
        p_in_a1_crd1, sizeof(int32_t), 0)
    cdef float_restrict in_a1_val = <float_restrict>_sf_address(p_in_a1_val, sizeof(float), 0)
    cdef float_restrict out_val = <float_restrict>_sf_address(p_out_val, sizeof(float), 1)
    cdef float_restrict in_a2_val = <float_restrict>p_in_a2_val
    with nogil:
        _run_body(S_n0, S_n1, S_n2, in_a0_pos1, in_a0_crd1, in_a0_val, in_a1_pos1, in_a1_crd1,
            in_a1_val, out_val, in_a2_val, sf_ret)
    if sf_ret[1]:
        _sf_fail(sf_ret[1], sf_ret[2], sf_ret[3], sf_ret[4])
    return sf_ret[0]


_SF_DT_FLOAT32 = _np.dtype(_np.float32)
_SF_DT_INT32 = _np.dtype(_np.int32)


def fast(object v_a0, object v_a1, object v_a2, *, int threads=0):
    # the happy path of a call (compiler/fastcall.py); None: take the
    # checked path
    cdef int64_t S_n0
    cdef int64_t S_n1
    cdef int64_t S_n2
    cdef int32_t* crd1_a0
    cdef int32_t* crd1_a1
    cdef float* dense_a2
    cdef Py_ssize_t dshape_a2[1]
    cdef Py_ssize_t dstrides_a2[1]
    cdef int dynamic
    cdef Py_ssize_t len_crd1_a0
    cdef Py_ssize_t len_crd1_a1
    cdef Py_ssize_t len_pos1_a0
    cdef Py_ssize_t len_pos1_a1
    cdef Py_ssize_t len_val_a0
    cdef Py_ssize_t len_val_a1
    cdef int64_t limit
    cdef int64_t nnz_a0
    cdef int64_t nnz_a1
    cdef int nonfinite
    cdef float* optr_val
    cdef int64_t out_d0
    cdef int32_t* pos1_a0
    cdef int32_t* pos1_a1
    cdef int64_t sf_ret[5]
    cdef int64_t shape_a0[2]
    cdef int64_t shape_a1[2]
    cdef Py_ssize_t t
    cdef int team
    cdef float* val_a0
    cdef float* val_a1
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
    if type(v_a1) is not _SF_CSR[0] and type(v_a1) is not _SF_CSR[1]:
        return None
    if getattr(v_a1, '_has_canonical_format', None) is not True:
        return None
    if not _sf_shape(getattr(v_a1, '_shape', None), 2, shape_a1):
        return None
    S_n2 = shape_a1[0]
    if S_n1 != shape_a1[1]:
        return None
    pos1_a1 = <int32_t*>_sf_contiguous(getattr(v_a1, 'indptr', None), _SF_DT_INT32, &len_pos1_a1)
    if pos1_a1 == NULL:
        return None
    crd1_a1 = <int32_t*>_sf_contiguous(getattr(v_a1, 'indices', None), _SF_DT_INT32, &len_crd1_a1)
    if crd1_a1 == NULL:
        return None
    val_a1 = <float*>_sf_contiguous(getattr(v_a1, 'data', None), _SF_DT_FLOAT32, &len_val_a1)
    if val_a1 == NULL:
        return None
    if len_pos1_a1 != shape_a1[0] + 1 or pos1_a1[0] != 0:
        return None
    nnz_a1 = pos1_a1[shape_a1[0]]
    if nnz_a1 < 0 or nnz_a1 > len_crd1_a1 or nnz_a1 > len_val_a1:
        return None
    if nnz_a1 > 0 and (shape_a1[0] == 0 or shape_a1[1] == 0):
        return None
    dense_a2 = <float*>_sf_strided(v_a2, _SF_DT_FLOAT32, 1, dshape_a2, dstrides_a2)
    if dense_a2 == NULL:
        return None
    if S_n1 != dshape_a2[0]:
        return None
    if dstrides_a2[0] != 1:
        return None
    if S_n0 >= 1073741824:
        return None
    if S_n1 >= 1073741824:
        return None
    if S_n2 >= 1073741824:
        return None
    if dstrides_a2[0] != 1:
        return None
    with nogil:
        nonfinite = _sf_nonfinite32(dense_a2, S_n1)
    if nonfinite:
        return None
    team = _sf_thread_count(<double>len_val_a0 + <double>len_val_a1, threads, &dynamic)
    if team < 1:
        return None
    sf_set_threads(team, dynamic)
    out_d0 = (S_n0 + S_n2)
    limit = _sf_memory_limit()
    if (<double>out_d0) * 4 > <double>limit:
        return None
    try:
        o_val = _SF_ZEROS((out_d0, ), _SF_DT_FLOAT32)
    except MemoryError:
        return None
    optr_val = <float*>_sf_out(o_val)
    if optr_val == NULL:
        return None
    sf_ret[1] = 0
    with nogil:
        _run_body(S_n0, S_n1, S_n2, <int32_t*>pos1_a0, <int32_t*>crd1_a0, <float*>val_a0, <int32_t*>pos1_a1, <int32_t*>crd1_a1, <float*>val_a1, <float*>optr_val, <float*>dense_a2, sf_ret)
    if sf_ret[1]:
        _sf_fail(sf_ret[1], sf_ret[2], sf_ret[3], sf_ret[4])
    return o_val

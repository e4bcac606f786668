# cost of result: O(nnz(a0) + nnz(a1) + ((min((n0 + 1) // 2, n0) + 1) // 2))
# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
# cython: initializedcheck=False, nonecheck=False
# sparsefold kernel: coiterate -> csr
# sparsefold compiler 0.2.0; source hash f457e30a07ad369a
#
# Program:
#   %0 = input a0: float32[n0, n1] csr
#   %1 = slice(%0, slices=((0, (n0 + 1) // 2, 2), (None, None, None))) : float32((min((n0 + 1) // 2, n0) + 1) // 2, n1)
#   %2 = input a1: float32[n2, n1] csr
#   %3 = broadcastto(%2, target=((min((n0 + 1) // 2, n0) + 1) // 2, n1)) : float32((min((n0 + 1) // 2, n0) + 1) // 2, n1)
#   %4 = map(%1, %3, fn=multiply)                : float32((min((n0 + 1) // 2, n0) + 1) // 2, n1)
# Strategy: co-iteration (row) of a0, a1 over a0 & a1; Output: csr, appended in storage order
#   (order proved for every piece; no sort needed).
# Valid when a0, a1 are finite (0 * inf is nan); the runtime checks and otherwise runs the exact
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
        int32_t_restrict out_crd1,
        int32_t_restrict out_pos1,
        float_restrict out_val,
        int64_t* sf_ret,
) noexcept nogil:
    cdef bint stale_a, stale_a_2, stale_b, stale_b_2
    cdef float v, x0, x1
    cdef int64_t e_a, e_a_2, e_b, e_b_2, i1_a, i1_a_2, i1_b, i1_b_2, k, k_2, k_met, k_met_2, key_a
    cdef int64_t key_a_2, key_b, key_b_2, m, n, n_row, p_a, p_a_2, p_b, p_b_2, pos_bad, r, r_2
    cdef int64_t range_v, range_v_2, range_v_3, range_v_4, row_len, s_a, s_a_2, s_b, s_b_2, sf_a
    cdef int64_t sf_b, sf_bad, sf_c, t, t_2, t_3, t_4, t_5, t_6, team
    cdef uint32_t row_bad32, row_bad32_2, row_bad32_3, row_bad32_4, row_lim32, row_lim32_2
    cdef uint32_t row_lim32_3, row_lim32_4
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
        n = 0
        m = 0
        out_pos1[0] = 0
        team = sf_max_threads()
        if team > 1:
            # row-driven co-iteration of a0, a1 over a0 & a1: per output row, one cursor per piece over its source row (inner coordinates in order, proved); pass 1 (rows in parallel): each row's length
            # parallel: iterations on OpenMP threads (identical results for any thread count)
            sf_hi = ((min(((S_n0 + 1) // 2), S_n0) + 1) // 2)
            sf_nt = sf_max_threads()
            if sf_nt > team:
                sf_nt = team
            for sf_t in range(sf_nt * 8):
                sf_terr[sf_t] = 0
            for r in prange(sf_hi, num_threads=sf_nt, schedule='static'):
                sf_tid = threadid()
                row_len = 0
                s_a = (r * 2)
                p_a = in_a0_pos1[s_a]
                e_a = in_a0_pos1[s_a + 1]
                row_lim32 = <uint32_t>(S_n1 if S_n1 < <int64_t>2147483648 else <int64_t>2147483648)
                row_bad32 = 0
                for t_3 in range(p_a, e_a):
                    row_bad32 = row_bad32 | (<uint32_t>in_a0_crd1[t_3] >= row_lim32)
                if row_bad32:
                    for t_3 in range(p_a, e_a):
                        range_v = in_a0_crd1[t_3]
                        if <uint64_t>range_v >= <uint64_t>S_n1:
                            if sf_terr[sf_tid * 8] == 0:
                                sf_terr[sf_tid * 8] = 3
                                sf_terr[sf_tid * 8 + 1] = r
                                sf_terr[sf_tid * 8 + 2] = range_v
                                sf_terr[sf_tid * 8 + 3] = S_n1
                                sf_terr[sf_tid * 8 + 4] = 0
                            range_v = 0
                if row_bad32:
                    e_a = p_a
                stale_a = True
                key_a = INT64_MAX
                s_b = r
                p_b = in_a1_pos1[s_b]
                e_b = in_a1_pos1[s_b + 1]
                row_lim32_2 = <uint32_t>(S_n1 if S_n1 < <int64_t>2147483648 else <int64_t>2147483648)
                row_bad32_2 = 0
                for t_4 in range(p_b, e_b):
                    row_bad32_2 = row_bad32_2 | (<uint32_t>in_a1_crd1[t_4] >= row_lim32_2)
                if row_bad32_2:
                    for t_4 in range(p_b, e_b):
                        range_v_2 = in_a1_crd1[t_4]
                        if <uint64_t>range_v_2 >= <uint64_t>S_n1:
                            if sf_terr[sf_tid * 8] == 0:
                                sf_terr[sf_tid * 8] = 4
                                sf_terr[sf_tid * 8 + 1] = r
                                sf_terr[sf_tid * 8 + 2] = range_v_2
                                sf_terr[sf_tid * 8 + 3] = S_n1
                                sf_terr[sf_tid * 8 + 4] = 0
                            range_v_2 = 0
                if row_bad32_2:
                    e_b = p_b
                stale_b = True
                key_b = INT64_MAX
                if stale_a:
                    stale_a = False
                    key_a = INT64_MAX
                    if p_a < e_a:
                        i1_a = in_a0_crd1[p_a]
                        key_a = i1_a
                if stale_b:
                    stale_b = False
                    key_b = INT64_MAX
                    if p_b < e_b:
                        i1_b = in_a1_crd1[p_b]
                        key_b = i1_b
                while True:
                    while key_a != key_b:
                        if key_a < key_b:
                            if key_b == INT64_MAX:
                                break
                            p_a = p_a + 1
                            stale_a = True
                            if stale_a:
                                stale_a = False
                                key_a = INT64_MAX
                                if p_a < e_a:
                                    i1_a = in_a0_crd1[p_a]
                                    key_a = i1_a
                        else:
                            if key_a == INT64_MAX:
                                break
                            p_b = p_b + 1
                            stale_b = True
                            if stale_b:
                                stale_b = False
                                key_b = INT64_MAX
                                if p_b < e_b:
                                    i1_b = in_a1_crd1[p_b]
                                    key_b = i1_b
                    k_met = INT64_MAX
                    if key_a == key_b:
                        k_met = key_a
                    if k_met == INT64_MAX:
                        break
                    k = k_met
                    row_len = row_len + 1
                    if k_met == k:
                        p_a = p_a + 1
                        stale_a = True
                        if stale_a:
                            stale_a = False
                            key_a = INT64_MAX
                            if p_a < e_a:
                                i1_a = in_a0_crd1[p_a]
                                key_a = i1_a
                    if k_met == k:
                        p_b = p_b + 1
                        stale_b = True
                        if stale_b:
                            stale_b = False
                            key_b = INT64_MAX
                            if p_b < e_b:
                                i1_b = in_a1_crd1[p_b]
                                key_b = i1_b
                out_pos1[r + 1] = <int32_t>row_len
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
            # prefix sum: row starts
            for t_2 in range(((min(((S_n0 + 1) // 2), S_n0) + 1) // 2)):
                out_pos1[t_2 + 1] = out_pos1[t_2 + 1] + out_pos1[t_2]
        # fill: each row from its start (pass 1's prefix sum; with one thread, where the row before ended)
        # parallel: iterations on OpenMP threads (identical results for any thread count)
        sf_hi = ((min(((S_n0 + 1) // 2), S_n0) + 1) // 2)
        sf_nt = sf_max_threads()
        if sf_nt > team:
            sf_nt = team
        for sf_t in range(sf_nt * 8):
            sf_terr[sf_t] = 0
        for r_2 in prange(sf_hi, num_threads=sf_nt, schedule='static'):
            sf_tid = threadid()
            n_row = out_pos1[r_2]
            s_a_2 = (r_2 * 2)
            p_a_2 = in_a0_pos1[s_a_2]
            e_a_2 = in_a0_pos1[s_a_2 + 1]
            row_lim32_3 = <uint32_t>(S_n1 if S_n1 < <int64_t>2147483648 else <int64_t>2147483648)
            row_bad32_3 = 0
            for t_5 in range(p_a_2, e_a_2):
                row_bad32_3 = row_bad32_3 | (<uint32_t>in_a0_crd1[t_5] >= row_lim32_3)
            if row_bad32_3:
                for t_5 in range(p_a_2, e_a_2):
                    range_v_3 = in_a0_crd1[t_5]
                    if <uint64_t>range_v_3 >= <uint64_t>S_n1:
                        if sf_terr[sf_tid * 8] == 0:
                            sf_terr[sf_tid * 8] = 3
                            sf_terr[sf_tid * 8 + 1] = r_2
                            sf_terr[sf_tid * 8 + 2] = range_v_3
                            sf_terr[sf_tid * 8 + 3] = S_n1
                            sf_terr[sf_tid * 8 + 4] = 0
                        range_v_3 = 0
            if row_bad32_3:
                e_a_2 = p_a_2
            stale_a_2 = True
            key_a_2 = INT64_MAX
            s_b_2 = r_2
            p_b_2 = in_a1_pos1[s_b_2]
            e_b_2 = in_a1_pos1[s_b_2 + 1]
            row_lim32_4 = <uint32_t>(S_n1 if S_n1 < <int64_t>2147483648 else <int64_t>2147483648)
            row_bad32_4 = 0
            for t_6 in range(p_b_2, e_b_2):
                row_bad32_4 = row_bad32_4 | (<uint32_t>in_a1_crd1[t_6] >= row_lim32_4)
            if row_bad32_4:
                for t_6 in range(p_b_2, e_b_2):
                    range_v_4 = in_a1_crd1[t_6]
                    if <uint64_t>range_v_4 >= <uint64_t>S_n1:
                        if sf_terr[sf_tid * 8] == 0:
                            sf_terr[sf_tid * 8] = 4
                            sf_terr[sf_tid * 8 + 1] = r_2
                            sf_terr[sf_tid * 8 + 2] = range_v_4
                            sf_terr[sf_tid * 8 + 3] = S_n1
                            sf_terr[sf_tid * 8 + 4] = 0
                        range_v_4 = 0
            if row_bad32_4:
                e_b_2 = p_b_2
            stale_b_2 = True
            key_b_2 = INT64_MAX
            if stale_a_2:
                stale_a_2 = False
                key_a_2 = INT64_MAX
                if p_a_2 < e_a_2:
                    i1_a_2 = in_a0_crd1[p_a_2]
                    key_a_2 = i1_a_2
            if stale_b_2:
                stale_b_2 = False
                key_b_2 = INT64_MAX
                if p_b_2 < e_b_2:
                    i1_b_2 = in_a1_crd1[p_b_2]
                    key_b_2 = i1_b_2
            while True:
                while key_a_2 != key_b_2:
                    if key_a_2 < key_b_2:
                        if key_b_2 == INT64_MAX:
                            break
                        p_a_2 = p_a_2 + 1
                        stale_a_2 = True
                        if stale_a_2:
                            stale_a_2 = False
                            key_a_2 = INT64_MAX
                            if p_a_2 < e_a_2:
                                i1_a_2 = in_a0_crd1[p_a_2]
                                key_a_2 = i1_a_2
                    else:
                        if key_a_2 == INT64_MAX:
                            break
                        p_b_2 = p_b_2 + 1
                        stale_b_2 = True
                        if stale_b_2:
                            stale_b_2 = False
                            key_b_2 = INT64_MAX
                            if p_b_2 < e_b_2:
                                i1_b_2 = in_a1_crd1[p_b_2]
                                key_b_2 = i1_b_2
                k_met_2 = INT64_MAX
                if key_a_2 == key_b_2:
                    k_met_2 = key_a_2
                if k_met_2 == INT64_MAX:
                    break
                k_2 = k_met_2
                x0 = in_a0_val[p_a_2] if k_met_2 == k_2 else (<float>0.0)
                x1 = in_a1_val[p_b_2] if k_met_2 == k_2 else (<float>0.0)
                v = <float>(x0 * x1)
                out_crd1[n_row] = <int32_t>k_2
                out_val[n_row] = v
                n_row = n_row + 1
                if k_met_2 == k_2:
                    p_a_2 = p_a_2 + 1
                    stale_a_2 = True
                    if stale_a_2:
                        stale_a_2 = False
                        key_a_2 = INT64_MAX
                        if p_a_2 < e_a_2:
                            i1_a_2 = in_a0_crd1[p_a_2]
                            key_a_2 = i1_a_2
                if k_met_2 == k_2:
                    p_b_2 = p_b_2 + 1
                    stale_b_2 = True
                    if stale_b_2:
                        stale_b_2 = False
                        key_b_2 = INT64_MAX
                        if p_b_2 < e_b_2:
                            i1_b_2 = in_a1_crd1[p_b_2]
                            key_b_2 = i1_b_2
            if team == 1:
                out_pos1[r_2 + 1] = <int32_t>n_row
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
        n = out_pos1[((min(((S_n0 + 1) // 2), S_n0) + 1) // 2)]
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
        object p_in_a0_pos1,
        object p_in_a0_crd1,
        object p_in_a0_val,
        object p_in_a1_pos1,
        object p_in_a1_crd1,
        object p_in_a1_val,
        object p_out_crd1,
        object p_out_pos1,
        object p_out_val,
):
    cdef int64_t sf_ret[6]
    sf_ret[2] = 0
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
    cdef int32_t_restrict out_crd1 = <int32_t_restrict>_sf_address(p_out_crd1, sizeof(int32_t), 1)
    cdef int32_t_restrict out_pos1 = <int32_t_restrict>_sf_address(p_out_pos1, sizeof(int32_t), 1)
    cdef float_restrict out_val = <float_restrict>_sf_address(p_out_val, sizeof(float), 1)
    with nogil:
        _run_body(S_n0, S_n1, S_n2, in_a0_pos1, in_a0_crd1, in_a0_val, in_a1_pos1, in_a1_crd1,
            in_a1_val, out_crd1, out_pos1, out_val, sf_ret)
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
    cdef int64_t capacity
    cdef double capacity_bound
    cdef int32_t* crd1_a0
    cdef int32_t* crd1_a1
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
    cdef int32_t* optr_crd1
    cdef int32_t* optr_pos1
    cdef float* optr_val
    cdef int64_t out_d0
    cdef int64_t out_d1
    cdef int32_t* pos1_a0
    cdef int32_t* pos1_a1
    cdef int64_t sf_ret[6]
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
    if S_n0 >= 268435456:
        return None
    if S_n1 >= 268435456:
        return None
    if S_n2 >= 268435456:
        return None
    if not ((_sf_floordiv((min(_sf_floordiv((S_n0 + 1), 2), S_n0) + 1), 2) == S_n2)):
        return None
    with nogil:
        nonfinite = _sf_nonfinite32(val_a0, nnz_a0)
    if nonfinite:
        return None
    with nogil:
        nonfinite = _sf_nonfinite32(val_a1, nnz_a1)
    if nonfinite:
        return None
    team = _sf_thread_count(<double>len_val_a0 + <double>len_val_a1, threads, &dynamic)
    if team < 1:
        return None
    sf_set_threads(team, dynamic)
    out_d0 = _sf_floordiv((min(_sf_floordiv((S_n0 + 1), 2), S_n0) + 1), 2)
    out_d1 = S_n1
    limit = _sf_memory_limit()
    capacity_bound = min(<double>len_val_a0, <double>len_val_a1)
    if capacity_bound > 1.152921504606847e+18:
        return None
    capacity = min(len_val_a0, len_val_a1)
    if capacity > 2147483647 or out_d0 > 2147483647 or out_d1 > 2147483647:
        return None
    if <double>(capacity) * 4 + <double>(out_d0 + 1) * 4 + <double>(capacity) * 4 > <double>limit:
        return None
    try:
        o_val = sf_np_empty(capacity, _SF_DT_FLOAT32)
        o_pos1 = sf_np_empty(out_d0 + 1, _SF_DT_INT32)
        o_crd1 = sf_np_empty(capacity, _SF_DT_INT32)
    except MemoryError:
        return None
    optr_val = <float*>_sf_out(o_val)
    if optr_val == NULL:
        return None
    optr_pos1 = <int32_t*>_sf_out(o_pos1)
    if optr_pos1 == NULL:
        return None
    optr_crd1 = <int32_t*>_sf_out(o_crd1)
    if optr_crd1 == NULL:
        return None
    sf_ret[2] = 0
    with nogil:
        _run_body(S_n0, S_n1, S_n2, <int32_t*>pos1_a0, <int32_t*>crd1_a0, <float*>val_a0, <int32_t*>pos1_a1, <int32_t*>crd1_a1, <float*>val_a1, <int32_t*>optr_crd1, <int32_t*>optr_pos1, <float*>optr_val, sf_ret)
    if sf_ret[2]:
        _sf_fail(sf_ret[2], sf_ret[3], sf_ret[4], sf_ret[5])
    cdef int64_t n = sf_ret[0]
    o_val = _sf_trim(o_val, n, _SF_DT_FLOAT32, 4)
    o_crd1 = _sf_trim(o_crd1, n, _SF_DT_INT32, 4)
    return _sf_compressed(_sp.csr_array, _SF_CSR_DICT, o_val, o_crd1, o_pos1, (out_d0, out_d1, ))

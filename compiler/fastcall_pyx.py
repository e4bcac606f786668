"""The Cython helpers every fast entry (``fastcall.py``) uses, as module-level text: floor
division and modulo of sizes (Python's meaning, under the module's ``cdivision``), buffer
reads of NumPy arrays, a scipy shape read, the memory limit without Python's ``os.environ``,
and result containers built as ``storage.results`` builds them.

Only C-level helpers live in this text; the Python-level values they read (the scipy
classes, the result layouts, the physical memory) are computed once in ``fastcall_runtime``
and imported, since Python-level code in every module was the larger part of its C compile
time.
"""

from __future__ import annotations

__all__ = ["FAST_HELPERS"]

# module-level text every fast entry uses (imports and small helpers)
FAST_HELPERS = '''
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
'''

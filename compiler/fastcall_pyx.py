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
from cpython.buffer cimport PyBUF_C_CONTIGUOUS, PyBUF_WRITABLE, PyBUF_STRIDES
from cpython.exc cimport PyErr_Clear
from cpython.long cimport PyLong_AsLongLongAndOverflow, PyLong_CheckExact
from libc.stdlib cimport getenv
cdef extern from "Python.h":
    int _sf_get_buffer "PyObject_GetBuffer"(object, Py_buffer*, int)
import numpy as _np
import scipy.sparse as _sp
from sparsefold.compiler.fastcall_runtime import (
    COO as _SF_COO, COO_DICT as _SF_COO_DICT, CSC as _SF_CSC, CSC_DICT as _SF_CSC_DICT,
    CSR as _SF_CSR, CSR_DICT as _SF_CSR_DICT, EMPTY as _SF_EMPTY, NDARRAY as _SF_NDARRAY,
    PHYSICAL as _SF_PHYSICAL, ZEROS as _SF_ZEROS, compressed_array as _sf_compressed_array,
    coo_array as _sf_coo_array, memory_limit as _sf_memory_limit_checked)


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
    out = cls.__new__(cls)
    d = dict(layout)
    d["data"], d["indices"], d["indptr"], d["_shape"] = data, indices, indptr, shape
    out.__dict__ = d
    return out


cdef object _sf_coo(dict layout, object data, tuple coords, tuple shape):
    # A scipy COO result, the object storage.results._coo_array builds
    if layout is None:
        return _sf_coo_array(_sp.coo_array, data, coords, shape)
    out = _sp.coo_array.__new__(_sp.coo_array)
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
    out = _SF_EMPTY(n, dtype)
    if n:
        memcpy(_sf_out(out), _sf_out(array), n * itemsize)
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
    cdef Py_buffer view
    if type(array) is not _SF_NDARRAY or array.dtype is not dtype:
        return NULL
    if _sf_get_buffer(array, &view, PyBUF_C_CONTIGUOUS) == -1:
        PyErr_Clear()
        return NULL
    cdef void* address = view.buf
    length[0] = view.shape[0] if view.ndim == 1 else -1
    cdef int ndim = view.ndim
    PyBuffer_Release(&view)
    return address if ndim == 1 else NULL


cdef void* _sf_strided(object array, object dtype, int ndim, Py_ssize_t* shape,
                       Py_ssize_t* strides) noexcept:
    # An ndarray of exactly ``dtype`` and rank: its shape and element strides; NULL when its
    # strides are not whole elements (the checked path copies it then).
    cdef Py_buffer view
    cdef int d
    if type(array) is not _SF_NDARRAY or array.dtype is not dtype:
        return NULL
    if _sf_get_buffer(array, &view, PyBUF_STRIDES) == -1:
        PyErr_Clear()
        return NULL
    cdef void* address = view.buf
    cdef bint ok = view.ndim == ndim
    if ok:
        for d in range(ndim):
            shape[d] = view.shape[d]
            if view.strides[d] % view.itemsize:
                ok = False
            strides[d] = view.strides[d] // view.itemsize
    PyBuffer_Release(&view)
    return address if ok else NULL


cdef void* _sf_out(object array) noexcept:
    cdef Py_buffer view
    if _sf_get_buffer(array, &view, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE) == -1:
        PyErr_Clear()
        return NULL
    cdef void* address = view.buf
    PyBuffer_Release(&view)
    return address
'''

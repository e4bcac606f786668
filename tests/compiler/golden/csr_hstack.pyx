# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
# cython: initializedcheck=False, nonecheck=False
# sparsefold kernel: stream -> csr
# sparsefold compiler 0.1.0; source hash 60e839ea912107a8
#
# Program:
#   %0 = input a0: float32[n0, n1] csr
#   %1 = input a1: float32[n0, n2] csr
#   %2 = concat(%0, %1, axis=1)                  : float32(n0, n1 + n2)
# Strategy: stream (2 piece(s), row loop); Output: csr, appended in storage order (order proved for every piece; no sort needed).

from libc.stdint cimport int8_t, int16_t, int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t
from libc.math cimport NAN, INFINITY, fabs, pow
from libc.string cimport memcpy
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


cdef int _sf_out_of_range(const char* what, int64_t found, int64_t size) except -1 nogil:
    # a stored coordinate outside its axis: the input is malformed. Raised from the kernel
    # (which releases everything it holds on the way out), never read past.
    with gil:
        from sparsefold.spec.errors import InvalidData
        raise InvalidData(f"{what.decode()} out of range [0, {size}): found {found}")

def run(object p_a0_pos1, object p_a0_crd1, object p_a0_val, object p_a1_pos1, object p_a1_crd1, object p_a1_val, int64_t S_n0, int64_t S_n1, int64_t S_n2, object p_out_pos1, object p_out_crd1, object p_out_val):
    cdef int64_t cur
    cdef int64_t i0
    cdef int64_t i1
    cdef int64_t m
    cdef int64_t n
    cdef int64_t o0
    cdef int64_t q0
    cdef int64_t q1
    cdef int64_t r
    cdef uint32_t range_bad32
    cdef uint32_t range_c32
    cdef uint32_t range_lim32
    cdef int64_t range_v
    cdef int64_t seg_len
    cdef int64_t seg_start
    cdef int64_t t
    cdef int32_t* a0_pos1 = <int32_t*>_sf_address(p_a0_pos1, sizeof(int32_t), 0)
    cdef int32_t* a0_crd1 = <int32_t*>_sf_address(p_a0_crd1, sizeof(int32_t), 0)
    cdef float* a0_val = <float*>_sf_address(p_a0_val, sizeof(float), 0)
    cdef int32_t* a1_pos1 = <int32_t*>_sf_address(p_a1_pos1, sizeof(int32_t), 0)
    cdef int32_t* a1_crd1 = <int32_t*>_sf_address(p_a1_crd1, sizeof(int32_t), 0)
    cdef float* a1_val = <float*>_sf_address(p_a1_val, sizeof(float), 0)
    cdef int32_t* out_pos1 = <int32_t*>_sf_address(p_out_pos1, sizeof(int32_t), 1)
    cdef int32_t* out_crd1 = <int32_t*>_sf_address(p_out_crd1, sizeof(int32_t), 1)
    cdef float* out_val = <float*>_sf_address(p_out_val, sizeof(float), 1)
    with nogil:
        n = 0
        m = 0
        cur = 0
        out_pos1[0] = 0
        # row-driven loop: output rows outermost; each piece contributes its source row (backward map), in piece order
        for r in range(S_n0):
            # piece 0: row of a0 (csr)
            i0 = r
            q0 = i0
            o0 = i0
            # the row is copied unchanged: bulk copy (inner coordinate shifted)
            seg_start = a0_pos1[q0]
            seg_len = a0_pos1[q0 + 1] - seg_start
            range_lim32 = <uint32_t>(S_n1 if S_n1 < <int64_t>2147483648 else <int64_t>2147483648)
            range_bad32 = 0
            for t in range(seg_len):
                range_c32 = <uint32_t>a0_crd1[seg_start + t]
                range_bad32 = range_bad32 | (range_c32 >= range_lim32)
                (&out_crd1[n])[t] = <int32_t>range_c32
                (&out_val[n])[t] = a0_val[seg_start + t]
            if range_bad32:
                for t in range(seg_len):
                    range_v = a0_crd1[seg_start + t]
                    if <uint64_t>range_v >= <uint64_t>S_n1: _sf_out_of_range(b"a0: indices", range_v, S_n1)
            n = n + seg_len
            # piece 1: row of a1 (csr)
            i0 = r
            q0 = i0
            o0 = i0
            # the row is copied unchanged: bulk copy (inner coordinate shifted)
            seg_start = a1_pos1[q0]
            seg_len = a1_pos1[q0 + 1] - seg_start
            range_lim32 = <uint32_t>(S_n2 if S_n2 < <int64_t>2147483648 else <int64_t>2147483648)
            range_bad32 = 0
            for t in range(seg_len):
                range_c32 = <uint32_t>a1_crd1[seg_start + t]
                range_bad32 = range_bad32 | (range_c32 >= range_lim32)
                (&out_crd1[n])[t] = <int32_t>(range_c32 + <uint32_t>(S_n1))
                (&out_val[n])[t] = a1_val[seg_start + t]
            if range_bad32:
                for t in range(seg_len):
                    range_v = a1_crd1[seg_start + t]
                    if <uint64_t>range_v >= <uint64_t>S_n2: _sf_out_of_range(b"a1: indices", range_v, S_n2)
            n = n + seg_len
            out_pos1[r + 1] = <int32_t>n
    return (n, m)

# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
# cython: initializedcheck=False, nonecheck=False
# sparsefold kernel: stream -> dense
# sparsefold compiler 0.1.0; source hash 04c4d176c85eb976
#
# Program:
#   %0 = input a0: float32[n0, n1] csr
#   %1 = input a1: float32[n2, n1] csr
#   %2 = concat(%0, %1, axis=0)                  : float32(n0 + n2, n1)
#   %3 = expanddims(%2, axis=2)                  : float32(n0 + n2, n1, 1)
#   %4 = input a2: float32[n1] dense
#   %5 = expanddims(%4, axis=1)                  : float32(n1, 1)
#   %6 = expanddims(%5, axis=0)                  : float32(1, n1, 1)
#   %7 = map(%3, %6, fn=multiply)                : float32(n0 + n2, n1, 1)
#   %8 = reduce(%7, axes=(1,), monoid=sum, dtype_request=float32) : float32(n0 + n2, 1)
#   %9 = squeeze(%8, axes=(1,))                  : float32(n0 + n2,)
# Strategy: stream (2 piece(s), leaf loop); Output: dense, each stored entry combined with sum.
# Valid when a2 are finite (0 * inf is nan); the runtime checks and otherwise runs the dense kernel.

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

def run(object p_a0_pos1, object p_a0_crd1, object p_a0_val, object p_a1_pos1, object p_a1_crd1, object p_a1_val, size_t p_a2_val, int64_t a2_st0, int64_t S_n0, int64_t S_n1, int64_t S_n2, object p_out_val):
    cdef int64_t i0
    cdef int64_t i1
    cdef int64_t o0
    cdef int64_t q0
    cdef int64_t q1
    cdef float v_1
    cdef float v_2
    cdef int32_t* a0_pos1 = <int32_t*>_sf_address(p_a0_pos1, sizeof(int32_t), 0)
    cdef int32_t* a0_crd1 = <int32_t*>_sf_address(p_a0_crd1, sizeof(int32_t), 0)
    cdef float* a0_val = <float*>_sf_address(p_a0_val, sizeof(float), 0)
    cdef int32_t* a1_pos1 = <int32_t*>_sf_address(p_a1_pos1, sizeof(int32_t), 0)
    cdef int32_t* a1_crd1 = <int32_t*>_sf_address(p_a1_crd1, sizeof(int32_t), 0)
    cdef float* a1_val = <float*>_sf_address(p_a1_val, sizeof(float), 0)
    cdef float* a2_val = <float*>p_a2_val
    cdef float* out_val = <float*>_sf_address(p_out_val, sizeof(float), 1)
    with nogil:
        # piece 0: entries of a0 (csr) in storage order -> output coordinates _i0
        for i0 in range(S_n0):
            q0 = i0
            o0 = i0
            for q1 in range(a0_pos1[q0], a0_pos1[q0 + 1]):
                i1 = a0_crd1[q1]
                if <uint64_t>i1 >= <uint64_t>S_n1: _sf_out_of_range(b"a0: indices", i1, S_n1)
                v_1 = (<float>(((<float>(a0_val[q1])) * (<float>(a2_val[i1*a2_st0])))))
                out_val[o0] = (<float>(out_val[o0] + (<float>(v_1))))
        # piece 1: entries of a1 (csr) in storage order -> output coordinates _i0 + n0
        for i0 in range(S_n2):
            q0 = i0
            o0 = (i0 + S_n0)
            for q1 in range(a1_pos1[q0], a1_pos1[q0 + 1]):
                i1 = a1_crd1[q1]
                if <uint64_t>i1 >= <uint64_t>S_n1: _sf_out_of_range(b"a1: indices", i1, S_n1)
                v_2 = (<float>(((<float>(a1_val[q1])) * (<float>(a2_val[i1*a2_st0])))))
                out_val[o0] = (<float>(out_val[o0] + (<float>(v_2))))
    return 0

# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
# cython: initializedcheck=False, nonecheck=False
# sparsefold kernel: stream -> csr
# sparsefold compiler 0.1.0; source hash 0202914d4126307f
#
# Program:
#   %0 = input a0: float32[6, 4] csr
#   %1 = slice(%0, slices=((0, 3, 2), (None, None, None))) : float32(2, 4)
#   %2 = input a1: float32[2, 4] csr
#   %3 = map(%1, %2, fn=multiply)                : float32(2, 4)
# Strategy: merge (two sparse operands, row loop); Output: csr, appended in storage order (order proved for every piece; no sort needed).
# Valid when a0, a1 are finite (0 * inf is nan); the runtime checks and otherwise runs an exact variant (the union merge, else the dense kernel).

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


def _sf_fail(site, a, b, c):
    # the first failed check of the call: which array, what was found
    from sparsefold.spec.errors import InvalidData
    kind, what = _SF_SITES[site - 1]
    if kind == "pos":
        raise InvalidData(f"{what} is not monotone non-decreasing: row {a} spans [{b}, {c})")
    raise InvalidData(f"{what} out of range [0, {b}): found {a}")

_SF_SITES = (('pos', 'a0: indptr'), ('pos', 'a1: indptr'), ('range', 'a0: indices'), ('range', 'a1: indices'), )
def run(object p_in_a0_pos1, object p_in_a0_crd1, object p_in_a0_val, object p_in_a1_pos1, object p_in_a1_crd1, object p_in_a1_val, object p_out_pos1, object p_out_crd1, object p_out_val):
    cdef int64_t cur
    cdef int64_t e_a
    cdef int64_t e_b
    cdef int64_t i0_a
    cdef int64_t i0_b
    cdef int64_t i1_a
    cdef int64_t i1_b
    cdef int64_t j_a
    cdef int64_t j_b
    cdef int64_t m
    cdef int64_t n
    cdef int64_t p_a
    cdef int64_t p_b
    cdef int64_t pos_bad
    cdef int64_t r
    cdef int64_t sf_a
    cdef int64_t sf_b
    cdef int64_t sf_bad
    cdef int64_t sf_c
    cdef int64_t t
    cdef float v_1
    cdef int32_t* in_a0_pos1 = <int32_t*>_sf_address(p_in_a0_pos1, sizeof(int32_t), 0)
    cdef int32_t* in_a0_crd1 = <int32_t*>_sf_address(p_in_a0_crd1, sizeof(int32_t), 0)
    cdef float* in_a0_val = <float*>_sf_address(p_in_a0_val, sizeof(float), 0)
    cdef int32_t* in_a1_pos1 = <int32_t*>_sf_address(p_in_a1_pos1, sizeof(int32_t), 0)
    cdef int32_t* in_a1_crd1 = <int32_t*>_sf_address(p_in_a1_crd1, sizeof(int32_t), 0)
    cdef float* in_a1_val = <float*>_sf_address(p_in_a1_val, sizeof(float), 0)
    cdef int32_t* out_pos1 = <int32_t*>_sf_address(p_out_pos1, sizeof(int32_t), 1)
    cdef int32_t* out_crd1 = <int32_t*>_sf_address(p_out_crd1, sizeof(int32_t), 1)
    cdef float* out_val = <float*>_sf_address(p_out_val, sizeof(float), 1)
    with nogil:
        sf_bad = 0
        # a0: rows in order before anything reads them
        pos_bad = 0
        for t in range(6):
            pos_bad = pos_bad | (in_a0_pos1[t + 1] < in_a0_pos1[t])
        if pos_bad and sf_bad == 0:
            for t in range(6):
                if in_a0_pos1[t + 1] < in_a0_pos1[t]:
                    sf_bad = 1
                    sf_a = t
                    sf_b = in_a0_pos1[t]
                    sf_c = in_a0_pos1[t + 1]
                    break
        # a1: rows in order before anything reads them
        pos_bad = 0
        for t in range(2):
            pos_bad = pos_bad | (in_a1_pos1[t + 1] < in_a1_pos1[t])
        if pos_bad and sf_bad == 0:
            for t in range(2):
                if in_a1_pos1[t + 1] < in_a1_pos1[t]:
                    sf_bad = 2
                    sf_a = t
                    sf_b = in_a1_pos1[t]
                    sf_c = in_a1_pos1[t + 1]
                    break
        if sf_bad == 0:
            n = 0
            m = 0
            cur = 0
            out_pos1[0] = 0
            # row-driven merge (intersection): per output row, one finger per operand row, comparing inner coordinates (each row proved in order)
            for r in range(2):
                p_a = 0
                e_a = 0
                if True:
                    i0_a = (r * 2)
                    p_a = in_a0_pos1[i0_a]
                    e_a = in_a0_pos1[i0_a + 1]
                p_b = 0
                e_b = 0
                if True:
                    i0_b = r
                    p_b = in_a1_pos1[i0_b]
                    e_b = in_a1_pos1[i0_b + 1]
                while True:
                    while p_a < e_a:
                        i1_a = in_a0_crd1[p_a]
                        if <uint64_t>i1_a >= <uint64_t>4:
                            if sf_bad == 0:
                                sf_bad = 3
                                sf_a = i1_a
                                sf_b = 4
                                sf_c = 0
                            i1_a = 0
                        break
                    if p_a < e_a:
                        j_a = i1_a
                    while p_b < e_b:
                        i1_b = in_a1_crd1[p_b]
                        if <uint64_t>i1_b >= <uint64_t>4:
                            if sf_bad == 0:
                                sf_bad = 4
                                sf_a = i1_b
                                sf_b = 4
                                sf_c = 0
                            i1_b = 0
                        break
                    if p_b < e_b:
                        j_b = i1_b
                    if not (p_a < e_a and p_b < e_b): break
                    if j_a < j_b:
                        p_a = p_a + 1
                    elif j_b < j_a:
                        p_b = p_b + 1
                    else:
                        v_1 = (<float>(((<float>(in_a0_val[p_a])) * (<float>(in_a1_val[p_b])))))
                        out_crd1[n] = <int32_t>j_a
                        out_val[n] = (<float>(v_1))
                        n = n + 1
                        p_a = p_a + 1
                        p_b = p_b + 1
                out_pos1[r + 1] = <int32_t>n
    if sf_bad:
        _sf_fail(sf_bad, sf_a, sf_b, sf_c)
    return (n, m)

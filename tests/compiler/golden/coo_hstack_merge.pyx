# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
# cython: initializedcheck=False, nonecheck=False
# sparsefold kernel: coiterate -> coo
# sparsefold compiler 0.2.0; source hash 244fe1f9a4b4f463
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
    raise InvalidData(f"{what} out of range [0, {b}): found {a}")

_SF_SITES = (
    ('range', 'a0: coords[0]'),
    ('range', 'a0: coords[1]'),
    ('range', 'a1: coords[0]'),
    ('range', 'a1: coords[1]'),
)

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
    cdef bint stale_a0, stale_a1
    cdef float x0
    cdef int64_t end_a0, end_a1, i0_a0, i0_a1, i1_a0, i1_a1, k, k0, k1, key_a0, key_a1, m, n
    cdef int64_t o0_a0, o0_a1, o1_a0, o1_a1, q0_a0, q0_a1, sf_a, sf_b, sf_bad, sf_c
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
        while True:
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
            if not (key_a0 != INT64_MAX or key_a1 != INT64_MAX):
                break
            k = key_a0
            if key_a1 < k:
                k = key_a1
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
            if key_a1 == k:
                q0_a1 = q0_a1 + 1
                stale_a1 = True
    if sf_bad:
        _sf_fail(sf_bad, sf_a, sf_b, sf_c)
    return (n, m)

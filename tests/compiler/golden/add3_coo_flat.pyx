# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
# cython: initializedcheck=False, nonecheck=False
# sparsefold kernel: coiterate -> coo
# sparsefold compiler 0.2.0; source hash df558bf4911a276e
#
# Program:
#   %0 = input a0: float32[n0, n1] coo
#   %1 = input a1: float32[n0, n1] coo
#   %2 = map(%0, %1, fn=multiply)                : float32(n0, n1)
#   %3 = input a2: float32[n0, n1] coo
#   %4 = map(%2, %3, fn=add)                     : float32(n0, n1)
# Strategy: co-iteration (flat) of a0, a1, a2 over a2 | (a0 & a1); Output: coo, appended in storage
#   order (order proved for every piece; no sort needed).
# Valid when a0, a1 are finite (0 * inf is nan); the runtime checks and otherwise runs the exact
#   variant.

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
    ('range', 'a2: coords[0]'),
    ('range', 'a2: coords[1]'),
)

def run(
        int64_t S_n0,
        int64_t S_n1,
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
        object p_in_a2_pos0,
        object p_in_a2_crd0,
        object p_in_a2_crd1,
        object p_in_a2_val,
):
    cdef bint stale_a, stale_b, stale_c
    cdef float v, v_2, x0, x1, x2
    cdef int64_t end_a, end_b, end_c, i0_a, i0_b, i0_c, i1_a, i1_b, i1_c, k, k0, k1, key_a, key_b
    cdef int64_t key_c, m, n, o0_a, o0_b, o0_c, o1_a, o1_b, o1_c, q0_a, q0_b, q0_c, sf_a, sf_b
    cdef int64_t sf_bad, sf_c
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
    cdef int64_t_restrict in_a2_pos0 = <int64_t_restrict>_sf_address(
        p_in_a2_pos0, sizeof(int64_t), 0)
    cdef int32_t_restrict in_a2_crd0 = <int32_t_restrict>_sf_address(
        p_in_a2_crd0, sizeof(int32_t), 0)
    cdef int32_t_restrict in_a2_crd1 = <int32_t_restrict>_sf_address(
        p_in_a2_crd1, sizeof(int32_t), 0)
    cdef float_restrict in_a2_val = <float_restrict>_sf_address(p_in_a2_val, sizeof(float), 0)
    with nogil:
        sf_bad = 0
        n = 0
        m = 0
        # co-iteration of a0, a1, a2 over a2 | (a0 & a1): one cursor per piece, keys in storage order (proved); the smallest key is visited next
        stale_a = True
        q0_a = in_a0_pos0[0]
        end_a = in_a0_pos0[1]
        stale_b = True
        q0_b = in_a1_pos0[0]
        end_b = in_a1_pos0[1]
        stale_c = True
        q0_c = in_a2_pos0[0]
        end_c = in_a2_pos0[1]
        while True:
            if stale_a:
                stale_a = False
                if q0_a >= end_a:
                    key_a = INT64_MAX
                else:
                    i0_a = in_a0_crd0[q0_a]
                    if <uint64_t>i0_a >= <uint64_t>S_n0:
                        if sf_bad == 0:
                            sf_bad = 1
                            sf_a = i0_a
                            sf_b = S_n0
                            sf_c = 0
                        i0_a = 0
                    i1_a = in_a0_crd1[q0_a]
                    if <uint64_t>i1_a >= <uint64_t>S_n1:
                        if sf_bad == 0:
                            sf_bad = 2
                            sf_a = i1_a
                            sf_b = S_n1
                            sf_c = 0
                        i1_a = 0
                    o0_a = i0_a
                    o1_a = i1_a
                    key_a = o0_a * S_n1 + o1_a
            if stale_b:
                stale_b = False
                if q0_b >= end_b:
                    key_b = INT64_MAX
                else:
                    i0_b = in_a1_crd0[q0_b]
                    if <uint64_t>i0_b >= <uint64_t>S_n0:
                        if sf_bad == 0:
                            sf_bad = 3
                            sf_a = i0_b
                            sf_b = S_n0
                            sf_c = 0
                        i0_b = 0
                    i1_b = in_a1_crd1[q0_b]
                    if <uint64_t>i1_b >= <uint64_t>S_n1:
                        if sf_bad == 0:
                            sf_bad = 4
                            sf_a = i1_b
                            sf_b = S_n1
                            sf_c = 0
                        i1_b = 0
                    o0_b = i0_b
                    o1_b = i1_b
                    key_b = o0_b * S_n1 + o1_b
            if stale_c:
                stale_c = False
                if q0_c >= end_c:
                    key_c = INT64_MAX
                else:
                    i0_c = in_a2_crd0[q0_c]
                    if <uint64_t>i0_c >= <uint64_t>S_n0:
                        if sf_bad == 0:
                            sf_bad = 5
                            sf_a = i0_c
                            sf_b = S_n0
                            sf_c = 0
                        i0_c = 0
                    i1_c = in_a2_crd1[q0_c]
                    if <uint64_t>i1_c >= <uint64_t>S_n1:
                        if sf_bad == 0:
                            sf_bad = 6
                            sf_a = i1_c
                            sf_b = S_n1
                            sf_c = 0
                        i1_c = 0
                    o0_c = i0_c
                    o1_c = i1_c
                    key_c = o0_c * S_n1 + o1_c
            if not (key_c != INT64_MAX or (key_a != INT64_MAX and key_b != INT64_MAX)):
                break
            k = key_a
            if key_b < k:
                k = key_b
            if key_c < k:
                k = key_c
            if key_c == k or (key_a == k and key_b == k):
                if key_a == k:
                    k0 = o0_a
                    k1 = o1_a
                elif key_b == k:
                    k0 = o0_b
                    k1 = o1_b
                elif key_c == k:
                    k0 = o0_c
                    k1 = o1_c
                x0 = (<float>0.0)
                if key_a == k:
                    x0 = in_a0_val[q0_a]
                x1 = (<float>0.0)
                if key_b == k:
                    x1 = in_a1_val[q0_b]
                x2 = (<float>0.0)
                if key_c == k:
                    x2 = in_a2_val[q0_c]
                v = <float>(x0 * x1)
                v_2 = <float>(v + x2)
                out_crd0[n] = <int32_t>k0
                out_crd1[n] = <int32_t>k1
                out_val[n] = v_2
                n = n + 1
            if key_a == k:
                q0_a = q0_a + 1
                stale_a = True
            if key_b == k:
                q0_b = q0_b + 1
                stale_b = True
            if key_c == k:
                q0_c = q0_c + 1
                stale_c = True
    if sf_bad:
        _sf_fail(sf_bad, sf_a, sf_b, sf_c)
    return (n, m)

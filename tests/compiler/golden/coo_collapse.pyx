# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
# cython: initializedcheck=False, nonecheck=False
# sparsefold kernel: stream -> csr
# sparsefold compiler 0.2.0; source hash e36d5e2b7696416c
#
# Program:
#   %0 = input a0: float32[n0, n1] coo
#   %1 = collapse(%0, start=0, stop=2)           : float32(n0 * n1,)
# Strategy: stream (1 piece(s), leaf loop); Output: csr, appended in storage order (order proved
#   for every piece; no sort needed).

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
    ctypedef int64_t* int64_t_restrict "int64_t * __restrict__"

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
    ('range', 'a0: coords[0]'),
    ('range', 'a0: coords[1]'),
)

cdef void _run_body(
        int64_t S_n0,
        int64_t S_n1,
        int32_t_restrict out_crd0,
        float_restrict out_val,
        int64_t_restrict in_a0_pos0,
        int32_t_restrict in_a0_crd0,
        int32_t_restrict in_a0_crd1,
        float_restrict in_a0_val,
        int64_t* sf_ret,
) noexcept nogil:
    cdef int64_t i0, i1, m, n, o0, q0, sf_a, sf_b, sf_bad, sf_c
    sf_bad = 0
    n = 0
    m = 0
    # piece 0: entries of a0 (coo) in storage order -> output coordinates _i0 * n1 + _i1
    for q0 in range(in_a0_pos0[0], in_a0_pos0[0 + 1]):
        i0 = in_a0_crd0[q0]
        if <uint64_t>i0 >= <uint64_t>S_n0:
            if sf_bad == 0:
                sf_bad = 1
                sf_a = i0
                sf_b = S_n0
                sf_c = 0
            i0 = 0
        i1 = in_a0_crd1[q0]
        if <uint64_t>i1 >= <uint64_t>S_n1:
            if sf_bad == 0:
                sf_bad = 2
                sf_a = i1
                sf_b = S_n1
                sf_c = 0
            i1 = 0
        o0 = ((i0 * S_n1) + i1)
        out_crd0[n] = <int32_t>o0
        out_val[n] = in_a0_val[q0]
        n = n + 1
    sf_ret[0] = n
    sf_ret[1] = m
    sf_ret[2] = sf_bad
    sf_ret[3] = sf_a
    sf_ret[4] = sf_b
    sf_ret[5] = sf_c


def run(
        int64_t S_n0,
        int64_t S_n1,
        object p_out_crd0,
        object p_out_val,
        object p_in_a0_pos0,
        object p_in_a0_crd0,
        object p_in_a0_crd1,
        object p_in_a0_val,
):
    cdef int64_t sf_ret[6]
    sf_ret[2] = 0
    cdef int32_t_restrict out_crd0 = <int32_t_restrict>_sf_address(p_out_crd0, sizeof(int32_t), 1)
    cdef float_restrict out_val = <float_restrict>_sf_address(p_out_val, sizeof(float), 1)
    cdef int64_t_restrict in_a0_pos0 = <int64_t_restrict>_sf_address(
        p_in_a0_pos0, sizeof(int64_t), 0)
    cdef int32_t_restrict in_a0_crd0 = <int32_t_restrict>_sf_address(
        p_in_a0_crd0, sizeof(int32_t), 0)
    cdef int32_t_restrict in_a0_crd1 = <int32_t_restrict>_sf_address(
        p_in_a0_crd1, sizeof(int32_t), 0)
    cdef float_restrict in_a0_val = <float_restrict>_sf_address(p_in_a0_val, sizeof(float), 0)
    with nogil:
        _run_body(S_n0, S_n1, out_crd0, out_val, in_a0_pos0, in_a0_crd0, in_a0_crd1, in_a0_val,
            sf_ret)
    if sf_ret[2]:
        _sf_fail(sf_ret[2], sf_ret[3], sf_ret[4], sf_ret[5])
    return (sf_ret[0], sf_ret[1])

# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
# cython: initializedcheck=False, nonecheck=False
# sparsefold kernel: stream -> dense
# sparsefold compiler 0.2.0; source hash 0eadc7d6cab298f4
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
    #define sf_max_threads() (omp_get_max_threads() < 64 ? omp_get_max_threads() \
                              : 64)
    #else
    #define sf_max_threads() 1
    #endif
    """
    int sf_max_threads() nogil

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
    ('pos', 'a0: indptr'),
    ('pos', 'a1: indptr'),
    ('range', 'a0: indices'),
    ('range', 'a1: indices'),
)

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
        int64_t in_a2_st0,
):
    cdef float acc, acc_2, v, v_2
    cdef int64_t i0, i0_2, i1, i1_2, o0, o0_2, pos_bad, q0, q0_2, q1, q1_2, range_v, range_v_2
    cdef int64_t sf_a, sf_b, sf_bad, sf_c, t, t_2, t_3
    cdef uint32_t row_bad32, row_bad32_2, row_lim32, row_lim32_2
    cdef int sf_nt, sf_t, sf_pick, sf_tid
    cdef int64_t sf_lo, sf_hi
    cdef int64_t sf_terr[512]
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
            # parallel: iterations on OpenMP threads (identical results for any thread count)
            sf_hi = S_n0
            sf_nt = sf_max_threads()
            for sf_t in range(sf_nt * 8):
                sf_terr[sf_t] = 0
            for i0 in prange(sf_hi, num_threads=sf_nt, schedule='static'):
                sf_tid = threadid()
                q0 = i0
                o0 = i0
                row_lim32 = <uint32_t>(S_n1 if S_n1 < <int64_t>2147483648 else <int64_t>2147483648)
                row_bad32 = 0
                for t_2 in range(in_a0_pos1[q0], in_a0_pos1[q0 + 1]):
                    row_bad32 = row_bad32 | (<uint32_t>in_a0_crd1[t_2] >= row_lim32)
                if row_bad32:
                    for t_2 in range(in_a0_pos1[q0], in_a0_pos1[q0 + 1]):
                        range_v = in_a0_crd1[t_2]
                        if <uint64_t>range_v >= <uint64_t>S_n1:
                            if sf_terr[sf_tid * 8] == 0:
                                sf_terr[sf_tid * 8] = 3
                                sf_terr[sf_tid * 8 + 1] = i0
                                sf_terr[sf_tid * 8 + 2] = range_v
                                sf_terr[sf_tid * 8 + 3] = S_n1
                                sf_terr[sf_tid * 8 + 4] = 0
                            range_v = 0
                if not row_bad32:
                    acc = (<float>0.0)
                    for q1 in range(in_a0_pos1[q0], in_a0_pos1[q0 + 1]):
                        i1 = in_a0_crd1[q1]
                        v = <float>(in_a0_val[q1] * in_a2_val[i1*in_a2_st0])
                        acc = <float>(acc + v)
                    out_val[o0] = <float>(out_val[o0] + acc)
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
            # parallel: iterations on OpenMP threads (identical results for any thread count)
            sf_hi = S_n2
            sf_nt = sf_max_threads()
            for sf_t in range(sf_nt * 8):
                sf_terr[sf_t] = 0
            for i0_2 in prange(sf_hi, num_threads=sf_nt, schedule='static'):
                sf_tid = threadid()
                q0_2 = i0_2
                o0_2 = (i0_2 + S_n0)
                row_lim32_2 = <uint32_t>(S_n1 if S_n1 < <int64_t>2147483648 else <int64_t>2147483648)
                row_bad32_2 = 0
                for t_3 in range(in_a1_pos1[q0_2], in_a1_pos1[q0_2 + 1]):
                    row_bad32_2 = row_bad32_2 | (<uint32_t>in_a1_crd1[t_3] >= row_lim32_2)
                if row_bad32_2:
                    for t_3 in range(in_a1_pos1[q0_2], in_a1_pos1[q0_2 + 1]):
                        range_v_2 = in_a1_crd1[t_3]
                        if <uint64_t>range_v_2 >= <uint64_t>S_n1:
                            if sf_terr[sf_tid * 8] == 0:
                                sf_terr[sf_tid * 8] = 4
                                sf_terr[sf_tid * 8 + 1] = i0_2
                                sf_terr[sf_tid * 8 + 2] = range_v_2
                                sf_terr[sf_tid * 8 + 3] = S_n1
                                sf_terr[sf_tid * 8 + 4] = 0
                            range_v_2 = 0
                if not row_bad32_2:
                    acc_2 = (<float>0.0)
                    for q1_2 in range(in_a1_pos1[q0_2], in_a1_pos1[q0_2 + 1]):
                        i1_2 = in_a1_crd1[q1_2]
                        v_2 = <float>(in_a1_val[q1_2] * in_a2_val[i1_2*in_a2_st0])
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
    if sf_bad:
        _sf_fail(sf_bad, sf_a, sf_b, sf_c)
    return 0

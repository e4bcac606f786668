# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
# cython: initializedcheck=False, nonecheck=False
# sparsefold kernel: stream -> csr
# sparsefold compiler 0.2.0; source hash ca0f7a58ca3b78fb
#
# Program:
#   %0 = input a0: float32[n0, n1] csr
#   %1 = input a1: float32[n0, n2] csr
#   %2 = concat(%0, %1, axis=1)                  : float32(n0, n1 + n2)
# Strategy: stream (2 piece(s), row loop); Output: csr, appended in storage order (order proved for
#   every piece; no sort needed).

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
        object p_out_crd1,
        object p_out_pos1,
        object p_out_val,
):
    cdef int64_t i0, i0_2, i0_3, i0_4, m, n, n_row, pos_bad, r, r_2, range_v, range_v_2, row_len
    cdef int64_t seg_len, seg_len_2, seg_start, seg_start_2, sf_a, sf_b, sf_bad, sf_c, t, t_2, t_3
    cdef int64_t t_4
    cdef uint32_t range_bad32, range_bad32_2, range_c32, range_c32_2, range_lim32, range_lim32_2
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
    cdef int32_t_restrict out_crd1 = <int32_t_restrict>_sf_address(p_out_crd1, sizeof(int32_t), 1)
    cdef int32_t_restrict out_pos1 = <int32_t_restrict>_sf_address(p_out_pos1, sizeof(int32_t), 1)
    cdef float_restrict out_val = <float_restrict>_sf_address(p_out_val, sizeof(float), 1)
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
        for t in range(S_n0):
            pos_bad = pos_bad | (in_a1_pos1[t + 1] < in_a1_pos1[t])
        if pos_bad and sf_bad == 0:
            for t in range(S_n0):
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
            # parallel rows, pass 1: each output row's length (its pieces' source rows)
            # parallel: iterations on OpenMP threads (identical results for any thread count)
            sf_hi = S_n0
            sf_nt = sf_max_threads()
            for r in prange(sf_hi, num_threads=sf_nt, schedule='static'):
                row_len = 0
                i0 = r
                row_len = row_len + (in_a0_pos1[i0 + 1] - in_a0_pos1[i0])
                i0_2 = r
                row_len = row_len + (in_a1_pos1[i0_2 + 1] - in_a1_pos1[i0_2])
                out_pos1[r + 1] = <int32_t>row_len
            # prefix sum: row starts
            for t_2 in range(S_n0):
                out_pos1[t_2 + 1] = out_pos1[t_2 + 1] + out_pos1[t_2]
            # parallel rows, pass 2: each row filled from its start, pieces in order
            # parallel: iterations on OpenMP threads (identical results for any thread count)
            sf_hi = S_n0
            sf_nt = sf_max_threads()
            for sf_t in range(sf_nt * 8):
                sf_terr[sf_t] = 0
            for r_2 in prange(sf_hi, num_threads=sf_nt, schedule='static'):
                sf_tid = threadid()
                n_row = out_pos1[r_2]
                # piece 0: row of a0 (csr)
                i0_3 = r_2
                # the row is copied unchanged: bulk copy (inner coordinate shifted)
                seg_start = in_a0_pos1[i0_3]
                seg_len = in_a0_pos1[i0_3 + 1] - seg_start
                range_lim32 = <uint32_t>(S_n1 if S_n1 < <int64_t>2147483648 else <int64_t>2147483648)
                range_bad32 = 0
                for t_3 in range(seg_len):
                    range_c32 = <uint32_t>in_a0_crd1[seg_start + t_3]
                    range_bad32 = range_bad32 | (range_c32 >= range_lim32)
                    out_crd1[n_row + t_3] = <int32_t>range_c32
                    out_val[n_row + t_3] = in_a0_val[seg_start + t_3]
                if range_bad32:
                    for t_3 in range(seg_len):
                        range_v = in_a0_crd1[seg_start + t_3]
                        if <uint64_t>range_v >= <uint64_t>S_n1:
                            if sf_terr[sf_tid * 8] == 0:
                                sf_terr[sf_tid * 8] = 3
                                sf_terr[sf_tid * 8 + 1] = r_2
                                sf_terr[sf_tid * 8 + 2] = range_v
                                sf_terr[sf_tid * 8 + 3] = S_n1
                                sf_terr[sf_tid * 8 + 4] = 0
                            range_v = 0
                n_row = n_row + seg_len
                # piece 1: row of a1 (csr)
                i0_4 = r_2
                # the row is copied unchanged: bulk copy (inner coordinate shifted)
                seg_start_2 = in_a1_pos1[i0_4]
                seg_len_2 = in_a1_pos1[i0_4 + 1] - seg_start_2
                range_lim32_2 = <uint32_t>(S_n2 if S_n2 < <int64_t>2147483648 else <int64_t>2147483648)
                range_bad32_2 = 0
                for t_4 in range(seg_len_2):
                    range_c32_2 = <uint32_t>in_a1_crd1[seg_start_2 + t_4]
                    range_bad32_2 = range_bad32_2 | (range_c32_2 >= range_lim32_2)
                    out_crd1[n_row + t_4] = <int32_t>(range_c32_2 + <uint32_t>S_n1)
                    out_val[n_row + t_4] = in_a1_val[seg_start_2 + t_4]
                if range_bad32_2:
                    for t_4 in range(seg_len_2):
                        range_v_2 = in_a1_crd1[seg_start_2 + t_4]
                        if <uint64_t>range_v_2 >= <uint64_t>S_n2:
                            if sf_terr[sf_tid * 8] == 0:
                                sf_terr[sf_tid * 8] = 4
                                sf_terr[sf_tid * 8 + 1] = r_2
                                sf_terr[sf_tid * 8 + 2] = range_v_2
                                sf_terr[sf_tid * 8 + 3] = S_n2
                                sf_terr[sf_tid * 8 + 4] = 0
                            range_v_2 = 0
                n_row = n_row + seg_len_2
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
            n = out_pos1[S_n0]
    if sf_bad:
        _sf_fail(sf_bad, sf_a, sf_b, sf_c)
    return (n, m)

# cost of result: O(nnz(a0) + nnz(a1) + n0)
# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
# cython: initializedcheck=False, nonecheck=False
# sparsefold kernel: coiterate -> dense
# sparsefold compiler 0.2.0; source hash ce3aec58fbaafbbf
#
# Program:
#   %0 = input a0: float32[n0, n1] csr
#   %1 = input a1: float32[n0, n1] csr
#   %2 = map(%0, %1, fn=add)                     : float32(n0, n1)
#   %3 = reduce(%2, axes=(1,), monoid=max, dtype_request=None) : float32(n0,)
# Strategy: co-iteration (row) of a0, a1 over a0 | a1; Output: dense, each entry combined with max.

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

from cython.parallel cimport prange, threadid

cdef extern from *:
    """
    #ifdef _OPENMP
    #include <omp.h>
    /* the threads a parallel region gets now: with dynamic adjustment on, libgomp may run
       fewer than omp_get_max_threads() (cpus - load average), and a two-pass parallel fill
       planned for two threads would run both passes on one (2x the serial time, measured) */
    static int sf_team_now(void) {
        int n = omp_get_max_threads();
        if (n > 1 && omp_get_dynamic()) {
            #pragma omp parallel
            {
                #pragma omp master
                n = omp_get_num_threads();
            }
        }
        return n < 64 ? n : 64;
    }
    #define sf_max_threads() sf_team_now()
    #define sf_set_threads(n, dynamic) (omp_set_dynamic(dynamic), omp_set_num_threads(n))
    #else
    #define sf_max_threads() 1
    #define sf_set_threads(n, dynamic) ((void)0)
    #endif
    """
    int sf_max_threads() nogil
    void sf_set_threads(int, int) nogil

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
    ('pos', 'a0: indptr'),
    ('pos', 'a1: indptr'),
    ('range', 'a0: indices'),
    ('range', 'a1: indices'),
)

cdef void _run_body(
        int64_t S_n0,
        int64_t S_n1,
        int32_t_restrict in_a0_pos1,
        int32_t_restrict in_a0_crd1,
        float_restrict in_a0_val,
        int32_t_restrict in_a1_pos1,
        int32_t_restrict in_a1_crd1,
        float_restrict in_a1_val,
        float_restrict out_val,
        int64_t_restrict out_cnt,
        int64_t* sf_ret,
) noexcept nogil:
    cdef bint stale_a, stale_b
    cdef float acc, v, x0, x1
    cdef int64_t acc_n, e_a, e_b, i1_a, i1_b, k, key_a, key_b, p_a, p_b, pos_bad, r, range_v
    cdef int64_t range_v_2, s_a, s_b, sf_a, sf_b, sf_bad, sf_c, t, t_2, t_3
    cdef uint32_t row_bad32, row_bad32_2, row_lim32, row_lim32_2
    cdef int sf_nt, sf_t, sf_pick, sf_tid
    cdef int64_t sf_lo, sf_hi
    cdef int64_t sf_terr[512]
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
        # row-driven co-iteration of a0, a1 over a0 | a1: per output row, one cursor per piece over its source row (inner coordinates in order, proved)
        # parallel: iterations on OpenMP threads (identical results for any thread count)
        sf_hi = S_n0
        sf_nt = sf_max_threads()
        for sf_t in range(sf_nt * 8):
            sf_terr[sf_t] = 0
        for r in prange(sf_hi, num_threads=sf_nt, schedule='static'):
            sf_tid = threadid()
            acc = (-INFINITY)
            acc_n = 0
            s_a = r
            p_a = in_a0_pos1[s_a]
            e_a = in_a0_pos1[s_a + 1]
            row_lim32 = <uint32_t>(S_n1 if S_n1 < <int64_t>2147483648 else <int64_t>2147483648)
            row_bad32 = 0
            for t_2 in range(p_a, e_a):
                row_bad32 = row_bad32 | (<uint32_t>in_a0_crd1[t_2] >= row_lim32)
            if row_bad32:
                for t_2 in range(p_a, e_a):
                    range_v = in_a0_crd1[t_2]
                    if <uint64_t>range_v >= <uint64_t>S_n1:
                        if sf_terr[sf_tid * 8] == 0:
                            sf_terr[sf_tid * 8] = 3
                            sf_terr[sf_tid * 8 + 1] = r
                            sf_terr[sf_tid * 8 + 2] = range_v
                            sf_terr[sf_tid * 8 + 3] = S_n1
                            sf_terr[sf_tid * 8 + 4] = 0
                        range_v = 0
            if row_bad32:
                e_a = p_a
            stale_a = True
            key_a = INT64_MAX
            s_b = r
            p_b = in_a1_pos1[s_b]
            e_b = in_a1_pos1[s_b + 1]
            row_lim32_2 = <uint32_t>(S_n1 if S_n1 < <int64_t>2147483648 else <int64_t>2147483648)
            row_bad32_2 = 0
            for t_3 in range(p_b, e_b):
                row_bad32_2 = row_bad32_2 | (<uint32_t>in_a1_crd1[t_3] >= row_lim32_2)
            if row_bad32_2:
                for t_3 in range(p_b, e_b):
                    range_v_2 = in_a1_crd1[t_3]
                    if <uint64_t>range_v_2 >= <uint64_t>S_n1:
                        if sf_terr[sf_tid * 8] == 0:
                            sf_terr[sf_tid * 8] = 4
                            sf_terr[sf_tid * 8 + 1] = r
                            sf_terr[sf_tid * 8 + 2] = range_v_2
                            sf_terr[sf_tid * 8 + 3] = S_n1
                            sf_terr[sf_tid * 8 + 4] = 0
                        range_v_2 = 0
            if row_bad32_2:
                e_b = p_b
            stale_b = True
            key_b = INT64_MAX
            if stale_a:
                stale_a = False
                key_a = INT64_MAX
                if p_a < e_a:
                    i1_a = in_a0_crd1[p_a]
                    key_a = i1_a
            if stale_b:
                stale_b = False
                key_b = INT64_MAX
                if p_b < e_b:
                    i1_b = in_a1_crd1[p_b]
                    key_b = i1_b
            while True:
                k = key_a
                if key_b < k:
                    k = key_b
                if k == INT64_MAX:
                    break
                x0 = in_a0_val[p_a] if key_a == k else (<float>0.0)
                x1 = in_a1_val[p_b] if key_b == k else (<float>0.0)
                v = <float>(x0 + x1)
                acc = (v if (v > acc or v != v) and acc == acc else acc)
                acc_n = acc_n + 1
                if key_a == k:
                    p_a = p_a + 1
                    stale_a = True
                    if stale_a:
                        stale_a = False
                        key_a = INT64_MAX
                        if p_a < e_a:
                            i1_a = in_a0_crd1[p_a]
                            key_a = i1_a
                if key_b == k:
                    p_b = p_b + 1
                    stale_b = True
                    if stale_b:
                        stale_b = False
                        key_b = INT64_MAX
                        if p_b < e_b:
                            i1_b = in_a1_crd1[p_b]
                            key_b = i1_b
            out_cnt[r] = out_cnt[r] + acc_n
            out_val[r] = (acc if (acc > out_val[r] or acc != acc) and out_val[r] == out_val[r] else out_val[r])
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
    sf_ret[0] = 0
    sf_ret[1] = sf_bad
    sf_ret[2] = sf_a
    sf_ret[3] = sf_b
    sf_ret[4] = sf_c


def run(
        int64_t S_n0,
        int64_t S_n1,
        object p_in_a0_pos1,
        object p_in_a0_crd1,
        object p_in_a0_val,
        object p_in_a1_pos1,
        object p_in_a1_crd1,
        object p_in_a1_val,
        object p_out_val,
        object p_out_cnt,
):
    cdef int64_t sf_ret[5]
    sf_ret[1] = 0
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
    cdef int64_t_restrict out_cnt = <int64_t_restrict>_sf_address(p_out_cnt, sizeof(int64_t), 1)
    with nogil:
        _run_body(S_n0, S_n1, in_a0_pos1, in_a0_crd1, in_a0_val, in_a1_pos1, in_a1_crd1, in_a1_val,
            out_val, out_cnt, sf_ret)
    if sf_ret[1]:
        _sf_fail(sf_ret[1], sf_ret[2], sf_ret[3], sf_ret[4])
    return sf_ret[0]

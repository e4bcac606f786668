# cost of result: O(nnz(a0) + nnz(a1) + n0)
# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
# cython: initializedcheck=False, nonecheck=False
# sparsefold kernel: coiterate -> dense
# sparsefold compiler 0.3.0; source hash a60bcde0d0dd1daa
#
# Program:
#   %0 = input a0: float32[n0, n1] csr
#   %1 = input a1: float32[n0, n1] csr
#   %2 = map(%0, %1, fn=add)                     : float32(n0, n1)
#   %3 = reduce(%2, axes=(1,), monoid=max, dtype_request=None) : float32(n0,)
# Strategy: co-iteration (row) of a0, a1 over a0 | a1; Output: dense, each entry combined with max.

from libc.stdint cimport int32_t, int64_t, uint32_t, uint64_t, INT64_MAX
from libc.math cimport INFINITY
from cython.parallel cimport prange, threadid
from sparsefold.compiler.runtime cimport sf_function, sf_max_threads

cdef extern from *:
    ctypedef float* float_restrict "float * __restrict__"
    ctypedef int32_t* int32_t_restrict "int32_t * __restrict__"
    ctypedef int64_t* int64_t_restrict "int64_t * __restrict__"


_SF_SITES = (
    ('pos', 'a0: indptr'),
    ('pos', 'a1: indptr'),
    ('range', 'a0: indices'),
    ('range', 'a1: indices'),
)


cdef void _run_body(int64_t S_n0, int64_t S_n1, int32_t_restrict in_a0_pos1,
        int32_t_restrict in_a0_crd1, float_restrict in_a0_val, int32_t_restrict in_a1_pos1,
        int32_t_restrict in_a1_crd1, float_restrict in_a1_val, float_restrict out_val,
        int64_t_restrict out_cnt, int64_t* sf_ret) noexcept nogil:
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


cdef void _run_loops(const int64_t* s, void** p, int64_t* r) noexcept nogil:
    _run_body(s[0], s[1], <int32_t*>p[0], <int32_t*>p[1], <float*>p[2], <int32_t*>p[3],
        <int32_t*>p[4], <float*>p[5], <float*>p[6], <int64_t*>p[7], r)


run = sf_function(_run_loops, "i i r4 r4 r4 r4 r4 r4 w4 w8", 1, _SF_SITES)

# cost of result: O(nnz(a0) + flops(a0, a1) + out + n0)
# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
# cython: initializedcheck=False, nonecheck=False
# sparsefold kernel: contract -> csr
# sparsefold compiler 0.3.0; source hash e30e32eb7d86465c
#
# Program:
#   %0 = input a0: float32[n0, n1] csr
#   %1 = expanddims(%0, axis=2)                  : float32(n0, n1, 1)
#   %2 = broadcastto(%1, target=(n0, n1, n2))    : float32(n0, n1, n2)
#   %3 = input a1: float32[n1, n2] csr
#   %4 = expanddims(%3, axis=0)                  : float32(1, n1, n2)
#   %5 = broadcastto(%4, target=(n0, n1, n2))    : float32(n0, n1, n2)
#   %6 = map(%2, %5, fn=multiply)                : float32(n0, n1, n2)
#   %7 = reduce(%6, axes=(1,), monoid=sum, dtype_request=float32) : float32(n0, n2)
# Strategy: contraction (Gustavson, workspace): rows of a0 x located rows of a1; Output: csr,
#   appended in storage order (order proved for every piece; no sort needed).

from libc.stdint cimport int32_t, int64_t, uint32_t, uint64_t
from cython.parallel cimport prange, threadid
from sparsefold.compiler.runtime cimport __builtin_prefetch, sf_function, sf_max_threads, sf_sort

cdef extern from *:
    ctypedef float* float_restrict "float * __restrict__"
    ctypedef int32_t* int32_t_restrict "int32_t * __restrict__"
    ctypedef int64_t* int64_t_restrict "int64_t * __restrict__"


_SF_SITES = (
    ('pos', 'a0: indptr'),
    ('pos', 'a1: indptr'),
    ('range', 'a1: indices'),
    ('range', 'a0: indices'),
)


cdef void _run_body(int64_t S_n0, int64_t S_n1, int64_t S_n2, int32_t_restrict in_a0_pos1,
        int32_t_restrict in_a0_crd1, float_restrict in_a0_val, int32_t_restrict in_a1_pos1,
        int32_t_restrict in_a1_crd1, float_restrict in_a1_val, int32_t_restrict out_crd1,
        int32_t_restrict out_pos1, float_restrict out_val, int64_t_restrict out_row_pos,
        int64_t_restrict out_ws_list, int64_t_restrict out_ws_slot, float_restrict out_ws_slot_val,
        int64_t ws_team, int64_t* sf_ret) noexcept nogil:
    cdef float v, x
    cdef int64_t c_d, c_l, i_d, i_l, j, m, n, n_row, pf_at, pf_row, pf_row_2, pos_bad, q_d, q_l, r
    cdef int64_t range_v, range_v_2, s_d, s_l, sf_a, sf_b, sf_bad, sf_c, t, t_2, t_3, t_4, tag
    cdef int64_t ws_n, ws_off
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
    for t in range(S_n1):
        pos_bad = pos_bad | (in_a1_pos1[t + 1] < in_a1_pos1[t])
    if pos_bad and sf_bad == 0:
        for t in range(S_n1):
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
        row_lim32 = <uint32_t>(S_n2 if S_n2 < <int64_t>2147483648 else <int64_t>2147483648)
        row_bad32 = 0
        for t_2 in range(in_a1_pos1[0], in_a1_pos1[S_n1]):
            row_bad32 = row_bad32 | (<uint32_t>in_a1_crd1[t_2] >= row_lim32)
        if row_bad32:
            for t_2 in range(in_a1_pos1[0], in_a1_pos1[S_n1]):
                range_v = in_a1_crd1[t_2]
                if <uint64_t>range_v >= <uint64_t>S_n2:
                    if sf_bad == 0:
                        sf_bad = 3
                        sf_a = range_v
                        sf_b = S_n2
                        sf_c = 0
                    range_v = 0
        if not row_bad32:
            # Gustavson, rows in parallel: for each row of a0, its entries (k, x) locate row k of a1; x * y accumulates in this thread's workspace slice; the touched columns are written in order from the row's start (count's prefix sum)
            # parallel: iterations on OpenMP threads (identical results for any thread count)
            sf_hi = S_n0
            sf_nt = sf_max_threads()
            if sf_nt > ws_team:
                sf_nt = ws_team
            for sf_t in range(sf_nt * 8):
                sf_terr[sf_t] = 0
            for r in prange(sf_hi, num_threads=sf_nt, schedule='static'):
                sf_tid = threadid()
                ws_off = sf_tid * S_n2
                tag = S_n0 + r
                n_row = out_row_pos[r]
                ws_n = 0
                s_d = r
                row_lim32_2 = <uint32_t>(S_n1 if S_n1 < <int64_t>2147483648 else <int64_t>2147483648)
                row_bad32_2 = 0
                for t_3 in range(in_a0_pos1[s_d], in_a0_pos1[s_d + 1]):
                    row_bad32_2 = row_bad32_2 | (<uint32_t>in_a0_crd1[t_3] >= row_lim32_2)
                if row_bad32_2:
                    for t_3 in range(in_a0_pos1[s_d], in_a0_pos1[s_d + 1]):
                        range_v_2 = in_a0_crd1[t_3]
                        if <uint64_t>range_v_2 >= <uint64_t>S_n1:
                            if sf_terr[sf_tid * 8] == 0:
                                sf_terr[sf_tid * 8] = 4
                                sf_terr[sf_tid * 8 + 1] = r
                                sf_terr[sf_tid * 8 + 2] = range_v_2
                                sf_terr[sf_tid * 8 + 3] = S_n1
                                sf_terr[sf_tid * 8 + 4] = 0
                            range_v_2 = 0
                if not row_bad32_2:
                    for q_d in range(in_a0_pos1[s_d], in_a0_pos1[s_d + 1]):
                        if q_d + 5 < in_a0_pos1[S_n0]:
                            pf_row = in_a0_crd1[q_d + 5]
                            if <uint64_t>pf_row < <uint64_t>S_n1:
                                __builtin_prefetch(&in_a1_pos1[pf_row])
                        if q_d + 2 < in_a0_pos1[S_n0]:
                            pf_row_2 = in_a0_crd1[q_d + 2]
                            if <uint64_t>pf_row_2 < <uint64_t>S_n1:
                                pf_at = in_a1_pos1[pf_row_2]
                                __builtin_prefetch(&in_a1_crd1[pf_at])
                                __builtin_prefetch(&in_a1_val[pf_at])
                        i_d = in_a0_crd1[q_d]
                        c_d = i_d
                        x = in_a0_val[q_d]
                        s_l = c_d
                        for q_l in range(in_a1_pos1[s_l], in_a1_pos1[s_l + 1]):
                            i_l = in_a1_crd1[q_l]
                            c_l = i_l
                            v = <float>(x * in_a1_val[q_l])
                            if out_ws_slot[2 * (ws_off + c_l)] != tag:
                                out_ws_slot[2 * (ws_off + c_l)] = tag
                                out_ws_list[ws_off + ws_n] = c_l
                                ws_n = ws_n + 1
                                out_ws_slot_val[4 * (ws_off + c_l) + 2] = v
                            else:
                                out_ws_slot_val[4 * (ws_off + c_l) + 2] = out_ws_slot_val[4 * (ws_off + c_l) + 2] + v
                if ws_n * 16 > S_n2:
                    # a dense row: scanning the marks is cheaper than sorting
                    for j in range(S_n2):
                        if out_ws_slot[2 * (ws_off + j)] == tag:
                            out_crd1[n_row] = <int32_t>j
                            out_val[n_row] = out_ws_slot_val[4 * (ws_off + j) + 2]
                            n_row = n_row + 1
                else:
                    sf_sort(out_ws_list + ws_off, ws_n)
                    for t_4 in range(ws_n):
                        j = out_ws_list[ws_off + t_4]
                        out_crd1[n_row] = <int32_t>j
                        out_val[n_row] = out_ws_slot_val[4 * (ws_off + j) + 2]
                        n_row = n_row + 1
                out_pos1[r + 1] = <int32_t>n_row
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
            n = out_row_pos[S_n0]
    sf_ret[0] = n
    sf_ret[1] = m
    sf_ret[2] = sf_bad
    sf_ret[3] = sf_a
    sf_ret[4] = sf_b
    sf_ret[5] = sf_c


cdef void _run_loops(const int64_t* s, void** p, int64_t* r) noexcept nogil:
    _run_body(s[0], s[1], s[2], <int32_t*>p[0], <int32_t*>p[1], <float*>p[2], <int32_t*>p[3],
        <int32_t*>p[4], <float*>p[5], <int32_t*>p[6], <int32_t*>p[7], <float*>p[8], <int64_t*>p[9],
        <int64_t*>p[10], <int64_t*>p[11], <float*>p[12], s[3], r)


run = sf_function(_run_loops, "i i i r4 r4 r4 r4 r4 r4 w4 w4 w4 w8 w8 w8 w4 i", 2, _SF_SITES)


cdef void _count_body(int64_t S_n0, int64_t S_n1, int64_t S_n2, int32_t_restrict in_a0_pos1,
        int32_t_restrict in_a0_crd1, float_restrict in_a0_val, int32_t_restrict in_a1_pos1,
        int32_t_restrict in_a1_crd1, float_restrict in_a1_val, int64_t_restrict out_ws_list,
        int64_t_restrict out_ws_mark, int64_t_restrict out_row_pos, int64_t ws_team,
        int64_t* sf_ret) noexcept nogil:
    cdef int64_t c_d, c_l, i_d, i_l, pf_at, pf_row, pf_row_2, pos_bad, q_d, q_l, r, range_v
    cdef int64_t range_v_2, s_d, s_l, sf_a, sf_b, sf_bad, sf_c, t, t_2, t_3, t_4, total, ws_n
    cdef int64_t ws_off
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
    for t in range(S_n1):
        pos_bad = pos_bad | (in_a1_pos1[t + 1] < in_a1_pos1[t])
    if pos_bad and sf_bad == 0:
        for t in range(S_n1):
            if in_a1_pos1[t + 1] < in_a1_pos1[t]:
                if sf_bad == 0:
                    sf_bad = 2
                    sf_a = t
                    sf_b = in_a1_pos1[t]
                    sf_c = in_a1_pos1[t + 1]
                break
    if sf_bad == 0:
        total = 0
        row_lim32 = <uint32_t>(S_n2 if S_n2 < <int64_t>2147483648 else <int64_t>2147483648)
        row_bad32 = 0
        for t_2 in range(in_a1_pos1[0], in_a1_pos1[S_n1]):
            row_bad32 = row_bad32 | (<uint32_t>in_a1_crd1[t_2] >= row_lim32)
        if row_bad32:
            for t_2 in range(in_a1_pos1[0], in_a1_pos1[S_n1]):
                range_v = in_a1_crd1[t_2]
                if <uint64_t>range_v >= <uint64_t>S_n2:
                    if sf_bad == 0:
                        sf_bad = 3
                        sf_a = range_v
                        sf_b = S_n2
                        sf_c = 0
                    range_v = 0
        if not row_bad32:
            # each row's length, rows in parallel (a workspace slice per thread)
            # parallel: iterations on OpenMP threads (identical results for any thread count)
            sf_hi = S_n0
            sf_nt = sf_max_threads()
            if sf_nt > ws_team:
                sf_nt = ws_team
            for sf_t in range(sf_nt * 8):
                sf_terr[sf_t] = 0
            for r in prange(sf_hi, num_threads=sf_nt, schedule='static'):
                sf_tid = threadid()
                ws_off = sf_tid * S_n2
                ws_n = 0
                s_d = r
                row_lim32_2 = <uint32_t>(S_n1 if S_n1 < <int64_t>2147483648 else <int64_t>2147483648)
                row_bad32_2 = 0
                for t_3 in range(in_a0_pos1[s_d], in_a0_pos1[s_d + 1]):
                    row_bad32_2 = row_bad32_2 | (<uint32_t>in_a0_crd1[t_3] >= row_lim32_2)
                if row_bad32_2:
                    for t_3 in range(in_a0_pos1[s_d], in_a0_pos1[s_d + 1]):
                        range_v_2 = in_a0_crd1[t_3]
                        if <uint64_t>range_v_2 >= <uint64_t>S_n1:
                            if sf_terr[sf_tid * 8] == 0:
                                sf_terr[sf_tid * 8] = 4
                                sf_terr[sf_tid * 8 + 1] = r
                                sf_terr[sf_tid * 8 + 2] = range_v_2
                                sf_terr[sf_tid * 8 + 3] = S_n1
                                sf_terr[sf_tid * 8 + 4] = 0
                            range_v_2 = 0
                if not row_bad32_2:
                    for q_d in range(in_a0_pos1[s_d], in_a0_pos1[s_d + 1]):
                        if q_d + 5 < in_a0_pos1[S_n0]:
                            pf_row = in_a0_crd1[q_d + 5]
                            if <uint64_t>pf_row < <uint64_t>S_n1:
                                __builtin_prefetch(&in_a1_pos1[pf_row])
                        if q_d + 2 < in_a0_pos1[S_n0]:
                            pf_row_2 = in_a0_crd1[q_d + 2]
                            if <uint64_t>pf_row_2 < <uint64_t>S_n1:
                                pf_at = in_a1_pos1[pf_row_2]
                                __builtin_prefetch(&in_a1_crd1[pf_at])
                        i_d = in_a0_crd1[q_d]
                        c_d = i_d
                        s_l = c_d
                        for q_l in range(in_a1_pos1[s_l], in_a1_pos1[s_l + 1]):
                            i_l = in_a1_crd1[q_l]
                            c_l = i_l
                            if out_ws_mark[ws_off + c_l] != r:
                                out_ws_mark[ws_off + c_l] = r
                                ws_n = ws_n + 1
                out_row_pos[r + 1] = ws_n
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
            # prefix sum: row starts
            out_row_pos[0] = 0
            for t_4 in range(S_n0):
                out_row_pos[t_4 + 1] = out_row_pos[t_4 + 1] + out_row_pos[t_4]
            total = out_row_pos[S_n0]
    sf_ret[0] = total
    sf_ret[1] = sf_bad
    sf_ret[2] = sf_a
    sf_ret[3] = sf_b
    sf_ret[4] = sf_c


cdef void _count_loops(const int64_t* s, void** p, int64_t* r) noexcept nogil:
    _count_body(s[0], s[1], s[2], <int32_t*>p[0], <int32_t*>p[1], <float*>p[2], <int32_t*>p[3],
        <int32_t*>p[4], <float*>p[5], <int64_t*>p[6], <int64_t*>p[7], <int64_t*>p[8], s[3], r)


count = sf_function(_count_loops, "i i i r4 r4 r4 r4 r4 r4 w8 w8 w8 i", 1, _SF_SITES)

# cost of result: O(nnz(a0) + nnz(a1) + ((min((n0 + 1) // 2, n0) + 1) // 2))
# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
# cython: initializedcheck=False, nonecheck=False
# sparsefold kernel: coiterate -> csr
# sparsefold compiler 0.3.0; source hash c498e246fa9d9002
#
# Program:
#   %0 = input a0: float32[n0, n1] csr
#   %1 = slice(%0, slices=((0, (n0 + 1) // 2, 2), (None, None, None))) : float32((min((n0 + 1) // 2, n0) + 1) // 2, n1)
#   %2 = input a1: float32[n2, n1] csr
#   %3 = broadcastto(%2, target=((min((n0 + 1) // 2, n0) + 1) // 2, n1)) : float32((min((n0 + 1) // 2, n0) + 1) // 2, n1)
#   %4 = map(%1, %3, fn=multiply)                : float32((min((n0 + 1) // 2, n0) + 1) // 2, n1)
# Strategy: co-iteration (row) of a0, a1 over a0 & a1; Output: csr, appended in storage order
#   (order proved for every piece; no sort needed).
# Valid when a0, a1 are finite (0 * inf is nan); the runtime checks and otherwise runs the exact
#   variant.

from libc.stdint cimport int32_t, int64_t, uint32_t, uint64_t, INT64_MAX
from cython.parallel cimport prange, threadid
from sparsefold.compiler.runtime cimport (SF_FLOAT32, SF_INT32, sf_compressed, sf_compressed_input,
        sf_compressed_result, sf_data, sf_empty, sf_fast_entry, sf_floordiv, sf_function,
        sf_max_threads, sf_memory_limit, sf_nonfinite, sf_raise, sf_threads, sf_trim)

cdef extern from *:
    ctypedef float* float_restrict "float * __restrict__"
    ctypedef int32_t* int32_t_restrict "int32_t * __restrict__"


_SF_SITES = (
    ('pos', 'a0: indptr'),
    ('pos', 'a1: indptr'),
    ('range', 'a0: indices'),
    ('range', 'a1: indices'),
)


cdef void _run_body(int64_t S_n0, int64_t S_n1, int64_t S_n2, int32_t_restrict in_a0_pos1,
        int32_t_restrict in_a0_crd1, float_restrict in_a0_val, int32_t_restrict in_a1_pos1,
        int32_t_restrict in_a1_crd1, float_restrict in_a1_val, int32_t_restrict out_crd1,
        int32_t_restrict out_pos1, float_restrict out_val, int64_t* sf_ret) noexcept nogil:
    cdef bint stale_a, stale_a_2, stale_b, stale_b_2
    cdef float v, x0, x1
    cdef int64_t e_a, e_a_2, e_b, e_b_2, i1_a, i1_a_2, i1_b, i1_b_2, k, k_2, k_met, k_met_2, key_a
    cdef int64_t key_a_2, key_b, key_b_2, m, n, n_row, p_a, p_a_2, p_b, p_b_2, pos_bad, r, r_2
    cdef int64_t range_v, range_v_2, range_v_3, range_v_4, row_len, s_a, s_a_2, s_b, s_b_2, sf_a
    cdef int64_t sf_b, sf_bad, sf_c, t, t_2, t_3, t_4, t_5, t_6, team
    cdef uint32_t row_bad32, row_bad32_2, row_bad32_3, row_bad32_4, row_lim32, row_lim32_2
    cdef uint32_t row_lim32_3, row_lim32_4
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
        n = 0
        m = 0
        out_pos1[0] = 0
        team = sf_max_threads()
        if team > 1:
            # row-driven co-iteration of a0, a1 over a0 & a1: per output row, one cursor per piece over its source row (inner coordinates in order, proved); pass 1 (rows in parallel): each row's length
            # parallel: iterations on OpenMP threads (identical results for any thread count)
            sf_hi = ((min(((S_n0 + 1) // 2), S_n0) + 1) // 2)
            sf_nt = sf_max_threads()
            if sf_nt > team:
                sf_nt = team
            for sf_t in range(sf_nt * 8):
                sf_terr[sf_t] = 0
            for r in prange(sf_hi, num_threads=sf_nt, schedule='static'):
                sf_tid = threadid()
                row_len = 0
                s_a = (r * 2)
                p_a = in_a0_pos1[s_a]
                e_a = in_a0_pos1[s_a + 1]
                row_lim32 = <uint32_t>(S_n1 if S_n1 < <int64_t>2147483648 else <int64_t>2147483648)
                row_bad32 = 0
                for t_3 in range(p_a, e_a):
                    row_bad32 = row_bad32 | (<uint32_t>in_a0_crd1[t_3] >= row_lim32)
                if row_bad32:
                    for t_3 in range(p_a, e_a):
                        range_v = in_a0_crd1[t_3]
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
                for t_4 in range(p_b, e_b):
                    row_bad32_2 = row_bad32_2 | (<uint32_t>in_a1_crd1[t_4] >= row_lim32_2)
                if row_bad32_2:
                    for t_4 in range(p_b, e_b):
                        range_v_2 = in_a1_crd1[t_4]
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
                    while key_a != key_b:
                        if key_a < key_b:
                            if key_b == INT64_MAX:
                                break
                            p_a = p_a + 1
                            stale_a = True
                            if stale_a:
                                stale_a = False
                                key_a = INT64_MAX
                                if p_a < e_a:
                                    i1_a = in_a0_crd1[p_a]
                                    key_a = i1_a
                        else:
                            if key_a == INT64_MAX:
                                break
                            p_b = p_b + 1
                            stale_b = True
                            if stale_b:
                                stale_b = False
                                key_b = INT64_MAX
                                if p_b < e_b:
                                    i1_b = in_a1_crd1[p_b]
                                    key_b = i1_b
                    k_met = INT64_MAX
                    if key_a == key_b:
                        k_met = key_a
                    if k_met == INT64_MAX:
                        break
                    k = k_met
                    row_len = row_len + 1
                    if k_met == k:
                        p_a = p_a + 1
                        stale_a = True
                        if stale_a:
                            stale_a = False
                            key_a = INT64_MAX
                            if p_a < e_a:
                                i1_a = in_a0_crd1[p_a]
                                key_a = i1_a
                    if k_met == k:
                        p_b = p_b + 1
                        stale_b = True
                        if stale_b:
                            stale_b = False
                            key_b = INT64_MAX
                            if p_b < e_b:
                                i1_b = in_a1_crd1[p_b]
                                key_b = i1_b
                out_pos1[r + 1] = <int32_t>row_len
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
            for t_2 in range(((min(((S_n0 + 1) // 2), S_n0) + 1) // 2)):
                out_pos1[t_2 + 1] = out_pos1[t_2 + 1] + out_pos1[t_2]
        # fill: each row from its start (pass 1's prefix sum; with one thread, where the row before ended)
        # parallel: iterations on OpenMP threads (identical results for any thread count)
        sf_hi = ((min(((S_n0 + 1) // 2), S_n0) + 1) // 2)
        sf_nt = sf_max_threads()
        if sf_nt > team:
            sf_nt = team
        for sf_t in range(sf_nt * 8):
            sf_terr[sf_t] = 0
        for r_2 in prange(sf_hi, num_threads=sf_nt, schedule='static'):
            sf_tid = threadid()
            n_row = out_pos1[r_2]
            s_a_2 = (r_2 * 2)
            p_a_2 = in_a0_pos1[s_a_2]
            e_a_2 = in_a0_pos1[s_a_2 + 1]
            row_lim32_3 = <uint32_t>(S_n1 if S_n1 < <int64_t>2147483648 else <int64_t>2147483648)
            row_bad32_3 = 0
            for t_5 in range(p_a_2, e_a_2):
                row_bad32_3 = row_bad32_3 | (<uint32_t>in_a0_crd1[t_5] >= row_lim32_3)
            if row_bad32_3:
                for t_5 in range(p_a_2, e_a_2):
                    range_v_3 = in_a0_crd1[t_5]
                    if <uint64_t>range_v_3 >= <uint64_t>S_n1:
                        if sf_terr[sf_tid * 8] == 0:
                            sf_terr[sf_tid * 8] = 3
                            sf_terr[sf_tid * 8 + 1] = r_2
                            sf_terr[sf_tid * 8 + 2] = range_v_3
                            sf_terr[sf_tid * 8 + 3] = S_n1
                            sf_terr[sf_tid * 8 + 4] = 0
                        range_v_3 = 0
            if row_bad32_3:
                e_a_2 = p_a_2
            stale_a_2 = True
            key_a_2 = INT64_MAX
            s_b_2 = r_2
            p_b_2 = in_a1_pos1[s_b_2]
            e_b_2 = in_a1_pos1[s_b_2 + 1]
            row_lim32_4 = <uint32_t>(S_n1 if S_n1 < <int64_t>2147483648 else <int64_t>2147483648)
            row_bad32_4 = 0
            for t_6 in range(p_b_2, e_b_2):
                row_bad32_4 = row_bad32_4 | (<uint32_t>in_a1_crd1[t_6] >= row_lim32_4)
            if row_bad32_4:
                for t_6 in range(p_b_2, e_b_2):
                    range_v_4 = in_a1_crd1[t_6]
                    if <uint64_t>range_v_4 >= <uint64_t>S_n1:
                        if sf_terr[sf_tid * 8] == 0:
                            sf_terr[sf_tid * 8] = 4
                            sf_terr[sf_tid * 8 + 1] = r_2
                            sf_terr[sf_tid * 8 + 2] = range_v_4
                            sf_terr[sf_tid * 8 + 3] = S_n1
                            sf_terr[sf_tid * 8 + 4] = 0
                        range_v_4 = 0
            if row_bad32_4:
                e_b_2 = p_b_2
            stale_b_2 = True
            key_b_2 = INT64_MAX
            if stale_a_2:
                stale_a_2 = False
                key_a_2 = INT64_MAX
                if p_a_2 < e_a_2:
                    i1_a_2 = in_a0_crd1[p_a_2]
                    key_a_2 = i1_a_2
            if stale_b_2:
                stale_b_2 = False
                key_b_2 = INT64_MAX
                if p_b_2 < e_b_2:
                    i1_b_2 = in_a1_crd1[p_b_2]
                    key_b_2 = i1_b_2
            while True:
                while key_a_2 != key_b_2:
                    if key_a_2 < key_b_2:
                        if key_b_2 == INT64_MAX:
                            break
                        p_a_2 = p_a_2 + 1
                        stale_a_2 = True
                        if stale_a_2:
                            stale_a_2 = False
                            key_a_2 = INT64_MAX
                            if p_a_2 < e_a_2:
                                i1_a_2 = in_a0_crd1[p_a_2]
                                key_a_2 = i1_a_2
                    else:
                        if key_a_2 == INT64_MAX:
                            break
                        p_b_2 = p_b_2 + 1
                        stale_b_2 = True
                        if stale_b_2:
                            stale_b_2 = False
                            key_b_2 = INT64_MAX
                            if p_b_2 < e_b_2:
                                i1_b_2 = in_a1_crd1[p_b_2]
                                key_b_2 = i1_b_2
                k_met_2 = INT64_MAX
                if key_a_2 == key_b_2:
                    k_met_2 = key_a_2
                if k_met_2 == INT64_MAX:
                    break
                k_2 = k_met_2
                x0 = in_a0_val[p_a_2] if k_met_2 == k_2 else (<float>0.0)
                x1 = in_a1_val[p_b_2] if k_met_2 == k_2 else (<float>0.0)
                v = <float>(x0 * x1)
                out_crd1[n_row] = <int32_t>k_2
                out_val[n_row] = v
                n_row = n_row + 1
                if k_met_2 == k_2:
                    p_a_2 = p_a_2 + 1
                    stale_a_2 = True
                    if stale_a_2:
                        stale_a_2 = False
                        key_a_2 = INT64_MAX
                        if p_a_2 < e_a_2:
                            i1_a_2 = in_a0_crd1[p_a_2]
                            key_a_2 = i1_a_2
                if k_met_2 == k_2:
                    p_b_2 = p_b_2 + 1
                    stale_b_2 = True
                    if stale_b_2:
                        stale_b_2 = False
                        key_b_2 = INT64_MAX
                        if p_b_2 < e_b_2:
                            i1_b_2 = in_a1_crd1[p_b_2]
                            key_b_2 = i1_b_2
            if team == 1:
                out_pos1[r_2 + 1] = <int32_t>n_row
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
        n = out_pos1[((min(((S_n0 + 1) // 2), S_n0) + 1) // 2)]
    sf_ret[0] = n
    sf_ret[1] = m
    sf_ret[2] = sf_bad
    sf_ret[3] = sf_a
    sf_ret[4] = sf_b
    sf_ret[5] = sf_c


cdef void _run_loops(const int64_t* s, void** p, int64_t* r) noexcept nogil:
    _run_body(s[0], s[1], s[2], <int32_t*>p[0], <int32_t*>p[1], <float*>p[2], <int32_t*>p[3],
        <int32_t*>p[4], <float*>p[5], <int32_t*>p[6], <int32_t*>p[7], <float*>p[8], r)


run = sf_function(_run_loops, "i i i r4 r4 r4 r4 r4 r4 w4 w4 w4", 2, _SF_SITES)


cdef object _fast(tuple args, int threads):
    # the happy path of a call (fastcall.py); None: the checked path decides
    cdef bint nonfinite
    cdef double capacity_bound
    cdef float* optr_val
    cdef int32_t* optr_crd1
    cdef int32_t* optr_pos1
    cdef int64_t S_n0, S_n1, S_n2, capacity, limit, n
    cdef int64_t out_shape[2]
    cdef int64_t sf_ret[6]
    cdef object o_crd1, o_pos1, o_val
    cdef sf_compressed in_a0, in_a1
    if not sf_compressed_input(args[0], 0, 2, SF_INT32, SF_INT32, SF_FLOAT32, &in_a0):
        return None
    S_n0 = in_a0.shape[0]
    S_n1 = in_a0.shape[1]
    if not sf_compressed_input(args[1], 0, 2, SF_INT32, SF_INT32, SF_FLOAT32, &in_a1):
        return None
    S_n2 = in_a1.shape[0]
    if S_n1 != in_a1.shape[1]:
        return None
    if S_n0 >= 268435456 or S_n1 >= 268435456 or S_n2 >= 268435456:
        return None
    if not (sf_floordiv((min(sf_floordiv((S_n0 + 1), 2), S_n0) + 1), 2) == S_n2):
        return None
    with nogil:
        nonfinite = sf_nonfinite(in_a0.val, in_a0.nnz, SF_FLOAT32)
    if nonfinite:
        return None
    with nogil:
        nonfinite = sf_nonfinite(in_a1.val, in_a1.nnz, SF_FLOAT32)
    if nonfinite:
        return None
    if sf_threads(<double>in_a0.stored + <double>in_a1.stored, threads) < 1:
        return None
    out_shape[0] = sf_floordiv((min(sf_floordiv((S_n0 + 1), 2), S_n0) + 1), 2)
    out_shape[1] = S_n1
    limit = sf_memory_limit()
    capacity_bound = min(<double>in_a0.stored, <double>in_a1.stored)
    if capacity_bound > 1152921504606846976.0:
        return None
    capacity = min(in_a0.stored, in_a1.stored)
    if capacity > 2147483647 or out_shape[0] > 2147483647 or out_shape[1] > 2147483647:
        return None
    if <double>capacity * 4 + <double>(out_shape[0] + 1) * 4 + <double>capacity * 4 > <double>limit:
        return None
    o_val = sf_empty(capacity, SF_FLOAT32)
    o_pos1 = sf_empty(out_shape[0] + 1, SF_INT32)
    o_crd1 = sf_empty(capacity, SF_INT32)
    if o_val is None or o_pos1 is None or o_crd1 is None:
        return None
    optr_val = <float*>sf_data(o_val)
    optr_pos1 = <int32_t*>sf_data(o_pos1)
    optr_crd1 = <int32_t*>sf_data(o_crd1)
    sf_ret[2] = 0
    with nogil:
        _run_body(S_n0, S_n1, S_n2, <int32_t*>in_a0.pos, <int32_t*>in_a0.crd, <float*>in_a0.val,
            <int32_t*>in_a1.pos, <int32_t*>in_a1.crd, <float*>in_a1.val, <int32_t*>optr_crd1,
            <int32_t*>optr_pos1, <float*>optr_val, sf_ret)
    if sf_ret[2]:
        sf_raise(_SF_SITES, sf_ret[2], sf_ret[3], sf_ret[4], sf_ret[5])
    n = sf_ret[0]
    o_val = sf_trim(o_val, n, SF_FLOAT32)
    o_crd1 = sf_trim(o_crd1, n, SF_INT32)
    return sf_compressed_result(0, o_val, o_crd1, o_pos1, out_shape)


fast = sf_fast_entry(_fast, 2)

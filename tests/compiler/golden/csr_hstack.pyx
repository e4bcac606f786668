# cost of result: O(nnz(a0) + nnz(a1) + n0)
# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
# cython: initializedcheck=False, nonecheck=False
# sparsefold kernel: stream -> csr
# sparsefold compiler 0.3.0; source hash 613b0955364071ac
#
# Program:
#   %0 = input a0: float32[n0, n1] csr
#   %1 = input a1: float32[n0, n2] csr
#   %2 = concat(%0, %1, axis=1)                  : float32(n0, n1 + n2)
# Strategy: stream (2 piece(s), row loop); Output: csr, appended in storage order (order proved for
#   every piece; no sort needed).

from libc.stdint cimport int32_t, int64_t, uint32_t, uint64_t
from cython.parallel cimport prange, threadid
from sparsefold.compiler.runtime cimport (SF_FLOAT32, SF_INT32, sf_compressed, sf_compressed_input,
        sf_compressed_result, sf_data, sf_empty, sf_fast_entry, sf_function, sf_max_threads,
        sf_memory_limit, sf_raise, sf_threads, sf_trim)

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
    cdef int64_t i0, i0_2, i0_3, i0_4, m, n, n_row, pos_bad, r, r_2, range_v, range_v_2, row_len
    cdef int64_t seg_len, seg_len_2, seg_start, seg_start_2, sf_a, sf_b, sf_bad, sf_c, t, t_2, t_3
    cdef int64_t t_4
    cdef uint32_t range_bad32, range_bad32_2, range_c32, range_c32_2, range_lim32, range_lim32_2
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
    if S_n0 != in_a1.shape[0]:
        return None
    S_n2 = in_a1.shape[1]
    if S_n0 >= 1073741824 or S_n1 >= 1073741824 or S_n2 >= 1073741824:
        return None
    if sf_threads(<double>in_a0.stored + <double>in_a1.stored, threads) < 1:
        return None
    out_shape[0] = S_n0
    out_shape[1] = (S_n1 + S_n2)
    limit = sf_memory_limit()
    capacity_bound = <double>in_a0.stored + <double>in_a1.stored
    if capacity_bound > 1152921504606846976.0:
        return None
    capacity = in_a0.stored + in_a1.stored
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

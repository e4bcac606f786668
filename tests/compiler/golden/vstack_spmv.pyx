# cost of result: O(nnz(a0) + nnz(a1))
# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
# cython: initializedcheck=False, nonecheck=False
# sparsefold kernel: stream -> dense
# sparsefold compiler 0.3.0; source hash b3bdc962b95d198b
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

from libc.stdint cimport int32_t, int64_t, uint32_t, uint64_t
from cython.parallel cimport prange, threadid
from sparsefold.compiler.runtime cimport (SF_FLOAT32, SF_INT32, sf_compressed, sf_compressed_input,
        sf_data, sf_dense, sf_dense_input, sf_fast_entry, sf_function, sf_max_threads,
        sf_memory_limit, sf_nonfinite, sf_raise, sf_threads, sf_zeros)

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
        int32_t_restrict in_a1_crd1, float_restrict in_a1_val, float_restrict out_val,
        float_restrict in_a2_val, int64_t* sf_ret) noexcept nogil:
    cdef bint long_rows, long_rows_2
    cdef float acc, acc_2, acc_3, acc_4, v, v_2, v_3, v_4
    cdef int64_t blk, blk_2, blk_rows, blk_rows_2, i0, i0_2, i0_3, i0_4, i1, i1_2, i1_3, i1_4, o0
    cdef int64_t o0_2, o0_3, o0_4, pos_bad, q0, q0_2, q0_3, q0_4, q1, q1_2, q1_3, q1_4, r0, r0_2
    cdef int64_t r1, r1_2, range_v, range_v_2, sf_a, sf_b, sf_bad, sf_c, t, t_2, t_3, t_4, t_5
    cdef uint32_t blk_bad32, blk_bad32_2, blk_lim32, blk_lim32_2, row_bad32, row_bad32_2
    cdef uint32_t row_lim32, row_lim32_2
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
        # piece 0: entries of a0 (csr) in storage order -> output coordinates _i0
        # rows in blocks of about 2048 entries, each block's coordinates checked in one pass
        # (rows of 32 entries or more on average: each row's, as it is read)
        blk_rows = S_n0 // ((in_a0_pos1[S_n0] - in_a0_pos1[0]) // 2048 + 1) + 1
        long_rows = (in_a0_pos1[S_n0] - in_a0_pos1[0]) // 32 >= S_n0
        # parallel: iterations on OpenMP threads (identical results for any thread count)
        sf_hi = (S_n0 + blk_rows - 1) // blk_rows
        sf_nt = sf_max_threads()
        for sf_t in range(sf_nt * 8):
            sf_terr[sf_t] = 0
        for blk in prange(sf_hi, num_threads=sf_nt, schedule='static'):
            sf_tid = threadid()
            r0 = blk * blk_rows
            r1 = S_n0 if S_n0 - r0 < blk_rows else r0 + blk_rows
            blk_lim32 = <uint32_t>(S_n1 if S_n1 < <int64_t>2147483648 else <int64_t>2147483648)
            blk_bad32 = 0
            for t_2 in range(in_a0_pos1[r0], in_a0_pos1[r0] if long_rows else in_a0_pos1[r1]):
                blk_bad32 = blk_bad32 | (<uint32_t>in_a0_crd1[t_2] >= blk_lim32)
            if not long_rows and not blk_bad32:
                for i0 in range(r0, r1):
                    q0 = i0
                    o0 = i0
                    acc = (<float>0.0)
                    for q1 in range(in_a0_pos1[q0], in_a0_pos1[q0 + 1]):
                        i1 = in_a0_crd1[q1]
                        v = <float>(in_a0_val[q1] * in_a2_val[i1])
                        acc = <float>(acc + v)
                    out_val[o0] = <float>(out_val[o0] + acc)
            else:
                for i0_2 in range(r0, r1):
                    q0_2 = i0_2
                    o0_2 = i0_2
                    row_lim32 = <uint32_t>(S_n1 if S_n1 < <int64_t>2147483648 else <int64_t>2147483648)
                    row_bad32 = 0
                    for t_3 in range(in_a0_pos1[q0_2], in_a0_pos1[q0_2 + 1]):
                        row_bad32 = row_bad32 | (<uint32_t>in_a0_crd1[t_3] >= row_lim32)
                    if row_bad32:
                        for t_3 in range(in_a0_pos1[q0_2], in_a0_pos1[q0_2 + 1]):
                            range_v = in_a0_crd1[t_3]
                            if <uint64_t>range_v >= <uint64_t>S_n1:
                                if sf_terr[sf_tid * 8] == 0:
                                    sf_terr[sf_tid * 8] = 3
                                    sf_terr[sf_tid * 8 + 1] = blk
                                    sf_terr[sf_tid * 8 + 2] = range_v
                                    sf_terr[sf_tid * 8 + 3] = S_n1
                                    sf_terr[sf_tid * 8 + 4] = 0
                                range_v = 0
                    if not row_bad32:
                        acc_2 = (<float>0.0)
                        for q1_2 in range(in_a0_pos1[q0_2], in_a0_pos1[q0_2 + 1]):
                            i1_2 = in_a0_crd1[q1_2]
                            v_2 = <float>(in_a0_val[q1_2] * in_a2_val[i1_2])
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
        # piece 1: entries of a1 (csr) in storage order -> output coordinates _i0 + n0
        # rows in blocks of about 2048 entries, each block's coordinates checked in one pass
        # (rows of 32 entries or more on average: each row's, as it is read)
        blk_rows_2 = S_n2 // ((in_a1_pos1[S_n2] - in_a1_pos1[0]) // 2048 + 1) + 1
        long_rows_2 = (in_a1_pos1[S_n2] - in_a1_pos1[0]) // 32 >= S_n2
        # parallel: iterations on OpenMP threads (identical results for any thread count)
        sf_hi = (S_n2 + blk_rows_2 - 1) // blk_rows_2
        sf_nt = sf_max_threads()
        for sf_t in range(sf_nt * 8):
            sf_terr[sf_t] = 0
        for blk_2 in prange(sf_hi, num_threads=sf_nt, schedule='static'):
            sf_tid = threadid()
            r0_2 = blk_2 * blk_rows_2
            r1_2 = S_n2 if S_n2 - r0_2 < blk_rows_2 else r0_2 + blk_rows_2
            blk_lim32_2 = <uint32_t>(S_n1 if S_n1 < <int64_t>2147483648 else <int64_t>2147483648)
            blk_bad32_2 = 0
            for t_4 in range(in_a1_pos1[r0_2], in_a1_pos1[r0_2] if long_rows_2 else in_a1_pos1[r1_2]):
                blk_bad32_2 = blk_bad32_2 | (<uint32_t>in_a1_crd1[t_4] >= blk_lim32_2)
            if not long_rows_2 and not blk_bad32_2:
                for i0_3 in range(r0_2, r1_2):
                    q0_3 = i0_3
                    o0_3 = (i0_3 + S_n0)
                    acc_3 = (<float>0.0)
                    for q1_3 in range(in_a1_pos1[q0_3], in_a1_pos1[q0_3 + 1]):
                        i1_3 = in_a1_crd1[q1_3]
                        v_3 = <float>(in_a1_val[q1_3] * in_a2_val[i1_3])
                        acc_3 = <float>(acc_3 + v_3)
                    out_val[o0_3] = <float>(out_val[o0_3] + acc_3)
            else:
                for i0_4 in range(r0_2, r1_2):
                    q0_4 = i0_4
                    o0_4 = (i0_4 + S_n0)
                    row_lim32_2 = <uint32_t>(S_n1 if S_n1 < <int64_t>2147483648 else <int64_t>2147483648)
                    row_bad32_2 = 0
                    for t_5 in range(in_a1_pos1[q0_4], in_a1_pos1[q0_4 + 1]):
                        row_bad32_2 = row_bad32_2 | (<uint32_t>in_a1_crd1[t_5] >= row_lim32_2)
                    if row_bad32_2:
                        for t_5 in range(in_a1_pos1[q0_4], in_a1_pos1[q0_4 + 1]):
                            range_v_2 = in_a1_crd1[t_5]
                            if <uint64_t>range_v_2 >= <uint64_t>S_n1:
                                if sf_terr[sf_tid * 8] == 0:
                                    sf_terr[sf_tid * 8] = 4
                                    sf_terr[sf_tid * 8 + 1] = blk_2
                                    sf_terr[sf_tid * 8 + 2] = range_v_2
                                    sf_terr[sf_tid * 8 + 3] = S_n1
                                    sf_terr[sf_tid * 8 + 4] = 0
                                range_v_2 = 0
                    if not row_bad32_2:
                        acc_4 = (<float>0.0)
                        for q1_4 in range(in_a1_pos1[q0_4], in_a1_pos1[q0_4 + 1]):
                            i1_4 = in_a1_crd1[q1_4]
                            v_4 = <float>(in_a1_val[q1_4] * in_a2_val[i1_4])
                            acc_4 = <float>(acc_4 + v_4)
                        out_val[o0_4] = <float>(out_val[o0_4] + acc_4)
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
    _run_body(s[0], s[1], s[2], <int32_t*>p[0], <int32_t*>p[1], <float*>p[2], <int32_t*>p[3],
        <int32_t*>p[4], <float*>p[5], <float*>p[6], <float*>p[7], r)


run = sf_function(_run_loops, "i i i r4 r4 r4 r4 r4 r4 w4 a", 1, _SF_SITES)


cdef object _fast(tuple args, int threads):
    # the happy path of a call (fastcall.py); None: the checked path decides
    cdef bint nonfinite
    cdef float* optr_val
    cdef int64_t S_n0, S_n1, S_n2, limit
    cdef int64_t out_shape[1]
    cdef int64_t sf_ret[5]
    cdef object o_val
    cdef sf_compressed in_a0, in_a1
    cdef sf_dense in_a2
    if not sf_compressed_input(args[0], 0, 2, SF_INT32, SF_INT32, SF_FLOAT32, &in_a0):
        return None
    S_n0 = in_a0.shape[0]
    S_n1 = in_a0.shape[1]
    if not sf_compressed_input(args[1], 0, 2, SF_INT32, SF_INT32, SF_FLOAT32, &in_a1):
        return None
    S_n2 = in_a1.shape[0]
    if S_n1 != in_a1.shape[1]:
        return None
    if not sf_dense_input(args[2], 1, SF_FLOAT32, &in_a2):
        return None
    if S_n1 != in_a2.shape[0]:
        return None
    if in_a2.strides[0] != 1:
        return None
    if S_n0 >= 1073741824 or S_n1 >= 1073741824 or S_n2 >= 1073741824:
        return None
    if in_a2.strides[0] != 1:
        return None
    with nogil:
        nonfinite = sf_nonfinite(in_a2.data, S_n1, SF_FLOAT32)
    if nonfinite:
        return None
    if sf_threads(<double>in_a0.stored + <double>in_a1.stored, threads) < 1:
        return None
    out_shape[0] = (S_n0 + S_n2)
    limit = sf_memory_limit()
    if <double>out_shape[0] * 4 > <double>limit:
        return None
    o_val = sf_zeros(1, out_shape, SF_FLOAT32)
    if o_val is None:
        return None
    optr_val = <float*>sf_data(o_val)
    sf_ret[1] = 0
    with nogil:
        _run_body(S_n0, S_n1, S_n2, <int32_t*>in_a0.pos, <int32_t*>in_a0.crd, <float*>in_a0.val,
            <int32_t*>in_a1.pos, <int32_t*>in_a1.crd, <float*>in_a1.val, <float*>optr_val,
            <float*>in_a2.data, sf_ret)
    if sf_ret[1]:
        sf_raise(_SF_SITES, sf_ret[1], sf_ret[2], sf_ret[3], sf_ret[4])
    return o_val


fast = sf_fast_entry(_fast, 3)

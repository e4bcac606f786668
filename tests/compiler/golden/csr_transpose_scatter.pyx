# cost of result: O(nnz(a0))
# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
# cython: initializedcheck=False, nonecheck=False
# sparsefold kernel: stream -> csr
# sparsefold compiler 0.3.0; source hash 6bbf87fc1536afc7
#
# Program:
#   %0 = input a0: float32[n0, n1] csr
#   %1 = permutedims(%0, perm=(1, 0))            : float32(n1, n0)
# Strategy: stream (1 piece(s), leaf loop); Output: csr by count-and-scatter over the outer
#   coordinate (FALLBACK for entries not in storage order; within each outer coordinate their order
#   is proved, so the stable placement needs no sort).

from libc.stdint cimport int32_t, int64_t, uint32_t, uint64_t
from libc.stdlib cimport calloc, free
from cython.parallel cimport prange, threadid
from sparsefold.compiler.runtime cimport (SF_FLOAT32, SF_INT32, SF_INT64, sf_compressed,
        sf_compressed_input, sf_compressed_result, sf_data, sf_empty, sf_fast_entry, sf_function,
        sf_max_threads, sf_memory_limit, sf_raise, sf_threads, sf_trim)

cdef extern from *:
    ctypedef float* float_restrict "float * __restrict__"
    ctypedef int32_t* int32_t_restrict "int32_t * __restrict__"
    ctypedef int64_t* int64_t_restrict "int64_t * __restrict__"


_SF_SITES = (
    ('pos', 'a0: indptr'),
    ('range', 'a0: indices'),
)


cdef void _run_body(int64_t S_n0, int64_t S_n1, int32_t_restrict in_a0_pos1,
        int32_t_restrict in_a0_crd1, float_restrict in_a0_val, int32_t_restrict out_pos1,
        int64_t_restrict out_nxt, int32_t_restrict out_crd1, float_restrict out_val,
        int64_t* sf_ret) noexcept nogil:
    cdef int64_t c, chunk, chunk_2, chunks, cnt_cells, cur, i0, i0_2, i1, i1_2, m, n, o0, o0_2
    cdef int64_t o1_2, pos_bad, q0, q0_2, q1, q1_2, range_v, run, sf_a, sf_b, sf_bad, sf_c, slot
    cdef int64_t t, t_2, v
    cdef int64_t* cnt
    cdef uint32_t row_bad32, row_lim32
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
    if sf_bad == 0:
        n = 0
        m = 0
        for cur in range(S_n1 + 1):
            out_pos1[cur] = 0
        # blocks of source rows, one per thread: each counts into its own row of cnt
        chunks = sf_max_threads()
        if chunks > 1 and chunks * S_n1 > in_a0_pos1[S_n0] - in_a0_pos1[0]:
            chunks = 1
        cnt = out_nxt
        if chunks > 1:
            cnt_cells = chunks * S_n1
            cnt = <int64_t*>calloc(cnt_cells, 8)
            if cnt == NULL:
                chunks = 1
                cnt = out_nxt
        if chunks == 1:
            for cur in range(S_n1):
                out_nxt[cur] = 0
        # pass 1: count the entries of every output row
        # piece 0: entries of a0 (csr) in storage order -> output coordinates _i1, _i0
        # parallel: iterations on OpenMP threads (identical results for any thread count)
        sf_hi = chunks
        sf_nt = sf_max_threads()
        if sf_nt > chunks:
            sf_nt = chunks
        for sf_t in range(sf_nt * 8):
            sf_terr[sf_t] = 0
        for chunk in prange(sf_hi, num_threads=sf_nt, schedule='static'):
            sf_tid = threadid()
            for i0 in range(chunk * S_n0 // chunks, (chunk + 1) * S_n0 // chunks):
                q0 = i0
                row_lim32 = <uint32_t>(S_n1 if S_n1 < <int64_t>2147483648 else <int64_t>2147483648)
                row_bad32 = 0
                for t_2 in range(in_a0_pos1[q0], in_a0_pos1[q0 + 1]):
                    row_bad32 = row_bad32 | (<uint32_t>in_a0_crd1[t_2] >= row_lim32)
                if row_bad32:
                    for t_2 in range(in_a0_pos1[q0], in_a0_pos1[q0 + 1]):
                        range_v = in_a0_crd1[t_2]
                        if <uint64_t>range_v >= <uint64_t>S_n1:
                            if sf_terr[sf_tid * 8] == 0:
                                sf_terr[sf_tid * 8] = 2
                                sf_terr[sf_tid * 8 + 1] = chunk
                                sf_terr[sf_tid * 8 + 2] = range_v
                                sf_terr[sf_tid * 8 + 3] = S_n1
                                sf_terr[sf_tid * 8 + 4] = 0
                            range_v = 0
                if not row_bad32:
                    for q1 in range(in_a0_pos1[q0], in_a0_pos1[q0 + 1]):
                        i1 = in_a0_crd1[q1]
                        o0 = i1
                        cnt[chunk * S_n1 + o0] = cnt[chunk * S_n1 + o0] + 1
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
        # prefix sums over (output row, block): out_pos1[r] is where row r starts; cnt[c * rows + r] block c's next slot in it
        run = 0
        out_pos1[0] = 0
        for cur in range(S_n1):
            for c in range(chunks):
                v = cnt[c * S_n1 + cur]
                cnt[c * S_n1 + cur] = run
                run = run + v
            out_pos1[cur + 1] = <int32_t>run
        n = run
        # pass 2: place every entry at its block's next slot in its row (stable)
        if sf_bad == 0:
            # piece 0: entries of a0 (csr) in storage order -> output coordinates _i1, _i0
            # parallel: iterations on OpenMP threads (identical results for any thread count)
            sf_hi = chunks
            sf_nt = sf_max_threads()
            if sf_nt > chunks:
                sf_nt = chunks
            for chunk_2 in prange(sf_hi, num_threads=sf_nt, schedule='static'):
                sf_tid = threadid()
                for i0_2 in range(chunk_2 * S_n0 // chunks, (chunk_2 + 1) * S_n0 // chunks):
                    q0_2 = i0_2
                    o1_2 = i0_2
                    for q1_2 in range(in_a0_pos1[q0_2], in_a0_pos1[q0_2 + 1]):
                        i1_2 = in_a0_crd1[q1_2]
                        o0_2 = i1_2
                        slot = cnt[chunk_2 * S_n1 + o0_2]
                        cnt[chunk_2 * S_n1 + o0_2] = slot + 1
                        out_crd1[slot] = <int32_t>o1_2
                        out_val[slot] = in_a0_val[q1_2]
        if chunks > 1:
            free(cnt)
    sf_ret[0] = n
    sf_ret[1] = m
    sf_ret[2] = sf_bad
    sf_ret[3] = sf_a
    sf_ret[4] = sf_b
    sf_ret[5] = sf_c


cdef void _run_loops(const int64_t* s, void** p, int64_t* r) noexcept nogil:
    _run_body(s[0], s[1], <int32_t*>p[0], <int32_t*>p[1], <float*>p[2], <int32_t*>p[3],
        <int64_t*>p[4], <int32_t*>p[5], <float*>p[6], r)


run = sf_function(_run_loops, "i i r4 r4 r4 w4 w8 w4 w4", 2, _SF_SITES)


cdef object _fast(tuple args, int threads):
    # the happy path of a call (fastcall.py); None: the checked path decides
    cdef double capacity_bound
    cdef float* optr_val
    cdef int32_t* optr_crd1
    cdef int32_t* optr_pos1
    cdef int64_t S_n0, S_n1, capacity, limit, n
    cdef int64_t* optr_nxt
    cdef int64_t out_shape[2]
    cdef int64_t sf_ret[6]
    cdef object o_crd1, o_nxt, o_pos1, o_val
    cdef sf_compressed in_a0
    if not sf_compressed_input(args[0], 0, 2, SF_INT32, SF_INT32, SF_FLOAT32, &in_a0):
        return None
    S_n0 = in_a0.shape[0]
    S_n1 = in_a0.shape[1]
    if S_n0 >= 2147483648LL or S_n1 >= 2147483648LL:
        return None
    if sf_threads(<double>in_a0.stored, threads) < 1:
        return None
    out_shape[0] = S_n1
    out_shape[1] = S_n0
    limit = sf_memory_limit()
    capacity_bound = <double>in_a0.stored
    if capacity_bound > 1152921504606846976.0:
        return None
    capacity = in_a0.stored
    if capacity > 2147483647 or out_shape[0] > 2147483647 or out_shape[1] > 2147483647:
        return None
    if <double>capacity * 4 + <double>(out_shape[0] + 1) * 4 + <double>capacity * 4 + <double>out_shape[0] * 8 > <double>limit:
        return None
    o_val = sf_empty(capacity, SF_FLOAT32)
    o_pos1 = sf_empty(out_shape[0] + 1, SF_INT32)
    o_crd1 = sf_empty(capacity, SF_INT32)
    o_nxt = sf_empty(out_shape[0], SF_INT64)
    if o_val is None or o_pos1 is None or o_crd1 is None or o_nxt is None:
        return None
    optr_val = <float*>sf_data(o_val)
    optr_pos1 = <int32_t*>sf_data(o_pos1)
    optr_crd1 = <int32_t*>sf_data(o_crd1)
    optr_nxt = <int64_t*>sf_data(o_nxt)
    sf_ret[2] = 0
    with nogil:
        _run_body(S_n0, S_n1, <int32_t*>in_a0.pos, <int32_t*>in_a0.crd, <float*>in_a0.val,
            <int32_t*>optr_pos1, <int64_t*>optr_nxt, <int32_t*>optr_crd1, <float*>optr_val, sf_ret)
    if sf_ret[2]:
        sf_raise(_SF_SITES, sf_ret[2], sf_ret[3], sf_ret[4], sf_ret[5])
    n = sf_ret[0]
    o_val = sf_trim(o_val, n, SF_FLOAT32)
    o_crd1 = sf_trim(o_crd1, n, SF_INT32)
    return sf_compressed_result(0, o_val, o_crd1, o_pos1, out_shape)


fast = sf_fast_entry(_fast, 1)

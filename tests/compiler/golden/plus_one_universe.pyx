# cost of result: O(n0*n1)
# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
# cython: initializedcheck=False, nonecheck=False
# sparsefold kernel: coiterate -> dense
# sparsefold compiler 0.3.0; source hash 9a11cfa513afecfc
#
# Program:
#   %0 = input a0: float32[n0, n1] csr
#   %1 = literal 1: int64
#   %2 = map(%0, %1, fn=add)                     : float32(n0, n1)
# Strategy: co-iteration (row) of a0 over every coordinate (dense-valued); Output: dense, each
#   entry written once.

from libc.stdint cimport int32_t, int64_t, uint32_t, uint64_t, INT64_MAX
from sparsefold.compiler.runtime cimport (SF_FLOAT32, SF_INT32, sf_compressed, sf_compressed_input,
        sf_data, sf_fast_entry, sf_function, sf_memory_limit, sf_raise, sf_zeros)

cdef extern from *:
    ctypedef float* float_restrict "float * __restrict__"
    ctypedef int32_t* int32_t_restrict "int32_t * __restrict__"


_SF_SITES = (
    ('pos', 'a0: indptr'),
    ('range', 'a0: indices'),
)


cdef void _run_body(int64_t S_n0, int64_t S_n1, int32_t_restrict in_a0_pos1,
        int32_t_restrict in_a0_crd1, float_restrict in_a0_val, float_restrict out_val,
        int64_t* sf_ret) noexcept nogil:
    cdef bint stale_a
    cdef float v, x0
    cdef int64_t e_a, i1_a, k0, k1, key_a, p_a, pos_bad, range_v, s_a, sf_a, sf_b, sf_bad, sf_c, t
    cdef int64_t t_2
    cdef uint32_t row_bad32, row_lim32
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
        # every coordinate of the result (it is nonzero where a0 store nothing); the cursors of a0 follow in storage order (proved)
        for k0 in range(S_n0):
            s_a = k0
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
                        if sf_bad == 0:
                            sf_bad = 2
                            sf_a = range_v
                            sf_b = S_n1
                            sf_c = 0
                        range_v = 0
            if row_bad32:
                e_a = p_a
            stale_a = True
            key_a = INT64_MAX
            for k1 in range(S_n1):
                if stale_a:
                    stale_a = False
                    key_a = INT64_MAX
                    if p_a < e_a:
                        i1_a = in_a0_crd1[p_a]
                        key_a = i1_a
                x0 = in_a0_val[p_a] if key_a == k1 else (<float>0.0)
                v = <float>(x0 + (<float>1))
                out_val[k0 * S_n1 + k1] = v
                if key_a == k1:
                    p_a = p_a + 1
                    stale_a = True
    sf_ret[0] = 0
    sf_ret[1] = sf_bad
    sf_ret[2] = sf_a
    sf_ret[3] = sf_b
    sf_ret[4] = sf_c


cdef void _run_loops(const int64_t* s, void** p, int64_t* r) noexcept nogil:
    _run_body(s[0], s[1], <int32_t*>p[0], <int32_t*>p[1], <float*>p[2], <float*>p[3], r)


run = sf_function(_run_loops, "i i r4 r4 r4 w4", 1, _SF_SITES)


cdef object _fast(tuple args, int threads):
    # the happy path of a call (fastcall.py); None: the checked path decides
    cdef float* optr_val
    cdef int64_t S_n0, S_n1, limit
    cdef int64_t out_shape[2]
    cdef int64_t sf_ret[5]
    cdef object o_val
    cdef sf_compressed in_a0
    if not sf_compressed_input(args[0], 0, 2, SF_INT32, SF_INT32, SF_FLOAT32, &in_a0):
        return None
    S_n0 = in_a0.shape[0]
    S_n1 = in_a0.shape[1]
    if S_n0 >= 2147483648LL or S_n1 >= 2147483648LL:
        return None
    out_shape[0] = S_n0
    out_shape[1] = S_n1
    limit = sf_memory_limit()
    if <double>out_shape[0] * <double>out_shape[1] * 4 > <double>limit:
        return None
    o_val = sf_zeros(2, out_shape, SF_FLOAT32)
    if o_val is None:
        return None
    optr_val = <float*>sf_data(o_val)
    sf_ret[1] = 0
    with nogil:
        _run_body(S_n0, S_n1, <int32_t*>in_a0.pos, <int32_t*>in_a0.crd, <float*>in_a0.val,
            <float*>optr_val, sf_ret)
    if sf_ret[1]:
        sf_raise(_SF_SITES, sf_ret[1], sf_ret[2], sf_ret[3], sf_ret[4])
    return o_val


fast = sf_fast_entry(_fast, 1)

# cost of result: O(nnz(a0) + nnz(a1))
# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
# cython: initializedcheck=False, nonecheck=False
# sparsefold kernel: coiterate -> coo
# sparsefold compiler 0.3.0; source hash d9ab37537efe4103
#
# Program:
#   %0 = input a0: float32[n0, n1] coo
#   %1 = input a1: float32[n0, n2] coo
#   %2 = concat(%0, %1, axis=1)                  : float32(n0, n1 + n2)
# Strategy: co-iteration (flat) of a0+a1 over a0+a1; Output: coo, appended in storage order (order
#   proved for every piece; no sort needed).

from libc.stdint cimport int32_t, int64_t, uint64_t, INT64_MAX
from sparsefold.compiler.runtime cimport (SF_FLOAT32, SF_INT32, sf_coo, sf_coo_input,
        sf_coo_result, sf_data, sf_empty, sf_fast_entry, sf_function, sf_memory_limit, sf_raise,
        sf_trim)

cdef extern from *:
    ctypedef float* float_restrict "float * __restrict__"
    ctypedef int32_t* int32_t_restrict "int32_t * __restrict__"
    ctypedef int64_t* int64_t_restrict "int64_t * __restrict__"


_SF_SITES = (
    ('range', 'a0: coords[0]'),
    ('range', 'a0: coords[1]'),
    ('range', 'a1: coords[0]'),
    ('range', 'a1: coords[1]'),
)


cdef void _run_body(int64_t S_n0, int64_t S_n1, int64_t S_n2, int32_t_restrict out_crd0,
        int32_t_restrict out_crd1, float_restrict out_val, int64_t_restrict in_a0_pos0,
        int32_t_restrict in_a0_crd0, int32_t_restrict in_a0_crd1, float_restrict in_a0_val,
        int64_t_restrict in_a1_pos0, int32_t_restrict in_a1_crd0, int32_t_restrict in_a1_crd1,
        float_restrict in_a1_val, int64_t* sf_ret) noexcept nogil:
    cdef bint stale_a0, stale_a1
    cdef float x0
    cdef int64_t end_a0, end_a1, i0_a0, i0_a1, i1_a0, i1_a1, k, k0, k1, key_a0, key_a1, m, n
    cdef int64_t o0_a0, o0_a1, o1_a0, o1_a1, q0_a0, q0_a1, sf_a, sf_b, sf_bad, sf_c
    sf_bad = 0
    n = 0
    m = 0
    # co-iteration of a0+a1 over a0+a1: one cursor per piece, keys in storage order (proved); the smallest key is visited next
    stale_a0 = True
    q0_a0 = in_a0_pos0[0]
    end_a0 = in_a0_pos0[1]
    stale_a1 = True
    q0_a1 = in_a1_pos0[0]
    end_a1 = in_a1_pos0[1]
    if stale_a0:
        stale_a0 = False
        if q0_a0 >= end_a0:
            key_a0 = INT64_MAX
        else:
            i0_a0 = in_a0_crd0[q0_a0]
            if <uint64_t>i0_a0 >= <uint64_t>S_n0:
                if sf_bad == 0:
                    sf_bad = 1
                    sf_a = i0_a0
                    sf_b = S_n0
                    sf_c = 0
                i0_a0 = 0
            i1_a0 = in_a0_crd1[q0_a0]
            if <uint64_t>i1_a0 >= <uint64_t>S_n1:
                if sf_bad == 0:
                    sf_bad = 2
                    sf_a = i1_a0
                    sf_b = S_n1
                    sf_c = 0
                i1_a0 = 0
            o0_a0 = i0_a0
            o1_a0 = i1_a0
            key_a0 = o0_a0 * (S_n1 + S_n2) + o1_a0
    if stale_a1:
        stale_a1 = False
        if q0_a1 >= end_a1:
            key_a1 = INT64_MAX
        else:
            i0_a1 = in_a1_crd0[q0_a1]
            if <uint64_t>i0_a1 >= <uint64_t>S_n0:
                if sf_bad == 0:
                    sf_bad = 3
                    sf_a = i0_a1
                    sf_b = S_n0
                    sf_c = 0
                i0_a1 = 0
            i1_a1 = in_a1_crd1[q0_a1]
            if <uint64_t>i1_a1 >= <uint64_t>S_n2:
                if sf_bad == 0:
                    sf_bad = 4
                    sf_a = i1_a1
                    sf_b = S_n2
                    sf_c = 0
                i1_a1 = 0
            o0_a1 = i0_a1
            o1_a1 = (i1_a1 + S_n1)
            key_a1 = o0_a1 * (S_n1 + S_n2) + o1_a1
    while True:
        k = key_a0
        if key_a1 < k:
            k = key_a1
        if k == INT64_MAX:
            break
        if key_a0 == k:
            k0 = o0_a0
            k1 = o1_a0
        elif key_a1 == k:
            k0 = o0_a1
            k1 = o1_a1
        x0 = (<float>0.0)
        if key_a0 == k:
            x0 = in_a0_val[q0_a0]
        elif key_a1 == k:
            x0 = in_a1_val[q0_a1]
        out_crd0[n] = <int32_t>k0
        out_crd1[n] = <int32_t>k1
        out_val[n] = x0
        n = n + 1
        if key_a0 == k:
            q0_a0 = q0_a0 + 1
            stale_a0 = True
            if stale_a0:
                stale_a0 = False
                if q0_a0 >= end_a0:
                    key_a0 = INT64_MAX
                else:
                    i0_a0 = in_a0_crd0[q0_a0]
                    if <uint64_t>i0_a0 >= <uint64_t>S_n0:
                        if sf_bad == 0:
                            sf_bad = 1
                            sf_a = i0_a0
                            sf_b = S_n0
                            sf_c = 0
                        i0_a0 = 0
                    i1_a0 = in_a0_crd1[q0_a0]
                    if <uint64_t>i1_a0 >= <uint64_t>S_n1:
                        if sf_bad == 0:
                            sf_bad = 2
                            sf_a = i1_a0
                            sf_b = S_n1
                            sf_c = 0
                        i1_a0 = 0
                    o0_a0 = i0_a0
                    o1_a0 = i1_a0
                    key_a0 = o0_a0 * (S_n1 + S_n2) + o1_a0
        if key_a1 == k:
            q0_a1 = q0_a1 + 1
            stale_a1 = True
            if stale_a1:
                stale_a1 = False
                if q0_a1 >= end_a1:
                    key_a1 = INT64_MAX
                else:
                    i0_a1 = in_a1_crd0[q0_a1]
                    if <uint64_t>i0_a1 >= <uint64_t>S_n0:
                        if sf_bad == 0:
                            sf_bad = 3
                            sf_a = i0_a1
                            sf_b = S_n0
                            sf_c = 0
                        i0_a1 = 0
                    i1_a1 = in_a1_crd1[q0_a1]
                    if <uint64_t>i1_a1 >= <uint64_t>S_n2:
                        if sf_bad == 0:
                            sf_bad = 4
                            sf_a = i1_a1
                            sf_b = S_n2
                            sf_c = 0
                        i1_a1 = 0
                    o0_a1 = i0_a1
                    o1_a1 = (i1_a1 + S_n1)
                    key_a1 = o0_a1 * (S_n1 + S_n2) + o1_a1
    sf_ret[0] = n
    sf_ret[1] = m
    sf_ret[2] = sf_bad
    sf_ret[3] = sf_a
    sf_ret[4] = sf_b
    sf_ret[5] = sf_c


cdef void _run_loops(const int64_t* s, void** p, int64_t* r) noexcept nogil:
    _run_body(s[0], s[1], s[2], <int32_t*>p[0], <int32_t*>p[1], <float*>p[2], <int64_t*>p[3],
        <int32_t*>p[4], <int32_t*>p[5], <float*>p[6], <int64_t*>p[7], <int32_t*>p[8],
        <int32_t*>p[9], <float*>p[10], r)


run = sf_function(_run_loops, "i i i w4 w4 w4 r8 r4 r4 r4 r8 r4 r4 r4", 2, _SF_SITES)


cdef object _fast(tuple args, int threads):
    # the happy path of a call (fastcall.py); None: the checked path decides
    cdef double capacity_bound
    cdef float* optr_val
    cdef int32_t* optr_crd0
    cdef int32_t* optr_crd1
    cdef int64_t S_n0, S_n1, S_n2, capacity, limit, n
    cdef int64_t out_shape[2]
    cdef int64_t sf_ret[6]
    cdef object o_crd0, o_crd1, o_val
    cdef sf_coo in_a0, in_a1
    if not sf_coo_input(args[0], 2, SF_INT32, SF_FLOAT32, &in_a0):
        return None
    S_n0 = in_a0.shape[0]
    S_n1 = in_a0.shape[1]
    if not sf_coo_input(args[1], 2, SF_INT32, SF_FLOAT32, &in_a1):
        return None
    if S_n0 != in_a1.shape[0]:
        return None
    S_n2 = in_a1.shape[1]
    if S_n0 >= 1073741824 or S_n1 >= 1073741824 or S_n2 >= 1073741824:
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
    if <double>capacity * 4 + <double>capacity * 4 + <double>capacity * 4 > <double>limit:
        return None
    o_val = sf_empty(capacity, SF_FLOAT32)
    o_crd0 = sf_empty(capacity, SF_INT32)
    o_crd1 = sf_empty(capacity, SF_INT32)
    if o_val is None or o_crd0 is None or o_crd1 is None:
        return None
    optr_val = <float*>sf_data(o_val)
    optr_crd0 = <int32_t*>sf_data(o_crd0)
    optr_crd1 = <int32_t*>sf_data(o_crd1)
    sf_ret[2] = 0
    with nogil:
        _run_body(S_n0, S_n1, S_n2, <int32_t*>optr_crd0, <int32_t*>optr_crd1, <float*>optr_val,
            <int64_t*>in_a0.pos0, <int32_t*>in_a0.crd[0], <int32_t*>in_a0.crd[1],
            <float*>in_a0.val, <int64_t*>in_a1.pos0, <int32_t*>in_a1.crd[0],
            <int32_t*>in_a1.crd[1], <float*>in_a1.val, sf_ret)
    if sf_ret[2]:
        sf_raise(_SF_SITES, sf_ret[2], sf_ret[3], sf_ret[4], sf_ret[5])
    n = sf_ret[0]
    o_val = sf_trim(o_val, n, SF_FLOAT32)
    o_crd0 = sf_trim(o_crd0, n, SF_INT32)
    o_crd1 = sf_trim(o_crd1, n, SF_INT32)
    return sf_coo_result(o_val, (o_crd0, o_crd1), 2, out_shape)


fast = sf_fast_entry(_fast, 2)

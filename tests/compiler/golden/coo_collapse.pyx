# cost of result: O(nnz(a0))
# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
# cython: initializedcheck=False, nonecheck=False
# sparsefold kernel: stream -> csr
# sparsefold compiler 0.3.0; source hash 5aa190236a9f4cc9
#
# Program:
#   %0 = input a0: float32[n0, n1] coo
#   %1 = collapse(%0, start=0, stop=2)           : float32(n0 * n1,)
# Strategy: stream (1 piece(s), leaf loop); Output: csr, appended in storage order (order proved
#   for every piece; no sort needed).

from libc.stdint cimport int32_t, int64_t, uint64_t
from sparsefold.compiler.runtime cimport (SF_FLOAT32, SF_INT32, sf_coo, sf_coo_input, sf_data,
        sf_empty, sf_fast_entry, sf_function, sf_memory_limit, sf_raise, sf_trim, sf_vector_result)

cdef extern from *:
    ctypedef float* float_restrict "float * __restrict__"
    ctypedef int32_t* int32_t_restrict "int32_t * __restrict__"
    ctypedef int64_t* int64_t_restrict "int64_t * __restrict__"


_SF_SITES = (
    ('range', 'a0: coords[0]'),
    ('range', 'a0: coords[1]'),
)


cdef void _run_body(int64_t S_n0, int64_t S_n1, int32_t_restrict out_crd0, float_restrict out_val,
        int64_t_restrict in_a0_pos0, int32_t_restrict in_a0_crd0, int32_t_restrict in_a0_crd1,
        float_restrict in_a0_val, int64_t* sf_ret) noexcept nogil:
    cdef int64_t i0, i1, m, n, o0, q0, sf_a, sf_b, sf_bad, sf_c
    sf_bad = 0
    n = 0
    m = 0
    # piece 0: entries of a0 (coo) in storage order -> output coordinates _i0 * n1 + _i1
    for q0 in range(in_a0_pos0[0], in_a0_pos0[0 + 1]):
        i0 = in_a0_crd0[q0]
        if <uint64_t>i0 >= <uint64_t>S_n0:
            if sf_bad == 0:
                sf_bad = 1
                sf_a = i0
                sf_b = S_n0
                sf_c = 0
            i0 = 0
        i1 = in_a0_crd1[q0]
        if <uint64_t>i1 >= <uint64_t>S_n1:
            if sf_bad == 0:
                sf_bad = 2
                sf_a = i1
                sf_b = S_n1
                sf_c = 0
            i1 = 0
        o0 = ((i0 * S_n1) + i1)
        out_crd0[n] = <int32_t>o0
        out_val[n] = in_a0_val[q0]
        n = n + 1
    sf_ret[0] = n
    sf_ret[1] = m
    sf_ret[2] = sf_bad
    sf_ret[3] = sf_a
    sf_ret[4] = sf_b
    sf_ret[5] = sf_c


cdef void _run_loops(const int64_t* s, void** p, int64_t* r) noexcept nogil:
    _run_body(s[0], s[1], <int32_t*>p[0], <float*>p[1], <int64_t*>p[2], <int32_t*>p[3],
        <int32_t*>p[4], <float*>p[5], r)


run = sf_function(_run_loops, "i i w4 w4 r8 r4 r4 r4", 2, _SF_SITES)


cdef object _fast(tuple args, int threads):
    # the happy path of a call (fastcall.py); None: the checked path decides
    cdef double capacity_bound
    cdef float* optr_val
    cdef int32_t* optr_crd0
    cdef int64_t S_n0, S_n1, capacity, limit, n
    cdef int64_t out_shape[1]
    cdef int64_t sf_ret[6]
    cdef object o_crd0, o_val
    cdef sf_coo in_a0
    if not sf_coo_input(args[0], 2, SF_INT32, SF_FLOAT32, &in_a0):
        return None
    S_n0 = in_a0.shape[0]
    S_n1 = in_a0.shape[1]
    if S_n0 >= 2147483648LL or S_n1 >= 2147483648LL:
        return None
    out_shape[0] = (S_n0 * S_n1)
    limit = sf_memory_limit()
    capacity_bound = <double>in_a0.stored
    if capacity_bound > 1152921504606846976.0:
        return None
    capacity = in_a0.stored
    if capacity > 2147483647 or out_shape[0] > 2147483647:
        return None
    if <double>capacity * 4 + <double>capacity * 4 > <double>limit:
        return None
    o_val = sf_empty(capacity, SF_FLOAT32)
    o_crd0 = sf_empty(capacity, SF_INT32)
    if o_val is None or o_crd0 is None:
        return None
    optr_val = <float*>sf_data(o_val)
    optr_crd0 = <int32_t*>sf_data(o_crd0)
    sf_ret[2] = 0
    with nogil:
        _run_body(S_n0, S_n1, <int32_t*>optr_crd0, <float*>optr_val, <int64_t*>in_a0.pos0,
            <int32_t*>in_a0.crd[0], <int32_t*>in_a0.crd[1], <float*>in_a0.val, sf_ret)
    if sf_ret[2]:
        sf_raise(_SF_SITES, sf_ret[2], sf_ret[3], sf_ret[4], sf_ret[5])
    n = sf_ret[0]
    o_val = sf_trim(o_val, n, SF_FLOAT32)
    o_crd0 = sf_trim(o_crd0, n, SF_INT32)
    return sf_vector_result(o_val, o_crd0, out_shape[0])


fast = sf_fast_entry(_fast, 1)

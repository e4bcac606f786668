# cost of result: O(nnz(a0) + flops(a0, a1) + out + n0)
# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
# cython: initializedcheck=False, nonecheck=False
# sparsefold kernel: contract -> csr
# sparsefold compiler 0.2.0; source hash cdddf635e57c260a
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
    ('range', 'a1: indices'),
    ('range', 'a0: indices'),
)

cdef inline void _sf_sift(int64_t* a, int64_t root, int64_t n) noexcept nogil:
    cdef int64_t child, v = a[root]
    while 2 * root + 1 < n:
        child = 2 * root + 1
        if child + 1 < n and a[child + 1] > a[child]:
            child = child + 1
        if a[child] <= v:
            break
        a[root] = a[child]
        root = child
    a[root] = v


cdef void _sf_heapsort(int64_t* a, int64_t n) noexcept nogil:
    cdef int64_t i, v
    for i in range(n // 2 - 1, -1, -1):
        _sf_sift(a, i, n)
    for i in range(n - 1, 0, -1):
        v = a[0]
        a[0] = a[i]
        a[i] = v
        _sf_sift(a, 0, i)


cdef inline void _sf_insertion(int64_t* a, int64_t n) noexcept nogil:
    # values at most a few places from their own (a quicksort's short run, buckets' output)
    cdef int64_t i, j, v
    for i in range(1, n):
        v = a[i]
        j = i - 1
        while j >= 0 and a[j] > v:
            a[j + 1] = a[j]
            j = j - 1
        a[j + 1] = v


cdef void _sf_introsort(int64_t* a, int64_t n, int depth) noexcept nogil:
    # quicksort (median of three) down to runs of 24, heapsort past the depth limit: never
    # quadratic, whatever order a row's columns were touched in
    cdef int64_t i, j, p, v, mid
    while n > 24:
        if depth == 0:
            _sf_heapsort(a, n)
            return
        depth = depth - 1
        mid = n >> 1
        if a[mid] < a[0]:
            v = a[mid]; a[mid] = a[0]; a[0] = v
        if a[n - 1] < a[0]:
            v = a[n - 1]; a[n - 1] = a[0]; a[0] = v
        if a[n - 1] < a[mid]:
            v = a[n - 1]; a[n - 1] = a[mid]; a[mid] = v
        p = a[mid]
        i = 0
        j = n - 1
        while i <= j:
            while a[i] < p:
                i = i + 1
            while a[j] > p:
                j = j - 1
            if i <= j:
                v = a[i]; a[i] = a[j]; a[j] = v
                i = i + 1
                j = j - 1
        if j + 1 < n - i:  # recurse into the smaller part, loop on the larger
            _sf_introsort(a, j + 1, depth)
            a = a + i
            n = n - i
        else:
            _sf_introsort(a + i, n - i, depth)
            n = j + 1
    _sf_insertion(a, n)


cdef void _sf_introsort_all(int64_t* a, int64_t n) noexcept nogil:
    # inlined compares: qsort's comparison callback cost a third of a sparse x sparse product
    cdef int depth = 0
    cdef int64_t m = n
    while m > 1:
        depth = depth + 2
        m = m >> 1
    _sf_introsort(a, n, depth)


cdef void _sf_sort(int64_t* a, int64_t n) noexcept nogil:
    # a workspace's touched columns (distinct values) in increasing order. A row of 25 to
    # 2048 columns is distributed into about 2n buckets of the span it covers and finished by
    # an insertion sort (each column is at most a few places from its own: 3-4x faster than
    # the introsort on ~100 scattered columns, measured); a row already in order (one
    # contributing row) is left as it is; a longer row, or one whose columns crowd into a
    # bucket (more than 16), takes the introsort: O(n log n) whatever the order
    cdef int64_t tmp[2048]
    cdef int32_t start[4097]
    cdef int64_t i, j, v, lo, hi, crowd
    cdef int width, shift, buckets, k
    cdef bint ordered = True
    if n <= 24:  # the introsort's own insertion sort: cheaper than buckets (delaunay_n16)
        _sf_introsort_all(a, n)
        return
    lo = a[0]
    hi = a[0]
    for i in range(1, n):
        v = a[i]
        ordered = ordered & (v > a[i - 1])
        lo = v if v < lo else lo
        hi = v if v > hi else hi
    if ordered:
        return
    if n > 2048:
        _sf_introsort_all(a, n)
        return
    width = 1
    while (<int64_t>1 << width) < 2 * n:
        width = width + 1
    shift = 0
    while ((hi - lo) >> shift) >= (<int64_t>1 << width):
        shift = shift + 1
    buckets = <int>((hi - lo) >> shift) + 1
    for k in range(buckets + 1):
        start[k] = 0
    for i in range(n):
        start[((a[i] - lo) >> shift) + 1] += 1
    crowd = 0
    for k in range(buckets):
        crowd = start[k + 1] if start[k + 1] > crowd else crowd
        start[k + 1] += start[k]
    if crowd > 16:
        _sf_introsort_all(a, n)
        return
    for i in range(n):
        v = a[i]
        k = <int>((v - lo) >> shift)
        tmp[start[k]] = v
        start[k] += 1
    _sf_insertion(tmp, n)
    memcpy(a, tmp, n * sizeof(int64_t))


cdef extern from *:
    void __builtin_prefetch(const void*) nogil


cdef void _run_body(
        int64_t S_n0,
        int64_t S_n1,
        int64_t S_n2,
        int32_t_restrict in_a0_pos1,
        int32_t_restrict in_a0_crd1,
        float_restrict in_a0_val,
        int32_t_restrict in_a1_pos1,
        int32_t_restrict in_a1_crd1,
        float_restrict in_a1_val,
        int32_t_restrict out_crd1,
        int32_t_restrict out_pos1,
        float_restrict out_val,
        int64_t_restrict out_row_pos,
        int64_t_restrict out_ws_list,
        int64_t_restrict out_ws_slot,
        float_restrict out_ws_slot_val,
        int64_t ws_team,
        int64_t* sf_ret,
) noexcept nogil:
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
                    _sf_sort(out_ws_list + ws_off, ws_n)
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


def run(
        int64_t S_n0,
        int64_t S_n1,
        int64_t S_n2,
        object p_in_a0_pos1,
        object p_in_a0_crd1,
        object p_in_a0_val,
        object p_in_a1_pos1,
        object p_in_a1_crd1,
        object p_in_a1_val,
        object p_out_crd1,
        object p_out_pos1,
        object p_out_val,
        object p_out_row_pos,
        object p_out_ws_list,
        object p_out_ws_slot,
        object p_out_ws_slot_val,
        int64_t ws_team,
):
    cdef int64_t sf_ret[6]
    sf_ret[2] = 0
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
    cdef int32_t_restrict out_crd1 = <int32_t_restrict>_sf_address(p_out_crd1, sizeof(int32_t), 1)
    cdef int32_t_restrict out_pos1 = <int32_t_restrict>_sf_address(p_out_pos1, sizeof(int32_t), 1)
    cdef float_restrict out_val = <float_restrict>_sf_address(p_out_val, sizeof(float), 1)
    cdef int64_t_restrict out_row_pos = <int64_t_restrict>_sf_address(
        p_out_row_pos, sizeof(int64_t), 1)
    cdef int64_t_restrict out_ws_list = <int64_t_restrict>_sf_address(
        p_out_ws_list, sizeof(int64_t), 1)
    cdef int64_t_restrict out_ws_slot = <int64_t_restrict>_sf_address(
        p_out_ws_slot, sizeof(int64_t), 1)
    cdef float_restrict out_ws_slot_val = <float_restrict>_sf_address(
        p_out_ws_slot_val, sizeof(float), 1)
    with nogil:
        _run_body(S_n0, S_n1, S_n2, in_a0_pos1, in_a0_crd1, in_a0_val, in_a1_pos1, in_a1_crd1,
            in_a1_val, out_crd1, out_pos1, out_val, out_row_pos, out_ws_list, out_ws_slot,
            out_ws_slot_val, ws_team, sf_ret)
    if sf_ret[2]:
        _sf_fail(sf_ret[2], sf_ret[3], sf_ret[4], sf_ret[5])
    return (sf_ret[0], sf_ret[1])


cdef void _count_body(
        int64_t S_n0,
        int64_t S_n1,
        int64_t S_n2,
        int32_t_restrict in_a0_pos1,
        int32_t_restrict in_a0_crd1,
        float_restrict in_a0_val,
        int32_t_restrict in_a1_pos1,
        int32_t_restrict in_a1_crd1,
        float_restrict in_a1_val,
        int64_t_restrict out_ws_list,
        int64_t_restrict out_ws_mark,
        int64_t_restrict out_row_pos,
        int64_t ws_team,
        int64_t* sf_ret,
) noexcept nogil:
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


def count(
        int64_t S_n0,
        int64_t S_n1,
        int64_t S_n2,
        object p_in_a0_pos1,
        object p_in_a0_crd1,
        object p_in_a0_val,
        object p_in_a1_pos1,
        object p_in_a1_crd1,
        object p_in_a1_val,
        object p_out_ws_list,
        object p_out_ws_mark,
        object p_out_row_pos,
        int64_t ws_team,
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
    cdef int64_t_restrict out_ws_list = <int64_t_restrict>_sf_address(
        p_out_ws_list, sizeof(int64_t), 1)
    cdef int64_t_restrict out_ws_mark = <int64_t_restrict>_sf_address(
        p_out_ws_mark, sizeof(int64_t), 1)
    cdef int64_t_restrict out_row_pos = <int64_t_restrict>_sf_address(
        p_out_row_pos, sizeof(int64_t), 1)
    with nogil:
        _count_body(S_n0, S_n1, S_n2, in_a0_pos1, in_a0_crd1, in_a0_val, in_a1_pos1, in_a1_crd1,
            in_a1_val, out_ws_list, out_ws_mark, out_row_pos, ws_team, sf_ret)
    if sf_ret[1]:
        _sf_fail(sf_ret[1], sf_ret[2], sf_ret[3], sf_ret[4])
    return sf_ret[0]

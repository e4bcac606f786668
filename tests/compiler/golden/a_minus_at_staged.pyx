# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
# cython: initializedcheck=False, nonecheck=False
# sparsefold kernel: stream -> csr
# sparsefold compiler 0.2.0; source hash 50b2eaa45686ee5d
#
# Program:
#   %0 = input a0: float32[n0, n0] csc
# Strategy: stream (1 piece(s), leaf loop); Output: csr by count-and-scatter over the outer
#   coordinate (FALLBACK for entries not in storage order; within each outer coordinate their order
#   is proved, so the stable placement needs no sort).
# Stage: computes temporary tmp0 (csr) for a later stage: a0 is not stored in the iteration order
#   (0, 1).

from libc.stdint cimport int8_t, int16_t, int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t, INT64_MAX
from libc.math cimport NAN, INFINITY, fabs, pow
from libc.string cimport memcpy
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

def _sf_fail(site, a, b, c):
    # the first failed check of the call: which array, what was found
    from sparsefold.spec.errors import InvalidData
    kind, what = _SF_SITES[site - 1]
    if kind == "pos":
        raise InvalidData(f"{what} is not monotone non-decreasing: row {a} spans [{b}, {c})")
    if kind == "map":
        raise InvalidData(f"{what}: the operator mapped an entry to {a}, outside [0, {b})")
    raise InvalidData(f"{what} out of range [0, {b}): found {a}")

_SF_SITES = (
    ('pos', 'a0: indptr'),
    ('range', 'a0: indices'),
)

def run(
        int64_t S_n0,
        object p_in_a0_pos1,
        object p_in_a0_crd1,
        object p_in_a0_val,
        object p_out_pos1,
        object p_out_nxt,
        object p_out_crd1,
        object p_out_val,
):
    cdef int64_t cur, i0, i0_2, i1, i1_2, m, n, o0, o0_2, o1_2, pos_bad, q0, q0_2, q1, q1_2
    cdef int64_t range_v, range_v_2, sf_a, sf_b, sf_bad, sf_c, slot, t, t_2, t_3
    cdef uint32_t row_bad32, row_bad32_2, row_lim32, row_lim32_2
    cdef int32_t_restrict in_a0_pos1 = <int32_t_restrict>_sf_address(
        p_in_a0_pos1, sizeof(int32_t), 0)
    cdef int32_t_restrict in_a0_crd1 = <int32_t_restrict>_sf_address(
        p_in_a0_crd1, sizeof(int32_t), 0)
    cdef float_restrict in_a0_val = <float_restrict>_sf_address(p_in_a0_val, sizeof(float), 0)
    cdef int32_t_restrict out_pos1 = <int32_t_restrict>_sf_address(p_out_pos1, sizeof(int32_t), 1)
    cdef int64_t_restrict out_nxt = <int64_t_restrict>_sf_address(p_out_nxt, sizeof(int64_t), 1)
    cdef int32_t_restrict out_crd1 = <int32_t_restrict>_sf_address(p_out_crd1, sizeof(int32_t), 1)
    cdef float_restrict out_val = <float_restrict>_sf_address(p_out_val, sizeof(float), 1)
    with nogil:
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
            for cur in range(S_n0 + 1):
                out_pos1[cur] = 0
            # pass 1: count the entries of every output row
            # piece 0: entries of a0 (csc) in storage order -> output coordinates _i0, _i1
            for i1 in range(S_n0):
                q0 = i1
                row_lim32 = <uint32_t>(S_n0 if S_n0 < <int64_t>2147483648 else <int64_t>2147483648)
                row_bad32 = 0
                for t_2 in range(in_a0_pos1[q0], in_a0_pos1[q0 + 1]):
                    row_bad32 = row_bad32 | (<uint32_t>in_a0_crd1[t_2] >= row_lim32)
                if row_bad32:
                    for t_2 in range(in_a0_pos1[q0], in_a0_pos1[q0 + 1]):
                        range_v = in_a0_crd1[t_2]
                        if <uint64_t>range_v >= <uint64_t>S_n0:
                            if sf_bad == 0:
                                sf_bad = 2
                                sf_a = range_v
                                sf_b = S_n0
                                sf_c = 0
                            range_v = 0
                if not row_bad32:
                    for q1 in range(in_a0_pos1[q0], in_a0_pos1[q0 + 1]):
                        i0 = in_a0_crd1[q1]
                        o0 = i0
                        out_pos1[o0 + 1] = out_pos1[o0 + 1] + 1
            # prefix sums: out_pos1[r] is where row r starts; out_nxt its next slot
            for cur in range(S_n0):
                out_pos1[cur + 1] = out_pos1[cur + 1] + out_pos1[cur]
                out_nxt[cur] = out_pos1[cur]
            n = out_pos1[S_n0]
            # pass 2: place every entry at its row's next slot (stable)
            # piece 0: entries of a0 (csc) in storage order -> output coordinates _i0, _i1
            for i1_2 in range(S_n0):
                q0_2 = i1_2
                o1_2 = i1_2
                row_lim32_2 = <uint32_t>(S_n0 if S_n0 < <int64_t>2147483648 else <int64_t>2147483648)
                row_bad32_2 = 0
                for t_3 in range(in_a0_pos1[q0_2], in_a0_pos1[q0_2 + 1]):
                    row_bad32_2 = row_bad32_2 | (<uint32_t>in_a0_crd1[t_3] >= row_lim32_2)
                if row_bad32_2:
                    for t_3 in range(in_a0_pos1[q0_2], in_a0_pos1[q0_2 + 1]):
                        range_v_2 = in_a0_crd1[t_3]
                        if <uint64_t>range_v_2 >= <uint64_t>S_n0:
                            if sf_bad == 0:
                                sf_bad = 2
                                sf_a = range_v_2
                                sf_b = S_n0
                                sf_c = 0
                            range_v_2 = 0
                if not row_bad32_2:
                    for q1_2 in range(in_a0_pos1[q0_2], in_a0_pos1[q0_2 + 1]):
                        i0_2 = in_a0_crd1[q1_2]
                        o0_2 = i0_2
                        slot = out_nxt[o0_2]
                        out_nxt[o0_2] = slot + 1
                        out_crd1[slot] = <int32_t>o1_2
                        out_val[slot] = in_a0_val[q1_2]
    if sf_bad:
        _sf_fail(sf_bad, sf_a, sf_b, sf_c)
    return (n, m)


# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
# cython: initializedcheck=False, nonecheck=False
# sparsefold kernel: coiterate -> csr
# sparsefold compiler 0.2.0; source hash b3473c09c2864251
#
# Program:
#   %0 = input tmp0: float32[n0, n0] csr
#   %1 = input a0: float32[n0, n0] csc
#   %2 = permutedims(%1, perm=(1, 0))            : float32(n0, n0)
#   %3 = map(%0, %2, fn=subtract)                : float32(n0, n0)
# Strategy: co-iteration (row) of tmp0, a0 over tmp0 | a0; Output: csr, appended in storage order
#   (order proved for every piece; no sort needed).
# Reads temporaries tmp0 computed by earlier stages (see the kernel's other stages).

from libc.stdint cimport int8_t, int16_t, int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t, INT64_MAX
from libc.math cimport NAN, INFINITY, fabs, pow
from libc.string cimport memcpy
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

def _sf_fail(site, a, b, c):
    # the first failed check of the call: which array, what was found
    from sparsefold.spec.errors import InvalidData
    kind, what = _SF_SITES[site - 1]
    if kind == "pos":
        raise InvalidData(f"{what} is not monotone non-decreasing: row {a} spans [{b}, {c})")
    if kind == "map":
        raise InvalidData(f"{what}: the operator mapped an entry to {a}, outside [0, {b})")
    raise InvalidData(f"{what} out of range [0, {b}): found {a}")

_SF_SITES = (
    ('pos', 'tmp0: indptr'),
    ('pos', 'a0: indptr'),
    ('range', 'tmp0: indices'),
    ('range', 'a0: indices'),
)

def run(
        int64_t S_n0,
        object p_in_tmp0_pos1,
        object p_in_tmp0_crd1,
        object p_in_tmp0_val,
        object p_in_a0_pos1,
        object p_in_a0_crd1,
        object p_in_a0_val,
        object p_out_crd1,
        object p_out_pos1,
        object p_out_val,
):
    cdef bint stale_a, stale_b
    cdef float v, x0, x1
    cdef int64_t e_a, e_b, i0_b, i1_a, k, key_a, key_b, m, n, p_a, p_b, pos_bad, r, range_v
    cdef int64_t range_v_2, s_a, s_b, sf_a, sf_b, sf_bad, sf_c, t, t_2, t_3
    cdef uint32_t row_bad32, row_bad32_2, row_lim32, row_lim32_2
    cdef int32_t_restrict in_tmp0_pos1 = <int32_t_restrict>_sf_address(
        p_in_tmp0_pos1, sizeof(int32_t), 0)
    cdef int32_t_restrict in_tmp0_crd1 = <int32_t_restrict>_sf_address(
        p_in_tmp0_crd1, sizeof(int32_t), 0)
    cdef float_restrict in_tmp0_val = <float_restrict>_sf_address(p_in_tmp0_val, sizeof(float), 0)
    cdef int32_t_restrict in_a0_pos1 = <int32_t_restrict>_sf_address(
        p_in_a0_pos1, sizeof(int32_t), 0)
    cdef int32_t_restrict in_a0_crd1 = <int32_t_restrict>_sf_address(
        p_in_a0_crd1, sizeof(int32_t), 0)
    cdef float_restrict in_a0_val = <float_restrict>_sf_address(p_in_a0_val, sizeof(float), 0)
    cdef int32_t_restrict out_crd1 = <int32_t_restrict>_sf_address(p_out_crd1, sizeof(int32_t), 1)
    cdef int32_t_restrict out_pos1 = <int32_t_restrict>_sf_address(p_out_pos1, sizeof(int32_t), 1)
    cdef float_restrict out_val = <float_restrict>_sf_address(p_out_val, sizeof(float), 1)
    with nogil:
        sf_bad = 0
        # tmp0: rows in order before anything reads them
        pos_bad = 0
        for t in range(S_n0):
            pos_bad = pos_bad | (in_tmp0_pos1[t + 1] < in_tmp0_pos1[t])
        if pos_bad and sf_bad == 0:
            for t in range(S_n0):
                if in_tmp0_pos1[t + 1] < in_tmp0_pos1[t]:
                    if sf_bad == 0:
                        sf_bad = 1
                        sf_a = t
                        sf_b = in_tmp0_pos1[t]
                        sf_c = in_tmp0_pos1[t + 1]
                    break
        # a0: rows in order before anything reads them
        pos_bad = 0
        for t in range(S_n0):
            pos_bad = pos_bad | (in_a0_pos1[t + 1] < in_a0_pos1[t])
        if pos_bad and sf_bad == 0:
            for t in range(S_n0):
                if in_a0_pos1[t + 1] < in_a0_pos1[t]:
                    if sf_bad == 0:
                        sf_bad = 2
                        sf_a = t
                        sf_b = in_a0_pos1[t]
                        sf_c = in_a0_pos1[t + 1]
                    break
        if sf_bad == 0:
            n = 0
            m = 0
            out_pos1[0] = 0
            # row-driven co-iteration of tmp0, a0 over tmp0 | a0: per output row, one cursor per piece over its source row (inner coordinates in order, proved)
            for r in range(S_n0):
                s_a = r
                p_a = in_tmp0_pos1[s_a]
                e_a = in_tmp0_pos1[s_a + 1]
                row_lim32 = <uint32_t>(S_n0 if S_n0 < <int64_t>2147483648 else <int64_t>2147483648)
                row_bad32 = 0
                for t_2 in range(p_a, e_a):
                    row_bad32 = row_bad32 | (<uint32_t>in_tmp0_crd1[t_2] >= row_lim32)
                if row_bad32:
                    for t_2 in range(p_a, e_a):
                        range_v = in_tmp0_crd1[t_2]
                        if <uint64_t>range_v >= <uint64_t>S_n0:
                            if sf_bad == 0:
                                sf_bad = 3
                                sf_a = range_v
                                sf_b = S_n0
                                sf_c = 0
                            range_v = 0
                if row_bad32:
                    e_a = p_a
                stale_a = True
                s_b = r
                p_b = in_a0_pos1[s_b]
                e_b = in_a0_pos1[s_b + 1]
                row_lim32_2 = <uint32_t>(S_n0 if S_n0 < <int64_t>2147483648 else <int64_t>2147483648)
                row_bad32_2 = 0
                for t_3 in range(p_b, e_b):
                    row_bad32_2 = row_bad32_2 | (<uint32_t>in_a0_crd1[t_3] >= row_lim32_2)
                if row_bad32_2:
                    for t_3 in range(p_b, e_b):
                        range_v_2 = in_a0_crd1[t_3]
                        if <uint64_t>range_v_2 >= <uint64_t>S_n0:
                            if sf_bad == 0:
                                sf_bad = 4
                                sf_a = range_v_2
                                sf_b = S_n0
                                sf_c = 0
                            range_v_2 = 0
                if row_bad32_2:
                    e_b = p_b
                stale_b = True
                while True:
                    if stale_a:
                        stale_a = False
                        key_a = INT64_MAX
                        if p_a < e_a:
                            i1_a = in_tmp0_crd1[p_a]
                            key_a = i1_a
                    if stale_b:
                        stale_b = False
                        key_b = INT64_MAX
                        if p_b < e_b:
                            i0_b = in_a0_crd1[p_b]
                            key_b = i0_b
                    if not (key_a != INT64_MAX or key_b != INT64_MAX):
                        break
                    k = key_a
                    if key_b < k:
                        k = key_b
                    x0 = (<float>0.0)
                    if key_a == k:
                        x0 = in_tmp0_val[p_a]
                    x1 = (<float>0.0)
                    if key_b == k:
                        x1 = in_a0_val[p_b]
                    v = <float>(x0 - x1)
                    out_crd1[n] = <int32_t>k
                    out_val[n] = v
                    n = n + 1
                    if key_a == k:
                        p_a = p_a + 1
                        stale_a = True
                    if key_b == k:
                        p_b = p_b + 1
                        stale_b = True
                out_pos1[r + 1] = <int32_t>n
    if sf_bad:
        _sf_fail(sf_bad, sf_a, sf_b, sf_c)
    return (n, m)

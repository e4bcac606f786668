# The runtime every kernel module shares (compiler/runtime.pyx): what a kernel cimports.
#
# Compiled once, at install (setup.py), or into the kernel cache on first use when the
# installed build is missing or older than these sources (compiler/runtime_build.py). A
# kernel module holds its loops, a small trampoline per loop function and its fast entry,
# which reads its inputs, allocates its outputs and wraps its result through these.
# Changing a declaration here changes every kernel's cache key (build.environment_fields).

cimport cython
from libc.stdint cimport int64_t

cdef enum:
    SF_MAXDIM = 32  # the most axes an input or result of a fast entry has

# the dtypes of the arrays a fast entry reads and allocates (each an np.dtype the runtime
# holds; an array matches only if its dtype is that very object, as NumPy's own are)
cdef enum sf_dtype:
    SF_BOOL = 0
    SF_INT8 = 1
    SF_INT16 = 2
    SF_INT32 = 3
    SF_INT64 = 4
    SF_UINT8 = 5
    SF_UINT16 = 6
    SF_UINT32 = 7
    SF_UINT64 = 8
    SF_FLOAT16 = 9
    SF_FLOAT32 = 10
    SF_FLOAT64 = 11
    SF_COMPLEX64 = 12
    SF_COMPLEX128 = 13

# a scipy CSR or CSC array (or a 1-d CSR vector) as its storage: shape, the three arrays'
# first items, the stored entry count (indptr's last entry) and data's length
ctypedef struct sf_compressed:
    int64_t shape[2]
    void* pos
    void* crd
    void* val
    int64_t nnz
    int64_t stored

# a scipy COO array: shape, each axis' coordinates, values; ``pos0`` is [0, nnz], the
# position range of its one compressed level
ctypedef struct sf_coo:
    int64_t shape[SF_MAXDIM]
    void* crd[SF_MAXDIM]
    void* val
    int64_t nnz
    int64_t stored
    int64_t pos0[2]

# a NumPy array: shape, strides in elements, first item
ctypedef struct sf_dense:
    int64_t shape[SF_MAXDIM]
    int64_t strides[SF_MAXDIM]
    void* data

# a kernel function's loops, called through its module's trampoline: sizes and array
# addresses in parameter order, results then the first failed check in ``ret``
ctypedef void (*sf_loops)(const int64_t* sizes, void** arrays, int64_t* ret) noexcept nogil
# a kernel module's fast entry: the call's arguments, jit's threads=N (0: none)
ctypedef object (*sf_entry_fn)(tuple args, int threads)

cdef extern from *:
    void __builtin_prefetch(const void*) nogil

# --- module-level objects of a kernel -------------------------------------------------
cdef object sf_function(sf_loops loops, str params, int nret, tuple sites)
cdef object sf_fast_entry(sf_entry_fn entry, int nargs)

# --- reading inputs (1: read; 0: not of the kind expected, the checked path decides) ---
cdef int sf_compressed_input(object v, int columns, int ndim, int pos_dt, int crd_dt,
                             int val_dt, sf_compressed* out) except -1
cdef int sf_coo_input(object v, int ndim, int crd_dt, int val_dt, sf_coo* out) except -1
cdef int sf_dense_input(object v, int ndim, int dt, sf_dense* out) except -1
cdef bint sf_nonfinite(const void* values, int64_t n, int dt) noexcept nogil

# --- a call's setting -------------------------------------------------------------------
cdef int64_t sf_memory_limit() except? -2
cdef int sf_threads(double work, int requested) except -1
cdef int sf_max_threads() noexcept nogil

# --- results ----------------------------------------------------------------------------
cdef object sf_empty(int64_t n, int dt)
cdef object sf_zeros(int ndim, const int64_t* dims, int dt)
cdef void* sf_data(object array) noexcept
cdef object sf_trim(object array, int64_t n, int dt)
cdef object sf_compressed_result(int columns, object val, object crd, object pos,
                                 const int64_t* dims)
cdef object sf_vector_result(object val, object crd, int64_t n)
cdef object sf_coo_result(object val, tuple crds, int ndim, const int64_t* dims)
cdef object sf_dense_result(object val, tuple order)
cdef int sf_raise(tuple sites, int64_t site, int64_t a, int64_t b, int64_t c) except -1

# --- helpers the loops call -------------------------------------------------------------
cdef void sf_sort(int64_t* a, int64_t n) noexcept nogil
cdef void sf_pair_sort(int64_t* k, int64_t* s, int64_t n) noexcept nogil


@cython.cdivision(True)
cdef inline int64_t sf_floordiv(int64_t a, int64_t b) noexcept nogil:
    # Python's a // b for b >= 1 (the fast entry checks divisors first); the kernels'
    # cdivision truncates toward zero, which differs for a negative a
    cdef int64_t q = a / b
    if q * b != a and a < 0:
        q -= 1
    return q


@cython.cdivision(True)
cdef inline int64_t sf_mod(int64_t a, int64_t b) noexcept nogil:
    # Python's a % b for b >= 1: in [0, b)
    cdef int64_t r = a % b
    if r < 0:
        r += b
    return r

# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
# cython: initializedcheck=False, nonecheck=False
"""The runtime every kernel module shares, compiled once (DESIGN §3 step 6).

A generated kernel module (``emit.py``) holds its loop functions, one small trampoline per
loop function, and its fast entry; everything else it needs is here, declared in
``runtime.pxd`` and cimported:

* **kernel functions** (:func:`sf_function`): the Python-callable ``run`` and ``count`` of a
  module. A call converts its arguments — sizes as int64, arrays through the buffer protocol
  (contiguous, of the item size expected, writable when written) — calls the module's
  trampoline without the GIL and raises the first failed in-kernel check (``bounds.py``) as
  :class:`~sparsefold.spec.errors.InvalidData`, naming the array from the module's table of
  check sites;
* **the fast entry's parts** (``fastcall.py`` lowers the entry itself): readers of scipy
  CSR/CSC/COO arrays and NumPy arrays that return 0 unless an argument is exactly of the kind
  a kernel variant expects (class, cached canonical flag, dtypes, index widths, array
  lengths: every O(1) check of ``storage.levels``), the thread count and memory limit of a
  call, output allocation, and result containers built as ``storage.results`` builds them;
* **helpers the loops call**: the workspace sorts (``workspace.py``) and the thread count a
  parallel loop runs on (``parallel.py``).

NumPy's C API is used directly (no ``cimport numpy``): a macro per accessor. The
Python-level values — the scipy classes, the layouts of their instance dicts, the physical
memory — are computed once, at import.

The result layouts: ``storage.results`` builds a scipy array by setting its attributes
(scipy's constructors re-check and copy). A fast entry makes the same object by giving a new
instance the instance dict ``storage.results`` produced for a tiny array here (minus the
arrays and shape); if that dict holds anything but those arrays, the shape and plain flags (a
scipy version with other internals), the layout is None and the entry calls
``storage.results`` instead.
"""

from cpython.buffer cimport (PyBUF_ANY_CONTIGUOUS, PyBUF_WRITABLE, PyBuffer_Release,
                             PyObject_GetBuffer)
from cpython.exc cimport PyErr_Clear, PyErr_ExceptionMatches
from cpython.long cimport PyLong_AsLongLongAndOverflow, PyLong_CheckExact
from cpython.mem cimport PyMem_Free, PyMem_Malloc
from libc.stdint cimport int8_t, int16_t, int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t, INT64_MAX, intptr_t
from libc.stdlib cimport getenv
from libc.string cimport memcpy

import numpy as np
import scipy.sparse as sp

from sparsefold.compiler.run import memory as _memory
from sparsefold.compiler.run import threads as _threads
from sparsefold.spec.errors import InternalError, InvalidData
from sparsefold.storage import results as _results

cdef extern from *:
    """
    #define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
    #include <numpy/arrayobject.h>
    static int sf_np_import(void) { import_array1(-1); return 0; }
    #define sf_np_data(a) PyArray_DATA((PyArrayObject*)(a))
    #define sf_np_ndim(a) PyArray_NDIM((PyArrayObject*)(a))
    #define sf_np_dims(a) PyArray_DIMS((PyArrayObject*)(a))
    #define sf_np_strides(a) PyArray_STRIDES((PyArrayObject*)(a))
    #define sf_np_itemsize(a) PyArray_ITEMSIZE((PyArrayObject*)(a))
    #define sf_np_descr(a) ((void*)PyArray_DESCR((PyArrayObject*)(a)))
    #define sf_np_c_contiguous(a) PyArray_IS_C_CONTIGUOUS((PyArrayObject*)(a))
    static PyObject* sf_np_empty(npy_intp n, PyObject* descr) {
        Py_INCREF(descr);  /* PyArray_Empty steals it */
        return PyArray_Empty(1, &n, (PyArray_Descr*)descr, 0);
    }
    static PyObject* sf_np_zeros(int ndim, const int64_t* dims, PyObject* descr) {
        npy_intp d[NPY_MAXDIMS];
        int k;
        for (k = 0; k < ndim; k++) d[k] = (npy_intp)dims[k];
        Py_INCREF(descr);  /* PyArray_Zeros steals it */
        return PyArray_Zeros(ndim, d, (PyArray_Descr*)descr, 0);
    }

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
    #define sf_set_team(n, dynamic) (omp_set_dynamic(dynamic), omp_set_num_threads(n))
    #define SF_OPENMP 1
    #else
    static int sf_team_now(void) { return 1; }
    #define sf_set_team(n, dynamic) ((void)0)
    #define SF_OPENMP 0
    #endif
    /* the digest of the sources this build was compiled from (build.runtime_defines) */
    #ifndef SF_RUNTIME_SOURCE
    #define SF_RUNTIME_SOURCE ""
    #endif
    """
    int sf_np_import() except -1
    void* sf_np_data(object) noexcept
    int sf_np_ndim(object) noexcept
    Py_ssize_t* sf_np_dims(object) noexcept
    Py_ssize_t* sf_np_strides(object) noexcept
    Py_ssize_t sf_np_itemsize(object) noexcept
    void* sf_np_descr(object) noexcept
    bint sf_np_c_contiguous(object) noexcept
    object sf_np_empty(Py_ssize_t, object)
    object sf_np_zeros(int, const int64_t*, object)
    int sf_team_now() noexcept nogil
    void sf_set_team(int, int) noexcept nogil
    int SF_OPENMP
    const char* SF_RUNTIME_SOURCE

sf_np_import()

# "sparsefold-runtime-source:<sha256 of runtime.pyx and runtime.pxd>" (runtime_source.marker)
SOURCE = SF_RUNTIME_SOURCE.decode()

# Was this build compiled with OpenMP (its thread count then reaches the kernels' loops)?
OPENMP = bool(SF_OPENMP)

# The most threads sf_max_threads() reports: parallel.MAX_THREADS (the failure slots a
# parallel loop keeps on its stack; a test holds the two equal)
MAX_THREADS = 64


# --- dtypes -----------------------------------------------------------------------------

# in sf_dtype's order (runtime.pxd)
DTYPE_NAMES = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
               "uint64", "float16", "float32", "float64", "complex64", "complex128")
cdef tuple _DTYPES = tuple(np.dtype(name) for name in DTYPE_NAMES)
cdef void* _DESCR[14]
cdef Py_ssize_t _ITEMSIZE[14]
cdef int _k
for _k in range(14):
    _DESCR[_k] = <void*>_DTYPES[_k]
    _ITEMSIZE[_k] = _DTYPES[_k].itemsize


cdef inline int64_t _index_at(const void* p, int dt, int64_t i) noexcept nogil:
    # entry i of an index array of dtype int32 or int64
    if dt == SF_INT32:
        return (<const int32_t*>p)[i]
    return (<const int64_t*>p)[i]


# --- the scipy containers and their layouts ----------------------------------------------

cdef object _NDARRAY = np.ndarray
cdef object _NEW = object.__new__  # a scipy array's own __new__ (checked): no MRO lookup
cdef object _CSR_ARRAY = sp.csr_array
cdef object _CSR_MATRIX = sp.csr_matrix
cdef object _CSC_ARRAY = sp.csc_array
cdef object _CSC_MATRIX = sp.csc_matrix
cdef object _COO_ARRAY = sp.coo_array
cdef object _COO_MATRIX = sp.coo_matrix
cdef int64_t _PHYSICAL = min(_memory.physical_memory(), INT64_MAX)
cdef object _compressed_array = _results._compressed_array
cdef object _coo_array = _results._coo_array


def _layout(cls, make):
    if cls.__new__ is not _NEW:
        return None
    one = np.ones(1)
    zero = np.zeros(1, np.int32)
    found = dict(make(cls, one, zero).__dict__)
    arrays = {k for k, v in found.items() if type(v) is _NDARRAY or
              (type(v) is tuple and len(v) == 2 and v[0] is zero and v[1] is zero)}
    rest = {k: v for k, v in found.items() if k not in arrays and k != "_shape"}
    if arrays not in ({"data", "indices", "indptr"}, {"data", "coords"}) or any(
            type(v) not in (bool, int) for v in rest.values()):
        return None
    return rest


def _compressed_layout(cls, shape):
    return _layout(cls, lambda c, values, index: _compressed_array(
        c, values, index, np.array([0, 1], np.int32), shape))


cdef object _CSR_DICT = _compressed_layout(sp.csr_array, (1, 1))
cdef object _CSC_DICT = _compressed_layout(sp.csc_array, (1, 1))
cdef object _VECTOR_DICT = _compressed_layout(sp.csr_array, (1,))  # a 1-d CSR array
cdef object _COO_DICT = _layout(sp.coo_array, lambda c, values, index: _coo_array(
    c, values, (index, index), (1, 1)))
# for tests: which layouts this scipy allows (None: the fast entry calls storage.results)
LAYOUTS = {"csr": _CSR_DICT, "csc": _CSC_DICT, "vector": _VECTOR_DICT, "coo": _COO_DICT}


# --- kernel functions ---------------------------------------------------------------------

cdef void* _address(object array, Py_ssize_t itemsize, bint writable) except? NULL:
    # Address of a contiguous buffer's first item; BufferError if not contiguous (or not
    # writable when it must be), ValueError if its items are not itemsize bytes wide. The
    # buffer is released at once: the caller holds the array for the duration of the call.
    cdef Py_buffer view
    PyObject_GetBuffer(array, &view, PyBUF_ANY_CONTIGUOUS | (PyBUF_WRITABLE if writable else 0))
    cdef void* address = view.buf
    cdef Py_ssize_t found = view.itemsize
    PyBuffer_Release(&view)
    if found != itemsize:
        raise ValueError(f"expected items of {itemsize} bytes, got {found}")
    return address


cdef int sf_raise(tuple sites, int64_t site, int64_t a, int64_t b, int64_t c) except -1:
    # the first failed check of a call: which array, what was found (bounds.py's sites)
    kind, what = sites[site - 1]
    if kind == "domain":
        raise InvalidData(what)
    if kind == "pos":
        raise InvalidData(f"{what} is not monotone non-decreasing: row {a} spans [{b}, {c})")
    if kind == "map":
        raise InvalidData(f"{what}: the operator mapped an entry to {a}, outside [0, {b})")
    if kind == "order":
        raise InvalidData(f"{what} is not sorted by row: an entry of row {a} comes after row "
                          f"{b} was read (a stale has_canonical_format flag?)")
    raise InvalidData(f"{what} out of range [0, {b}): found {a}")


cdef enum:
    _MAX_PARAMS = 256


cdef class KernelFunction:
    """A kernel module's ``run`` or ``count``: ``f(*params)`` with the module's parameters
    in order (``loops.Param``: sizes as ints, arrays as contiguous arrays, strided arrays'
    addresses as ints); returns the loops' results (an int, a tuple, or None) or raises the
    first failed check."""

    cdef sf_loops loops
    cdef Py_ssize_t nparams
    cdef int nret
    cdef tuple sites
    cdef bytes kinds  # per parameter: b"i" size, b"a" address, b"r"/b"w" array (written)
    cdef tuple itemsizes
    cdef readonly str params

    def __call__(self, *args):
        cdef int64_t sizes[_MAX_PARAMS]
        cdef void* arrays[_MAX_PARAMS]
        cdef int64_t ret[_MAX_PARAMS + 4]
        cdef Py_ssize_t k, ns = 0, na = 0
        cdef const char* kinds = self.kinds
        cdef int overflow
        if len(args) != self.nparams:
            raise InternalError(f"a kernel function takes {self.nparams} parameters, "
                                f"got {len(args)}")
        for k in range(self.nparams):
            item = args[k]
            if kinds[k] == b"i":
                sizes[ns] = PyLong_AsLongLongAndOverflow(item, &overflow)
                if overflow:
                    raise OverflowError(f"kernel size parameter {k} does not fit in int64")
                ns += 1
            elif kinds[k] == b"a":
                arrays[na] = <void*><intptr_t>PyLong_AsLongLongAndOverflow(item, &overflow)
                na += 1
            else:
                arrays[na] = _address(item, self.itemsizes[k], kinds[k] == b"w")
                na += 1
        ret[self.nret] = 0
        with nogil:
            self.loops(sizes, arrays, ret)
        if ret[self.nret]:
            sf_raise(self.sites, ret[self.nret], ret[self.nret + 1], ret[self.nret + 2],
                     ret[self.nret + 3])
        if self.nret == 1:
            return ret[0]
        if self.nret == 0:
            return None
        return tuple([ret[k] for k in range(self.nret)])

    def __repr__(self):
        return f"<sparsefold kernel function ({self.params})>"


cdef object sf_function(sf_loops loops, str params, int nret, tuple sites):
    """A :class:`KernelFunction` calling ``loops`` (a module's trampoline); ``params``, one
    word per parameter: ``i`` a size, ``a`` an address, ``r<n>``/``w<n>`` an array of
    items of n bytes that the loops read / write."""
    cdef KernelFunction f = KernelFunction.__new__(KernelFunction)
    words = params.split()
    if len(words) > _MAX_PARAMS or nret > _MAX_PARAMS:
        raise InternalError(f"a kernel function of {len(words)} parameters: at most "
                            f"{_MAX_PARAMS}")
    f.loops, f.nparams, f.nret, f.sites, f.params = loops, len(words), nret, sites, params
    f.kinds = "".join(w[0] for w in words).encode()
    f.itemsizes = tuple(int(w[1:]) if w[0] in "rw" else 0 for w in words)
    if any(w[0] not in "iarw" for w in words):
        raise InternalError(f"unknown kernel parameter kinds in {params!r}")
    return f


cdef class FastEntry:
    """A kernel module's ``fast``: ``fast(*inputs, threads=0)`` runs the call's happy path
    in the module (``fastcall.py``) and returns the result, or None — before any kernel
    work — when the checked path must decide."""

    cdef sf_entry_fn entry
    cdef Py_ssize_t nargs

    def __call__(self, *args, int threads=0):
        if len(args) != self.nargs:
            return None
        return self.entry(args, threads)


cdef object sf_fast_entry(sf_entry_fn entry, int nargs):
    cdef FastEntry f = FastEntry.__new__(FastEntry)
    f.entry, f.nargs = entry, nargs
    return f


# --- reading inputs -------------------------------------------------------------------------

cdef bint _shape(object shape, int ndim, int64_t* dims) except -1:
    # A tuple of ``ndim`` Python ints in [0, 2**62): its values; False otherwise (the checked
    # path reads any other shape)
    cdef int overflow
    cdef int d
    if type(shape) is not tuple or len(<tuple>shape) != ndim:
        return False
    for d in range(ndim):
        item = (<tuple>shape)[d]
        if not PyLong_CheckExact(item):
            return False
        dims[d] = PyLong_AsLongLongAndOverflow(item, &overflow)
        if overflow or dims[d] < 0 or dims[d] >= (<int64_t>1 << 62):
            return False
    return True


cdef void* _contiguous(object array, int dt, int64_t* length) noexcept:
    # The first item of a 1-d C-contiguous ndarray of exactly dtype ``dt``; NULL otherwise.
    if type(array) is not _NDARRAY or sf_np_descr(array) != _DESCR[dt]:
        return NULL
    if sf_np_ndim(array) != 1 or not sf_np_c_contiguous(array):
        return NULL
    length[0] = sf_np_dims(array)[0]
    return sf_np_data(array)


cdef int sf_compressed_input(object v, int columns, int ndim, int pos_dt, int crd_dt,
                             int val_dt, sf_compressed* out) except -1:
    """A scipy CSR (CSC: ``columns``) array of ``ndim`` 2, or a 1-d CSR vector, whose cached
    canonical flag is set, with arrays of exactly these dtypes and consistent lengths: 1
    and ``out`` filled; else 0."""
    cdef object t = type(v)
    cdef int64_t len_pos, len_crd, len_val, rows, nnz
    if ndim == 2:
        if t is not (_CSC_ARRAY if columns else _CSR_ARRAY) and \
                t is not (_CSC_MATRIX if columns else _CSR_MATRIX):
            return 0
    elif ndim != 1 or t is not _CSR_ARRAY:
        return 0
    if getattr(v, "_has_canonical_format", None) is not True:
        return 0
    if not _shape(getattr(v, "_shape", None), ndim, out.shape):
        return 0
    out.pos = _contiguous(getattr(v, "indptr", None), pos_dt, &len_pos)
    if out.pos == NULL:
        return 0
    out.crd = _contiguous(getattr(v, "indices", None), crd_dt, &len_crd)
    if out.crd == NULL:
        return 0
    out.val = _contiguous(getattr(v, "data", None), val_dt, &len_val)
    if out.val == NULL:
        return 0
    rows = out.shape[columns] if ndim == 2 else 1
    if len_pos != rows + 1 or _index_at(out.pos, pos_dt, 0) != 0:
        return 0
    nnz = _index_at(out.pos, pos_dt, rows)
    if nnz < 0 or nnz > len_crd or nnz > len_val:
        return 0
    if nnz > 0 and (out.shape[0] == 0 or (ndim == 2 and out.shape[1] == 0)):
        return 0
    out.nnz, out.stored = nnz, len_val
    return 1


cdef bint _increasing(const sf_coo* a, int ndim, int dt) noexcept nogil:
    # Entries in strictly increasing row-major order (the checked path's canonical_order)
    cdef int64_t t, x, y
    cdef int d
    for t in range(1, a.nnz):
        for d in range(ndim):
            x = _index_at(a.crd[d], dt, t - 1)
            y = _index_at(a.crd[d], dt, t)
            if x < y:
                break
            if x > y or d == ndim - 1:
                return False
    return True


cdef int sf_coo_input(object v, int ndim, int crd_dt, int val_dt, sf_coo* out) except -1:
    """A scipy COO array of ``ndim`` axes with coordinates of dtype ``crd_dt`` and values of
    ``val_dt``, each of the same length, and in order (its canonical flag set, else checked
    here): 1 and ``out`` filled; else 0."""
    cdef object t = type(v)
    cdef int64_t n
    cdef int d
    cdef bint ordered
    if t is not _COO_ARRAY and t is not _COO_MATRIX:
        return 0
    if ndim > SF_MAXDIM:
        return 0
    canonical = getattr(v, "has_canonical_format", None) is True
    if not _shape(getattr(v, "_shape", None), ndim, out.shape):
        return 0
    coords = getattr(v, "coords", None)
    if type(coords) is not tuple or len(<tuple>coords) != ndim:
        return 0
    out.val = _contiguous(getattr(v, "data", None), val_dt, &out.stored)
    if out.val == NULL:
        return 0
    out.nnz = out.stored
    for d in range(ndim):
        out.crd[d] = _contiguous((<tuple>coords)[d], crd_dt, &n)
        if out.crd[d] == NULL or n != out.nnz:
            return 0
    if ndim and not canonical:
        with nogil:
            ordered = _increasing(out, ndim, crd_dt)
        if not ordered:
            return 0
    if out.nnz > 0:
        for d in range(ndim):
            if out.shape[d] == 0:
                return 0
    out.pos0[0], out.pos0[1] = 0, out.nnz
    return 1


cdef int sf_dense_input(object v, int ndim, int dt, sf_dense* out) except -1:
    """A NumPy array of exactly dtype ``dt`` and rank ``ndim`` whose strides are whole
    elements: 1 and ``out`` (strides in elements) filled; else 0 (the checked path copies
    it)."""
    cdef int d
    cdef Py_ssize_t item
    if type(v) is not _NDARRAY or sf_np_descr(v) != _DESCR[dt]:
        return 0
    if sf_np_ndim(v) != ndim or ndim > SF_MAXDIM:
        return 0
    item = sf_np_itemsize(v)
    for d in range(ndim):
        out.shape[d] = sf_np_dims(v)[d]
        if sf_np_strides(v)[d] % item:
            return 0
        out.strides[d] = sf_np_strides(v)[d] // item
    out.data = sf_np_data(v)
    return 1


cdef bint sf_nonfinite(const void* values, int64_t n, int dt) noexcept nogil:
    """Whether any of ``n`` values of dtype ``dt`` is inf or nan (np.isfinite's question;
    complex: either part). Its exponent bits are all set, so adding one to them carries into
    the top bit: integer operations vectorize under the kernels' flags, where a float compare
    OR-ed into an int did not (1.6 ns an entry: the fast entry's finite check cost more than
    the kernel)."""
    cdef const uint16_t* b16
    cdef const uint32_t* b32
    cdef const uint64_t* b64
    cdef uint16_t s16 = 0
    cdef uint32_t s32 = 0
    cdef uint64_t s64 = 0
    cdef int64_t t
    if dt == SF_COMPLEX64 or dt == SF_COMPLEX128:
        n = 2 * n
        dt = SF_FLOAT32 if dt == SF_COMPLEX64 else SF_FLOAT64
    if dt == SF_FLOAT32:
        b32 = <const uint32_t*>values
        for t in range(n):
            s32 = s32 | ((b32[t] & <uint32_t>0x7f800000) + <uint32_t>0x00800000)
        return (s32 >> 31) != 0
    if dt == SF_FLOAT64:
        b64 = <const uint64_t*>values
        for t in range(n):
            s64 = s64 | ((b64[t] & <uint64_t>0x7ff0000000000000) + <uint64_t>0x0010000000000000)
        return (s64 >> 63) != 0
    if dt == SF_FLOAT16:
        b16 = <const uint16_t*>values
        for t in range(n):
            s16 = s16 | <uint16_t>((b16[t] & <uint16_t>0x7c00) + <uint16_t>0x0400)
        return (s16 >> 15) != 0
    return False


# --- a call's setting ---------------------------------------------------------------------

cdef int64_t sf_memory_limit() except? -2:
    """``memory.memory_limit()``, without reading os.environ in Python when the variable is
    unset; -1 when it is malformed (the checked path reports it)."""
    cdef const char* configured = getenv(b"SPARSEFOLD_MEMORY_LIMIT")
    if configured == NULL or configured[0] == 0:
        return _PHYSICAL
    try:
        return min(_memory.memory_limit(), INT64_MAX)
    except Exception:
        return -1


cdef int sf_threads(double work, int requested) except -1:
    """Set the calling thread's OpenMP thread count for a call whose loops visit ``work``
    entries, as ``threads.threads_for(work)`` and ``threads.apply`` set it: one below
    ``PARALLEL_MIN_WORK`` (read each call: tests lower it), else jit's threads=N
    (``requested``), else ``threads.requested()``, with OpenMP's dynamic adjustment unless
    the count is exact. Returns the count; 0 when the rule raised (a bad
    $SPARSEFOLD_NUM_THREADS: the checked path raises it)."""
    cdef int count = 1
    cdef int dynamic = 0
    if work >= _threads.PARALLEL_MIN_WORK:
        if requested > 0:
            count = requested
        else:
            try:
                found, exact = _threads.requested()
            except Exception:
                return 0
            count, dynamic = found, not exact
    sf_set_team(count, dynamic)
    return count


cdef int sf_max_threads() noexcept nogil:
    """The threads a parallel loop runs on now (at most MAX_THREADS; 1 without OpenMP)."""
    return sf_team_now()


def max_threads():
    """:func:`sf_max_threads`, for tests."""
    return sf_max_threads()


# --- results --------------------------------------------------------------------------------

cdef object sf_empty(int64_t n, int dt):
    """A new 1-d array of ``n`` items of dtype ``dt``; None when it cannot be allocated (the
    checked path raises TooLarge)."""
    try:
        return sf_np_empty(n, _DTYPES[dt])
    except MemoryError:
        return None


cdef object sf_zeros(int ndim, const int64_t* dims, int dt):
    """A new C-ordered array of zeros of shape ``dims``; None when it cannot be
    allocated."""
    try:
        return sf_np_zeros(ndim, dims, _DTYPES[dt])
    except MemoryError:
        return None


cdef void* sf_data(object array) noexcept:
    """The first item of an array this runtime allocated (C-contiguous, writable)."""
    return sf_np_data(array)


cdef object sf_trim(object array, int64_t n, int dt):
    """The first n entries of an output buffer only this call references, as kernel.trim
    gives them: a large one shrunk in place (realloc); a small one copied into an exact new
    array instead, since NumPy's resize costs about 1 us a call (keyword parsing), an
    allocation and a copy of at most 4 KiB a third of that."""
    cdef Py_ssize_t itemsize = _ITEMSIZE[dt]
    if sf_np_dims(array)[0] <= n:
        return array
    if n * itemsize > 4096:
        array.resize(n, refcheck=False)
        return array
    out = sf_np_empty(n, _DTYPES[dt])
    if n:
        memcpy(sf_np_data(out), sf_np_data(array), n * itemsize)
    return out


cdef tuple _dims(int ndim, const int64_t* dims):
    return tuple([dims[d] for d in range(ndim)])


cdef object _compressed(object cls, object layout, object data, object indices,
                        object indptr, tuple shape):
    # A scipy CSR/CSC result, the object storage.results._compressed_array builds
    if layout is None:
        return _compressed_array(cls, data, indices, indptr, shape)
    out = _NEW(cls)
    d = dict(<dict>layout)
    d["data"], d["indices"], d["indptr"], d["_shape"] = data, indices, indptr, shape
    out.__dict__ = d
    return out


cdef object sf_compressed_result(int columns, object val, object crd, object pos,
                                 const int64_t* dims):
    """A CSR (CSC: ``columns``) result of shape ``dims`` (2) around the arrays the kernel
    filled."""
    cdef tuple shape = (dims[0], dims[1])
    if columns:
        return _compressed(_CSC_ARRAY, _CSC_DICT, val, crd, pos, shape)
    return _compressed(_CSR_ARRAY, _CSR_DICT, val, crd, pos, shape)


cdef object sf_vector_result(object val, object crd, int64_t n):
    """A 1-d CSR result, the object storage.results._container builds: indptr [0, nnz] of
    the indices' dtype."""
    cdef void* p
    indptr = sf_np_empty(2, crd.dtype)
    p = sf_np_data(indptr)
    if sf_np_itemsize(crd) == 4:
        (<int32_t*>p)[0] = 0
        (<int32_t*>p)[1] = <int32_t>len(val)
    else:
        (<int64_t*>p)[0] = 0
        (<int64_t*>p)[1] = len(val)
    return _compressed(_CSR_ARRAY, _VECTOR_DICT, val, crd, indptr, (n,))


cdef object sf_coo_result(object val, tuple crds, int ndim, const int64_t* dims):
    """A scipy COO result of shape ``dims``, the object storage.results._coo_array builds."""
    if _COO_DICT is None:
        return _coo_array(_COO_ARRAY, val, crds, _dims(ndim, dims))
    out = _NEW(_COO_ARRAY)
    d = dict(<dict>_COO_DICT)
    d["data"], d["coords"], d["_shape"] = val, crds, _dims(ndim, dims)
    out.__dict__ = d
    return out


cdef object sf_dense_result(object val, tuple order):
    """A dense result stored with permuted axes (``DenseOut.order``) in the program's axis
    order: ``order`` is the inverse permutation."""
    return val.transpose(order)


# --- helpers the loops call: the workspace sorts (workspace.py) ----------------------------

cdef inline void _sift(int64_t* a, int64_t root, int64_t n) noexcept nogil:
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


cdef void _heapsort(int64_t* a, int64_t n) noexcept nogil:
    cdef int64_t i, v
    for i in range(n // 2 - 1, -1, -1):
        _sift(a, i, n)
    for i in range(n - 1, 0, -1):
        v = a[0]
        a[0] = a[i]
        a[i] = v
        _sift(a, 0, i)


cdef inline void _insertion(int64_t* a, int64_t n) noexcept nogil:
    # values at most a few places from their own (a quicksort's short run, buckets' output)
    cdef int64_t i, j, v
    for i in range(1, n):
        v = a[i]
        j = i - 1
        while j >= 0 and a[j] > v:
            a[j + 1] = a[j]
            j = j - 1
        a[j + 1] = v


cdef void _introsort(int64_t* a, int64_t n, int depth) noexcept nogil:
    # quicksort (median of three) down to runs of 24, heapsort past the depth limit: never
    # quadratic, whatever order a row's columns were touched in
    cdef int64_t i, j, p, v, mid
    while n > 24:
        if depth == 0:
            _heapsort(a, n)
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
            _introsort(a, j + 1, depth)
            a = a + i
            n = n - i
        else:
            _introsort(a + i, n - i, depth)
            n = j + 1
    _insertion(a, n)


cdef void _introsort_all(int64_t* a, int64_t n) noexcept nogil:
    # inlined compares: qsort's comparison callback cost a third of a sparse x sparse product
    cdef int depth = 0
    cdef int64_t m = n
    while m > 1:
        depth = depth + 2
        m = m >> 1
    _introsort(a, n, depth)


cdef void sf_sort(int64_t* a, int64_t n) noexcept nogil:
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
        _introsort_all(a, n)
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
        _introsort_all(a, n)
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
        _introsort_all(a, n)
        return
    for i in range(n):
        v = a[i]
        k = <int>((v - lo) >> shift)
        tmp[start[k]] = v
        start[k] += 1
    _insertion(tmp, n)
    memcpy(a, tmp, n * sizeof(int64_t))


cdef inline bint _pair_less(int64_t* k, int64_t* s, int64_t a, int64_t b) noexcept nogil:
    return k[a] < k[b] or (k[a] == k[b] and s[a] < s[b])


cdef inline void _pair_swap(int64_t* k, int64_t* s, int64_t a, int64_t b) noexcept nogil:
    cdef int64_t v = k[a]
    k[a] = k[b]
    k[b] = v
    v = s[a]
    s[a] = s[b]
    s[b] = v


cdef inline void _pair_sift(int64_t* k, int64_t* s, int64_t root, int64_t n) noexcept nogil:
    cdef int64_t child
    while 2 * root + 1 < n:
        child = 2 * root + 1
        if child + 1 < n and _pair_less(k, s, child, child + 1):
            child = child + 1
        if not _pair_less(k, s, root, child):
            break
        _pair_swap(k, s, root, child)
        root = child


cdef void sf_pair_sort(int64_t* k, int64_t* s, int64_t n) noexcept nogil:
    cdef int64_t i, end
    for i in range(n // 2 - 1, -1, -1):
        _pair_sift(k, s, i, n)
    for end in range(n - 1, 0, -1):
        _pair_swap(k, s, 0, end)
        _pair_sift(k, s, 0, end)


# --- gather kernels (gather.py): integer-array indexing's maps over int64 arrays ---------------

cdef int64_t* _int64s(object a, bint writable, Py_ssize_t* n) except? NULL:
    # a contiguous 1-d array of 8-byte items (the callers pass int64 ones): first item, length
    n[0] = len(a)
    return <int64_t*>_address(a, 8, writable)


def outer_count(ptr, rows):
    """Entries of the outer gather: the sum of the segment lengths it copies."""
    cdef Py_ssize_t k, n
    cdef const int64_t* p = _int64s(ptr, False, &n)
    cdef const int64_t* r = _int64s(rows, False, &n)
    cdef int64_t total = 0
    with nogil:
        for k in range(n):
            total += p[r[k] + 1] - p[r[k]]
    return total


def outer_fill(ptr, rows, src, newc):
    """Output segment k is input segment rows[k] (in order, so the output is sorted)."""
    cdef Py_ssize_t k, n, m
    cdef const int64_t* p = _int64s(ptr, False, &m)
    cdef const int64_t* r = _int64s(rows, False, &n)
    cdef int64_t* s = _int64s(src, True, &m)
    cdef int64_t* c = _int64s(newc, True, &m)
    cdef int64_t e, q = 0
    with nogil:
        for k in range(n):
            for e in range(p[r[k]], p[r[k] + 1]):
                s[q] = e
                c[q] = k
                q += 1


def inverse(idx, start, perm):
    """Counting sort of idx: start[c]..start[c+1] holds, in perm, every k with idx[k] == c,
    increasing (start has n + 1 entries, all 0 on entry)."""
    cdef Py_ssize_t k, c, m, n
    cdef const int64_t* x = _int64s(idx, False, &m)
    cdef int64_t* st = _int64s(start, True, &n)
    cdef int64_t* pm = _int64s(perm, True, &k)
    n -= 1
    with nogil:
        for k in range(m):
            st[x[k] + 1] += 1
        for c in range(n):
            st[c + 1] += st[c]
        for k in range(m):
            pm[st[x[k]]] = k
            st[x[k]] += 1
        for c in range(n, 0, -1):
            st[c] = st[c - 1]
        st[0] = 0


def counting_order(keys, count, order):
    """A stable counting sort: order lists the positions of keys by key (count has one
    more entry than the number of keys' values, all 0 on entry)."""
    cdef Py_ssize_t e, c, m, n
    cdef const int64_t* kk = _int64s(keys, False, &m)
    cdef int64_t* cnt = _int64s(count, True, &n)
    cdef int64_t* o = _int64s(order, True, &e)
    with nogil:
        for e in range(m):
            cnt[kk[e] + 1] += 1
        for c in range(n - 1):
            cnt[c + 1] += cnt[c]
        for e in range(m):
            o[cnt[kk[e]]] = e
            cnt[kk[e]] += 1


def inner_count(crd, start):
    """Entries of the inner gather: each stored entry once per index that reads it."""
    cdef Py_ssize_t e, m, n
    cdef const int64_t* x = _int64s(crd, False, &m)
    cdef const int64_t* st = _int64s(start, False, &n)
    cdef int64_t total = 0
    with nogil:
        for e in range(m):
            total += st[x[e] + 1] - st[x[e]]
    return total


def inner_fill(crd, start, perm, src, newc):
    cdef Py_ssize_t e, m, n
    cdef const int64_t* x = _int64s(crd, False, &m)
    cdef const int64_t* st = _int64s(start, False, &n)
    cdef const int64_t* pm = _int64s(perm, False, &n)
    cdef int64_t* s = _int64s(src, True, &n)
    cdef int64_t* c = _int64s(newc, True, &n)
    cdef int64_t j, q = 0
    with nogil:
        for e in range(m):
            for j in range(st[x[e]], st[x[e] + 1]):
                s[q] = e
                c[q] = pm[j]
                q += 1

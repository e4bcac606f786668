"""Tests of the build layer (compiler/run/build.py): compile + import + call, the in-memory
table, reuse of the disk cache by another process, one build per key across threads and
processes, compile errors, array addresses.

Kernels are hand-written in the style the emitter generates. ``HSTACK`` (~170 lines) stacks
two CSR matrices side by side for int32 and int64 indices from raw addresses: representative
of a real kernel's size and of how arrays cross the boundary; results are checked against
scipy. ``tiny(tag)`` is a minimal module whose key differs per tag.
"""

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from sparsefold import InternalError, InvalidData
from sparsefold.compiler.run import build

_HEADER = '''\
# sparsefold kernel (test fixture): C = hstack([A, B]) for CSR A (m x na), B (m x nb)
# values: float64; indices: int32 and int64 variants; arrays passed as addresses (size_t)
from libc.stdint cimport int32_t, int64_t


def noop(size_t addr, Py_ssize_t n):
    """Does nothing: measures the cost of calling into a kernel module."""
    return n
'''

_PER_INDEX_TYPE = '''

cdef int _check_csr_{I}(const {I}* indptr, const {I}* indices, Py_ssize_t m,
                         Py_ssize_t n, Py_ssize_t nnz) noexcept nogil:
    # 0 if the structure is safe to iterate, else a code naming the first problem found
    cdef Py_ssize_t i, p
    if indptr[0] != 0:
        return 1
    for i in range(m):
        if indptr[i + 1] < indptr[i]:
            return 2
    if indptr[m] != nnz:
        return 3
    for p in range(nnz):
        if indices[p] < 0 or indices[p] >= n:
            return 4
    return 0


def check_csr_{I}(size_t indptr_addr, size_t indices_addr, Py_ssize_t m, Py_ssize_t n,
                  Py_ssize_t nnz):
    """Validate a CSR structure; returns 0 or a problem code (see _check_csr_{I})."""
    cdef int code
    with nogil:
        code = _check_csr_{I}(<const {I}*>indptr_addr, <const {I}*>indices_addr, m, n, nnz)
    return code


def hstack_nnz_{I}(size_t a_indptr_addr, size_t b_indptr_addr, Py_ssize_t m):
    """Exact nnz of hstack([A, B]): the stored entries of both."""
    cdef const {I}* a_indptr = <const {I}*>a_indptr_addr
    cdef const {I}* b_indptr = <const {I}*>b_indptr_addr
    return (a_indptr[m] - a_indptr[0]) + (b_indptr[m] - b_indptr[0])


def hstack_{I}(size_t a_indptr_addr, size_t a_indices_addr, size_t a_data_addr,
               Py_ssize_t a_cols,
               size_t b_indptr_addr, size_t b_indices_addr, size_t b_data_addr,
               size_t out_indptr_addr, size_t out_indices_addr, size_t out_data_addr,
               Py_ssize_t m):
    """Fill the output CSR of hstack([A, B]); its arrays are preallocated with exact nnz."""
    cdef const {I}* a_indptr = <const {I}*>a_indptr_addr
    cdef const {I}* a_indices = <const {I}*>a_indices_addr
    cdef const double* a_data = <const double*>a_data_addr
    cdef const {I}* b_indptr = <const {I}*>b_indptr_addr
    cdef const {I}* b_indices = <const {I}*>b_indices_addr
    cdef const double* b_data = <const double*>b_data_addr
    cdef {I}* out_indptr = <{I}*>out_indptr_addr
    cdef {I}* out_indices = <{I}*>out_indices_addr
    cdef double* out_data = <double*>out_data_addr
    cdef Py_ssize_t i, p, q
    with nogil:
        q = 0
        out_indptr[0] = 0
        # one pass over rows: the piece from A, then the piece from B shifted by A's width
        for i in range(m):
            for p in range(a_indptr[i], a_indptr[i + 1]):
                out_indices[q] = a_indices[p]
                out_data[q] = a_data[p]
                q += 1
            for p in range(b_indptr[i], b_indptr[i + 1]):
                out_indices[q] = <{I}>(b_indices[p] + a_cols)
                out_data[q] = b_data[p]
                q += 1
            out_indptr[i + 1] = <{I}>q
    return q


def row_sums_{I}(size_t indptr_addr, size_t data_addr, size_t out_addr, Py_ssize_t m):
    """out[i] = sum of row i's stored values (a reduction, for a second loop shape)."""
    cdef const {I}* indptr = <const {I}*>indptr_addr
    cdef const double* data = <const double*>data_addr
    cdef double* out = <double*>out_addr
    cdef Py_ssize_t i, p
    cdef double acc
    with nogil:
        for i in range(m):
            acc = 0.0
            for p in range(indptr[i], indptr[i + 1]):
                acc += data[p]
            out[i] = acc
'''

HSTACK = _HEADER + "".join(_PER_INDEX_TYPE.replace("{I}", index_type)
                           for index_type in ("int32_t", "int64_t"))


def tiny(tag: str) -> str:
    """A minimal kernel module; ``tag`` only changes a comment (and so the cache key)."""
    return (f"# tiny test kernel, tag {tag}\n"
            "from libc.stdint cimport int64_t\n\n\n"
            "def scale_sum(size_t x_addr, Py_ssize_t n, double factor):\n"
            "    cdef const double* x = <const double*>x_addr\n"
            "    cdef double acc = 0.0\n"
            "    cdef Py_ssize_t i\n"
            "    with nogil:\n"
            "        for i in range(n):\n"
            "            acc += x[i] * factor\n"
            "    return acc\n")


# A child process: load a kernel module from the cache, call it, report counters as JSON.
# With POISON set, Cython cannot be imported and the C compiler does not exist, so any
# build attempt fails loudly.
_CHILD = r'''
import json, os, sys, time
if os.environ.get("POISON"):
    for name in ("Cython", "Cython.Compiler", "Cython.Compiler.Main"):
        sys.modules[name] = None
    os.environ["SPARSEFOLD_CC"] = "/nonexistent/cc"
import numpy as np
from sparsefold.compiler.run import build
source = open(sys.argv[1]).read()
started = time.perf_counter()
try:
    module = build.load_module(source, name_hint=sys.argv[2])
except Exception as exc:
    print(json.dumps({"error": type(exc).__name__, "message": str(exc)}))
    raise SystemExit(0)
load_s = time.perf_counter() - started
x = np.arange(10.0)
print(json.dumps({"stats": build.stats(), "load_s": load_s,
                  "result": module.scale_sum(build.data_pointer(x), 10, 2.0)}))
'''


def _child(tmp_path: Path, source: str, hint: str, *, poison: bool = False, start=False):
    source_file = tmp_path / f"{hint}.pyx.txt"
    source_file.write_text(source)
    env = dict(os.environ, SPARSEFOLD_CACHE_DIR=os.environ["SPARSEFOLD_CACHE_DIR"])
    if poison:
        env["POISON"] = "1"
    command = [sys.executable, "-c", _CHILD, str(source_file), hint]
    if start:
        return subprocess.Popen(command, env=env, stdout=subprocess.PIPE, text=True)
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.fixture
def cache_root(tmp_path, monkeypatch):
    root = tmp_path / "cache"
    monkeypatch.setenv("SPARSEFOLD_CACHE_DIR", str(root))
    build.clear_memory_cache()
    yield root
    build.clear_memory_cache()


@pytest.fixture(scope="module")
def hstack_module(tmp_path_factory):
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SPARSEFOLD_CACHE_DIR", str(tmp_path_factory.mktemp("hstack") / "cache"))
        build.clear_memory_cache()
        yield build.load_module(HSTACK, name_hint="hstack")
        build.clear_memory_cache()


def _ptr(array, writable=False):
    return build.data_pointer(array, writable=writable)


def _random_csr(rows, cols, density, index_dtype, seed):
    rng = np.random.default_rng(seed)
    a = sp.random_array((rows, cols), density=density, format="csr", rng=rng)
    a.indptr = a.indptr.astype(index_dtype)
    a.indices = a.indices.astype(index_dtype)
    return a


# -- a representative kernel: compiled, called, compared with scipy ----------------------

@pytest.mark.cython
@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
@pytest.mark.parametrize("rows,a_cols,b_cols,density", [
    (7, 5, 3, 0.4), (40, 30, 1, 0.05), (1, 4, 4, 1.0), (0, 3, 2, 0.5), (5, 0, 4, 0.5),
    (6, 3, 3, 0.0)])
def test_hstack_kernel_matches_scipy(hstack_module, index_dtype, rows, a_cols, b_cols,
                                     density):
    suffix = "int32_t" if index_dtype == np.int32 else "int64_t"
    a = _random_csr(rows, a_cols, density, index_dtype, seed=1)
    b = _random_csr(rows, b_cols, density, index_dtype, seed=2)
    check = getattr(hstack_module, f"check_csr_{suffix}")
    for m in (a, b):
        assert check(_ptr(m.indptr), _ptr(m.indices), rows, m.shape[1], m.nnz) == 0
    nnz = getattr(hstack_module, f"hstack_nnz_{suffix}")(_ptr(a.indptr), _ptr(b.indptr), rows)
    out_indptr = np.empty(rows + 1, index_dtype)
    out_indices = np.empty(nnz, index_dtype)
    out_data = np.empty(nnz, np.float64)
    written = getattr(hstack_module, f"hstack_{suffix}")(
        _ptr(a.indptr), _ptr(a.indices), _ptr(a.data), a_cols,
        _ptr(b.indptr), _ptr(b.indices), _ptr(b.data),
        _ptr(out_indptr, True), _ptr(out_indices, True), _ptr(out_data, True), rows)
    want = sp.hstack([a, b], format="csr")
    want.sort_indices()
    assert written == nnz == want.nnz
    np.testing.assert_array_equal(out_indptr, want.indptr)
    np.testing.assert_array_equal(out_indices, want.indices)
    np.testing.assert_array_equal(out_data, want.data)
    sums = np.empty(rows)
    getattr(hstack_module, f"row_sums_{suffix}")(_ptr(a.indptr), _ptr(a.data), _ptr(sums, True),
                                                 rows)
    np.testing.assert_allclose(sums, a.toarray().sum(axis=1))


@pytest.mark.cython
def test_kernel_validation_codes_reach_python(hstack_module):
    a = _random_csr(4, 4, 0.5, np.int64, seed=3)
    bad_indptr = a.indptr.copy()
    bad_indptr[2], bad_indptr[1] = bad_indptr[1] + 1, bad_indptr[2] + 5  # not monotone
    assert hstack_module.check_csr_int64_t(_ptr(bad_indptr), _ptr(a.indices), 4, 4, a.nnz) in \
        (2, 3)
    bad_indices = a.indices.copy()
    bad_indices[0] = 4  # == the number of columns
    assert hstack_module.check_csr_int64_t(_ptr(a.indptr), _ptr(bad_indices), 4, 4, a.nnz) == 4


# -- the in-memory table ------------------------------------------------------------------

@pytest.mark.cython
def test_second_load_hits_memory_and_modules_do_not_clash(cache_root):
    first = build.load_module(tiny("memory"), name_hint="tiny")
    again = build.load_module(tiny("memory"), name_hint="tiny")
    other = build.load_module(tiny("memory-2"), name_hint="tiny")
    assert again is first and other is not first
    assert first.__name__ != other.__name__
    assert build.stats() == {"memory_hits": 1, "disk_hits": 0, "builds": 2, "fallbacks": 0,
                             "prebuilt_hits": 0}
    x = np.arange(5.0)
    assert first.scale_sum(_ptr(x), 5, 3.0) == other.scale_sum(_ptr(x), 5, 3.0) == 30.0


@pytest.mark.cython
def test_eight_threads_one_compile(cache_root):
    barrier = threading.Barrier(8)
    modules, errors = [None] * 8, []
    x = np.arange(100.0)

    def work(slot):
        try:
            barrier.wait()
            modules[slot] = build.load_module(tiny("threads"), name_hint="tiny")
            for _ in range(200):
                assert modules[slot].scale_sum(_ptr(x), 100, 0.5) == x.sum() * 0.5
        except Exception as exc:  # reported below: an assert in a thread would be lost
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(slot,)) for slot in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    assert all(module is modules[0] for module in modules)
    assert build.stats()["builds"] == 1
    assert build.stats()["memory_hits"] == 7


# -- the disk cache across processes ---------------------------------------------------------

@pytest.mark.cython
def test_second_process_reuses_disk_cache_without_building(cache_root, tmp_path):
    build.load_module(tiny("disk"), name_hint="tiny")
    report = _child(tmp_path, tiny("disk"), "tiny", poison=True)
    assert report["stats"] == {"memory_hits": 0, "disk_hits": 1, "builds": 0, "fallbacks": 0,
                               "prebuilt_hits": 0}
    assert report["result"] == 90.0
    # The poison is real: the same child asked for a kernel not in the cache cannot build it.
    failed = _child(tmp_path, tiny("not cached"), "tiny", poison=True)
    assert failed["error"] == "InternalError"
    assert "Cython is not importable" in failed["message"]


@pytest.mark.cython
def test_four_processes_build_once(cache_root, tmp_path):
    children = [_child(tmp_path, tiny("race"), "tiny", start=True) for _ in range(4)]
    reports = []
    for child in children:
        out, _ = child.communicate(timeout=120)
        assert child.returncode == 0
        reports.append(json.loads(out))
    assert sum(report["stats"]["builds"] for report in reports) == 1
    assert sum(report["stats"]["disk_hits"] for report in reports) == 3
    assert all(report["result"] == 90.0 for report in reports)
    assert len([p for p in cache_root.iterdir() if not p.name.startswith(".")]) == 1


# -- compile errors are internal errors, with the message and the kept source ---------------

@pytest.mark.cython
def test_cython_error_is_internal_error_with_message_and_kept_source(cache_root):
    source = "def broken(int n):\n    cdef int x = n +\n    return x\n"
    with pytest.raises(InternalError, match="Cython rejected the generated kernel") as info:
        build.load_module(source, name_hint="broken")
    message = str(info.value)
    assert "Expected an identifier or literal" in message
    kept = Path(message.rsplit("kept at ", 1)[1].strip())
    assert kept.read_text() == source
    assert not any(p.name.startswith("sfk_") for p in cache_root.iterdir())


@pytest.mark.cython
def test_c_error_is_internal_error(cache_root):
    source = ('cdef extern from *:\n    """\n    #error deliberately broken C\n    """\n\n'
              "def f():\n    return 1\n")
    with pytest.raises(InternalError, match="the C compiler failed") as info:
        build.load_module(source, name_hint="broken_c")
    assert "deliberately broken C" in str(info.value)
    assert "kept at" in str(info.value)


@pytest.mark.cython
def test_missing_c_compiler_is_reported(cache_root, monkeypatch):
    monkeypatch.setenv("SPARSEFOLD_CC", "/nonexistent/cc")
    with pytest.raises(InternalError, match="no C compiler '/nonexistent/cc'"):
        build.load_module(tiny("no cc"), name_hint="tiny")


# -- keys, names, addresses ------------------------------------------------------------------

def test_kernel_key_covers_source_hint_version_and_flags(monkeypatch):
    base = build.kernel_key("x = 1\n")
    assert base == build.kernel_key("x = 1\n") and len(base) == 64
    assert build.kernel_key("x = 2\n") != base
    assert build.kernel_key("x = 1\n", name_hint="other") != base
    monkeypatch.setattr(build, "compiler_version", lambda: "999.0")
    assert build.kernel_key("x = 1\n") != base
    monkeypatch.undo()
    monkeypatch.setattr(build, "CFLAGS", build.CFLAGS + ("-O3",))
    assert build.kernel_key("x = 1\n") != base


def test_module_names_are_identifiers_whatever_the_hint():
    key = build.kernel_key("x = 1\n")
    for hint in ["kernel", 'a"; import os\nos.system("x")', "", "é/../..", "x" * 200]:
        name = build.module_name_for(key, hint)
        assert name.isidentifier() and name.isascii() and len(name) <= 64
        assert name.endswith(key[:24])


def test_data_pointer_is_the_buffer_address_and_refuses_bad_arrays():
    x = np.arange(12.0).reshape(3, 4)
    assert build.data_pointer(x) == x.__array_interface__["data"][0]
    assert build.data_pointer(np.asfortranarray(x)) > 0
    with pytest.raises(InternalError, match="contiguous"):
        build.data_pointer(x[:, ::2])
    frozen = x.copy()
    frozen.flags.writeable = False
    assert build.data_pointer(frozen) > 0
    with pytest.raises(InternalError, match="read-only"):
        build.data_pointer(frozen, writable=True)


@pytest.mark.cython
def test_kernel_functions_read_writes_and_refuse_bad_buffers(cache_root):
    """A module's ``sf_function`` (runtime.pyx) takes sizes as ints and arrays through the
    buffer protocol: contiguous, of the item size expected, writable when written."""
    source = '''
from libc.stdint cimport int64_t
from sparsefold.compiler.runtime cimport sf_function


cdef void _total_loops(const int64_t* s, void** p, int64_t* r) noexcept nogil:
    cdef const double* data = <const double*>p[0]
    cdef double acc = 0.0
    cdef int64_t i
    for i in range(s[0]):
        acc += data[i]
    r[0] = <int64_t>acc
    r[1] = 0


cdef void _fill_loops(const int64_t* s, void** p, int64_t* r) noexcept nogil:
    cdef double* data = <double*>p[0]
    cdef int64_t i
    for i in range(s[0]):
        data[i] = s[1]
    r[0] = 0


cdef void _check_loops(const int64_t* s, void** p, int64_t* r) noexcept nogil:
    r[0] = 2  # the second site: 7 out of range [0, 5)
    r[1] = 7
    r[2] = 5
    r[3] = 0


total = sf_function(_total_loops, "r8 i", 1, ())
fill = sf_function(_fill_loops, "w8 i i", 0, ())
check = sf_function(_check_loops, "", 0, (("pos", "a0: indptr"), ("range", "a0: indices")))
'''
    module = build.load_module(source, name_hint="buffers")
    x = np.arange(6.0)
    assert module.total(x, 6) == 15
    assert module.total(np.empty(0), 0) == 0
    assert module.fill(x[2:], 4, 7) is None  # an offset view: its first item's address
    np.testing.assert_array_equal(x, [0, 1, 7, 7, 7, 7])
    with pytest.raises(InvalidData, match=r"a0: indices out of range \[0, 5\): found 7"):
        module.check()
    with pytest.raises(ValueError, match="expected items of 8 bytes, got 4"):
        module.total(np.zeros(3, np.float32), 3)
    # NumPy reports refused buffer requests as ValueError (the protocol says BufferError).
    with pytest.raises((BufferError, ValueError), match="not contiguous"):
        module.total(np.arange(12.0)[::2], 6)
    frozen = np.zeros(3)
    frozen.flags.writeable = False
    assert module.total(frozen, 3) == 0.0
    with pytest.raises((BufferError, ValueError), match="read-only"):
        module.fill(frozen, 3, 1)


def test_gcc_optimizes_cdef_functions_at_o2_and_the_glue_at_og():
    c = "\n".join([
        "static PyObject *__pyx_pw_4mod_3run(PyObject *self) {", "  return NULL;", "}",
        "static void __pyx_f_4mod__run_body(int64_t __pyx_v_n, double *__pyx_v_out) {",
        "  if (1) {", "    __pyx_v_out[0] = 1.0;", "  }", "}",
        "static CYTHON_INLINE int __pyx_f_4mod__sf_shape(PyObject *x) {", "  return 0;", "}",
        "static void __pyx_f_4mod__run_body(int64_t, double *); /*proto*/",
        "static PyObject *__pyx_f_4mod__fast(PyObject *__pyx_v_args, int __pyx_v_threads) {",
        "  return NULL;", "}",
    ])
    out = build.split_levels(c).splitlines()
    starts = [i for i, line in enumerate(out) if line == '#pragma GCC optimize ("O2")']
    ends = [i for i, line in enumerate(out) if line == "#pragma GCC pop_options"]
    # the two cdef definitions are wrapped, each through its closing brace; the def
    # wrapper, the prototype and the fast entry (it returns a Python object) are not
    assert [out[i + 1].split("(")[0] for i in starts] == [
        "static void __pyx_f_4mod__run_body", "static CYTHON_INLINE int __pyx_f_4mod__sf_shape"]
    assert [out[i - 1] for i in ends] == ["}", "}"]
    assert out[ends[0] - 2] == "  }"
    assert out[0].startswith("static PyObject *__pyx_pw_4mod_3run")
    assert out[-4].endswith("/*proto*/")
    assert out[-3].startswith("static PyObject *__pyx_f_4mod__fast(")
    # a definition that never closes: the text stays as Cython wrote it
    unclosed = "static void __pyx_f_4mod__x(int a) {\n  a = 1;"
    assert build.split_levels(unclosed) == unclosed


def test_kernels_build_at_og_with_o2_loops_only_under_gcc(monkeypatch):
    monkeypatch.setattr(build, "_is_gcc", lambda compiler: True)
    flags = build.active_cflags()
    assert "-Og" in flags and "-O2" not in flags and "-O1" not in flags
    monkeypatch.setattr(build, "_is_gcc", lambda compiler: False)
    assert "-O2" in build.active_cflags() and "-Og" not in build.active_cflags()
    assert build._is_gcc("/no/such/compiler") is False

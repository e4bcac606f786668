"""Build: generated Cython text -> an imported extension module, cached (DESIGN §3 step 6).

Public API
----------
``load_module(source, *, name_hint="kernel") -> types.ModuleType``
    Compile a complete ``.pyx`` text and import it. Looked up first in an in-memory table
    (keyed by the source text itself, so a hit costs a dict lookup), then in the on-disk
    cache (``cache.py``), else built: Cython in-process, then the C compiler in a
    subprocess, in a private temporary directory renamed into the cache when complete.
    Thread-safe (one build per key however many threads ask at once) and process-safe (a
    file lock per key). A Cython or C compiler failure raises
    :class:`~sparsefold.InternalError` with the compiler's message and the kept source path.
``kernel_key(source, *, name_hint="kernel") -> str``
    The cache key: sha256 of the source, the name hint and :func:`environment_fields`
    (compiler version, Cython version, Python ABI, platform, C flags, Cython directives).
``module_name_for(key, name_hint) -> str``
    ``"sfk_<hint>_<24 hex digits of key>"``: unique per key, so modules never clash.
``data_pointer(array, *, writable=False) -> int``
    The address of a contiguous NumPy array's first element, for passing arrays to kernels.
``ensure_runtime() -> types.ModuleType``
    The shared runtime every kernel module cimports (``runtime.pyx``), imported: the
    installed build when it was compiled from the sources installed now, else one compiled
    into the kernel cache. Called before any kernel module is imported.
``stats() / clear_memory_cache()``
    Counters (memory_hits, disk_hits, builds, fallbacks, prebuilt_hits) and a reset, mainly
    for tests.
``build_log() -> list[dict]``
    Every module this process built: name hint, Cython, C compiler and load seconds
    (``sparsefold bench --compile-time``).
``register_prebuilt(table) / prebuilt_only(context) / source_digest(source)``
    Ahead-of-time modules (``compiler/aot.py``): functions built from a source elsewhere,
    registered under the sha256 of that source, are used instead of compiling it;
    ``prebuilt_only`` makes a miss raise :class:`NotPrebuilt` instead of building.
``no_build() / WouldBuild``
    Within ``no_build()`` (this thread or task), ``load_module`` serves what is loaded,
    prebuilt or intact in the disk cache, and raises :class:`WouldBuild` (carrying the
    source) instead of running Cython and the C compiler — also when another thread of
    this process is building or loading that source right now, so the caller never waits
    for a build. Tiered calls (``sparsefold.tiering``) probe kernels this way and build
    what is missing in the background.

Contract for generated sources
------------------------------
A kernel module uses only C types and raw pointers (``from libc.stdint cimport int32_t,
int64_t``; no ``cimport numpy``, no memoryviews: their boilerplate costs seconds of C
compile), and what it needs of Python objects through the shared runtime
(``from sparsefold.compiler.runtime cimport ...``, ``runtime.pxd``; Cython finds it on the
include path :func:`runtime_source.write_include` makes): its Python-callable functions are
the runtime's ``sf_function`` objects (arrays converted through the buffer protocol) and
``sf_fast_entry``. Directives :data:`CYTHON_DIRECTIVES` apply (no bounds checks: inputs
are validated first).

C flags (:data:`CFLAGS`) are portable (no ``-march=native``), so a cache directory can be
shared by machines of one platform; the C compiler is ``$SPARSEFOLD_CC``, else ``$CC``, else
``gcc``; its name is not part of the key (any compiler of the platform ABI will do).
"""

from __future__ import annotations

import contextlib
import contextvars
import errno
import functools
import hashlib
import importlib.machinery
import importlib.util
import json
import os
import re
import secrets
import shlex
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import threading
import time
import types
from pathlib import Path

import numpy as np

from sparsefold.compiler.emit import runtime_source as _runtime
from sparsefold.compiler.run import cache as _cache
from sparsefold.spec.errors import IllFormedProgram, InternalError

__all__ = [
    "CFLAGS", "GCC_GLUE_LEVEL", "split_levels", "CYTHON_DIRECTIVES",
    "load_module", "kernel_key",
    "module_name_for", "environment_fields", "compiler_version", "data_pointer", "stats",
    "COMPILER_VERSION", "clear_memory_cache", "NotPrebuilt", "register_prebuilt",
    "prebuilt_only", "source_digest", "OPENMP_FLAGS", "openmp_flags", "active_cflags",
    "numpy_include", "requested_openmp", "ensure_runtime", "RUNTIME_CFLAGS",
    "runtime_defines", "build_log", "no_build", "WouldBuild",
]

# The compiler's version: printed in every kernel's header and recorded in every cache entry.
COMPILER_VERSION = "0.1.0"
# Bump when the way a source becomes a module changes without the source changing.
_BUILD_FORMAT = "build-5"  # 2: gcc builds glue at -O1, loops at -O2 (split_levels); 3: the
# glue at -Og; 4: fused helpers' specializations at -O2 too; 5: kernels cimport the
# shared runtime

CYTHON_DIRECTIVES = {"boundscheck": False, "wraparound": False, "cdivision": True,
                     "initializedcheck": False}
# -O2, not -O3: -O3 adds ~30% to C compile time for no measured gain on our loop shapes.
# -fwrapv: signed integer overflow wraps, as NumPy's integer arithmetic does (in C it is UB).
# -fvect-cost-model=cheap: gcc's -O2 default ("very-cheap") refuses any loop that needs an
# alias check or a remainder loop, i.e. every copy loop with an unknown trip count; the
# coordinate copy-and-range-check loops (checks.py) then run scalar, 2-3x slower than memcpy.
CFLAGS: tuple[str, ...] = ("-O2", "-fvect-cost-model=cheap", "-shared", "-fPIC",
                           "-fno-strict-aliasing", "-fwrapv", "-DNDEBUG", "-w")
if sys.platform == "darwin":  # pragma: no cover - extensions resolve Python at load time
    CFLAGS += ("-undefined", "dynamic_lookup")

_CC_TIMEOUT_S = 600

# Kernels with a parallel row loop (``loops.For(parallel=True)``, printed as Cython's
# ``prange``) run it on OpenMP threads when built with these flags; without them Cython's C
# compiles the same loop serially (its OpenMP pragmas sit under ``#ifdef _OPENMP``), so a
# compiler without OpenMP still builds every kernel, single-threaded. The flags in use are
# part of the cache key (:func:`environment_fields`): a serial build is never served to a
# process that could run threads, nor the other way round.
OPENMP_FLAGS: tuple[str, ...] = ("-fopenmp",)


def _compiler() -> str:
    return os.environ.get("SPARSEFOLD_CC") or os.environ.get("CC") or "gcc"


@functools.lru_cache(maxsize=8)
def _openmp_runtime(compiler: str) -> bool:
    """Does ``compiler`` find an OpenMP runtime to link (libgomp for gcc, libomp for
    clang)? Asked once per process and compiler (``-print-file-name``: ~5 ms, no compile)."""
    for lib in ("libgomp.so", "libomp.so", "libgomp.dylib", "libomp.dylib"):
        try:
            done = subprocess.run([*shlex.split(compiler), f"-print-file-name={lib}"],
                                  capture_output=True, text=True, timeout=60)
        except (OSError, subprocess.TimeoutExpired, ValueError):
            return False
        path = done.stdout.strip()
        if done.returncode == 0 and os.path.isabs(path) and os.path.exists(path):
            return True
    return False


def requested_openmp() -> tuple[str, ...]:
    """:data:`OPENMP_FLAGS` unless ``$SPARSEFOLD_OPENMP`` is ``0``: what the cache key
    records. Asking the compiler is left to the build (:func:`openmp_flags`), so a process
    without a C compiler (kernels built ahead into a shared cache) still finds its entries."""
    return () if os.environ.get("SPARSEFOLD_OPENMP", "1") == "0" else OPENMP_FLAGS


def openmp_flags() -> tuple[str, ...]:
    """The OpenMP flags a build here uses: :func:`requested_openmp`, dropped when the C
    compiler has no OpenMP runtime (the kernel is then built single-threaded, under the
    same key: one machine's cache holds one build per key either way)."""
    flags = requested_openmp()
    return flags if flags and _openmp_runtime(_compiler()) else ()


# Compile time (issue #11: <= 3 s per kernel). Most of a module's C is Cython's glue — module
# init, argument parsing of the ``def`` entries, the fast entry's attribute reads — which runs
# once per call, not per entry; gcc spent ~2/3 of a kernel's 3-5 s optimizing it at -O2.
# With gcc the module is compiled at :data:`GCC_GLUE_LEVEL` and every ``cdef`` function (Cython
# names them ``__pyx_f_...``: the loop bodies, the sort, the buffer helpers) is wrapped in
# ``#pragma GCC optimize ("O2")``, so the loops are optimized as before (the OpenMP loop
# functions of add3 assemble to the same instructions under an -O1 and an -Og base). Other
# compilers (clang ignores the pragma) get -O2 everywhere.
# -Og, not -O1, for the glue (measured 2026-12-02, same C files alternated): ~0.5 s less gcc
# CPU time per kernel (median 2.4-2.7 s -> 1.6-2.0 s on add3, A*B+C, hstack, SpMV), for
# ~0.1-0.2 us more per call of the fast entry (SpMV's 2.5-2.9 us); -O0 would save ~0.3 s more
# but costs ~0.5-1 us a call. Keeping helpers that handle Python objects out of -O2 saved
# nothing measurable.
GCC_GLUE_LEVEL = "-Og"
# a cdef function's definition, unless it returns a Python object (the fast entry); a fused
# helper's specializations are ``__pyx_fuse_<k>__pyx_f_...``: left at -Og, gcc would not
# inline them into the -O2 loops — differing optimize options — and clip(A, lo, hi), a call
# per entry of sf_clip_f, ran at 26 ms on 2M entries where A * 2 took 3
_CDEF_DEFINITION = re.compile(
    r"^static (?!PyObject \*)[^;=]*\b(?:__pyx_fuse_\d+)?__pyx_f_\w+\([^;]*\) \{$")


@functools.lru_cache(maxsize=8)
def _is_gcc(compiler: str) -> bool:
    try:
        done = subprocess.run([*shlex.split(compiler), "--version"], capture_output=True,
                              text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired, ValueError):
        return False
    return done.returncode == 0 and "Free Software Foundation" in done.stdout


def split_levels(c_source: str) -> str:
    """``c_source`` with each ``cdef`` function definition compiled at -O2 (see above)."""
    out, inside = [], False
    for line in c_source.split("\n"):
        if not inside and _CDEF_DEFINITION.match(line):
            out.append('#pragma GCC push_options\n#pragma GCC optimize ("O2")')
            inside = True
        out.append(line)
        if inside and line == "}":
            out.append("#pragma GCC pop_options")
            inside = False
    if inside:  # a definition we could not delimit: leave the text as Cython wrote it
        return c_source
    return "\n".join(out)


def active_cflags(parallel: bool = True) -> tuple[str, ...]:
    """The C flags a kernel is built with in this process: :data:`CFLAGS` plus OpenMP's (for
    a kernel with a ``parallel`` loop), with :data:`GCC_GLUE_LEVEL` in place of -O2 when the
    compiler is gcc (its loops still get -O2: :func:`split_levels`)."""
    flags = tuple(CFLAGS)
    if _is_gcc(_compiler()):
        flags = tuple(GCC_GLUE_LEVEL if f == "-O2" else f for f in flags)
    return flags + (openmp_flags() if parallel else ())


# A precompiled Python.h (gcc): a kernel's C starts ``#define PY_SSIZE_T_CLEAN`` (empty) then
# ``#include "Python.h"``, so one built with that macro and the kernels' flags is valid for
# every kernel (gcc checks, and reads the header itself when it is not). Parsing Python.h was
# a fifth of gcc's work on a kernel (cc1 instructions, valgrind: 1427M -> 1140M on a row-loop
# kernel, 1337M -> 1047M on a co-iteration). Built once per compiler, flags and Python, into
# <cache root>/.pch/<key>/, atomically; anything failing there just means no PCH.
_pch_dirs: dict[tuple, Path | None] = {}
_pch_lock = threading.Lock()


def _pch_dir(compiler: str, flags: tuple[str, ...], include: str) -> Path | None:
    """A directory holding ``Python.h.gch`` for these flags, or None (not gcc, no cache)."""
    if os.environ.get("SPARSEFOLD_PCH", "1") == "0" or not _is_gcc(compiler):
        return None
    memo = (compiler, flags, include)
    with _pch_lock:
        if memo in _pch_dirs:
            return _pch_dirs[memo]
        found = None
        try:
            found = _build_pch(compiler, flags, include)
        except (OSError, subprocess.SubprocessError, _cache.CacheUnusable):
            found = None
        _pch_dirs[memo] = found
        return found


def _build_pch(compiler: str, flags: tuple[str, ...], include: str) -> Path | None:
    disk = _primary_cache()
    if disk is None:
        return None
    version = subprocess.run([*shlex.split(compiler), "--version"], capture_output=True,
                             text=True, timeout=60).stdout
    key = hashlib.sha256(json.dumps([version, flags, include, sys.version],
                                    sort_keys=True).encode()).hexdigest()[:24]
    target = disk.root / ".pch" / key
    if (target / "Python.h.gch").is_file():
        return target
    header = Path(include) / "Python.h"
    if not header.is_file():
        return None
    target.parent.mkdir(mode=0o700, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=".pch-", dir=target.parent))
    try:
        shutil.copyfile(header, work / "Python.h")
        done = subprocess.run([*shlex.split(compiler), *flags, "-DPY_SSIZE_T_CLEAN=",
                               "-x", "c-header", f"-I{include}", str(work / "Python.h"),
                               "-o", str(work / "Python.h.gch")],
                              capture_output=True, text=True, timeout=_CC_TIMEOUT_S)
        (work / "Python.h").unlink()
        if done.returncode != 0:
            return None
        try:
            os.rename(work, target)
        except OSError:  # another process put its own in place first
            if not (target / "Python.h.gch").is_file():
                return None
        return target
    finally:
        shutil.rmtree(work, ignore_errors=True)


def compiler_version() -> str:
    """The version of sparsefold's compiler, as recorded in every cache entry."""
    return f"{COMPILER_VERSION}+{_BUILD_FORMAT}"


def _cython_version() -> str:
    global _CYTHON_VERSION
    if _CYTHON_VERSION is None:
        # From the distribution metadata: a cache hit must not need Cython importable.
        from importlib.metadata import PackageNotFoundError, version
        try:
            _CYTHON_VERSION = version("Cython")
        except PackageNotFoundError:  # pragma: no cover - Cython is a dependency
            _CYTHON_VERSION = "absent"
    return _CYTHON_VERSION


_CYTHON_VERSION: str | None = None


def numpy_include() -> str:
    """NumPy's C headers, which the shared runtime includes (``runtime.pyx``)."""
    import numpy
    return numpy.get_include()


def _numpy_version() -> str:
    import numpy
    return numpy.__version__


def environment_fields() -> dict[str, object]:
    """Everything besides the source that decides the bytes of a built module."""
    return {
        "compiler_version": compiler_version(),
        "cython": _cython_version(),
        "python": f"{sys.implementation.cache_tag}{sys.abiflags}",
        "ext_suffix": sysconfig.get_config_var("EXT_SUFFIX"),
        "platform": sysconfig.get_platform(),
        "cflags": list(CFLAGS) + list(requested_openmp()),
        "runtime": _runtime.interface_digest()[:16],  # what kernels cimport (runtime.pxd)
        "directives": dict(sorted(CYTHON_DIRECTIVES.items())),
    }


def kernel_key(source: str, *, name_hint: str = "kernel") -> str:
    """The sha256 hex digest identifying the module built from ``source``."""
    material = {"source": source, "name_hint": name_hint, **environment_fields()}
    return hashlib.sha256(json.dumps(material, sort_keys=True).encode("utf-8")).hexdigest()


def module_name_for(key: str, name_hint: str = "kernel") -> str:
    """A valid, unique module name: the hint made an identifier, plus 96 bits of the key."""
    hint = re.sub(r"[^0-9A-Za-z_]", "_", name_hint)[:32] or "kernel"
    return f"sfk_{hint}_{key[:24]}"


# -- counters and the in-memory table --------------------------------------------------

_stats = {"memory_hits": 0, "disk_hits": 0, "builds": 0, "fallbacks": 0, "prebuilt_hits": 0}
_stats_lock = threading.Lock()
_by_source: dict[tuple[str, str], types.ModuleType] = {}
_key_locks: dict[tuple[str, str], threading.Lock] = {}
_key_locks_guard = threading.Lock()
_unusable_roots: dict[Path, str] = {}
_cython_lock = threading.Lock()  # Cython's compiler keeps global state: one run at a time


_log: list[dict] = []  # every build of this process (build_log)


def build_log() -> list[dict]:
    """The modules this process built, in order: ``{"name_hint", "cython_seconds",
    "cc_seconds", "load_seconds"}`` each (the list itself: clear it to start afresh)."""
    return _log


def _logged(build, load):
    """``build`` and ``load`` for ``DiskCache.get_or_build`` that record a build's seconds
    in :func:`build_log` (a disk hit records nothing)."""
    done: dict = {}

    def logged_build(build_dir: Path):
        so_name, extra = build(build_dir)
        done.update(extra)
        return so_name, extra

    def logged_load(so_path: Path):
        started = time.perf_counter()
        module = load(so_path)
        if done:
            with _stats_lock:
                _log.append({**done, "load_seconds": round(time.perf_counter() - started, 4)})
        return module
    return logged_build, logged_load


def _after_fork_in_child() -> None:
    """A forked child gets this process's locks in whatever state they were, held by
    threads it does not have (a background build holds its source's lock and Cython's):
    it starts with fresh ones, and no module built by a thread it does not have."""
    global _key_locks_guard, _stats_lock, _cython_lock, _prebuilt_lock
    _key_locks_guard, _stats_lock, _cython_lock, _prebuilt_lock = (
        threading.Lock(), threading.Lock(), threading.Lock(), threading.Lock())
    _key_locks.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def _count(name: str) -> None:
    with _stats_lock:
        _stats[name] += 1


def stats() -> dict[str, int]:
    """A snapshot of this process's counters: memory_hits, disk_hits, builds, fallbacks,
    prebuilt_hits (sources served by a registered ahead-of-time module)."""
    with _stats_lock:
        return dict(_stats)


def clear_memory_cache() -> None:
    """Forget loaded modules, counters and per-process cache decisions (for tests).

    Modules already handed out stay valid; the next ``load_module`` goes to disk again.
    """
    with _key_locks_guard, _stats_lock:
        _by_source.clear()
        _key_locks.clear()
        _unusable_roots.clear()
        for name in _stats:
            _stats[name] = 0


def load_module(source: str, *, name_hint: str = "kernel") -> types.ModuleType:
    """Compile (or fetch from cache) the Cython module ``source`` and return it imported."""
    if not isinstance(source, str):
        raise TypeError(f"load_module expects the Cython source as str, got {type(source)}")
    memo = (source, name_hint)
    module = _by_source.get(memo)
    if module is None:
        with _key_locks_guard:
            lock = _key_locks.setdefault(memo, threading.Lock())
        probing = _NO_BUILD.get()
        # a probe never waits: a thread holding the lock may be compiling this source
        if not lock.acquire(blocking=not probing):
            raise WouldBuild(source, name_hint)
        try:
            module = _by_source.get(memo)
            if module is None:
                module = _from_prebuilt(source)
                if module is None:
                    module = _load_cached(source, name_hint) if probing else \
                        _load_uncached(source, name_hint)
                _by_source[memo] = module
                return module
        finally:
            lock.release()
    _count("memory_hits")
    return module


# -- probing without building (tiered calls: sparsefold/tiering.py) -----------------------

class WouldBuild(Exception):
    """Inside :func:`no_build`: serving ``source`` needs Cython and the C compiler (it is
    not loaded, not prebuilt and not intact in the disk cache), or another thread of this
    process is building or loading it. Not an error of the program or the data: the caller
    decides whether to build it (``load_module`` outside ``no_build``)."""

    def __init__(self, source: str, name_hint: str):
        super().__init__(f"kernel {name_hint!r} is not built yet")
        self.source, self.name_hint = source, name_hint


_NO_BUILD: contextvars.ContextVar[bool] = contextvars.ContextVar("sparsefold_no_build",
                                                                default=False)


@contextlib.contextmanager
def no_build():
    """Within the block (this thread or task), :func:`load_module` raises
    :class:`WouldBuild` instead of compiling, and instead of waiting for another thread's
    build of the same source; what is loaded, prebuilt or intact on disk is served."""
    token = _NO_BUILD.set(True)
    try:
        yield
    finally:
        _NO_BUILD.reset(token)


def _load_cached(source: str, name_hint: str) -> types.ModuleType:
    """The module of ``source`` from an intact disk-cache entry, else :class:`WouldBuild`.

    Read without the entry's file lock, as a read-only cache root is: an entry appears by an
    atomic rename of a complete directory, is never modified in place, and its shared
    object's name is unique per build, so a reader sees a complete entry or none (one
    removed while it is read fails to import, and counts as missing)."""
    key = kernel_key(source, name_hint=name_hint)
    module_name = module_name_for(key, name_hint)
    expect = {"key": key, "module": module_name, **environment_fields()}
    disk = _primary_cache()
    if disk is None:
        disk = _cache.existing_fallback_cache()
    if disk is not None:
        entry = disk.entry(module_name)
        if _cache.verify_entry(entry, expect) is None:
            try:
                so_path = entry / _cache.read_manifest(entry)["so"]
                module = _import_extension(module_name, so_path)
            except (ImportError, OSError, ValueError, KeyError):
                pass  # removed or replaced meanwhile, or does not load here: not served
            else:
                _count("disk_hits")
                return module
    raise WouldBuild(source, name_hint)


# -- prebuilt (ahead-of-time) modules: DESIGN §3.7, compiler/aot.py ----------------------

class NotPrebuilt(IllFormedProgram):
    """Inside :func:`prebuilt_only`: a kernel this call needs was not built ahead of time
    (and compiling it is not allowed)."""


_prebuilt: dict[str, dict[str, object]] = {}
_prebuilt_lock = threading.Lock()
_PREBUILT_ONLY: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "sparsefold_prebuilt_only", default=None)


def source_digest(source: str) -> str:
    """The identity of a generated source for prebuilt lookup: sha256 of its text."""
    return hashlib.sha256(source.encode("utf-8")).hexdigest()


def register_prebuilt(table: dict[str, dict[str, object]]) -> int:
    """Use these functions for the sources whose digests are the keys (``{digest: {"run":
    f, "count": g}}``, as an AOT module's ``_SF_VARIANTS``); returns how many were new.
    A digest already registered keeps its first functions (they come from the same text)."""
    with _prebuilt_lock:
        new = 0
        for digest, functions in table.items():
            if digest not in _prebuilt:
                _prebuilt[digest] = dict(functions)
                new += 1
        return new


@contextlib.contextmanager
def prebuilt_only(context: str):
    """Within the block (this thread or task), a source that is neither loaded already nor
    prebuilt raises :class:`NotPrebuilt` — whose message starts with ``context`` — instead
    of being compiled; the disk cache is not consulted either."""
    token = _PREBUILT_ONLY.set(context)
    try:
        yield
    finally:
        _PREBUILT_ONLY.reset(token)


def _from_prebuilt(source: str) -> types.ModuleType | None:
    only = _PREBUILT_ONLY.get()
    functions = None
    if _prebuilt:
        digest = source_digest(source)
        functions = _prebuilt.get(digest)
    if functions is None:
        if only is not None:
            head = re.search(r"^# sparsefold kernel: (.*)$", source, re.M)
            raise NotPrebuilt(f"{only}: this call needs a kernel that was not built ahead of "
                              f"time ({head.group(1) if head else 'a kernel'}; source sha256 "
                              f"{source_digest(source)[:16]})")
        return None
    module = types.ModuleType(f"sfk_prebuilt_{digest[:24]}")
    module.__dict__.update(functions)
    _count("prebuilt_hits")
    return module


def _load_uncached(source: str, name_hint: str) -> types.ModuleType:
    ensure_runtime()  # the kernel's module init imports it
    key = kernel_key(source, name_hint=name_hint)
    module_name = module_name_for(key, name_hint)
    expect = {"key": key, "module": module_name, **environment_fields()}

    def build(build_dir: Path) -> tuple[str, dict]:
        return _compile(build_dir, source, module_name, name_hint)

    def load(so_path: Path) -> types.ModuleType:
        return _import_extension(module_name, so_path)

    return _cached(module_name, expect, build, load)


def _cached(module_name, expect, build, load):
    """``disk.get_or_build`` in the primary cache, else in a per-process fallback."""
    build, load = _logged(build, load)
    disk = _primary_cache()
    if disk is not None:
        try:
            return _through(disk, module_name, expect, build, load)
        except _cache.CacheUnusable as exc:
            _give_up_on(disk.root, str(exc))
    _count("fallbacks")
    return _through(_cache.fallback_cache(), module_name, expect, build, load)


def _through(disk, module_name, expect, build, load) -> types.ModuleType:
    try:
        module, built = disk.get_or_build(module_name, expect, build, load)
    except ImportError as exc:  # a module we just built does not import: our bug
        raise InternalError(f"the freshly built kernel {module_name} does not import: "
                            f"{exc}") from exc
    _count("builds" if built else "disk_hits")
    return module


def _primary_cache():
    """The configured cache if it can be trusted, else None (after warning once)."""
    root = _cache.default_root()
    if root in _unusable_roots:
        return None
    try:
        return _cache.open_cache(root)
    except _cache.CacheUnusable as exc:
        _give_up_on(root, str(exc))
        return None


def _give_up_on(root: Path, reason: str) -> None:
    with _key_locks_guard:
        first = root not in _unusable_roots
        _unusable_roots[root] = reason
    if first:
        _cache.warn_fallback(reason)


# -- compiling and importing -----------------------------------------------------------

def _cythonize(pyx: Path, c_file: Path, module_name: str, include: Path) -> float:
    """Cython in this process (one run at a time): ``pyx`` to ``c_file``; its seconds."""
    started = time.perf_counter()
    with _cython_lock:
        try:
            from Cython.Compiler.Main import CompilationOptions, compile_single, default_options
        except ImportError as exc:
            raise InternalError(f"cannot compile kernels: Cython is not importable ({exc})") \
                from exc
        # Errors go to a listing file, not to this process's stderr, so they can be reported.
        options = CompilationOptions(
            default_options, language_level=3, compiler_directives=dict(CYTHON_DIRECTIVES),
            output_file=str(c_file), errors_to_stderr=False, use_listing_file=True,
            include_path=[str(include)])
        try:
            result = compile_single(str(pyx), options, module_name)
        except Exception as exc:
            raise InternalError(f"Cython crashed on the generated kernel {module_name}: "
                                f"{type(exc).__name__}: {exc}") from exc
    if result.num_errors or result.c_file is None:
        listing = Path(result.listing_file) if result.listing_file else None
        message = listing.read_text(errors="replace").strip() if listing and listing.exists() \
            else "(no message)"
        raise InternalError(f"Cython rejected the generated kernel {module_name}:\n{message}")
    return time.perf_counter() - started


def _compile(build_dir: Path, source: str, module_name: str, name_hint: str) -> tuple[str, dict]:
    """Cython then the C compiler, inside ``build_dir``; returns the .so name and timings."""
    pyx = build_dir / f"{module_name}.pyx"
    c_file = build_dir / f"{module_name}.c"
    _cache._write_private(pyx, source.encode("utf-8"))
    include = _runtime.write_include(build_dir / "include")
    cython_s = _cythonize(pyx, c_file, module_name, include)
    so_name = f"{module_name}.{secrets.token_hex(4)}{sysconfig.get_config_var('EXT_SUFFIX')}"
    compiler = _compiler()
    c_text = c_file.read_text()
    if _is_gcc(compiler):
        c_file.write_text(split_levels(c_text))
    # OpenMP only for a kernel with a parallel loop (~7% of gcc's work otherwise)
    flags = active_cflags(parallel="#pragma omp" in c_text)
    python_include = sysconfig.get_paths()["include"]
    pch = _pch_dir(compiler, flags, python_include)
    command = [*shlex.split(compiler), *flags, *([f"-I{pch}"] if pch else []),
               f"-I{python_include}", str(c_file), "-o", str(build_dir / so_name)]
    started = time.perf_counter()
    _run_compiler(command, compiler, module_name)
    for leftover in (c_file, build_dir / f"{module_name}.lis"):
        leftover.unlink(missing_ok=True)
    _remove_include(include)
    return so_name, {"name_hint": name_hint, "cython_seconds": round(cython_s, 3),
                     "cc_seconds": round(time.perf_counter() - started, 3)}


# -- the shared runtime (runtime.pyx) ------------------------------------------------------

# The runtime is compiled once, so at -O2 throughout (no glue split): its readers and result
# builders run on every fast-entry call, its sorts inside SpGEMM's rows.
RUNTIME_CFLAGS: tuple[str, ...] = tuple(CFLAGS)
_runtime_module: types.ModuleType | None = None
_runtime_lock = threading.Lock()


def runtime_defines(digest: str | None = None) -> dict[str, str]:
    """The C macros a build of the runtime gets: ``SF_RUNTIME_SOURCE``, the marker of the
    sources it was compiled from (``runtime_source.marker``)."""
    digest = digest or _runtime.source_digest() or "unknown"
    return {"SF_RUNTIME_SOURCE": f'"{_runtime.marker(digest)}"'}


def ensure_runtime() -> types.ModuleType:
    """The shared runtime every kernel module cimports, imported (see the module doc)."""
    global _runtime_module
    if _runtime_module is not None:
        return _runtime_module
    with _runtime_lock:
        if _runtime_module is None:
            found = sys.modules.get(_runtime.MODULE)
            if found is None or not _runtime.built_from_current_sources(found.__file__):
                found = None
                spec = importlib.util.find_spec(_runtime.MODULE)
                if spec is not None and spec.origin and \
                        _runtime.built_from_current_sources(spec.origin):
                    found = importlib.import_module(_runtime.MODULE)
            if found is None:  # not installed, or built from other sources: build it here
                found = _built_runtime()
                sys.modules[_runtime.MODULE] = found
            _runtime_module = found
    return _runtime_module


def _built_runtime() -> types.ModuleType:
    digest = _runtime.source_digest()
    if digest is None:
        raise InternalError(f"the shared runtime {_runtime.MODULE} is not installed and its "
                            f"sources are not either; reinstall sparsefold")
    fields = {**environment_fields(), "numpy": _numpy_version(), "runtime": digest}
    key = hashlib.sha256(json.dumps(fields, sort_keys=True).encode("utf-8")).hexdigest()
    entry_name = module_name_for(key, "runtime")
    expect = {"key": key, "module": _runtime.MODULE, **fields}

    def build(build_dir: Path) -> tuple[str, dict]:
        package = build_dir / "sparsefold" / "compiler"
        package.mkdir(parents=True)
        for source in (_runtime.PYX, _runtime.PXD):
            _cache._write_private(package / source.name, source.read_bytes())
        c_file = build_dir / "runtime.c"
        cython_s = _cythonize(package / _runtime.PYX.name, c_file, _runtime.MODULE, build_dir)
        so_name = f"{entry_name}.{secrets.token_hex(4)}{sysconfig.get_config_var('EXT_SUFFIX')}"
        compiler = _compiler()
        defines = [f"-D{k}={v}" for k, v in runtime_defines(digest).items()]
        command = [*shlex.split(compiler), *RUNTIME_CFLAGS, *openmp_flags(), *defines,
                   f"-I{sysconfig.get_paths()['include']}", f"-I{numpy_include()}",
                   str(c_file), "-o", str(build_dir / so_name)]
        started = time.perf_counter()
        _run_compiler(command, compiler, _runtime.MODULE)
        c_file.unlink(missing_ok=True)
        shutil.rmtree(build_dir / "sparsefold")  # the entry keeps the .so and the source
        _cache._write_private(build_dir / f"{entry_name}.pyx", _runtime.PYX.read_bytes())
        return so_name, {"name_hint": "runtime", "cython_seconds": round(cython_s, 3),
                         "cc_seconds": round(time.perf_counter() - started, 3)}

    def load(so_path: Path) -> types.ModuleType:
        return _import_extension(_runtime.MODULE, so_path)

    return _cached(entry_name, expect, build, load)


def _remove_include(directory: Path) -> None:
    pxd = directory / "sparsefold" / "compiler" / "runtime.pxd"
    pxd.unlink(missing_ok=True)
    for d in (pxd.parent, pxd.parent.parent, directory):
        with contextlib.suppress(OSError):
            d.rmdir()


def _run_compiler(command: list[str], compiler: str, module_name: str) -> None:
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=_CC_TIMEOUT_S)
    except (FileNotFoundError, PermissionError) as exc:
        raise InternalError(f"cannot compile kernels: no C compiler {compiler!r} ({exc}); "
                            "set SPARSEFOLD_CC") from exc
    except subprocess.TimeoutExpired as exc:
        raise InternalError(f"the C compiler took over {_CC_TIMEOUT_S} s on the generated "
                            f"kernel {module_name}") from exc
    if done.returncode != 0:
        message = (done.stderr or done.stdout).strip()
        if _cache.is_disk_problem(message):
            raise OSError(errno.ENOSPC, f"the C compiler could not write: {message[-500:]}")
        raise InternalError(f"the C compiler failed on the generated kernel {module_name} "
                            f"(exit {done.returncode}; {shlex.join(command)}):\n"
                            f"{message[-4000:]}")


def _import_extension(module_name: str, so_path: Path) -> types.ModuleType:
    loader = importlib.machinery.ExtensionFileLoader(module_name, str(so_path))
    spec = importlib.util.spec_from_file_location(module_name, str(so_path), loader=loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    sys.modules[module_name] = module  # so functions' __module__ resolves (pickling, repr)
    return module


# -- passing arrays ----------------------------------------------------------------------

def data_pointer(array: np.ndarray, *, writable: bool = False) -> int:
    """The address of ``array``'s first element, as a Python int for a ``size_t`` argument.

    ``array`` must be contiguous (C or Fortran order) and aligned, and writable if the
    kernel writes through the pointer; anything else here is a bug of the caller, which
    must copy first. The caller keeps ``array`` alive while the kernel runs.
    """
    flags = array.flags
    if not (flags.c_contiguous or flags.f_contiguous) or not flags.aligned:
        raise InternalError("data_pointer: expected a contiguous, aligned array, got strides "
                            f"{array.strides} for dtype {array.dtype}")
    if writable and not flags.writeable:
        raise InternalError("data_pointer: the kernel writes to this array but it is read-only")
    return array.ctypes.data

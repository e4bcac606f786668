"""The on-disk kernel cache (DESIGN §3 step 6; issue #6 §4): where compiled kernels live,
how an entry is proved intact before its shared object is loaded (the ``sparsefold cache``
subcommand is ``cache_cli.py``).

Layout of a cache root (``$SPARSEFOLD_CACHE_DIR``, else the user cache dir)::

    <root>/                         created 0700; refused if group/other-writable or not ours
      <module>/                     one entry per key; <module> = "sfk_<hint>_<24 hex of key>"
        <module>.pyx                the generated source (kept for reading and debugging)
        <module>.<id><EXT_SUFFIX>   the shared object; <id> is unique per build, so a rebuilt
                                    entry never aliases an already-dlopen'ed file of the same
                                    name inside one process
        manifest.json               key, versions, flags, the .so's name, size and sha256
      .locks/<module>.lock          one file lock per key: parallel processes build once
      .build-*/                     a build in progress (renamed into place when complete);
                                    one left by a killed process is removed after 6 hours
      .failed-<module>/             the source of the last build that failed (kept for the bug)
      .pch/<key>/Python.h.gch       a precompiled Python.h per C compiler and flags (build.py)

Writes are atomic: an entry is built in a fresh ``.build-*`` directory and renamed into place
under the key's lock, so readers see either no entry or a complete one. An entry is loaded
only if :func:`verify_entry` finds nothing wrong: the directory and files are ours and not
writable by group/others (loading a shared object runs its code), the manifest parses and
matches the expected key and versions, and the .so has the recorded size and sha256. A
truncated, corrupted, stale or half-written entry is therefore rebuilt, never loaded.

Files are never rewritten in place (a new file is renamed over), because truncating a shared
object that some process has mapped would crash that process.

When the root cannot be used (unsafe permissions, read-only, disk full), the caller
(``build.py``) falls back to a private per-process temporary root with a
:class:`CacheWarning`; results stay correct, only the reuse across processes is lost.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import shutil
import stat
import tempfile
import threading
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from sparsefold.spec.errors import InternalError

__all__ = [
    "CacheUnusable", "CacheWarning", "DiskCache", "EntryInfo", "MANIFEST", "MANIFEST_FORMAT",
    "default_root", "fallback_cache", "existing_fallback_cache", "open_cache", "verify_entry",
    "read_manifest",
]

MANIFEST = "manifest.json"
MANIFEST_FORMAT = 1
_LOCK_TIMEOUT_S = 600.0  # a build takes seconds; after this long the holder is presumed stuck
# a build directory this old is abandoned (its process was killed): the C compiler's own
# timeout is 600 s (build.py), a lock is waited for 600 s at most
_ABANDONED_AFTER_S = 6 * 3600.0
_PRIVATE_BITS = stat.S_IWGRP | stat.S_IWOTH
# sfk_: see build.module_name_for; .pch: build.py's precompiled Python.h
_OUR_PREFIXES = ("sfk_", ".build-", ".failed-", ".trash-", ".pch")

T = TypeVar("T")


class CacheWarning(UserWarning):
    """The kernel cache could not be used as configured; a private temporary one is used."""


class CacheUnusable(Exception):
    """A cache root cannot hold kernels (unsafe permissions, read-only, disk full, ...)."""


def default_root() -> Path:
    """The configured cache root: ``$SPARSEFOLD_CACHE_DIR`` if set, else the user cache dir."""
    configured = os.environ.get("SPARSEFOLD_CACHE_DIR")
    if configured:
        return Path(configured).expanduser()
    try:
        import platformdirs
        return Path(platformdirs.user_cache_dir("sparsefold", appauthor=False))
    except ImportError:  # pragma: no cover - platformdirs is a dependency
        return Path.home() / ".cache" / "sparsefold"


def _unsafe_reason(path: Path, st: os.stat_result) -> str | None:
    """Why ``path`` (with status ``st``) must not be trusted, or None if it is private."""
    if hasattr(os, "geteuid") and st.st_uid != os.geteuid():
        return f"{path} is owned by uid {st.st_uid}, not by this user"
    if st.st_mode & _PRIVATE_BITS:
        return f"{path} is writable by group or others (mode {stat.S_IMODE(st.st_mode):o})"
    return None


def _sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def verify_entry(entry: Path, expect: dict[str, object]) -> str | None:
    """Check a cache entry before anything in it is loaded.

    Returns None when ``entry`` is complete, private and matches every field of ``expect``
    (e.g. key, compiler version, Cython version, ABI, flags); otherwise a one-line reason.
    """
    try:
        st = entry.lstat()
    except FileNotFoundError:
        return "no entry"
    if not stat.S_ISDIR(st.st_mode):
        return f"{entry} is not a directory"
    if (reason := _unsafe_reason(entry, st)) is not None:
        return reason
    manifest_path = entry / MANIFEST
    try:
        st = manifest_path.lstat()
        if not stat.S_ISREG(st.st_mode):
            return f"{manifest_path} is not a regular file"
        if (reason := _unsafe_reason(manifest_path, st)) is not None:
            return reason
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return "incomplete entry: no manifest"
    except (OSError, ValueError) as exc:
        return f"unreadable manifest: {exc}"
    if not isinstance(manifest, dict) or manifest.get("format") != MANIFEST_FORMAT:
        return "manifest format is not " + str(MANIFEST_FORMAT)
    for field, want in expect.items():
        if manifest.get(field) != want:
            return f"stale entry: {field} is {manifest.get(field)!r}, expected {want!r}"
    so_name = manifest.get("so")
    if not isinstance(so_name, str) or not so_name or os.path.basename(so_name) != so_name:
        return "manifest names no shared object"
    so_path = entry / so_name
    try:
        st = so_path.lstat()
    except FileNotFoundError:
        return "incomplete entry: shared object missing"
    if not stat.S_ISREG(st.st_mode):
        return f"{so_path} is not a regular file"
    if (reason := _unsafe_reason(so_path, st)) is not None:
        return reason
    if st.st_size != manifest.get("so_size"):
        return f"corrupted entry: shared object has {st.st_size} bytes, manifest says " \
               f"{manifest.get('so_size')}"
    if _sha256_file(so_path) != manifest.get("so_sha256"):
        return "corrupted entry: shared object sha256 differs from the manifest"
    return None


def read_manifest(entry: Path) -> dict:
    """The manifest of a cache entry (check the entry with :func:`verify_entry` first)."""
    return json.loads((entry / MANIFEST).read_text(encoding="utf-8"))


_read_manifest = read_manifest


def _remove_tree(path: Path) -> None:
    """Remove a directory so it disappears atomically (rename first, then delete)."""
    trash = path.with_name(f".trash-{path.name}-{os.getpid()}-{time.monotonic_ns()}")
    try:
        os.rename(path, trash)
    except FileNotFoundError:
        return
    shutil.rmtree(trash, ignore_errors=True)


def _write_private(path: Path, data: bytes) -> None:
    """Create ``path`` (which must not exist) readable and writable by this user only."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)


@dataclass(frozen=True, slots=True)
class EntryInfo:
    """One cache entry as ``sparsefold cache list`` shows it."""

    name: str
    path: Path
    size: int
    age_s: float
    status: str  # "ok", or the reason verify_entry rejected it, or "build in progress", ...


class DiskCache:
    """A cache root that has been checked to be private to this user (see :func:`open_cache`).

    ``get_or_build`` is the only way kernels enter or leave it.
    """

    def __init__(self, root: Path, *, temporary: bool = False):
        self.root = root
        self.temporary = temporary

    def __repr__(self) -> str:
        return f"DiskCache({str(self.root)!r}, temporary={self.temporary})"

    def entry(self, module_name: str) -> Path:
        return self.root / module_name

    def get_or_build(self, module_name: str, expect: dict[str, object],
                     build: Callable[[Path], tuple[str, dict]],
                     load: Callable[[Path], T]) -> tuple[T, bool]:
        """Load the entry for ``module_name`` if intact, else build and install it.

        ``build(build_dir)`` writes the source and shared object into the empty private
        ``build_dir`` and returns the .so's file name and extra manifest fields; it raises
        ``InternalError`` for bad generated code (the source is kept in ``.failed-*``).
        ``load(so_path)`` imports it. Returns ``(load result, whether a build happened)``.
        Raises :class:`CacheUnusable` when the root cannot be read or written.
        """
        import filelock
        entry = self.entry(module_name)
        try:
            lock = self._lock(module_name)
            lock.acquire()
        except filelock.Timeout as exc:  # before OSError: Timeout is a TimeoutError
            raise CacheUnusable(f"timed out waiting for the lock of {entry}: {exc}") from exc
        except OSError as exc:
            # A read-only root can still serve complete entries: they are never modified.
            if verify_entry(entry, expect) is None:
                try:
                    return load(entry / _read_manifest(entry)["so"]), False
                except ImportError:
                    pass  # and it cannot be rebuilt here
            raise CacheUnusable(f"cannot lock {entry}: {exc}") from exc
        try:
            if verify_entry(entry, expect) is None:
                try:
                    return load(entry / _read_manifest(entry)["so"]), False
                except ImportError:
                    pass  # intact bytes that do not load here (foreign libc, ...): rebuild
            try:
                so_path = self._build_and_install(entry, expect, build)
            except OSError as exc:
                raise CacheUnusable(f"cannot write to {self.root}: {exc}") from exc
            return load(so_path), True
        finally:
            lock.release()

    def _lock(self, module_name: str):
        import filelock
        locks = self.root / ".locks"
        locks.mkdir(mode=0o700, exist_ok=True)
        return filelock.FileLock(locks / f"{module_name}.lock", timeout=_LOCK_TIMEOUT_S,
                                 mode=0o600, thread_local=False)

    def _build_and_install(self, entry: Path, expect: dict[str, object],
                           build: Callable[[Path], tuple[str, dict]]) -> Path:
        self._sweep_abandoned()
        build_dir = Path(tempfile.mkdtemp(prefix=".build-", dir=self.root))  # created 0700
        try:
            started = time.perf_counter()
            try:
                so_name, extra = build(build_dir)
            except InternalError as exc:
                # Bad generated code: keep its source where the report can point to it.
                failed = self.root / f".failed-{entry.name}"
                _remove_tree(failed)
                os.rename(build_dir, failed)
                raise InternalError(f"{exc}\nThe generated source is kept at "
                                    f"{failed / (entry.name + '.pyx')}") from exc
            so_path = build_dir / so_name
            os.chmod(so_path, 0o700)  # the linker honours the umask, which may be permissive
            manifest = {"format": MANIFEST_FORMAT, **expect, **extra, "so": so_name,
                        "so_size": so_path.stat().st_size, "so_sha256": _sha256_file(so_path),
                        "created": time.time(),
                        "build_seconds": round(time.perf_counter() - started, 3)}
            # The manifest is written last: an entry without one is incomplete by definition.
            _write_private(build_dir / MANIFEST, json.dumps(manifest, indent=1).encode())
            _remove_tree(entry)  # an invalid entry we hold the lock for
            os.rename(build_dir, entry)
        finally:
            if build_dir.exists():
                shutil.rmtree(build_dir, ignore_errors=True)
        return entry / so_name

    def _sweep_abandoned(self) -> None:
        """Remove ``.build-*`` directories older than :data:`_ABANDONED_AFTER_S`: a process
        killed mid-build leaves its private build directory (never an entry); a live
        build is done, or has timed out, long before that age."""
        cutoff = time.time() - _ABANDONED_AFTER_S
        try:
            children = list(self.root.iterdir())
        except OSError:
            return
        for child in children:
            try:
                if child.name.startswith(".build-") and not child.is_symlink() and \
                        child.is_dir() and child.stat().st_mtime < cutoff:
                    _remove_tree(child)
            except OSError:
                continue  # removed meanwhile by another process

    def entries(self, expect: dict[str, object] | None = None) -> list[EntryInfo]:
        """Every entry and leftover build directory under the root, oldest first; a kernel
        entry's status is :func:`verify_entry` against ``expect`` (the environment of the
        current build, ``build.environment_fields()``), "not checked" without it."""
        found = []
        now = time.time()
        try:
            children = sorted(self.root.iterdir())
        except FileNotFoundError:
            return []
        for child in children:
            # Only names this module creates: the root may be shared with other files.
            if not child.name.startswith(_OUR_PREFIXES) or child.is_symlink() \
                    or not child.is_dir():
                continue
            size = sum(f.stat().st_size for f in child.iterdir() if f.is_file())
            if child.name.startswith(".build-"):
                status = "build in progress or abandoned"
            elif child.name.startswith(".failed-"):
                status = "failed build (source kept)"
            elif child.name.startswith(".trash-"):
                status = "being removed"
            elif child.name == ".pch":
                status = "precompiled headers"
            elif child.name.startswith("sfk_runtime_"):
                status = "the shared kernel runtime (a build of changed sources)"
            else:
                status = "not checked" if expect is None else \
                    verify_entry(child, expect) or "ok"
            found.append(EntryInfo(child.name, child, size, now - child.stat().st_mtime, status))
        return sorted(found, key=lambda info: -info.age_s)

    def clear(self) -> tuple[int, int]:
        """Remove every entry and leftover directory; returns (count, bytes freed)."""
        count = freed = 0
        for info in self.entries():
            _remove_tree(info.path)
            count += 1
            freed += info.size
        return count, freed


def open_cache(root: Path | None = None) -> DiskCache:
    """Create (0700) or check the cache root; raises :class:`CacheUnusable` if it cannot be
    trusted (not ours, writable by group/others) or created."""
    root = Path(root) if root is not None else default_root()
    try:
        if not root.exists():
            root.mkdir(mode=0o700, parents=True, exist_ok=True)
            os.chmod(root, 0o700)
        st = root.stat()
    except OSError as exc:
        raise CacheUnusable(f"cannot create the cache directory {root}: {exc}") from exc
    if not stat.S_ISDIR(st.st_mode):
        raise CacheUnusable(f"{root} is not a directory")
    if (reason := _unsafe_reason(root, st)) is not None:
        raise CacheUnusable(f"refusing to load kernels from it: {reason}")
    return DiskCache(root)


_fallback: DiskCache | None = None
_fallback_guard = threading.Lock()


def fallback_cache() -> DiskCache:
    """This process's private temporary cache (created on first use, removed at exit)."""
    global _fallback
    with _fallback_guard:
        if _fallback is None:
            import atexit
            root = Path(tempfile.mkdtemp(prefix="sparsefold-cache-"))
            atexit.register(shutil.rmtree, root, ignore_errors=True)
            _fallback = DiskCache(root, temporary=True)
        return _fallback


def existing_fallback_cache() -> DiskCache | None:
    """This process's private temporary cache if :func:`fallback_cache` made one, else
    None (looking up an entry must not create it)."""
    with _fallback_guard:
        return _fallback


def warn_fallback(reason: str) -> None:
    """Say once, visibly, that kernels now go to a temporary directory and why."""
    warnings.warn(f"sparsefold kernel cache unusable ({reason}); compiled kernels go to a "
                  f"temporary directory for this process: {fallback_cache().root}",
                  CacheWarning, stacklevel=4)


def is_disk_problem(message: str) -> bool:
    """Whether a C compiler's complaint is about the disk, not about the code."""
    return any(text in message for text in (os.strerror(errno.ENOSPC),
                                            os.strerror(errno.EROFS),
                                            os.strerror(errno.EDQUOT)))

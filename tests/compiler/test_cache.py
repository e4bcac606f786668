"""Tests of the on-disk kernel cache (compiler/run/cache.py; issue #6 §4): damaged, stale,
half-written and forged entries are detected and rebuilt, never loaded; the cache directory is
private and an unsafe one is refused; read-only / full disks fall back to a temporary
directory with a warning; the ``sparsefold cache`` subcommand.

Most detection tests copy one entry built once per module and damage the copy, so they cost
no compilation; the end-to-end tests check that ``load_module`` then rebuilds and still
computes the right answer.
"""

import errno
import json
import os
import shutil
import stat
import tempfile
from pathlib import Path

import numpy as np
import pytest

from sparsefold.cli import main as cli_main
from sparsefold.compiler.run import build, cache
from sparsefold.compiler.run.cache import CacheWarning, verify_entry


def tiny(tag: str) -> str:
    """A minimal kernel module; ``tag`` only changes a comment (and so the cache key)."""
    return (f"# tiny cache-test kernel, tag {tag}\n\n"
            "def scale_sum(size_t x_addr, Py_ssize_t n, double factor):\n"
            "    cdef const double* x = <const double*>x_addr\n"
            "    cdef double acc = 0.0\n"
            "    cdef Py_ssize_t i\n"
            "    with nogil:\n"
            "        for i in range(n):\n"
            "            acc += x[i] * factor\n"
            "    return acc\n")


def _works(module) -> bool:
    x = np.arange(7.0)
    return module.scale_sum(build.data_pointer(x), 7, 2.0) == 2.0 * x.sum()


def _expect(source: str, hint: str = "tiny") -> dict:
    key = build.kernel_key(source, name_hint=hint)
    return {"key": key, "module": build.module_name_for(key, hint),
            **build.environment_fields()}


def _manifest(entry: Path) -> dict:
    return json.loads((entry / cache.MANIFEST).read_text())


def _so(entry: Path) -> Path:
    return entry / _manifest(entry)["so"]


def _replace_file(path: Path, data: bytes, mode: int = 0o600) -> None:
    # A new inode renamed over the old: this process may have the old .so mapped.
    tmp = path.with_name(path.name + ".new")
    tmp.write_bytes(data)
    os.chmod(tmp, mode)
    os.replace(tmp, path)


def _edit_manifest(entry: Path, **changes) -> None:
    manifest = _manifest(entry) | changes
    _replace_file(entry / cache.MANIFEST, json.dumps(manifest).encode())


SOURCE = tiny("entry")


@pytest.fixture(scope="module")
def built_entry(tmp_path_factory) -> Path:
    """One intact cache entry for SOURCE, built once; tests copy it before damaging it."""
    root = tmp_path_factory.mktemp("built") / "cache"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SPARSEFOLD_CACHE_DIR", str(root))
        build.clear_memory_cache()
        build.load_module(SOURCE, name_hint="tiny")
        build.clear_memory_cache()
    return root / _expect(SOURCE)["module"]


@pytest.fixture
def root(tmp_path, monkeypatch) -> Path:
    """An empty, not yet created cache root configured for this test."""
    path = tmp_path / "cache"
    monkeypatch.setenv("SPARSEFOLD_CACHE_DIR", str(path))
    build.clear_memory_cache()
    yield path
    build.clear_memory_cache()


def _planted(built_entry: Path, root: Path) -> Path:
    """A copy of the intact entry in ``root`` (created private), where load_module looks."""
    root.mkdir(mode=0o700, parents=True, exist_ok=True)
    return Path(shutil.copytree(built_entry, root / built_entry.name))


# -- detection, without building --------------------------------------------------------

@pytest.mark.cython
def test_intact_copy_verifies(built_entry, tmp_path):
    assert verify_entry(_planted(built_entry, tmp_path / "c"), _expect(SOURCE)) is None


def _truncate(entry):
    _replace_file(_so(entry), _so(entry).read_bytes()[:1000], 0o700)


def _flip_byte(entry):
    data = bytearray(_so(entry).read_bytes())
    data[len(data) // 2] ^= 0xFF
    _replace_file(_so(entry), bytes(data), 0o700)


def _symlink_so(entry):
    so = _so(entry)
    shutil.copy2(so, entry / "elsewhere.so")
    so.unlink()
    so.symlink_to(entry / "elsewhere.so")


DAMAGE = {
    "truncated .so": (_truncate, "corrupted entry: shared object has 1000 bytes"),
    "flipped byte": (_flip_byte, "shared object sha256 differs"),
    "no manifest (half-written)": (lambda e: (e / cache.MANIFEST).unlink(),
                                   "incomplete entry: no manifest"),
    "garbage manifest": (lambda e: _replace_file(e / cache.MANIFEST, b'{"format": 1,'),
                         "unreadable manifest"),
    "no .so (half-written)": (lambda e: _so(e).unlink(), "shared object missing"),
    "stale compiler version": (lambda e: _edit_manifest(e, compiler_version="0.0.1+build-0"),
                               "stale entry: compiler_version is '0.0.1+build-0'"),
    "stale Cython": (lambda e: _edit_manifest(e, cython="0.29.0"), "stale entry: cython"),
    "another key": (lambda e: _edit_manifest(e, key="0" * 64), "stale entry: key"),
    "old manifest format": (lambda e: _edit_manifest(e, format=0), "manifest format is not 1"),
    ".so outside the entry": (lambda e: _edit_manifest(e, so="../x.so"),
                              "manifest names no shared object"),
    ".so writable by others": (lambda e: os.chmod(_so(e), 0o702),
                               "writable by group or others (mode 702)"),
    "manifest writable by group": (lambda e: os.chmod(e / cache.MANIFEST, 0o620),
                                   "writable by group or others"),
    "entry dir writable by group": (lambda e: os.chmod(e, 0o770),
                                    "writable by group or others (mode 770)"),
    ".so is a symlink": (_symlink_so, "is not a regular file"),
}


@pytest.mark.cython
@pytest.mark.parametrize("damage", list(DAMAGE))
def test_damaged_entry_is_rejected(built_entry, tmp_path, damage):
    entry = _planted(built_entry, tmp_path / "c")
    apply, reason = DAMAGE[damage]
    apply(entry)
    assert reason in verify_entry(entry, _expect(SOURCE))


@pytest.mark.cython
@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0,
                    reason="changing a file's owner needs root")
def test_entry_owned_by_someone_else_is_rejected(built_entry, tmp_path):
    entry = _planted(built_entry, tmp_path / "c")
    os.chown(_so(entry), 65534, 65534)
    assert "owned by uid 65534, not by this user" in verify_entry(entry, _expect(SOURCE))


# -- end to end: damaged entries are rebuilt, and the result is right ----------------------

@pytest.mark.cython
@pytest.mark.parametrize("damage", ["truncated .so", "stale compiler version",
                                    "no manifest (half-written)", ".so writable by others"])
def test_load_module_rebuilds_damaged_entry(built_entry, root, damage):
    entry = _planted(built_entry, root)
    old_so = _so(entry).name if damage != "no manifest (half-written)" else None
    DAMAGE[damage][0](entry)
    (root / ".build-abandoned").mkdir(mode=0o700)  # a crashed build's leftover: ignored
    (root / ".build-abandoned" / "junk.c").write_text("half")
    module = build.load_module(SOURCE, name_hint="tiny")
    assert _works(module)
    assert build.stats()["builds"] == 1 and build.stats()["disk_hits"] == 0
    assert verify_entry(entry, _expect(SOURCE)) is None
    assert _so(entry).name != old_so  # a new file, never the damaged one reused
    assert not stat.S_IMODE(_so(entry).stat().st_mode) & 0o077


@pytest.mark.cython
def test_intact_entry_that_does_not_import_is_rebuilt(built_entry, root):
    # A forged entry whose manifest matches its bytes: it passes verification, fails dlopen.
    entry = _planted(built_entry, root)
    _replace_file(_so(entry), b"not an ELF file", 0o700)
    _edit_manifest(entry, so_size=15, so_sha256=cache._sha256_file(_so(entry)))
    assert verify_entry(entry, _expect(SOURCE)) is None
    assert _works(build.load_module(SOURCE, name_hint="tiny"))
    assert build.stats()["builds"] == 1


@pytest.mark.cython
def test_intact_planted_entry_is_loaded_without_building(built_entry, root):
    _planted(built_entry, root)
    assert _works(build.load_module(SOURCE, name_hint="tiny"))
    assert build.stats() == {"memory_hits": 0, "disk_hits": 1, "builds": 0, "fallbacks": 0,
                             "prebuilt_hits": 0}


# -- permissions -----------------------------------------------------------------------------

@pytest.mark.cython
def test_cache_directory_and_entries_are_private(tmp_path, monkeypatch):
    old_umask = os.umask(0)  # the most permissive umask: modes must not depend on it
    try:
        root = tmp_path / "deep" / "er" / "cache"
        monkeypatch.setenv("SPARSEFOLD_CACHE_DIR", str(root))
        build.clear_memory_cache()
        build.load_module(tiny("private"), name_hint="tiny")
    finally:
        os.umask(old_umask)
        build.clear_memory_cache()
    assert stat.S_IMODE(root.stat().st_mode) == 0o700
    entry = root / _expect(tiny("private"))["module"]
    assert stat.S_IMODE(entry.stat().st_mode) == 0o700
    assert stat.S_IMODE((root / ".locks").stat().st_mode) == 0o700
    for path in entry.iterdir():
        assert not stat.S_IMODE(path.stat().st_mode) & 0o077, path


@pytest.mark.cython
@pytest.mark.parametrize("mode", [0o777, 0o770, 0o702])
def test_group_or_world_writable_cache_dir_is_refused(built_entry, root, mode):
    entry = _planted(built_entry, root)  # intact, but anyone could have replaced it
    os.chmod(root, mode)
    with pytest.warns(CacheWarning, match=f"writable by group or others \\(mode {mode:o}\\)"):
        module = build.load_module(SOURCE, name_hint="tiny")
    assert _works(module)
    # Loaded from the process's private fallback (built there now or by an earlier test).
    assert build.stats()["fallbacks"] == 1
    assert Path(module.__file__).parent.parent == cache.fallback_cache().root
    assert Path(module.__file__).parent != entry


# -- read-only and full disks -----------------------------------------------------------------

def _fail_writes_under(monkeypatch, root: Path, code: int) -> None:
    """Make every way the cache writes under ``root`` fail with ``code`` (root is exempt
    from permission bits, so chmod cannot simulate a read-only directory for it)."""
    error = OSError(code, os.strerror(code))
    real_mkdtemp, real_lock = tempfile.mkdtemp, cache.DiskCache._lock

    def mkdtemp(*args, dir=None, **kwargs):
        if dir is not None and Path(dir) == root:
            raise error
        return real_mkdtemp(*args, dir=dir, **kwargs)

    def lock(self, module_name):
        if self.root == root:
            raise error
        return real_lock(self, module_name)

    monkeypatch.setattr(cache.tempfile, "mkdtemp", mkdtemp)
    monkeypatch.setattr(cache.DiskCache, "_lock", lock)


@pytest.mark.cython
def test_read_only_cache_dir_falls_back_with_one_warning(root, monkeypatch):
    root.mkdir(mode=0o700)
    _fail_writes_under(monkeypatch, root, errno.EROFS)
    with pytest.warns(CacheWarning, match="Read-only file system"):
        assert _works(build.load_module(tiny("ro-1"), name_hint="tiny"))
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # said once per process and directory
        assert _works(build.load_module(tiny("ro-2"), name_hint="tiny"))
    assert build.stats()["builds"] == 2 and build.stats()["fallbacks"] == 2
    assert list(root.iterdir()) == []


@pytest.mark.cython
def test_read_only_cache_dir_still_serves_intact_entries(built_entry, root, monkeypatch):
    _planted(built_entry, root)
    _fail_writes_under(monkeypatch, root, errno.EROFS)
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert _works(build.load_module(SOURCE, name_hint="tiny"))
    assert build.stats() == {"memory_hits": 0, "disk_hits": 1, "builds": 0, "fallbacks": 0,
                             "prebuilt_hits": 0}


@pytest.mark.cython
def test_really_read_only_cache_dir_falls_back(root):
    root.mkdir(mode=0o500)
    try:
        try:
            (root / "probe").mkdir()
        except PermissionError:
            pass
        else:
            pytest.skip("directory permissions are not enforced for this user (root?)")
        with pytest.warns(CacheWarning, match="Permission denied"):
            assert _works(build.load_module(tiny("chmod-ro"), name_hint="tiny"))
    finally:
        os.chmod(root, 0o700)


@pytest.mark.cython
def test_disk_full_while_writing_falls_back(root, monkeypatch):
    real_write = cache._write_private

    def write_private(path, data):
        if root in Path(path).parents:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real_write(path, data)

    monkeypatch.setattr(cache, "_write_private", write_private)
    with pytest.warns(CacheWarning, match="No space left on device"):
        assert _works(build.load_module(tiny("full"), name_hint="tiny"))
    assert not any(p.name.startswith(("sfk_", ".build-")) for p in root.iterdir())


@pytest.mark.cython
def test_disk_full_reported_by_the_c_compiler_falls_back(root, monkeypatch, tmp_path):
    # A compiler wrapper that runs out of space when writing into the configured cache only.
    wrapper = tmp_path / "cc-full"
    wrapper.write_text(f'#!/bin/sh\ncase "$*" in *"{root}"*)\n'
                       '  echo "ld: final link failed: No space left on device" >&2; exit 1;;\n'
                       'esac\nexec gcc "$@"\n')
    wrapper.chmod(0o700)
    monkeypatch.setenv("SPARSEFOLD_CC", str(wrapper))
    with pytest.warns(CacheWarning, match="No space left on device"):
        assert _works(build.load_module(tiny("cc-full"), name_hint="tiny"))
    assert build.stats()["fallbacks"] == 1


# -- the `sparsefold cache` subcommand -----------------------------------------------------

@pytest.mark.cython
def test_cli_dir_list_clear(built_entry, root, capsys):
    assert cli_main(["cache", "dir"]) == 0
    assert capsys.readouterr().out.strip() == str(root)
    entry = _planted(built_entry, root)
    damaged = Path(shutil.copytree(entry, root / "sfk_tiny_000000000000000000000000"))
    _truncate(damaged)
    (root / ".build-leftover").mkdir()
    (root / "not-ours").mkdir()  # the root may hold other things: never listed or removed
    (root / "not-ours" / "keep.txt").write_text("x")
    assert cli_main(["cache", "list"]) == 0
    out = capsys.readouterr().out
    assert f"{entry.name}" in out and " ok" in out
    assert "corrupted entry" in out and "abandoned" in out
    assert "3 entries" in out and "not-ours" not in out
    assert cli_main(["cache", "clear"]) == 0
    assert "removed 3 entries" in capsys.readouterr().out
    assert sorted(p.name for p in root.iterdir() if p.name != ".locks") == ["not-ours"]
    assert cli_main(["cache", "list"]) == 0
    assert "0 entries" in capsys.readouterr().out

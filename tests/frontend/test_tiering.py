"""Tiered execution (``sparsefold.tiering``, docs/tiering.md): a call whose kernel is not
built answers on the fallback while the kernel builds in the background, then the kernel
answers; ``wait=True`` and ``$SPARSEFOLD_TIERED=0`` keep every call on the kernel; and the
races — threads and processes asking for one kernel, a build that fails, a process that
exits or is killed mid-build, a fork — never leave a wrong answer or a broken cache entry.

Builds are held back where a test needs them in flight (``gate``: the C compiler step
waits for the test), so nothing depends on timing. Every test uses its own kernel cache
and a kernel source no other test builds (a unique constant in the program).
"""

from __future__ import annotations

import itertools
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

import sparsefold as sf
from sparsefold import tiering
from sparsefold.compiler.run import build, cache
from sparsefold.spec.errors import InternalError

pytestmark = pytest.mark.cython

CHILD = Path(__file__).with_name("tiering_child.py")
_constants = itertools.count(1)


def unique() -> float:
    """A constant no other test's program holds (so its kernel is new to every cache)."""
    return 1.0 + next(_constants) / 1024 + (os.getpid() % 997) / 2**20


@pytest.fixture
def fresh(tmp_path, monkeypatch) -> Path:
    """An empty kernel cache for this test."""
    root = tmp_path / "cache"
    monkeypatch.setenv("SPARSEFOLD_CACHE_DIR", str(root))
    tiering.reset_stats()
    yield root
    try:
        tiering.wait(timeout=300)
    except InternalError:
        pass  # a test's failed build (already checked)


@pytest.fixture
def gate(monkeypatch):
    """Builds wait (in the C compiler step) until the test opens the gate; yields (the
    gate, the names of the threads that built)."""
    opened = threading.Event()
    builders: list[str] = []
    real = build._compile

    def gated(*args, **kwargs):
        builders.append(threading.current_thread().name)
        assert opened.wait(300), "the gate was never opened"
        return real(*args, **kwargs)
    monkeypatch.setattr(build, "_compile", gated)
    yield opened, builders
    opened.set()


def eventually(condition, timeout: float = 120.0) -> bool:
    """``condition()`` became true within ``timeout`` seconds (polled)."""
    import time
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def matrix(seed: int = 3) -> sp.csr_array:
    return sp.random_array((80, 80), density=0.06, format="csr",
                           rng=np.random.default_rng(seed), dtype=np.float64)


def entries(root: Path) -> list[Path]:
    return [p for p in root.iterdir() if p.name.startswith("sfk_")] if root.exists() else []


def intact(root: Path) -> None:
    """Every cache entry under ``root`` verifies (manifest, size, sha256)."""
    expect = build.environment_fields()
    for entry in entries(root):
        assert cache.verify_entry(entry, expect) is None, entry


def test_the_first_call_answers_while_its_kernel_builds(fresh, gate):
    opened, builders = gate
    c = unique()
    a = matrix()
    f = sf.jit(lambda x: x * c - x.T, wait=False)
    first = f(a)  # returns although the build is held back
    assert eventually(lambda: builders) and builders == ["sparsefold-build"]
    np.testing.assert_allclose(first.toarray(), (a * c - a.T).toarray())
    assert first.format == "csr" and first.has_canonical_format
    assert tiering.stats()["fallback"] == 1 and tiering.stats()["builds"] == 1
    again = f(a)  # still building: the fallback again, no second build
    assert tiering.stats()["fallback"] == 2 and tiering.stats()["builds"] == 1
    np.testing.assert_allclose(again.toarray(), first.toarray())
    opened.set()
    assert f.wait(300)
    done = f(a)  # the kernel answers from now on
    assert tiering.stats()["compiled"] == 1 and tiering.stats()["fallback"] == 2
    np.testing.assert_allclose(done.toarray(), first.toarray())
    intact(fresh)


def test_wait_true_and_the_environment_keep_calls_on_the_kernel(fresh, monkeypatch):
    a = matrix()
    c = unique()
    sf.jit(lambda x: x * c, wait=True)(a)
    monkeypatch.setenv("SPARSEFOLD_TIERED", "0")
    sf.jit(lambda x: x * (c + 1))(a)
    assert "fallback" not in tiering.stats()
    monkeypatch.setenv("SPARSEFOLD_TIERED", "1")
    g = sf.jit(lambda x: x * (c + 2))
    g(a)
    assert tiering.stats()["fallback"] == 1
    g.wait(300)
    with pytest.raises(sf.IllFormedProgram):
        sf.jit(lambda x: x, wait="no")


def test_lazy_compute_is_tiered_too(fresh, gate):
    opened, _ = gate
    a = matrix()
    c = unique()
    got = (sf.asarray(a) * c).sum(axis=1).compute(wait=False)
    np.testing.assert_allclose(got, (a * c).sum(axis=1))
    assert tiering.stats()["fallback"] == 1
    opened.set()
    tiering.wait(timeout=300)
    np.testing.assert_allclose((sf.asarray(a) * c).sum(axis=1).compute(wait=False), got)
    assert tiering.stats()["compiled"] == 1


def test_a_kernel_in_the_disk_cache_answers_the_first_call(fresh):
    """A kernel an earlier process built is served from the cache at once (no fallback)."""
    c = unique()
    env = dict(os.environ, SPARSEFOLD_CACHE_DIR=str(fresh))
    done = subprocess.run([sys.executable, str(CHILD), "call-wait", repr(c)], env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    before = build.stats()["builds"]
    a = sp.random_array((200, 200), density=0.05, format="csr",
                        rng=np.random.default_rng(11), dtype=np.float64)
    sf.jit(lambda x: x * c + x.T, wait=False)(a)
    assert tiering.stats() == {"compiled": 1}
    assert build.stats()["builds"] == before


def test_threads_calling_at_once_share_one_build(fresh, gate):
    opened, builders = gate
    c = unique()
    f = sf.jit(lambda x, y: x * y + c, wait=False)
    a, b = matrix(1), matrix(2)
    want = a.multiply(b).toarray() + c  # dense-valued: a NumPy result
    results, errors = [], []

    def work():
        try:
            results.append(f(a, b))
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)
    threads = [threading.Thread(target=work) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors and len(results) == 8
    for r in results:
        np.testing.assert_allclose(r, want)
    assert tiering.stats()["fallback"] == 8 and tiering.stats()["builds"] == 1
    opened.set()
    assert f.wait(300)
    assert builders == ["sparsefold-build"]  # one build, in the background
    np.testing.assert_allclose(f(a, b), want)
    assert len(entries(fresh)) == 1
    intact(fresh)


def test_a_build_that_fails_keeps_answering_on_the_fallback(fresh, monkeypatch):
    def broken(*args, **kwargs):
        raise InternalError("the C compiler failed (a test)")
    monkeypatch.setattr(build, "_compile", broken)
    c = unique()
    f = sf.jit(lambda x, y: x * y * c, wait=False)
    a, b = matrix(1), matrix(2)
    want = (a.multiply(b) * c).toarray()
    np.testing.assert_allclose(f(a, b).toarray(), want)
    with pytest.raises(InternalError, match="a test"):
        f.wait(300)
    with pytest.warns(tiering.TieringWarning, match="a test"):
        np.testing.assert_allclose(f(a, b).toarray(), want)  # warned once, still answered
    np.testing.assert_allclose(f(a, b).toarray(), want)
    assert tiering.stats()["builds"] == 1 and tiering.stats()["failed"] == 1
    nan = a.copy()
    nan.data[0] = np.nan  # the fallback declines (0 * nan): the call needs the kernel
    with pytest.raises(InternalError, match="a test"):
        f(nan, b)
    assert entries(fresh) == []  # a failed build leaves its source aside, no entry
    assert any(p.name.startswith(".failed-") for p in fresh.iterdir())


def test_processes_asking_for_one_kernel_build_it_once(fresh):
    c = unique()
    env = dict(os.environ, SPARSEFOLD_CACHE_DIR=str(fresh))
    children = [subprocess.Popen([sys.executable, str(CHILD), "call-wait", repr(c)], env=env,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                for _ in range(3)]
    outputs = [p.communicate(timeout=600) for p in children]
    for p, (out, err) in zip(children, outputs):
        assert p.returncode == 0, out + err
    lines = [out.split() for out, _ in outputs]
    assert all(line[0] == "ok" for line in lines)
    # each stage's kernel built by one process; the others found it on disk
    built = sum(int(line[3]) for line in lines)
    assert built == len(entries(fresh)) >= 1
    intact(fresh)


def test_a_process_exiting_mid_build_finishes_it_first(fresh):
    c = unique()
    env = dict(os.environ, SPARSEFOLD_CACHE_DIR=str(fresh))
    done = subprocess.run([sys.executable, str(CHILD), "call-exit", repr(c)], env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    assert entries(fresh)  # complete entries: the exit waited for the queued builds
    intact(fresh)
    assert not any(p.name.startswith(".build-") for p in fresh.iterdir())


def test_a_process_killed_mid_build_leaves_no_entry(fresh):
    c = unique()
    env = dict(os.environ, SPARSEFOLD_CACHE_DIR=str(fresh))
    child = subprocess.Popen([sys.executable, str(CHILD), "hang", repr(c)], env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline().strip() == "building"
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait(60)
    assert entries(fresh) == []  # only its private build directory is left
    (left,) = [p for p in fresh.iterdir() if p.name.startswith(".build-")]
    os.utime(left, (0, 0))  # as if long ago: the next build sweeps it
    done = subprocess.run([sys.executable, str(CHILD), "call-wait", repr(c)], env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0 and done.stdout.split()[0] == "ok", done.stdout + done.stderr
    intact(fresh)
    assert not left.exists()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork")
def test_a_forked_child_starts_with_no_build_in_flight(fresh, gate):
    opened, _ = gate
    c = unique()
    a = matrix()
    f = sf.jit(lambda x: x * c + 1, wait=False)
    f(a)  # the parent's build is held back
    pid = os.fork()
    if pid == 0:  # the child: answers on its own fallback, schedules its own build
        try:
            ok = np.allclose(f(a), (a * c).toarray() + 1)
            scheduled = tiering.stats()["builds"] == 2
            os._exit(0 if ok and scheduled else 1)
        except BaseException:  # noqa: BLE001
            os._exit(2)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    opened.set()
    assert f.wait(300)


def test_a_probe_never_waits_for_a_build_in_progress(fresh, gate):
    """``no_build`` raises WouldBuild at once while another thread builds that source, and
    serves an intact disk entry, never a damaged one."""
    opened, _ = gate
    source = f"# tiering probe test {unique()}\ndef f():\n    return 7\n"
    worker = threading.Thread(target=build.load_module, args=(source,),
                              kwargs={"name_hint": "probe"})
    worker.start()
    while not build._key_locks.get((source, "probe"), threading.Lock()).locked():
        worker.join(0.01)
    with build.no_build(), pytest.raises(build.WouldBuild):
        build.load_module(source, name_hint="probe")
    opened.set()
    worker.join(300)
    (entry,) = entries(fresh)
    build.clear_memory_cache()
    with build.no_build():
        assert build.load_module(source, name_hint="probe").f() == 7  # from disk
    build.clear_memory_cache()
    so = entry / cache.read_manifest(entry)["so"]
    damaged = so.with_name(so.name + ".new")
    damaged.write_bytes(so.read_bytes()[:-8])
    os.chmod(damaged, 0o700)
    os.replace(damaged, so)
    with build.no_build(), pytest.raises(build.WouldBuild):
        build.load_module(source, name_hint="probe")  # damaged: neither loaded nor rebuilt
    assert cache.verify_entry(entry, {}) is not None

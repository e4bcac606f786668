"""examples/downstream, built with pip and run where no C compiler and no Cython can be found:
the same results and errors as the JIT (issue 14, part 1).

The package is built from a copy of the example with ``pip install --no-build-isolation
--target`` (sparsefold is not on an index the build could fetch it from, so the build uses
this environment's sparsefold, Cython and setuptools). The installed package then runs in a
child process whose ``PATH`` is an empty directory (no ``gcc``, ``cc``, ``clang``), whose
``sitecustomize`` makes ``import Cython`` fail, with an empty kernel cache and without
sparsefold's own prebuilt kernels (``SPARSEFOLD_PREBUILT=0``), so every kernel it runs comes
from the package's extension. Select with ``pytest -m aot``.
"""

from __future__ import annotations

import os
import pickle
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

sys.path.insert(0, str(Path(__file__).resolve().parent))
import downstream_calls  # noqa: E402

pytestmark = [pytest.mark.aot, pytest.mark.cython]

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "downstream"

BLOCK_CYTHON = textwrap.dedent('''
    import sys

    class _Absent:
        """This process runs as if Cython were not installed."""
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in ("Cython", "cython", "pyximport"):
                raise ImportError(f"No module named {name!r} (blocked by the AOT test)")
            return None

    sys.meta_path.insert(0, _Absent())
''')


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    work = tmp_path_factory.mktemp("downstream")
    source = work / "src"
    shutil.copytree(EXAMPLE, source, ignore=shutil.ignore_patterns(
        "build", "_kernels", "*.egg-info", "__pycache__"))
    target = work / "site"
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-build-isolation", "--no-deps",
         "--no-index", "--quiet", "--target", str(target), str(source)],
        capture_output=True, text=True, timeout=900, cwd=work)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    print(f"\nbuilt examples/downstream in {time.perf_counter() - started:.1f} s")
    assert list((target / "downstream_demo" / "_kernels").glob("_ext*.so")), \
        "no extension was built"
    return target


@pytest.fixture(scope="module")
def child(installed, tmp_path_factory) -> dict:
    work = tmp_path_factory.mktemp("run")
    (work / "blocker").mkdir()
    (work / "blocker" / "sitecustomize.py").write_text(BLOCK_CYTHON)
    (work / "no-tools").mkdir()
    env = {"PATH": str(work / "no-tools"),
           "PYTHONPATH": os.pathsep.join([str(work / "blocker"), str(installed)]),
           "SPARSEFOLD_CACHE_DIR": str(work / "empty-cache"),
           "SPARSEFOLD_PREBUILT": "0", "HOME": str(work)}
    out = work / "results.pkl"
    done = subprocess.run([sys.executable, str(Path(downstream_calls.__file__)), str(out)],
                          env=env, capture_output=True, text=True, timeout=300, cwd=work)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    with open(out, "rb") as handle:
        return pickle.load(handle)


@pytest.fixture(scope="module")
def jit_results() -> dict:
    from sparsefold.aot_generate import load_spec
    spec = load_spec(EXAMPLE / "downstream_demo" / "kernels.py")  # unbound: the JIT
    return downstream_calls.run(spec)


def test_the_child_had_no_compiler_and_no_cython(child, installed):
    assert {k: child["found"][k] for k in ("gcc", "cc", "clang", "Cython")} == \
        {"gcc": None, "cc": None, "clang": None, "Cython": None}
    assert child["module"].startswith(str(installed))


def test_every_kernel_came_from_the_extension(child):
    stats = child["stats"]
    assert stats["builds"] == 0 and stats["disk_hits"] == 0, stats
    assert stats["prebuilt_hits"] >= 7, stats  # every variant of the example ran


def _same(got, want) -> None:
    assert type(got) is type(want)
    if sp.issparse(want):
        assert (got.format, got.shape, got.dtype) == (want.format, want.shape, want.dtype)
        for part in ("indptr", "indices", "coords"):
            if hasattr(want, part):
                for g, w in zip(np.atleast_1d(getattr(got, part)),
                                np.atleast_1d(getattr(want, part))):
                    assert g.dtype == w.dtype
                    np.testing.assert_array_equal(g, w)
        np.testing.assert_array_equal(got.data, want.data)
    else:
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(got, want)  # NaN == NaN here


@pytest.mark.parametrize("label", [c[0] for c in downstream_calls.calls()
                                   if c[0] not in downstream_calls.NOT_BUILT])
def test_same_result_or_error_as_the_jit(child, jit_results, label):
    got, want = child["results"][label], jit_results[label]
    assert got[0] == want[0], (got, want)
    if want[0] == "ok":
        _same(got[1], want[1])
    else:
        assert got[1:] == want[1:]


@pytest.mark.parametrize("label", sorted(downstream_calls.NOT_BUILT))
def test_a_signature_not_built_says_which_were(child, jit_results, label):
    assert jit_results[label][0] == "ok"  # the JIT compiles it
    kind, cls, message = child["results"][label]
    assert (kind, cls) == ("error", "NotPrebuilt")
    assert "was not built for" in message and "built signatures:" in message
    assert "csr('float64')" in message or "csr('float64', index='int64')" in message

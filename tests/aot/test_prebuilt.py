"""sparsefold's own prebuilt kernels (sparsefold/prebuilt.py, built by setup.py): the first
call of each common kernel compiles nothing, in a fresh process with an empty kernel cache;
without the extension, sparsefold warns once and compiles instead."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

_CHILD = textwrap.dedent(r'''
    import json, sys, time, warnings
    import numpy as np
    import scipy.sparse as sp
    import sparsefold as sf
    from sparsefold.compiler.run import build

    warnings.simplefilter("error")  # a PrebuiltWarning would mean the extension is missing
    kernels = {
        "hstack": (sf.jit(lambda a, b: sf.hstack([a, b])), lambda a, b: sp.hstack([a, b])),
        "vstack": (sf.jit(lambda a, b: sf.vstack([a, b])), lambda a, b: sp.vstack([a, b])),
        "rows": (sf.jit(lambda a: a[5:23]), lambda a: a.tocsr()[5:23]),
        "rows to the end": (sf.jit(lambda a: a[7:]), lambda a: a.tocsr()[7:]),
        "transpose": (sf.jit(lambda a: a.T), lambda a: a.T),
        "spmv": (sf.jit(lambda a, x: a @ x, out="dense"), lambda a, x: a @ x),
    }
    failures, first_call = [], []
    for fmt in ("csr", "csc", "coo"):
        for dtype in (np.float32, np.float64):
            for index in (np.int32, np.int64):
                a = sp.random_array((40, 30), density=0.2, format=fmt, dtype=dtype, rng=1)
                b = sp.random_array((40, 30), density=0.2, format=fmt, dtype=dtype, rng=2)
                for m in (a, b):
                    if fmt == "coo":
                        m.coords = tuple(c.astype(index) for c in m.coords)
                    else:
                        m.indptr, m.indices = m.indptr.astype(index), m.indices.astype(index)
                x = np.linspace(0.0, 1.0, 30).astype(dtype)
                for name, (fn, scipy_fn) in kernels.items():
                    args = (a, b) if name.endswith("stack") else (a, x) if name == "spmv" \
                        else (a,)
                    started = time.perf_counter()
                    got = fn(*args)
                    first_call.append(time.perf_counter() - started)
                    want = scipy_fn(*args)
                    got = got if isinstance(got, np.ndarray) else got.toarray()
                    want = want if isinstance(want, np.ndarray) else want.toarray()
                    if got.dtype != dtype or not np.allclose(got, want, rtol=1e-6):
                        failures.append(f"{name} {fmt} {dtype.__name__} {index.__name__}")
    print(json.dumps({"stats": build.stats(), "failures": failures,
                      "slowest_first_call_s": max(first_call)}))
''')


def _run(code, cache_dir=None):
    full = dict(os.environ)
    full.pop("SPARSEFOLD_PREBUILT", None)
    if cache_dir is not None:
        full["SPARSEFOLD_CACHE_DIR"] = str(cache_dir)
    done = subprocess.run([sys.executable, "-c", code], env=full, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return done


def test_first_calls_of_the_common_kernels_compile_nothing(tmp_path):
    report = json.loads(_run(_CHILD, cache_dir=tmp_path / "empty-cache").stdout)
    assert report["failures"] == []
    stats = report["stats"]
    assert stats["builds"] == 0 and stats["disk_hits"] == 0, (
        f"{stats}: the prebuilt extensions do not match this compiler's kernels; after "
        f"changing compiler/, rebuild them (pip install -e . or python setup.py build_ext "
        f"--inplace)")
    # 3 formats x 2 dtypes x 2 index dtypes x 5 kernels: both row slices run one kernel (its
    # bounds are parameters); the exact SpMV variant was not needed (x is finite)
    assert stats["prebuilt_hits"] == 60, stats


_WITHOUT = textwrap.dedent(r'''
    import sys, warnings
    sys.modules["sparsefold._prebuilt0"] = None  # as if the extension failed to build
    import numpy as np
    import scipy.sparse as sp
    import sparsefold as sf
    from sparsefold.aot_registry import PrebuiltWarning
    a = sp.random_array((6, 5), density=0.5, format="csr", rng=0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        f = sf.jit(lambda a: a.T)
        g = sf.jit(lambda a: a[1:4])
        assert (f(a) != a.T.tocsr()).nnz == 0 and (g(a) != a[1:4]).nnz == 0
    ours = [w for w in caught if issubclass(w.category, PrebuiltWarning)]
    print(len(ours), str(ours[0].message) if ours else "")
''')


@pytest.mark.cython
def test_without_the_extension_sparsefold_warns_once_and_compiles():
    # the user's kernel cache: these two kernels are built once, then found on disk
    count, message = _run(_WITHOUT).stdout.strip().split(" ", 1)
    assert count == "1"
    assert message.startswith("sparsefold's prebuilt kernels are not available")
    assert "compiled on first use" in message

"""Calls of examples/downstream's kernels, run twice by tests/aot/test_downstream.py: by the
JIT in the test process, and — as ``python downstream_calls.py OUT`` — by the installed
package in a process where no C compiler and no Cython can be found.

Each call records its result, or its error's class and message, so the two runs can be
compared exactly. The child also records what it could find (compilers, Cython) and
``build.stats()``.
"""

from __future__ import annotations

import pickle
import shutil
import sys

import numpy as np
import scipy.sparse as sp

__all__ = ["calls", "run"]


def _csr(shape, seed, dtype=np.float64, index=np.int32, density=0.3):
    a = sp.random_array(shape, density=density, format="csr", dtype=dtype, rng=seed)
    a.indptr = a.indptr.astype(index)
    a.indices = a.indices.astype(index)
    return a


def calls() -> list[tuple[str, str, tuple]]:
    """(label, function name, arguments)."""
    a, b = _csr((30, 20), 1), _csr((12, 20), 2)
    a32, b32 = _csr((30, 20), 3, np.float32), _csr((9, 20), 4, np.float32)
    a64 = _csr((40, 25), 5, index=np.int64)
    x = np.linspace(-1.0, 1.0, 25)
    x_nan = x.copy()
    x_nan[4] = np.nan
    square = _csr((25, 25), 6)
    bad = _csr((6, 5), 7, density=1.0)
    bad.indptr[3] = bad.indptr[4] + 1  # row 2 ends after row 3 starts: not monotone
    return [
        ("stack f64", "stack_rows", (a, b)),
        ("stack f32", "stack_rows", (a32, b32)),
        ("stack empty block", "stack_rows", (a, _csr((0, 20), 8))),
        ("stack one-row block", "stack_rows", (_csr((1, 20), 9, density=1.0), b)),
        ("stack spmatrix", "stack_rows", (sp.csr_matrix(a), sp.csr_matrix(b))),
        ("distance", "row_distance", (a, _csr((30, 20), 10))),
        ("slice matvec", "slice_matvec", (a64, 3, 17, x)),
        ("slice matvec clamped", "slice_matvec", (a64, 10, 1000, x)),
        ("slice matvec empty", "slice_matvec", (a64, 7, 7, x)),
        ("slice matvec nan", "slice_matvec", (a64, 0, 40, x_nan)),
        ("antisymmetric", "antisymmetric_part", (square,)),
        # errors: the same as the JIT's ...
        ("mismatched columns", "stack_rows", (a, _csr((12, 21), 11))),
        ("malformed indptr", "stack_rows", (bad, bad)),
        ("vector of the wrong length", "slice_matvec", (a64, 0, 5, x[:-1])),
        # ... and signatures that were not built (the JIT would compile them)
        ("not built: csc", "stack_rows", (a.tocsc(), b.tocsc())),
        ("not built: int32 indices", "slice_matvec", (a, 0, 5, np.ones(20))),
    ]


NOT_BUILT = {"not built: csc", "not built: int32 indices"}


def run(functions) -> dict[str, tuple]:
    """label -> ("ok", result) or ("error", class name, message)."""
    out = {}
    for label, name, args in calls():
        try:
            out[label] = ("ok", getattr(functions, name)(*args))
        except Exception as exc:  # noqa: BLE001 - recorded and compared by the test
            out[label] = ("error", type(exc).__name__, str(exc))
    return out


def _child(path: str) -> None:
    found = {tool: shutil.which(tool) for tool in ("gcc", "cc", "clang")}
    try:
        import Cython  # noqa: F401
        found["Cython"] = "importable"
    except ImportError as exc:
        found["Cython"] = None
        found["Cython error"] = str(exc)
    import downstream_demo

    from sparsefold.compiler.run import build
    results = run(downstream_demo)
    with open(path, "wb") as handle:
        pickle.dump({"found": found, "results": results, "stats": build.stats(),
                     "module": downstream_demo.__file__}, handle)


if __name__ == "__main__":
    _child(sys.argv[1])

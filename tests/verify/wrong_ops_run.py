"""Run one deliberately wrong operator (``wrong_ops.py``) the way a user who trusts it would
get it compiled, with its proof not decided: print one JSON line per program and output
format saying what happened. Run by ``test_wrong_operators.py`` in a subprocess with a
timeout, so a hang or a crash is observed, not suffered. Not a test module.

    python wrong_ops_run.py NAME
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import scipy.sparse as sp

sys.path.insert(0, str(Path(__file__).resolve().parent))

from wrong_ops import WRONG, DivideBySize, Huge, Interleave, Scramble, ShiftOut  # noqa: E402

import sparsefold as sf  # noqa: E402
from sparsefold.compiler import Kernel  # noqa: E402
from sparsefold.verify.differential import storage_problems  # noqa: E402
from sparsefold.verify.entries import runtime_conditions  # noqa: E402


def _undecided(node):
    """The operator check sf.jit would apply to a trusted entry whose proof is unknown:
    run-time conditions for the wrong operators, built-in entries proved."""
    return runtime_conditions(node) if isinstance(node, tuple(WRONG.values())) else None


def _mat(rows, cols, seed, fmt="csr"):
    return sp.random_array((rows, cols), density=0.3, format=fmt, random_state=seed,
                           dtype=np.float64)


def _vec(n, seed):
    dense = np.where(np.random.default_rng(seed).random(n) < 0.5, 0.0,
                     np.arange(1.0, n + 1))
    return sp.csr_array(dense)


A, B = _mat(6, 5, 1), _mat(6, 5, 2)
DA, DB = A.toarray(), B.toarray()
CASES = {
    "interleave": [
        ("interleave(a, b)", lambda a, b: sf.apply_operator(Interleave, a, b, wrong=True),
         (A, B)),
        ("interleave(a, b) * 2 + 1 (dense inputs)",
         lambda a, b: sf.apply_operator(Interleave, a, b, wrong=True) * 2 + 1, (DA, DB)),
        ("interleave(a, b) - interleave(b, a)",
         lambda a, b: sf.apply_operator(Interleave, a, b, wrong=True)
         - sf.apply_operator(Interleave, b, a, wrong=True), (A, B)),
    ],
    "scramble": [
        ("scramble(v)", lambda v: sf.apply_operator(Scramble, v), (_vec(9, 3),)),
        ("scramble(v) * w (dense)", lambda v, w: sf.apply_operator(Scramble, v) * w,
         (_vec(9, 3), np.arange(9.0))),
    ],
    "shift_out": [
        ("shift_out(a)", lambda a: sf.apply_operator(ShiftOut, a), (A,)),
        ("shift_out(a) @ x", lambda a, x: sf.apply_operator(ShiftOut, a) @ x,
         (A, np.ones(5))),
        ("shift_out(d) + a (dense d)", lambda d, a: sf.apply_operator(ShiftOut, d) + a,
         (DA, A)),
        ("shift_out(a, 7) - b", lambda a, b: sf.apply_operator(ShiftOut, a, shift=7) - b,
         (A, _mat(6, 5, 4, "csc"))),
    ],
    "huge": [
        ("huge(a)", lambda a: sf.apply_operator(Huge, a), (A,)),
        ("huge(a) * b", lambda a, b: sf.apply_operator(Huge, a) * b, (A, B)),
    ],
    "divide_by_size": [
        ("divide_by_size(x, y), len(y) = len(x) - 1",
         lambda x, y: sf.apply_operator(DivideBySize, x, y), (_vec(5, 5), np.ones(4))),
        ("divide_by_size(x, y), len(y) = len(x) + 1 (collisions)",
         lambda x, y: sf.apply_operator(DivideBySize, x, y), (_vec(5, 5), np.ones(6))),
    ],
}
OUTS = ("csr", "coo", "dense")


def run_one(text, fn, args, out):
    jf = sf.jit(fn, out=out)
    program, out = jf.program_for(*args)
    line = {"program": text, "out": out}
    try:
        kernel = Kernel(program, out, operators=_undecided)
        line["stages"] = len(kernel.stages)
        got = kernel({f"a{p}": a for p, a in enumerate(args)}, "scipy")
    except Exception as exc:  # noqa: BLE001 - an error is an outcome; report which
        line.update(outcome="error", error=f"{type(exc).__name__}: {exc}"[:300])
        return line
    line["outcome"] = "result"
    lazy = fn(*map(sf.asarray, args))
    line["shape_ok"] = tuple(got.shape) == tuple(int(n) for n in lazy.shape)
    kind = None if isinstance(got, np.ndarray) else got.format
    line["problems"] = [] if kind is None else storage_problems(got, kind, canonical=False)
    try:  # the interpreter follows the (possibly wrong) backward maps
        want = lazy.interpret()
    except Exception as exc:  # noqa: BLE001
        want, line["interpreter"] = None, f"{type(exc).__name__}: {exc}"[:200]
    dense = got if kind is None else (None if line["problems"] else got.toarray())
    line["equal"] = want is not None and dense is not None and bool(np.array_equal(dense, want))
    return line


def main(name: str) -> None:
    for n, (text, fn, args) in enumerate(CASES[name]):
        for out in OUTS if n == 0 else OUTS[:1]:  # every output for the first program
            print(json.dumps(run_one(text, fn, args, out)), flush=True)


if __name__ == "__main__":
    main(sys.argv[1])

"""Child process of ``test_compile_threads.py``: compiles new programs from several threads
at once and checks every answer; exits 0 when all were right, 1 on a wrong answer or an
exception, and dies by signal on a crash (which the parent reports).

    python compile_threads_child.py SCENARIO ROUNDS SEED

Scenarios (each round uses programs no earlier round of this process used, so every
round plans, proves and lowers afresh — the Z3 queries included):

* ``lower``: 4 threads plan and lower new programs at once without building them
  (``build.no_build``: planning, Z3 proofs, lowering and rendering, no C compiler), so a
  round costs milliseconds and hundreds of rounds fit in a test;
* ``build``: 2 threads compile and call new programs, tiering off, results checked;
* ``tiered``: tiering on (the default): 2 user threads call new programs while the
  background thread builds earlier ones; first answers come from the fallback;
* ``dask``: a Dask threaded-scheduler computation of new programs on a cold cache.

Run with ``SPARSEFOLD_Z3_STRICT=1`` (the parent sets it): a Z3 call by a thread that does
not hold ``sizes_z3.Z3_LOCK`` raises, so a missed lock fails at once.
"""

from __future__ import annotations

import sys
import threading
import traceback

import numpy as np
import scipy.sparse as sp

import sparsefold as sf
from sparsefold.compiler.run import build


def programs(k: int):
    """Program ``k`` of an endless family: (sparsefold function, dense NumPy reference).
    The constants vary with ``k`` so that each is a new kernel with new proofs."""
    s, o = 2 + k % 3, 1 + (k // 3) % 4   # stride, offset
    kind = (k // 12) % 8
    if kind == 0:
        return (lambda a, b: a[o::s] * b[o::s] + a[o::s],
                lambda a, b: a[o::s] * b[o::s] + a[o::s])
    if kind == 1:
        return (lambda a, b: sf.concat([a[o:], b[:o]], axis=0)[::s],
                lambda a, b: np.concatenate([a[o:], b[:o]], axis=0)[::s])
    if kind == 2:
        return (lambda a, b: sf.sum(a[:, o:] * b[:, o:], axis=1) * s,
                lambda a, b: (a[:, o:] * b[:, o:]).sum(axis=1) * s)
    if kind == 3:
        return (lambda a, b: sf.maximum(a[o:], b[:-o]) - a[o:] * s,
                lambda a, b: np.maximum(a[o:], b[:-o]) - a[o:] * s)
    if kind == 4:
        return (lambda a, b: a[::s] @ b[:, o:],
                lambda a, b: a[::s] @ b[:, o:])
    if kind == 5:
        return (lambda a, b: sf.concat([a, b], axis=1)[o::s, ::s],
                lambda a, b: np.concatenate([a, b], axis=1)[o::s, ::s])
    if kind == 6:
        return (lambda a, b: (a[o:, o:] - b[o:, o:].T) * s,
                lambda a, b: (a[o:, o:] - b[o:, o:].T) * s)
    return (lambda a, b: sf.where(a[o:] > b[o:], a[o:], b[o:] * s),
            lambda a, b: np.where(a[o:] > b[o:], a[o:], b[o:] * s))


def _dense(x) -> np.ndarray:
    return x.toarray() if sp.issparse(x) else np.asarray(x.todense() if hasattr(
        x, "todense") else x)


def _inputs(n: int, seed: int):
    rng = np.random.default_rng(seed)
    a = sp.random_array((n, n), density=0.05, format="csr", rng=rng,
                        data_sampler=lambda size: rng.integers(1, 5, size).astype(float))
    b = sp.random_array((n, n), density=0.05, format="csr", rng=rng,
                        data_sampler=lambda size: rng.integers(1, 5, size).astype(float))
    return a, b


def _threads(work, n: int) -> list[str]:
    barrier = threading.Barrier(n)
    errors: list[str] = []

    def body(slot):
        try:
            barrier.wait()
            work(slot)
        except BaseException:  # noqa: BLE001 - reported by the parent
            errors.append(traceback.format_exc())
    threads = [threading.Thread(target=body, args=(slot,)) for slot in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return errors


def _check(fn, ref, a, b, out):
    got = fn(a, b)
    want = ref(a.toarray(), b.toarray())
    np.testing.assert_array_equal(_dense(got), want)


def lower(rounds: int, seed: int) -> list[str]:
    a, b = _inputs(40, seed)
    errors: list[str] = []
    for r in range(rounds):
        def work(slot, r=r):
            fn, _ = programs(seed * 100003 + r * 4 + slot)
            f = sf.jit(fn, out="csr", wait=True)
            with build.no_build():
                try:
                    f(a, b)
                except build.WouldBuild:
                    pass  # planned, proved and lowered: what this scenario exercises
        errors += _threads(work, 4)
        if errors:
            break
    return errors


def built(rounds: int, seed: int, wait: bool) -> list[str]:
    a, b = _inputs(120, seed)
    errors: list[str] = []
    for r in range(rounds):
        def work(slot, r=r):
            for j in range(2):
                fn, ref = programs(seed * 100003 + r * 8 + slot * 2 + j)
                _check(sf.jit(fn, out="csr", wait=wait), ref, a, b, "csr")
        errors += _threads(work, 2)
        if errors:
            break
    if not wait:
        sf.jit(lambda x: x).wait(timeout=600)  # the queued builds finish inside the run
    return errors


def dask_run(rounds: int, seed: int) -> list[str]:
    import dask
    import dask.array as da
    a, b = _inputs(120, seed)
    errors: list[str] = []
    for r in range(rounds):
        try:
            lazies, refs = [], []
            for j in range(3):
                fn, ref = programs(seed * 100003 + r * 3 + j)
                if (seed * 100003 + r * 3 + j) // 12 % 8 in (1, 4, 5):
                    continue  # joins and products of row blocks need whole operands
                da_a = da.from_array(a, chunks=((60, 60), (120,)))
                da_b = da.from_array(b, chunks=((60, 60), (120,)))
                lazies.append(sf.jit(fn, out="csr")(da_a, da_b))
                refs.append(ref(a.toarray(), b.toarray()))
            with dask.config.set(scheduler="threads", num_workers=4):
                got = dask.compute(*lazies)
            for g, w in zip(got, refs):
                np.testing.assert_array_equal(_dense(g), w)
        except BaseException:  # noqa: BLE001
            errors.append(traceback.format_exc())
            break
    return errors


def main(argv: list[str]) -> int:
    scenario, rounds, seed = argv[0], int(argv[1]), int(argv[2])
    if scenario == "lower":
        errors = lower(rounds, seed)
    elif scenario == "build":
        errors = built(rounds, seed, wait=True)
    elif scenario == "tiered":
        errors = built(rounds, seed, wait=False)
    elif scenario == "dask":
        errors = dask_run(rounds, seed)
    else:
        raise SystemExit(f"unknown scenario {scenario!r}")
    for e in errors:
        print(e, file=sys.stderr)
    print(f"{scenario}: {rounds} rounds, {len(errors)} errors")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""Parallel compute kernels at 1 and 2 threads (issue #13 part 3: parallel Gustavson SpGEMM
and row-parallel co-iteration): ``A @ A`` and ``A + B + C`` (B, C: A with rows / columns
rotated by one, as in the compute group) on the largest shared matrix (pkustk02, 810k
entries) and on the compute group's 200000² matrix of 2M uniform entries, against scipy
(one thread) and python-graphblas at 1 and 2 threads (native output, no export to scipy).

Every system's result is checked against scipy first (sparsefold's 2-thread result bit for
bit against its 1-thread result). Then the systems are timed interleaved, call by call, so
they see the same machine load; prints the best and median of each. Run:
``python -m sparsefold.benchmarks.parallel_compute [--repeats N] [--matrix NAME ...]``.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import scipy.sparse as sp

__all__ = ["main"]

MATRICES = ("pkustk02", "uniform_2M")


def _systems(name: str, a: sp.csr_array):
    import sparsefold as sf
    from sparsefold.benchmarks import peers
    from sparsefold.benchmarks.compute import Operands
    ops = Operands(a)
    A, B, C = ops.A.astype(np.float64), ops.B.astype(np.float64), ops.C.astype(np.float64)
    gb_ok, why = peers.available("graphblas")
    cases = {}
    matmul = {n: sf.jit(lambda x, y: x @ y, out="csr", threads=n) for n in (1, 2)}
    add3 = {n: sf.jit(lambda x, y, z: x + y + z, out="csr", threads=n) for n in (1, 2)}
    systems = {f"sparsefold_{n}t": (lambda n=n: matmul[n](A, A)) for n in (1, 2)}
    systems["scipy"] = lambda: A @ A
    adds = {f"sparsefold_{n}t": (lambda n=n: add3[n](A, B, C)) for n in (1, 2)}
    adds["scipy"] = lambda: A + B + C
    if gb_ok:
        from graphblas import binary, semiring
        ga, gb_, gc = peers.to_gb(A), peers.to_gb(B), peers.to_gb(C)
        for n in (1, 2):
            systems[f"graphblas_{n}t"] = (n, lambda: ga.mxm(ga, semiring.plus_times).new())
            adds[f"graphblas_{n}t"] = (n, lambda: ga.ewise_add(gb_, binary.plus).new()
                                       .ewise_add(gc, binary.plus).new())
    else:
        print(f"  graphblas unavailable: {why}")
    cases["A @ A"] = systems
    cases["A + B + C"] = adds
    return cases


def _call(fn):
    from sparsefold.benchmarks import peers
    if isinstance(fn, tuple):
        n, f = fn
        with peers.gb_threads(n):
            return f()
    return fn()


def _check(case: str, systems: dict) -> None:
    expect = sp.csr_array(systems["scipy"]())
    expect.sum_duplicates()
    expect.sort_indices()
    one = None
    for name, fn in systems.items():
        got = _call(fn)
        if name.startswith("graphblas"):
            from sparsefold.benchmarks import peers
            got = peers.gb().io.to_scipy_sparse(got, format="csr")
        got = sp.csr_array(got)
        if name == "sparsefold_1t":
            one = got
        elif name == "sparsefold_2t":
            for part in ("indptr", "indices", "data"):
                if not np.array_equal(getattr(got, part), getattr(one, part)):
                    raise AssertionError(f"{case}: 2 threads differ from 1 in {part}")
        diff = abs(got - expect)
        if diff.nnz and diff.max() > 1e-9 * max(1.0, abs(expect).max()):
            raise AssertionError(f"{case}: {name} differs from scipy by {diff.max()}")


def _time(systems: dict, repeats: int) -> dict[str, list[float]]:
    times: dict[str, list[float]] = {name: [] for name in systems}
    for _ in range(repeats):
        for name, fn in systems.items():
            t = time.perf_counter()
            _call(fn)
            times[name].append(time.perf_counter() - t)
    return times


def main(argv=None) -> None:
    from sparsefold.benchmarks import inputs
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--matrix", action="append", choices=MATRICES)
    args = ap.parse_args(argv)
    infos = {i.name: i for i in inputs.suitesparse_infos() + inputs.compute_scale_infos()}
    for name in args.matrix or MATRICES:
        a = inputs.load(infos[name])
        print(f"{name}: {a.shape[0]} x {a.shape[1]}, {a.nnz} entries", flush=True)
        for case, systems in _systems(name, a).items():
            _check(case, systems)
            times = _time(systems, args.repeats)
            base = min(times["scipy"])
            one = min(times["sparsefold_1t"])
            for sys_name, ts in times.items():
                print(f"  {case:10s} {sys_name:14s} best {min(ts) * 1e3:9.1f} ms  median "
                      f"{np.median(ts) * 1e3:9.1f} ms  /scipy {min(ts) / base:5.2f}  "
                      f"/sparsefold_1t {min(ts) / one:5.2f}", flush=True)


if __name__ == "__main__":
    main()

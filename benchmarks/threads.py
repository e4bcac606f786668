"""The measurement behind ``compiler.run.threads.PARALLEL_MIN_WORK``: CSR SpMV (16 entries a
row) at 1 and 2 threads, interleaved call by call so both see the same machine load, for
2^10 to 2^21 stored entries. Prints median and best time per size; results are checked
bit-identical first. Run: ``python -m sparsefold.benchmarks.threads``."""

from __future__ import annotations

import time

import numpy as np
import scipy.sparse as sp

__all__ = ["main"]


def main(low: int = 10, high: int = 21, threads: int = 2) -> None:
    import sparsefold as sf
    from sparsefold.compiler.run import threads as control
    rng = np.random.default_rng(0)
    one = sf.jit(lambda a, v: a @ v, threads=1)
    many = sf.jit(lambda a, v: a @ v, threads=threads)
    saved, control.PARALLEL_MIN_WORK = control.PARALLEL_MIN_WORK, 0  # measure every size
    try:
        for e in range(low, high + 1):
            nnz = 1 << e
            n = max(16, nnz // 16)
            a = sp.csr_matrix((rng.random(nnz), (rng.integers(0, n, nnz),
                                                 rng.integers(0, n, nnz))), shape=(n, n))
            a.sum_duplicates()
            x = rng.random(n)
            if not np.array_equal(one(a, x), many(a, x)):
                raise AssertionError(f"2^{e}: threaded result differs")
            t1, t2 = [], []
            for _ in range(max(10, (1 << 22) // nnz)):
                t = time.perf_counter()
                one(a, x)
                t1.append(time.perf_counter() - t)
                t = time.perf_counter()
                many(a, x)
                t2.append(time.perf_counter() - t)
            print(f"nnz 2^{e}: median {np.median(t1) * 1e6:9.1f} / {np.median(t2) * 1e6:9.1f}"
                  f" us, best {min(t1) * 1e6:9.1f} / {min(t2) * 1e6:9.1f} us "
                  f"(1 / {threads} threads)", flush=True)
    finally:
        control.PARALLEL_MIN_WORK = saved


if __name__ == "__main__":
    main()

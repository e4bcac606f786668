"""``sparsefold bench --dask``: the scaling run of issue #15 (part 3).

A 16M-entry matrix ``A`` (8 entries per row, in 8 column bands, float64 CSR) in 8 row
chunks, ``B`` with the shape of ``A[::2]`` (half the entries) and a dense ``x``; three
programs:

* ``spmv``         ``A @ x``
* ``vstack_spmv``  ``concat([A, A]) @ x``
* ``slice_times``  ``A[::2] * B``

each timed as scipy.sparse on one process, ``sf.jit`` on one process, and ``sf.jit`` on
Dask arrays on a ``distributed.LocalCluster`` of 1 worker process and of 2 worker
processes (1 thread each). The chunks are generated on the workers and persisted, so the
Dask times are the computation (``persist`` + ``wait``; results stay on the workers, as a
pipeline would keep them), not moving the inputs or gathering results; building the graph
(trace, layout, planning) is reported separately. Each time is the minimum of ``--repeat``
runs after a warm-up run that compiles the kernels and whose result is checked against the
single-process ``sf.jit`` result (exactly: rows are not split, so no sum is reassociated).
"""

from __future__ import annotations

import argparse
import platform
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp

__all__ = ["add_flag", "run", "run_scaling", "make_chunk", "PROGRAMS"]

PER_ROW = 8
PROGRAMS = (("spmv", "A @ x"), ("vstack_spmv", "concat([A, A]) @ x"),
            ("slice_times", "A[::2] * B"))


def make_chunk(index: int, rows: int, cols: int, seed: int = 15) -> sp.csr_array:
    """Rows ``[index*rows, (index+1)*rows)`` of ``A`` (or of ``B`` with another seed): 8
    entries per row, one in each eighth of the columns, so rows are sorted and unique."""
    rng = np.random.default_rng(seed * 1000 + index)
    band = cols // PER_ROW
    indices = np.sort(rng.integers(0, band, (rows, PER_ROW)), axis=1) + \
        np.arange(PER_ROW) * band
    values = rng.integers(1, 9, rows * PER_ROW).astype(np.float64)
    indptr = np.arange(0, rows * PER_ROW + 1, PER_ROW, dtype=np.int64)
    return sp.csr_array((values, indices.ravel(), indptr), shape=(rows, cols))


def _functions():
    import sparsefold as sf
    return {"spmv": sf.jit(lambda a, x: a @ x),
            "vstack_spmv": sf.jit(lambda a, x: sf.concat([a, a]) @ x),
            "slice_times": sf.jit(lambda a, b: a[::2] * b)}


def _best(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def _same(got, want) -> bool:
    """Equal results, without densifying a sparse one (a[::2] * b is 1M x 2M here)."""
    if hasattr(want, "tocsr"):
        if not hasattr(got, "tocsr") or got.shape != want.shape:
            return False
        g, w = got.tocsr(), want.tocsr()
        g.sum_duplicates()
        w.sum_duplicates()
        g.eliminate_zeros()
        w.eliminate_zeros()
        return (np.array_equal(g.indptr, w.indptr) and np.array_equal(g.indices, w.indices)
                and np.array_equal(g.data, w.data))
    return np.array_equal(np.asarray(got), np.asarray(want))


def run_scaling(nnz: int = 16_000_000, chunks: int = 8, repeat: int = 5,
                workers=(1, 2), log=print) -> list[dict]:
    """Times per program and system (seconds); see the module docstring."""
    import dask
    import dask.array as da
    from dask.graph_manipulation import clone
    from distributed import Client, LocalCluster, wait

    rows = -(-nnz // (PER_ROW * chunks)) // 2 * 2          # even: A[::2] keeps A's chunks
    n = rows * chunks
    log(f"A: {n} x {n}, {n * PER_ROW} entries in {chunks} row chunks of {rows}; B: "
        f"{n // 2} x {n}, {n // 2 * PER_ROW} entries")
    a_parts = [make_chunk(i, rows, n) for i in range(chunks)]
    b_parts = [make_chunk(i, rows // 2, n, seed=16) for i in range(chunks)]
    a, b = sp.csr_array(sp.vstack(a_parts)), sp.csr_array(sp.vstack(b_parts))
    x = np.arange(n, dtype=np.float64) % 13 - 6
    del a_parts, b_parts
    fns = _functions()
    args = {"spmv": (a, x), "vstack_spmv": (a, x), "slice_times": (a, b)}
    scipy_fns = {"spmv": lambda: a @ x, "vstack_spmv": lambda: sp.vstack([a, a]) @ x,
                 "slice_times": lambda: a[::2].multiply(b)}
    results = {name: {"program": expr} for name, expr in PROGRAMS}
    want = {}
    for name, _ in PROGRAMS:
        scipy_fns[name]()
        results[name]["scipy"] = _best(scipy_fns[name], repeat)
        want[name] = fns[name](*args[name])                 # compiles; the reference
        results[name]["sparsefold"] = _best(lambda: fns[name](*args[name]), repeat)
        log(f"{name}: scipy {results[name]['scipy']:.4f} s, sparsefold "
            f"{results[name]['sparsefold']:.4f} s")
    for w in workers:
        with LocalCluster(n_workers=w, threads_per_worker=1, processes=True,
                          dashboard_address=None) as cluster, Client(cluster) as client:
            def on_workers(seed, count):
                parts = [da.from_delayed(dask.delayed(make_chunk)(i, count, n, seed),
                                         shape=(count, n), dtype=np.float64,
                                         meta=sp.csr_array((0, 0))) for i in range(chunks)]
                return client.persist(da.concatenate(parts, axis=0))
            da_a, da_b = on_workers(15, rows), on_workers(16, rows // 2)
            da_x = client.persist(da.from_array(x, chunks=(n,)))
            wait([da_a, da_b, da_x])
            dargs = {"spmv": (da_a, da_x), "vstack_spmv": (da_a, da_x),
                     "slice_times": (da_a, da_b)}
            for name, _ in PROGRAMS:
                t0 = time.perf_counter()
                lazy = fns[name](*dargs[name])
                results[name]["graph"] = time.perf_counter() - t0
                got = lazy.compute()                          # warm-up: compiles, checked
                if not _same(got, want[name]):
                    raise AssertionError(f"{name}: the Dask result on {w} worker(s) differs "
                                         f"from sf.jit on one process")
                del got

                def once():
                    out = client.persist(clone(lazy, omit=[da_a, da_b, da_x]))
                    wait(out)
                    del out
                results[name][f"dask_{w}"] = _best(once, repeat)
                log(f"{name}: dask on {w} worker(s) {results[name][f'dask_{w}']:.4f} s")
    return [results[name] for name, _ in PROGRAMS]


def table(rows: list[dict], workers=(1, 2)) -> str:
    head = ("| program | scipy, 1 process | sparsefold, 1 process | " +
            " | ".join(f"Dask, {w} worker{'s' if w > 1 else ''}" for w in workers) +
            f" | speedup {workers[-1]} vs {workers[0]} workers | "
            f"Dask {workers[-1]} workers vs scipy | graph build |")
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for r in rows:
        cells = [f"`{r['program']}`", f"{r['scipy']:.3f} s", f"{r['sparsefold']:.3f} s"]
        cells += [f"{r[f'dask_{w}']:.3f} s" for w in workers]
        cells += [f"{r[f'dask_{workers[0]}'] / r[f'dask_{workers[-1]}']:.2f}x",
                  f"{r['scipy'] / r[f'dask_{workers[-1]}']:.2f}x",
                  f"{r['graph'] * 1000:.0f} ms"]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    import os
    nnz = args.dask_nnz
    rows = run_scaling(nnz=nnz, chunks=args.dask_chunks, repeat=max(1, min(args.repeat, 5)))
    load = os.getloadavg() if hasattr(os, "getloadavg") else ()
    text = (f"Dask scaling: {nnz} entries, {args.dask_chunks} chunks; {platform.node()} "
            f"({os.cpu_count()} cores, load average {', '.join(f'{v:.2f}' for v in load)})\n\n"
            + table(rows))
    print(text)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "dask_scaling.md").write_text(text + "\n")
    return 0


def add_flag(bench: argparse.ArgumentParser) -> None:
    """Add ``--dask`` (and its options) to the ``bench`` subcommand: with it, ``bench`` runs
    this scaling benchmark instead of the suite."""
    bench.add_argument("--dask", action="store_true",
                       help="run the Dask scaling benchmark (issue #15) instead of the suite: "
                            "SpMV, vstack+SpMV, A[::2]*B on 1 and 2 worker processes "
                            "(needs the [dask] extra)")
    bench.add_argument("--dask-nnz", type=int, default=16_000_000, metavar="N",
                       help="with --dask: entries of A (default 16,000,000)")
    bench.add_argument("--dask-chunks", type=int, default=8, metavar="K",
                       help="with --dask: row chunks of A (default 8)")
    suite = bench.get_default("run")

    def dispatch(args: argparse.Namespace) -> int:
        return run(args) if args.dask else suite(args)
    bench.set_defaults(run=dispatch)

"""The benchmark suite of ``../shared/BENCHMARKS.md`` (installed as ``sparsefold.benchmarks``).

* ``inputs``  — the 60 SuiteSparse matrices and the generated scale inputs, cached as .npz;
* ``kernels`` — the 15 kernels: our expression, input preparation, scipy / pydata / unfused
  baselines and the floor, per matrix;
* ``check``   — every result compared with scipy's (canonicalized copy) before it counts;
* ``timing``  — warm-up, then the minimum of ``repeat`` ``perf_counter`` runs, with a timeout;
* ``run``     — the runner behind ``sparsefold bench`` (progress bar, CSV rows);
* ``report``  — the per-kernel summary table and the time-vs-nnz plots.
"""

__all__: list[str] = []

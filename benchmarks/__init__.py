"""The benchmark suite of ``../shared/BENCHMARKS.md`` (installed as ``sparsefold.benchmarks``).

* ``inputs``  — the 60 SuiteSparse matrices and the generated scale inputs, cached as .npz;
* ``kernels`` — the 15 kernels: our expression, input preparation, scipy / pydata / unfused
  baselines and the floor, per matrix;
* ``peers``, ``peer_kernels`` — GraphBLAS and tensora: conversions, calls, result reading,
  and the 15 kernels mapped onto them;
* ``compute``, ``compute_run``, ``compute_report`` — the compute group (issue #11);
* ``guard``   — plan probe, densify decision and memory limit around compute-group calls;
* ``check``   — every result compared with scipy's (canonicalized copy) before it counts;
* ``measure``, ``timing`` — warm-up, check, then the minimum of ``repeat`` ``perf_counter``
  runs, with a timeout; one CSV row per measurement;
* ``run``     — the runner and CLI behind ``sparsefold bench`` (progress, CSV rows);
* ``report``  — the per-kernel summary tables, legend, peer table and time-vs-nnz plots;
* ``overhead`` — µs per cached call of tiny kernels, with a profile breakdown;
* ``memory``  — peak memory of kernels on a 16M-entry input.
"""

__all__: list[str] = []

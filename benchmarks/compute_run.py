"""Running the compute group: one program on one matrix gives rows for scipy, sparsefold,
the unfused pipeline (fused programs only) and the peers.

Every sparsefold pipeline is planned before it runs (``guard.probe`` on each stage, with an
empty stand-in of the right shape for an intermediate that does not exist yet); a stage whose
plan densifies a sparse input beyond ``guard.DENSE_LIMIT`` elements makes the row
"densifies" and nothing runs. Otherwise the pipeline runs under ``guard.memory_limit``. The
``detail`` column of a sparsefold row names each stage's strategy ("plan: merge" or
"plan: dense+stream"), so the report can say which programs densify today.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from sparsefold.benchmarks import guard, peers
from sparsefold.benchmarks.check import Mismatch, baseline_entries, compare, result_entries
from sparsefold.benchmarks.measure import measure, peer_rows, row, short

__all__ = ["SYSTEMS", "bench_program", "sparsefold_row"]

SYSTEMS = ("scipy", "sparsefold", "unfused") + peers.PEER_SYSTEMS


def sparsefold_row(base, system, pipeline, check, repeat, timeout,
                   dense_limit: int = guard.DENSE_LIMIT, threads: int | None = None) -> dict:
    """The row of a sparsefold pipeline: probed, then (unless it densifies) measured."""
    plans, dense, notes = [], [], []
    for fn, args, shape, inner in pipeline.probe_args():
        plan = guard.probe(fn, args)
        plans.append(plan.strategy or "unknown")
        if (why := guard.densifies(plan, args, shape, dense_limit, inner)):
            dense.append(why)
        if plan.note:
            notes.append(plan.note)
    text = "; ".join(["plan: " + "+".join(plans)] + notes)
    if dense:
        return row(base, system, "densifies", detail=f"{text}; {'; '.join(dense)}")
    with guard.memory_limit():
        run = pipeline.run if threads is None else peers.at_threads(pipeline.run, threads)
        r = measure(base, system, run, check, repeat, timeout)
    r["detail"] = f"{text}; {r['detail']}" if r["detail"] else text
    return r


def _sparse_check(case, reference, entries_of):
    mode = "close" if case.out == "csr" else "allclose"

    def check(result):
        got = entries_of(result)
        compare(got, reference["entries"], case.out_shape, mode)
        return got.nnz
    return check


def _export_entries(out: str):
    def entries(x):
        if out == "dense":
            if not isinstance(x, np.ndarray):
                raise Mismatch(f"expected a numpy.ndarray, found {type(x).__name__}")
        elif not sp.issparse(x) or x.format != out:
            raise Mismatch(f"expected a scipy {out} array, found {type(x).__name__}")
        return baseline_entries(x)
    return entries


def bench_program(program, info, ops, run_id: str, repeat: int, timeout: float, *,
                  with_peers: bool = True, dense_limit: int = guard.DENSE_LIMIT) -> list[dict]:
    """The CSV rows of one compute program on one matrix (``ops``: its Operands)."""
    base = dict(run_id=run_id, kernel=program.name, group="compute", matrix=info.name,
                source=info.source, rows=ops.shape[0], cols=ops.shape[1], nnz=ops.A.nnz)
    systems = [s for s in SYSTEMS if (program.fused or s != "unfused")
               and (with_peers or s not in peers.PEER_SYSTEMS)]
    if peers.NT_THREADS:
        systems.insert(2, peers.SPARSEFOLD_NT)
    try:
        case = program.prepare(ops)
    except Exception as exc:
        return [row(base, s, "error", detail="preparing inputs: " + short(exc))
                for s in systems]
    if case.skip:
        return [row(base, s, "skipped", detail=case.skip) for s in systems]
    reference: dict = {}

    def check_scipy(result):
        reference["entries"] = baseline_entries(result)
        return reference["entries"].nnz

    rows = [measure(base, "scipy", case.scipy, check_scipy, repeat, timeout)]
    if "entries" not in reference:
        return rows + [row(base, s, "unchecked", detail="no scipy result to check against")
                       for s in systems[1:]]
    ours = _sparse_check(case, reference,
                         lambda r: result_entries(r, case.out, np.float64))
    nt = peers.NT_THREADS
    rows.append(sparsefold_row(base, "sparsefold", case.ours, ours, repeat, timeout,
                               dense_limit, threads=1 if nt else None))
    if nt:  # side by side with the 1-thread row
        rows.append(sparsefold_row(base, peers.SPARSEFOLD_NT, case.ours, ours, repeat,
                                   timeout, dense_limit, threads=nt))
    if program.fused:
        rows.append(sparsefold_row(base, "unfused", case.unfused, ours, repeat, timeout,
                                   dense_limit))
    if with_peers:
        rows += peer_rows(base, case.out, case.gb, case.tensora,
                          check_gb=_sparse_check(case, reference, peers.entries),
                          check_export=_sparse_check(case, reference,
                                                     _export_entries(case.out)),
                          check_tensora=_sparse_check(case, reference, peers.tensora_entries),
                          repeat=repeat, timeout=timeout)
    return rows

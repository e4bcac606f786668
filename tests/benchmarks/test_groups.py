"""The benchmark groups end to end on one tiny matrix (paper kernels with peers, compute
programs), and the harness's guards: a peer's wrong result is a failure and is not timed, a
program whose plan densifies is reported and not run, progress lines without a terminal.

Peers are optional: every test passes without GraphBLAS or tensora installed; when they are
installed, their rows must be checked-correct ("ok")."""

from __future__ import annotations

import csv
import gzip

import numpy as np
import pytest
import scipy.io
import scipy.sparse as sp

from sparsefold.benchmarks import compute, compute_run, guard, inputs, peers
from sparsefold.benchmarks.check import Entries
from sparsefold.cli import main

pytestmark = pytest.mark.cython

GB = tuple(s for s, _, _ in peers.GB_SYSTEMS)


@pytest.fixture
def matrix_dir(tmp_path):
    """MANIFEST.tsv and one small square matrix with an explicit zero."""
    m = sp.random_array((40, 40), density=0.15, format="coo", rng=np.random.default_rng(3),
                        dtype=np.float64)
    m.data[0] = 0.0
    d = tmp_path / "matrices"
    d.mkdir()
    with gzip.open(d / "tiny.mtx.gz", "wb") as fh:
        scipy.io.mmwrite(fh, m)
    (d / "MANIFEST.tsv").write_text(
        "name\trows\tcols\tnnz\tfield\tsymmetry\tsource_repo\tsource_path\tbytes_gz\n"
        f"tiny\t40\t40\t{m.nnz}\treal\tgeneral\t-\t-\t0\n")
    return d


def _rows(out):
    with open(out / "results.csv", newline="") as fh:
        return list(csv.DictReader(fh))


def _expect_peer(rows_by_system, system, expressible: bool):
    library = "tensora" if system == peers.TENSORA else "graphblas"
    status = rows_by_system[system]["status"]
    if not peers.available(library)[0]:
        assert status == "unavailable", rows_by_system[system]
    elif expressible:
        assert status == "ok", rows_by_system[system]
        assert float(rows_by_system[system]["seconds"]) > 0
    else:
        assert status == "n/a" and rows_by_system[system]["detail"], rows_by_system[system]


def test_paper_group_with_peers(matrix_dir, tmp_path, capsys):
    out = tmp_path / "results"
    assert main(["bench", "--kernels",
                 "cv_collapse_coo,csr_vstack_csr_csr,dv_sum_vstack_csr_csr_mul_dv",
                 "--matrices", "tiny", "--matrix-dir", str(matrix_dir), "--out", str(out),
                 "--repeat", "2", "--no-plots", "--peers", "--malloc", "system"]) == 0
    rows = _rows(out)
    for kernel, tensora_ok in (("cv_collapse_coo", False), ("csr_vstack_csr_csr", False),
                               ("dv_sum_vstack_csr_csr_mul_dv", True)):
        by_system = {r["system"]: r for r in rows if r["kernel"] == kernel}
        assert by_system["sparsefold"]["status"] == "ok"
        for system in GB:
            _expect_peer(by_system, system, True)
        _expect_peer(by_system, peers.TENSORA, tensora_ok)
    printed = capsys.readouterr()
    assert "## Against the peers (paper kernels)" in printed.out
    assert "Columns: **n**" in printed.out  # the legend
    assert f"results: {out / 'results.csv'}" in printed.out
    assert "summary: " in printed.out
    # no terminal here: progress comes as lines, one per case
    assert "bench [1/3] tiny: cv_collapse_coo" in printed.err


def test_compute_group_on_a_tiny_matrix(matrix_dir, tmp_path, capsys):
    out = tmp_path / "results"
    assert main(["bench", "--group", "compute", "--kernels", "spmv,sum_mul,transpose_csr",
                 "--matrices", "tiny", "--matrix-dir", str(matrix_dir), "--out", str(out),
                 "--repeat", "2", "--no-plots", "--no-progress", "--malloc", "system"]) == 0
    rows = _rows(out)
    assert {r["kernel"] for r in rows} == {"spmv", "sum_mul", "transpose_csr"}
    assert all(r["group"] == "compute" for r in rows)
    for program in ("spmv", "sum_mul", "transpose_csr"):
        by_system = {r["system"]: r for r in rows if r["kernel"] == program}
        assert by_system["scipy"]["status"] == "ok"
        # the tiny matrix is far below the dense limit: every plan runs and is checked
        assert by_system["sparsefold"]["status"] == "ok", by_system["sparsefold"]
        assert by_system["sparsefold"]["detail"].startswith("plan: ")
        assert ("unfused" in by_system) == (program == "sum_mul")
        for system in GB:
            _expect_peer(by_system, system, True)
        _expect_peer(by_system, peers.TENSORA, program != "transpose_csr")
    assert by_system_status(rows, "sum_mul", "unfused") == "ok"
    text = capsys.readouterr().out
    assert "## Compute group" in text and "| spmv |" in text and "### Per matrix" in text


def by_system_status(rows, program, system):
    return next(r["status"] for r in rows if r["kernel"] == program and r["system"] == system)


# ---- the guards -----------------------------------------------------------------------------

def _program(ours_fn, *, gb=None, tensora=None, fused=False):
    """A one-stage program on any matrix: y = A @ x, with stand-in systems."""
    def prepare(ops):
        a, x = ops.A, ops.x
        stage = compute.Pipeline(((ours_fn, (a, x)),), ((a.shape[0],),))
        return compute.ComputeCase("dense", (a.shape[0],), scipy=lambda: a @ x, ours=stage,
                                   unfused=stage if fused else None,
                                   gb=gb or "not here", tensora=tensora or "not here")
    return compute.Program("probe", "A @ x", fused, prepare)


def _ops(n=30):
    return compute.Operands(sp.random_array((n, n), density=0.2, format="csr",
                                            rng=np.random.default_rng(0)))


_INFO = inputs.MatrixInfo("m", 30, 30, 0, "suitesparse")


def test_a_wrong_peer_result_is_a_failure_and_not_timed(monkeypatch):
    ops = _ops()
    right = ops.A @ ops.x
    wrong = right + 1.0
    monkeypatch.setattr(peers, "available", lambda name: (True, ""))
    monkeypatch.setattr(peers, "gb_threads", lambda n: __import__("contextlib").nullcontext())
    # the GraphBLAS stand-in returns a wrong vector natively and a right one when exported;
    # tensora's returns the right one: only the wrong results may fail
    monkeypatch.setattr(peers, "entries", lambda r: Entries(r.shape, None, r))
    monkeypatch.setattr(peers, "gb_export", lambda r, out: right)
    monkeypatch.setattr(peers, "tensora_entries", lambda r: Entries(r.shape, None, r))
    program = _program(lambda a, x: a @ x, gb=lambda: (lambda: wrong),
                       tensora=lambda: (lambda: right))
    rows = {r["system"]: r for r in compute_run.bench_program(program, _INFO, ops, "t", 2, 5.0)}
    for system in ("graphblas_1t", "graphblas_nt"):
        assert rows[system]["status"] == "wrong" and "values differ" in rows[system]["detail"]
        assert rows[system]["seconds"] == "" and rows[system]["runs"] == ""
    for system in ("graphblas_1t_scipy", "graphblas_nt_scipy", "tensora", "sparsefold"):
        assert rows[system]["status"] == "ok", rows[system]
        assert float(rows[system]["seconds"]) > 0


def test_a_densifying_plan_is_reported_and_not_run(monkeypatch):
    def must_not_run(a, x):
        raise AssertionError("a densifying program was run")
    monkeypatch.setattr(guard, "probe", lambda fn, args: guard.PlanInfo("dense"))
    ops = _ops()
    rows = {r["system"]: r for r in compute_run.bench_program(
        _program(must_not_run, fused=True), _INFO, ops, "t", 2, 5.0, with_peers=False,
        dense_limit=100)}
    for system in ("sparsefold", "unfused"):
        assert rows[system]["status"] == "densifies", rows[system]
        assert "plan: dense" in rows[system]["detail"] and "> limit 100" in \
            rows[system]["detail"]
    assert rows["scipy"]["status"] == "ok"
    # under the limit the same plan runs (and here fails loudly, recorded as an error)
    rows = {r["system"]: r for r in compute_run.bench_program(
        _program(must_not_run), _INFO, ops, "t", 2, 5.0, with_peers=False)}
    assert rows["sparsefold"]["status"] == "error"
    assert "a densifying program was run" in rows["sparsefold"]["detail"]


def test_densifies_decision():
    a = sp.random_array((1000, 1000), density=0.001, format="csr", rng=np.random.default_rng(0))
    x = np.ones(1000)
    assert guard.densifies(guard.PlanInfo("dense"), (a, x), (1000,), limit=2**10)
    assert guard.densifies(guard.PlanInfo("stream"), (a, x), (1000,), limit=2**10) == ""
    assert guard.densifies(guard.PlanInfo("dense"), (x, x), (1000,), limit=2**10) == ""
    assert guard.densifies(guard.PlanInfo("dense"), (a, x), (1000,), limit=2**21) == ""
    assert guard.densifies(guard.PlanInfo(None, "plan unknown"), (a,), (1000,), 1) == ""


def test_probe_reads_the_compilers_plan():
    """The harness's only view of the compiler: if this fails, the compiler changed how it
    exposes ``plan.strategy`` and the densify guard is blind (the memory limit remains)."""
    ops = _ops()
    plan = guard.probe(compute._matvec, (ops.A, ops.x))
    assert plan.strategy is not None, plan.note
    assert isinstance(plan.strategy, str) and plan.strategy


def test_memory_limit_turns_a_huge_allocation_into_memory_error():
    with guard.memory_limit(budget=256 * 2**20):
        with pytest.raises(MemoryError):
            np.ones(2**31, dtype=np.float64)  # 16 GiB
    np.ones(2**20)  # the limit is lifted afterwards


def test_product_estimate_bounds_and_skips(monkeypatch):
    a = sp.random_array((300, 300), density=0.05, format="csr", rng=np.random.default_rng(1))
    bound, how = compute.product_nnz_estimate(a, a)
    assert how == "flop bound" and bound >= (a @ a).nnz
    monkeypatch.setattr(compute, "PRODUCT_NNZ_LIMIT", 10)
    est, how = compute.product_nnz_estimate(a, a, sample=100)
    assert how == "100-row sample"
    assert 0.7 * (a @ a).nnz < est < 1.3 * (a @ a).nnz
    case = compute._spgemm_square_case(compute.Operands(a))
    assert case.skip.startswith("A @ A has ~")
    wide = compute.Operands(sp.random_array((20, 30), density=0.2, format="csr", rng=1))
    assert "square" in compute._spgemm_square_case(wide).skip


def test_close_comparison_ignores_order_and_explicit_zeros():
    from sparsefold.benchmarks.check import Mismatch, baseline_entries, compare
    want = baseline_entries(sp.csr_array(np.array([[1.0, 0, 2.0], [0, 3.0, 0]])))
    got = Entries((2, 3), np.array([0, 1, 2, 4]), np.array([1.0 + 1e-13, 0.0, 2.0, 3.0]))
    compare(got, want, (2, 3), "close")
    bad = Entries((2, 3), np.array([0, 2, 3]), np.array([1.0, 2.0, 3.0]))
    with pytest.raises(Mismatch, match="values differ"):
        compare(bad, want, (2, 3), "close")


def test_derived_operands_are_deterministic_and_shaped():
    a = _ops(25)
    b = _ops(25)
    for name in ("B", "C", "S"):
        x, y = getattr(a, name), getattr(b, name)
        assert x.shape == y.shape and np.array_equal(x.toarray(), y.toarray())
    assert a.B.shape == a.C.shape == a.A.shape and a.S.shape == (25, compute.SKINNY_COLS)
    assert np.array_equal(a.B.toarray(), np.roll(a.A.toarray(), -1, axis=0))
    assert np.array_equal(a.C.toarray(), np.roll(a.A.toarray(), 1, axis=1))


@pytest.mark.skipif(not peers.available("tensora")[0], reason="tensora is not installed")
def test_tensora_conversions_round_trip():
    m = sp.random_array((9, 7), density=0.3, format="csr", rng=np.random.default_rng(2))
    want = m.toarray().ravel()
    for tensor in (peers.to_tensora_csr(m), peers.to_tensora_csc(m)):
        e = peers.tensora_entries(tensor)
        dense = np.zeros(63)
        dense[e.keys] = e.values
        assert e.shape == (9, 7) and np.array_equal(dense, want)
    x = np.arange(6.0).reshape(2, 3)
    e = peers.tensora_entries(peers.to_tensora_dense(x))
    assert np.array_equal(e.values, x.ravel())


def test_overhead_micro_benchmark_reports_a_breakdown():
    from sparsefold.benchmarks import overhead
    ours, theirs = next(iter(overhead._kernels().values()))
    assert overhead.per_call(ours, calls=20, rounds=2) > 0
    tree = overhead.breakdown(ours, calls=20)
    assert tree and tree[0][0] == 0
    assert abs(sum(f for depth, _, f in tree if depth == 0) - 1.0) < 0.05


def test_threads_option_times_sparsefold_at_one_and_n_threads(matrix_dir, tmp_path,
                                                             monkeypatch):
    monkeypatch.setattr(peers, "NT_THREADS", None)  # main sets it; restored after the test
    out, out2 = tmp_path / "paper", tmp_path / "compute"
    assert main(["bench", "--kernels", "dv_sum_vstack_csr_csr_mul_dv", "--matrices", "tiny",
                 "--matrix-dir", str(matrix_dir), "--out", str(out), "--repeat", "2",
                 "--no-plots", "--no-progress", "--no-peers", "--threads", "3",
                 "--malloc", "system"]) == 0
    assert main(["bench", "--group", "compute", "--kernels", "spmv", "--matrices", "tiny",
                 "--matrix-dir", str(matrix_dir), "--out", str(out2), "--repeat", "2",
                 "--no-plots", "--no-progress", "--no-peers", "--threads", "3",
                 "--malloc", "system"]) == 0
    assert peers.NT_THREADS == 3
    rows = _rows(out) + _rows(out2)
    for kernel in ("dv_sum_vstack_csr_csr_mul_dv", "spmv"):
        by_system = {r["system"]: r for r in rows if r["kernel"] == kernel}
        assert by_system["sparsefold"]["status"] == "ok", by_system["sparsefold"]
        assert by_system["sparsefold_nt"]["status"] == "ok", by_system["sparsefold_nt"]

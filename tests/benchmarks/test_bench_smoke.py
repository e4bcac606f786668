"""Smoke tests of the benchmark suite: one kernel on one tiny matrix through ``sparsefold
bench`` produces checked, timed CSV rows and a summary; the checker rejects results that
differ from scipy's or are not canonical; the generators are deterministic."""

from __future__ import annotations

import csv
import gzip

import numpy as np
import pytest
import scipy.io
import scipy.sparse as sp

from sparsefold.benchmarks import inputs
from sparsefold.benchmarks.check import Mismatch, baseline_entries, compare, result_entries
from sparsefold.cli import main

pytestmark = pytest.mark.cython


@pytest.fixture
def matrix_dir(tmp_path):
    """A MANIFEST.tsv and one small general matrix with an explicit zero, like the real set."""
    rng = np.random.default_rng(7)
    m = sp.random_array((30, 21), density=0.2, format="coo", rng=rng, dtype=np.float64)
    m.data[0] = 0.0
    d = tmp_path / "matrices"
    d.mkdir()
    with gzip.open(d / "tiny.mtx.gz", "wb") as fh:
        scipy.io.mmwrite(fh, m)
    (d / "MANIFEST.tsv").write_text(
        "name\trows\tcols\tnnz\tfield\tsymmetry\tsource_repo\tsource_path\tbytes_gz\n"
        f"tiny\t30\t21\t{m.nnz}\treal\tgeneral\t-\t-\t0\n")
    return d


def test_one_kernel_one_matrix_csv_and_summary(matrix_dir, tmp_path, capsys):
    out = tmp_path / "results"
    # --malloc system: the default would retune this (pytest's) process's allocator
    code = main(["bench", "--kernels", "cv_collapse_coo", "--matrices", "tiny",
                 "--matrix-dir", str(matrix_dir), "--out", str(out), "--repeat", "2",
                 "--no-plots", "--no-progress", "--malloc", "system", "--no-peers"])
    assert code == 0
    with open(out / "results.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    by_system = {r["system"]: r for r in rows}
    assert set(by_system) == {"scipy", "sparsefold", "pydata", "floor"}
    m = sp.csr_array(scipy.io.mmread(matrix_dir / "tiny.mtx.gz"))
    for system in ("scipy", "sparsefold", "floor"):
        r = by_system[system]
        assert r["status"] == "ok", r
        assert float(r["seconds"]) > 0 and r["runs"] == "2"
        assert int(r["out_nnz"]) == m.nnz  # a flatten keeps every entry, the zero included
    assert by_system["pydata"]["status"] in ("ok", "unavailable")
    text = capsys.readouterr().out
    assert "| cv_collapse_coo | 1/1 |" in text
    summaries = list(out.glob("summary-*.md"))
    assert len(summaries) == 1 and "cv_collapse_coo" in summaries[0].read_text()
    # --report-only summarizes the recorded run again without running anything
    assert main(["bench", "--report-only", "--out", str(out), "--no-plots"]) == 0
    assert "| cv_collapse_coo | 1/1 |" in capsys.readouterr().out


def test_unknown_kernel_is_rejected(matrix_dir, tmp_path):
    with pytest.raises(SystemExit, match="unknown kernel"):
        main(["bench", "--kernels", "no_such_kernel", "--matrix-dir", str(matrix_dir),
              "--out", str(tmp_path)])


def _reference():
    m = sp.csr_array(np.array([[0, 2, 0], [3, 0, 4]], dtype=np.float32))
    return m, baseline_entries(m)


def test_checker_accepts_equal_result():
    m, want = _reference()
    compare(result_entries(m.copy(), "csr"), want, (2, 3), "exact")
    compare(result_entries(m.tocoo(), "coo"), want, (2, 3), "exact")
    # a flattened vector matches the (1, 6) scipy result position by position
    flat = baseline_entries(m.reshape(1, 6))
    compare(result_entries(sp.csr_array(m.reshape(6)), "csr"), flat, (6,), "exact")


def test_checker_rejects_wrong_values_pattern_and_format():
    m, want = _reference()
    bad = m.copy()
    bad.data[0] = 5
    with pytest.raises(Mismatch, match="values differ"):
        compare(result_entries(bad, "csr"), want, (2, 3), "exact")
    other = sp.csr_array(np.array([[2, 0, 0], [3, 0, 4]], dtype=np.float32))
    with pytest.raises(Mismatch, match="sparsity pattern differs"):
        compare(result_entries(other, "csr"), want, (2, 3), "exact")
    with pytest.raises(Mismatch, match="expected a scipy coo array"):
        result_entries(m, "coo")
    with pytest.raises(Mismatch, match="expected float32"):
        result_entries(m.astype(np.float64), "csr")


def test_checker_rejects_non_canonical_result():
    unsorted = sp.csr_array((np.ones(2, np.float32), np.array([2, 0]), np.array([0, 2, 2])),
                            shape=(2, 3))
    with pytest.raises(Mismatch, match="not canonical"):
        result_entries(unsorted, "csr")
    # ... while a baseline's unsorted result is canonicalized on a copy and compares equal
    sorted_ = sp.csr_array((np.ones(2, np.float32), np.array([0, 2]), np.array([0, 2, 2])),
                           shape=(2, 3))
    compare(result_entries(sorted_, "csr"), baseline_entries(unsorted), (2, 3), "exact")


def test_prune_zeros_and_allclose_modes():
    m, want = _reference()
    with_zero = sp.csr_array((np.array([0, 2, 3, 4], np.float32), np.array([0, 1, 0, 2]),
                              np.array([0, 2, 4])), shape=(2, 3))
    with pytest.raises(Mismatch, match="stored entries"):
        compare(result_entries(with_zero, "csr"), want, (2, 3), "exact")
    compare(result_entries(with_zero, "csr"), want, (2, 3), "prune_zeros")
    x = np.array([1.0, 2.0], np.float32)
    compare(result_entries(x + np.float32(1e-7), "dense"), baseline_entries(x), (2,),
            "allclose")
    with pytest.raises(Mismatch, match="values differ"):
        compare(result_entries(x + 1, "dense"), baseline_entries(x), (2,), "allclose")


def test_banded_generator_is_exact_and_deterministic():
    info = next(i for i in inputs.scale_infos() if i.name == "band_1M")
    a = inputs.load(info)
    assert a.nnz == 1_000_000 and a.has_canonical_format and a.dtype == np.float32
    assert a.shape == (info.rows, info.cols)
    rows, cols = a.nonzero()
    assert np.abs(rows - cols).max() == 8
    b = inputs.load(info)
    assert np.array_equal(a.data, b.data) and np.array_equal(a.indices, b.indices)

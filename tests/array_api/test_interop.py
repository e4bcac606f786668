"""Library code written against the array API runs on sparsefold arrays: array-api-extra's
functions, given sparsefold arrays (sparse and dense), give NumPy's answer on the dense
equivalent; and the example ``examples/array_api/poisson_kron.py`` runs."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import array_api_extra as xpx
import numpy as np
import pytest
import scipy.sparse as sp

import sparsefold.array_api as xp

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "array_api" / "poisson_kron.py"

A = sp.random_array((5, 4), density=0.45, format="csr", random_state=7,
                    data_sampler=np.random.default_rng(7).normal)
D = A.toarray()
V = np.array([0.0, -1.5, 2.0, 0.0, 3.0])


def _np(y):
    return np.asarray(y)


CASES = {
    "kron": (lambda: xpx.kron(xp.asarray(A), xp.asarray(np.eye(2))),
             lambda: np.kron(D, np.eye(2))),
    "cov": (lambda: xpx.cov(xp.asarray(D)), lambda: np.cov(D)),
    "sinc": (lambda: xpx.sinc(xp.asarray(V)), lambda: np.sinc(V)),
    "nunique": (lambda: xpx.nunique(xp.asarray(A)), lambda: np.unique(D).size),
    "atleast_nd": (lambda: xpx.atleast_nd(xp.asarray(V), ndim=3),
                   lambda: V[None, None, :]),
    "create_diagonal": (lambda: xpx.create_diagonal(xp.asarray(V)), lambda: np.diag(V)),
    "pad": (lambda: xpx.pad(xp.asarray(A), 2), lambda: np.pad(D, 2)),
    "setdiff1d": (lambda: xpx.setdiff1d(xp.asarray(np.array([5, 1, 3, 2])),
                                        xp.asarray(np.array([2, 7]))),
                  lambda: np.setdiff1d([5, 1, 3, 2], [2, 7])),
    "isclose": (lambda: xpx.isclose(xp.asarray(A), xp.asarray(D + 1e-9)),
                lambda: np.isclose(D, D + 1e-9)),
    "one_hot": (lambda: xpx.one_hot(xp.asarray(np.array([0, 2, 1])), 3),
                lambda: np.eye(3)[[0, 2, 1]]),
    "apply_where": (lambda: xpx.apply_where(xp.asarray(D) > 0, (xp.asarray(D),), xp.sqrt,
                                            fill_value=-1.0),
                    lambda: np.where(D > 0, np.sqrt(np.where(D > 0, D, 1.0)), -1.0)),
    "at().set": (lambda: xpx.at(xp.asarray(V.copy()))[1:3].set(9.0),
                 lambda: np.r_[V[:1], 9.0, 9.0, V[3:]]),
    "at().add": (lambda: xpx.at(xp.asarray(A), (slice(None), 0)).add(1.0),
                 lambda: D + np.eye(4)[0]),
}


@pytest.mark.parametrize("name", list(CASES))
def test_array_api_extra_matches_numpy(name):
    ours, numpy_ = CASES[name]
    np.testing.assert_allclose(_np(ours()), numpy_(), rtol=1e-12, atol=1e-12)


def test_kron_of_sparse_arrays_is_sparse():
    k = xpx.kron(xp.asarray(A), xp.asarray(A)).compute()
    assert sp.issparse(k) and k.nnz == A.nnz ** 2
    assert np.array_equal(k.toarray(), np.kron(D, D))


@pytest.mark.cython
def test_the_example_runs(capsys):
    spec = importlib.util.spec_from_file_location("poisson_kron", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.main(12)
    out = capsys.readouterr().out
    assert "144 x 144 Poisson matrix: 672 stored entries" in out
    assert "distinct values of T: 3" in out

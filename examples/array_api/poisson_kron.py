"""A downstream library's array-API code on sparse arrays: array-api-extra.

array-api-extra writes its functions once against the array API standard; handed
sparsefold arrays (``array_api_compat.array_namespace`` finds ``sparsefold.array_api``
from them), they build sparsefold programs. Here its ``kron`` assembles the 5-point
Poisson matrix of an n x n grid from the 1-d second-difference matrix, as
``scipy.sparse.kron`` would — but through generic code: the Kronecker products are
broadcast multiplies and reshapes of sparse arrays, so the result is sparse and never
densified. ``xpx.nunique`` and ``xpx.pad`` run on the same sparse arrays.

Run: ``python examples/array_api/poisson_kron.py [n]`` (``tests/array_api`` runs it).
"""

from __future__ import annotations

import sys

import array_api_compat
import array_api_extra as xpx
import numpy as np
import scipy.sparse as sp

import sparsefold.array_api as xp


def second_difference(n: int) -> sp.csr_array:
    return sp.diags_array([-1.0, 2.0, -1.0], offsets=[-1, 0, 1], shape=(n, n), format="csr")


def poisson(n: int):
    """The n^2 x n^2 5-point Laplacian, ``T ⊗ I + I ⊗ T``, with array-api-extra's kron."""
    t = xp.asarray(second_difference(n))
    i = xp.eye(n)
    assert array_api_compat.array_namespace(t, i) is xp
    return xpx.kron(t, i) + xpx.kron(i, t)


def main(n: int = 60) -> None:
    lap = poisson(n).compute()             # one compiled kernel; a scipy sparse array
    t, i = second_difference(n), sp.eye_array(n)
    want = sp.kron(t, i) + sp.kron(i, t)    # scipy's own construction, for comparison
    assert sp.issparse(lap) and lap.shape == (n * n, n * n)
    assert abs(sp.csr_array(lap) - want).max() == 0
    print(f"{n * n} x {n * n} Poisson matrix: {lap.nnz} stored entries "
          f"({type(lap).__name__}), equal to scipy.sparse.kron's")
    x = xp.asarray(second_difference(n))
    print(f"distinct values of T: {int(xpx.nunique(x))}")     # -1, 0, 2
    padded = xpx.pad(x, 1)                                    # constant padding: still sparse
    assert np.array_equal(np.asarray(padded), np.pad(second_difference(n).toarray(), 1))
    print(f"padded: {padded.shape}, {padded.compute().nnz} stored entries")


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:2]))

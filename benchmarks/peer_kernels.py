"""The paper's 15 kernels on the peers (issue #13 part 1): GraphBLAS for all 15, tensora for
the three fusion kernels' compute part.

GraphBLAS (``gb_call``), on inputs converted before timing (``peers.to_gb``):

| kernel | GraphBLAS |
|---|---|
| cv_collapse_coo | ``Matrix.from_coo`` (the build), then ``.ss.reshape(1, N*C)`` |
| coo_{h,v}stack_coo_coo, csr_hstack_coo_coo | two ``Matrix.from_coo`` builds, ``gb.ss.concat`` |
| csr_{h,v}stack_csr_csr, coo_{h,v}stack_csr_csr | ``gb.ss.concat`` |
| csr_slice_1d_csr, coo_slice_1d_csr | extract ``M[0:(N+1)//2:2, :]`` |
| coo_split_cv, csr_split_cv | ``.ss.reshape(N, C)`` of the 1 × N*C matrix |
| cv_collapse_csr_mul_cv | ``.ss.reshape(1, N*C)``, then ``ewise_mult`` with b |
| dv_sum_vstack_csr_csr_mul_dv | ``gb.ss.concat``, then ``mxv`` |
| csr_slice_1d_csr_mul_csr | extract, then ``ewise_mult`` |

GraphBLAS has no COO storage, so a COO input reaches it as its coordinate arrays and the
timed call includes the build (``Matrix.from_coo``): the COO-to-row-major work the kernel is
about. A sparse vector is a 1 × L Matrix on the GraphBLAS side: GraphBLAS's own reshape
(``GxB_Matrix_reshape``) works on matrices, and python-graphblas's Vector reshape and
``flatten`` go through Python (~10× slower: 14–25 ms vs 1.4 ms on pkustk02). Its native
result is a GraphBLAS Matrix or Vector (row-major); the "to scipy" figure adds the export to
the kernel's format (a 1-d vector for the collapse kernels).

tensora (TACO) has no reshape, concatenation or slicing; for the fusion kernels it times only
their compute part, with the shape operator applied during the untimed input conversion:
``c(i) = a(i) * b(i)`` on flatten(A), ``y(i) = M(i,j) * x(j)`` on vstack(a, b),
``C(i,j) = A(i,j) * B(i,j)`` on the slice of A — so its figure flatters it. Values are float64
(tensora has no float32); its result is rounded to float32 before the check, which is exact
for a product of two float32 values. The other 12 kernels are pure shape operators: "–".
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import scipy.sparse as sp

from sparsefold.benchmarks import peers

__all__ = ["gb_call", "tensora_call", "TENSORA_SHAPE_ONLY"]

TENSORA_SHAPE_ONLY = "a shape operator only: TACO has no reshape, concatenation or slicing"


def _half_rows(n: int) -> slice:
    return slice(0, (n + 1) // 2, 2)


def gb_call(kernel, ops: dict[str, Any]) -> Callable[[], Any]:
    """The zero-argument GraphBLAS call of ``kernel`` on its prepared ``operands``."""
    g = peers.gb()
    from graphblas import binary, semiring
    name = kernel.name
    if name == "cv_collapse_coo":
        coo = peers.gb_coo(ops["a"])
        length = coo[3] * coo[4]
        return lambda: peers.gb_from_coo(coo).ss.reshape(1, length)
    if "stack" in name and "mul" not in name:
        a, b = ops["a"], ops["b"]
        tiles = (lambda x, y: [[x, y]]) if "hstack" in name else (lambda x, y: [[x], [y]])
        if a.format == "coo":
            ca, cb = peers.gb_coo(a), peers.gb_coo(b)
            return lambda: g.ss.concat(tiles(peers.gb_from_coo(ca), peers.gb_from_coo(cb)))
        ga, gb_ = peers.to_gb(a), peers.to_gb(b)
        return lambda: g.ss.concat(tiles(ga, gb_))
    if name in ("csr_slice_1d_csr", "coo_slice_1d_csr"):
        gm = peers.to_gb(ops["m"])
        rows = _half_rows(ops["m"].shape[0])
        return lambda: gm[rows, :].new()
    if name in ("coo_split_cv", "csr_split_cv"):
        gv = peers.gb_row(ops["v"])
        n, c = ops["shape"]
        return lambda: gv.ss.reshape(n, c)
    if name == "cv_collapse_csr_mul_cv":
        gm, gbv = peers.to_gb(ops["m"]), peers.gb_row(ops["b"])
        length = ops["m"].shape[0] * ops["m"].shape[1]
        return lambda: gm.ss.reshape(1, length).ewise_mult(gbv, binary.times).new()
    if name == "dv_sum_vstack_csr_csr_mul_dv":
        ga, gb_, gx = peers.to_gb(ops["a"]), peers.to_gb(ops["b"]), peers.gb_dense(ops["x"])
        return lambda: g.ss.concat([[ga], [gb_]]).mxv(gx, semiring.plus_times).new()
    if name == "csr_slice_1d_csr_mul_csr":
        ga, gb_ = peers.to_gb(ops["a"]), peers.to_gb(ops["b"])
        rows = _half_rows(ops["a"].shape[0])
        return lambda: ga[rows, :].new().ewise_mult(gb_, binary.times).new()
    raise KeyError(f"no GraphBLAS mapping for kernel {name!r}")


def tensora_call(kernel, ops: dict[str, Any]) -> Callable[[], Any] | str:
    """The zero-argument tensora call of ``kernel``, or why there is none."""
    name = kernel.name
    if name == "cv_collapse_csr_mul_cv":
        m, b = ops["m"], ops["b"]
        flat = sp.csr_array(m.reshape(1, m.shape[0] * m.shape[1]))
        a = sp.csr_array((flat.data, flat.indices, np.array([0, flat.nnz])),
                         shape=(flat.shape[1],))
        k = peers.tensora_kernel("c(i) = a(i) * b(i)", (("c", "s"), ("a", "s"), ("b", "s")))
        ta, tb = peers.to_tensora_vector(a), peers.to_tensora_vector(b)
        return lambda: k(a=ta, b=tb)
    if name == "dv_sum_vstack_csr_csr_mul_dv":
        stacked = sp.vstack([ops["a"], ops["b"]], format="csr")
        k = peers.tensora_kernel("y(i) = M(i,j) * x(j)", (("y", "d"), ("M", "ds"), ("x", "d")))
        tm = peers.to_tensora_csr(stacked)
        tx = peers.to_tensora_dense(ops["x"].astype(np.float64))
        return lambda: k(M=tm, x=tx)
    if name == "csr_slice_1d_csr_mul_csr":
        a, b = ops["a"], ops["b"]
        sliced = a[_half_rows(a.shape[0]), :].tocsr()
        k = peers.tensora_kernel("C(i,j) = A(i,j) * B(i,j)",
                                 (("C", "ds"), ("A", "ds"), ("B", "ds")))
        ta, tb = peers.to_tensora_csr(sliced), peers.to_tensora_csr(b)
        return lambda: k(A=ta, B=tb)
    return TENSORA_SHAPE_ONLY

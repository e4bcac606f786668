"""Scale sweep: ``sparsefold bench --sweep``. Everyday programs a new user would write, each
run at scale through the public API (``sf.jit``) and through scipy.sparse / NumPy, each in a
child process of its own.

Per program: is sparsefold's result the same as scipy's (``allclose`` over every position
either stores; our result must also be canonical and in the format asked for), sparsefold's
time (best of ``--repeat`` calls after a warm-up call, which compiles), scipy's (the same),
the ratio scipy / sparsefold, the child's peak RSS (``getrusage(RUSAGE_SELF).ru_maxrss``:
inputs, our calls, then scipy's), and the error if a side failed. A child that crashes, is
killed (OOM) or runs past ``--sweep-timeout`` is recorded as such and the sweep goes on.

Operands (float64, fixed seeds, so every child builds the same ones): ``A``, ``B``, ``C``
random N × N CSR with K stored entries each (``scipy.sparse.random_array``, values in
[0, 1)); ``Bc`` B as CSC; ``Ao`` A as COO; ``U`` A's entries as a non-canonical COO (each
entry split in two halves, shuffled); ``v`` a sparse (1, N) CSR row and ``w`` a sparse
(N, 1) CSC column, 2000 entries each; ``vd`` v dense, shape (N,); ``d``, ``x`` dense (N,);
``X`` dense (N, 8); ``S`` sparse N × 64 CSR, 5% dense. A program's arguments are named by its
lambda's parameters, in the order its expression first uses them.

Sizes per program (``tier``): ``full`` N, K; ``small`` N/10, K/10 (``A @ A`` and
``A[::2] @ B.T``, so scipy's product fits); ``dense`` N/100, K/100 (results with a value at
every position, ``A + 1``: N² of them at full size would be 320 GB).
"""

from __future__ import annotations

import argparse
import csv
import inspect
import json
import math
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

__all__ = ["Program", "PROGRAMS", "Operands", "FIELDS", "sweep", "report", "add_flag",
           "same_result"]


@dataclass(frozen=True)
class Program:
    """One sweep program. ``ours`` is what a user passes to ``sf.jit`` (with ``out``; None:
    sf.jit's default, dense for dense-valued results); ``scipy`` the same computation in
    scipy.sparse / NumPy. Both take the operands their parameters name."""

    name: str
    expression: str
    ours: Callable
    scipy: Callable
    out: str | None = "csr"
    tier: str = "full"


def _sf():
    import sparsefold as sf
    return sf


P = Program
# (sparsefold is imported inside the lambdas: the parent process never needs it)
PROGRAMS: tuple[Program, ...] = (
    # ---- n-ary elementwise ------------------------------------------------------------------
    P("add3", "A + B + C", lambda A, B, C: A + B + C, lambda A, B, C: A + B + C),
    P("mul_add", "A * B + C", lambda A, B, C: A * B + C, lambda A, B, C: A * B + C),
    P("add_mul", "(A + B) * C", lambda A, B, C: (A + B) * C, lambda A, B, C: (A + B) * C),
    P("mul", "A * B", lambda A, B: A * B, lambda A, B: A * B),
    P("lincomb", "2 * A - 3 * B", lambda A, B: 2 * A - 3 * B, lambda A, B: 2 * A - 3 * B),
    P("abs_sub", "abs(A - B)", lambda A, B: abs(A - B), lambda A, B: abs(A - B)),
    P("max_sub", "maximum(A, B) - C", lambda A, B, C: _sf().maximum(A, B) - C,
      lambda A, B, C: A.maximum(B) - C),
    P("minimum", "minimum(A, B)", lambda A, B: _sf().minimum(A, B),
      lambda A, B: A.minimum(B)),
    P("where", "where(A > 0, B, C)", lambda A, B, C: _sf().where(A > 0, B, C),
      lambda A, B, C: B.multiply(A > 0) + C - C.multiply(A > 0)),
    P("gt", "A > B", lambda A, B: A > B, lambda A, B: A > B),
    P("ne", "A != B", lambda A, B: A != B, lambda A, B: A != B),
    P("sub_T", "A - A.T", lambda A: A - A.T, lambda A: A - A.T),
    P("mul_T", "A * A.T", lambda A: A * A.T, lambda A: A * A.T),
    P("add_csr_csc", "A + Bc (CSR + CSC)", lambda A, Bc: A + Bc, lambda A, Bc: A + Bc),
    P("add_coo_csr", "Ao + B (COO + CSR)", lambda Ao, B: Ao + B, lambda Ao, B: Ao + B),
    # ---- broadcasting -----------------------------------------------------------------------
    P("row_scale", "A * d[:, None]", lambda A, d: A * d[:, None],
      lambda A, d: A.multiply(d[:, None])),
    P("col_scale", "A * x[None, :]", lambda A, x: A * x[None, :],
      lambda A, x: A.multiply(x[None, :])),
    P("col_scale_1d", "A * vd (dense (N,))", lambda A, vd: A * vd,
      lambda A, vd: A.multiply(vd)),
    P("scale2", "d[:, None] * A * x[None, :]", lambda d, A, x: d[:, None] * A * x[None, :],
      lambda d, A, x: A.multiply(d[:, None]).multiply(x[None, :])),
    P("mul_v", "A * v", lambda A, v: A * v, lambda A, v: A.multiply(v)),
    P("mul_w", "A * w", lambda A, w: A * w, lambda A, w: A.multiply(w)),
    P("mul_v_add", "A * v + B", lambda A, v, B: A * v + B, lambda A, v, B: A.multiply(v) + B),
    P("add_mul_v", "(A + B) * v", lambda A, B, v: (A + B) * v,
      lambda A, B, v: (A + B).multiply(v)),
    P("mul_v_mul", "A * v * B", lambda A, v, B: A * v * B,
      lambda A, v, B: A.multiply(v).multiply(B)),
    P("mul_v_w", "A * v * w", lambda A, v, w: A * v * w,
      lambda A, v, w: A.multiply(v).multiply(w)),
    P("mul_v_add_mul_w", "A * v + B * w", lambda A, v, B, w: A * v + B * w,
      lambda A, v, B, w: A.multiply(v) + B.multiply(w)),
    P("mul_x_add", "A * x[None, :] + B", lambda A, x, B: A * x[None, :] + B,
      lambda A, x, B: A.multiply(x[None, :]) + B),
    # ---- views ------------------------------------------------------------------------------
    P("strided_mul", "A[::2] * B[::2]", lambda A, B: A[::2] * B[::2],
      lambda A, B: A[::2] * B[::2]),
    P("flip_rows", "A[::-1]", lambda A: A[::-1], lambda A: A[::-1]),
    P("flip_cols_add", "A[:, ::-1] + B", lambda A, B: A[:, ::-1] + B,
      lambda A, B: A[:, ::-1] + B),
    P("shift_add", "A[1:] + B[:-1]", lambda A, B: A[1:] + B[:-1], lambda A, B: A[1:] + B[:-1]),
    P("hstack_scale", "hstack([A, B]) * 2", lambda A, B: _sf().hstack([A, B]) * 2,
      lambda A, B: sp.hstack([A, B], format="csr") * 2),
    P("vstack_add", "vstack([A, B]) + vstack([C, A])",
      lambda A, B, C: _sf().vstack([A, B]) + _sf().vstack([C, A]),
      lambda A, B, C: sp.vstack([A, B], format="csr") + sp.vstack([C, A], format="csr")),
    P("reshape_add", "(A + B).reshape(N // 2, -1)",
      lambda A, B: (A + B).reshape(A.shape[0] // 2, -1),
      lambda A, B: (A + B).reshape((A.shape[0] // 2, -1)), out="coo"),
    P("flatten_mul", "(A * B).reshape(-1)", lambda A, B: (A * B).reshape(-1),
      lambda A, B: (A * B).reshape(-1), out="coo"),
    # ---- dense-valued results ---------------------------------------------------------------
    P("add1", "A + 1", lambda A: A + 1, lambda A: A.toarray() + 1, out=None, tier="dense"),
    P("exp", "exp(A)", lambda A: _sf().exp(A), lambda A: np.exp(A.toarray()), out=None,
      tier="dense"),
    P("eq0", "A == 0", lambda A: A == 0, lambda A: A.toarray() == 0, out=None, tier="dense"),
    P("add_row", "A + x[None, :]", lambda A, x: A + x[None, :], lambda A, x: A + x[None, :],
      out=None, tier="dense"),
    P("expm1", "expm1(A)", lambda A: _sf().expm1(A), lambda A: A.expm1()),
    P("sum1_add1", "sum(A + 1, axis=1)", lambda A: _sf().sum(A + 1, axis=1),
      lambda A: A.sum(axis=1) + A.shape[1], out=None),
    P("sum_exp", "sum(exp(A))", lambda A: _sf().sum(_sf().exp(A)),
      lambda A: A.expm1().sum() + A.shape[0] * A.shape[1], out=None),
    P("count_eq0", "sum(A == 0)", lambda A: _sf().sum(A == 0),
      lambda A: A.shape[0] * A.shape[1] - A.count_nonzero(), out=None),
    # ---- reductions -------------------------------------------------------------------------
    P("sum", "sum(A)", lambda A: _sf().sum(A), lambda A: A.sum(), out=None),
    P("sum0", "sum(A, axis=0)", lambda A: _sf().sum(A, axis=0), lambda A: A.sum(axis=0),
      out=None),
    P("sum1", "sum(A, axis=1)", lambda A: _sf().sum(A, axis=1), lambda A: A.sum(axis=1),
      out=None),
    P("sum_mul", "sum(A * B)", lambda A, B: _sf().sum(A * B), lambda A, B: (A * B).sum(),
      out=None),
    P("sum1_mul", "sum(A * B, axis=1)", lambda A, B: _sf().sum(A * B, axis=1),
      lambda A, B: (A * B).sum(axis=1), out=None),
    P("max0_add", "max(A + B, axis=0)", lambda A, B: _sf().max(A + B, axis=0),
      lambda A, B: (A + B).max(axis=0).toarray(), out=None),
    P("max1", "max(A, axis=1)", lambda A: _sf().max(A, axis=1),
      lambda A: A.max(axis=1).toarray(), out=None),
    P("mean1", "mean(A, axis=1)", lambda A: _sf().mean(A, axis=1), lambda A: A.mean(axis=1),
      out=None),
    P("row_norms", "sqrt(sum(A * A, axis=1))", lambda A: _sf().sqrt(_sf().sum(A * A, axis=1)),
      lambda A: np.sqrt((A * A).sum(axis=1)), out=None),
    P("sum_slice_concat", "sum(vstack([A, B])[1::3])",
      lambda A, B: _sf().sum(_sf().vstack([A, B])[1::3]),
      lambda A, B: sp.vstack([A, B], format="csr")[1::3].sum(), out=None),
    # ---- contractions -----------------------------------------------------------------------
    P("matvec", "A @ x", lambda A, x: A @ x, lambda A, x: A @ x, out=None),
    P("matvec_T", "A.T @ x", lambda A, x: A.T @ x, lambda A, x: A.T @ x, out=None),
    P("vecmat", "x @ A", lambda x, A: x @ A, lambda x, A: x @ A, out=None),
    P("matvec_add", "A @ x + d", lambda A, x, d: A @ x + d, lambda A, x, d: A @ x + d,
      out=None),
    P("spmm", "A @ X", lambda A, X: A @ X, lambda A, X: A @ X, out=None),
    P("spmm_T", "A.T @ X", lambda A, X: A.T @ X, lambda A, X: A.T @ X, out=None),
    P("spmm_sparse", "A @ S", lambda A, S: A @ S, lambda A, S: A @ S),
    P("spgemm", "A @ A (N/10)", lambda A: A @ A, lambda A: A @ A, tier="small"),
    P("strided_spgemm_T", "A[::2] @ B.T (N/10)", lambda A, B: A[::2] @ B.T,
      lambda A, B: A[::2] @ B.T, tier="small"),
    P("vstack_matvec", "vstack([A, B]) @ x", lambda A, B, x: _sf().vstack([A, B]) @ x,
      lambda A, B, x: sp.vstack([A, B], format="csr") @ x, out=None),
    P("mul_v_matvec", "(A * v) @ x", lambda A, v, x: (A * v) @ x,
      lambda A, v, x: A.multiply(v) @ x, out=None),
    P("chain_matvec", "A @ (B @ x)", lambda A, B, x: A @ (B @ x),
      lambda A, B, x: A @ (B @ x), out=None),
    P("coo_matvec", "Ao @ x (COO)", lambda Ao, x: Ao @ x, lambda Ao, x: Ao @ x, out=None),
    # ---- statistics (issue #27: visit stored entries only) --------------------------------
    P("var0", "var(A, axis=0)", lambda A: _sf().var(A, axis=0),
      lambda A: _var(A, 0), out=None),
    P("var1", "var(A, axis=1)", lambda A: _sf().var(A, axis=1),
      lambda A: _var(A, 1), out=None),
    P("std0", "std(A, axis=0)", lambda A: _sf().std(A, axis=0),
      lambda A: np.sqrt(_var(A, 0)), out=None),
    P("std1", "std(A, axis=1)", lambda A: _sf().std(A, axis=1),
      lambda A: np.sqrt(_var(A, 1)), out=None),
    P("argmax0", "argmax(A, axis=0)", lambda A: _sf().argmax(A, axis=0),
      lambda A: A.argmax(axis=0), out=None),
    P("argmax1", "argmax(A, axis=1)", lambda A: _sf().argmax(A, axis=1),
      lambda A: A.argmax(axis=1), out=None),
    P("argmin0", "argmin(A, axis=0)", lambda A: _sf().argmin(A, axis=0),
      lambda A: A.argmin(axis=0), out=None),
    P("argmin1", "argmin(A, axis=1)", lambda A: _sf().argmin(A, axis=1),
      lambda A: A.argmin(axis=1), out=None),
    P("count_nonzero1", "count_nonzero(A, axis=1)",
      lambda A: _sf().count_nonzero(A, axis=1), lambda A: np.diff(A.indptr), out=None),
    P("tril_triu", "tril(A) @ triu(B) (N/10)", lambda A, B: _sf().tril(A) @ _sf().triu(B),
      lambda A, B: sp.tril(A, format="csr") @ sp.triu(B, format="csr"), tier="small"),
    # ---- everyday maps, views and gathers (issue #27, #30) ---------------------------------
    P("clip", "clip(A, -0.5, 0.5)", lambda A: _sf().clip(A, -0.5, 0.5),
      lambda A: sp.csr_array((np.clip(A.data, -0.5, 0.5), A.indices, A.indptr), shape=A.shape)),
    P("astype32", "A.astype(float32)", lambda A: A.astype("float32"),
      lambda A: A.astype(np.float32)),
    P("diagonal5", "diagonal(A, 5)", lambda A: _sf().diagonal(A, offset=5),
      lambda A: A.diagonal(5), out=None),
    P("kron", "kron(A, K) by broadcast and reshape (N/10)",
      lambda A, K: (A[:, None, :, None] * K[None, :, None, :]).reshape(
          A.shape[0] * K.shape[0], A.shape[1] * K.shape[1]),
      lambda A, K: sp.kron(A, K, format="csr"), tier="small"),
    P("row_gather", "A[idx]", lambda A, idx: A[idx], lambda A, idx: A[idx]),
    P("col_gather", "A[:, idx]", lambda A, idx: A[:, idx], lambda A, idx: A[:, idx]),
    P("row_gather_matvec", "A[idx] @ x", lambda A, idx, x: A[idx] @ x,
      lambda A, idx, x: A[idx] @ x, out=None),
    P("stack_index", "stack([A, B])[1]", lambda A, B: _sf().stack([A, B])[1],
      lambda A, B: B.copy()),
    P("tril_add_triu", "tril(A) + triu(B)", lambda A, B: _sf().tril(A) + _sf().triu(B),
      lambda A, B: sp.tril(A, format="csr") + sp.triu(B, format="csr")),
    P("where_sparse", "where(A > 0.5, A, 0)", lambda A: _sf().where(A > 0.5, A, 0),
      lambda A: A.multiply(A > 0.5)),
    P("sum0_strided", "sum(A[::2], axis=0)", lambda A: _sf().sum(A[::2], axis=0),
      lambda A: A[::2].sum(axis=0), out=None),
    P("mul_BT", "A * B.T", lambda A, B: A * B.T, lambda A, B: A.multiply(B.T)),
    P("slice2d_scale", "A[1::3, ::2] * 2", lambda A: A[1::3, ::2] * 2,
      lambda A: A[1::3, ::2] * 2),
    P("mean0_abs", "mean(abs(A - B), axis=0)", lambda A, B: _sf().mean(abs(A - B), axis=0),
      lambda A, B: abs(A - B).mean(axis=0), out=None),
    # ---- conversions ------------------------------------------------------------------------
    P("transpose", "A.T to CSR", lambda A: A.T, lambda A: A.T.tocsr()),
    P("coo_to_csr", "U (non-canonical COO) to CSR", lambda U: U, lambda U: U.tocsr()),
    P("csr_to_csc", "A to CSC", lambda A: A, lambda A: A.tocsc(), out="csc"),
)
del P

# not expressible, left out: scipy's `A + 1` / `A == 0` keep a sparse container (the first
# raises NotImplementedError, the second warns and stores N² - nnz entries); the sweep's
# scipy side densifies explicitly (toarray), as scipy's own message advises.

FIELDS = ["program", "expression", "tier", "n", "nnz", "correct", "sparsefold_ms", "scipy_ms",
          "ratio", "rss_gb", "rss_sparsefold_gb", "first_call_s", "result", "error"]

SEEDS = {"A": 1, "B": 2, "C": 3, "U": 4, "v": 5, "w": 6, "d": 7, "x": 8, "X": 9, "S": 10,
         "K": 11, "idx": 12}
LINE_NNZ = 2000
SPMM_COLS = 8
SKINNY_COLS = 64


def _var(A, axis: int) -> np.ndarray:
    """scipy has no var: E[x^2] - E[x]^2, one pass each (as a scipy user writes it)."""
    mean = np.asarray(A.mean(axis=axis)).ravel()
    return np.asarray(A.multiply(A).mean(axis=axis)).ravel() - mean * mean


def tier_size(tier: str, n: int, k: int) -> tuple[int, int]:
    """(rows = cols, stored entries per matrix) of a tier (module docstring)."""
    div = {"full": 1, "small": 10, "dense": 100}[tier]
    return max(n // div, 2), max(k // div, 1)


def _random(shape, nnz: int, seed: int, fmt: str = "csr"):
    density = min(1.0, nnz / (shape[0] * shape[1]))
    return sp.random_array(shape, density=density, format=fmt, rng=np.random.default_rng(seed),
                           dtype=np.float64)


class Operands:
    """The sweep's operands for one size (module docstring), each built on first use."""

    def __init__(self, n: int, k: int):
        self.n, self.k = n, k
        self._made: dict[str, Any] = {}

    def __getitem__(self, name: str):
        if name not in self._made:
            self._made[name] = getattr(self, "_make_" + name)()
        return self._made[name]

    def _line_nnz(self) -> int:
        return min(LINE_NNZ, max(1, self.n // 10))

    def _make_A(self): return _random((self.n, self.n), self.k, SEEDS["A"])
    def _make_B(self): return _random((self.n, self.n), self.k, SEEDS["B"])
    def _make_C(self): return _random((self.n, self.n), self.k, SEEDS["C"])
    def _make_Bc(self): return self["B"].tocsc()
    def _make_Ao(self): return self["A"].tocoo()

    def _make_U(self):
        a = self["A"].tocoo()
        order = np.random.default_rng(SEEDS["U"]).permutation(2 * a.nnz)
        rows = np.concatenate([a.row, a.row])[order]
        cols = np.concatenate([a.col, a.col])[order]
        data = np.concatenate([a.data * 0.25, a.data * 0.75])[order]
        return sp.coo_array((data, (rows, cols)), shape=a.shape)

    def _make_v(self): return _random((1, self.n), self._line_nnz(), SEEDS["v"])
    def _make_w(self): return _random((1, self.n), self._line_nnz(), SEEDS["w"]).T.tocsc()
    def _make_vd(self): return self["v"].toarray().ravel()
    def _make_d(self): return np.random.default_rng(SEEDS["d"]).random(self.n)
    def _make_x(self): return np.random.default_rng(SEEDS["x"]).random(self.n)
    def _make_X(self): return np.random.default_rng(SEEDS["X"]).random((self.n, SPMM_COLS))

    def _make_K(self):  # a small dense-ish block for kron
        return _random((4, 4), 10, 11)

    def _make_idx(self):  # row/column indices: a random half of them, unsorted, repeats
        return np.random.default_rng(12).integers(0, self.n, self.n // 2)

    def _make_S(self):
        return _random((self.n, SKINNY_COLS), int(0.05 * self.n * SKINNY_COLS), SEEDS["S"])


def operand_names(fn: Callable) -> list[str]:
    return list(inspect.signature(fn).parameters)


# ---- checking -------------------------------------------------------------------------------

def _linear(coords, shape) -> np.ndarray:
    key = np.zeros(coords[0].size if len(coords) else 0, dtype=np.int64)
    for c, n in zip(coords, shape):
        key = key * np.int64(n) + np.asarray(c).astype(np.int64, copy=False)
    return key


def _ours_entries(x, out: str | None):
    """(shape, keys or None, values) of our result as returned; raises ValueError when it is
    not the format asked for or not canonical (sorted, no duplicates)."""
    from sparsefold.benchmarks.check import Mismatch, result_entries
    if not sp.issparse(x):
        if out not in (None, "dense"):
            raise ValueError(f"expected a scipy {out} array, found {type(x).__name__}")
        x = np.asarray(x)
        return x.shape, None, x
    if out is not None and x.format != out:
        raise ValueError(f"expected a scipy {out} array, found {x.format}")
    try:
        if x.format == "csc":  # canonical iff its transpose, a CSR view, is
            result_entries(x.T, "csr", dtype=x.dtype)
            return _reference_entries(x)
        e = result_entries(x, x.format, dtype=x.dtype)
    except Mismatch as exc:
        raise ValueError(str(exc)) from None
    return e.shape, e.keys, e.values


def _reference_entries(x):
    if not sp.issparse(x):
        x = np.asarray(x)
        return x.shape, None, x
    c = sp.coo_array(x)
    c.sum_duplicates()
    keys = _linear(c.coords, c.shape)
    order = np.argsort(keys, kind="stable")
    return tuple(c.shape), keys[order], np.asarray(c.data)[order]


def _dense(shape, keys, values) -> np.ndarray:
    if keys is None:
        return np.asarray(values).ravel()
    size = math.prod(shape)
    if size > 200_000_000:
        raise ValueError(f"cannot compare a sparse and a dense result of {size} elements")
    out = np.zeros(size, dtype=np.result_type(values.dtype, np.float64))
    out[keys] = values
    return out


def same_result(got, want, out: str | None, rtol: float = 1e-7) -> str:
    """'' when ``got`` (ours) equals ``want`` (scipy's): the same shape, values ``allclose``
    (``rtol``; ``atol`` 1e-12 × the largest value) at every position either side stores, a
    missing entry counting as 0; otherwise what differs."""
    try:
        gs, gk, gv = _ours_entries(got, out)
    except ValueError as exc:
        return str(exc)
    ws, wk, wv = _reference_entries(want)
    if tuple(gs) != tuple(ws):
        return f"shape {tuple(gs)}, expected {tuple(ws)}"
    gv = np.asarray(gv).astype(np.float64)
    wv = np.asarray(wv).astype(np.float64)
    if gk is None or wk is None:
        try:
            a, b = _dense(gs, gk, gv), _dense(ws, wk, wv)
        except ValueError as exc:
            return str(exc)
        keys = None
    else:
        keys = np.union1d(gk, wk)
        a = np.zeros(keys.size)
        b = np.zeros(keys.size)
        a[np.searchsorted(keys, gk)] = gv
        b[np.searchsorted(keys, wk)] = wv
    scale = float(np.nanmax(np.abs(b))) if b.size and not np.isnan(b).all() else 0.0
    close = np.isclose(a, b, rtol=rtol, atol=1e-12 * scale, equal_nan=True)
    if close.all():
        return ""
    at = int(np.argmax(~close))
    where = int(keys[at]) if keys is not None else at
    pos = np.unravel_index(where, tuple(gs)) if gs else ()
    return (f"values differ at {tuple(int(i) for i in pos)}: {a[at]!r} vs scipy {b[at]!r} "
            f"({int((~close).sum())} positions differ)")


# ---- the child: one program ------------------------------------------------------------------

def _emit(**fields) -> None:
    print("SWEEP " + json.dumps(fields), flush=True)


def _error(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"[:300]


def _rss_gb() -> float:
    import resource
    kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    return round(kb * 1024 / 1e9, 3)


def _timed(fn: Callable, repeat: int, budget: float) -> tuple[Any, float, float | None]:
    """(warm-up result, warm-up seconds, best of ``repeat`` timed calls in ms). The runs are
    cut to what fits ``budget`` seconds at the warm-up's pace (at least one)."""
    from sparsefold.benchmarks.timing import best_of
    t0 = time.perf_counter()
    result = fn()
    warm = time.perf_counter() - t0
    runs = max(1, min(repeat, int(budget / max(warm, 1e-6))))
    timing = best_of(fn, runs, limit=max(budget, 1.0))
    best = None if timing.best is None else timing.best * 1000
    return result, warm, best


def load_programs(path: str | None) -> tuple[Program, ...]:
    """The built-in table, or the ``PROGRAMS`` of a Python file (tests inject programs)."""
    if not path:
        return PROGRAMS
    import importlib.util
    spec = importlib.util.spec_from_file_location("_sweep_programs", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return tuple(module.PROGRAMS)


def _child(name: str, n: int, k: int, repeat: int, budget: float,
           programs_file: str | None) -> None:
    from sparsefold.benchmarks.timing import steady_malloc
    steady_malloc()
    program = next(p for p in load_programs(programs_file) if p.name == name)
    rows, nnz = tier_size(program.tier, n, k)
    operands = Operands(rows, nnz)
    _emit(n=rows, nnz=nnz)
    ours_args = [operands[a] for a in operand_names(program.ours)]
    scipy_args = [operands[a] for a in operand_names(program.scipy)]
    _emit(rss_inputs_gb=_rss_gb())
    side = budget / 3  # time for each side's timed runs
    got = None
    try:
        import sparsefold as sf
        fn = sf.jit(program.ours, out=program.out) if program.out else sf.jit(program.ours)
        got, warm, best = _timed(lambda: fn(*ours_args), repeat, side)
        kind = type(got).__name__ + (f" {got.format}" if sp.issparse(got) else "")
        _emit(first_call_s=round(warm, 3), sparsefold_ms=best, result=kind)
    except BaseException as exc:  # MemoryError, KeyboardInterrupt from the timer too
        got = None
        _emit(error=_error(exc))
    _emit(rss_sparsefold_gb=_rss_gb())
    want = None
    try:
        want, _, best = _timed(lambda: program.scipy(*scipy_args), repeat, side)
        _emit(scipy_ms=best)
    except BaseException as exc:
        _emit(scipy_error=_error(exc))
    if got is not None and want is not None:
        try:
            _emit(mismatch=same_result(got, want, program.out))
        except Exception as exc:
            _emit(mismatch="checking failed: " + _error(exc))
    _emit(rss_gb=_rss_gb(), done=True)


# ---- the parent: one child per program --------------------------------------------------------

_CHILD = "import sys; from sparsefold.benchmarks import sweep; sweep._child_main(sys.argv[1:])"


def _child_main(argv: list[str]) -> None:
    name, n, k, repeat, budget, programs_file = argv
    _child(name, int(n), int(k), int(repeat), float(budget), programs_file or None)


def _run_child(program: Program, n: int, k: int, repeat: int, timeout: float,
               programs_file: str | None, workdir: Path) -> dict:
    """Run one program in a child process; its reported fields, plus ``exit`` (why it ended
    early, if it did) and ``wait_rss_gb`` (peak RSS from the kernel's accounting, for a
    child that could not report)."""
    out_path, err_path = workdir / f"{program.name}.out", workdir / f"{program.name}.err"
    with open(out_path, "wb") as out, open(err_path, "wb") as err:
        proc = subprocess.Popen(
            [sys.executable, "-c", _CHILD, program.name, str(n), str(k), str(repeat),
             str(timeout), programs_file or ""],
            stdout=out, stderr=err, start_new_session=True)
    deadline = time.monotonic() + timeout
    status, usage, timed_out = None, None, False
    while status is None:
        pid, st, ru = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            status, usage = st, ru
        elif time.monotonic() > deadline:
            timed_out = True
            os.killpg(proc.pid, signal.SIGKILL)  # the child's own session: it and its gcc
            _, status, usage = os.wait4(proc.pid, 0)
        else:
            time.sleep(0.05)
    proc.returncode = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen
    fields: dict[str, Any] = {}
    for line in out_path.read_text(errors="replace").splitlines():
        if line.startswith("SWEEP "):
            fields.update(json.loads(line[6:]))
    fields["wait_rss_gb"] = round(usage.ru_maxrss * 1024 / 1e9, 3)
    if timed_out:
        fields["exit"] = f"Timeout: no result in {timeout:g} s (killed)"
    elif proc.returncode < 0:
        sig = signal.Signals(-proc.returncode).name
        hint = " (out of memory?)" if sig == "SIGKILL" else ""
        fields["exit"] = f"{sig}: the child was killed{hint}"
    elif not fields.get("done"):
        tail = err_path.read_text(errors="replace").strip().splitlines()
        fields["exit"] = f"exit {proc.returncode}: {tail[-1] if tail else 'no output'}"[:300]
    return fields


def _row(program: Program, fields: dict) -> dict:
    errors = [fields.get("error"), fields.get("exit")]
    if fields.get("scipy_error"):
        errors.append("scipy: " + fields["scipy_error"])
    mismatch = fields.get("mismatch")
    if mismatch:
        errors.append("wrong: " + mismatch)
    ours, ref = fields.get("sparsefold_ms"), fields.get("scipy_ms")
    correct = "yes" if mismatch == "" else "no" if mismatch else "-"
    if fields.get("error") or (fields.get("exit") and "sparsefold_ms" not in fields):
        correct = "no"  # sparsefold failed: no result is not a correct one
    row = {
        "program": program.name, "expression": program.expression, "tier": program.tier,
        "n": fields.get("n", ""), "nnz": fields.get("nnz", ""), "correct": correct,
        "sparsefold_ms": _fmt(ours), "scipy_ms": _fmt(ref),
        "ratio": _fmt(ref / ours) if ours and ref else "",
        "rss_gb": fields.get("rss_gb", fields.get("wait_rss_gb", "")),
        "rss_sparsefold_gb": fields.get("rss_sparsefold_gb", ""),
        "first_call_s": fields.get("first_call_s", ""), "result": fields.get("result", ""),
        "error": "; ".join(e for e in errors if e),
    }
    return {k: str(v) for k, v in row.items()}  # as the CSV holds it


def _fmt(x: float | None) -> str:
    if x is None:
        return ""
    return f"{x:.4g}"


def select(names: list[str] | None, programs: tuple[Program, ...] = PROGRAMS):
    if not names:
        return list(programs)
    by_name = {p.name: p for p in programs}
    unknown = [n for n in names if n not in by_name]
    if unknown:
        raise SystemExit(f"no sweep program named {', '.join(unknown)} (known: "
                         f"{', '.join(by_name)})")
    return [by_name[n] for n in names]


def sweep(out_dir: Path, *, n: int = 200_000, k: int = 2_000_000, names: list[str] | None = None,
          repeat: int = 5, timeout: float = 300.0, programs_file: str | None = None,
          progress: bool = True) -> list[dict]:
    """Run the selected programs, one child process each; rows are appended to
    ``out_dir/sweep.csv`` as they finish (the file is started afresh)."""
    import tempfile
    programs = select(names, load_programs(programs_file))
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / "sweep.csv"
    rows = []
    with open(path, "w", newline="") as fh, \
            tempfile.TemporaryDirectory(prefix="sf-sweep-") as work:
        writer = csv.DictWriter(fh, FIELDS)
        writer.writeheader()
        for i, program in enumerate(programs, 1):
            started = time.perf_counter()
            fields = _run_child(program, n, k, repeat, timeout, programs_file, Path(work))
            row = _row(program, fields)
            writer.writerow(row)
            fh.flush()
            rows.append(row)
            if progress:
                print(f"sweep [{i}/{len(programs)}] {program.name}: correct {row['correct']}, "
                      f"ratio {row['ratio'] or '-'}, {time.perf_counter() - started:.1f} s"
                      + (f" ({row['error']})" if row["error"] else ""),
                      file=sys.stderr, flush=True)
    return rows


def geomean_ratio(rows: list[dict]) -> tuple[float | None, int, int]:
    """(geometric mean of scipy / sparsefold over the correct programs with both times, how
    many of those, how many below 1.0)."""
    ratios = [float(r["ratio"]) for r in rows if r["correct"] == "yes" and r["ratio"]]
    if not ratios:
        return None, 0, 0
    return math.exp(sum(math.log(x) for x in ratios) / len(ratios)), len(ratios), \
        sum(x < 1.0 for x in ratios)


def report(rows: list[dict], n: int, k: int) -> str:
    lines = [f"Scale sweep: N = {n}, K = {k} entries per matrix (tiers: small N/10, dense "
             f"N/100); {os.cpu_count()} cores, SPARSEFOLD_NUM_THREADS="
             f"{os.environ.get('SPARSEFOLD_NUM_THREADS', 'unset')}, load average "
             f"{os.getloadavg()[0]:.1f}", "",
             "| program | expression | N | correct | sparsefold ms | scipy ms | scipy/ours | "
             "peak RSS GB | error |", "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        error = r["error"].replace("|", "\\|")
        lines.append(f"| {r['program']} | `{r['expression']}` | {r['n']} | {r['correct']} | "
                     f"{r['sparsefold_ms']} | {r['scipy_ms']} | {r['ratio']} | {r['rss_gb']} | "
                     f"{error} |")
    mean, count, below = geomean_ratio(rows)
    lines.append("")
    if mean is None:
        lines.append("geometric mean of scipy/ours: no correct program with both times")
    else:
        lines.append(f"geometric mean of scipy/ours over {count} correct programs: "
                     f"{mean:.2f}x; below 1.0: {below}")
    wrong = [r["program"] for r in rows if r["correct"] == "no"]
    if wrong:
        lines.append(f"wrong or failed: {', '.join(wrong)}")
    return "\n".join(lines)


def add_flag(bench: argparse.ArgumentParser) -> None:
    """Add ``--sweep`` (and its options) to ``bench``: with it, ``bench`` runs the scale sweep
    instead of the suite (``--kernels``, ``--repeat`` and ``--out`` apply)."""
    bench.add_argument("--sweep", action="store_true",
                       help="run the scale sweep instead of the suite: ~60 everyday programs "
                            "at N x N, K entries, each in its own process, vs scipy "
                            "(DIR/sweep.csv and a Markdown table)")
    bench.add_argument("--sweep-n", type=int, default=200_000, metavar="N",
                       help="with --sweep: rows and columns of the matrices (default 200000)")
    bench.add_argument("--sweep-nnz", type=int, default=2_000_000, metavar="K",
                       help="with --sweep: stored entries per matrix (default 2000000)")
    bench.add_argument("--sweep-timeout", type=float, default=300.0, metavar="S",
                       help="with --sweep: seconds per program's process (default 300)")
    suite = bench.get_default("run")

    def dispatch(args: argparse.Namespace) -> int:
        if not args.sweep:
            return suite(args)
        from sparsefold.benchmarks.run import _names
        rows = sweep(args.out, n=args.sweep_n, k=args.sweep_nnz, names=_names(args.kernels),
                     repeat=args.repeat, timeout=args.sweep_timeout,
                     progress=not args.no_progress)
        print(report(rows, args.sweep_n, args.sweep_nnz))
        print(f"\nresults: {args.out / 'sweep.csv'}")
        return 0
    bench.set_defaults(run=dispatch)

"""The 15 kernels of BENCHMARKS.md, each prepared on one matrix as a ``Case``.

M is the input matrix, shape (N, C), canonical float32 CSR. Each kernel states its sparsefold
expression (traced with symbolic sizes where it can be, so one compiled kernel serves every
matrix), its input preparation, and the baselines of the table in BENCHMARKS.md:
scipy.sparse, and pydata/sparse — or, for the three fusion kernels, the same computation as
two separately compiled sparsefold kernels with a materialized intermediate ("unfused").

Inputs are prepared and converted before timing; a ``Case`` holds zero-argument callables
that run only the kernel call.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.sparse as sp

import sparsefold as sf

__all__ = ["Case", "Kernel", "KERNELS", "kernel_names", "floor_arrays", "GROUPS"]

GROUPS = ("hand-written", "conversion", "fusion")


@dataclass(frozen=True)
class Case:
    """One kernel prepared on one matrix.

    ``ours``, ``scipy``, ``other`` run the kernel (``other`` is pydata/sparse or the unfused
    sparsefold pipeline; None when pydata/sparse is not installed). ``out_shape`` is the
    shape our result must have (scipy returns ``(1, N*C)`` where we return ``(N*C,)``; the
    comparison is by row-major position, which reshaping does not change). ``floor_inputs``
    holds the arrays the fusion floor copies; other kernels' floors are sized from the
    expected output. ``operands`` are the prepared inputs by name, from which
    ``peer_kernels`` builds the peer baselines."""

    ours: Callable[[], Any]
    scipy: Callable[[], Any]
    other: Callable[[], Any] | None
    out_shape: tuple[int, ...]
    floor_inputs: tuple[np.ndarray, ...] | None = None
    operands: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Kernel:
    """A benchmark kernel: ``out`` is our result's format ("csr", "coo", "dense"; a 1-d
    "csr" result is a sparse vector); ``compare`` is "exact" (same pattern and values),
    "prune_zeros" (scipy's elementwise product drops zero products, ours keeps every
    intersected entry, so stored zeros are ignored on both sides) or "allclose" (dense
    sums in a different order)."""

    name: str
    group: str
    out: str
    expression: str
    prepare: Callable[[sp.csr_array], Case]
    other: str = "pydata"
    compare: str = "exact"


# ---- our kernels (one JitFunction each; compiled on first call, cached on disk) -------------

def _half_rows(m):
    return m[0:(m.shape[0] + 1) // 2:2, :]


_flatten = sf.jit(lambda m: m.reshape(-1), out="csr")
_hcat_coo = sf.jit(lambda a, b: sf.concat([a, b], axis=1), out="coo")
_vcat_coo = sf.jit(lambda a, b: sf.concat([a, b], axis=0), out="coo")
_hcat_csr = sf.jit(lambda a, b: sf.concat([a, b], axis=1), out="csr")
_vcat_csr = sf.jit(lambda a, b: sf.concat([a, b], axis=0), out="csr")
_slice_csr = sf.jit(_half_rows, out="csr")
_slice_coo = sf.jit(_half_rows, out="coo")
_flatten_mul = sf.jit(lambda a, b: a.reshape(-1) * b, out="csr")
_vcat_matvec = sf.jit(lambda a, b, x: sf.concat([a, b], axis=0) @ x, out="dense")
_slice_mul = sf.jit(lambda a, b: _half_rows(a) * b, out="csr")
# the second halves of the unfused pipelines
_mul_csr = sf.jit(lambda a, b: a * b, out="csr")
_matvec = sf.jit(lambda a, x: a @ x, out="dense")

_SPLITS: dict[tuple[int, int, str], Any] = {}


def _split(n: int, c: int, out: str):
    """``v.reshape(N, C)``: the target sizes are the matrix's, so the kernel is traced with
    them (one kernel per shape, built once and kept here and in the disk cache)."""
    key = (n, c, out)
    if key not in _SPLITS:
        _SPLITS[key] = sf.jit(lambda v: v.reshape(n, c), out=out)
    return _SPLITS[key]


# ---- input preparation ----------------------------------------------------------------------

def _pydata():
    try:
        import sparse
    except ImportError:  # the baseline is then recorded as unavailable
        return None
    return sparse


def _col_halves(m: sp.csr_array, fmt: str):
    h = m.shape[1] // 2
    return m[:, :h].asformat(fmt), m[:, h:].asformat(fmt)


def _row_halves(m: sp.csr_array, fmt: str):
    h = m.shape[0] // 2
    return m[:h, :].asformat(fmt), m[h:, :].asformat(fmt)


def _index_dtype(limit: int):
    return np.int32 if limit < 2**31 else np.int64


def _vector(keys: np.ndarray, values: np.ndarray, length: int) -> sp.csr_array:
    """A 1-d sparse vector (scipy csr_array of shape (length,)) with sorted ``keys``."""
    index = _index_dtype(max(length, keys.size))
    return sp.csr_array((values, keys.astype(index), np.array([0, keys.size], dtype=index)),
                        shape=(length,))


def _flat_keys(m: sp.csr_array) -> np.ndarray:
    rows = np.repeat(np.arange(m.shape[0], dtype=np.int64), np.diff(m.indptr))
    return rows * m.shape[1] + m.indices


def _as_row(v: sp.csr_array) -> sp.csr_array:
    """The 1-d vector as the (1, L) CSR matrix scipy baselines take."""
    index = v.indices.dtype
    return sp.csr_array((v.data, v.indices, np.array([0, v.nnz], dtype=index)),
                        shape=(1, v.shape[0]))


# ---- the 15 kernels -------------------------------------------------------------------------

def _cv_collapse_coo(m):
    n, c = m.shape
    a = m.tocoo()
    pd = _pydata()
    p = pd.COO.from_scipy_sparse(a) if pd else None
    return Case(ours=lambda: _flatten(a), scipy=lambda: a.reshape(1, n * c).tocsr(),
                other=(lambda: p.reshape((n * c,))) if pd else None, out_shape=(n * c,),
                operands={"a": a})


def _concat_case(axis: int, fmt_in: str, fmt_out: str, ours_fn):
    def prepare(m):
        a, b = (_col_halves if axis == 1 else _row_halves)(m, fmt_in)
        stack = sp.hstack if axis == 1 else sp.vstack
        pd = _pydata()
        if fmt_in == "coo":
            def to_scipy():
                return stack([a, b]) if fmt_out == "coo" else stack([a, b], format=fmt_out)
        else:
            def to_scipy():
                return stack([a, b], format=fmt_out)
        other = None
        if pd:
            cls = pd.COO if fmt_in == "coo" else pd.GCXS
            pa, pb = cls.from_scipy_sparse(a), cls.from_scipy_sparse(b)
            if fmt_in == "coo" and fmt_out == "coo":
                def other():
                    return pd.concatenate([pa, pb], axis=axis)
            else:
                def other():
                    return pd.concatenate([pa, pb], axis=axis).asformat(fmt_out)
        return Case(ours=lambda: ours_fn(a, b), scipy=to_scipy, other=other, out_shape=m.shape,
                    operands={"a": a, "b": b})
    return prepare


def _slice_case(fmt_out: str, ours_fn):
    def prepare(m):
        n = m.shape[0]
        pd = _pydata()
        g = pd.GCXS.from_scipy_sparse(m) if pd else None
        if fmt_out == "csr":
            def to_scipy():
                return m[0:(n + 1) // 2:2, :]
        else:
            def to_scipy():
                return m[0:(n + 1) // 2:2, :].tocoo()
        other = (lambda: g[0:(n + 1) // 2:2, :].asformat(fmt_out)) if pd else None
        rows = len(range(0, (n + 1) // 2, 2))
        return Case(ours=lambda: ours_fn(m), scipy=to_scipy, other=other,
                    out_shape=(rows, m.shape[1]), operands={"m": m})
    return prepare


def _split_case(fmt_out: str):
    def prepare(m):
        n, c = m.shape
        v = _vector(_flat_keys(m), m.data, n * c)
        v2 = _as_row(v)
        ours = _split(n, c, fmt_out)
        pd = _pydata()
        if fmt_out == "coo":
            def to_scipy():
                return v2.reshape(n, c)
        else:
            def to_scipy():
                return v2.reshape(n, c).tocsr()
        other = None
        if pd:
            g = pd.GCXS.from_scipy_sparse(v2).reshape((n * c,))

            def other():
                return g.reshape((n, c)).asformat(fmt_out)
        return Case(ours=lambda: ours(v), scipy=to_scipy, other=other, out_shape=(n, c),
                    operands={"v": v, "shape": (n, c)})
    return prepare


def _cv_collapse_csr_mul_cv(m):
    n, c = m.shape
    keys = _flat_keys(m)
    keep = keys > 0  # flatten(M) shifted left by one position: entry k moves to k - 1
    b = _vector(keys[keep] - 1, m.data[keep], n * c)
    b2 = _as_row(b)
    return Case(ours=lambda: _flatten_mul(m, b),
                scipy=lambda: m.reshape(1, n * c).multiply(b2),
                other=lambda: _mul_csr(_flatten(m), b), out_shape=(n * c,),
                floor_inputs=(m.data, m.indices, m.indptr, b.data, b.indices, b.indptr),
                operands={"m": m, "b": b})


def _dv_sum_vstack_csr_csr_mul_dv(m):
    a, b = _row_halves(m, "csr")
    x = np.random.default_rng(42).random(m.shape[1], dtype=np.float32)
    return Case(ours=lambda: _vcat_matvec(a, b, x), scipy=lambda: sp.vstack([a, b]) @ x,
                other=lambda: _matvec(_vcat_csr(a, b), x), out_shape=(m.shape[0],),
                floor_inputs=(a.data, a.indices, a.indptr, b.data, b.indices, b.indptr, x),
                operands={"a": a, "b": b, "x": x})


def _csr_slice_1d_csr_mul_csr(m):
    n = m.shape[0]
    a = m[:, :-2].tocsr()
    b = m[0:(n + 1) // 2:2, 2:].tocsr()
    return Case(ours=lambda: _slice_mul(a, b),
                scipy=lambda: a[0:(n + 1) // 2:2, :].multiply(b),
                other=lambda: _mul_csr(_slice_csr(a), b), out_shape=b.shape,
                floor_inputs=(a.data, a.indices, a.indptr, b.data, b.indices, b.indptr),
                operands={"a": a, "b": b})


_SLICE = "M[0:(N+1)//2:2, :]"
KERNELS: tuple[Kernel, ...] = (
    Kernel("cv_collapse_coo", "hand-written", "csr", "M.reshape(-1)  (COO -> vector)",
           _cv_collapse_coo),
    Kernel("coo_hstack_coo_coo", "hand-written", "coo", "concat([a, b], axis=1)",
           _concat_case(1, "coo", "coo", _hcat_coo)),
    Kernel("coo_vstack_coo_coo", "hand-written", "coo", "concat([a, b], axis=0)",
           _concat_case(0, "coo", "coo", _vcat_coo)),
    Kernel("csr_hstack_csr_csr", "hand-written", "csr", "concat([a, b], axis=1)",
           _concat_case(1, "csr", "csr", _hcat_csr)),
    Kernel("csr_vstack_csr_csr", "hand-written", "csr", "concat([a, b], axis=0)",
           _concat_case(0, "csr", "csr", _vcat_csr)),
    Kernel("csr_slice_1d_csr", "hand-written", "csr", _SLICE, _slice_case("csr", _slice_csr)),
    Kernel("coo_split_cv", "conversion", "coo", "v.reshape(N, C)  (vector -> COO)",
           _split_case("coo")),
    Kernel("csr_split_cv", "conversion", "csr", "v.reshape(N, C)  (vector -> CSR)",
           _split_case("csr")),
    Kernel("csr_hstack_coo_coo", "conversion", "csr", "concat([a, b], axis=1)",
           _concat_case(1, "coo", "csr", _hcat_csr)),
    Kernel("coo_vstack_csr_csr", "conversion", "coo", "concat([a, b], axis=0)",
           _concat_case(0, "csr", "coo", _vcat_coo)),
    Kernel("coo_hstack_csr_csr", "conversion", "coo", "concat([a, b], axis=1)",
           _concat_case(1, "csr", "coo", _hcat_coo)),
    Kernel("coo_slice_1d_csr", "conversion", "coo", _SLICE, _slice_case("coo", _slice_coo)),
    Kernel("cv_collapse_csr_mul_cv", "fusion", "csr", "A.reshape(-1) * b",
           _cv_collapse_csr_mul_cv, other="unfused", compare="prune_zeros"),
    Kernel("dv_sum_vstack_csr_csr_mul_dv", "fusion", "dense", "concat([a, b], axis=0) @ x",
           _dv_sum_vstack_csr_csr_mul_dv, other="unfused", compare="allclose"),
    Kernel("csr_slice_1d_csr_mul_csr", "fusion", "csr", "A[0:(N+1)//2:2, :] * B",
           _csr_slice_1d_csr_mul_csr, other="unfused", compare="prune_zeros"),
)


def kernel_names() -> list[str]:
    return [k.name for k in KERNELS]


def floor_arrays(kernel: Kernel, case: Case, out_nnz: int) -> tuple[np.ndarray, ...]:
    """The arrays whose NumPy copy is the kernel's floor: the fusion kernels' inputs, else
    arrays of the output's sizes (values, then each coordinate or position array) with the
    narrowest index dtype that holds them — the least data any kernel must write."""
    if case.floor_inputs is not None:
        return case.floor_inputs
    shape = case.out_shape
    values = np.ones(out_nnz, dtype=np.float32)
    if kernel.out == "coo":
        return (values,) + tuple(np.zeros(out_nnz, dtype=_index_dtype(n)) for n in shape)
    if kernel.out == "csr" and len(shape) in (1, 2):
        rows = 1 if len(shape) == 1 else shape[0]
        return (values, np.zeros(out_nnz, dtype=_index_dtype(shape[-1])),
                np.zeros(rows + 1, dtype=_index_dtype(out_nnz)))
    return (np.ones(int(np.prod(shape)), dtype=np.float32),)

"""The ``compute`` group (issue #11 part 4): everyday sparse compute programs, separate from
the paper's 15 kernels, each as one ``sf.jit`` function timed against scipy.sparse, GraphBLAS
(1 thread and default threads, native output and exported to scipy), tensora where TACO can
express it, and — for the fused programs — the unfused sparsefold pipeline (separately
compiled kernels with materialized intermediates).

Operands, all float64 (tensora computes in float64 only; every system gets the same values),
derived deterministically from one input matrix A (N × C, canonical CSR):

* B — A with its rows rotated by one (row i of B is row (i + 1) mod N of A);
* C — A with its columns rotated by one (column j of A moves to (j + 1) mod C);
* S — C × 64 random sparse, ~5% dense (3.2 entries per row), seed 11;
* d — N random values (row scaling), x — C random values (SpMV), X — C × 8 row-major
  (SpMM), all seed 42.

B and C have A's shape and its kind of pattern, and overlap it partly, so ``A * B`` and
``A + B + C`` do real merging. ``A @ A`` runs only on square matrices whose product fits:
its entry count is bounded first (``product_nnz_estimate``: the flop count, or a row sample
when that bound is too high) and the program is skipped above ``PRODUCT_NNZ_LIMIT``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

import sparsefold as sf
from sparsefold.benchmarks import peers

__all__ = ["Program", "ComputeCase", "Pipeline", "Operands", "PROGRAMS", "program_names",
           "product_nnz_estimate", "PRODUCT_NNZ_LIMIT", "SKINNY_COLS", "SPMM_COLS"]

# 25M entries of float64 + int32 index: 300 MB per result
PRODUCT_NNZ_LIMIT = 25_000_000
SKINNY_COLS = 64
SPMM_COLS = 8


@dataclass(frozen=True)
class Pipeline:
    """A sparsefold computation: ``stages`` are (jit function, arguments) pairs, run in order;
    an argument ``None`` is the previous stage's result. ``shapes`` are the stages' output
    shapes (for probing a stage's plan before its input exists, with an empty CSR stand-in
    of that shape); ``inner`` the contracted extent of each stage (1: none)."""

    stages: tuple[tuple[Any, tuple], ...]
    shapes: tuple[tuple[int, ...], ...]
    inner: tuple[int, ...] = ()

    def run(self):
        result = None
        for fn, args in self.stages:
            result = fn(*[result if a is None else a for a in args])
        return result

    def probe_args(self) -> list[tuple[Any, tuple, tuple[int, ...], int]]:
        """(jit function, arguments with stand-ins for intermediates, output shape, inner
        extent) per stage."""
        out, prev = [], None
        inner = self.inner or (1,) * len(self.stages)
        for (fn, args), shape, k in zip(self.stages, self.shapes, inner):
            out.append((fn, tuple(prev if a is None else a for a in args), shape, k))
            prev = sp.csr_array(shape, dtype=np.float64) if len(shape) == 2 else None
        return out


@dataclass(frozen=True)
class ComputeCase:
    """One program prepared on one matrix. ``gb`` and ``tensora`` are builders of the peer's
    zero-argument call (converting the inputs, before timing), or the reason the peer
    cannot run this program ("–" in the tables). ``skip`` is set when the program does not
    apply to this matrix at all (then nothing runs)."""

    out: str                      # "csr", "dense" (vector, matrix or 0-d scalar)
    out_shape: tuple[int, ...]
    scipy: Callable[[], Any] | None = None
    ours: Pipeline | None = None
    unfused: Pipeline | None = None
    gb: Callable[[], Any] | str = "not mapped"
    tensora: Callable[[], Any] | str = "not mapped"
    skip: str = ""


@dataclass(frozen=True)
class Program:
    name: str
    expression: str
    fused: bool
    prepare: Callable[[Operands], ComputeCase]
    notes: str = ""


# ---- our kernels ----------------------------------------------------------------------------

_add3 = sf.jit(lambda a, b, c: a + b + c, out="csr")
_mul_add = sf.jit(lambda a, b, c: a * b + c, out="csr")
_sub_transpose = sf.jit(lambda a: a - a.T, out="csr")
_transpose = sf.jit(lambda a: a.T, out="csr")
_matmul = sf.jit(lambda a, b: a @ b, out="csr")
_sum_mul = sf.jit(lambda a, b: sf.sum(a * b), out="dense")
_row_scale = sf.jit(lambda a, d: a * d[:, None], out="csr")
_matvec = sf.jit(lambda a, x: a @ x, out="dense")
_vstack_matmul = sf.jit(lambda a, b, s: sf.vstack([a, b]) @ s, out="csr")
# the pieces of the unfused pipelines
_add = sf.jit(lambda a, b: a + b, out="csr")
_sub = sf.jit(lambda a, b: a - b, out="csr")
_mul = sf.jit(lambda a, b: a * b, out="csr")
_sum = sf.jit(lambda a: sf.sum(a), out="dense")
_vstack = sf.jit(lambda a, b: sf.vstack([a, b]), out="csr")


# ---- operands -------------------------------------------------------------------------------

def _rotate_rows(a: sp.csr_array) -> sp.csr_array:
    n = a.shape[0]
    return a[np.roll(np.arange(n), -1)].tocsr() if n else a.copy()


def _rotate_cols(a: sp.csr_array) -> sp.csr_array:
    c = a.shape[1]
    out = sp.csr_array((a.data.copy(), (a.indices + 1) % c if c else a.indices.copy(),
                        a.indptr.copy()), shape=a.shape)
    out.sort_indices()
    return out


class Operands:
    """A's derived operands (module docstring) and their peer conversions, each made once
    per matrix on first use — always before any timing."""

    def __init__(self, matrix: sp.csr_array):
        self.A = sp.csr_array(matrix, dtype=np.float64)
        self.A.sum_duplicates()
        self.shape = self.A.shape
        self._converted: dict[tuple[str, str], Any] = {}

    @functools.cached_property
    def B(self): return _rotate_rows(self.A)

    @functools.cached_property
    def C(self): return _rotate_cols(self.A)

    @functools.cached_property
    def S(self):
        return sp.random_array((self.shape[1], SKINNY_COLS), density=0.05, format="csr",
                               rng=np.random.default_rng(11), dtype=np.float64)

    @functools.cached_property
    def d(self): return np.random.default_rng(42).random(self.shape[0])

    @functools.cached_property
    def x(self): return np.random.default_rng(42).random(self.shape[1])

    @functools.cached_property
    def X(self): return np.random.default_rng(42).random((self.shape[1], SPMM_COLS))

    def gb(self, name: str):
        """The GraphBLAS object of operand ``name`` ("A", "B", "C", "S", "x", "X", "D": the
        diagonal matrix of d), converted once."""
        key = ("gb", name)
        if key not in self._converted:
            if name == "D":
                value = peers.gb_dense(self.d).diag()
            else:
                v = getattr(self, name)
                value = peers.gb_dense(v) if isinstance(v, np.ndarray) else peers.to_gb(v)
            self._converted[key] = value
        return self._converted[key]

    def ta(self, name: str):
        """The tensora tensor of operand ``name`` (sparse as CSR; "A^T" is A stored by
        columns, for a program that reads A transposed), converted once."""
        key = ("ta", name)
        if key not in self._converted:
            if name == "A^T":
                value = peers.to_tensora_csc(self.A)
            else:
                v = getattr(self, name)
                value = peers.to_tensora_dense(v) if isinstance(v, np.ndarray) else \
                    peers.to_tensora_csr(v)
            self._converted[key] = value
        return self._converted[key]


def _gb_ops():
    from graphblas import binary, monoid, semiring
    return binary, monoid, semiring


def _tensora(assignment: str, formats: dict[str, str], ops: Operands, args: dict[str, str]):
    """A zero-argument tensora call, or the reason TACO cannot express it (its error)."""
    try:
        kernel = peers.tensora_kernel(assignment, tuple(formats.items()))
    except Exception as exc:
        return f"tensora finds no kernel: {type(exc).__name__}: {exc}".splitlines()[0][:200]
    tensors = {name: ops.ta(operand) for name, operand in args.items()}
    return lambda: kernel(**tensors)


# ---- the programs ---------------------------------------------------------------------------

def _p(*stages, shapes, inner=()) -> Pipeline:
    return Pipeline(tuple(stages), tuple(shapes), tuple(inner))


def _add3_case(o: Operands) -> ComputeCase:
    A, B, C = o.A, o.B, o.C

    def gb():
        binary, _, _ = _gb_ops()
        ga, gb_, gc = o.gb("A"), o.gb("B"), o.gb("C")
        return lambda: ga.ewise_add(gb_, binary.plus).new().ewise_add(gc, binary.plus).new()
    return ComputeCase(
        "csr", A.shape, scipy=lambda: A + B + C,
        ours=_p((_add3, (A, B, C)), shapes=[A.shape]),
        unfused=_p((_add, (A, B)), (_add, (None, C)), shapes=[A.shape] * 2),
        gb=gb,
        tensora=lambda: (_tensora(
            "D(i,j) = A(i,j) + B(i,j) + C(i,j)", {"D": "ds", "A": "ds", "B": "ds", "C": "ds"},
            o, {"A": "A", "B": "B", "C": "C"})))


def _mul_add_case(o: Operands) -> ComputeCase:
    A, B, C = o.A, o.B, o.C

    def gb():
        binary, _, _ = _gb_ops()
        ga, gb_, gc = o.gb("A"), o.gb("B"), o.gb("C")
        return lambda: ga.ewise_mult(gb_, binary.times).new().ewise_add(gc, binary.plus).new()
    return ComputeCase(
        "csr", A.shape, scipy=lambda: A.multiply(B) + C,
        ours=_p((_mul_add, (A, B, C)), shapes=[A.shape]),
        unfused=_p((_mul, (A, B)), (_add, (None, C)), shapes=[A.shape] * 2),
        gb=gb,
        tensora=lambda: (_tensora(
            "D(i,j) = A(i,j) * B(i,j) + C(i,j)", {"D": "ds", "A": "ds", "B": "ds", "C": "ds"},
            o, {"A": "A", "B": "B", "C": "C"})))


def _square(o: Operands, what: str) -> str:
    n, c = o.shape
    return "" if n == c else f"{what} needs a square matrix, found {n} x {c}"


def _sub_transpose_case(o: Operands) -> ComputeCase:
    A = o.A
    if (why := _square(o, "A - A.T")):
        return ComputeCase("csr", A.shape, skip=why)

    def gb():
        binary, _, _ = _gb_ops()
        ga = o.gb("A")
        return lambda: ga.ewise_union(ga.T, binary.minus, 0.0, 0.0).new()
    return ComputeCase(
        "csr", A.shape, scipy=lambda: A - A.T,
        ours=_p((_sub_transpose, (A,)), shapes=[A.shape]),
        unfused=_p((_transpose, (A,)), (_sub, (A, None)), shapes=[A.shape] * 2),
        gb=gb,
        # TACO cannot reorder inside a kernel: A.T is given to it already stored by columns
        tensora=lambda: (_tensora(
            "D(i,j) = A(i,j) - B(j,i)", {"D": "ds", "A": "ds", "B": "d1s0"},
            o, {"A": "A", "B": "A^T"})))


def _transpose_case(o: Operands) -> ComputeCase:
    A = o.A

    def gb():
        ga = o.gb("A")
        return lambda: ga.T.new()
    n, c = A.shape
    return ComputeCase(
        "csr", (c, n), scipy=lambda: A.T.tocsr(),
        ours=_p((_transpose, (A,)), shapes=[(c, n)]),
        gb=gb,
        tensora="TACO cannot reorder within a kernel: the input conversion would be the "
                "whole computation")


def product_nnz_estimate(a: sp.csr_array, b: sp.csr_array, sample: int = 2000,
                         seed: int = 5) -> tuple[int, str]:
    """(estimated nnz of ``a @ b``, how): the flop count ``sum_k nnz(a[:, k]) *
    nnz(b[k, :])`` (an upper bound, O(nnz)), capped at rows × cols; when that bound is above
    ``PRODUCT_NNZ_LIMIT``, the exact nnz of ``sample`` random rows of the product, scaled."""
    cols_a = np.bincount(a.indices, minlength=a.shape[1]).astype(np.int64)
    rows_b = np.diff(b.indptr).astype(np.int64)
    bound = min(int(cols_a @ rows_b), a.shape[0] * b.shape[1])
    if bound <= PRODUCT_NNZ_LIMIT or a.shape[0] <= sample:
        return bound, "flop bound"
    rows = np.random.default_rng(seed).choice(a.shape[0], sample, replace=False)
    part = (a[np.sort(rows)] @ b).nnz
    return int(part * a.shape[0] / sample), f"{sample}-row sample"


def _spgemm_square_case(o: Operands) -> ComputeCase:
    A = o.A
    if (why := _square(o, "A @ A")):
        return ComputeCase("csr", A.shape, skip=why)
    est, how = product_nnz_estimate(A, A)
    if est > PRODUCT_NNZ_LIMIT:
        return ComputeCase("csr", A.shape, skip=f"A @ A has ~{est:.3g} entries ({how}) > "
                                               f"{PRODUCT_NNZ_LIMIT:.3g}: does not fit")

    def gb():
        _, _, semiring = _gb_ops()
        ga = o.gb("A")
        return lambda: ga.mxm(ga, semiring.plus_times).new()
    return ComputeCase(
        "csr", A.shape, scipy=lambda: A @ A,
        ours=_p((_matmul, (A, A)), shapes=[A.shape], inner=[A.shape[1]]),
        gb=gb,
        tensora="TACO without a workspace finds only inner products: O(rows × cols) "
                "iterations")


def _spgemm_skinny_case(o: Operands) -> ComputeCase:
    A, S = o.A, o.S
    shape = (A.shape[0], SKINNY_COLS)

    def gb():
        _, _, semiring = _gb_ops()
        ga, gs = o.gb("A"), o.gb("S")
        return lambda: ga.mxm(gs, semiring.plus_times).new()
    # TACO without a workspace has no row-wise product with a sparse result (its only
    # sparse-output kernel is inner products: rows × nnz(S) merge steps, hours at scale);
    # it scatters into a dense N × 64 result instead, and that is what it is timed on
    return ComputeCase(
        "csr", shape, scipy=lambda: A @ S,
        ours=_p((_matmul, (A, S)), shapes=[shape], inner=[A.shape[1]]),
        gb=gb,
        tensora=lambda: (_tensora(
            "D(i,j) = A(i,k) * S(k,j)", {"D": "dd", "A": "ds", "S": "ds"},
            o, {"A": "A", "S": "S"})))


def _sum_mul_case(o: Operands) -> ComputeCase:
    A, B = o.A, o.B

    def gb():
        binary, monoid, _ = _gb_ops()
        ga, gb_ = o.gb("A"), o.gb("B")
        return lambda: ga.ewise_mult(gb_, binary.times).new().reduce_scalar(monoid.plus).new()
    return ComputeCase(
        "dense", (), scipy=lambda: np.asarray(A.multiply(B).sum()),
        ours=_p((_sum_mul, (A, B)), shapes=[()]),
        unfused=_p((_mul, (A, B)), (_sum, (None,)), shapes=[A.shape, ()]),
        gb=gb,
        tensora=lambda: (_tensora(
            "s() = A(i,j) * B(i,j)", {"s": "", "A": "ds", "B": "ds"}, o, {"A": "A", "B": "B"})))


def _row_scale_case(o: Operands) -> ComputeCase:
    A, d = o.A, o.d

    def gb():
        _, _, semiring = _gb_ops()
        ga, gd = o.gb("A"), o.gb("D")
        return lambda: gd.mxm(ga, semiring.plus_times).new()
    return ComputeCase(
        "csr", A.shape, scipy=lambda: sp.diags_array(d) @ A,
        ours=_p((_row_scale, (A, d)), shapes=[A.shape]),
        gb=gb,
        tensora=lambda: (_tensora(
            "D(i,j) = A(i,j) * d(i)", {"D": "ds", "A": "ds", "d": "d"}, o, {"A": "A", "d": "d"})))


def _spmv_case(o: Operands) -> ComputeCase:
    A, x = o.A, o.x

    def gb():
        _, _, semiring = _gb_ops()
        ga, gx = o.gb("A"), o.gb("x")
        return lambda: ga.mxv(gx, semiring.plus_times).new()
    return ComputeCase(
        "dense", (A.shape[0],), scipy=lambda: A @ x,
        ours=_p((_matvec, (A, x)), shapes=[(A.shape[0],)], inner=[A.shape[1]]),
        gb=gb,
        tensora=lambda: (_tensora(
            "y(i) = A(i,j) * x(j)", {"y": "d", "A": "ds", "x": "d"}, o, {"A": "A", "x": "x"})))


def _spmm_case(o: Operands) -> ComputeCase:
    A, X = o.A, o.X
    shape = (A.shape[0], SPMM_COLS)

    def gb():
        _, _, semiring = _gb_ops()
        ga, gx = o.gb("A"), o.gb("X")
        return lambda: ga.mxm(gx, semiring.plus_times).new()
    return ComputeCase(
        "dense", shape, scipy=lambda: A @ X,
        ours=_p((_matvec, (A, X)), shapes=[shape], inner=[A.shape[1]]),
        gb=gb,
        tensora=lambda: (_tensora(
            "Y(i,j) = A(i,k) * X(k,j)", {"Y": "dd", "A": "ds", "X": "dd"},
            o, {"A": "A", "X": "X"})))


def _vstack_matmul_case(o: Operands) -> ComputeCase:
    A, B, S = o.A, o.B, o.S
    stacked = (2 * A.shape[0], A.shape[1])
    shape = (stacked[0], SKINNY_COLS)

    def gb():
        _, _, semiring = _gb_ops()
        g = peers.gb()
        ga, gb_, gs = o.gb("A"), o.gb("B"), o.gb("S")
        return lambda: g.ss.concat([[ga], [gb_]]).mxm(gs, semiring.plus_times).new()
    return ComputeCase(
        "csr", shape, scipy=lambda: sp.vstack([A, B], format="csr") @ S,
        ours=_p((_vstack_matmul, (A, B, S)), shapes=[shape], inner=[A.shape[1]]),
        unfused=_p((_vstack, (A, B)), (_matmul, (None, S)), shapes=[stacked, shape],
                   inner=[1, A.shape[1]]),
        gb=gb,
        tensora="TACO has no concatenation")


PROGRAMS: tuple[Program, ...] = (
    Program("add3", "A + B + C", True, _add3_case),
    Program("mul_add", "A * B + C", True, _mul_add_case),
    Program("sub_transpose", "A - A.T", True, _sub_transpose_case,
            "tensora gets A.T already stored by columns (its reorder is not timed)"),
    Program("transpose_csr", "A.T -> csr", False, _transpose_case),
    Program("spgemm_square", "A @ A", False, _spgemm_square_case,
            f"square matrices whose product has <= {PRODUCT_NNZ_LIMIT:.3g} entries"),
    Program("spgemm_skinny", f"A @ S (S sparse, {SKINNY_COLS} columns)", False,
            _spgemm_skinny_case, "tensora writes a dense N × 64 result (no workspace)"),
    Program("sum_mul", "sf.sum(A * B)", True, _sum_mul_case),
    Program("row_scale", "A * d[:, None]", False, _row_scale_case,
            "scipy: diags_array(d) @ A; GraphBLAS: diag(d) @ A"),
    Program("spmv", "A @ x", False, _spmv_case),
    Program("spmm", f"A @ X (X dense, {SPMM_COLS} columns)", False, _spmm_case),
    Program("vstack_matmul", "vstack(A, B) @ S", True, _vstack_matmul_case,
            "the right operand is the 64-column S, so the product stays small on any matrix"),
)


def program_names() -> list[str]:
    return [p.name for p in PROGRAMS]

"""The standard's ``linalg`` extension.

Through the language (lazy; a sparse input stays sparse where the result is): ``matmul``,
``matrix_transpose``, ``tensordot``, ``vecdot``, ``diagonal``, ``outer``, ``trace``,
``cross``, ``vector_norm``, ``matrix_norm`` with ``ord`` of ``"fro"``, 1, -1, inf or -inf,
and ``matrix_power`` with ``n >= 0`` (repeated squaring).

The factorizations — ``cholesky``, ``det``, ``eigh``, ``eigvalsh``, ``inv``, ``pinv``,
``qr``, ``slogdet``, ``solve``, ``svd``, ``svdvals``, ``matrix_rank``, ``matrix_norm`` with
``ord`` 2, -2 or ``"nuc"`` and ``matrix_power`` with ``n < 0`` — have no program in the
language (they are dense by nature: their results fill in). They compute at once with
NumPy's LAPACK on the materialized input, densely, and return dense arrays: the one place
the namespace calls NumPy on data, documented in docs/array_api.md.
"""

from __future__ import annotations

import operator
from typing import NamedTuple

import numpy as np

from sparsefold import functions as f
from sparsefold.array_api._functions import vecdot
from sparsefold.elementwise import ELEMENTWISE as _E
from sparsefold.lazy import LazyArray, asarray
from sparsefold.spec.errors import IllFormedProgram

__all__ = ["cholesky", "cross", "det", "diagonal", "eigh", "eigvalsh", "inv", "matmul",
           "matrix_norm", "matrix_power", "matrix_rank", "matrix_transpose", "outer", "pinv",
           "qr", "slogdet", "solve", "svd", "svdvals", "tensordot", "trace", "vecdot",
           "vector_norm"]

matmul = f.matmul
matrix_transpose = f.matrix_transpose
tensordot = f.tensordot
outer = f.outer


def diagonal(x, /, *, offset: int = 0) -> LazyArray:
    return f.diagonal(x, offset=offset, axis1=-2, axis2=-1)


def trace(x, /, *, offset: int = 0, dtype=None) -> LazyArray:
    return f.sum(diagonal(x, offset=offset), axis=-1, dtype=dtype)


def cross(x1, x2, /, *, axis: int = -1) -> LazyArray:
    """The cross product of 3-vectors along ``axis`` (the operands broadcast)."""
    a, b = asarray(x1), asarray(x2)
    if not -min(a.ndim, b.ndim) <= axis < 0:
        raise IllFormedProgram(f"cross: axis must be negative and within {a.ndim} dimensions,"
                               f" found {axis}")
    if a.shape[axis] != 3 or b.shape[axis] != 3:
        raise IllFormedProgram(f"cross: the axis must have size 3, found {a.shape[axis]} and "
                               f"{b.shape[axis]}")
    ai = [f.take(a, np.array(i), axis=axis) for i in range(3)]
    bi = [f.take(b, np.array(i), axis=axis) for i in range(3)]
    parts = [ai[1] * bi[2] - ai[2] * bi[1], ai[2] * bi[0] - ai[0] * bi[2],
             ai[0] * bi[1] - ai[1] * bi[0]]
    return f.stack(parts, axis=axis)  # the operands' other axes have broadcast


def _abs(x):
    return f.abs(x)


def _real_dtype(x) -> np.dtype:
    dt = x.dtype
    if dt.kind == "c":
        return np.dtype(np.float32 if dt == np.complex64 else np.float64)
    if dt.kind != "f":
        raise IllFormedProgram(f"norm: expected a floating dtype, found {dt}")
    return dt


def vector_norm(x, /, *, axis=None, keepdims: bool = False, ord=2) -> LazyArray:
    """``(sum |x|^ord)^(1/ord)`` over ``axis`` (all axes when None); ``ord`` inf / -inf:
    the largest / smallest ``|x|``; 0: the number of nonzeros."""
    x = asarray(x)
    rd = _real_dtype(x)
    m = _abs(x)
    if m.dtype != rd:
        m = m.astype(rd)
    if ord == np.inf:
        return f.max(m, axis=axis, keepdims=keepdims)
    if ord == -np.inf:
        return f.min(m, axis=axis, keepdims=keepdims)
    if ord == 0:
        return f.sum((m != 0).astype(rd), axis=axis, keepdims=keepdims)
    if ord == 1:
        return f.sum(m, axis=axis, keepdims=keepdims)
    if ord == 2:
        return _E["sqrt"](f.sum(m * m, axis=axis, keepdims=keepdims))
    p = float(ord)
    return f.sum(m ** p, axis=axis, keepdims=keepdims) ** (1.0 / p)


def matrix_norm(x, /, *, keepdims: bool = False, ord="fro") -> LazyArray:
    """Norms of the matrices in the last two axes: ``"fro"``, 1 / -1 (largest / smallest
    column sum of ``|x|``), inf / -inf (row sums) through the language; 2, -2 and
    ``"nuc"`` need singular values (NumPy, densely)."""
    x = asarray(x)
    rd = _real_dtype(x)
    if ord in (2, -2, "nuc"):
        return _dense_call(lambda a: np.linalg.matrix_norm(a, ord=ord, keepdims=keepdims),
                           x)
    m = _abs(x)
    if m.dtype != rd:
        m = m.astype(rd)
    if ord == "fro":
        return _E["sqrt"](f.sum(m * m, axis=(-2, -1), keepdims=keepdims))
    if ord in (1, -1, np.inf, -np.inf):
        inner, outer_axis = (-2, -1) if ord in (1, -1) else (-1, -2)
        sums = f.sum(m, axis=inner, keepdims=True)
        pick = f.max if ord in (1, np.inf) else f.min
        out = pick(sums, axis=outer_axis, keepdims=True)
        return out if keepdims else f.squeeze(out, (-2, -1))
    raise IllFormedProgram(f"matrix_norm: unsupported ord {ord!r}")


def matrix_power(x, n, /) -> LazyArray:
    """``x`` multiplied by itself ``n`` times (``n >= 0``: repeated squaring through the
    language; ``n < 0``: the inverse's power, with NumPy densely)."""
    n = operator.index(n)
    x = asarray(x)
    if x.ndim < 2 or x.shape[-1] != x.shape[-2]:
        raise IllFormedProgram(f"matrix_power: expected square matrices, found {x.shape}")
    if n < 0:
        return _dense_call(lambda a: np.linalg.matrix_power(a, n), x)
    if n == 0:
        from sparsefold.array_api._creation import eye
        return f.broadcast_to(eye(x.shape[-1], dtype=x.dtype), x.shape)
    result, base = None, x
    while n:
        if n & 1:
            result = base if result is None else f.matmul(result, base)
        n >>= 1
        if n:
            base = f.matmul(base, base)
    return result


# --- the factorizations: NumPy's LAPACK on the materialized input -----------------------------

def _dense_call(fn, *xs):
    from sparsefold.materialize import dense_value
    arrays = [dense_value(asarray(x)) for x in xs]
    out = fn(*arrays)
    if isinstance(out, tuple):
        return tuple(asarray(np.asarray(o)) for o in out)
    return asarray(np.asarray(out))


class EighResult(NamedTuple):
    eigenvalues: LazyArray
    eigenvectors: LazyArray


class QRResult(NamedTuple):
    Q: LazyArray
    R: LazyArray


class SlogdetResult(NamedTuple):
    sign: LazyArray
    logabsdet: LazyArray


class SVDResult(NamedTuple):
    U: LazyArray
    S: LazyArray
    Vh: LazyArray


def cholesky(x, /, *, upper: bool = False) -> LazyArray:
    def chol(a):
        lower = np.linalg.cholesky(a)
        return np.conj(np.swapaxes(lower, -1, -2)) if upper else lower
    return _dense_call(chol, x)


def det(x, /) -> LazyArray:
    return _dense_call(np.linalg.det, x)


def eigh(x, /) -> EighResult:
    return EighResult(*_dense_call(lambda a: tuple(np.linalg.eigh(a)), x))


def eigvalsh(x, /) -> LazyArray:
    return _dense_call(np.linalg.eigvalsh, x)


def inv(x, /) -> LazyArray:
    return _dense_call(np.linalg.inv, x)


def pinv(x, /, *, rtol=None) -> LazyArray:
    return _dense_call(lambda a: np.linalg.pinv(a, rtol=_rtol(rtol)), x)


def matrix_rank(x, /, *, rtol=None) -> LazyArray:
    return _dense_call(lambda a: np.linalg.matrix_rank(a, rtol=_rtol(rtol)), x)


def _rtol(rtol):
    if isinstance(rtol, LazyArray):
        from sparsefold.materialize import dense_value
        return dense_value(rtol)
    return rtol


def qr(x, /, *, mode: str = "reduced") -> QRResult:
    return QRResult(*_dense_call(lambda a: tuple(np.linalg.qr(a, mode=mode)), x))


def slogdet(x, /) -> SlogdetResult:
    return SlogdetResult(*_dense_call(lambda a: tuple(np.linalg.slogdet(a)), x))


def solve(x1, x2, /) -> LazyArray:
    def _solve(a, b):
        if b.ndim == 1:  # the standard: a 1-d x2 is a vector, whatever x1's batch
            return np.linalg.solve(a, b[..., None])[..., 0]
        return np.linalg.solve(a, b)
    return _dense_call(_solve, x1, x2)


def svd(x, /, *, full_matrices: bool = True) -> SVDResult:
    return SVDResult(*_dense_call(
        lambda a: tuple(np.linalg.svd(a, full_matrices=full_matrices)), x))


def svdvals(x, /) -> LazyArray:
    return _dense_call(lambda a: np.linalg.svd(a, compute_uv=False), x)

"""Hypothesis strategies for sparsefold's differential tests (DESIGN §4, "differential testing").

Everything here draws *small, integer-valued* data so that results can be compared for exact
equality, and builds its data only from Hypothesis draws (no ``np.random``), so every example
shrinks: shapes toward fewer and shorter axes, sparse arrays toward fewer stored entries at
lower positions, reshape targets toward fewer axes, slice keys toward plain ``:``.

* :func:`shapes` — array shapes, 0-length axes included.
* :func:`shared_shape` — one drawn shape shared by every strategy built on it, so several
  operands of one shape are drawn without ``st.data()``.
* :func:`dense_arrays` — NumPy arrays with small integer values (any numeric dtype).
* :func:`sparse_arrays` — scipy.sparse arrays (csr / csc / coo, or an ``spmatrix``) built
  from *unique* drawn positions: empty shapes, all-zero arrays (no stored entry) and a single
  stored element all occur, and are where shrinking leads.
* :func:`reshape_targets` — a target shape for ``reshape``: an ordered factorization of the
  size, optionally with one ``-1``.
* :func:`slice_keys` — NumPy basic-indexing keys: ints (negative too), slices with negative
  and out-of-range bounds and negative steps, ``None`` and ``...``.
* :func:`concat_operands` — arrays that can be concatenated, and an axis (negative too).
* :func:`programs` — whole well-typed programs (``st.recursive`` over an operator table;
  defined in :mod:`sparsefold.verify.random_programs` with ``Program``, ``Operator``,
  ``OPERATORS``).

Requires the ``hypothesis`` package (a test dependency); importing this module without it
fails with ``ImportError``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

__all__ = ["shapes", "shared_shape", "dense_arrays", "sparse_arrays", "reshape_targets",
           "slice_keys", "concat_operands", "programs", "SPARSE_FORMATS", "format_fits"]

# scipy.sparse formats these strategies build, with the array ranks each one can hold.
SPARSE_FORMATS: dict[str, tuple[int, ...]] = {
    "csr": (1, 2),   # scipy's 1-d csr_array is a compressed sparse vector
    "csc": (2,),
    "coo": (1, 2, 3, 4, 5, 6),
}

# Values stay within a few units of zero: sums and products of them are exact in every
# dtype we draw, and a failing example prints readably.
_SMALL = 9


def format_fits(fmt: str, ndim: int) -> bool:
    """Whether :func:`sparse_arrays` (or ``"dense"``) can build a ``fmt`` array of rank
    ``ndim``."""
    return fmt == "dense" or ndim in SPARSE_FORMATS.get(fmt, ())


def shapes(min_dims: int = 0, max_dims: int = 4, max_side: int = 4, *,
           min_side: int = 0) -> st.SearchStrategy[tuple[int, ...]]:
    """Shapes with ``min_dims..max_dims`` axes of length ``min_side..max_side``; with the
    default ``min_side=0``, 0-length axes (empty arrays) occur."""
    return hnp.array_shapes(min_dims=min_dims, max_dims=max_dims, min_side=min_side,
                            max_side=max_side)


_SHARED = iter(range(1 << 62))


def shared_shape(min_dims: int = 0, max_dims: int = 4, max_side: int = 4, *,
                 min_side: int = 0, shape: Any = None) -> st.SearchStrategy[tuple[int, ...]]:
    """A shape drawn once per example and shared: every strategy given this object as its
    shape (``sparse_arrays(S, "csr")``, ``dense_arrays(S)``) gets the same shape in one
    example, so ``differential(lambda a, b: a + b, sparse_arrays(S, "csr"),
    sparse_arrays(S, "csc"))`` adds operands of one shape. ``shape``: a strategy of shapes
    to share instead of :func:`shapes`' (e.g. ``st.tuples(st.integers(1, 4),
    st.integers(1, 4))``). Each call is a new shared shape."""
    base = shape if shape is not None else shapes(min_dims, max_dims, max_side,
                                                  min_side=min_side)
    return st.shared(_shape_strategy(base), key=f"sparsefold.shared_shape.{next(_SHARED)}")


def _elements(dtype: np.dtype, *, nonzero: bool = False) -> st.SearchStrategy:
    """Small integer values representable exactly in ``dtype`` (as that dtype's scalars)."""
    if dtype.kind == "b":
        return st.just(True) if nonzero else st.booleans()
    lo = 0 if dtype.kind == "u" else -_SMALL
    ints = st.integers(lo, _SMALL)
    if nonzero:
        ints = ints.filter(bool)
    if dtype.kind == "c":
        return st.builds(lambda re, im: dtype.type(complex(re, im)), ints, st.integers(lo, _SMALL))
    return ints.map(dtype.type)


def _shape_strategy(shape: Any) -> st.SearchStrategy[tuple[int, ...]]:
    return shape if isinstance(shape, st.SearchStrategy) else st.just(tuple(shape))


def dense_arrays(shape: Any, dtype: Any = "int64") -> st.SearchStrategy[np.ndarray]:
    """NumPy arrays of ``shape`` (a tuple or a strategy of tuples) and ``dtype`` whose values
    are small integers (``False``/``True`` for bool; integer-valued for float/complex)."""
    dt = np.dtype(dtype)
    return _shape_strategy(shape).flatmap(
        lambda s: hnp.arrays(dt, s, elements=_elements(dt)))


@st.composite
def _sparse(draw, shape: tuple[int, ...], fmt: str, dt: np.dtype, max_nnz: int | None,
            explicit_zeros: bool, container: str, canonical: bool, index_dtype: Any):
    import scipy.sparse as sp

    size = math.prod(shape)
    cap = size if max_nnz is None else min(size, max_nnz)
    # unique flat positions: no duplicates to sum, and the list shrinks entry by entry
    flat = draw(st.lists(st.integers(0, max(size - 1, 0)), unique=True, max_size=cap)
                if cap else st.just([]))
    flat = np.array(sorted(flat), dtype=np.intp)
    vals = draw(st.lists(_elements(dt, nonzero=not explicit_zeros),
                         min_size=len(flat), max_size=len(flat)))
    data = np.array(vals, dtype=dt)
    if not canonical:
        flat, data = draw(_scrambled(flat, data, dt))
    coords = tuple(np.asarray(c, dtype=np.intp) for c in np.unravel_index(flat, shape)) \
        if len(shape) else ()
    if canonical or fmt == "coo":
        coo = sp.coo_array((data, coords), shape=shape)
        out = coo.asformat(fmt) if canonical else coo
    else:
        out = _compressed_as_given(sp, fmt, shape, coords, data)
    if container == "matrix":
        out = {"csr": sp.csr_matrix, "csc": sp.csc_matrix, "coo": sp.coo_matrix}[fmt](out)
    if index_dtype is not None:
        out = _with_index_dtype(out, np.dtype(index_dtype))
    return out


@st.composite
def _scrambled(draw, flat: np.ndarray, data: np.ndarray, dt: np.dtype):
    """The same array as (``flat``, ``data``) stored non-canonically: some entries split
    into two duplicates whose sum is the value, and the entries in a drawn order."""
    pos, vals = [], []
    for p, v in zip(flat.tolist(), data):
        if draw(st.booleans()):
            if dt.kind == "b":
                first = v                      # True + True == True for bool sums
            elif dt.kind == "u":
                first = dt.type(draw(st.integers(0, int(v))))
            else:
                first = draw(_elements(dt))
            pos += [p, p]
            vals += [first, v if dt.kind == "b" else dt.type(v - first)]
        else:
            pos.append(p)
            vals.append(v)
    order = draw(st.permutations(range(len(pos))))
    return (np.array([pos[o] for o in order], dtype=np.intp),
            np.array([vals[o] for o in order], dtype=dt))


def _compressed_as_given(sp, fmt: str, shape, coords, data):
    """A CSR/CSC array storing the entries in the given order within each row/column
    (duplicates kept): scipy's converters would canonicalize them."""
    if len(shape) == 1:
        outer, inner, n_outer = np.zeros_like(coords[0]), coords[0], 1
    elif fmt == "csr":
        outer, inner, n_outer = coords[0], coords[1], shape[0]
    else:
        outer, inner, n_outer = coords[1], coords[0], shape[1]
    order = np.argsort(outer, kind="stable")
    indptr = np.zeros(n_outer + 1, dtype=np.int64)
    np.cumsum(np.bincount(outer, minlength=n_outer), out=indptr[1:])
    cls = sp.csr_array if fmt == "csr" else sp.csc_array
    return cls((data[order], inner[order], indptr), shape=shape)


def _with_index_dtype(a, ix: np.dtype):
    """``a`` with its index arrays of dtype ``ix``, set directly (scipy's constructors
    narrow int64 indices back to int32 when the values fit)."""
    if a.format in ("csr", "csc"):
        a.indices = a.indices.astype(ix)
        a.indptr = a.indptr.astype(ix)
    else:
        a.coords = tuple(c.astype(ix) for c in a.coords)
    return a


def sparse_arrays(shape: Any, format: str = "csr", dtype: Any = "int64", *,  # noqa: A002
                  max_nnz: int | None = None, explicit_zeros: bool = False,
                  container: str = "array", canonical: bool = True,
                  index_dtype: Any = None) -> st.SearchStrategy:
    """scipy.sparse arrays of ``shape`` (tuple or strategy) in ``format`` (``csr``, ``csc``,
    ``coo``), canonical (sorted, no duplicates), with small nonzero values at unique drawn
    positions. ``max_nnz`` caps the stored entries; ``explicit_zeros=True`` lets stored
    values be 0 (an adversarial but valid pattern); ``container="matrix"`` gives the legacy
    ``spmatrix`` class instead of ``sparray`` (2-d only). ``canonical=False`` stores the
    same array non-canonically — entries in a drawn order within each row (all of them for
    COO), some split into duplicates that sum to the value (``max_nnz`` counts positions,
    not stored entries). ``index_dtype`` (e.g. ``"int64"``) sets the index arrays' dtype;
    None keeps scipy's choice."""
    if index_dtype is not None and np.dtype(index_dtype) not in (np.int32, np.int64):
        raise ValueError(f"index_dtype must be int32 or int64, found {index_dtype!r}")
    if format not in SPARSE_FORMATS:
        raise ValueError(f"format must be one of {sorted(SPARSE_FORMATS)}, found {format!r}")
    if container not in ("array", "matrix"):
        raise ValueError(f"container must be 'array' or 'matrix', found {container!r}")
    dt = np.dtype(dtype)

    def build(s: tuple[int, ...]):
        ok = (2,) if container == "matrix" else SPARSE_FORMATS[format]
        if len(s) not in ok:
            raise ValueError(f"{format} {container}s have {ok} dimensions, found shape {s}")
        return _sparse(tuple(s), format, dt, max_nnz, explicit_zeros, container,
                       canonical, index_dtype)

    return _shape_strategy(shape).flatmap(build)


# --- reshape ----------------------------------------------------------------------------------

def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


@st.composite
def _reshape_target(draw, shape: tuple[int, ...], max_dims: int, max_side: int,
                    allow_unknown: bool) -> tuple[int, ...]:
    size = math.prod(shape)
    if size:
        # an ordered factorization: each axis takes a divisor of what is left, the last
        # axis takes the rest (size-1 axes included; 0 axes only for size 1)
        ndim = draw(st.integers(0 if size == 1 else 1, max_dims))
        left, target = size, []
        for _ in range(ndim - 1):
            d = draw(st.sampled_from(_divisors(left)))
            target.append(d)
            left //= d
        if ndim:
            target.append(left)
        holes = list(range(ndim))  # any axis may become -1 (size > 0 determines it)
    else:
        ndim = draw(st.integers(1, max_dims))
        zero = draw(st.integers(0, ndim - 1))
        target = [draw(st.integers(0, max_side)) for _ in range(ndim)]
        target[zero] = 0
        # -1 is only determined where every other size is non-zero (NumPy's rule)
        holes = [d for d in range(ndim)
                 if target[d] == 0 and math.prod(target[:d] + target[d + 1:]) != 0]
    if allow_unknown and holes and draw(st.booleans()):
        target[draw(st.sampled_from(holes))] = -1
    return tuple(target)


def reshape_targets(shape: Any, *, max_dims: int = 4, max_side: int = 4,
                    allow_unknown: bool = True) -> st.SearchStrategy[tuple[int, ...]]:
    """Targets ``t`` such that ``np.reshape(np.empty(shape), t)`` is valid: an ordered
    factorization of the size into at most ``max_dims`` axes (``()`` for size 1), possibly
    with one ``-1``. For size 0 one axis is 0 and the others are at most ``max_side``."""
    return _shape_strategy(shape).flatmap(
        lambda s: _reshape_target(tuple(s), max_dims, max_side, allow_unknown))


# --- indexing ---------------------------------------------------------------------------------

def _axis_key(n: int, *, max_step: int, allow_int: bool) -> st.SearchStrategy:
    """One axis of a basic index: a slice (bounds reaching past both ends, steps of both
    signs) or, for a non-empty axis, an int in ``[-n, n)``."""
    bound = st.none() | st.integers(-n - 3, n + 3)
    step = st.none() | st.integers(-max_step, max_step).filter(bool)
    sl = st.builds(slice, bound, bound, step)
    if allow_int and n:
        return sl | st.integers(-n, n - 1)
    return sl


@st.composite
def _slice_key(draw, shape: tuple[int, ...], max_step: int, allow_int: bool,
               allow_new_axes: bool, allow_ellipsis: bool) -> tuple:
    items: list[Any] = [draw(_axis_key(n, max_step=max_step, allow_int=allow_int))
                        for n in shape]
    if allow_ellipsis and draw(st.booleans()):
        # '...' stands for a run of axes; what follows it is aligned with the last axes
        a = draw(st.integers(0, len(items)))
        b = draw(st.integers(a, len(items)))
        items[a:b] = [Ellipsis]
    elif draw(st.booleans()):
        # omitted trailing axes mean ':'
        items = items[:draw(st.integers(0, len(items)))]
    if allow_new_axes:
        for _ in range(draw(st.integers(0, 2))):
            items.insert(draw(st.integers(0, len(items))), None)
    return tuple(items)


def slice_keys(shape: Any, *, max_step: int = 3, allow_int: bool = True,
               allow_new_axes: bool = True,
               allow_ellipsis: bool = True) -> st.SearchStrategy[tuple]:
    """Keys ``k`` for which ``np.empty(shape)[k]`` is valid basic indexing: per axis an int
    (negative ones too) or a slice whose bounds may be negative or out of range and whose
    step may be negative; trailing axes may be omitted, a run of axes replaced by ``...``,
    and ``None`` (new axes) inserted anywhere."""
    return _shape_strategy(shape).flatmap(
        lambda s: _slice_key(tuple(s), max_step, allow_int, allow_new_axes, allow_ellipsis))


# --- concat -----------------------------------------------------------------------------------

@st.composite
def _concat(draw, min_arrays: int, max_arrays: int, ndims: list[int], max_side: int,
            dt: np.dtype, formats: Sequence[str]):
    ndim = draw(st.sampled_from(ndims))
    base = list(draw(shapes(ndim, ndim, max_side)))
    axis = draw(st.integers(-ndim, ndim - 1))
    fits = [f for f in formats if format_fits(f, ndim)]
    arrays = []
    for _ in range(draw(st.integers(min_arrays, max_arrays))):
        s = list(base)
        s[axis] = draw(st.integers(0, max_side))  # empty pieces included
        fmt = draw(st.sampled_from(fits))
        arrays.append(draw(dense_arrays(tuple(s), dt) if fmt == "dense"
                           else sparse_arrays(tuple(s), fmt, dt)))
    return arrays, axis


def concat_operands(min_arrays: int = 1, max_arrays: int = 4, *, min_dims: int = 1,
                    max_dims: int = 3, max_side: int = 4, dtype: Any = "int64",
                    formats: Sequence[str] = ("dense",)) -> st.SearchStrategy[tuple[list, int]]:
    """``(arrays, axis)`` such that ``np.concatenate(arrays, axis)`` is valid: the arrays
    agree on every axis but ``axis`` (which may be negative), where each has its own length,
    0 included. Each array is in one of ``formats`` (``"dense"`` or a sparse format) that can
    hold its rank; ranks no format can hold are not drawn."""
    for f in formats:
        if f != "dense" and f not in SPARSE_FORMATS:
            raise ValueError(f"unknown format {f!r}")
    ndims = [n for n in range(max(min_dims, 1), max_dims + 1)
             if any(format_fits(f, n) for f in formats)]
    if not ndims or min_arrays < 1 or max_arrays < min_arrays:
        raise ValueError("concat_operands: no rank or array count satisfies the arguments")
    return _concat(min_arrays, max_arrays, ndims, max_side, np.dtype(dtype), tuple(formats))


# --- programs -----------------------------------------------------------------------------------

def programs(**kwargs: Any) -> st.SearchStrategy:
    """Well-typed random programs: see :func:`sparsefold.verify.random_programs.programs`
    (keywords ``operators``, ``max_leaves``, ``outs``, ``limits``). Each example is a
    ``Program``: ``verify.differential(p, *p.inputs, out=p.out)`` tests it."""
    # imported here: random_programs builds on the strategies above
    from sparsefold.verify.random_programs import programs as _programs
    return _programs(**kwargs)

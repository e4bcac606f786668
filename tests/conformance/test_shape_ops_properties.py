"""Property tests: for random shapes (0-length axes included) and random parameters, every
shape operator interpreted by sparsefold equals NumPy's function on the same data.

Data come from :mod:`sparsefold.verify.strategies` (small integers, so equality is exact);
2-d operands are also drawn as scipy.sparse csr/csc/coo arrays and n-d ones as scipy or
pydata ``COO``, which the interpreter densifies. Settings come from the profile in
``tests/conftest.py``.
"""

from __future__ import annotations

import math

import numpy as np
import scipy.sparse as sp
import sparse
from hypothesis import given
from hypothesis import strategies as st

import sparsefold as sf
from sparsefold import spec
from sparsefold.lazy import LazyArray
from sparsefold.verify import strategies as sfs


def same(got, expected):
    expected = np.asarray(expected)
    assert isinstance(got, np.ndarray), type(got)
    assert got.shape == expected.shape, (got.shape, expected.shape)
    assert got.dtype == expected.dtype, (got.dtype, expected.dtype)
    np.testing.assert_array_equal(got, expected, strict=True)


def dense(a) -> np.ndarray:
    """The NumPy array a container holds (independently of the interpreter's densify)."""
    if isinstance(a, np.ndarray):
        return a
    if isinstance(a, sparse.SparseArray):
        return a.todense()
    return a.toarray()


@st.composite
def operands(draw, shape_strategy=None, dtype="int64"):
    """An array of a drawn shape in a drawn container: NumPy, scipy csr/csc/coo (when the
    rank allows), or pydata COO."""
    shape = draw(shape_strategy if shape_strategy is not None else sfs.shapes())
    kinds = ["numpy", "pydata"] + [f for f in sfs.SPARSE_FORMATS
                                   if sfs.format_fits(f, len(shape))]
    kind = draw(st.sampled_from(kinds if shape else ["numpy"]))
    if kind == "numpy":
        return draw(sfs.dense_arrays(shape, dtype))
    if kind == "pydata":
        return sparse.COO.from_numpy(draw(sfs.dense_arrays(shape, dtype)))
    return draw(sfs.sparse_arrays(shape, kind, dtype))


# --- concat, stack, hstack, vstack -------------------------------------------------------------

@given(sfs.concat_operands(1, 5, max_dims=4, formats=("dense", "csr", "csc", "coo")))
def test_concat(ops):
    arrays, axis = ops
    same(sf.concat(arrays, axis=axis).interpret(),
         np.concatenate([dense(a) for a in arrays], axis=axis))


@given(st.lists(operands(sfs.shapes(0, 3, 3)), min_size=1, max_size=4))
def test_concat_axis_none(arrays):
    same(sf.concat(arrays, axis=None).interpret(),
         np.concatenate([dense(a) for a in arrays], axis=None))


@given(st.data(), sfs.shapes(0, 3, 3), st.integers(1, 4))
def test_stack(data, shape, count):
    arrays = [data.draw(sfs.dense_arrays(shape)) for _ in range(count)]
    axis = data.draw(st.integers(-len(shape) - 1, len(shape)))
    same(sf.stack(arrays, axis=axis).interpret(), np.stack(arrays, axis=axis))


@st.composite
def hv_operands(draw, axis_of_ndim):
    """Arrays that agree on every axis except ``axis_of_ndim(ndim)``, 0-d ones included
    (NumPy's hstack/vstack promote them)."""
    ndim = draw(st.integers(0, 3))
    base = list(draw(sfs.shapes(ndim, ndim, 3)))
    axis = axis_of_ndim(ndim)
    out = []
    for _ in range(draw(st.integers(1, 4))):
        s = list(base)
        if axis is not None:
            s[axis] = draw(st.integers(0, 3))
        out.append(draw(sfs.dense_arrays(tuple(s))))
    return out


@given(hv_operands(lambda nd: None if nd == 0 else 0 if nd == 1 else 1))
def test_hstack(arrays):
    same(sf.hstack(arrays).interpret(), np.hstack(arrays))


@given(hv_operands(lambda nd: 0 if nd >= 2 else None))
def test_vstack(arrays):
    same(sf.vstack(arrays).interpret(), np.vstack(arrays))


# --- reshape, collapse, split --------------------------------------------------------------------

@given(st.data(), operands(sfs.shapes(0, 4, 4)))
def test_reshape(data, a):
    target = data.draw(sfs.reshape_targets(a.shape))
    same(sf.reshape(a, target).interpret(), dense(a).reshape(target))


@given(st.data(), sfs.dense_arrays(sfs.shapes(0, 4, 4)))
def test_reshape_twice(data, a):
    t1 = data.draw(sfs.reshape_targets(a.shape))
    t2 = data.draw(sfs.reshape_targets(a.reshape(t1).shape))
    same(sf.asarray(a).reshape(t1).reshape(t2).interpret(), a.reshape(t1).reshape(t2))


@given(st.data(), sfs.dense_arrays(sfs.shapes(1, 4, 4)))
def test_collapse_node(data, a):
    start = data.draw(st.integers(0, a.ndim - 1))
    stop = data.draw(st.integers(start + 1, a.ndim))
    x = sf.asarray(a)
    merged = a.shape[:start] + (math.prod(a.shape[start:stop]),) + a.shape[stop:]
    same(LazyArray(spec.Collapse(x.node, start, stop), x.bindings).interpret(),
         a.reshape(merged))


@given(st.data(), sfs.dense_arrays(sfs.shapes(1, 3, 6)))
def test_split_node(data, a):
    axis = data.draw(st.integers(-a.ndim, a.ndim - 1))
    sizes = data.draw(sfs.reshape_targets((a.shape[axis],), max_dims=3, allow_unknown=False)
                      .filter(len))
    x = sf.asarray(a)
    ax = axis % a.ndim
    same(LazyArray(spec.Split(x.node, axis, sizes), x.bindings).interpret(),
         a.reshape(a.shape[:ax] + sizes + a.shape[ax + 1:]))


# --- indexing ----------------------------------------------------------------------------------

@given(st.data(), operands(sfs.shapes(0, 4, 5)))
def test_getitem(data, a):
    key = data.draw(sfs.slice_keys(a.shape))
    same(sf.asarray(a)[key].interpret(), dense(a)[key])


def _bound_or_size(n_max):
    """A slice bound: None, an int (negative and out-of-range ones too) or a size name."""
    return st.none() | st.integers(-n_max - 2, n_max + 2) | st.sampled_from(["I", "J"])


@given(st.data(), sfs.dense_arrays(sfs.shapes(2, 2, 5)))
def test_getitem_symbolic_bounds(data, a):
    """``A[:"J", "I"::-1]`` on a symbol-shaped input means the bounds' values on the data."""
    step = st.none() | st.integers(-3, 3).filter(bool)
    key = tuple(data.draw(st.builds(slice, _bound_or_size(5), _bound_or_size(5), step))
                for _ in range(2))
    sizes = dict(zip("IJ", a.shape))
    concrete = tuple(slice(*(sizes.get(v, v) if isinstance(v, str) else v
                             for v in (k.start, k.stop, k.step))) for k in key)
    x = sf.symbol("A", ("I", "J"), "int64")
    same(x[key].interpret(A=a), a[concrete])


# --- broadcast_to, expand_dims, squeeze ----------------------------------------------------------

@st.composite
def broadcast_targets(draw, shape):
    """A shape ``shape`` broadcasts to: up to two new leading axes, size-1 axes stretched
    to any length (0 included), other axes kept."""
    lead = draw(st.lists(st.integers(0, 3), max_size=2))
    kept = [draw(st.integers(0, 3)) if n == 1 else n for n in shape]
    return tuple(lead + kept)


@given(st.data(), operands(sfs.shapes(0, 3, 3)))
def test_broadcast_to(data, a):
    target = data.draw(broadcast_targets(a.shape))
    same(sf.broadcast_to(a, target).interpret(), np.broadcast_to(dense(a), target))


@given(st.data(), operands(sfs.shapes(0, 4, 3)))
def test_expand_dims(data, a):
    axis = data.draw(st.integers(-a.ndim - 1, a.ndim))
    same(sf.expand_dims(a, axis=axis).interpret(), np.expand_dims(dense(a), axis=axis))


@given(st.data(), sfs.dense_arrays(sfs.shapes(0, 5, 2)))
def test_squeeze(data, a):
    ones = [d for d, n in enumerate(a.shape) if n == 1]
    axis = None
    if ones and data.draw(st.booleans()):
        # a tuple of distinct size-1 axes, some of them spelled negatively
        picked = data.draw(st.lists(st.sampled_from(ones), unique=True))
        axis = tuple(d - a.ndim if d % 2 else d for d in picked)
    same(sf.squeeze(a, axis=axis).interpret(), np.squeeze(a, axis=axis))


# --- permute_dims, .T, moveaxis ------------------------------------------------------------------

@given(st.data(), operands(sfs.shapes(0, 4, 3)))
def test_permute_dims(data, a):
    perm = data.draw(st.permutations(range(a.ndim)))
    signs = data.draw(st.lists(st.booleans(), min_size=a.ndim, max_size=a.ndim))
    perm = tuple(p - a.ndim if s else p for p, s in zip(perm, signs))
    same(sf.permute_dims(a, perm).interpret(), np.transpose(dense(a), perm))
    same(sf.asarray(a).T.interpret(), dense(a).T)


@given(st.data(), sfs.dense_arrays(sfs.shapes(1, 4, 3)))
def test_moveaxis(data, a):
    axes = st.integers(-a.ndim, a.ndim - 1)
    source = data.draw(st.lists(axes, unique_by=lambda d: d % a.ndim, max_size=a.ndim))
    destination = data.draw(st.lists(axes, unique_by=lambda d: d % a.ndim,
                                     min_size=len(source), max_size=len(source)))
    same(sf.moveaxis(a, source, destination).interpret(), np.moveaxis(a, source, destination))


# --- pad ---------------------------------------------------------------------------------------

@st.composite
def pad_widths(draw, ndim):
    """Every spelling ``np.pad`` accepts: an int, ``(w,)``, a pair, ``((b, a),)``, one pair
    per axis, or ``((w,), ...)`` per axis."""
    w = st.integers(0, 2)
    form = draw(st.sampled_from(["int", "single", "pair", "pair1", "per_axis", "per_axis1"]))
    if form == "int":
        return draw(w)
    if form == "single":
        return (draw(w),)
    if form == "pair":
        return (draw(w), draw(w))
    if form == "pair1":
        return ((draw(w), draw(w)),)
    if form == "per_axis" and ndim:
        return tuple((draw(w), draw(w)) for _ in range(ndim))
    if ndim:
        return tuple((draw(w),) for _ in range(ndim))
    return draw(w)


@given(st.data(), operands(sfs.shapes(0, 3, 3)), st.integers(-3, 3))
def test_pad(data, a, value):
    width = data.draw(pad_widths(a.ndim))
    same(sf.pad(a, width, constant_values=value).interpret(),
         np.pad(dense(a), width, constant_values=value))


# --- chains of operators -----------------------------------------------------------------------

def _step(data, a: np.ndarray):
    """One random shape operator applicable to ``a``: (name, sparsefold op, NumPy op)."""
    nd = a.ndim
    choices = ["reshape", "getitem", "expand", "pad", "permute", "concat", "broadcast"]
    if nd:
        choices += ["concat", "moveaxis"]
    if 1 in a.shape:
        choices.append("squeeze")
    kind = data.draw(st.sampled_from(choices))
    if kind == "reshape":
        t = data.draw(sfs.reshape_targets(a.shape, max_dims=3))
        return (lambda x: sf.reshape(x, t)), (lambda v: v.reshape(t))
    if kind == "getitem":
        k = data.draw(sfs.slice_keys(a.shape))
        return (lambda x: x[k]), (lambda v: v[k])
    if kind == "expand":
        ax = data.draw(st.integers(-nd - 1, nd))
        return (lambda x: sf.expand_dims(x, axis=ax)), (lambda v: np.expand_dims(v, ax))
    if kind == "pad":
        w = data.draw(pad_widths(nd))
        return (lambda x: sf.pad(x, w, constant_values=1)), \
            (lambda v: np.pad(v, w, constant_values=1))
    if kind == "permute":
        p = data.draw(st.permutations(range(nd)))
        return (lambda x: sf.permute_dims(x, p)), (lambda v: np.transpose(v, p))
    if kind == "concat" and nd:
        ax = data.draw(st.integers(-nd, nd - 1))
        return (lambda x: sf.concat([x, x[::-1]], axis=ax)), \
            (lambda v: np.concatenate([v, v[::-1]], axis=ax))
    if kind == "concat":
        return (lambda x: sf.stack([x, x])), (lambda v: np.stack([v, v]))
    if kind == "moveaxis":
        s, d = data.draw(st.integers(0, nd - 1)), data.draw(st.integers(-nd, nd - 1))
        return (lambda x: sf.moveaxis(x, s, d)), (lambda v: np.moveaxis(v, s, d))
    if kind == "squeeze":
        ax = data.draw(st.sampled_from([d for d, n in enumerate(a.shape) if n == 1]))
        return (lambda x: sf.squeeze(x, axis=ax)), (lambda v: np.squeeze(v, axis=ax))
    t = data.draw(broadcast_targets(a.shape).filter(lambda t: math.prod(t) <= 512))
    return (lambda x: sf.broadcast_to(x, t)), (lambda v: np.broadcast_to(v, t))


@given(st.data(), operands(sfs.shapes(0, 3, 3)), st.integers(1, 4))
def test_chains(data, a, length):
    """Compositions: each operator's output feeds the next one, as in real programs."""
    x, v = sf.asarray(a), dense(a)
    for _ in range(length):
        if v.size > 512:
            break
        ours, theirs = _step(data, v)
        x, v = ours(x), np.asarray(theirs(v))
    same(x.interpret(), v)


# --- the strategies themselves -------------------------------------------------------------------

def _find(strategy, condition):
    """An example satisfying ``condition`` — the strategy does reach that case."""
    from hypothesis import find, settings
    return find(strategy, condition, settings=settings(settings.default, database=None))


@given(st.sampled_from(["csr", "csc", "coo"]).flatmap(
    lambda f: sfs.sparse_arrays(sfs.shapes(2, 2, 4), f, "int8").map(lambda a: (f, a))))
def test_sparse_arrays_are_canonical(case):
    fmt, a = case
    assert a.format == fmt and a.dtype == np.int8 and isinstance(a, sp.sparray)
    if fmt != "coo":
        assert a.has_canonical_format
    positions = set(zip(*a.coords)) if fmt == "coo" else set(zip(*a.nonzero()))
    assert len(positions) == a.nnz  # unique positions, no duplicates to sum
    assert np.all(a.data != 0) and np.all(np.abs(a.data) <= 9)


def test_sparse_arrays_reach_edge_cases():
    shapes2 = sfs.shapes(2, 2, 4)
    assert _find(sfs.sparse_arrays(shapes2, "csr"), lambda a: a.size == 0).shape
    empty = _find(sfs.sparse_arrays(shapes2, "csc"), lambda a: a.nnz == 0 and 0 not in a.shape)
    assert not empty.toarray().any()
    assert _find(sfs.sparse_arrays(shapes2, "coo"), lambda a: a.nnz == 1).nnz == 1
    full = _find(sfs.sparse_arrays((2, 2), "csr"), lambda a: a.nnz == 4)
    assert full.toarray().all()
    matrix = _find(sfs.sparse_arrays((2, 3), "csr", container="matrix"), lambda a: True)
    assert isinstance(matrix, sp.spmatrix)


def test_reshape_targets_and_slice_keys_reach_edge_cases():
    assert _find(sfs.reshape_targets((2, 0, 3)), lambda t: -1 in t) == (-1,)
    assert -1 in _find(sfs.reshape_targets((12,)), lambda t: len(t) == 4 and -1 in t)
    assert _find(sfs.reshape_targets((1, 1)), lambda t: t == ()) == ()
    key = _find(sfs.slice_keys((3, 4, 5)), lambda k: Ellipsis in k and None in k and any(
        isinstance(s, slice) and (s.step or 1) < 0 for s in k))
    np.empty((3, 4, 5))[key]  # valid NumPy basic indexing
    out_of_range = _find(sfs.slice_keys((3,)), lambda k: any(
        isinstance(s, slice) and s.start is not None and s.start < -3 for s in k))
    np.empty(3)[out_of_range]

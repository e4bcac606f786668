"""Conformance of every shape operator with NumPy's own function of the same name (DESIGN §2).

Each case builds a program through the public front end (or a spec node directly), evaluates
it with an engine (the reference interpreter or a compiled kernel: ``conftest.py``) and
compares with NumPy on the same data: same shape, same dtype, same values (exactly — the
data are small integers). The expected side is always
NumPy (``np.concatenate``, ``np.reshape``, basic indexing, ``np.broadcast_to``, ``np.pad``,
...), never a value written down from sparsefold's own output.

Inputs are NumPy arrays and, in ``test_input_kinds``, scipy.sparse arrays (csr/csc/coo, and
one ``spmatrix``) and pydata/sparse ``COO``/``GCXS`` arrays, which the interpreter densifies
and compiled kernels read in place.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import scipy.sparse as sp
import sparse

import sparsefold as sf
from sparsefold import spec
from sparsefold.lazy import LazyArray


def data(shape, dtype="int64"):
    """Distinct small values (a permutation or gather error cannot go unnoticed), with a
    zero in every stretch of 5 so sparse containers have implicit entries."""
    n = math.prod(shape)
    v = (np.arange(n) % 5) * (np.arange(n) // 5 % 3 + 1) - (np.arange(n) // 15)
    return v.astype(dtype).reshape(shape)


def same(got, expected):
    """Exact agreement with NumPy: type, shape, dtype and every value. NumPy returns a
    scalar where sparsefold returns a 0-d array; both mean the same 0-d value."""
    expected = np.asarray(expected)
    assert isinstance(got, np.ndarray), type(got)
    assert got.shape == expected.shape, (got.shape, expected.shape)
    assert got.dtype == expected.dtype, (got.dtype, expected.dtype)
    np.testing.assert_array_equal(got, expected, strict=True)


# --- every input container -------------------------------------------------------------------

CONTAINERS = {
    "numpy": lambda a: a,
    "csr_array": sp.csr_array,
    "csc_array": sp.csc_array,
    "coo_array": sp.coo_array,
    "csr_matrix": sp.csr_matrix,
    "pydata_coo": sparse.COO.from_numpy,
    "pydata_gcxs": lambda a: sparse.GCXS.from_numpy(a, compressed_axes=[1]),
}

# (name, sparsefold program on x, NumPy program on a) over a (3, 4) operand
OPS_2D = [
    ("concat0", lambda x: sf.concat([x, x[:1]], axis=0),
     lambda a: np.concatenate([a, a[:1]], axis=0)),
    ("concat-1", lambda x: sf.concat([x, x[:, :0], x], axis=-1),
     lambda a: np.concatenate([a, a[:, :0], a], axis=-1)),
    ("concat_none", lambda x: sf.concat([x, x], axis=None),
     lambda a: np.concatenate([a, a], axis=None)),
    ("stack", lambda x: sf.stack([x, x], axis=1), lambda a: np.stack([a, a], axis=1)),
    ("hstack", lambda x: sf.hstack([x, x]), lambda a: np.hstack([a, a])),
    ("vstack", lambda x: sf.vstack([x, x]), lambda a: np.vstack([a, a])),
    ("reshape", lambda x: x.reshape(2, -1, 3), lambda a: a.reshape(2, -1, 3)),
    ("reshape_flat", lambda x: sf.reshape(x, -1), lambda a: np.reshape(a, -1)),
    ("slice", lambda x: x[::-2, 1:-1], lambda a: a[::-2, 1:-1]),
    ("index", lambda x: x[-1], lambda a: a[-1]),
    ("index2", lambda x: x[1, -2], lambda a: a[1, -2]),
    ("newaxis", lambda x: x[None, :, None], lambda a: a[None, :, None]),
    ("T", lambda x: x.T, lambda a: a.T),
    ("moveaxis", lambda x: sf.moveaxis(x, 0, -1), lambda a: np.moveaxis(a, 0, -1)),
    ("broadcast", lambda x: sf.broadcast_to(x, (2, 3, 4)),
     lambda a: np.broadcast_to(a, (2, 3, 4))),
    ("expand", lambda x: sf.expand_dims(x, axis=1), lambda a: np.expand_dims(a, axis=1)),
    ("squeeze", lambda x: sf.squeeze(x[:1]), lambda a: np.squeeze(a[:1])),
    ("pad", lambda x: sf.pad(x, ((1, 0), (0, 2)), constant_values=4),
     lambda a: np.pad(a, ((1, 0), (0, 2)), constant_values=4)),
]


@pytest.mark.parametrize("container", list(CONTAINERS))
@pytest.mark.parametrize("name,build,expected", OPS_2D, ids=[o[0] for o in OPS_2D])
def test_input_kinds(container, name, build, expected, engine):
    a = data((3, 4))
    same(engine(build(sf.asarray(CONTAINERS[container](a)))), expected(a))


@pytest.mark.parametrize("container", ["numpy", "coo_array", "pydata_coo", "pydata_gcxs"])
def test_input_kinds_3d(container, engine):
    a = data((2, 3, 4))
    x = sf.asarray(CONTAINERS[container](a))
    same(engine(sf.concat([x[::-1], x[:, 1:]], axis=1).reshape(-1, 4).T),
         np.concatenate([a[::-1], a[:, 1:]], axis=1).reshape(-1, 4).T)


# --- concat, stack, hstack, vstack -------------------------------------------------------------

CONCAT_CASES = [
    ([(2, 3), (4, 3)], 0),
    ([(2, 3), (2, 0), (2, 5)], 1),
    ([(2, 3), (2, 0), (2, 5)], -1),
    ([(0, 3), (0, 3)], 0),
    ([(0, 3), (2, 3), (0, 3)], -2),
    ([(3,), (0,), (2,)], 0),
    ([(0,)], 0),
    ([(2, 3)], 1),
    ([(i, 2) for i in range(7)], 0),                      # many, one of them empty
    ([(2, i) for i in (0, 0, 1, 0, 3, 0)], 1),            # mostly empty
    ([(2, 1, 3), (2, 4, 3)], 1),
    ([(2, 3, 1), (2, 3, 2), (2, 3, 0)], -1),
    ([(1, 2, 3, 2), (2, 2, 3, 2)], 0),
    ([(1, 2, 3, 2), (1, 2, 1, 2), (1, 2, 0, 2)], -2),
    ([(1, 1, 1, 1)] * 3, 3),
]


@pytest.mark.parametrize("shapes,axis", CONCAT_CASES)
def test_concat(shapes, axis, engine):
    arrays = [data(s) + p for p, s in enumerate(shapes)]
    same(engine(sf.concat(arrays, axis=axis)), np.concatenate(arrays, axis=axis))


@pytest.mark.parametrize("shapes", [
    [(2, 3), (4,)], [(), (2, 3), (0,)], [()], [(), ()], [(0, 2), (3, 0)], [(2, 1, 2), (1,)],
])
def test_concat_axis_none(shapes, engine):
    arrays = [data(s) + 1 for s in shapes]
    same(engine(sf.concat(arrays, axis=None)), np.concatenate(arrays, axis=None))


@pytest.mark.parametrize("dtypes", [
    ("int32", "int64"), ("bool", "int8"), ("uint8", "int8"), ("int64", "float32"),
    ("bool", "bool"), ("uint16", "float16"), ("int8", "complex64"),
])
def test_concat_promotes_like_numpy(dtypes, engine):
    arrays = [data((2, 2), dt) for dt in dtypes]
    same(engine(sf.concat(arrays, axis=0)), np.concatenate(arrays, axis=0))


def test_concat_node_directly(engine):
    a, b, c = data((2, 3)), data((2, 0)), data((2, 2)) + 7
    xs = [sf.asarray(v) for v in (a, b, c)]
    node = spec.Concat(tuple(x.node for x in xs), -1)
    bindings = {k: v for x in xs for k, v in x.bindings.items()}
    same(engine(LazyArray(node, bindings)), np.concatenate([a, b, c], axis=-1))


STACK_CASES = [((), 0), ((), -1), ((3,), 0), ((3,), 1), ((3,), -1), ((2, 3), 0), ((2, 3), 1),
               ((2, 3), 2), ((2, 3), -3), ((0, 3), 1), ((2, 0), -1), ((1, 2, 1, 2), 4),
               ((1, 2, 1, 2), -2)]


@pytest.mark.parametrize("count", [1, 3])
@pytest.mark.parametrize("shape,axis", STACK_CASES)
def test_stack(shape, axis, count, engine):
    arrays = [data(shape) + p for p in range(count)]
    same(engine(sf.stack(arrays, axis=axis)), np.stack(arrays, axis=axis))


HV_CASES = [
    [(3,), (2,)], [(3,), (0,)], [(0,), (0,)], [(), ()], [(3,), ()], [(2, 3), (2, 1)],
    [(0, 3), (0, 2)], [(2, 0), (2, 4)], [(1, 2, 3), (1, 4, 3)], [(2, 3), (2, 0), (2, 2)],
]


@pytest.mark.parametrize("shapes", HV_CASES)
def test_hstack(shapes, engine):
    arrays = [data(s) + p for p, s in enumerate(shapes)]
    same(engine(sf.hstack(arrays)), np.hstack(arrays))


@pytest.mark.parametrize("shapes", [
    [(3,), (3,)], [(0,), (0,)], [(), ()], [(3,), (2, 3)], [(2, 3), (0, 3), (1, 3)],
    [(2, 1, 3), (1, 1, 3)], [(0, 2), (0, 2)], [(1,), ()],
])
def test_vstack(shapes, engine):
    arrays = [data(s) + p for p, s in enumerate(shapes)]
    same(engine(sf.vstack(arrays)), np.vstack(arrays))


# --- reshape, collapse, split --------------------------------------------------------------------

def factorizations(n, max_len):
    """Every ordered factorization of ``n`` into factors > 1, of at most ``max_len`` factors
    (written independently of sparsefold's planner)."""
    if n == 1:
        yield ()
        return
    for d in range(2, n + 1):
        if n % d == 0:
            for rest in factorizations(n // d, max_len - 1):
                if len(rest) < max_len:
                    yield (d,) + rest


TARGETS_12 = list(factorizations(12, 4))
SOURCES_12 = [(12,), (3, 4), (2, 3, 2), (4, 1, 3), (1, 12, 1), (2, 2, 3, 1)]


@pytest.mark.parametrize("source", SOURCES_12)
@pytest.mark.parametrize("target", TARGETS_12)
def test_reshape_every_factorization(source, target, engine):
    a = data(source)
    same(engine(sf.asarray(a).reshape(target)), a.reshape(target))


@pytest.mark.parametrize("target", TARGETS_12)
def test_reshape_minus_one_anywhere(target, engine):
    a = data((2, 6))
    for d in range(len(target)):
        t = target[:d] + (-1,) + target[d + 1:]
        same(engine(sf.reshape(a, t)), np.reshape(a, t))


RESHAPE_CASES = [
    ((), (1, 1)), ((1, 1), ()), ((), (-1,)), ((), ()), ((1,), ()), ((), (1, 1, 1)),
    ((1, 1, 1), (1,)), ((1, 3, 1, 4), (3, 4)), ((3, 4), (1, 3, 1, 4, 1)), ((2, 6), (3, 4)),
    ((4, 3), (2, 6)), ((2, 3, 4), (4, 3, 2)), ((6, 4), (2, 3, 2, 2)), ((2, 2, 3), (4, 3)),
    ((2, 3, 4), (-1,)), ((2, 3, 4), (4, -1)), ((2, 3, 4), (2, 1, -1, 1)), ((5,), (5, 1)),
    ((1, 5), (5,)), ((2, 3, 4), (2, 3, 4)),
    # size 0
    ((2, 0, 3), (0,)), ((2, 0, 3), (3, 0)), ((2, 0, 3), (0, 7)), ((2, 0, 3), (3, -1)),
    ((0,), (0, 5, 2)), ((0,), (-1,)), ((0, 3), (-1, 3)), ((0, 3), (3, 0, 1)), ((3, 0), (0, 3)),
    ((0,), (1, 0, 1)), ((1, 0), (0,)),
]


@pytest.mark.parametrize("shape,target", RESHAPE_CASES)
def test_reshape(shape, target, engine):
    a = data(shape)
    same(engine(sf.asarray(a).reshape(target)), a.reshape(target))


def test_reshape_spellings(engine):
    a = data((3, 4))
    x = sf.asarray(a)
    for got in (x.reshape(4, 3), x.reshape((4, 3)), x.reshape([4, 3]), sf.reshape(x, (4, 3))):
        same(engine(got), a.reshape(4, 3))
    same(engine(sf.reshape(x, 12)), a.reshape(12))
    same(engine(sf.reshape(x, np.int64(12))), a.reshape(np.int64(12)))


def _collapse_cases():
    for shape in [(5,), (2, 3), (2, 3, 4), (2, 0, 3), (1, 1, 1), (2, 1, 3, 2), (0,)]:
        for start in range(len(shape)):
            for stop in range(start + 1, len(shape) + 1):
                yield shape, start, stop


@pytest.mark.parametrize("shape,start,stop", list(_collapse_cases()))
def test_collapse_node(shape, start, stop, engine):
    a = data(shape)
    x = sf.asarray(a)
    y = LazyArray(spec.Collapse(x.node, start, stop), x.bindings)
    merged = shape[:start] + (math.prod(shape[start:stop]),) + shape[stop:]
    same(engine(y), a.reshape(merged))


SPLIT_CASES = [
    ((12,), 0, (3, 4)), ((12,), -1, (2, 3, 2)), ((12,), 0, (12,)), ((12,), 0, (1, 12, 1)),
    ((2, 6), 1, (3, 2)), ((2, 6), -1, (6, 1)), ((6, 2), 0, (1, 2, 3)), ((2, 6, 2), 1, (2, 3)),
    ((0,), 0, (0, 5)), ((0,), 0, (5, 0)), ((3, 0), 1, (2, 0, 4)), ((1, 1), 0, (1, 1, 1)),
    ((2, 4, 1, 3), -3, (2, 2)),
]


@pytest.mark.parametrize("shape,axis,sizes", SPLIT_CASES)
def test_split_node(shape, axis, sizes, engine):
    a = data(shape)
    x = sf.asarray(a)
    y = LazyArray(spec.Split(x.node, axis, sizes), x.bindings)
    ax = axis % len(shape)
    same(engine(y), a.reshape(shape[:ax] + sizes + shape[ax + 1:]))


# --- slicing and integer indexing ----------------------------------------------------------------

S = slice
GETITEM_CASES = [
    # 1-d
    ((7,), (S(2, 5),)), ((7,), (S(-3, None),)), ((7,), (S(None, -2),)),
    ((7,), (S(-100, 100),)), ((7,), (S(5, 2),)), ((7,), (S(None, None, -1),)),
    ((7,), (S(None, None, -2),)), ((7,), (S(5, 1, -1),)), ((7,), (S(-1, -8, -1),)),
    ((7,), (S(1, -1, 3),)), ((7,), (S(100, -100, -1),)), ((7,), (S(-100, None),)),
    ((7,), (S(7, None),)), ((7,), (S(None, 0),)), ((7,), (S(None, None, 7),)),
    ((7,), (S(None, None, -7),)), ((7,), (S(-8, None, -1),)), ((7,), (S(6, -8, -3),)),
    ((7,), (S(3, 3),)), ((7,), (S(0, 7, 100),)), ((7,), (S(-2, 100, -1),)),
    ((7,), (3,)), ((7,), (-1,)), ((7,), (-7,)), ((7,), (0,)), ((7,), (None,)),
    ((7,), (Ellipsis,)), ((7,), (Ellipsis, None)), ((7,), (None, S(None, None, -3), None)),
    ((7,), ()),
    # empty axes
    ((0,), (S(None, None, -1),)), ((0,), (S(1, None),)), ((0,), (S(-1, None),)),
    ((0,), (S(None, None, 2),)), ((0,), (None,)), ((0, 3), (S(None), 1)),
    ((3, 0), (-1,)), ((3, 0), (S(None, None, -1), S(None, None, -1))),
    # 2-d
    ((4, 5), (1,)), ((4, 5), (-1, 2)), ((4, 5), (S(None), -1)),
    ((4, 5), (S(None, None, -1), S(None, None, 2))),
    ((4, 5), (S(1, 3), None, S(None, None, -1))), ((4, 5), (Ellipsis, 1)),
    ((4, 5), (None, Ellipsis, None)), ((4, 5), (2, Ellipsis)), ((4, 5), (S(1, -1),)),
    ((4, 5), (S(None), S(10, None))), ((4, 5), (S(-10, -2, -1),)),
    ((4, 5), (S(3, None, -2), S(-1, 0, -2))), ((4, 5), (Ellipsis, None, 0)),
    ((4, 5), (-4, -5)), ((4, 5), (3, 4)),
    # 3-d and 4-d
    ((2, 3, 4), (Ellipsis, S(None, None, -2))), ((2, 3, 4), (0, S(None), -1)),
    ((2, 3, 4), (S(None), None, S(1, None), Ellipsis)), ((2, 3, 4), (-1, -1, -1)),
    ((2, 3, 4), (1, Ellipsis, None, 2)), ((2, 3, 4), (None, -2, None, S(None, None, -1))),
    ((2, 1, 3, 2), (S(None), 0)), ((2, 1, 3, 2), (Ellipsis, 0, S(None))),
    ((2, 1, 3, 2), (1, 0, 2, 1)), ((2, 1, 3, 2), (S(None, None, -1), Ellipsis, S(1, None))),
    ((2, 1, 3, 2), (None, None, None)),
    # 0-d and size-1 axes
    ((), ()), ((), (Ellipsis,)), ((), (None,)), ((), (None, Ellipsis)),
    ((1, 1), (0, 0)), ((1, 1), (S(-1, None),)), ((1, 1), (S(None, None, -1), -1)),
]


@pytest.mark.parametrize("shape,key", GETITEM_CASES)
def test_getitem(shape, key, engine):
    a = data(shape)
    same(engine(sf.asarray(a)[key]), a[key])


def test_getitem_bare_keys(engine):
    a = data((4, 5))
    x = sf.asarray(a)
    same(engine(x[2]), a[2])
    same(engine(x[-1:0:-2]), a[-1:0:-2])
    same(engine(x[...]), a[...])
    same(engine(x[None]), a[None])


@pytest.mark.parametrize("key", [
    (np.int64(-1), np.int32(2)), (S(np.int64(-3), None),), (S(None, None, np.int8(-2)),),
    (np.uint8(1), S(np.int16(1), np.int64(-1))),
])
def test_getitem_numpy_integers(key, engine):
    a = data((4, 5))
    same(engine(sf.asarray(a)[key]), a[key])


def _concrete(key, sizes):
    """A symbolic key with its size symbols replaced by their values."""
    def c(v):
        return sizes.get(v, v) if isinstance(v, str) else v
    return tuple(S(c(k.start), c(k.stop), c(k.step)) if isinstance(k, slice) else c(k)
                 for k in key)


SYMBOLIC_KEYS = [
    (S(None, "J"),), (S(None), S(None, "I")), (S("J", None, -1),), (S("I", None),),
    (S(None, None, -1), S(None, "I", -1)), (S(1, "I", 2),), (S(None), S("I", 0, -1)),
    (S("I", "J"),), (S(None), "I"), (-1, "I"), ("J", S(None, None, -1)),
    (None, S(None, "J", 2), Ellipsis),
]


@pytest.mark.parametrize("key", SYMBOLIC_KEYS)
@pytest.mark.parametrize("shape", [(3, 5), (5, 3), (4, 4), (0, 2)])
def test_getitem_symbolic_bounds(shape, key, engine):
    """Bounds given as size names mean the sizes bound by the data (``A[:"J"]`` with J the
    length of A's second axis), so they are compared with NumPy on those values."""
    a = data(shape)
    x = sf.symbol("A", ("I", "J"), "int64")
    sizes = dict(zip("IJ", shape))
    try:
        expected = a[_concrete(key, sizes)]
    except IndexError:  # an integer index ("I") past its axis: the data is at fault
        with pytest.raises(sf.InvalidData, match="precondition on sizes"):
            engine(x[key], A=a)
        return
    same(engine(x[key], A=a), expected)


# --- broadcast_to, expand_dims, squeeze ----------------------------------------------------------

BROADCAST_CASES = [
    ((3,), (2, 3)), ((1,), (4,)), ((), (2, 3)), ((), ()), ((3, 1), (3, 4)), ((1, 1), (0, 5)),
    ((0,), (3, 0)), ((2, 1, 3), (4, 2, 5, 3)), ((2, 3), (2, 3)), ((1, 3), (2, 1, 3)),
    ((1,), (1,)), ((1,), (0,)), ((1, 1, 1), (2, 1, 3)), ((2, 1), (1, 2, 0)),
]


@pytest.mark.parametrize("shape,target", BROADCAST_CASES)
def test_broadcast_to(shape, target, engine):
    a = data(shape)
    same(engine(sf.broadcast_to(a, target)), np.broadcast_to(a, target))


def test_broadcast_to_int_shape(engine):
    a = data((1,))
    same(engine(sf.broadcast_to(a, 5)), np.broadcast_to(a, 5))


def _expand_cases():
    for shape in [(), (3,), (2, 3), (2, 0, 3), (1, 2, 1)]:
        for axis in range(-len(shape) - 1, len(shape) + 1):
            yield shape, axis


@pytest.mark.parametrize("shape,axis", list(_expand_cases()))
def test_expand_dims(shape, axis, engine):
    a = data(shape)
    same(engine(sf.expand_dims(a, axis=axis)), np.expand_dims(a, axis=axis))


SQUEEZE_CASES = [
    ((1, 3, 1), None), ((1, 3, 1), 0), ((1, 3, 1), 2), ((1, 3, 1), -1), ((1, 3, 1), (0, 2)),
    ((1, 3, 1), (-1, 0)), ((1,), None), ((1,), 0), ((), None), ((1, 1, 1, 1), None),
    ((1, 1, 1, 1), (1, 3)), ((2, 3), None), ((0, 1), 1), ((0, 1), None), ((1, 0), None),
    ((1, 3, 1), np.int64(-1)), ((1, 3, 1), ()),
]


@pytest.mark.parametrize("shape,axis", SQUEEZE_CASES)
def test_squeeze(shape, axis, engine):
    a = data(shape)
    same(engine(sf.squeeze(a, axis=axis)), np.squeeze(a, axis=axis))


# --- permute_dims, .T, moveaxis ------------------------------------------------------------------

PERMUTE_CASES = ([((2, 3, 4), p) for p in itertools.permutations(range(3))]
                 + [((2, 1, 0, 3), p) for p in [(3, 2, 1, 0), (1, 3, 0, 2), (0, 1, 2, 3)]]
                 + [((), ()), ((3,), (0,)), ((3, 2), (1, 0)), ((2, 3, 4), (-1, 0, 1)),
                    ((2, 3, 4), (0, -1, -2))])


@pytest.mark.parametrize("shape,perm", PERMUTE_CASES)
def test_permute_dims(shape, perm, engine):
    a = data(shape)
    same(engine(sf.permute_dims(a, perm)), np.transpose(a, perm))


@pytest.mark.parametrize("shape", [(), (3,), (2, 3), (2, 3, 4), (2, 1, 0, 3)])
def test_T(shape, engine):
    a = data(shape)
    same(engine(sf.asarray(a).T), a.T)


MOVEAXIS_CASES = [
    (0, -1), (-1, 0), (1, 1), ([0, 1], [-1, -2]), ([0, 2], [2, 0]), ([2, 0], [0, 1]),
    ([3, 0], [1, 3]), ((1, 2), (0, 1)), ([], []), ([0, 1, 2, 3], [3, 2, 1, 0]),
]


@pytest.mark.parametrize("source,destination", MOVEAXIS_CASES)
def test_moveaxis(source, destination, engine):
    a = data((2, 3, 1, 4))
    same(engine(sf.moveaxis(a, source, destination)), np.moveaxis(a, source, destination))


# --- pad ---------------------------------------------------------------------------------------

PAD_WIDTHS = {
    (3,): [0, 2, (1, 2), ((0, 3),), [[1, 1]], [2]],
    (2, 3): [0, 1, (1, 2), ((1, 2),), ((0, 1), (2, 0)), [[1], [2]], np.array([[1, 2], [0, 3]])],
    (0, 2): [1, ((2, 0), (0, 1))],
    (): [0, 2, (1, 2)],
    (2, 1, 2): [1, ((0, 0), (1, 0), (0, 2))],
}


@pytest.mark.parametrize("value", [0, 5, -3])
@pytest.mark.parametrize("shape,width", [(s, w) for s, ws in PAD_WIDTHS.items() for w in ws])
def test_pad(shape, width, value, engine):
    a = data(shape)
    same(engine(sf.pad(a, width, constant_values=value)),
         np.pad(a, width, constant_values=value))


@pytest.mark.parametrize("dtype,value", [
    ("uint8", 200), ("uint8", 0), ("int8", -128), ("bool", True), ("bool", False),
    ("float64", 2.5), ("float32", -0.25), ("float64", np.inf), ("complex128", 1 - 2j),
    ("int64", np.int64(7)), ("int32", 2**31 - 1), ("float64", 3),
])
def test_pad_dtypes(dtype, value, engine):
    a = data((2, 3), dtype)
    same(engine(sf.pad(a, 1, constant_values=value)), np.pad(a, 1, constant_values=value))


def test_pad_nan(engine):
    a = data((2, 2), "float64")
    got = engine(sf.pad(a, 1, constant_values=np.nan))
    np.testing.assert_array_equal(got, np.pad(a, 1, constant_values=np.nan), strict=True)


# --- symbolic programs evaluated on concrete data ----------------------------------------------

@pytest.mark.parametrize("shape", [(3, 4), (1, 1), (0, 3), (2, 0)])
def test_symbolic_programs(shape, engine):
    a = data(shape)
    A = sf.symbol("A", ("I", "J"), "int64")
    I, J = shape  # noqa: E741 - the values of the sizes named in A's shape
    cases = [
        (sf.concat([A, A[::-1]], axis=1), np.concatenate([a, a[::-1]], axis=1)),
        (A.reshape(-1), a.reshape(-1)),
        (A.reshape("J", "I"), a.reshape(J, I)),
        (sf.pad(A, (("I", 0), (0, "J")), constant_values=2), np.pad(a, ((I, 0), (0, J)),
                                                                    constant_values=2)),
        (sf.stack([A, A], axis=-1).T, np.stack([a, a], axis=-1).T),
        (sf.broadcast_to(A[:, None], ("I", 2, "J")), np.broadcast_to(a[:, None], (I, 2, J))),
        (sf.expand_dims(A, axis=0)[0], np.expand_dims(a, axis=0)[0]),
    ]
    for y, expected in cases:
        same(engine(y, A=a), expected)

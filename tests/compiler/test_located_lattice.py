"""A repeated sparse line (a row broadcast over rows, a column over columns) is located
through a workspace in any lattice that holds it with another operand, not only in a
two-operand intersection (``compiler/lower/located.py``): ``A * v + B``, ``(A + B) * v``,
``A * v * B``. And the planner stages what keeps a line from being located: a product of a
line and a matrix inside a larger expression (``A * v * w``, ``A * v + B * w``, the 3-d space
of ``(A * v) @ x``), a reversed line (``v[:, ::-1]``), a dense-valued operand of a product
(``A @ (B @ x)``). Results against NumPy; memory checked with a limit the merged or
materialized forms would exceed."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

import sparsefold as sf
from sparsefold.compiler.run import threads
from sparsefold.spec import sizes as sz


def _m(shape, density, seed, fmt="csr"):
    return sp.random_array(shape, density=density, format=fmt, rng=seed)


def _dense(x):
    return x.toarray() if sp.issparse(x) else np.asarray(x)


# name: (program over (a, b, c, line), reference over dense arrays)
PROGRAMS = {
    "a*v+b": (lambda a, b, c, v: a * v + b, lambda a, b, c, v: a * v + b),
    "(a+b)*v": (lambda a, b, c, v: (a + b) * v, lambda a, b, c, v: (a + b) * v),
    "a*v*b": (lambda a, b, c, v: a * v * b, lambda a, b, c, v: a * v * b),
    "a*v+b*v": (lambda a, b, c, v: a * v + b * v, lambda a, b, c, v: a * v + b * v),
    "a+v*b+c": (lambda a, b, c, v: a + v * b + c, lambda a, b, c, v: a + v * b + c),
    "maximum(a*v,b)-c": (lambda a, b, c, v: sf.maximum(a * v, b) - c,
                         lambda a, b, c, v: np.maximum(a * v, b) - c),
    "a*v-b*c": (lambda a, b, c, v: a * v - b * c, lambda a, b, c, v: a * v - b * c),
    "a[::-1]*v+b[:,::-1]": (lambda a, b, c, v: a[::-1] * v + b[:, ::-1],
                            lambda a, b, c, v: a[::-1] * v + b[:, ::-1]),
}
REDUCTIONS = {
    "sum(a*v+b,1)": (lambda a, b, c, v: sf.sum(a * v + b, axis=1),
                     lambda a, b, c, v: (a * v + b).sum(axis=1)),
    "sum((a+b)*v)": (lambda a, b, c, v: sf.sum((a + b) * v),
                     lambda a, b, c, v: ((a + b) * v).sum()),
    "max(a*v+b,0)": (lambda a, b, c, v: sf.max(a * v + b, axis=0),
                     lambda a, b, c, v: (a * v + b).max(axis=0)),
}


def _line(kind, n, density, seed):
    """A row (1, n) in CSR, or a column (n, 1) in CSC: stored as the line it is."""
    return _m((1, n), density, seed) if kind == "row" else _m((n, 1), density, seed, "csc")


def _check(fn, ref, args, out=None):
    got = sf.jit(fn, out=out)(*args)
    want = ref(*[_dense(x) for x in args])
    got = _dense(got)
    np.testing.assert_allclose(got, np.broadcast_to(want, got.shape), rtol=1e-12)


@pytest.mark.parametrize("fmt", ["csr", "csc", "coo"])
@pytest.mark.parametrize("line", ["row", "column"])
@pytest.mark.parametrize("name", sorted(PROGRAMS) + sorted(REDUCTIONS))
def test_a_line_in_an_n_ary_expression_equals_numpy(name, line, fmt):
    fn, ref = {**PROGRAMS, **REDUCTIONS}[name]
    a, b, c = (_m((40, 30), 0.3, s, fmt) for s in (1, 2, 3))
    v = _line(line, 30 if line == "row" else 40, 0.4, 4)
    _check(fn, ref, (a, b, c, v), None if name in REDUCTIONS else fmt)


@pytest.mark.parametrize("case", ["empty_line", "full_line", "no_rows", "empty_matrices"])
@pytest.mark.parametrize("line", ["row", "column"])
def test_edge_cases(case, line):
    n = 30 if line == "row" else 40
    a, b, c = (_m((40, 30), 0.3, s) for s in (5, 6, 7))
    v = _line(line, n, 0.4, 8)
    if case == "empty_line":
        v = sp.csr_array(v.shape)
    elif case == "full_line":
        v = sp.csr_array(np.arange(1.0, n + 1.0).reshape(v.shape))
    elif case == "no_rows":
        a, b, c = (sp.csr_array((0, 30)) for _ in range(3))
        v = _line(line, 30 if line == "row" else 0, 0.4, 8) if line == "row" else \
            sp.csc_array((0, 1))
    elif case == "empty_matrices":
        a, b, c = (sp.csr_array((40, 30)) for _ in range(3))
    for name in ("a*v+b", "(a+b)*v", "sum(a*v+b,1)"):
        fn, ref = {**PROGRAMS, **REDUCTIONS}[name]
        _check(fn, ref, (a, b, c, v), None if name in REDUCTIONS else "csr")


def test_the_line_is_looked_up_from_the_merge_of_the_others():
    a, b = _m((40, 30), 0.3, 1), _m((40, 30), 0.3, 2)
    v = _line("row", 30, 0.4, 3)
    for fn in (lambda x, y, z: x * z + y, lambda x, y, z: (x + y) * z,
               lambda x, y, z: x * z * y):
        src = sf.show(fn, a, b, v, out="csr")
        assert "locate a2's broadcast row" in src, src
        assert "found" in src  # the lookup at each key the merge of the others visits
    # a point of the line alone (a union with it) is met where only the line stores: merged
    src = sf.show(lambda x, y, z: x * y + z, a, b, v, out="csr")
    assert "broadcast row: the position" not in src


def test_column_major_lookup_is_used_too():
    a, b = _m((40, 30), 0.3, 1, "csc"), _m((40, 30), 0.3, 2, "csc")
    v = _line("row", 30, 0.4, 3)
    src = sf.show(lambda x, y, z: x * z + y, a, b, v, out="csc")
    assert "instead of walking" in src and "found" in src


def test_a_workspace_that_cannot_be_allocated_falls_back_to_the_merge():
    # 2**40 columns: calloc refuses the 8 TiB workspace and the kernel merges the line
    n = 2**40
    a = sp.csr_array((np.array([2.0, 3.0, 5.0]), np.array([7, n - 1, 12], dtype=np.int64),
                      np.array([0, 2, 2, 3], dtype=np.int64)), shape=(3, n))
    b = sp.csr_array((np.array([1.0]), np.array([12], dtype=np.int64),
                      np.array([0, 0, 0, 1], dtype=np.int64)), shape=(3, n))
    v = sp.csr_array((np.array([10.0, 100.0]), np.array([7, n - 1], dtype=np.int64),
                      np.array([0, 2], dtype=np.int64)), shape=(1, n))
    got = sf.jit(lambda x, y, z: x * z + y, out="csr")(a, b, v)
    np.testing.assert_array_equal(got.indptr, [0, 2, 2, 3])
    np.testing.assert_array_equal(got.indices, [7, n - 1, 12])
    np.testing.assert_array_equal(got.data, [20.0, 300.0, 1.0])


@pytest.mark.parametrize("name", ["a*v+b", "(a+b)*v", "sum(a*v+b,1)"])
def test_two_threads_equal_one_thread_bit_for_bit(name, monkeypatch):
    monkeypatch.setattr(threads, "PARALLEL_MIN_WORK", 0)
    fn, ref = {**PROGRAMS, **REDUCTIONS}[name]
    args = (_m((300, 200), 0.05, 7), _m((300, 200), 0.05, 8), _m((300, 200), 0.05, 10),
            _line("row", 200, 0.5, 9))
    out = None if name in REDUCTIONS else "csr"
    one = sf.jit(fn, out=out, threads=1)(*args)
    two = sf.jit(fn, out=out, threads=2)(*args)
    if sp.issparse(one):
        for part in ("indptr", "indices", "data"):
            np.testing.assert_array_equal(getattr(one, part), getattr(two, part))
    else:
        np.testing.assert_array_equal(one, two)


def test_a_bad_coordinate_in_the_line_is_reported():
    a, b = _m((5, 6), 0.5, 9), _m((5, 6), 0.5, 10)
    v = sp.csr_array((np.array([1.0, 2.0]), np.array([1, 9], dtype=np.int32),
                      np.array([0, 2], dtype=np.int32)), shape=(1, 6))
    with pytest.raises(sf.InvalidData, match="out of range"):
        sf.jit(lambda x, y, z: x * z + y, out="csr")(a, b, v)


# --- at scale, under a memory limit the merged or materialized forms exceed ---------------

N = 20000


@pytest.fixture
def limited(monkeypatch):
    # a broadcast materialized would be N x nnz(line) = 2e8 entries (GBs); 60 MB is plenty
    # for O(inputs + output)
    monkeypatch.setenv("SPARSEFOLD_MEMORY_LIMIT", str(60 * 2**20))


def _scale_inputs():
    rng = np.random.default_rng(12)
    a, b = (sp.random_array((N, N), density=5e-5, format="csr", rng=rng) for _ in range(2))
    v = sp.random_array((1, N), density=0.5, format="csr", rng=rng)
    w = sp.random_array((N, 1), density=0.5, format="csc", rng=rng)
    x = rng.random(N)
    return a, b, v, w, x


SCALE = {
    "(a*v)@x": (lambda a, b, v, w, x: (a * v) @ x,
                lambda a, b, v, w, x: a.multiply(v) @ x),
    "a*v+b*w": (lambda a, b, v, w, x: a * v + b * w,
                lambda a, b, v, w, x: a.multiply(v) + b.multiply(w)),
    "a*v*w": (lambda a, b, v, w, x: a * v * w,
              lambda a, b, v, w, x: a.multiply(v).multiply(w)),
    "a*v[:,::-1]+b": (lambda a, b, v, w, x: a * v[:, ::-1] + b,
                      lambda a, b, v, w, x: a.multiply(sp.csr_array(v.toarray()[:, ::-1])) + b),
    "a@(b@x)": (lambda a, b, v, w, x: a @ (b @ x), lambda a, b, v, w, x: a @ (b @ x)),
    "a*x[None,:]+b": (lambda a, b, v, w, x: a * x[None, :] + b,
                      lambda a, b, v, w, x: a.multiply(x[None, :]) + b),
}


@pytest.mark.parametrize("name", sorted(SCALE))
def test_at_scale_in_o_of_inputs_plus_output(name, limited):
    fn, ref = SCALE[name]
    args = _scale_inputs()
    got = sf.jit(fn)(*args)
    want = ref(*args)
    if sp.issparse(want):
        assert sp.issparse(got)
        diff = sp.csr_array(got) - sp.csr_array(want)
        assert diff.nnz == 0 or abs(diff).max() < 1e-9
    else:
        assert not sp.issparse(got)  # a dense-valued result, as scipy's
        np.testing.assert_allclose(np.asarray(got).ravel(), np.asarray(want).ravel(),
                                   rtol=1e-12)


def test_a_reversed_line_is_staged_alone_not_its_broadcast():
    a, b, v = _m((40, 30), 0.3, 1), _m((40, 30), 0.3, 2), _line("row", 30, 0.4, 3)
    f = sf.jit(lambda x, y, z: x * z[:, ::-1] + y, out="csr")
    _check(lambda x, y, z: x * z[:, ::-1] + y, lambda x, y, z: x * z[:, ::-1] + y, (a, b, v),
           "csr")
    f(a, b, v)
    (hit,) = f._recent.values()
    (temp, _), = hit.kernel.stages
    assert sz.const_value(temp.shape[0]) == 1  # the (1, n) line, not its (rows, n) broadcast


def test_a_product_of_a_line_is_staged_in_two_dimensions():
    a, v, x = _m((40, 30), 0.3, 1), _line("row", 30, 0.4, 3), np.arange(30.0)
    f = sf.jit(lambda p, q, r: (p * q) @ r)
    np.testing.assert_allclose(f(a, v, x), (a.toarray() * v.toarray()) @ x, rtol=1e-12)
    (hit,) = f._recent.values()
    (temp, _), = hit.kernel.stages
    assert temp.ndim == 2, temp  # computed without the matmul's inserted axis
    assert "broadcast row: the position" in sf.show(lambda p, q, r: (p * q) @ r, a, v, x)


# --- n-d: a line repeated over all axes but its last (or first) ----------------------------

sparse = pytest.importorskip("sparse")


def _tensor(shape, nnz, seed):
    rng = np.random.default_rng(seed)
    coords = np.stack([rng.integers(0, s, nnz) for s in shape])
    return sparse.COO(coords, rng.random(nnz), shape=shape, has_duplicates=True,
                      sorted=False)


ND = {
    "t*v": (lambda t, u, v, c, x: t * v),
    "t*v+u": (lambda t, u, v, c, x: t * v + u),
    "(t+u)*v": (lambda t, u, v, c, x: (t + u) * v),
    "t*v*u": (lambda t, u, v, c, x: t * v * u),
    "t*v*x": (lambda t, u, v, c, x: t * v * x),
    "t*c": (lambda t, u, v, c, x: t * c),
    "t*c-u": (lambda t, u, v, c, x: t * c - u),
    "t+v": (lambda t, u, v, c, x: t + v),  # a union with the line alone: merged
    "sum(t*v,2)": (lambda t, u, v, c, x: sf.sum(t * v, axis=2)),
    "sum(t*v)": (lambda t, u, v, c, x: sf.sum(t * v)),
    "sum(t*c,0)": (lambda t, u, v, c, x: sf.sum(t * c, axis=0)),
}


@pytest.mark.parametrize("shape", [(6, 5, 7), (3, 4, 2, 5)])
@pytest.mark.parametrize("name", sorted(ND))
def test_an_n_d_line_equals_numpy(name, shape):
    fn = ND[name]
    t, u = _tensor(shape, 60, 1), _tensor(shape, 60, 2)
    v = _tensor(shape[-1:], 3, 3)                               # varies along the last axis
    c = _tensor(shape[:1] + (1,) * (len(shape) - 1), 3, 4)      # along the first
    x = np.arange(1.0, shape[-1] + 1.0)
    args = (t, u, v, c, x)
    got = sf.jit(fn)(*args)
    want = fn(*[a.todense() if isinstance(a, sparse.COO) else a for a in args])
    got = got.todense() if hasattr(got, "todense") else np.asarray(got)
    np.testing.assert_allclose(got, np.broadcast_to(want, got.shape), rtol=1e-12)


def test_an_n_d_line_is_computed_in_two_dimensions():
    t, v = _tensor((6, 5, 7), 60, 1), _tensor((7,), 3, 3)
    src = sf.show(lambda a, b: a * b, t, v)
    assert "collapsed into one" in src and "broadcast row: the position" in src


def test_an_n_d_line_at_scale_in_o_of_inputs_plus_output(monkeypatch):
    # materialized, the broadcast of v would be 1000 x 1000 x 500 entries (6 GB)
    monkeypatch.setenv("SPARSEFOLD_MEMORY_LIMIT", str(100 * 2**20))
    shape = (1000, 1000, 1000)
    t, u = _tensor(shape, 20000, 5), _tensor(shape, 20000, 6)
    rng = np.random.default_rng(7)
    v = sparse.COO(rng.choice(1000, 500, replace=False)[None, :], rng.random(500),
                   shape=(1000,))
    c = sparse.COO(np.stack([rng.choice(1000, 500, replace=False), np.zeros(500, int),
                             np.zeros(500, int)]), rng.random(500), shape=(1000, 1, 1))
    got = sparse.COO(sf.jit(lambda a, b, w: a * b + w)(t, v, u))
    diff = got - (t * v + u)
    assert diff.nnz == 0 or abs(diff.data).max() < 1e-9
    got = sparse.COO(sf.jit(lambda a, b, w: a * b - w)(t, c, u))
    diff = got - (t * c - u)
    assert diff.nnz == 0 or abs(diff.data).max() < 1e-9

"""The front end: wrapping user arrays, LazyArray's NumPy-like surface, symbolic inputs and
their binding, input errors, the issue's example, and the ``sparsefold demo`` command.

Oracles: the arrays' own dense values (``toarray`` / ``todense``) and NumPy evaluating the
same expression; recorded formats are compared with scipy's / pydata's own format names.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
import sparse

import sparsefold as sf
from sparsefold.cli import main
from sparsefold.spec.errors import IllFormedProgram, InvalidData
from sparsefold.spec.sizes import Expr

# scipy's storage format -> the format sparsefold records (csr/csc/coo are read in place;
# the others are recorded as the format they will be converted to: csr)
SCIPY_RECORDED = {"csr": "csr", "csc": "csc", "coo": "coo", "bsr": "csr", "dia": "csr",
                  "lil": "csr", "dok": "csr"}


def _matrix(seed: int = 0, shape=(5, 4)) -> np.ndarray:
    rng = np.random.default_rng(seed)
    dense = rng.integers(-4, 5, shape).astype(np.float64)
    dense[rng.random(shape) < 0.5] = 0
    return dense


def _scipy(dense: np.ndarray, fmt: str, kind: str):
    """A scipy.sparse array (``sparray``) or matrix (``spmatrix``) in storage format ``fmt``."""
    base = sp.csr_array(dense) if kind == "sparray" else sp.csr_matrix(dense)
    out = base.asformat(fmt)
    assert out.format == fmt and (sp.issparse(out))
    assert isinstance(out, sp.sparray) == (kind == "sparray")
    return out


def _bound(x: sf.LazyArray):
    """The user object bound to a single-input program."""
    (value,) = x.bindings.values()
    return value


# --- sf.asarray ----------------------------------------------------------------------------------

@pytest.mark.parametrize("kind", ["sparray", "spmatrix"])
@pytest.mark.parametrize("fmt", sorted(SCIPY_RECORDED))
def test_asarray_wraps_scipy_without_copying(fmt, kind):
    dense = _matrix()
    m = _scipy(dense, fmt, kind)
    x = sf.asarray(m)
    assert _bound(x) is m                           # no copy, no conversion
    assert x.node.format.name == SCIPY_RECORDED[fmt]
    assert x.shape == m.shape and x.dtype == m.dtype and x.ndim == 2
    np.testing.assert_array_equal(x.interpret(), m.toarray(), strict=True)


@pytest.mark.parametrize("fmt,recorded", [("csr", "csr"), ("coo", "coo"), ("dok", "csr")])
def test_asarray_wraps_1d_scipy_arrays(fmt, recorded):
    v = sp.coo_array(np.array([0.0, 1.5, 0.0, -2.0])).asformat(fmt)
    x = sf.asarray(v)
    assert _bound(x) is v and x.shape == (4,)
    assert x.node.format.name == recorded
    np.testing.assert_array_equal(x.interpret(), v.toarray(), strict=True)


@pytest.mark.parametrize("make,recorded", [
    (lambda d: sparse.COO.from_numpy(d), "coo"),
    (lambda d: sparse.GCXS.from_numpy(d, compressed_axes=[0]), "csr"),
    (lambda d: sparse.GCXS.from_numpy(d, compressed_axes=[1]), "csc"),
    (lambda d: sparse.COO.from_numpy(d.reshape(2, 5, 2)), "coo"),
], ids=["COO", "GCXS-rows", "GCXS-cols", "COO-3d"])
def test_asarray_wraps_pydata_sparse_without_copying(make, recorded):
    a = make(_matrix(1, shape=(5, 4)))
    x = sf.asarray(a)
    assert _bound(x) is a
    assert x.node.format.name == recorded
    assert x.shape == a.shape and x.dtype == a.dtype
    np.testing.assert_array_equal(x.interpret(), a.todense(), strict=True)


@pytest.mark.parametrize("dt", ["bool", "int8", "uint16", "int32", "float32", "complex128"])
def test_asarray_wraps_numpy_without_copying(dt):
    a = _matrix(2).astype(dt)
    x = sf.asarray(a)
    assert _bound(x) is a and x.node.format.name == "dense"
    assert x.dtype == a.dtype and x.shape == a.shape
    got = x.interpret()
    assert got is a or np.shares_memory(got, a)    # the interpreter reads it in place
    np.testing.assert_array_equal(got, a, strict=True)


def test_asarray_of_scalars_and_lists_and_lazy_arrays():
    assert sf.asarray(np.float32(2.5)).shape == () and sf.asarray(np.float32(2.5)).dtype == \
        np.float32
    y = sf.asarray([[1, 2], [3, 4]])
    np.testing.assert_array_equal(y.interpret(), np.array([[1, 2], [3, 4]]), strict=True)
    assert sf.asarray(y) is y
    assert sf.asarray(3.0).interpret() == np.asarray(3.0)


def test_program_keeps_every_bound_array():
    a, m = _matrix(3), sp.csc_array(_matrix(4))
    y = sf.asarray(a) * 2 + sf.asarray(m)
    assert sorted(map(id, y.bindings.values())) == sorted([id(a), id(m)])
    np.testing.assert_array_equal(y.interpret(), a * 2 + m.toarray())


@pytest.mark.parametrize("bad", [{"a": 1}, "text", None, object(), {1, 2}],
                         ids=["dict", "str", "None", "object", "set"])
def test_asarray_rejects_unsupported_types(bad):
    with pytest.raises(InvalidData, match="expected a NumPy array, a scipy.sparse"):
        sf.asarray(bad)
    with pytest.raises(IllFormedProgram, match="cannot use .* as an array"):
        sf.asarray(np.ones(2)) + bad


@pytest.mark.parametrize("bad", [np.array([object(), 1], dtype=object), np.array(["a", "b"]),
                                 np.zeros(2, dtype=">f8"), np.zeros(2, dtype="datetime64[s]")],
                         ids=["object", "str", "big-endian", "datetime"])
def test_asarray_rejects_unsupported_dtypes(bad):
    with pytest.raises(InvalidData, match="expected a native bool/int/uint/float/complex"):
        sf.asarray(bad)


# --- LazyArray's surface -------------------------------------------------------------------------

def test_lazy_array_description_matches_numpy():
    a = _matrix(5, shape=(2, 3, 4))
    x = sf.asarray(a)
    assert (x.shape, x.dtype, x.ndim, x.size, len(x)) == (a.shape, a.dtype, a.ndim, a.size,
                                                           len(a))
    assert x.T.shape == a.T.shape
    np.testing.assert_array_equal(x.T.interpret(), a.T)
    for target in [(-1,), (6, 4), (2, -1), (4, 3, 2), (24, 1)]:
        np.testing.assert_array_equal(x.reshape(target).interpret(), a.reshape(target))
    np.testing.assert_array_equal(x.reshape(4, 6).interpret(), a.reshape(4, 6))


def test_repr_is_readable():
    x = sf.asarray(_matrix(6))
    y = sf.concat([x, x], axis=1)[::2] * 2
    text = repr(y)
    assert text.startswith("<sparsefold.LazyArray shape=(3, 8) dtype=float64>")
    for word in ("input", "concat", "axis=1", "slice", "map", "multiply", "float64[5, 4]"):
        assert word in text, f"{word!r} missing from repr:\n{text}"
    assert "0x" not in text  # no object addresses
    assert len(text.splitlines()) == 1 + 5  # header + one line per node (shared input once)


def test_truth_value_is_an_error():
    x = sf.asarray(np.ones(3))
    with pytest.raises(TypeError, match="truth value of a lazy array"):
        bool(x)
    with pytest.raises(TypeError, match="truth value"):
        if x == x:
            pass
    with pytest.raises(TypeError):
        hash(x)


def test_numpy_asarray_of_a_lazy_array_interprets_it():
    a = _matrix(7)
    y = sf.asarray(a) * 2 - 1
    np.testing.assert_array_equal(np.asarray(y), a * 2 - 1, strict=True)
    np.testing.assert_array_equal(np.asarray(y, dtype=np.float32), (a * 2 - 1).astype(
        np.float32), strict=True)
    np.testing.assert_array_equal(np.array(sf.asarray(sp.csr_array(a))), a)


def test_len_of_zero_d_and_symbolic_arrays_is_an_error():
    with pytest.raises(TypeError, match="0-d"):
        len(sf.asarray(np.float64(1)))
    with pytest.raises(TypeError, match="symbolic"):
        len(sf.symbol("A", shape=("I",)))


# --- symbols and binding -------------------------------------------------------------------------

def test_symbol_has_symbolic_shape():
    A = sf.symbol("A", shape=("I", "J"), dtype="float64")
    assert all(isinstance(n, Expr) for n in A.shape)
    assert [str(n) for n in A.shape] == ["I", "J"] and str(A.size) == "I * J"
    assert A.dtype == np.float64 and A.ndim == 2 and A.bindings == {}
    assert [str(n) for n in A.T.shape] == ["J", "I"]
    B = sf.symbol("B", shape=("I", "K"), dtype="int32")
    y = sf.concat([A, B], axis=1)
    assert [str(n) for n in y.shape] == ["I", "J + K"] and y.dtype == np.float64
    mixed = sf.symbol("C", shape=(3, "N"))
    assert mixed.shape[0] == 3 and str(mixed.shape[1]) == "N"
    assert sf.symbol("v", shape="N").ndim == 1


def test_symbol_binding_at_interpret():
    A = sf.symbol("A", shape=("I", "J"))
    x = sf.symbol("x", shape=("J",))
    y = A @ x + 1
    for shape in [(4, 3), (1, 5), (0, 2), (3, 0)]:
        a, v = _matrix(8, shape=shape), np.arange(shape[1], dtype=np.float64)
        np.testing.assert_array_equal(y.interpret(A=a, x=v), a @ v + 1)
    # scipy and pydata arrays bind too
    a = _matrix(9, shape=(4, 3))
    v = np.arange(3.0)
    np.testing.assert_array_equal(y.interpret(A=sp.csr_array(a), x=v), a @ v + 1)
    np.testing.assert_array_equal(y.interpret(A=sparse.COO.from_numpy(a), x=v), a @ v + 1)


def test_inconsistent_size_binding_is_invalid_data():
    A = sf.symbol("A", shape=("I", "J"))
    B = sf.symbol("B", shape=("J", "K"))
    y = A @ B
    with pytest.raises(InvalidData, match="size J is 3 elsewhere but 4 here"):
        y.interpret(A=np.ones((2, 3)), B=np.ones((4, 5)))
    S = sf.symbol("S", shape=("N", "N"))
    with pytest.raises(InvalidData, match="size N is 2 elsewhere but 3 here"):
        S.interpret(S=np.ones((2, 3)))


def test_wrong_dtype_ndim_or_missing_input_is_invalid_data():
    A = sf.symbol("A", shape=("I", "J"), dtype="float64")
    with pytest.raises(InvalidData, match="expected dtype float64, found float32"):
        A.interpret(A=np.ones((2, 3), dtype=np.float32))
    with pytest.raises(InvalidData, match="expected a 2-d array, found shape"):
        A.interpret(A=np.ones(3))
    with pytest.raises(InvalidData, match="no array was given for input 'A'"):
        A.interpret()
    with pytest.raises(InvalidData, match="no array was given for input 'B'"):
        (A + sf.symbol("B", shape=("I", "J"))).interpret(A=np.ones((2, 3)))
    fixed = sf.symbol("F", shape=(2, 3))
    with pytest.raises(InvalidData, match=r"expected shape \(2, 3\), found \(3, 2\)"):
        fixed.interpret(F=np.ones((3, 2)))
    with pytest.raises(InvalidData, match="expected a NumPy, scipy.sparse or pydata/sparse"):
        A.interpret(A={"not": "an array"})


def test_bad_symbols_are_ill_formed():
    with pytest.raises(IllFormedProgram, match="expected a numeric dtype, found 'foo'"):
        sf.symbol("A", shape=(2,), dtype="foo")
    with pytest.raises(IllFormedProgram, match="must be an identifier that does not start"):
        sf.symbol("_A", shape=(2,))
    with pytest.raises(IllFormedProgram, match="sizes must be non-negative"):
        sf.symbol("A", shape=(-1,))
    with pytest.raises(IllFormedProgram, match="must be an identifier"):
        sf.symbol("A", shape=("I J",))


# --- the issue's example, and the demo -----------------------------------------------------------

@pytest.mark.parametrize("make", [lambda d: d, sp.csr_array, sp.csc_matrix, sp.coo_array,
                                  sparse.COO.from_numpy],
                         ids=["numpy", "csr_array", "csc_matrix", "coo_array", "pydata-COO"])
def test_issue_example(make):
    dense = _matrix(10, shape=(6, 5))
    a = make(dense)
    x = sf.asarray(a)
    y = sf.concat([x, x], axis=1)[::2].reshape(-1) * 2 + 1
    want = np.concatenate([dense, dense], axis=1)[::2].reshape(-1) * 2 + 1
    got = y.interpret()
    np.testing.assert_array_equal(got, want, strict=True)
    assert y.shape == want.shape and y.dtype == want.dtype

    A = sf.symbol("A", shape=("I", "J"), dtype="float64")
    z = sf.concat([A, A], axis=1)[::2].reshape(-1) * 2 + 1
    for shape in [(6, 5), (7, 2), (1, 1), (0, 3)]:
        d = _matrix(11, shape=shape)
        want = np.concatenate([d, d], axis=1)[::2].reshape(-1) * 2 + 1
        np.testing.assert_array_equal(z.interpret(A=d), want, strict=True)


def test_demo_command_exits_zero(capsys):
    assert main(["demo"]) == 0
    out = capsys.readouterr().out
    assert "equal to the same computation in NumPy: True" in out
    assert "concat" in out


def test_cli_without_a_command_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as info:
        main([])
    assert info.value.code != 0

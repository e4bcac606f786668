"""Ill-formed COMPUTE programs: elementwise maps, reductions and contractions.

Each must raise :class:`IllFormedProgram` when the program is *built* (nothing has run), with
a message that says what was expected and what was found. Tests match a stable piece of the
message. NumPy is asked first where it has an opinion, so that "ill-formed here" means
"NumPy refuses it too". (Shape-operator errors live in
``tests/conformance/test_shape_ops_errors.py``.)
"""

from __future__ import annotations

import numpy as np
import pytest

import sparsefold as sf
from sparsefold.spec import FUNCTIONS, Input, Literal, Map, Reduce
from sparsefold.spec.errors import IllFormedProgram, SparsefoldError


@pytest.fixture
def x():
    return sf.asarray(np.zeros((2, 3)))


def _numpy_refuses(fn, *args, **kwargs) -> None:
    """NumPy raises for the same program (so rejecting it is not our invention)."""
    with pytest.raises((ValueError, TypeError, IndexError, OverflowError)), \
            np.errstate(all="ignore"):
        fn(*args, **kwargs)


def test_ill_formed_program_is_a_value_error_and_a_sparsefold_error():
    assert issubclass(IllFormedProgram, ValueError)
    assert issubclass(IllFormedProgram, SparsefoldError)


# --- broadcasting -------------------------------------------------------------------------------

@pytest.mark.parametrize("s1,s2,sizes", [((2, 3), (4,), "sizes 3 and 4"),
                                         ((2, 3), (3, 3), "sizes 2 and 3"),
                                         ((0,), (2,), "sizes 0 and 2"),
                                         ((5, 2, 1), (3, 1, 1), "axis -3 has sizes 5 and 3")],
                         ids=str)
def test_incompatible_broadcast_shapes(s1, s2, sizes):
    a, b = np.zeros(s1), np.zeros(s2)
    _numpy_refuses(np.add, a, b)
    for build in (lambda: sf.asarray(a) + sf.asarray(b), lambda: sf.multiply(a, sf.asarray(b)),
                  lambda: sf.where(sf.asarray(a) > 0, a, sf.asarray(b))):
        with pytest.raises(IllFormedProgram, match="cannot be broadcast") as info:
            build()
        assert sizes in str(info.value)
        assert "expected them equal or one of them 1" in str(info.value)


def test_symbolic_sizes_broadcast_only_when_provably_equal():
    A = sf.symbol("A", shape=("I", "J"))
    with pytest.raises(IllFormedProgram, match="axis -1 has sizes J and K; expected them equal"):
        A + sf.symbol("B", shape=("I", "K"))
    with pytest.raises(IllFormedProgram, match="sizes J and I"):
        A * sf.symbol("v", shape=("I",))
    assert [str(n) for n in (A + sf.symbol("r", shape=(1, "J"))).shape] == ["I", "J"]


def test_where_three_way_mismatch():
    c = sf.asarray(np.zeros((2, 1), dtype=bool))
    with pytest.raises(IllFormedProgram, match=r"shapes \(2, 1\), \(3,\), \(4,\) cannot be"):
        sf.where(c, np.zeros(3), np.zeros(4))


# --- matmul -------------------------------------------------------------------------------------

@pytest.mark.parametrize("sa,sb,found", [((2, 3), (4,), "found 3 and 4"),
                                         ((3,), (4,), "found 3 and 4"),
                                         ((2, 3), (2, 3), "found 3 and 2"),
                                         ((5, 2, 3), (5, 4, 2), "found 3 and 4"),
                                         ((3,), (2, 4, 5), "found 3 and 4")], ids=str)
def test_matmul_inner_size_mismatch(sa, sb, found):
    a, b = np.zeros(sa), np.zeros(sb)
    _numpy_refuses(np.matmul, a, b)
    with pytest.raises(IllFormedProgram, match="matmul: contracted axis") as info:
        sf.asarray(a) @ sf.asarray(b)
    assert f"expected equal sizes, {found}" in str(info.value)


def test_matmul_batch_mismatch():
    a, b = np.zeros((2, 2, 3)), np.zeros((4, 3, 2))
    _numpy_refuses(np.matmul, a, b)
    with pytest.raises(IllFormedProgram, match="cannot be broadcast"):
        sf.matmul(a, sf.asarray(b))


def test_matmul_symbolic_mismatch():
    with pytest.raises(IllFormedProgram, match="expected equal sizes, found J and K"):
        sf.symbol("A", shape=("I", "J")) @ sf.symbol("B", shape=("K", "L"))


@pytest.mark.parametrize("zero_d_first", [True, False])
def test_matmul_of_zero_d_arrays(x, zero_d_first):
    s = np.float64(2.0)
    _numpy_refuses(np.matmul, s, np.zeros((2, 3)))
    args = (sf.asarray(s), x) if zero_d_first else (x, sf.asarray(s))
    with pytest.raises(IllFormedProgram, match="matmul: operands must be at least 1-d, found a "
                                               "0-d array"):
        sf.matmul(*args)
    with pytest.raises(IllFormedProgram, match="at least 1-d"):
        x @ 2.0


# --- tensordot ----------------------------------------------------------------------------------

@pytest.mark.parametrize("axes,match", [
    (([0], [0, 1]), r"axes must pair up distinct axes, found \(\[0\], \[0, 1\]\)"),
    (([0, 0], [0, 1]), "axes must pair up distinct axes"),
    (([1], [0]), "axis 1 of x1 and 0 of x2: expected equal sizes, found 3 and 2"),
    (1, "axis 1 of x1 and 0 of x2: expected equal sizes, found 3 and 2"),
    (3, r"axes=3 does not fit shapes \(2, 3\), \(2, 3\)"),
    (-1, "axes=-1 does not fit"),
    (([2], [0]), "tensordot axis 2 is out of bounds for an array with 2 dimensions"),
    (("a", "b"), "tensordot axis must be an integer, found 'a'"),
    (5.0, "axes must be an int or a pair"),
], ids=str)
def test_tensordot_mismatched_axes(x, axes, match):
    # NumPy reads axes=-1 as "no axes" (an outer product); the array API requires axes >= 0
    if not isinstance(axes, float) and axes != -1:
        _numpy_refuses(np.tensordot, np.zeros((2, 3)), np.zeros((2, 3)), axes=axes)
    with pytest.raises(IllFormedProgram, match=match):
        sf.tensordot(x, x, axes=axes)


# --- functions and dtypes -----------------------------------------------------------------------

def test_unknown_function_name(x):
    with pytest.raises(IllFormedProgram, match="unknown elementwise function 'frobnicate'; "
                                               "known: .*'add'"):
        sf.apply("frobnicate", x)


@pytest.mark.parametrize("dtype,found", [("U3", "<U3"), (object, "object"),
                                         ("datetime64[s]", "datetime64"), (">f8", ">f8"),
                                         ("foo", "'foo'")], ids=str)
def test_bad_dtype_in_symbol(dtype, found):
    with pytest.raises(IllFormedProgram, match="expected a (native bool/int/uint/float/complex|"
                                               "numeric) dtype, found") as info:
        sf.symbol("A", shape=(2,), dtype=dtype)
    assert found in str(info.value)


@pytest.mark.parametrize("name,args", [("negative", (np.array([True]),)),
                                       ("subtract", (np.array([True]), np.array([False]))),
                                       ("subtract", (np.array([True]), True))], ids=str)
def test_no_numpy_loop_for_the_dtypes(name, args):
    _numpy_refuses(getattr(np, name), *args)
    with pytest.raises((IllFormedProgram,)) as info:
        sf.apply(name, *[sf.asarray(a) if isinstance(a, np.ndarray) else a for a in args])
    assert name in str(info.value)


def test_no_loop_message_names_the_dtypes():
    with pytest.raises(IllFormedProgram, match=r"subtract: no NumPy loop for arguments "
                                               r"\(bool, bool\)"):
        sf.asarray(np.array([True])) - sf.asarray(np.array([True]))


def test_weak_scalar_that_does_not_fit_the_array_dtype():
    a = np.zeros(2, np.int8)
    _numpy_refuses(np.add, a, 300)
    with pytest.raises(IllFormedProgram, match="out of bounds for int8"):
        sf.asarray(a) + 300


# --- reductions ---------------------------------------------------------------------------------

@pytest.mark.parametrize("axis", [(0, 0), (1, -1), (0, 1, 0)], ids=str)
@pytest.mark.parametrize("name", ["sum", "prod", "max", "min", "any", "all"])
def test_reduce_repeated_axis(x, name, axis):
    _numpy_refuses(getattr(np, name), np.zeros((2, 3)), axis=axis)
    with pytest.raises(IllFormedProgram, match=f"{name}: expected distinct axes, found a "
                                               f"repeated axis"):
        getattr(sf, name)(x, axis=axis)
    with pytest.raises(IllFormedProgram, match="repeated axis"):
        getattr(sf, name)(x, axis=axis, keepdims=True)


@pytest.mark.parametrize("axis", [2, -3, (0, 2), (5,)], ids=str)
@pytest.mark.parametrize("name", ["sum", "max", "all"])
def test_reduce_axis_out_of_range(x, name, axis):
    _numpy_refuses(getattr(np, name), np.zeros((2, 3)), axis=axis)
    with pytest.raises(IllFormedProgram, match=f"{name} axis -?\\d is out of bounds for an "
                                               f"array with 2 dimensions"):
        getattr(sf, name)(x, axis=axis)


def test_reduce_axis_of_a_zero_d_array():
    with pytest.raises(IllFormedProgram, match="sum axis 0 is out of bounds for an array with "
                                               "0 dimensions"):
        sf.sum(sf.asarray(np.float64(1)), axis=0)


@pytest.mark.parametrize("axis", [1.0, "0", {0}], ids=str)
def test_reduce_axis_of_the_wrong_type(x, axis):
    _numpy_refuses(np.sum, np.zeros((2, 3)), axis=axis)
    with pytest.raises(IllFormedProgram, match="(axis must be None, an int or a tuple of ints|"
                                               "axis must be an integer), found"):
        sf.sum(x, axis=axis)


def test_unknown_reduction_and_dtype_requests(x):
    with pytest.raises(IllFormedProgram, match="unknown reduction 'median'; known: .*'sum'"):
        Reduce(x.node, (0,), "median")
    with pytest.raises(IllFormedProgram, match="max does not take a dtype argument"):
        Reduce(x.node, (0,), "max", np.dtype("float32"))
    with pytest.raises(IllFormedProgram, match="expected a numeric dtype, found 'foo'"):
        sf.sum(x, dtype="foo")
    with pytest.raises(IllFormedProgram, match="expected a native .* dtype, found object"):
        sf.prod(x, dtype=object)


# --- & and | ------------------------------------------------------------------------------------

@pytest.mark.parametrize("left,right", [
    (np.zeros(3), np.zeros(3, bool)),
    (np.zeros(3, np.float32), 1),
    (np.zeros(3, np.complex128), np.zeros(3, np.int64)),
], ids=str)
def test_bitwise_operators_need_bool_or_integer_operands(left, right):
    # as NumPy's: & | ^ are bitwise_and/or/xor, which have no loop for floats
    L = sf.asarray(left)
    R = sf.asarray(right) if isinstance(right, np.ndarray) else right
    for name, build in (("bitwise_and", lambda: L & R), ("bitwise_or", lambda: L | R),
                        ("bitwise_xor", lambda: R ^ L), ("bitwise_or", lambda: R | L)):
        with pytest.raises(IllFormedProgram, match=f"{name}: no NumPy loop for arguments"):
            build()


# --- Map built directly -------------------------------------------------------------------------

@pytest.mark.parametrize("name,nargs", [("add", 1), ("add", 3), ("negative", 2), ("where", 2)])
def test_map_with_wrong_arity(x, name, nargs):
    fn = FUNCTIONS[name]
    with pytest.raises(IllFormedProgram, match=f"{name} takes {fn.arity} arguments, found "
                                               f"{nargs}"):
        Map(fn, (x.node,) * nargs)
    with pytest.raises(IllFormedProgram, match=f"{name} takes {fn.arity} arguments"):
        sf.apply(name, *([x] * nargs))


def test_map_of_non_arrays(x):
    with pytest.raises(IllFormedProgram, match="add: expected arrays, found 3"):
        Map(FUNCTIONS["add"], (x.node, 3))


@pytest.mark.parametrize("value", ["text", [1, 2], None, np.zeros(2)], ids=str)
def test_literal_must_be_a_scalar(value):
    with pytest.raises(IllFormedProgram, match="expected a scalar, found"):
        Literal(value)


def test_input_with_a_format_that_does_not_fit():
    with pytest.raises(IllFormedProgram, match="format 'csr' stores 1-d or 2-d arrays, found a "
                                               "3-d array"):
        Input("A", (2, 3, 4), np.dtype("float64"), "csr")
    with pytest.raises(IllFormedProgram, match="unknown format 'blocked'"):
        sf.symbol("A", shape=(2, 3), format="blocked")

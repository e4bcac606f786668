"""Ill-formed shape programs are rejected when they are *built*, with
:class:`sparsefold.IllFormedProgram` and a message that says what was expected and what was
found (DESIGN §6). Where NumPy has the same operation, NumPy must reject the same program
too, so that sparsefold is not stricter than what Python users mean by the name.

Each case is ``(id, build, stable piece of the message, numpy or None)``; ``build`` only
builds the program (nothing is interpreted), so the error comes from the program alone.
Data errors found only once sizes are bound (a symbolic index past its axis) are
:class:`sparsefold.InvalidData`, at the end.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
import scipy.sparse as sp

import sparsefold as sf
from sparsefold import spec

A23 = np.arange(6).reshape(2, 3)
A3 = np.arange(3)
A0 = np.array(5)
U8 = np.arange(4, dtype=np.uint8)


def x(a):
    return sf.asarray(a)


def node(a):
    return sf.asarray(a).node


def sym():
    return sf.symbol("A", ("I", "J"), "int64")


CONCAT = [
    ("concat_shape", lambda: sf.concat([A23, np.zeros((2, 4), int)], axis=0),
     "axis 1 of array 0 and array 1: expected equal sizes, found 3 and 4",
     lambda: np.concatenate([A23, np.zeros((2, 4), int)], axis=0)),
    ("concat_sparse_shape", lambda: sf.concat([sp.csr_array(A23), sp.csr_array(A23.T)], axis=1),
     "axis 0 of array 0 and array 1: expected equal sizes, found 2 and 3",
     lambda: np.concatenate([A23, A23.T], axis=1)),
    ("concat_ndim", lambda: sf.concat([A23, A3]),
     "same number of dimensions; array 0 has shape (2, 3) but array 1 has (3,)",
     lambda: np.concatenate([A23, A3])),
    ("concat_0d", lambda: sf.concat([A0, A0]), "zero-dimensional arrays cannot be concatenated",
     lambda: np.concatenate([A0, A0])),
    ("concat_nothing", lambda: sf.concat([]), "expected at least one array, found none",
     lambda: np.concatenate([])),
    ("concat_axis", lambda: sf.concat([A23, A23], axis=2),
     "concat axis 2 is out of bounds for an array with 2 dimensions",
     lambda: np.concatenate([A23, A23], axis=2)),
    ("concat_axis_negative", lambda: sf.concat([A23, A23], axis=-3),
     "concat axis -3 is out of bounds", lambda: np.concatenate([A23, A23], axis=-3)),
    ("concat_axis_float", lambda: sf.concat([A23, A23], axis=1.0),
     "concat axis must be an integer, found 1.0",
     lambda: np.concatenate([A23, A23], axis=1.0)),
    ("concat_not_a_list", lambda: sf.concat(x(A23)), "expected a list or tuple of arrays", None),
    ("concat_symbolic", lambda: sf.concat([sym(), sf.symbol("B", ("I", "K"), "int64")]),
     "expected equal sizes, found J and K", None),
    ("stack_shapes", lambda: sf.stack([A23, A23.T]), "expected equal sizes, found 2 and 3",
     lambda: np.stack([A23, A23.T])),
    ("stack_ndim", lambda: sf.stack([A23, A3]), "all input arrays must have the same shape",
     lambda: np.stack([A23, A3])),
    ("stack_axis", lambda: sf.stack([A23, A23], axis=3),
     "stack axis 3 is out of bounds for an array with 3 dimensions",
     lambda: np.stack([A23, A23], axis=3)),
    ("stack_nothing", lambda: sf.stack([]), "expected a non-empty list or tuple",
     lambda: np.stack([])),
    ("hstack_shapes", lambda: sf.hstack([A23, A23.T]), "expected equal sizes, found 2 and 3",
     lambda: np.hstack([A23, A23.T])),
    ("vstack_shapes", lambda: sf.vstack([A23, A3[:2]]), "expected equal sizes, found 3 and 2",
     lambda: np.vstack([A23, A3[:2]])),
]

RESHAPE = [
    ("reshape_size", lambda: x(A23).reshape(4),
     "cannot reshape array of shape (2, 3) (size 6) into shape (4,) (size 4)",
     lambda: A23.reshape(4)),
    ("reshape_symbolic_size", lambda: sym().reshape("I", 2),
     "cannot reshape array of shape (I, J) (size I * J) into shape (I, 2)", None),
    ("reshape_two_unknown", lambda: x(A23).reshape(-1, -1),
     "can only specify one unknown dimension", lambda: A23.reshape(-1, -1)),
    ("reshape_unknown_indivisible", lambda: x(A23).reshape(4, -1),
     "cannot reshape array of size 6 into shape (4, -1)", lambda: A23.reshape(4, -1)),
    ("reshape_unknown_of_empty", lambda: x(np.zeros((0, 3))).reshape(0, -1),
     "cannot reshape array of size 0 into shape (0, -1)",
     lambda: np.zeros((0, 3)).reshape(0, -1)),
    ("reshape_negative", lambda: x(A23).reshape(-2, -3), "sizes must be >= 0 or -1, found -2",
     lambda: A23.reshape(-2, -3)),
    ("reshape_copy_false", lambda: sf.reshape(A23, (3, 2), copy=False),
     "copy=False cannot be honoured", None),
    ("collapse_empty_run", lambda: spec.Collapse(node(A23), 1, 1),
     "expected 0 <= start < stop <= 2 (a non-empty run of adjacent axes), found start=1, "
     "stop=1", None),
    ("collapse_past_end", lambda: spec.Collapse(node(A23), 0, 3), "found start=0, stop=3",
     None),
    ("collapse_negative", lambda: spec.Collapse(node(A23), -1, 2), "found start=-1, stop=2",
     None),
    ("split_product", lambda: spec.Split(node(A23), 1, (2, 2)),
     "axis 1 of shape (2, 3) has size 3; expected it to equal the product of (2, 2) = 4", None),
    ("split_negative", lambda: spec.Split(node(A23), 1, (-1, -3)),
     "split: sizes must be non-negative, found -1", None),
    ("split_no_sizes", lambda: spec.Split(node(A23), 1, ()),
     "expected at least one output size, found none", None),
    ("split_axis", lambda: spec.Split(node(A23), 2, (3,)),
     "split axis 2 is out of bounds for an array with 2 dimensions", None),
]

AXES = [
    ("squeeze_not_one", lambda: sf.squeeze(A23, axis=0),
     "axis 0 of shape (2, 3) has size 2; expected 1", lambda: np.squeeze(A23, axis=0)),
    ("squeeze_empty_axis", lambda: sf.squeeze(np.zeros((0, 1)), axis=0),
     "axis 0 of shape (0, 1) has size 0; expected 1",
     lambda: np.squeeze(np.zeros((0, 1)), axis=0)),
    ("squeeze_symbolic", lambda: sf.squeeze(sym(), axis=0),
     "axis 0 of shape (I, J) has size I; expected 1", None),
    ("squeeze_axis", lambda: sf.squeeze(np.zeros((1, 1)), axis=2),
     "squeeze axis 2 is out of bounds", lambda: np.squeeze(np.zeros((1, 1)), axis=2)),
    ("squeeze_repeated", lambda: sf.squeeze(np.zeros((1, 1)), axis=(0, -2)),
     "repeated axis in (0, -2)", lambda: np.squeeze(np.zeros((1, 1)), axis=(0, -2))),
    ("permute_repeated", lambda: sf.permute_dims(A23, (0, 0)),
     "expected a permutation of 0..1, found (0, 0)", lambda: np.transpose(A23, (0, 0))),
    ("permute_short", lambda: sf.permute_dims(A23, (0,)),
     "expected a permutation of 0..1, found (0,)", lambda: np.transpose(A23, (0,))),
    ("permute_long", lambda: sf.permute_dims(A23, (0, 1, 2)),
     "permute_dims axis 2 is out of bounds", lambda: np.transpose(A23, (0, 1, 2))),
    ("permute_axis", lambda: sf.permute_dims(A23, (0, 5)),
     "permute_dims axis 5 is out of bounds", lambda: np.transpose(A23, (0, 5))),
    ("permute_node", lambda: spec.PermuteDims(node(A23), (1, 1)),
     "expected a permutation of 0..1, found (1, 1)", None),
    ("moveaxis_repeated", lambda: sf.moveaxis(A23, [0, 0], [0, 1]), "moveaxis: repeated axis",
     lambda: np.moveaxis(A23, [0, 0], [0, 1])),
    ("moveaxis_lengths", lambda: sf.moveaxis(A23, [0, 1], [0]),
     "source and destination must have the same length",
     lambda: np.moveaxis(A23, [0, 1], [0])),
    ("moveaxis_axis", lambda: sf.moveaxis(A23, 2, 0), "moveaxis source 2 is out of bounds",
     lambda: np.moveaxis(A23, 2, 0)),
    ("expand_axis", lambda: sf.expand_dims(A23, axis=3),
     "expand_dims axis 3 is out of bounds for an array with 3 dimensions",
     lambda: np.expand_dims(A23, axis=3)),
    ("expand_axis_negative", lambda: sf.expand_dims(A23, axis=-4),
     "expand_dims axis -4 is out of bounds", lambda: np.expand_dims(A23, axis=-4)),
    ("broadcast_size", lambda: sf.broadcast_to(A3, (4,)),
     "cannot broadcast shape (3,) to (4,): axis 0 has size 3; expected 4 or 1",
     lambda: np.broadcast_to(A3, (4,))),
    ("broadcast_to_empty", lambda: sf.broadcast_to(A3, (0,)),
     "axis 0 has size 3; expected 0 or 1", lambda: np.broadcast_to(A3, (0,))),
    ("broadcast_fewer_dims", lambda: sf.broadcast_to(A23, (3,)),
     "cannot broadcast shape (2, 3) to fewer dimensions (3,)",
     lambda: np.broadcast_to(A23, (3,))),
    ("broadcast_inner_axis", lambda: sf.broadcast_to(A23, (2, 2, 6)),
     "axis 1 has size 3; expected 6 or 1", lambda: np.broadcast_to(A23, (2, 2, 6))),
    ("broadcast_negative", lambda: sf.broadcast_to(A3, (-1, 3)),
     "broadcast_to: sizes must be non-negative, found (-1, 3)",
     lambda: np.broadcast_to(A3, (-1, 3))),
    ("broadcast_symbolic", lambda: sf.broadcast_to(sym(), ("I", "K")),
     "axis 1 has size J; expected K or 1", None),
]

INDEXING = [
    ("index_past_end", lambda: x(A3)[3], "index 3 is out of bounds for axis 0 with size 3",
     lambda: A3[3]),
    ("index_before_start", lambda: x(A3)[-4], "index -4 is out of bounds for axis 0 with size 3",
     lambda: A3[-4]),
    ("index_second_axis", lambda: x(A23)[0, 3], "index 3 is out of bounds for axis 1 with size 3",
     lambda: A23[0, 3]),
    ("index_empty_axis", lambda: x(np.zeros((0, 2)))[0],
     "index 0 is out of bounds for axis 0 with size 0", lambda: np.zeros((0, 2))[0]),
    ("index_symbolic_always_out", lambda: sym()["I"],
     "index I is out of bounds for axis 0 with size I", None),
    ("too_many_ints", lambda: x(A23)[0, 0, 0],
     "too many indices for array: array is 2-dimensional, but 3 were indexed",
     lambda: A23[0, 0, 0]),
    ("too_many_slices", lambda: x(A3)[:, :], "array is 1-dimensional, but 2 were indexed",
     lambda: A3[:, :]),
    ("too_many_for_0d", lambda: x(A0)[0], "array is 0-dimensional, but 1 were indexed",
     lambda: A0[0]),
    ("too_many_around_ellipsis", lambda: x(A23)[None, 0, ..., 0, 0],
     "array is 2-dimensional, but 3 were indexed", lambda: A23[None, 0, ..., 0, 0]),
    ("two_ellipses", lambda: x(A23)[..., ...], "can only have a single ellipsis",
     lambda: A23[..., ...]),
    ("step_zero", lambda: x(A3)[::0], "slice step must be a non-zero integer, found 0",
     lambda: A3[::0]),
    ("step_zero_second_axis", lambda: x(A23)[:, 1:2:0],
     "slice step must be a non-zero integer, found 0", lambda: A23[:, 1:2:0]),
    ("step_float", lambda: x(A3)[::1.5], "slice step must be a non-zero integer, found 1.5",
     lambda: A3[::1.5]),
    ("bound_float", lambda: x(A3)[1.0:], "slice bounds must be integers or size symbols",
     lambda: A3[1.0:]),
    ("index_float", lambda: x(A3)[1.0], "found float", lambda: A3[1.0]),
    # integer-array and boolean indexing exist (spec.fancy); what NumPy rejects, we reject
    ("advanced_list_out_of_range", lambda: x(A3)[[0, 3]],
     "index 3 is out of bounds for axis 0 with size 3", lambda: A3[[0, 3]]),
    ("advanced_negative_out_of_range", lambda: x(A23)[:, np.array([-4])],
     "index -4 is out of bounds for axis 1 with size 3", lambda: A23[:, np.array([-4])]),
    ("advanced_float_array", lambda: x(A3)[np.array([0.0, 2.0])],
     "arrays used as indices must be of integer (or boolean) type, found float64",
     lambda: A3[np.array([0.0, 2.0])]),
    ("advanced_bool_mask_shape", lambda: x(A3)[np.array([True, False])],
     "boolean index did not match indexed array along axis 0; size of axis is 3 but size of "
     "corresponding boolean axis is 2", lambda: A3[np.array([True, False])]),
    ("advanced_not_broadcastable", lambda: x(A23)[[0, 1], [0, 1, 2]],
     "shape mismatch: indexing arrays could not be broadcast together",
     lambda: A23[[0, 1], [0, 1, 2]]),
    ("advanced_too_many", lambda: x(A3)[[0], [0]], "too many indices for array",
     lambda: A3[[0], [0]]),
    ("advanced_bool_scalar", lambda: x(A3)[True], "found bool", None),
    ("advanced_lazy_float_array", lambda: x(A3)[x(A3 * 0.5)],
     "arrays used as indices must be of integer (or boolean) type, found float64", None),
    # a lazy mask with data is computed (a data-dependent shape); over symbolic inputs it
    # cannot be
    ("advanced_lazy_mask_not_data", lambda: x(A3)[sf.symbol("S", (3,)) > 0],
     "a boolean mask over symbolic inputs cannot index", None),
    ("slice_node_arity", lambda: spec.Slice(node(A23), ((None, None, None),)),
     "expected one (start, stop, step) per axis of shape (2, 3), found 1", None),
    ("index_node_axis", lambda: spec.Index(node(A23), 2, 0),
     "index axis 2 is out of bounds for an array with 2 dimensions", None),
]

PAD = [
    ("pad_negative", lambda: sf.pad(A23, -1), "pad: widths must be non-negative, found -1",
     lambda: np.pad(A23, -1)),
    ("pad_negative_in_pair", lambda: sf.pad(A23, ((1, 0), (0, -2))),
     "widths must be non-negative, found -2", lambda: np.pad(A23, ((1, 0), (0, -2)))),
    ("pad_too_many_pairs", lambda: sf.pad(A23, ((1, 1), (1, 1), (1, 1))),
     "pad_width must be an int, a pair, or 2 pairs",
     lambda: np.pad(A23, ((1, 1), (1, 1), (1, 1)))),
    ("pad_pairs_for_0d", lambda: sf.pad(A0, ((1, 2), (1, 2))),
     "pad_width must be an int, a pair, or 0 pairs", lambda: np.pad(A0, ((1, 2), (1, 2)))),
    ("pad_float_width", lambda: sf.pad(A23, 1.5), "widths must be integers, found 1.5",
     lambda: np.pad(A23, 1.5)),
    ("pad_mode", lambda: sf.pad(A23, 1, mode="reflect"),
     "only mode='constant' is supported, found 'reflect'", None),
    ("pad_node_arity", lambda: spec.Pad(node(A23), ((1, 1),)),
     "expected one (before, after) per axis of shape (2, 3), found 1", None),
    ("pad_values_array", lambda: sf.pad(A23, 1, constant_values=[1, 2]),
     "constant_values must be a single scalar", None),
]

# constants NumPy would cast silently (wrapping or truncating): the fill value is data the
# program states, so a lossy one is rejected rather than changed
UNREPRESENTABLE = [
    ("uint8", -1), ("uint8", 256), ("int8", 128), ("int64", 2.5), ("int64", np.nan),
    ("int64", np.inf), ("bool", 2), ("int64", 1j), ("float32", np.float64(0.1)),
    ("float64", 1 + 1j), ("int32", 2**31),
]

CASES = CONCAT + RESHAPE + AXES + INDEXING + PAD


@pytest.mark.parametrize("build,message", [c[1:3] for c in CASES], ids=[c[0] for c in CASES])
def test_ill_formed(build, message):
    with pytest.raises(sf.IllFormedProgram, match=re.escape(message)):
        build()


WITH_NUMPY = [c for c in CASES if c[3] is not None]


@pytest.mark.parametrize("numpy_program", [c[3] for c in WITH_NUMPY],
                         ids=[c[0] for c in WITH_NUMPY])
def test_numpy_rejects_it_too(numpy_program):
    with pytest.raises((ValueError, IndexError, TypeError)):
        numpy_program()


@pytest.mark.parametrize("dtype,value", UNREPRESENTABLE)
def test_pad_constant_not_representable(dtype, value):
    a = np.zeros((2, 2), dtype=dtype)
    with pytest.raises(sf.IllFormedProgram,
                       match=re.escape(f"is not exactly representable in {np.dtype(dtype)}")):
        sf.pad(a, 1, constant_values=value)


def test_errors_are_value_errors():
    """Code written against NumPy that catches ValueError keeps working."""
    with pytest.raises(ValueError):
        sf.concat([A23, A3])


# --- errors found when data binds the sizes ---------------------------------------------------

def test_symbolic_index_past_its_axis_is_invalid_data(engine):
    """``A[:, "I"]`` is well-formed (I may be less than J), but data with I >= J breaks it."""
    y = sym()[:, "I"]
    np.testing.assert_array_equal(engine(y, A=np.arange(6).reshape(2, 3)),
                                  np.arange(6).reshape(2, 3)[:, 2])
    for bad in (np.zeros((3, 3), np.int64), np.zeros((2, 0), np.int64)):
        with pytest.raises(sf.InvalidData, match=re.escape("precondition on sizes")):
            engine(y, A=bad)


def test_symbolic_sizes_bound_twice_differently_is_invalid_data(engine):
    y = sf.concat([sym(), sf.symbol("B", ("I", "K"), "int64")], axis=1)
    with pytest.raises(sf.InvalidData, match="size I is 2 elsewhere but 3 here"):
        engine(y, A=np.zeros((2, 2), np.int64), B=np.zeros((3, 1), np.int64))


def test_symbolic_input_of_wrong_rank_is_invalid_data(engine):
    with pytest.raises(sf.InvalidData, match="expected a 2-d array, found shape"):
        engine(sym().T, A=np.zeros(3, np.int64))

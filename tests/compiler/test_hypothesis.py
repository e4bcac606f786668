"""Hypothesis: random programs through the compiler, compared with the interpreter.

* ``test_random_program`` — a random input (format, dtype, index width, shape with
  0-length and size-1 axes) fed through a random chain of shape operators (slices with
  ints/None/negative steps, permutations, reshapes, expand/squeeze, broadcast, pad,
  concat with a reversed copy), elementwise maps, and an optional reduction, compiled for
  a random output format. Every example is a new kernel (~1 s), so ``max_examples`` is
  capped at 20 (derandomized via the ci profile: the same 20 programs on every run).
* ``test_random_merge`` — two operands (random formats, dtypes, 0-length axes), each seen
  through a random view (transpose, reversed or every other row, split of a flat vector,
  broadcast row, column slice), combined by multiply/add/subtract/maximum/minimum: the
  merge planner's intersections and unions through shape operators. 12 examples.
* ``test_program_family_*`` — fixed programs over random data and sizes. Sizes are drawn
  from disjoint ranges (>= 2), so every example has the same signature and reuses one kernel
  per output format: many examples for a few builds.
"""

import math
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import sparsefold as sf
from sparsefold.verify.strategies import (
    dense_arrays,
    format_fits,
    reshape_targets,
    shapes,
    slice_keys,
    sparse_arrays,
)

sys.path.insert(0, str(Path(__file__).resolve().parent))
from kernel_checks import check_result, run_both, with_index_dtype  # noqa: E402

pytestmark = pytest.mark.cython

OUTS = ("csr", "csc", "coo", "dcsr", "dense")
MAX_SIZE = 240  # elements of any intermediate: keeps the interpreter and kernels quick
MAX_NDIM = 4


def _maps():
    return [("times2", lambda y: y * 2), ("negative", lambda y: -y),
            ("abs", lambda y: sf.abs(y)), ("plus1", lambda y: y + 1),
            ("positive", lambda y: y > 0), ("times_half", lambda y: y * 0.5)]


def _reductions():
    return ["sum", "max", "min", "any"]


@st.composite
def _step(draw, shape: tuple):
    """One (description, function) step applicable to an array of ``shape``."""
    nd = len(shape)
    kinds = ["slice", "reshape", "pad", "concat", "map"]
    if nd >= 2:
        kinds.append("permute")
    if nd < MAX_NDIM:
        kinds.append("expand")
    if 1 in shape:
        kinds += ["squeeze", "broadcast"]
    kind = draw(st.sampled_from(kinds))
    if kind == "slice":
        key = draw(slice_keys(shape, allow_new_axes=nd < MAX_NDIM))
        return f"[{key}]", lambda y: y[key]
    if kind == "reshape":
        target = draw(reshape_targets(shape, max_dims=MAX_NDIM))
        return f".reshape({target})", lambda y: y.reshape(target)
    if kind == "pad":
        widths = tuple((draw(st.integers(0, 2)), draw(st.integers(0, 2))) for _ in shape)
        value = draw(st.sampled_from([0, 0, 0, 1]))
        return f"pad({widths}, {value})", lambda y: sf.pad(y, widths, constant_values=value)
    if kind == "concat":
        axis = draw(st.integers(-nd, nd - 1)) if nd else 0
        flip = tuple(slice(None, None, -1) if d == axis % max(nd, 1) else slice(None)
                     for d in range(nd))
        return f"concat(y, y{flip}, {axis})", lambda y: sf.concat([y, y[flip]], axis=axis)
    if kind == "map":
        name, fn = draw(st.sampled_from(_maps()))
        return name, fn
    if kind == "permute":
        perm = tuple(draw(st.permutations(range(nd))))
        return f"permute{perm}", lambda y: sf.permute_dims(y, perm)
    if kind == "expand":
        axis = draw(st.integers(0, nd))
        return f"expand({axis})", lambda y: sf.expand_dims(y, axis=axis)
    ones = [d for d, n in enumerate(shape) if n == 1]
    axis = draw(st.sampled_from(ones))
    if kind == "squeeze":
        return f"squeeze({axis})", lambda y: sf.squeeze(y, axis=axis)
    target = list(shape)
    target[axis] = draw(st.integers(0, 3))
    target = tuple(target)
    return f"broadcast_to({target})", lambda y: sf.broadcast_to(y, target)


@st.composite
def programs(draw):
    """(input array, [(description, step)], output format): a well-formed random program."""
    nd = draw(st.integers(1, 3))
    fmt = draw(st.sampled_from([f for f in ("csr", "csc", "coo", "dense")
                                if format_fits(f, nd)]))
    dtype = draw(st.sampled_from(["float64", "int64", "float32", "int32", "bool"]))
    # mostly axes of 2..4 (sizes 0 and 1 are traced concretely and are the grid's edge cases)
    shape = draw(shapes(nd, nd, max_side=4, min_side=draw(st.sampled_from([2, 0]))))
    x = draw(dense_arrays(shape, dtype) if fmt == "dense" else sparse_arrays(shape, fmt, dtype))
    if fmt != "dense" and draw(st.booleans()):
        x = with_index_dtype(x, "int64")
    y = sf.asarray(x)
    steps = []
    for _ in range(draw(st.integers(2, 4))):
        desc, fn = draw(_step(tuple(y.shape)))
        try:
            z = fn(y)
        except sf.IllFormedProgram:
            continue  # e.g. negative of a bool array; the chain goes on without it
        if math.prod(z.shape) > MAX_SIZE:
            continue
        y = z
        steps.append((desc, fn))
    if y.ndim and draw(st.booleans()):
        monoid = draw(st.sampled_from(_reductions()))
        axis = draw(st.sampled_from([None, *range(y.ndim)]))
        reduce_fn = getattr(sf, monoid)
        try:
            reduce_fn(y, axis=axis)
            steps.append((f"{monoid}(axis={axis})",
                          lambda v, r=reduce_fn, a=axis: r(v, axis=a)))
        except sf.IllFormedProgram:
            pass  # max/min over an empty axis has no identity
    return x, steps, draw(st.sampled_from(OUTS))


def _cap(n: int) -> int:
    """``n`` examples under the ci profile (each new program is a kernel build); a tenth of
    the profile's count under a larger one (``SPARSEFOLD_HYPOTHESIS_PROFILE=large``); never
    more than the profile allows."""
    limit = settings.default.max_examples
    return min(limit, max(n, limit // 10))


def _chain(steps):
    def program(a):
        for _, fn in steps:
            a = fn(a)
        return a
    return program


@settings(max_examples=_cap(20))
@given(programs())
def test_random_program(case):
    x, steps, out = case
    program = _chain(steps)
    note = " -> ".join(d for d, _ in steps) or "identity"
    got, expected = run_both(program, [x], out)
    try:
        check_result(got, expected, out,
                     rtol=1e-6 if np.asarray(expected).dtype.kind == "f" else None)
    except AssertionError as exc:
        raise AssertionError(f"program: {note}; input {type(x).__name__} {x.shape} "
                             f"{x.dtype}; out={out}\n{exc}") from exc


# --- fixed programs, random data: one kernel each ---------------------------------------------

def _family(a, b):
    return (sf.concat([a[::2], b[::-1]], axis=0).T.reshape(-1) * 2)


@settings(max_examples=_cap(40))
@given(m1=st.integers(2, 5), m2=st.integers(6, 9), n=st.integers(10, 13),
       out=st.sampled_from(["csr", "coo"]), data=st.data())
def test_program_family_shape_chain(m1, m2, n, out, data):
    a = data.draw(sparse_arrays((m1, n), "csr", "float64"), label="a")
    b = data.draw(sparse_arrays((m2, n), "coo", "float64"), label="b")
    got, expected = run_both(_family, [a, b], out)
    check_result(got, expected, out, exact_pattern=True)


@settings(max_examples=_cap(40))
@given(m=st.integers(2, 6), n=st.integers(7, 12), data=st.data())
def test_program_family_reduction(m, n, data):
    a = data.draw(sparse_arrays((m, n), "csc", "int64"), label="a")
    x = data.draw(dense_arrays((n,), "int64"), label="x")
    got, expected = run_both(lambda p, v: sf.sum((p * v)[:, ::2] * 3, axis=1), [a, x], "dense")
    check_result(got, expected, "dense")


# --- two sparse operands: merges through views ------------------------------------------------

def _views(shape):
    """(name, stored shape, view): ways for an operand of ``shape`` to be seen through a
    shape operator — the merge planner must iterate each in the output's order."""
    r, c = shape
    return [
        ("identity", (r, c), lambda y: y),
        ("transpose", (c, r), lambda y: y.T),
        ("reversed", (r, c), lambda y: y[::-1]),
        ("every_other_row", (2 * r, c), lambda y: y[::2]),
        ("split_of_flat", (r * c,), lambda y: y.reshape(r, c)),
        ("broadcast_row", (1, c), lambda y: sf.broadcast_to(y, (r, c))),
        ("column_slice", (r, c + 2), lambda y: y[:, 1:-1]),
    ]


_BINARY = {"multiply": lambda a, b: a * b, "add": lambda a, b: a + b,
           "subtract": lambda a, b: a - b, "maximum": sf.maximum, "minimum": sf.minimum}


@st.composite
def binary_programs(draw):
    shape = draw(shapes(2, 2, max_side=4, min_side=draw(st.sampled_from([2, 0]))))
    dtype = draw(st.sampled_from(["float64", "int64", "float32"]))
    args, views = [], []
    for _ in range(2):
        name, stored, view = draw(st.sampled_from(_views(shape)))
        fmt = draw(st.sampled_from([f for f in ("csr", "csc", "coo", "dense")
                                    if format_fits(f, len(stored))]))
        fmt = "csr" if fmt == "dense" and draw(st.booleans()) else fmt  # mostly sparse
        x = draw(dense_arrays(stored, dtype) if fmt == "dense"
                 else sparse_arrays(stored, fmt, dtype))
        args.append(x)
        views.append((name, view))
    fn = draw(st.sampled_from(sorted(_BINARY)))
    return args, views, fn, draw(st.sampled_from(OUTS))


@settings(max_examples=_cap(12))
@given(binary_programs())
def test_random_merge(case):
    (x, y), ((na, va), (nb, vb)), fn, out = case
    got, expected = run_both(lambda a, b: _BINARY[fn](va(a), vb(b)), [x, y], out)
    try:
        check_result(got, expected, out)
    except AssertionError as exc:
        raise AssertionError(f"{fn}({na}({type(x).__name__} {x.shape}), {nb}("
                             f"{type(y).__name__} {y.shape})) {x.dtype}; out={out}\n"
                             f"{exc}") from exc

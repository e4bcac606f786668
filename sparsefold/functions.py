"""Array-API-named functions that build programs. Each one lifts its arguments to nodes
(arrays become inputs, scalars literals), builds the program its ``spec.derived``
definition says, and returns a :class:`LazyArray`; nothing is computed here.

The meaning of every function — ``stack`` is expand_dims + concat, ``reshape`` a chain of
collapse/split, ``matmul``/``tensordot`` the sum of a broadcast multiply, NumPy's rules for
``hstack``/``vstack`` — is stated once, in ``sparsefold.spec.derived``; this module only
adapts the front end's arrays to it.
"""

from __future__ import annotations

import builtins
from collections.abc import Sequence

import numpy as np

from sparsefold.lazy import LazyArray, lift, merge_bindings
from sparsefold.reductions import reduce_monoid, write_out
from sparsefold.spec import derived, derived_shape, reductions
from sparsefold.spec import einsum as einsum_spec
from sparsefold.spec import sizes as sz
from sparsefold.spec.errors import IllFormedProgram
from sparsefold.spec.ir import Node, ShapeOp

__all__ = [
    "concat", "stack", "hstack", "vstack", "block_array", "reshape", "permute_dims",
    "moveaxis", "expand_dims", "squeeze", "broadcast_to", "pad", "sum", "prod", "max", "min",
    "any", "all", "matmul", "tensordot", "add", "subtract", "multiply", "divide", "pow",
    "maximum", "minimum", "where", "abs", "negative", "less", "less_equal", "greater",
    "greater_equal", "equal", "not_equal", "logical_and", "logical_or", "apply",
    "apply_operator", "flip", "roll", "swapaxes", "matrix_transpose", "transpose", "tile",
    "repeat", "diagonal", "tril", "triu", "diff", "unstack", "outer", "dot", "vecdot",
    "einsum", "nonzero", "argwhere", "take", "compress",
]


def _lazy(node: Node, *bindings) -> LazyArray:
    return LazyArray(node, merge_bindings(*bindings))


def _lifted(xs) -> tuple[list[Node], list[dict]]:
    """The nodes of ``xs`` and the bindings they bring."""
    pairs = [lift(x) for x in xs]
    return [n for n, _ in pairs], [b for _, b in pairs]


def _unary(build, x, *args, **kwargs) -> LazyArray:
    node, bindings = lift(x)
    return _lazy(build(node, *args, **kwargs), bindings)


# --- elementwise ------------------------------------------------------------------------------

def apply(name: str, *args) -> LazyArray:
    """Apply the elementwise function registered as ``name`` (built-in or user-registered)."""
    nodes, bindings = _lifted(args)
    return _lazy(derived.apply(name, *nodes), *bindings)


def add(x1, x2, /): return apply("add", x1, x2)
def subtract(x1, x2, /): return apply("subtract", x1, x2)
def multiply(x1, x2, /): return apply("multiply", x1, x2)
def divide(x1, x2, /): return apply("divide", x1, x2)
def pow(x1, x2, /): return apply("power", x1, x2)  # noqa: A001 - array API name
def maximum(x1, x2, /): return apply("maximum", x1, x2)
def minimum(x1, x2, /): return apply("minimum", x1, x2)
def less(x1, x2, /): return apply("less", x1, x2)
def less_equal(x1, x2, /): return apply("less_equal", x1, x2)
def greater(x1, x2, /): return apply("greater", x1, x2)
def greater_equal(x1, x2, /): return apply("greater_equal", x1, x2)
def equal(x1, x2, /): return apply("equal", x1, x2)
def not_equal(x1, x2, /): return apply("not_equal", x1, x2)
def logical_and(x1, x2, /): return apply("logical_and", x1, x2)
def logical_or(x1, x2, /): return apply("logical_or", x1, x2)
def where(condition, x1=None, x2=None, /):
    """``where(c, x1, x2)``: elementwise choice; ``where(c)``: ``nonzero(c)``."""
    if x1 is None and x2 is None:
        return nonzero(condition)
    if x1 is None or x2 is None:
        raise IllFormedProgram("where: give both x1 and x2, or neither")
    return apply("where", condition, x1, x2)
def abs(x, /): return apply("abs", x)  # noqa: A001
def negative(x, /): return apply("negative", x)


# --- shape operators --------------------------------------------------------------------------

def apply_operator(op: type, /, *operands, trust: bool = False, **params) -> LazyArray:
    """Apply a shape operator class ``op`` — a ``ShapeOp`` subclass, built in or defined by
    the user (docs/verification.md, "Defining your own operator") — to ``operands`` (arrays;
    a list of arrays where the operator's field holds a tuple of operands) with its other
    fields as keywords. A keyword whose field is annotated ``Expr`` (a size) may be an int
    or a symbol name. The result is interpreted, compiled by ``sf.jit`` and proved like a
    built-in operator's: ``sf.apply_operator(Flip, x, axis=0)``.

    The compiler proves a user entry on first use and refuses it when the proof fails or
    does not finish. ``trust=True`` trusts ``op``'s definition (for the rest of the process)
    when its proof does not finish: kernels then run with run-time checks of its maps. A
    refuted entry is refused either way (``sparsefold.verify.entries``)."""
    if not (isinstance(op, type) and issubclass(op, ShapeOp)):
        raise IllFormedProgram(f"apply_operator: expected a ShapeOp subclass, found {op!r}")
    if trust:
        from sparsefold.verify.entries import trust as trust_entry
        trust_entry(op)
    nodes, bindings = [], []
    for x in operands:
        if isinstance(x, (list, tuple)):
            group, more = _lifted(x)
            nodes.append(tuple(group))
            bindings += more
        else:
            node, b = lift(x)
            nodes.append(node)
            bindings.append(b)
    sizes = _size_fields(op)
    params = {k: sz.as_expr(v) if k in sizes and isinstance(v, (int, str)) else v
              for k, v in params.items()}
    return _lazy(op(*nodes, **params), *bindings)


def _size_fields(op: type) -> set[str]:
    """Fields of ``op`` annotated as a size expression (``Expr``)."""
    import typing
    try:
        hints = typing.get_type_hints(op)
    except Exception:  # noqa: BLE001 - unresolvable annotations: convert nothing
        return set()
    return {name for name, t in hints.items() if t is sz.Expr}


def concat(arrays: Sequence, /, *, axis: int | None = 0) -> LazyArray:
    """Join arrays along an existing axis (``axis=None`` flattens them first)."""
    if isinstance(arrays, LazyArray) or not isinstance(arrays, (list, tuple)):
        raise IllFormedProgram("concat: expected a list or tuple of arrays")
    nodes, bindings = _lifted(arrays)
    return _lazy(derived.concat(nodes, axis), *bindings)


def stack(arrays: Sequence, /, *, axis: int = 0) -> LazyArray:
    """Join arrays along a new axis: expand_dims each one, then concat."""
    if not isinstance(arrays, (list, tuple)) or not arrays:
        raise IllFormedProgram("stack: expected a non-empty list or tuple of arrays")
    nodes, bindings = _lifted(arrays)
    return _lazy(derived.stack(nodes, axis), *bindings)


def _cast_all(nodes: list[Node], dtype) -> list[Node]:
    return nodes if dtype is None else [derived.astype(n, dtype) for n in nodes]


def hstack(arrays: Sequence, *, dtype=None) -> LazyArray:
    """NumPy's ``hstack``: 0-d arrays become 1-d, then concat along axis 1, or axis 0 when
    the first array is 1-d; ``dtype``: every array cast first."""
    nodes, bindings = _lifted(arrays)
    return _lazy(derived.hstack(_cast_all(nodes, dtype)), *bindings)


def vstack(arrays: Sequence, *, dtype=None) -> LazyArray:
    """NumPy's ``vstack``: 1-d arrays become rows, then concat along axis 0; ``dtype``:
    every array cast first."""
    nodes, bindings = _lifted(arrays)
    return _lazy(derived.vstack(_cast_all(nodes, dtype)), *bindings)


def block_array(blocks: Sequence[Sequence], *, dtype=None) -> LazyArray:
    """scipy's ``block_array``: a 2-d grid of matrices, ``None`` for zero blocks."""
    if not isinstance(blocks, (list, tuple)) or not builtins.all(
            isinstance(r, (list, tuple)) for r in blocks):
        raise IllFormedProgram("block_array: blocks must be a 2-D list of arrays or None")
    grid, bindings = [], []
    for row in blocks:
        nodes = []
        for b in row:
            if b is None:
                nodes.append(None)
            else:
                node, bind = lift(b)
                nodes.append(node)
                bindings.append(bind)
        grid.append(nodes)
    return _lazy(derived_shape.block_array(grid, dtype), *bindings)


def reshape(x, /, shape, *, order: str = "C", copy: bool | None = None) -> LazyArray:
    """Reshape (``-1`` allowed once) in row-major (``order="C"``) or column-major
    (``order="F"``) order, built as collapse/split steps."""
    if copy is False:
        raise IllFormedProgram("reshape: copy=False cannot be honoured by a lazy program")
    return _unary(derived_shape.reshape_order, x, shape, order)


def permute_dims(x, /, axes: Sequence[int]) -> LazyArray:
    return _unary(derived.permute_dims, x, axes)


def moveaxis(x, source, destination, /) -> LazyArray:
    """Move axes to new positions; the others keep their order (``np.moveaxis``)."""
    return _unary(derived.moveaxis, x, source, destination)


def expand_dims(x, /, *, axis: int = 0) -> LazyArray:
    return _unary(derived.expand_dims, x, axis)


def squeeze(x, /, axis=None) -> LazyArray:
    """Drop size-1 axes (all known size-1 axes when ``axis`` is None)."""
    return _unary(derived.squeeze, x, axis)


def broadcast_to(x, /, shape) -> LazyArray:
    return _unary(derived.broadcast_to, x, shape)


def pad(x, pad_width, mode: str = "constant", *, constant_values=0) -> LazyArray:
    """``np.pad`` in constant mode: ``pad_width`` is an int, a ``(before, after)`` pair, or
    one pair per axis."""
    return _unary(derived.pad, x, pad_width, mode, constant_values)


# --- reductions and contractions ----------------------------------------------------------------

def sum(x, /, *, axis=None, dtype=None, keepdims: bool = False, out=None):  # noqa: A001
    return reduce_monoid("sum", x, axis, keepdims, dtype, out)


def prod(x, /, *, axis=None, dtype=None, keepdims: bool = False, out=None):
    return reduce_monoid("prod", x, axis, keepdims, dtype, out)


def _extreme(which: str, x, axis, keepdims, out, explicit):
    if not explicit:
        return reduce_monoid(which, x, axis, keepdims, None, out)
    node, bindings = lift(x)
    return write_out(LazyArray(reductions.explicit_extreme(which, node, axis, keepdims),
                               bindings), out)


def max(x, /, *, axis=None, keepdims: bool = False, out=None,  # noqa: A001
        explicit: bool = False):
    """The maximum; ``explicit=True`` (scipy's): over the nonzero elements, 0 if none."""
    return _extreme("max", x, axis, keepdims, out, explicit)


def min(x, /, *, axis=None, keepdims: bool = False, out=None,  # noqa: A001
        explicit: bool = False):
    """The minimum; ``explicit=True`` (scipy's): over the nonzero elements, 0 if none."""
    return _extreme("min", x, axis, keepdims, out, explicit)


def any(x, /, *, axis=None, keepdims: bool = False, out=None):  # noqa: A001
    return reduce_monoid("any", x, axis, keepdims, None, out)


def all(x, /, *, axis=None, keepdims: bool = False, out=None):  # noqa: A001
    return reduce_monoid("all", x, axis, keepdims, None, out)


def matmul(x1, x2, /) -> LazyArray:
    """NumPy's ``matmul`` (``spec.derived.matmul``)."""
    (a, b), bindings = _lifted((x1, x2))
    return _lazy(derived.matmul(a, b), *bindings)


def tensordot(x1, x2, /, *, axes=2) -> LazyArray:
    """Sum products over ``axes``: an int N (last N of x1 with first N of x2) or a pair of
    axis sequences, as ``np.tensordot``."""
    (a, b), bindings = _lifted((x1, x2))
    return _lazy(derived.tensordot(a, b, axes), *bindings)


# --- shape functions (spec.derived_shape) -------------------------------------------------------

def flip(x, /, *, axis=None) -> LazyArray:
    return _unary(derived_shape.flip, x, axis)


def roll(x, /, shift, *, axis=None) -> LazyArray:
    return _unary(derived_shape.roll, x, shift, axis)


def swapaxes(x, axis1: int, axis2: int, /) -> LazyArray:
    return _unary(derived_shape.swapaxes, x, axis1, axis2)


def matrix_transpose(x, /) -> LazyArray:
    return _unary(derived_shape.matrix_transpose, x)


def transpose(x, /, axes=None) -> LazyArray:
    """``np.transpose``: the axes reversed, or permuted by ``axes``."""
    node, _ = lift(x)
    return permute_dims(x, tuple(reversed(range(node.ndim))) if axes is None else axes)


def tile(x, /, reps) -> LazyArray:
    return _unary(derived_shape.tile, x, reps)


def repeat(x, /, repeats, *, axis=None) -> LazyArray:
    return _unary(derived_shape.repeat, x, repeats, axis)


def diagonal(x, /, *, offset: int = 0, axis1: int = 0, axis2: int = 1) -> LazyArray:
    """``np.diagonal`` (the array API's ``linalg.diagonal`` is ``axis1=-2, axis2=-1``)."""
    return _unary(derived_shape.diagonal, x, offset, axis1, axis2)


def tril(x, /, *, k: int = 0) -> LazyArray:
    return _unary(derived_shape.tril, x, k)


def triu(x, /, *, k: int = 0) -> LazyArray:
    return _unary(derived_shape.triu, x, k)


def diff(x, /, *, axis: int = -1, n: int = 1, prepend=None, append=None) -> LazyArray:
    nodes, bindings = _lifted([x] + [v for v in (prepend, append) if v is not None])
    it = iter(nodes[1:])
    pre = next(it) if prepend is not None else None
    app = next(it) if append is not None else None
    return _lazy(derived_shape.diff(nodes[0], n, axis, pre, app), *bindings)


def unstack(x, /, *, axis: int = 0) -> tuple[LazyArray, ...]:
    node, bindings = lift(x)
    return tuple(_lazy(n, bindings) for n in derived_shape.unstack(node, axis))


# --- contractions (spec.einsum) ---------------------------------------------------------------

def outer(x1, x2, /) -> LazyArray:
    (a, b), bindings = _lifted((x1, x2))
    return _lazy(einsum_spec.outer(a, b), *bindings)


def dot(x1, x2, /) -> LazyArray:
    """``np.dot`` with NumPy's n-d semantics."""
    (a, b), bindings = _lifted((x1, x2))
    return _lazy(einsum_spec.dot(a, b), *bindings)


def vecdot(x1, x2, /, *, axis: int = -1) -> LazyArray:
    (a, b), bindings = _lifted((x1, x2))
    return _lazy(einsum_spec.vecdot(a, b, axis), *bindings)


def einsum(subscripts: str, /, *operands) -> LazyArray:
    """``np.einsum``, lowered to broadcasts, multiplies and sums (``spec.einsum``)."""
    nodes, bindings = _lifted(operands)
    return _lazy(einsum_spec.einsum(subscripts, *nodes), *bindings)


# --- integer-array indexing (spec.fancy, spec.ops_gather) ------------------------------------

def take(x, indices, /, *, axis=None) -> LazyArray:
    """``np.take``: ``x[(:,) * axis + (indices,)]``; ``axis=None`` takes from ``x``
    flattened. Indices may be negative; out of range is an ``IndexError``."""
    from sparsefold.index_keys import concrete_index
    from sparsefold.lazy import asarray
    arr = asarray(x)
    if axis is None:
        arr, axis = reshape(arr, (-1,)), 0
    from sparsefold.spec.ir import normalize_axis
    axis = normalize_axis(axis, arr.ndim, what="take axis")
    data = concrete_index(indices)
    if data is not None and data.dtype == np.bool_:  # NumPy's take reads True as 1
        indices = data.astype(np.int64)
    return arr[(slice(None),) * axis + (indices,)]


def compress(condition, x, /, axis=None) -> LazyArray:
    """``np.compress``: the elements (slices along ``axis``) where the 1-d ``condition``
    is true; ``axis=None`` compresses ``x`` flattened. A condition shorter than the axis
    keeps nothing past its end, as NumPy's does; a longer one selects past it (an
    ``IndexError``) only where it is true."""
    from sparsefold.index_keys import concrete_index
    data = concrete_index(condition)
    if data is None:
        raise IllFormedProgram("compress: the condition must be data (a NumPy array, a list, "
                               "or a lazy array bound to one)")
    keep = np.nonzero(np.asarray(data).astype(bool).ravel())[0]
    return take(x, keep, axis=axis)


# --- data-dependent results: computed at once ------------------------------------------------

def nonzero(x, /) -> tuple[np.ndarray, ...]:
    """The coordinates of the nonzero elements, one int64 array per axis in row-major
    order (``np.nonzero``). Their number depends on the data, so the program is computed
    now (one kernel, COO result) and the coordinates are NumPy arrays."""
    node, bindings = lift(x)
    if node.ndim == 0:
        raise IllFormedProgram("nonzero of a 0-d array is not allowed; use "
                               "atleast_1d(x).nonzero()")
    y = _lazy(node, bindings)
    if not bindings:
        raise IllFormedProgram("nonzero needs data: bind the program's inputs first")
    res = y.compute(out="coo")
    if isinstance(res, np.ndarray):
        return tuple(c.astype(np.int64) for c in np.nonzero(res))
    coords = np.asarray(res.coords)
    data = np.asarray(res.data)
    keep = data != 0
    return tuple(np.asarray(c)[keep].astype(np.int64) for c in coords)


def argwhere(x, /) -> np.ndarray:
    """``np.argwhere``: the nonzero coordinates as rows (computed now, see ``nonzero``)."""
    node, bindings = lift(x)
    if node.ndim == 0:  # NumPy: one row of no coordinates when the scalar is nonzero
        return np.argwhere(_lazy(node, bindings).compute(out="dense")).astype(np.int64)
    return np.stack(nonzero(x), axis=-1)

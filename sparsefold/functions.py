"""Array-API-named functions that build programs. Each one checks its arguments and
returns a :class:`LazyArray`; nothing is computed here.

Shape operators map to spec entries directly (``concat``, ``permute_dims``, ...) or as
compositions stated here once: ``stack`` = expand_dims + concat, ``reshape`` = a chain of
collapse/split (``spec.reshape_steps``), ``matmul``/``tensordot`` = sum of a broadcast
multiply, ``hstack``/``vstack`` = NumPy's rules over concat.
"""

from __future__ import annotations

import builtins
from collections.abc import Sequence

import numpy as np

from sparsefold.lazy import LazyArray, lift, merge_bindings
from sparsefold.spec import sizes as sz
from sparsefold.spec.compute import Map, Reduce
from sparsefold.spec.errors import IllFormedProgram
from sparsefold.spec.functions import get_function
from sparsefold.spec.ir import Node, normalize_axis, require_equal
from sparsefold.spec.ops_axes import BroadcastTo, ExpandDims, PermuteDims, Squeeze
from sparsefold.spec.ops_concat import Concat
from sparsefold.spec.ops_index import Pad
from sparsefold.spec.ops_reshape import Collapse, Split, reshape_steps

__all__ = [
    "concat", "stack", "hstack", "vstack", "reshape", "permute_dims", "moveaxis",
    "expand_dims", "squeeze", "broadcast_to", "pad", "sum", "prod", "max", "min", "any", "all",
    "matmul", "tensordot", "add", "subtract", "multiply", "divide", "pow", "maximum",
    "minimum", "where", "abs", "negative", "less", "less_equal", "greater", "greater_equal",
    "equal", "not_equal", "logical_and", "logical_or", "apply", "apply_operator",
]


def _wrap(node: Node, *bindings) -> LazyArray:
    return LazyArray(node, merge_bindings(*bindings))


def _one(x) -> tuple[Node, dict]:
    node, b = lift(x)
    return node, b


# --- elementwise ------------------------------------------------------------------------------

def apply(name: str, *args) -> LazyArray:
    """Apply the elementwise function registered as ``name`` (built-in or user-registered)."""
    fn = get_function(name)
    lifted = [_one(a) for a in args]
    return _wrap(Map(fn, tuple(n for n, _ in lifted)), *(b for _, b in lifted))


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
def where(condition, x1, x2, /): return apply("where", condition, x1, x2)
def abs(x, /): return apply("abs", x)  # noqa: A001
def negative(x, /): return apply("negative", x)


def _bool_op(name: str, x1, x2) -> LazyArray:
    """``&`` and ``|``: defined for bool operands only (NumPy's are bitwise on integers)."""
    for x in (x1, x2):
        dt = lift(x)[0].dtype
        if dt != np.dtype(bool):
            raise IllFormedProgram(f"'&' and '|' need bool operands, found {dt}; use "
                                   f"sf.logical_and / sf.logical_or for truth values")
    return apply(name, x1, x2)


# --- shape operators --------------------------------------------------------------------------

def apply_operator(op: type, /, *operands, **params) -> LazyArray:
    """Apply a shape operator class ``op`` — a ``ShapeOp`` subclass, built in or defined by
    the user (docs/verification.md, "Defining your own operator") — to ``operands`` (arrays;
    a list of arrays where the operator's field holds a tuple of operands) with its other
    fields as keywords. A keyword whose field is annotated ``Expr`` (a size) may be an int
    or a symbol name. The result is interpreted, compiled by ``sf.jit`` and proved like a
    built-in operator's: ``sf.apply_operator(Flip, x, axis=0)``."""
    from sparsefold.spec.ir import ShapeOp
    if not (isinstance(op, type) and issubclass(op, ShapeOp)):
        raise IllFormedProgram(f"apply_operator: expected a ShapeOp subclass, found {op!r}")
    nodes, bindings = [], []
    for x in operands:
        if isinstance(x, (list, tuple)):
            lifted = [_one(a) for a in x]
            nodes.append(tuple(n for n, _ in lifted))
            bindings += [b for _, b in lifted]
        else:
            node, b = _one(x)
            nodes.append(node)
            bindings.append(b)
    sizes = _size_fields(op)
    params = {k: sz.as_expr(v) if k in sizes and isinstance(v, (int, str)) else v
              for k, v in params.items()}
    return _wrap(op(*nodes, **params), *bindings)


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
    lifted = [_one(a) for a in arrays]
    nodes = tuple(n for n, _ in lifted)
    if axis is None:
        nodes = tuple(reshape(LazyArray(n), (-1,)).node for n in nodes)
        axis = 0
    return _wrap(Concat(nodes, axis), *(b for _, b in lifted))


def stack(arrays: Sequence, /, *, axis: int = 0) -> LazyArray:
    """Join arrays along a new axis: expand_dims each one, then concat."""
    if not isinstance(arrays, (list, tuple)) or not arrays:
        raise IllFormedProgram("stack: expected a non-empty list or tuple of arrays")
    lifted = [_one(a) for a in arrays]
    nd = lifted[0][0].ndim
    for n, _ in lifted:
        if n.ndim != nd:
            raise IllFormedProgram("stack: all input arrays must have the same shape")
    axis = normalize_axis(axis, nd + 1, what="stack axis")
    nodes = tuple(ExpandDims(n, axis) for n, _ in lifted)
    return _wrap(Concat(nodes, axis), *(b for _, b in lifted))


def hstack(arrays: Sequence) -> LazyArray:
    """NumPy's ``hstack``: 0-d arrays become 1-d (``atleast_1d``), then concat along axis 1,
    or axis 0 when the first array is 1-d."""
    arrays = [a if asarray_node(a).ndim else reshape(a, (1,)) for a in arrays]
    axis = 0 if arrays and asarray_node(arrays[0]).ndim == 1 else 1
    return concat(arrays, axis=axis)


def vstack(arrays: Sequence) -> LazyArray:
    """NumPy's ``vstack``: 1-d arrays become rows, then concat along axis 0."""
    rows = [a if lift(a)[0].ndim >= 2 else reshape(a, (1, -1)) for a in arrays]
    return concat(rows, axis=0)


def asarray_node(a) -> Node:
    return lift(a)[0]


def reshape(x, /, shape, *, copy: bool | None = None) -> LazyArray:
    """Row-major reshape (``-1`` allowed once), built as collapse/split steps."""
    if copy is False:
        raise IllFormedProgram("reshape: copy=False cannot be honoured by a lazy program")
    node, b = _one(x)
    if isinstance(shape, (int, np.integer, str, sz.Expr)):
        shape = (shape,)
    target, steps = reshape_steps(node.shape, tuple(shape))
    for step in steps:
        kind = step[0]
        if kind == "collapse":
            node = Collapse(node, step[1], step[2])
        elif kind == "split":
            node = Split(node, step[1], tuple(step[2]))
        elif kind == "expand":
            for _ in range(step[2]):
                node = ExpandDims(node, step[1])
        else:
            node = Squeeze(node, (step[1],))
    if tuple(node.shape) != tuple(target) and not builtins.all(  # `all` is sf.all here
            sz.definitely_equal(a, c) for a, c in zip(node.shape, target)):
        raise IllFormedProgram(f"reshape: internal plan gave {node.shape}, wanted {target}")
    return _wrap(node, b)


def permute_dims(x, /, axes: Sequence[int]) -> LazyArray:
    node, b = _one(x)
    axes = tuple(normalize_axis(a, node.ndim, what="permute_dims axis") for a in axes)
    return _wrap(PermuteDims(node, axes), b)


def moveaxis(x, source, destination, /) -> LazyArray:
    """Move axes to new positions; the others keep their order (``np.moveaxis``)."""
    node, b = _one(x)
    src = (source,) if isinstance(source, int) else tuple(source)
    dst = (destination,) if isinstance(destination, int) else tuple(destination)
    if len(src) != len(dst):
        raise IllFormedProgram("moveaxis: source and destination must have the same length")
    src = tuple(normalize_axis(a, node.ndim, what="moveaxis source") for a in src)
    dst = tuple(normalize_axis(a, node.ndim, what="moveaxis destination") for a in dst)
    if len(set(src)) != len(src) or len(set(dst)) != len(dst):
        raise IllFormedProgram("moveaxis: repeated axis")
    order = [a for a in range(node.ndim) if a not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return _wrap(PermuteDims(node, tuple(order)), b)


def expand_dims(x, /, *, axis: int = 0) -> LazyArray:
    node, b = _one(x)
    return _wrap(ExpandDims(node, axis), b)


def squeeze(x, /, axis=None) -> LazyArray:
    """Drop size-1 axes (all known size-1 axes when ``axis`` is None)."""
    node, b = _one(x)
    if axis is None:
        axes = tuple(d for d, n in enumerate(node.shape) if n == sz.Const(1))
    else:
        axes = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
    return _wrap(Squeeze(node, axes), b) if axes else _wrap(node, b)


def broadcast_to(x, /, shape) -> LazyArray:
    node, b = _one(x)
    if isinstance(shape, (int, np.integer, str, sz.Expr)):
        shape = (shape,)
    return _wrap(BroadcastTo(node, tuple(sz.as_expr(n) for n in shape)), b)


def pad(x, pad_width, mode: str = "constant", *, constant_values=0) -> LazyArray:
    """``np.pad`` in constant mode: ``pad_width`` is an int, a ``(before, after)`` pair, or
    one pair per axis."""
    if mode != "constant":
        raise IllFormedProgram(f"pad: only mode='constant' is supported, found {mode!r}")
    node, b = _one(x)
    widths = _pad_widths(pad_width, node.ndim)
    if not isinstance(constant_values, (bool, int, float, complex, np.generic)):
        raise IllFormedProgram("pad: constant_values must be a single scalar")
    return _wrap(Pad(node, widths, constant_values), b)


def _pad_widths(pw, ndim: int):
    arr = np.asarray(pw, dtype=object)
    if arr.ndim == 0:
        pairs = [(pw, pw)] * ndim
    elif arr.shape == (1,):
        pairs = [(arr[0], arr[0])] * ndim
    elif arr.shape == (2,):
        pairs = [(arr[0], arr[1])] * ndim
    elif arr.shape == (1, 2):
        pairs = [(arr[0][0], arr[0][1])] * ndim
    elif arr.shape in ((1, 1), (ndim, 1)):  # NumPy broadcasts pad_width to (ndim, 2)
        pairs = [(r[0], r[0]) for r in np.broadcast_to(arr, (ndim, 1))]
    elif arr.ndim == 2 and arr.shape == (ndim, 2):
        pairs = [(r[0], r[1]) for r in arr]
    else:
        raise IllFormedProgram(f"pad: pad_width must be an int, a pair, or {ndim} pairs; "
                               f"found {pw!r}")
    for p in pairs:
        for w in p:
            if isinstance(w, (bool, np.bool_)) or not isinstance(w, (int, np.integer, str)):
                raise IllFormedProgram(f"pad: widths must be integers, found {w!r}")
    return tuple((sz.as_expr(a), sz.as_expr(c)) for a, c in pairs)


# --- reductions and contractions ----------------------------------------------------------------

def _reduce(monoid: str, x, axis, keepdims: bool, dtype=None) -> LazyArray:
    node, b = _one(x)
    if axis is None:
        axes = tuple(range(node.ndim))
    elif isinstance(axis, (int, np.integer)):
        axes = (int(axis),)
    elif isinstance(axis, (tuple, list)):
        axes = tuple(axis)
    else:
        raise IllFormedProgram(f"{monoid}: axis must be None, an int or a tuple of ints, "
                               f"found {axis!r}")
    out: Node = Reduce(node, axes, monoid, dtype)
    if keepdims:
        for a in out.axes if isinstance(out, Reduce) else ():
            out = ExpandDims(out, a)
    return _wrap(out, b)


def sum(x, /, *, axis=None, dtype=None, keepdims: bool = False):  # noqa: A001
    return _reduce("sum", x, axis, keepdims, dtype)


def prod(x, /, *, axis=None, dtype=None, keepdims: bool = False):
    return _reduce("prod", x, axis, keepdims, dtype)


def max(x, /, *, axis=None, keepdims: bool = False):  # noqa: A001
    return _reduce("max", x, axis, keepdims)


def min(x, /, *, axis=None, keepdims: bool = False):  # noqa: A001
    return _reduce("min", x, axis, keepdims)


def any(x, /, *, axis=None, keepdims: bool = False):  # noqa: A001
    return _reduce("any", x, axis, keepdims)


def all(x, /, *, axis=None, keepdims: bool = False):  # noqa: A001
    return _reduce("all", x, axis, keepdims)


def matmul(x1, x2, /) -> LazyArray:
    """NumPy's ``matmul``: 1-d operands are promoted and the added axis removed; leading
    (batch) axes broadcast. Built as ``sum(x1[..., :, :, None] * x2[..., None, :, :], -2)``."""
    a, ba = _one(x1)
    b, bb = _one(x2)
    if a.ndim == 0 or b.ndim == 0:
        raise IllFormedProgram("matmul: operands must be at least 1-d, found a 0-d array")
    a2 = ExpandDims(a, 0) if a.ndim == 1 else a
    b2 = ExpandDims(b, 1) if b.ndim == 1 else b
    require_equal(a2.shape[-1], b2.shape[-2],
                  f"matmul: contracted axis of x1 {a.shape} and x2 {b.shape}")
    prod_ = Map(get_function("multiply"), (ExpandDims(a2, a2.ndim), ExpandDims(b2, b2.ndim - 2)))
    # NumPy's matmul accumulates in the product's dtype (int32 stays int32, bool is "or")
    out: Node = Reduce(prod_, (prod_.ndim - 2,), "sum", prod_.dtype)
    if b.ndim == 1:
        out = Squeeze(out, (out.ndim - 1,))
    if a.ndim == 1:
        out = Squeeze(out, (out.ndim - 1 if b.ndim == 1 else out.ndim - 2,))
    return _wrap(out, ba, bb)


def tensordot(x1, x2, /, *, axes=2) -> LazyArray:
    """Sum products over ``axes``: an int N (last N of x1 with first N of x2) or a pair of
    axis sequences, as ``np.tensordot``."""
    a, ba = _one(x1)
    b, bb = _one(x2)
    if isinstance(axes, (int, np.integer)):
        n = int(axes)
        if n < 0 or n > a.ndim or n > b.ndim:
            raise IllFormedProgram(f"tensordot: axes={n} does not fit shapes {a.shape}, "
                                   f"{b.shape}")
        ax_a, ax_b = tuple(range(a.ndim - n, a.ndim)), tuple(range(n))
    else:
        try:
            ax_a, ax_b = ([x] if isinstance(x, int) else list(x) for x in axes)
        except (TypeError, ValueError):
            raise IllFormedProgram(f"tensordot: axes must be an int or a pair, found "
                                   f"{axes!r}") from None
        ax_a = tuple(normalize_axis(d, a.ndim, what="tensordot axis") for d in ax_a)
        ax_b = tuple(normalize_axis(d, b.ndim, what="tensordot axis") for d in ax_b)
    if len(ax_a) != len(ax_b) or len(set(ax_a)) != len(ax_a) or len(set(ax_b)) != len(ax_b):
        raise IllFormedProgram(f"tensordot: axes must pair up distinct axes, found {axes!r}")
    for da, db in zip(ax_a, ax_b):
        require_equal(a.shape[da], b.shape[db], f"tensordot: axis {da} of x1 and {db} of x2")
    free_a = [d for d in range(a.ndim) if d not in ax_a]
    free_b = [d for d in range(b.ndim) if d not in ax_b]
    pa = PermuteDims(a, tuple(free_a) + ax_a)            # (free_a..., contracted...)
    pb = PermuteDims(b, ax_b + tuple(free_b))            # (contracted..., free_b...)
    for _ in free_b:
        pa = ExpandDims(pa, pa.ndim)                     # (free_a, c, 1...)
    for _ in free_a:
        pb = ExpandDims(pb, 0)                           # (1..., c, free_b)
    prod_ = Map(get_function("multiply"), (pa, pb))
    contracted = tuple(range(len(free_a), len(free_a) + len(ax_a)))
    # like np.tensordot (np.dot), accumulate in the product's dtype: int32 stays int32
    return _wrap(Reduce(prod_, contracted, "sum", prod_.dtype), ba, bb)


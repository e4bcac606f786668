"""Derived operators: the array-API functions the language offers on top of its entries,
each defined once as the program it builds (DESIGN §1, §5).

They are not entries — they add no index map of their own — but compositions of entries
and compute nodes, with NumPy's argument conventions: ``stack`` is expand_dims + concat,
``reshape`` a chain of collapse/split (``reshape_steps``), ``matmul`` and ``tensordot`` the
sum of a broadcast multiply, ``hstack``/``vstack`` NumPy's rules over concat, ``moveaxis`` a
permutation. The front end (``sparsefold``) calls these on the nodes of its arrays, the
rule catalog writes its patterns with them, and the language reference prints what they
build — so all three mean the same programs.

Every function takes and returns :class:`~sparsefold.spec.ir.Node`\\ s; where an operand
may be a scalar, a Python scalar becomes a weak :class:`Literal` (NEP 50) and a NumPy
scalar a strong one.
"""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from typing import Any

import numpy as np

from sparsefold.spec import sizes as sz
from sparsefold.spec.compute import Literal, Map, Reduce
from sparsefold.spec.errors import IllFormedArgument, IllFormedProgram
from sparsefold.spec.functions import cast_function, check_dtype, get_function
from sparsefold.spec.ir import Node, normalize_axis, require_equal
from sparsefold.spec.ops_axes import BroadcastTo, ExpandDims, PermuteDims, Squeeze
from sparsefold.spec.ops_concat import Concat
from sparsefold.spec.ops_index import Pad
from sparsefold.spec.ops_reshape import Collapse, Split, reshape_steps

__all__ = [
    "operand", "apply", "astype", "clip", "round_", "concat", "stack", "hstack", "vstack",
    "reshape", "permute_dims", "transpose", "moveaxis", "expand_dims", "squeeze",
    "broadcast_to", "pad", "reduce",
    "matmul", "tensordot",
]

_SCALARS = (bool, int, float, complex, np.generic)


def operand(x: Any) -> Node:
    """``x`` as a node: nodes as they are, scalars as literals."""
    if isinstance(x, Node):
        return x
    if isinstance(x, _SCALARS):
        return Literal(x)
    raise IllFormedProgram(f"expected an array or a scalar, found {type(x).__name__}")


# --- elementwise ------------------------------------------------------------------------------

def apply(name: str, *args: Any) -> Map:
    """The elementwise function registered as ``name`` applied to ``args`` (broadcast)."""
    return Map(get_function(name), tuple(operand(a) for a in args))


def astype(node: Node, dtype) -> Node:
    """``x.astype(dtype)``: NumPy's unsafe cast; ``x`` itself when the dtype is its own."""
    node = operand(node)
    dt = check_dtype(dtype, what="astype dtype")
    return node if node.dtype == dt else Map(cast_function(dt), (node,))


def clip(node: Node, lo=None, hi=None) -> Node:
    """``np.clip``: ``maximum`` with ``lo``, ``minimum`` with ``hi``, or both at once
    (NumPy's order: where ``lo > hi`` the result is ``hi``)."""
    if lo is None and hi is None:
        raise IllFormedProgram("clip: one of min or max must be given")
    if hi is None:
        return apply("maximum", node, lo)
    if lo is None:
        return apply("minimum", node, hi)
    return apply("clip", node, lo, hi)


def round_(node: Node, decimals: int = 0) -> Node:
    """``np.round``: half to even; with ``decimals`` as NumPy computes it —
    ``rint(x * 10**d) / 10**d`` (``d < 0``: ``rint(x / 10**-d) * 10**-d``) in x's dtype."""
    node = operand(node)
    if isinstance(decimals, (bool, np.bool_)) or not isinstance(decimals, (int, np.integer)):
        raise IllFormedProgram(f"round: decimals must be an integer, found {decimals!r}")
    d = int(decimals)
    if d == 0 or (node.dtype.kind in "biu" and d > 0):
        return apply("round", node)
    if node.dtype.kind not in "fc":
        raise IllFormedProgram(f"round: decimals={d} of {node.dtype} is not supported")
    scale = Literal(node.dtype.type(10.0 ** builtins.abs(d)))
    first, then = ("multiply", "divide") if d > 0 else ("divide", "multiply")
    return apply(then, apply("round", apply(first, node, scale)), scale)


# --- joining ----------------------------------------------------------------------------------

def concat(nodes: Sequence[Node], axis: int | None = 0) -> Node:
    """Join along an existing axis (``axis=None`` flattens every array first)."""
    if not isinstance(nodes, (list, tuple)):
        raise IllFormedProgram("concat: expected a list or tuple of arrays")
    nodes = tuple(operand(n) for n in nodes)
    if axis is None:
        nodes = tuple(reshape(n, (-1,)) for n in nodes)
        axis = 0
    return Concat(nodes, axis)


def stack(nodes: Sequence[Node], axis: int = 0) -> Node:
    """Join along a new axis: expand_dims each array, then concat."""
    if not isinstance(nodes, (list, tuple)) or not nodes:
        raise IllFormedProgram("stack: expected a non-empty list or tuple of arrays")
    nodes = [operand(n) for n in nodes]
    nd = nodes[0].ndim
    for n in nodes:
        if n.ndim != nd:
            raise IllFormedProgram("stack: all input arrays must have the same shape")
    axis = normalize_axis(axis, nd + 1, what="stack axis")
    return Concat(tuple(ExpandDims(n, axis) for n in nodes), axis)


def hstack(nodes: Sequence[Node]) -> Node:
    """NumPy's ``hstack``: 0-d arrays become 1-d (``atleast_1d``), then concat along axis
    1, or axis 0 when the first array is 1-d."""
    nodes = [operand(n) for n in nodes]
    nodes = [n if n.ndim else reshape(n, (1,)) for n in nodes]
    axis = 0 if nodes and nodes[0].ndim == 1 else 1
    return concat(nodes, axis)


def vstack(nodes: Sequence[Node]) -> Node:
    """NumPy's ``vstack``: 1-d (and 0-d) arrays become rows, then concat along axis 0."""
    nodes = [operand(n) for n in nodes]
    return concat([n if n.ndim >= 2 else reshape(n, (1, -1)) for n in nodes], 0)


# --- reshaping and moving axes ----------------------------------------------------------------

def reshape(node: Node, shape) -> Node:
    """Row-major reshape (``-1`` allowed once): the collapse/split steps of
    :func:`~sparsefold.spec.ops_reshape.reshape_steps`, with expand_dims/squeeze for size-1
    axes."""
    node = operand(node)
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
    if tuple(node.shape) != tuple(target) and not builtins.all(
            sz.definitely_equal(a, c) for a, c in zip(node.shape, target)):
        raise IllFormedProgram(f"reshape: internal plan gave {node.shape}, wanted {target}")
    return node


def permute_dims(node: Node, axes: Sequence[int]) -> Node:
    """Output axis ``d`` is axis ``axes[d]`` (negative axes count from the end)."""
    node = operand(node)
    if not isinstance(axes, (tuple, list)) and not (isinstance(axes, np.ndarray) and
                                                   axes.ndim == 1):
        raise IllFormedArgument(f"permute_dims: axes must be a tuple or list of integers "
                                f"(an order), found {type(axes).__name__} {axes!r}")
    axes = tuple(normalize_axis(a, node.ndim, what="permute_dims axis") for a in axes)
    return PermuteDims(node, axes)


def transpose(node: Node) -> Node:
    """``x.T``: the axes reversed."""
    node = operand(node)
    return permute_dims(node, tuple(reversed(range(node.ndim))))


def moveaxis(node: Node, source, destination) -> Node:
    """Move axes to new positions; the others keep their order (``np.moveaxis``)."""
    node = operand(node)
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
    return PermuteDims(node, tuple(order))


def expand_dims(node: Node, axis: int = 0) -> Node:
    return ExpandDims(operand(node), axis)


def squeeze(node: Node, axis=None) -> Node:
    """Drop size-1 axes (every known size-1 axis when ``axis`` is None); ``node`` itself
    when there is none to drop."""
    node = operand(node)
    if axis is None:
        axes = tuple(d for d, n in enumerate(node.shape) if n == sz.Const(1))
    else:
        axes = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
    return Squeeze(node, axes) if axes else node


def broadcast_to(node: Node, shape) -> Node:
    node = operand(node)
    if isinstance(shape, (int, np.integer, str, sz.Expr)):
        shape = (shape,)
    return BroadcastTo(node, tuple(sz.as_expr(n) for n in shape))


def pad(node: Node, pad_width, mode: str = "constant", constant_values=0) -> Node:
    """``np.pad`` in constant mode: ``pad_width`` is an int, a ``(before, after)`` pair, or
    one pair per axis (NumPy's broadcasting of ``pad_width``)."""
    if mode != "constant":
        raise IllFormedProgram(f"pad: only mode='constant' is supported, found {mode!r}")
    node = operand(node)
    widths = _pad_widths(pad_width, node.ndim)
    if not isinstance(constant_values, _SCALARS):
        raise IllFormedProgram("pad: constant_values must be a single scalar")
    return Pad(node, widths, constant_values)


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


# --- reductions and contractions --------------------------------------------------------------

def reduce(monoid: str, node: Node, axis=None, keepdims: bool = False, dtype=None) -> Node:
    """``sum``, ``prod``, ``max``, ``min``, ``any``, ``all`` over ``axis`` (None: every
    axis; an int; a tuple), with NumPy's ``keepdims`` and ``dtype``."""
    node = operand(node)
    if axis is None:
        axes = tuple(range(node.ndim))
    elif isinstance(axis, (int, np.integer)):
        axes = (int(axis),)
    elif isinstance(axis, (tuple, list)):
        axes = tuple(axis)
    else:
        raise IllFormedArgument(f"{monoid}: axis must be None, an int or a tuple of ints, "
                                f"found {axis!r}")
    total = Reduce(node, axes, monoid, dtype)
    out: Node = total
    if keepdims:
        for a in total.axes:
            out = ExpandDims(out, a)
    return out


def matmul(a: Node, b: Node) -> Node:
    """NumPy's ``matmul``: ``sum(a[..., :, :, None] * b[..., None, :, :], axis=-2)``
    accumulated in the product's dtype (int32 stays int32, bool is *or*), leading (batch)
    axes broadcast by multiply. A 1-d ``a`` gets a leading size-1 axis and a 1-d ``b`` a
    trailing one; those axes are squeezed from the result."""
    a, b = operand(a), operand(b)
    if a.ndim == 0 or b.ndim == 0:
        raise IllFormedProgram("matmul: operands must be at least 1-d, found a 0-d array")
    a2 = ExpandDims(a, 0) if a.ndim == 1 else a
    b2 = ExpandDims(b, 1) if b.ndim == 1 else b
    require_equal(a2.shape[-1], b2.shape[-2],
                  f"matmul: contracted axis of x1 {a.shape} and x2 {b.shape}")
    product = Map(get_function("multiply"),
                  (ExpandDims(a2, a2.ndim), ExpandDims(b2, b2.ndim - 2)))
    out: Node = Reduce(product, (product.ndim - 2,), "sum", product.dtype)
    if b.ndim == 1:
        out = Squeeze(out, (out.ndim - 1,))
    if a.ndim == 1:
        out = Squeeze(out, (out.ndim - 1 if b.ndim == 1 else out.ndim - 2,))
    return out


def tensordot(a: Node, b: Node, axes=2) -> Node:
    """``np.tensordot``: the free axes of ``a`` first and its contracted axes last, the
    contracted axes of ``b`` first and its free axes last (``permute_dims``), both padded
    with size-1 axes so they broadcast, multiplied, and summed over the contracted axes in
    the product's dtype. ``axes=n`` pairs the last ``n`` axes of ``a`` with the first ``n``
    of ``b``; otherwise it is a pair of axis sequences."""
    a, b = operand(a), operand(b)
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
    free_a = tuple(d for d in range(a.ndim) if d not in ax_a)
    free_b = tuple(d for d in range(b.ndim) if d not in ax_b)
    pa: Node = PermuteDims(a, free_a + ax_a)            # (free_a..., contracted...)
    pb: Node = PermuteDims(b, ax_b + free_b)            # (contracted..., free_b...)
    for _ in free_b:
        pa = ExpandDims(pa, pa.ndim)                     # (free_a, c, 1...)
    for _ in free_a:
        pb = ExpandDims(pb, 0)                           # (1..., c, free_b)
    product = Map(get_function("multiply"), (pa, pb))
    contracted = tuple(range(len(free_a), len(free_a) + len(ax_a)))
    return Reduce(product, contracted, "sum", product.dtype)

"""Array-API-named functions that build programs. Each one lifts its arguments to nodes
(arrays become inputs, scalars literals), builds the program its ``spec.derived``
definition says, and returns a :class:`LazyArray`; nothing is computed here.

The meaning of every function — ``stack`` is expand_dims + concat, ``reshape`` a chain of
collapse/split, ``matmul``/``tensordot`` the sum of a broadcast multiply, NumPy's rules for
``hstack``/``vstack`` — is stated once, in ``sparsefold.spec.derived``; this module only
adapts the front end's arrays to it.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from sparsefold.lazy import LazyArray, lift, merge_bindings
from sparsefold.spec import derived
from sparsefold.spec import sizes as sz
from sparsefold.spec.errors import IllFormedProgram
from sparsefold.spec.ir import Node, ShapeOp

__all__ = [
    "concat", "stack", "hstack", "vstack", "reshape", "permute_dims", "moveaxis",
    "expand_dims", "squeeze", "broadcast_to", "pad", "sum", "prod", "max", "min", "any", "all",
    "matmul", "tensordot", "add", "subtract", "multiply", "divide", "pow", "maximum",
    "minimum", "where", "abs", "negative", "less", "less_equal", "greater", "greater_equal",
    "equal", "not_equal", "logical_and", "logical_or", "apply", "apply_operator",
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


def hstack(arrays: Sequence) -> LazyArray:
    """NumPy's ``hstack``: 0-d arrays become 1-d, then concat along axis 1, or axis 0 when
    the first array is 1-d."""
    nodes, bindings = _lifted(arrays)
    return _lazy(derived.hstack(nodes), *bindings)


def vstack(arrays: Sequence) -> LazyArray:
    """NumPy's ``vstack``: 1-d arrays become rows, then concat along axis 0."""
    nodes, bindings = _lifted(arrays)
    return _lazy(derived.vstack(nodes), *bindings)


def reshape(x, /, shape, *, copy: bool | None = None) -> LazyArray:
    """Row-major reshape (``-1`` allowed once), built as collapse/split steps."""
    if copy is False:
        raise IllFormedProgram("reshape: copy=False cannot be honoured by a lazy program")
    return _unary(derived.reshape, x, shape)


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

def _reduce(monoid: str, x, axis, keepdims: bool, dtype=None) -> LazyArray:
    node, bindings = lift(x)
    return _lazy(derived.reduce(monoid, node, axis, keepdims, dtype), bindings)


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
    """NumPy's ``matmul`` (``spec.derived.matmul``)."""
    (a, b), bindings = _lifted((x1, x2))
    return _lazy(derived.matmul(a, b), *bindings)


def tensordot(x1, x2, /, *, axes=2) -> LazyArray:
    """Sum products over ``axes``: an int N (last N of x1 with first N of x2) or a pair of
    axis sequences, as ``np.tensordot``."""
    (a, b), bindings = _lifted((x1, x2))
    return _lazy(derived.tensordot(a, b, axes), *bindings)

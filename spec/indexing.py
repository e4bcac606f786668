"""NumPy basic indexing as spec nodes: what ``x[key]`` means.

A key is a tuple of ints, slices, ``None`` and at most one ``...``. Its meaning is built
as: one :class:`Slice` over all axes (identity for int-indexed axes), then one
:class:`Index` per int (last axis first, so axis numbers stay valid), then one
:class:`ExpandDims` per ``None`` at its position in the result. Strings stand for size
symbols (``A[:, :"J"]``). A key holding index arrays (nodes) is advanced indexing:
``spec.fancy`` builds it on this and on ``Gather``.
"""

from __future__ import annotations

import numpy as np

from sparsefold.spec import sizes as sz
from sparsefold.spec.errors import IllFormedArgument, IllFormedIndex
from sparsefold.spec.ir import Node
from sparsefold.spec.ops_axes import ExpandDims
from sparsefold.spec.ops_index import Index, Slice

__all__ = ["getitem", "key_source"]


def _is_int(k) -> bool:
    return isinstance(k, (int, np.integer, str, sz.Expr)) and not isinstance(k, (bool, np.bool_))


def _scalar(k):
    """A 0-d integer array used as an index is its integer (NumPy's ``x[np.array(-1)]``)."""
    if isinstance(k, np.ndarray) and k.ndim == 0 and k.dtype.kind in "iu":
        return int(k)
    return k


def _symbols(node: Node) -> set[str]:
    """The size symbols of ``node``'s program (what a string index may name)."""
    from sparsefold.spec.printer import topological
    out: set[str] = set()
    for n in topological(node):
        for e in n.shape:
            out |= sz.free_symbols(e)
    return out


def _symbol(name: str, node: Node, strict: bool) -> sz.Expr:
    """A string index: a size symbol. ``strict`` (the front end): it must be a size of the
    program already, else it could never be bound (rules index with free symbols)."""
    if strict and name not in _symbols(node):
        raise IllFormedIndex(f"a string index names a size symbol of the program; {name!r} "
                             f"is none of {sorted(_symbols(node))}")
    return sz.as_expr(name)


def _bound(b, node: Node, strict: bool):
    b = _scalar(b)
    if b is None or isinstance(b, sz.Expr):
        return b
    if isinstance(b, str):
        return _symbol(b, node, strict)
    if isinstance(b, (bool, np.bool_)) or not isinstance(b, (int, np.integer)):
        raise IllFormedArgument(f"slice bounds must be integers or size symbols, found {b!r}")
    return int(b)


def getitem(node: Node, key, *, strict: bool = False) -> Node:
    """``node[key]`` (see the module docstring); ``strict``: a string must name a size
    symbol the program already has (what the front end asks)."""
    if not isinstance(key, tuple):
        key = (key,)
    key = tuple(_scalar(k) for k in key)
    if any(isinstance(k, Node) for k in key):
        from sparsefold.spec.fancy import fancy_getitem
        return fancy_getitem(node, key, lambda n, k: getitem(n, k, strict=strict))
    for k in key:
        if not (k is None or k is Ellipsis or isinstance(k, slice) or _is_int(k)):
            raise IllFormedIndex(
                f"only integers, slices, None and ... are valid indices (advanced indexing "
                f"is not supported), found {type(k).__name__}")
        if isinstance(k, str):
            _symbol(k, node, strict)
    if sum(k is Ellipsis for k in key) > 1:
        raise IllFormedIndex("an index can only have a single ellipsis ('...')")
    used = sum(1 for k in key if k is not None and k is not Ellipsis)
    if used > node.ndim:
        raise IllFormedIndex(f"too many indices for array: array is {node.ndim}-dimensional, "
                             f"but {used} were indexed")
    if Ellipsis in key:
        e = key.index(Ellipsis)
        key = key[:e] + (slice(None),) * (node.ndim - used) + key[e + 1:]
    else:
        key = key + (slice(None),) * (node.ndim - used)

    triples, ints, news = [], [], []
    axis = out_pos = 0
    for k in key:
        if k is None:
            news.append(out_pos)
            out_pos += 1
        elif isinstance(k, slice):
            triples.append((_bound(k.start, node, strict), _bound(k.stop, node, strict),
                            _scalar(k.step)))
            axis += 1
            out_pos += 1
        else:
            triples.append((None, None, None))
            ints.append((axis, sz.as_expr(k) if not isinstance(k, np.integer) else int(k)))
            axis += 1
    if any(t != (None, None, None) and t != (None, None, 1) for t in triples):
        node = Slice(node, tuple(triples))
    for a, i in reversed(ints):
        node = Index(node, a, sz.as_expr(i))
    for pos in news:
        node = ExpandDims(node, pos)
    return node


def key_source(key: tuple) -> str:
    """A key as Python source, the inverse of how :func:`getitem` reads it
    (``(slice(1, None, 2), None)`` is ``1::2, None``)."""
    def one(k):
        if k is None:
            return "None"
        if k is Ellipsis:
            return "..."
        if isinstance(k, slice):
            text = ":".join("" if v is None else str(v) for v in (k.start, k.stop))
            return text + (f":{k.step}" if k.step is not None else "")
        return str(k)
    return ", ".join(one(k) for k in key) if key else "()"

"""NumPy basic indexing as spec nodes: what ``x[key]`` means.

A key is a tuple of ints, slices, ``None`` and at most one ``...``. Its meaning is built
as: one :class:`Slice` over all axes (identity for int-indexed axes), then one
:class:`Index` per int (last axis first, so axis numbers stay valid), then one
:class:`ExpandDims` per ``None`` at its position in the result. Strings stand for size
symbols (``A[:, :"J"]``). Advanced (array / boolean) indexing is not part of the language.
"""

from __future__ import annotations

import numpy as np

from sparsefold.spec import sizes as sz
from sparsefold.spec.errors import IllFormedProgram
from sparsefold.spec.ir import Node
from sparsefold.spec.ops_axes import ExpandDims
from sparsefold.spec.ops_index import Index, Slice

__all__ = ["getitem", "key_source"]


def _is_int(k) -> bool:
    return isinstance(k, (int, np.integer, str, sz.Expr)) and not isinstance(k, (bool, np.bool_))


def _bound(b):
    if b is None or isinstance(b, sz.Expr):
        return b
    if isinstance(b, str):
        return sz.as_expr(b)
    if isinstance(b, (bool, np.bool_)) or not isinstance(b, (int, np.integer)):
        raise IllFormedProgram(f"slice bounds must be integers or size symbols, found {b!r}")
    return int(b)


def getitem(node: Node, key) -> Node:
    """``node[key]`` (see the module docstring)."""
    if not isinstance(key, tuple):
        key = (key,)
    for k in key:
        if not (k is None or k is Ellipsis or isinstance(k, slice) or _is_int(k)):
            raise IllFormedProgram(
                f"only integers, slices, None and ... are valid indices (advanced indexing "
                f"is not supported), found {type(k).__name__}")
    if sum(k is Ellipsis for k in key) > 1:
        raise IllFormedProgram("an index can only have a single ellipsis ('...')")
    used = sum(1 for k in key if k is not None and k is not Ellipsis)
    if used > node.ndim:
        raise IllFormedProgram(f"too many indices for array: array is {node.ndim}-dimensional, "
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
            triples.append((_bound(k.start), _bound(k.stop), k.step))
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

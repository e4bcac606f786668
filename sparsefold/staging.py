"""Staged programs: computing the ordering nodes (``spec.ordering``: sort, argsort,
searchsorted, cumulative sums and products) of a compiled program.

Those nodes are not fused into kernels — where each element goes depends on the values —
so a program holding them runs in stages, bottom-up: each node's operands are computed
(one compiled kernel each, a sparse result kept sparse), the node runs over their storage,
and the rest of the program reads its result as an input. The reference interpreter needs
none of this: it evaluates the nodes directly (``interp.evaluate``), and is their oracle.

Over sparse storage (COO coordinates of the stored entries):

* ``Sort`` stays sparse: along each line the stored nonzeros are sorted; the negative ones
  take the first positions, the others (and NaN) the last, and every zero — stored or not —
  the positions between. Nothing is densified.
* ``SearchSorted`` over a sparse sorted vector counts its stored nonzeros below the value
  (``np.searchsorted`` on them) and adds the zeros when the value is above (``left``) or at
  least (``right``) zero.
* ``ArgSort``, ``Scan`` and the values of ``SearchSorted`` give dense results — every
  position holds an index or a running total — so their operand is read densely (memory of
  the result's size, which the result needs anyway).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from sparsefold.spec.compute import Input
from sparsefold.spec.ordering import ORDERING_NODES, ArgSort, Scan, SearchSorted, Sort
from sparsefold.spec.printer import topological
from sparsefold.spec.programs import rebuild
from sparsefold.storage.describe import is_pydata_sparse

__all__ = ["is_staged", "compute_staged", "run_node"]

def is_staged(program) -> bool:
    """``program`` holds an ordering node (it runs in stages when compiled)."""
    return any(isinstance(n, ORDERING_NODES) for n in topological(program))


def _compute(program, values: dict[str, Any], out: str | None) -> Any:
    """One stage: an ordinary program computed by a compiled kernel (retraced on symbolic
    sizes, ``sparsefold.materialize``); an input alone is its array."""
    if isinstance(program, Input):
        return values[program.name]
    from sparsefold.lazy import LazyArray
    from sparsefold.materialize import compiled_value
    return compiled_value(LazyArray(program, values), out)


def compute_staged(program, values: dict[str, Any], out: str | None = None) -> Any:
    """``program`` (inputs bound by ``values``) computed stage by stage; ``out`` is the
    final stage's format (None: ``LazyArray.compute``'s default)."""
    values = dict(values)
    done: dict[int, Any] = {}
    for node in topological(program):
        new = rebuild(node, lambda x: done[id(x)])
        if isinstance(new, ORDERING_NODES):
            operands = [_compute(o, _used(o, values), None) for o in new.operands()]
            result = run_node(new, operands)
            from sparsefold.lazy import asarray
            wrapped = asarray(result)  # an input with a fresh name, bound to the result
            new = wrapped.node
            values.update(wrapped.bindings)
        done[id(node)] = new
    root = done[id(program)]
    return _compute(root, _used(root, values), out)


def _used(program, values: dict[str, Any]) -> dict[str, Any]:
    names = {n.name for n in topological(program) if isinstance(n, Input)}
    return {k: v for k, v in values.items() if k in names}


# --- the nodes over computed operands ---------------------------------------------------------

def run_node(node, operands: list[Any]) -> Any:
    """``node`` (an ordering node) over its computed operands (NumPy arrays or sparse
    containers); the result is a NumPy array, or a sparse container for a sparse sort."""
    from sparsefold.interp.evaluate import (
        eval_argsort,
        eval_scan,
        eval_search_sorted,
        eval_sort,
    )
    if isinstance(node, Sort):
        (x,) = operands
        return eval_sort(node, x) if isinstance(x, np.ndarray) else _sparse_sort(node, x)
    if isinstance(node, ArgSort):
        return eval_argsort(node, _dense(operands[0]))
    if isinstance(node, Scan):
        return eval_scan(node, _dense(operands[0]))
    if isinstance(node, SearchSorted):
        x1, x2 = operands
        if isinstance(x1, np.ndarray):
            return eval_search_sorted(node, x1, _dense(x2))
        return _sparse_search(node, x1, _dense(x2))
    raise TypeError(f"not an ordering node: {type(node).__name__}")


def _dense(x) -> np.ndarray:
    if isinstance(x, np.ndarray):
        return x
    from sparsefold.storage.dense import densify
    return densify(x)


def _coo(x) -> tuple[tuple[np.ndarray, ...], np.ndarray]:
    """The coordinates (one array per axis) and values of a sparse container's stored
    entries."""
    if is_pydata_sparse(x):
        c = x.asformat("coo")
        return tuple(np.asarray(r) for r in c.coords), np.asarray(c.data)
    c = x.tocoo()
    return tuple(np.asarray(r) for r in c.coords), np.asarray(c.data)


def _below_zero(v: np.ndarray) -> np.ndarray:
    """``v < 0`` in the sort order (complex: lexicographic, the real part first)."""
    if v.dtype.kind == "c":
        return (v.real < 0) | ((v.real == 0) & (v.imag < 0))
    if v.dtype.kind == "b":
        return np.zeros(v.shape, dtype=bool)
    return v < 0


def _sparse_sort(node: Sort, x) -> Any:
    coords, data = _coo(x)
    shape = tuple(int(n) for n in x.shape)
    a, n = node.axis, shape[node.axis]
    keep = data != 0  # stored zeros join the implicit ones (NaN != 0 is kept)
    coords = tuple(c[keep] for c in coords)
    data = data[keep]
    others = [c for d, c in enumerate(coords) if d != a]
    line = (np.ravel_multi_index(others, tuple(s for d, s in enumerate(shape) if d != a))
            if others else np.zeros(data.shape, dtype=np.int64))
    order = np.lexsort((data, line)) if data.size else np.arange(0)
    line, data = line[order], data[order]
    others = [c[order] for c in others]
    # rank among the line's stored nonzeros; each line's count and negatives
    starts = np.flatnonzero(np.r_[True, line[1:] != line[:-1]]) if data.size else \
        np.arange(0)
    lengths = np.diff(np.r_[starts, data.size])
    first = np.repeat(starts, lengths)
    rank = np.arange(data.size) - first
    count = np.repeat(lengths, lengths)
    position = np.where(_below_zero(data), rank, n - count + rank)
    if node.descending:
        position = n - 1 - position
    new = others[:a] + [position.astype(np.int64)] + others[a:]
    return _sparse_like(x, new, data, shape)


def _sparse_like(x, coords, data, shape) -> Any:
    """A COO container of ``x``'s library."""
    if is_pydata_sparse(x):
        import sparse
        return sparse.COO(np.stack(coords) if coords else np.zeros((0, data.size), int),
                          data, shape=shape)
    import scipy.sparse as sp
    return sp.coo_array((data, tuple(coords)), shape=shape)


def _sparse_search(node: SearchSorted, x1, values: np.ndarray) -> np.ndarray:
    coords, data = _coo(x1)
    order = np.argsort(coords[0], kind="stable")
    stored = data[order]
    stored = stored[stored != 0]  # x1 is sorted: in coordinate order they are too
    zeros = int(x1.shape[0]) - stored.size
    below = np.searchsorted(stored, values, side=node.side)
    at_or_above_zero = (values > 0) if node.side == "left" else (values >= 0)
    if values.dtype.kind == "f":
        at_or_above_zero |= np.isnan(values)  # NaN sorts after every number
    return (below + zeros * at_or_above_zero).astype(node.dtype)

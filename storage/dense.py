"""Dense arrays from foreign storage: what the interpreter evaluates on, and what the dense
kernel reads.

A sparse input is densified from its validated, canonical level arrays
(:func:`~sparsefold.storage.levels.sparse_levels`: duplicates summed, index dtypes
converted), never by library code that trusts the arrays (``toarray``/``todense`` would read
a malformed array out of bounds). Implicit entries are 0, or a pydata array's
``fill_value`` (``storage/fills.py``). It is an explicit fallback, so it
need not be fast.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from sparsefold.spec.compute import Input
from sparsefold.spec.errors import InvalidData
from sparsefold.spec.formats import named_format
from sparsefold.storage.describe import describe, is_pydata_sparse, is_scipy_sparse
from sparsefold.storage.fills import fill_of, split_fill
from sparsefold.storage.levels import check_range, sparse_levels

__all__ = ["densify", "dense_operand"]


def densify(value: Any, name: str = "input") -> np.ndarray:
    """A dense NumPy array for a NumPy, scipy.sparse or pydata/sparse array (or a scalar),
    in the value's own dtype (the interpreter's reading of an input); ``name``: the input's
    name in messages."""
    if isinstance(value, np.ndarray):
        return value
    if is_scipy_sparse(value) or is_pydata_sparse(value):
        return dense_operand(value, np.dtype(value.dtype), name)
    if isinstance(value, (bool, int, float, complex, np.generic)) or hasattr(value, "__array__"):
        return np.asarray(value)
    raise InvalidData(f"expected a NumPy, scipy.sparse or pydata/sparse array, found "
                      f"{type(value).__name__}")


def dense_operand(value: Any, dtype: np.dtype, name: str) -> np.ndarray:
    """A dense array of ``dtype`` for the input called ``name``, with element strides (the
    dense kernel addresses it by strides in elements)."""
    if is_scipy_sparse(value) or is_pydata_sparse(value):
        arr = _densify(value, dtype, name)
    else:
        arr = np.asarray(value)
    if arr.dtype != dtype:
        raise InvalidData(f"{name}: expected dtype {dtype}, found {arr.dtype}")
    if any(s % arr.itemsize for s in arr.strides):
        arr = np.ascontiguousarray(arr)
    return arr


def _densify(value: Any, dtype: np.dtype, name: str) -> np.ndarray:
    if fill_of(value) is not None:  # a pydata fill: the stored values, else the fill
        stored, present = split_fill(value)
        return np.where(_densify(present, np.dtype(bool), name),
                        _densify(stored, dtype, name), fill_of(value)).astype(dtype)
    shape = tuple(int(n) for n in value.shape)
    fmt = named_format(describe(value).format, len(shape))
    levels = sparse_levels(value, Input(name, shape, np.dtype(dtype), fmt), name)
    out = np.zeros(shape, dtype=dtype)
    if fmt.kinds == ("full", "pos"):
        outer, inner = fmt.mode_order
        pos, crd = levels["pos1"], levels["crd1"]
        nnz = int(pos[-1])
        crd = crd[:nnz]
        check_range(name, "indices", crd, shape[inner])
        rows = np.repeat(np.arange(shape[outer]), np.diff(pos))
        out[(rows, crd) if outer == 0 else (crd, rows)] = levels["val"][:nnz]
        return out
    crds = [levels[f"crd{d}"] for d in range(len(shape))]
    nnz = crds[0].shape[0] if crds else 0
    if fmt.kinds == ("pos",):  # a 1-d vector: pos0 says how many entries are stored
        nnz = int(levels["pos0"][-1])
        crds = [crds[0][:nnz]]
    what = "indices" if fmt.kinds == ("pos",) and fmt.name == "csr" else None
    for d, c in enumerate(crds):
        check_range(name, what or f"coords[{d}]", c, shape[d])
    if crds:
        out[tuple(crds)] = levels["val"][:nnz]
    elif levels["val"].shape[0]:  # a 0-d array with its one stored entry
        out[()] = levels["val"][0]
    return out

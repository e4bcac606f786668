"""Index keys with arrays: what ``x[key]``, ``take`` and ``compress`` hand the language.

NumPy arrays, lists and lazy integer arrays in a key are index arrays; each becomes a
dense integer input of the program (``spec.fancy``, ``spec.ops_gather``). A boolean mask
is its ``nonzero()`` — one integer array per axis it covers — so it must be data (a NumPy
array, a list, or a lazy array bound to one): the number of its true elements is the
result's size. Concrete index arrays are broadcast together here and range-checked against
known axis sizes, so a bad key fails when the program is built, as in NumPy; index arrays
that are lazy are checked when the program runs (``InvalidIndex``).
"""

from __future__ import annotations

import weakref
from typing import Any

import numpy as np

from sparsefold.lazy import LazyArray, asarray
from sparsefold.spec import sizes as sz
from sparsefold.spec.compute import Input
from sparsefold.spec.errors import IllFormedIndex
from sparsefold.spec.ops_gather import normalize_indices

__all__ = ["lift_key", "has_arrays", "concrete_index", "is_key_array"]

# The index arrays lift_key made from concrete keys (lists, NumPy arrays, masks). A jit trace
# keeps them as constants of the traced program, as JAX keeps captured NumPy values: their
# values when the function is traced, passed to the kernel on every call (sparsefold/jit.py).
_KEY_ARRAYS: weakref.WeakValueDictionary = weakref.WeakValueDictionary()  # id -> array


def is_key_array(a: Any) -> bool:
    """Did :func:`lift_key` make ``a`` from a concrete key?"""
    return _KEY_ARRAYS.get(id(a)) is a


def _is_array(k: Any) -> bool:
    if isinstance(k, LazyArray):
        return True
    if isinstance(k, np.ndarray):
        return k.ndim > 0
    return isinstance(k, list)


def has_arrays(key: Any) -> bool:
    key = key if isinstance(key, tuple) else (key,)
    return any(_is_array(k) for k in key)


def _concrete(k: Any) -> np.ndarray | None:
    """The data of an index entry when it has some (a lazy array bound to a dense array)."""
    if isinstance(k, LazyArray):
        node = k.node
        if isinstance(node, Input) and node.format.is_dense and node.name in k.bindings:
            value = k.bindings[node.name]
            return value if isinstance(value, np.ndarray) else None
        return None
    arr = np.asarray(k)
    if arr.size == 0 and arr.dtype.kind == "f":  # NumPy reads [] as an empty intp array
        arr = arr.astype(np.intp)
    return arr


def concrete_index(k: Any) -> np.ndarray | None:
    """The data of an index argument (an array, a list, a scalar, or a lazy array bound to
    a dense array), or None when it is a lazy expression."""
    return _concrete(k)


def _consumed(k: Any) -> int:
    if k is None or k is Ellipsis:
        return 0
    if _is_array(k):
        data = _concrete(k)
        dt = k.dtype if isinstance(k, LazyArray) else (data.dtype if data is not None else None)
        if dt is not None and dt == np.bool_:
            return data.ndim if data is not None else k.ndim
    return 1


def lift_key(x: LazyArray, key: Any) -> tuple[tuple, dict[str, Any]]:
    """``key`` with every index array a node (masks as their nonzero coordinates), and the
    bindings those nodes bring."""
    key = key if isinstance(key, tuple) else (key,)
    used = sum(_consumed(k) for k in key)
    shape = x.node.shape
    out: list[Any] = []
    concrete: list[tuple[int, int, np.ndarray]] = []   # (position in out, axis, values)
    lazy: list[tuple[int, LazyArray]] = []
    axis = 0
    for k in key:
        if k is Ellipsis:
            out.append(k)
            axis += max(0, len(shape) - used)
            continue
        if not _is_array(k):
            out.append(k)
            axis += 0 if k is None else 1
            continue
        data = _concrete(k)
        if data is not None and data.dtype == np.bool_:
            _check_mask(data, shape, axis)
            for d, coords in enumerate(np.nonzero(data)):
                concrete.append((len(out), axis + d, coords))
                out.append(None)  # placeholder
            axis += data.ndim
            continue
        if data is None and k.dtype == np.bool_:
            raise IllFormedIndex("a boolean mask must be data (a NumPy array, or a lazy array "
                                 "bound to one): how many elements it keeps sets the result's "
                                 "size; compute it first")
        dtype = data.dtype if data is not None else k.dtype
        if dtype.kind not in "iu":
            raise IllFormedIndex(f"arrays used as indices must be of integer (or boolean) "
                                 f"type, found {dtype}")
        if data is not None:
            concrete.append((len(out), axis, data))
            out.append(None)
        else:
            lazy.append((len(out), k))
            out.append(None)
        axis += 1
    bindings: dict[str, Any] = {}
    if concrete:
        try:
            arrays = np.broadcast_arrays(*(v for _, _, v in concrete))
        except ValueError:
            shapes = " ".join(str(v.shape) for _, _, v in concrete)
            raise IllFormedIndex(f"shape mismatch: indexing arrays could not be broadcast "
                                 f"together with shapes {shapes}") from None
        for (pos, ax, _), values in zip(concrete, arrays):
            n = sz.const_value(shape[ax]) if ax < len(shape) else None
            if n is not None:
                try:
                    normalize_indices(values, n, ax)
                except IndexError as exc:
                    raise IllFormedIndex(str(exc)) from None
            # a copy: the key's values as they are now (a jit trace keeps them: is_key_array)
            array = np.array(values, dtype=np.int64, order="C")
            _KEY_ARRAYS[id(array)] = array
            lifted = asarray(array)
            out[pos] = lifted.node
            bindings.update(lifted.bindings)
    for pos, k in lazy:
        out[pos] = k.node
        bindings.update(k.bindings)
    return tuple(out), bindings


def _check_mask(mask: np.ndarray, shape, axis: int) -> None:
    if axis + mask.ndim > len(shape):
        raise IllFormedIndex(f"too many indices for array: array is {len(shape)}-dimensional, "
                             f"but a boolean mask covers axes {axis}..{axis + mask.ndim - 1}")
    for d, m in enumerate(mask.shape):
        n = sz.const_value(shape[axis + d])
        if n is not None and n != m:
            raise IllFormedIndex(f"boolean index did not match indexed array along axis "
                                 f"{axis + d}; size of axis is {n} but size of corresponding "
                                 f"boolean axis is {m}")

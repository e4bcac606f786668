"""Index keys with arrays: what ``x[key]``, ``take`` and ``compress`` hand the language.

NumPy arrays, lists and lazy integer arrays in a key are index arrays; each becomes a
dense integer input of the program (``spec.fancy``, ``spec.ops_gather``). A boolean mask
is its ``nonzero()`` — one integer array per axis it covers — so it must be data: the number
of its true elements is the result's size, and a lazy mask is computed first
(``sparsefold.materialize``: a data-dependent shape). Concrete index arrays are broadcast
together here and range-checked against known axis sizes, so a bad key fails when the
program is built, as in NumPy; index arrays that are lazy are checked when the program runs
(``InvalidIndex``).
"""

from __future__ import annotations

import weakref
from typing import Any

import numpy as np

from sparsefold.lazy import LazyArray, asarray
from sparsefold.spec import sizes as sz
from sparsefold.spec.compute import Input, Map
from sparsefold.spec.errors import IllFormedIndex, IllFormedProgram
from sparsefold.spec.functions import get_function
from sparsefold.spec.ir import Node
from sparsefold.spec.ops_gather import normalize_indices

__all__ = ["lift_key", "has_arrays", "concrete_index", "is_key_array", "keep_constant",
           "place"]

# The index arrays lift_key made from concrete keys (lists, NumPy arrays, masks). A jit trace
# keeps them as constants of the traced program, as JAX keeps captured NumPy values: their
# values when the function is traced, passed to the kernel on every call (sparsefold/jit.py).
_KEY_ARRAYS: weakref.WeakValueDictionary = weakref.WeakValueDictionary()  # id -> array


def is_key_array(a: Any) -> bool:
    """Did :func:`lift_key` make ``a`` from a concrete key, or :func:`keep_constant` mark
    it (an array sparsefold made, that no caller holds)?"""
    return _KEY_ARRAYS.get(id(a)) is a


def keep_constant(a: Any) -> Any:
    """Mark ``a`` — an array sparsefold made and no caller can write (``zeros``'s empty COO
    array, the zeros ``x[key] = 0`` places) — as a constant a jit trace keeps, as it keeps
    an index key's array; returns ``a``."""
    _KEY_ARRAYS[id(a)] = a
    return a


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
            data = _materialized_mask(k)
            _check_mask(data, shape, axis)
            for d, coords in enumerate(np.nonzero(data)):
                concrete.append((len(out), axis + d, coords))
                out.append(None)  # placeholder
            axis += data.ndim
            continue
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
        if n is not None and n != m and not (m == 0 and mask.size == 0):  # NumPy: an empty
            # mask selects nothing whatever the sizes it faces
            raise IllFormedIndex(f"boolean index did not match indexed array along axis "
                                 f"{axis + d}; size of axis is {n} but size of corresponding "
                                 f"boolean axis is {m}")


def _materialized_mask(k: LazyArray) -> np.ndarray:
    """A lazy boolean mask computed now: how many elements it keeps is the result's size."""
    from sparsefold.materialize import dense_value, has_data
    if not has_data(k):
        raise IllFormedIndex("a boolean mask over symbolic inputs cannot index: how many "
                             "elements it keeps sets the result's size; bind its inputs")
    return dense_value(k)


def _cast_value(value: Any, dtype: np.dtype) -> LazyArray:
    """``value`` as an array of ``dtype``: a Python or NumPy scalar converted as NumPy's
    ``__setitem__`` converts it (an integer out of range is an ``OverflowError``), an array
    cast by ``astype``."""
    from sparsefold.spec.compute import Literal
    if isinstance(value, (bool, int, float, complex, np.generic)):
        if isinstance(value, complex) and dtype.kind != "c":
            raise IllFormedProgram(f"cannot place a complex value in an array of {dtype}")
        return LazyArray(Literal(dtype.type(value)))
    arr = asarray(value)
    return arr if arr.dtype == dtype else arr.astype(dtype)


def _spread_over_mask(mask: LazyArray, v: LazyArray, x: LazyArray) -> LazyArray | None:
    """``x[mask] = v`` with ``v`` holding one value (or trailing block) per selected
    element, in row-major order: the value read at each position is ``v[r]``, ``r`` the
    number of selected elements before it (``cumsum(mask) - 1``, from the computed mask),
    so the assignment is a ``where`` over a gather of ``v``."""
    from sparsefold import functions as f
    data = _materialized_mask(mask)
    count = int(np.count_nonzero(data))
    if v.ndim == 0 or v.shape[0] != count:
        raise IllFormedIndex(f"x[mask] = value: the mask selects {count} elements, the value "
                             f"has shape {v.shape}")
    if count == 0:
        return None  # nothing selected: nothing changes
    rank = np.maximum(np.cumsum(data.reshape(-1)) - 1, 0).reshape(data.shape)
    spread = f.take(v, rank.astype(np.int64), axis=0)
    return spread


def _is_plus_zero(value: Any) -> bool:
    """``value`` is a scalar +0 (not -0.0, whose sign a zero store would lose)."""
    if not isinstance(value, (bool, int, float, complex, np.generic)):
        return False
    z = complex(value)
    return z == 0 and np.copysign(1.0, z.real) > 0 and np.copysign(1.0, z.imag) > 0


def _region_guard(x: Node, slices) -> Node | None:
    """A bool node of ``x``'s shape: is the coordinate in the region ``slices`` selects
    (``spec.ops_place.Place``'s guard: ``0 <= dist``, ``dist % |step| == 0``, ``dist //
    |step| < count`` per axis, ``dist = ±(k - first)``)? None: the region is empty."""
    from sparsefold.spec.compute import Iota, SizeOf
    from sparsefold.spec.ops_index import normalize_slice

    def fn(name, *args):
        return Map(get_function(name), args)
    guard = None
    for axis, (n, t) in enumerate(zip(x.shape, slices)):
        first, step, count = normalize_slice(n, *t)
        if sz.definitely_equal(count, sz.Const(0)):
            return None
        if t == (None, None, None) or (step == 1 and sz.definitely_equal(first, sz.Const(0))
                                       and sz.definitely_equal(count, n)):
            continue  # the whole axis
        k = Iota(tuple(x.shape), axis)
        at = SizeOf(sz.as_expr(first))
        dist = fn("subtract", k, at) if step > 0 else fn("subtract", at, k)
        r = SizeOf(sz.Const(abs(step)))
        here = fn("logical_and", fn("greater_equal", dist, SizeOf(sz.Const(0))),
                  fn("less", fn("floor_divide", dist, r), SizeOf(sz.as_expr(count))))
        if abs(step) != 1:
            here = fn("logical_and", here,
                      fn("equal", fn("remainder", dist, r), SizeOf(sz.Const(0))))
        guard = here if guard is None else fn("logical_and", guard, here)
    if guard is None:  # every coordinate: x = 0 everywhere, x's shape
        return Map(get_function("equal"), (Iota(tuple(x.shape), 0), Iota(tuple(x.shape), 0)))\
            if x.ndim else None
    return guard


def place(x: LazyArray, key: Any, value: Any) -> tuple[Node, dict[str, Any]]:
    """The program and bindings of ``x`` after ``x[key] = value``: a boolean mask key is
    ``where(mask, value, x)``; a basic key (integers, slices, ``...``, ``None``) places the
    value, broadcast to the region, with ``spec.ops_place.Place``. Integer-array keys are
    refused (the standard has no such assignment)."""
    from sparsefold import functions as f
    from sparsefold.lazy import merge_bindings
    from sparsefold.spec.indexing import getitem
    from sparsefold.spec.ops_place import Place
    v = _cast_value(value, x.dtype)
    keys = key if isinstance(key, tuple) else (key,)
    if has_arrays(keys):
        if len(keys) != 1 or not _is_array(keys[0]):
            raise IllFormedIndex("x[key] = value: a key with arrays must be one boolean mask "
                                 "(integer-array assignment is not supported)")
        mask = asarray(keys[0]) if not isinstance(keys[0], LazyArray) else keys[0]
        if mask.dtype != np.bool_:
            raise IllFormedIndex(f"x[key] = value: a key with arrays must be one boolean mask "
                                 f"(integer-array assignment is not supported), found "
                                 f"{mask.dtype}")
        if mask.ndim > x.ndim or any(not sz.definitely_equal(a, b) for a, b in
                                     zip(mask.node.shape, x.node.shape)):
            raise IllFormedIndex(f"boolean index of shape {mask.shape} does not match the "
                                 f"indexed array's shape {x.shape}")
        trailing = x.shape[mask.ndim:]
        if v.ndim > len(trailing):  # the region is (count,) + trailing
            # a leading 1 broadcasts; else one value (block) per selected element, in order
            v = v[0] if v.ndim == len(trailing) + 1 and v.shape[0] == 1 else \
                _spread_over_mask(mask, v, x)
            if v is None:
                return x.node, x.bindings
        mask = f.reshape(mask, mask.shape + (1,) * (x.ndim - mask.ndim))
        y = f.where(mask, v, x)
        return y.node, y.bindings
    for k in keys:
        if not (k is None or k is Ellipsis or isinstance(k, slice)
                or (isinstance(k, (int, np.integer)) and not isinstance(k, (bool, np.bool_)))):
            raise IllFormedIndex(f"x[key] = value: only integers, slices, None, ... and one "
                                 f"boolean mask are valid keys, found {type(k).__name__}")
    region = getitem(x.node, keys, strict=True)  # checks the key; the region's shape
    used = sum(1 for k in keys if k is not None and k is not Ellipsis)
    if Ellipsis in keys:
        e = keys.index(Ellipsis)
        keys = keys[:e] + (slice(None),) * (x.ndim - used) + keys[e + 1:]
    else:
        keys = keys + (slice(None),) * (x.ndim - used)
    slices, counts = [], []
    for k, n in zip((k for k in keys if k is not None), x.node.shape):
        if isinstance(k, slice):
            slices.append((k.start, k.stop, k.step))
        else:
            i = int(k) + (sz.const_value(n) if k < 0 else 0)
            slices.append((i, i + 1, 1))
    from sparsefold.spec.ops_index import normalize_slice
    counts = tuple(normalize_slice(n, *t)[2] for n, t in zip(x.node.shape, slices))
    if _is_plus_zero(value) and all(sz.is_const(c) for c in counts):
        # zeros placed: a region that stores nothing (a sparse array stays sparse)
        import scipy.sparse as sp
        shape = tuple(sz.const_value(c) for c in counts)
        held = np.dtype(np.float32) if x.dtype == np.float16 else x.dtype  # (scipy has no
        spread = asarray(keep_constant(sp.coo_array(shape, dtype=held) if shape else
                                       np.zeros((), x.dtype)))  # float16 storage)
        if spread.dtype != x.dtype:
            spread = spread.astype(x.dtype)
    elif _is_plus_zero(value):
        # zeros placed over a region of symbolic size (a jit trace): x outside the region,
        # 0 inside, the region's guard read off the coordinates — not the broadcast zeros
        # a dense temporary of the region held (x[::2] = 0: the region's rows x columns
        # visited; sparsefold fuzz --programs 400 --seed 4242, #39)
        from sparsefold.spec.fills import fill_literal
        inside = _region_guard(x.node, slices)
        if inside is None:
            return x.node, x.bindings
        return Map(get_function("where"), (inside, fill_literal(0, x.dtype), x.node)), \
            x.bindings
    else:
        spread = f.broadcast_to(v, region.shape)  # the value over the region, as x[key] is
        if tuple(spread.node.shape) != counts:  # integers keep their axis; None axes go
            spread = f.reshape(spread, tuple(sz.const_value(c) for c in counts))
    placed = Place(x.node, spread.node, tuple(slices))
    return placed, merge_bindings(x.bindings, spread.bindings)

"""Malformations of sparse storage for the fuzzer (``sparsefold.verify.fuzz``) and what
each one may produce.

A mutation changes a valid array of one input format in place — its ``indptr``, index or
coordinate arrays, values, shape or scipy's ``has_canonical_format`` flag — by setting the
attributes directly, so no library constructor re-checks them, and returns an
:class:`Expect`: ``invalid`` (an error naming the problem), ``valid`` (non-canonical but
meaningful: the result must be right), ``either`` (coordinates out of range: an error, or
the result with the bad entries dropped when the kernel never reads them) or ``trusted``
(a stale canonical flag: an error or memory-sound storage, values not guaranteed).

:func:`meaning` says what mutated storage means — a scatter-add of its coordinates in
NumPy, independent of scipy, pydata and sparsefold — and is the oracle's input.

Input formats (:data:`FORMATS`): scipy ``csr``, ``csc``, ``coo``; pydata ``pd_coo``,
``pd_gcxs`` (compressed rows); 1-d: scipy ``vec`` (a 1-d csr array), ``coo1``, pydata
``pd_coo1``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["FORMATS", "MUTATIONS", "Mutation", "Expect", "meaning", "storage", "set_storage",
           "build_input", "is_compressed"]

FORMATS = {2: ("csr", "csc", "coo", "pd_coo", "pd_gcxs"), 1: ("vec", "coo1", "pd_coo1")}


# --- storage access ---------------------------------------------------------------------------

def is_compressed(fmt: str) -> bool:
    """Stored as indptr/indices/data (else as coordinate arrays and data)."""
    return fmt in ("csr", "csc", "vec", "pd_gcxs")


def storage(a: Any, fmt: str) -> dict[str, Any]:
    """The storage arrays of ``a``: indptr/indices/data or coords (a list)/data."""
    if is_compressed(fmt):
        return {"indptr": a.indptr, "indices": a.indices, "data": a.data}
    return {"coords": list(a.coords), "data": a.data}


def set_storage(a: Any, fmt: str, **arrays) -> None:
    """Set storage arrays on ``a`` directly (no constructor re-checks them)."""
    for k, v in arrays.items():
        if k == "coords":
            if fmt.startswith("pd_"):
                v = np.stack(v) if len({np.shape(c) for c in v}) == 1 else v
            else:
                v = tuple(v)
        setattr(a, k, v)


def build_input(dense: np.ndarray, fmt: str, index_dtype: str) -> Any:
    """A canonical array of ``fmt`` holding ``dense`` (no explicit zeros)."""
    import scipy.sparse as sp
    import sparse
    if fmt == "pd_coo" or fmt == "pd_coo1":
        return sparse.COO.from_numpy(dense)
    if fmt == "pd_gcxs":
        return sparse.GCXS.from_numpy(dense, compressed_axes=(0,))
    a = {"csr": sp.csr_array, "vec": sp.csr_array, "csc": sp.csc_array}.get(fmt, sp.coo_array)(
        dense)
    a.sum_duplicates()
    ix = np.dtype(index_dtype)
    if is_compressed(fmt):
        a.indices, a.indptr = a.indices.astype(ix), a.indptr.astype(ix)
    else:
        a.coords = tuple(c.astype(ix) for c in a.coords)
    return a


def _entry_coords(arrays: dict, fmt: str, shape: tuple) -> tuple[list[np.ndarray], int]:
    """Coordinates (per axis) of the stored entries ``[0, nnz)``, and nnz, of sound
    ``indptr``/coords lengths; coordinates themselves may be out of range."""
    if is_compressed(fmt):
        indptr = np.asarray(arrays["indptr"]).astype(np.int64)
        nnz = int(indptr[-1])
        outer = np.repeat(np.arange(indptr.shape[0] - 1), np.diff(indptr))
        inner = np.asarray(arrays["indices"])[:nnz].astype(np.int64)
        if fmt == "vec":
            return [inner], nnz
        return ([inner, outer] if fmt == "csc" else [outer, inner]), nnz
    coords = [np.asarray(c).astype(np.int64) for c in arrays["coords"]]
    return coords, coords[0].shape[0]


def meaning(arrays: dict, fmt: str, shape: tuple, dtype, fill=0) -> tuple[np.ndarray, int]:
    """The dense array that storage means — duplicates summed, explicit zeros kept as
    zeros, ``fill`` where nothing is stored — with entries whose coordinates are out of
    range dropped; and how many were dropped. Independent of scipy, pydata and sparsefold:
    a scatter-add over the coordinates."""
    coords, nnz = _entry_coords(arrays, fmt, shape)
    data = np.asarray(arrays["data"])[:nnz]
    keep = np.ones(nnz, dtype=bool)
    for c, n in zip(coords, shape):
        keep &= (c >= 0) & (c < n)
    at = tuple(c[keep] for c in coords)
    out = np.full(shape, fill, dtype=dtype)
    out[at] = 0
    if dtype == np.bool_:
        np.logical_or.at(out, at, data[keep].astype(bool))
    else:
        np.add.at(out, at, data[keep].astype(dtype))
    return out, int(nnz - keep.sum())


# --- mutations ------------------------------------------------------------------------------

@dataclass
class Expect:
    """What a case may produce (see the module docstring)."""

    kind: str                               # invalid | valid | either | trusted
    pieces: tuple[str, ...] = ()            # one must occur in an error's message
    errors: tuple[str, ...] = ("InvalidData",)


@dataclass(frozen=True)
class Mutation:
    """A named malformation: ``apply(rng, a, fmt)`` mutates ``a`` in place and returns the
    :class:`Expect`; ``formats`` says where it applies."""

    name: str
    group: str
    apply: Callable[[np.random.Generator, Any, str], Expect]
    formats: Callable[[str], bool] = lambda fmt: True
    needs_partner: bool = False  # applies to programs with a second operand only


def _copy(x) -> np.ndarray:
    return np.array(x, copy=True)


def _mut_indptr(kind: str) -> Callable:
    def apply(rng, a, fmt):
        p = _copy(a.indptr)
        if kind == "short":
            p = p[:-1].copy()
        elif kind == "long":
            p = np.concatenate([p, p[-1:]])
        elif kind == "first":
            p[0] = 1
        elif kind == "not_monotone":  # one boundary above the next (a vector: below 0)
            i = int(rng.integers(1, p.shape[0] - 1)) if p.shape[0] > 2 else 1
            p[i] = p[i + 1] + 1 if p.shape[0] > 2 else -1
        elif kind == "negative":
            p[int(rng.integers(1, p.shape[0]))] = -int(rng.integers(1, 2**31 - 1))
        elif kind == "past_end":
            p[-1] = a.indices.shape[0] + int(rng.integers(1, 1000))
        set_storage(a, fmt, indptr=p)
        if not fmt.startswith("pd_") and rng.random() < 0.5:
            # scipy's canonical flag cached True (as built) lets the runtime leave the
            # monotone pass to the kernel; cached False makes the runtime do it: try both
            a.has_canonical_format = False
        return Expect("invalid", ("indptr", "monotone"))
    return apply


def _bad_value(rng, n: int, dtype: np.dtype, negative: bool) -> int:
    hi = np.iinfo(dtype).max
    if negative:
        return int(rng.choice([-1, -n, np.iinfo(dtype).min, -int(rng.integers(1, 2**15))]))
    return int(rng.choice([n, n + 1, hi, min(hi, n + int(rng.integers(1, 2**20)))]))


def _mut_coordinate(negative: bool) -> Callable:
    """One stored coordinate pushed outside its axis."""
    def apply(rng, a, fmt):
        arr = storage(a, fmt)
        shape = tuple(a.shape)
        if is_compressed(fmt):
            nnz = int(arr["indptr"][-1])
            idx = _copy(arr["indices"])
            p = int(rng.integers(0, nnz))
            n = shape[-1] if fmt in ("csr", "pd_gcxs", "vec") else shape[0]
            idx[p] = _bad_value(rng, n, idx.dtype, negative)
            set_storage(a, fmt, indices=idx)
        else:
            coords = [_copy(c) for c in arr["coords"]]
            d = int(rng.integers(0, len(coords)))
            p = int(rng.integers(0, coords[d].shape[0]))
            coords[d][p] = _bad_value(rng, shape[d], coords[d].dtype, negative)
            set_storage(a, fmt, coords=coords)
        return Expect("either", ("out of range",))
    return apply


def _index_arrays(arr: dict) -> list[str]:
    return ["indptr", "indices"] if "indptr" in arr else ["coords"]


def _mut_index_dtype(dtype: str, valid: bool) -> Callable:
    """Index arrays converted to ``dtype`` (``uint64_huge``: a value >= 2**63)."""
    def apply(rng, a, fmt):
        arr = storage(a, fmt)
        name = str(rng.choice(_index_arrays(arr)))
        if dtype == "uint64_huge":
            def conv(x):
                x = x.astype(np.uint64)
                if x.size:
                    x[-1] = np.uint64(2**64 - 1 - int(rng.integers(0, 100)))
                return x
        elif dtype == "byteswapped":
            def conv(x): return x.astype(x.dtype.newbyteorder(">"))
        else:
            def conv(x): return x.astype(dtype)
        new = [conv(c) for c in arr["coords"]] if name == "coords" else conv(arr[name])
        set_storage(a, fmt, **{name: new})
        if dtype == "uint64_huge" and name == "indices" and not arr["indices"].size:
            return Expect("valid")
        return Expect("valid") if valid else Expect("invalid", ("index array",))
    return apply


def _mut_index_2d(rng, a, fmt):
    arr = storage(a, fmt)
    if "indices" in arr:
        set_storage(a, fmt, indices=arr["indices"].reshape(1, -1))
    else:
        set_storage(a, fmt, coords=[c.reshape(1, -1) for c in arr["coords"]])
    return Expect("invalid", ("1-d index array", "index array"))


def _mut_data(kind: str) -> Callable:
    def apply(rng, a, fmt):
        d = np.asarray(a.data)
        if kind == "short":
            d = d[:-1].copy()
        elif kind == "long":
            d = np.concatenate([d, d[:1] + 1])
        elif kind == "2d":
            d = d.reshape(1, -1)
        elif kind == "object":
            d = d.astype(object)
        elif kind == "byteswapped":
            d = d.astype(d.dtype.newbyteorder(">"))
        set_storage(a, fmt, data=d)
        if kind == "long" and is_compressed(fmt):
            # indptr[-1] is nnz: a longer tail is unread, as scipy prunes it
            return Expect("either", ("stored values", "data"))
        pieces = {"object": ("dtype",), "byteswapped": ("dtype",)}.get(
            kind, ("stored values", "data", "differ in length", "entries", "values for"))
        return Expect("invalid", pieces)
    return apply


def _mut_coords_ragged(rng, a, fmt):
    coords = [_copy(c) for c in a.coords]
    d = int(rng.integers(0, len(coords)))
    coords[d] = coords[d][:-1].copy()
    set_storage(a, fmt, coords=coords)
    return Expect("invalid", ("coords[", "differ in length", "entries", "values for"))


def _mut_coords_count(rng, a, fmt):
    coords = [_copy(c) for c in a.coords]
    coords = coords + [coords[0]] if rng.random() < 0.5 or len(coords) == 1 else coords[:-1]
    set_storage(a, fmt, coords=coords)
    return Expect("invalid", ("coordinate arrays",))


def _mut_shape(kind: str) -> Callable:
    def apply(rng, a, fmt):
        shape = list(a.shape)
        if kind == "negative":
            shape[int(rng.integers(0, len(shape)))] = -int(rng.integers(1, 10))
            pieces = ("negative",)
        elif kind == "zero":  # entries stored on an empty axis (the inner one if compressed)
            axis = {"csr": -1, "pd_gcxs": -1, "vec": 0, "csc": 0}.get(
                fmt, int(rng.integers(0, len(shape))))
            shape[axis] = 0
            pieces = ("size 0", "indptr", "broadcast", "shape", "size")
        elif kind == "overflow":  # a product (or a size) beyond int64
            shape = ([2**40 + int(rng.integers(0, 5)), 2**40] if len(shape) == 2 else
                     [2**63 + int(rng.integers(0, 2**20))])
            pieces = ("2**63", "overflow", "size")
        else:  # rank: storage of one rank claiming another (an added axis may be long)
            extra = int(rng.choice([3, 1000, 100_000]))
            shape = (shape + [extra] if len(shape) == 1 or rng.random() < 0.4 else
                     shape[:1] + [extra] + shape[1:] if rng.random() < 0.5 else shape[:1])
            pieces = ("indptr", "coordinate arrays", "axis", "broadcast", "shape", "size",
                      "dimension", "-d array")
        if fmt.startswith("pd_"):
            a.shape = tuple(shape)
        else:
            a._shape = tuple(shape)
        return Expect("invalid", pieces, ("InvalidData", "IllFormedProgram"))
    return apply


def _permutation_within_segments(rng, arr: dict, fmt: str) -> np.ndarray:
    """A permutation of the stored entries that keeps each compressed segment in place
    (COO: any permutation)."""
    if not is_compressed(fmt):
        return rng.permutation(arr["data"].shape[0])
    indptr = np.asarray(arr["indptr"])
    perm = np.arange(indptr[-1])
    for s, e in zip(indptr[:-1], indptr[1:]):
        perm[s:e] = s + rng.permutation(e - s)
    if perm.size > 1 and np.all(perm == np.arange(perm.size)):
        s = int(np.argmax(np.diff(indptr) > 1)) if np.any(np.diff(indptr) > 1) else None
        if s is not None:  # a segment with two entries exists: swap its first two
            b = int(indptr[s])
            perm[b], perm[b + 1] = perm[b + 1], perm[b]
    return perm


def _duplicate(rng, arr: dict, fmt: str) -> dict:
    """Each of a few entries split into two stored entries whose sum is the original."""
    data = np.asarray(arr["data"])
    nnz = data.shape[0]
    picks = sorted(set(rng.integers(0, nnz, size=int(rng.integers(1, 4))).tolist()))
    first = data.copy()
    second = []
    for p in picks:
        part = first[p] if data.dtype == np.bool_ else first[p] - first[p].dtype.type(1)
        second.append(part if data.dtype == np.bool_ else first[p].dtype.type(1))
        first[p] = part
    second = np.array(second, dtype=data.dtype)
    if is_compressed(fmt):  # insert the copies next to their originals, indptr shifted
        at = np.array(picks) + 1
        indices = np.insert(np.asarray(arr["indices"]), at, np.asarray(arr["indices"])[picks])
        shift = np.searchsorted(at, np.asarray(arr["indptr"]), side="right")
        indptr = np.asarray(arr["indptr"]) + shift.astype(arr["indptr"].dtype)
        return {"indptr": indptr.astype(arr["indptr"].dtype), "indices": indices,
                "data": np.insert(first, at, second)}
    coords = [np.concatenate([c, np.asarray(c)[picks]]) for c in arr["coords"]]
    return {"coords": coords, "data": np.concatenate([first, second])}


def _set_flag(a, fmt, value: bool) -> None:
    if not fmt.startswith("pd_"):
        a.has_canonical_format = value
        if hasattr(a, "has_sorted_indices"):
            a.has_sorted_indices = value


def _mut_order(kind: str, stale: bool) -> Callable:
    """Unsorted or duplicated entries, the flag False (valid) or stale True (trusted)."""
    def apply(rng, a, fmt):
        arr = storage(a, fmt)
        if kind == "duplicates":
            new = _duplicate(rng, arr, fmt)
            perm = _permutation_within_segments(rng, new, fmt) if rng.random() < 0.5 else None
        else:
            new, perm = dict(arr), _permutation_within_segments(rng, arr, fmt)
        if perm is not None:
            new["data"] = np.asarray(new["data"])[perm]
            if "coords" in new:
                new["coords"] = [np.asarray(c)[perm] for c in new["coords"]]
            else:
                new["indices"] = np.asarray(new["indices"])[perm]
        set_storage(a, fmt, **new)
        _set_flag(a, fmt, stale)
        return Expect("trusted", ("sorted", "duplicate", "canonical")) if stale else \
            Expect("valid")
    return apply


def _mut_flag_false(rng, a, fmt):
    _set_flag(a, fmt, False)
    return Expect("valid")


def _mut_explicit_zeros(rng, a, fmt):
    """Stored zeros: some stored values set to 0, and (COO) zeros stored at empty places."""
    arr = storage(a, fmt)
    data = _copy(arr["data"])
    if data.size:
        data[rng.integers(0, data.size, size=int(rng.integers(1, 3)))] = 0
    new = {"data": data}
    if not is_compressed(fmt):
        shape = tuple(a.shape)
        extra = [rng.integers(0, n, size=2) for n in shape]
        new["coords"] = [np.concatenate([c, e.astype(c.dtype)]) for c, e in
                         zip(arr["coords"], extra)]
        new["data"] = np.concatenate([data, np.zeros(2, dtype=data.dtype)])
        _set_flag(a, fmt, False)
    set_storage(a, fmt, **new)
    return Expect("valid")


def _mut_layout(kind: str) -> Callable:
    """Every storage array non-contiguous (a strided view) or read-only."""
    def apply(rng, a, fmt):
        def conv(x):
            x = np.asarray(x)
            if kind == "readonly":
                x = x.copy()
                x.flags.writeable = False
                return x
            wide = np.zeros((2,) + x.shape, dtype=x.dtype)
            wide[0] = x
            return np.moveaxis(wide, 0, -1)[..., 0]  # same values, stride of two items
        arr = storage(a, fmt)
        new = {k: ([conv(c) for c in v] if k == "coords" else conv(v)) for k, v in arr.items()}
        if fmt.startswith("pd_coo") and kind == "strided":
            wide = np.zeros((len(new["coords"]), 2 * new["data"].shape[0]), dtype=np.int64)
            wide[:, ::2] = np.stack(arr["coords"])
            new["coords"] = wide[:, ::2]
        set_storage(a, fmt, **new)
        if fmt.startswith("pd_coo") and kind == "readonly":
            a.coords.flags.writeable = False
        return Expect("valid")
    return apply


def _mut_indices_tail(rng, a, fmt):
    """indices and data longer than indptr[-1]: the tail is unread (scipy prunes it)."""
    k = int(rng.integers(1, 4))
    set_storage(a, fmt, indices=np.concatenate([a.indices, np.full(k, -7, a.indices.dtype)]),
           data=np.concatenate([a.data, np.full(k, 99, a.data.dtype)]))
    return Expect("valid")


def _mut_fill_value(rng, a, fmt):
    """pydata's fill value made nonzero: what is not stored is that value."""
    a.fill_value = a.dtype.type(int(rng.choice([1, -2, 5])))
    return Expect("either", ("fill",), ("InvalidData", "IllFormedProgram"))


def _mut_mismatch(rng, a, fmt):
    """The input stays valid; ``make_case`` gives a partner operand a shape that does not
    fit (``needs_partner``)."""
    return Expect("invalid", ("broadcast", "shape", "size", "axis", "contracted", "match"),
                  ("IllFormedProgram", "InvalidData"))


def _is_scipy(fmt): return not fmt.startswith("pd_")
def _is_coo(fmt): return not is_compressed(fmt)
def _scipy_coo(fmt): return fmt in ("coo", "coo1")


M = Mutation
MUTATIONS: tuple[Mutation, ...] = (
    M("none", "valid", lambda rng, a, fmt: Expect("valid")),
    M("indptr_short", "indptr", _mut_indptr("short"), is_compressed),
    M("indptr_long", "indptr", _mut_indptr("long"), is_compressed),
    M("indptr_first_nonzero", "indptr", _mut_indptr("first"), is_compressed),
    M("indptr_not_monotone", "indptr", _mut_indptr("not_monotone"), is_compressed),
    M("indptr_negative", "indptr", _mut_indptr("negative"), is_compressed),
    M("indptr_past_nnz", "indptr", _mut_indptr("past_end"), is_compressed),
    M("coordinate_negative", "range", _mut_coordinate(True)),
    M("coordinate_too_large", "range", _mut_coordinate(False)),
    M("index_float", "dtype", _mut_index_dtype("float64", False)),
    M("index_object", "dtype", _mut_index_dtype("object", False)),
    M("index_bool", "dtype", _mut_index_dtype("bool", False)),
    M("index_uint64_huge", "dtype", _mut_index_dtype("uint64_huge", False)),
    M("index_uint64", "dtype-ok", _mut_index_dtype("uint64", True)),
    M("index_int16", "dtype-ok", _mut_index_dtype("int16", True)),
    M("index_int64", "dtype-ok", _mut_index_dtype("int64", True)),
    M("index_byteswapped", "dtype-ok", _mut_index_dtype("byteswapped", True)),
    M("index_2d", "dtype", _mut_index_2d),
    M("data_short", "data", _mut_data("short")),
    M("data_long", "data", _mut_data("long")),
    M("data_2d", "data", _mut_data("2d")),
    M("data_object", "data", _mut_data("object")),
    M("data_byteswapped", "data", _mut_data("byteswapped")),
    M("coords_ragged", "coords", _mut_coords_ragged, _scipy_coo),
    M("coords_count", "coords", _mut_coords_count, _is_coo),
    M("shape_negative", "shape", _mut_shape("negative")),
    M("shape_zero_axis", "shape", _mut_shape("zero")),
    M("shape_overflow", "shape", _mut_shape("overflow")),
    # (pydata's n-d GCXS reads the same arrays as a reshaped matrix: often valid, so not here)
    M("shape_rank", "shape", _mut_shape("rank"), lambda fmt: fmt != "pd_gcxs"),
    M("operand_shape_mismatch", "shape", _mut_mismatch, needs_partner=True),
    M("unsorted", "canonical", _mut_order("unsorted", False)),
    M("duplicates", "canonical", _mut_order("duplicates", False)),
    M("explicit_zeros", "canonical", _mut_explicit_zeros),
    M("flag_false", "canonical", _mut_flag_false, _is_scipy),
    M("indices_tail_unread", "canonical", _mut_indices_tail, is_compressed),
    M("fill_value_nonzero", "canonical", _mut_fill_value, lambda fmt: fmt.startswith("pd_")),
    M("non_contiguous", "layout", _mut_layout("strided")),
    M("read_only", "layout", _mut_layout("readonly")),
    M("stale_flag_unsorted", "stale", _mut_order("unsorted", True), _is_scipy),
    M("stale_flag_duplicates", "stale", _mut_order("duplicates", True), _is_scipy),
)
del M


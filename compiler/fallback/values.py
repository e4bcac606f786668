"""What a node evaluates to in the fallback, and the coordinate arithmetic on it.

Two kinds of value, both of a node's concrete shape and dtype:

* :class:`Sparse` — stored *entries* (their coordinates, canonical: strictly increasing in
  row-major order) with a value each, and a *background*: the value at every coordinate
  that stores nothing (0 for data; ``x + 1`` has background 1). A stored entry may hold
  the background value (a stored zero): entries are structure, as in the compiled kernels.
* :class:`Located` — a value that exists at every coordinate (dense inputs, literals,
  coordinates, reductions, and expressions of them): read where an expression needs it
  (:meth:`Located.at`, gathering through the shape operators' backward maps, so a
  broadcast is never materialized) or materialized (:meth:`Located.full`, within the
  memory budget).

A :class:`Broadcast` is a sparse value repeated along axes (``broadcast_to`` of a sparse
operand) kept unexpanded: an intersection reads it through its backward map (``A * v``
with ``v`` a broadcast row visits ``A``'s entries, not ``rows x nnz(v)`` of them), and it
is expanded only when the entries themselves are needed.

Coordinates are tuples of int64 arrays (one per axis, equal lengths); a *key* is a
coordinate linearized row-major. Every node has fewer than 2**62 elements (checked before
evaluating), so keys never overflow.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from sparsefold.spec.errors import InternalError

__all__ = ["Declined", "Budget", "Sparse", "Broadcast", "Located", "linear_keys", "unravel",
           "canonical_order", "union", "intersection", "spread_values", "is_zero"]

I64 = np.int64


class Declined(Exception):
    """The fallback does not compute this call (a program or data it does not cover, or
    data the compiled kernel's checks must judge): the caller runs the compiled kernel."""


class Budget:
    """What a call may take. Memory: ``dense_bytes`` for one dense array the fallback
    allocates (a dense result, a materialized dense operand), ``entries`` for the entries
    of any sparse value it expands (a few times the inputs' and the output's: memory
    O(inputs + output)). Work: ``cells``, the most elements one dense array may hold —
    the compiled kernels' cost rule (``compiler/plan/cost.py``: work bounded by stored entries,
    output and extents, never rows x cols), so the first answer grows as the kernel does.
    Exceeding any declines the call (it then waits for its kernel). ``peak_cells``: the
    largest dense array allowed so far (what the scale tests read)."""

    def __init__(self, dense_bytes: int, entries: int, cells: int | None = None):
        self.dense_bytes, self.entries = int(dense_bytes), int(entries)
        self.cells = None if cells is None else int(cells)
        self.peak_cells = 0

    def dense(self, shape: tuple[int, ...], dtype: np.dtype, what: str) -> None:
        n = 1
        for s in shape:
            n *= int(s)
        if n * np.dtype(dtype).itemsize > self.dense_bytes:
            raise Declined(f"{what}: a dense array of shape {tuple(shape)} is over the "
                           f"fallback's memory budget")
        if self.cells is not None and n > self.cells:
            raise Declined(f"{what}: a dense array of shape {tuple(shape)} is work in rows x "
                           f"columns, over the {self.cells} elements the inputs' entries, "
                           f"the output and the extents allow (the kernel's cost rule)")
        self.peak_cells = max(self.peak_cells, n)

    def sparse(self, count: int, what: str) -> None:
        if count > self.entries:
            raise Declined(f"{what}: {count} entries is over the fallback's budget of "
                           f"{self.entries}")

def linear_keys(coords: tuple[np.ndarray, ...], shape: tuple[int, ...]) -> np.ndarray:
    """Row-major linear keys of ``coords`` in ``shape`` (int64)."""
    if not coords:
        return np.zeros(0, I64)
    if len(coords) == 1:
        return np.array(coords[0], dtype=I64, copy=True)
    key = np.asarray(coords[0], dtype=I64) * shape[1]
    key += coords[1]
    for c, n in zip(coords[2:], shape[2:]):
        key *= n
        key += c
    return key


def unravel(keys: np.ndarray, shape: tuple[int, ...]) -> tuple[np.ndarray, ...]:
    """The coordinates of row-major ``keys`` in ``shape``."""
    if not shape:
        return ()
    out = []
    rest = keys
    with np.errstate(all="ignore"):  # an axis of size 0 holds no keys
        for n in reversed(shape[1:]):
            rest, c = np.divmod(rest, n) if n else (rest, rest)
            out.append(c)
    out.append(rest)
    return tuple(np.asarray(c, dtype=I64) for c in reversed(out))


def is_zero(v: Any) -> bool:
    """A background equal to 0 (``-0.0`` too; NaN is not)."""
    with np.errstate(all="ignore"):
        return bool(np.asarray(v) == 0)


def canonical_order(coords: tuple[np.ndarray, ...], shape: tuple[int, ...]) -> np.ndarray | None:
    """The permutation putting entries in row-major order, or None when they are in it
    already (one O(n) check first)."""
    found = _ordered(coords, shape)
    return None if found is None else found[0]


def _ordered(coords, shape):
    """(permutation, the CSR structure (indptr, indices) of the ordered entries or None),
    or None when the entries are in row-major order already. Two-dimensional entries are
    ordered by scipy's conversion (a counting pass by row, then each row sorted: a few
    times faster than a global sort of the keys), as ``storage.levels`` canonicalizes COO
    input."""
    n = coords[0].shape[0] if coords else 0
    if n < 2:
        return None
    keys = linear_keys(coords, shape)
    if bool(np.all(keys[1:] > keys[:-1])):
        return None
    if len(shape) == 2 and shape[0] <= 4 * n + 1024 and n < 2**31:
        import scipy.sparse as sp
        m = sp.coo_matrix((np.arange(n, dtype=I64), (coords[0], coords[1])),
                          shape=shape).tocsr()
        m.sum_duplicates()  # sorts each row (the entries are distinct: nothing is summed)
        if m.nnz == n:
            return np.asarray(m.data, dtype=I64), (m.indptr, m.indices)
    return np.argsort(keys, kind="stable"), None


class Sparse:
    """Entries (canonical) and their values, and the background everywhere else, held as
    keys, coordinates or (two-dimensional) CSR arrays, each computed from another on first
    use. ``csr``: (indptr, indices) when the entries are known as CSR (a CSR input, a
    matrix product, a sorted pair of coordinates): matrix products, elementwise products and
    sums of two matrices, and a CSR result use them in place."""

    __slots__ = ("shape", "dtype", "vals", "background", "_keys", "_coords", "csr")

    def __init__(self, shape, vals: np.ndarray, background: Any, *, keys=None, coords=None,
                 csr=None):
        self.shape = tuple(int(n) for n in shape)
        self.vals = vals
        self.dtype = vals.dtype
        self.background = np.asarray(background, dtype=vals.dtype)[()]
        if keys is None and coords is None and csr is None:
            raise InternalError("a sparse value needs keys, coordinates or CSR arrays")
        self._keys, self._coords, self.csr = keys, coords, csr

    @property
    def nnz(self) -> int:
        return int(self.vals.shape[0])

    @property
    def keys(self) -> np.ndarray:
        if self._keys is None and not self.shape:  # 0-d: at most one entry, key 0
            self._keys = np.zeros(self.nnz, I64)
        if self._keys is None:
            self._keys = linear_keys(self.coords, self.shape)
        return self._keys

    @property
    def coords(self) -> tuple[np.ndarray, ...]:
        if self._coords is None:
            if self._keys is not None:
                self._coords = unravel(self._keys, self.shape)
            else:
                indptr, indices = self.csr
                rows = np.repeat(np.arange(self.shape[0], dtype=I64), np.diff(indptr))
                self._coords = (rows, indices.astype(I64))
        return self._coords

    @classmethod
    def from_entries(cls, shape, coords, vals, background, budget: Budget, what: str):
        """Entries in any order (distinct) made canonical."""
        budget.sparse(vals.shape[0], what)
        found = _ordered(coords, tuple(shape))
        if found is None:
            return cls(shape, vals, background, coords=coords)
        order, structure = found
        vals = vals[order]
        if structure is not None:
            return cls(shape, vals, background, csr=structure)
        return cls(shape, vals, background, coords=tuple(c[order] for c in coords))

    def materialize(self, budget: Budget | None = None) -> Sparse:
        return self

    def find(self, coords) -> tuple[np.ndarray, np.ndarray]:
        """(stored?, the position of the entry where stored) at ``coords``."""
        if not self.shape:  # 0-d: its one entry, if stored
            return np.asarray(self.nnz > 0), np.zeros((), I64)
        q = linear_keys(_arrays(coords), self.shape)
        if self.nnz == 0:
            return np.zeros(q.shape, bool), np.zeros(q.shape, I64)
        pos = np.searchsorted(self.keys, q)
        np.minimum(pos, self.nnz - 1, out=pos)
        return self.keys[pos] == q, pos

    def lookup(self, coords) -> tuple[np.ndarray, np.ndarray]:
        """(stored?, value) at ``coords`` (the background where nothing is stored)."""
        present, pos = self.find(coords)
        vals = self.vals[pos] if self.nnz else np.empty(pos.shape, self.dtype)
        vals[~present] = self.background
        return present, vals

    def at(self, coords) -> np.ndarray:
        return self.lookup(coords)[1]

    operand = at  # what a map's NumPy meaning receives for it

    def full(self, budget: Budget) -> np.ndarray:
        budget.dense(self.shape, self.dtype, "a sparse value made dense")
        out = np.full(self.shape, self.background, dtype=self.dtype)
        if self.nnz:
            out[self.coords if self.shape else ()] = self.vals if self.shape else self.vals[0]
        return out


def _arrays(coords) -> tuple[np.ndarray, ...]:
    """Coordinates as arrays of one length (constants broadcast)."""
    if not coords:
        return ()
    arrays = np.broadcast_arrays(*[np.asarray(c, dtype=I64) for c in coords])
    return tuple(np.ascontiguousarray(a) for a in arrays)


class Broadcast:
    """``base`` (a :class:`Sparse` of shape ``base.shape``) repeated to ``shape`` by NumPy's
    rule: ``lead`` new leading axes, and the ``stretched`` axes (of ``shape``) read at 0."""

    __slots__ = ("base", "shape", "dtype", "background", "lead", "stretched", "_done")

    def __init__(self, base: Sparse, shape: tuple[int, ...], stretched: tuple[int, ...]):
        self.base, self.shape = base, tuple(shape)
        self.dtype, self.background = base.dtype, base.background
        self.lead = len(shape) - len(base.shape)
        self.stretched = tuple(stretched)
        self._done = None

    @property
    def nnz(self) -> int:
        n = self.base.nnz
        for d in range(self.lead):
            n *= self.shape[d]
        for d in self.stretched:
            n *= self.shape[d]
        return n

    def _backward(self, coords):
        lead = self.lead
        return tuple(np.zeros((), I64) if d + lead in self.stretched else coords[d + lead]
                     for d in range(len(self.base.shape)))

    def find(self, coords):
        """(stored?, the position of the *base's* entry read there)."""
        coords = _arrays(coords)
        present, pos = self.base.find(self._backward(coords))
        n = coords[0].shape if coords else ()
        return np.broadcast_to(present, n).copy(), np.broadcast_to(pos, n).copy()

    def lookup(self, coords):
        coords = _arrays(coords)
        present, vals = self.base.lookup(self._backward(coords))
        n = coords[0].shape if coords else ()
        return np.broadcast_to(present, n).copy(), np.broadcast_to(vals, n).copy()

    def at(self, coords):
        return self.lookup(coords)[1]

    operand = at

    def materialize(self, budget: Budget | None = None) -> Sparse:
        """The repeated entries, canonical."""
        if self._done is None:
            if budget is not None:
                budget.sparse(self.nnz, "a broadcast sparse operand")
            base, shape = self.base, self.shape
            free = [d for d in range(len(shape)) if d < self.lead or d in self.stretched]
            n, reps = base.nnz, 1
            for d in free:
                reps *= shape[d]
            coords = []
            for d in range(len(shape)):
                if d in free:
                    # the free coordinates of every repetition: a grid over the free axes
                    inner = 1
                    for e in free[free.index(d) + 1:]:
                        inner *= shape[e]
                    grid = (np.arange(reps, dtype=I64) // inner) % shape[d]
                    coords.append(np.tile(grid, n))
                else:
                    coords.append(np.repeat(base.coords[d - self.lead], reps))
            vals = np.repeat(base.vals, reps)
            order = canonical_order(tuple(coords), shape)
            if order is not None:
                coords = [c[order] for c in coords]
                vals = vals[order]
            self._done = Sparse(shape, vals, base.background, coords=tuple(coords))
        return self._done

    def full(self, budget: Budget) -> np.ndarray:
        budget.dense(self.shape, self.dtype, "a broadcast sparse value made dense")
        dense = self.base.full(budget)
        index = tuple(slice(0, 1) if d + self.lead in self.stretched else slice(None)
                      for d in range(len(self.base.shape)))
        return np.ascontiguousarray(np.broadcast_to(dense[index], self.shape))


class Located:
    """A value at every coordinate. Subclasses define :meth:`at` (values at coordinates of
    this node's shape) and :meth:`full` (the whole array, possibly a read-only broadcast
    view; dense allocations are checked against the budget)."""

    __slots__ = ("shape", "dtype")

    def __init__(self, shape, dtype):
        self.shape, self.dtype = tuple(int(n) for n in shape), np.dtype(dtype)

    def at(self, coords) -> np.ndarray:
        raise NotImplementedError

    def full(self, budget: Budget) -> np.ndarray:
        raise NotImplementedError

    def operand(self, coords):
        """What a map's NumPy meaning receives for this argument at ``coords``."""
        return self.at(coords)

    def whole(self, budget: Budget):
        """What a map's NumPy meaning receives for this argument everywhere."""
        return self.full(budget)


def _merge(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The union of two sorted, distinct key arrays, and where each entry of ``a`` and of
    ``b`` lands in it: one binary search of ``b`` in ``a``, then linear passes."""
    na, nb = a.shape[0], b.shape[0]
    ins = np.searchsorted(a, b)
    hit = a[np.minimum(ins, na - 1)] == b if na else np.zeros(nb, bool)
    new = ~hit
    ins_new = ins[new]
    # the new keys of b inserted before a[i] are those with an insertion point <= i
    pos_a = np.arange(na, dtype=I64)
    if ins_new.shape[0]:
        pos_a += np.cumsum(np.bincount(ins_new, minlength=na + 1))[:na]
    pos_new = ins_new + np.arange(ins_new.shape[0], dtype=I64)
    out = np.empty(na + ins_new.shape[0], dtype=I64)
    out[pos_a] = a
    out[pos_new] = b[new]
    pos_b = np.empty(nb, dtype=I64)
    pos_b[new] = pos_new
    pos_b[hit] = pos_a[ins[hit]]
    return out, pos_a, pos_b


def union(values: list) -> tuple[np.ndarray, list[np.ndarray]]:
    """The keys stored by any of ``values`` (materialized sparse values of one shape), and
    for each value where each of its entries lands among them."""
    keys = values[0].keys
    positions = [np.arange(keys.shape[0], dtype=I64)]
    for v in values[1:]:
        keys, moved, pos = _merge(keys, v.keys)
        positions = [moved[p] for p in positions] + [pos]
    return keys, positions


def spread_values(value, positions: np.ndarray, n: int) -> np.ndarray:
    """A sparse value's values at ``n`` keys among which its entries land at
    ``positions`` (its background elsewhere)."""
    out = np.full(n, value.background, dtype=value.dtype)
    out[positions] = value.vals
    return out


def intersection(values: list, budget: Budget) -> tuple[np.ndarray, list]:
    """(keys stored by every one of ``values``, each value's values there): ``values`` are
    sparse values of one shape, some possibly :class:`Broadcast`; the smallest
    materialized one drives and the others are looked up at its entries."""
    ready = [v for v in values if isinstance(v, Sparse)]
    driver = min(ready or values, key=lambda v: v.nnz)
    if isinstance(driver, Broadcast):
        driver = driver.materialize(budget)
    keep = np.arange(driver.nnz, dtype=I64)
    found: dict[int, np.ndarray] = {}
    for n, v in enumerate(values):
        if v is driver or (isinstance(v, Broadcast) and v._done is driver):
            continue
        if driver.shape:
            present, pos = v.find(tuple(c[keep] for c in driver.coords))
        else:  # 0-d: the one coordinate is stored by v or not
            present = np.full(keep.shape[0], v.nnz > 0 if isinstance(v, Sparse) else
                              v.base.nnz > 0)
            pos = np.zeros(keep.shape[0], I64)
        for m in found:
            found[m] = found[m][present]
        found[n] = pos[present]
        keep = keep[present]
    out = []
    for n, v in enumerate(values):
        if n in found:
            base = v.base if isinstance(v, Broadcast) else v
            out.append(base.vals[found[n]])
        else:
            out.append(driver.vals[keep])
    return driver.keys[keep], out

"""Gather: the shape operator whose backward map reads index arrays (NumPy's integer-array
indexing, ``take``, ``compress`` and boolean masks — ``spec.fancy`` builds them on it).

A closed-form entry (``ShapeOp``) maps coordinates by index expressions; gather's map reads
*data* — dense integer arrays that are inputs of the program — the way a compressed level's
coordinate is read from its ``crd`` array. With index arrays ``idx_0 .. idx_{m-1}`` of one
shape ``B`` applied to axes ``a_0 < .. < a_{m-1}`` of ``arg``::

    out[k_pre, kb, k_post] = arg[i]   where  i[a_j] = norm_j(idx_j[kb])
                                      and the other axes of i are k_pre, k_post in order

``kb`` ranges over ``B`` and its axes sit where ``a_0`` was (``k_pre`` are the output
coordinates of the axes before ``a_0``). ``norm_j(v) = v + n_j`` for ``v < 0``, else ``v``,
with ``n_j`` the size of axis ``a_j``; a value outside ``[-n_j, n_j)`` is invalid data
(:class:`InvalidIndex`, an ``IndexError``). Duplicates are allowed: two output coordinates
then read one element. The *forward* direction is a relation, not a map: an input
coordinate ``c`` on ``a_j`` goes to every ``kb`` with ``norm_j(idx_j[kb]) == c`` — kernels
build that inverse per call as a counting structure (``compiler/run/gather.py``).

What is proved about it (``verify/gather.py``) is what holds for every index array once the
range check passed: the backward map is in bounds; and, for one axis, output order follows
input order exactly when the index array is non-decreasing (checked at run time).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sparsefold.spec.errors import IllFormedIndex, IllFormedProgram, InvalidIndex
from sparsefold.spec.ir import Node, normalize_axis, require_equal, show_shape

__all__ = ["Gather", "normalize_indices"]


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Gather(Node):
    """``arg`` with axes ``axes`` replaced by the axes of the index arrays ``indices`` (one
    per axis, all of one shape, integer dtype): see the module docstring."""

    arg: Node
    indices: tuple[Node, ...]
    axes: tuple[int, ...]

    def operands(self):
        return (self.arg,) + self.indices

    def __post_init__(self):
        if not isinstance(self.arg, Node) or not isinstance(self.indices, tuple) or not all(
                isinstance(i, Node) for i in self.indices):
            raise IllFormedProgram("gather: expected an array and a tuple of index arrays")
        if not self.indices or len(self.indices) != len(self.axes):
            raise IllFormedProgram(f"gather: expected one index array per axis, found "
                                   f"{len(self.indices)} for axes {self.axes}")
        axes = tuple(normalize_axis(a, self.arg.ndim, what="gather axis") for a in self.axes)
        if list(axes) != sorted(set(axes)):
            raise IllFormedIndex(f"gather: axes must be distinct and increasing, found {axes}")
        object.__setattr__(self, "axes", axes)
        first = self.indices[0]
        for ix in self.indices:
            if ix.dtype.kind not in "iu":
                raise IllFormedIndex(f"arrays used as indices must be of integer (or boolean) "
                                     f"type, found {ix.dtype}")
            if ix.ndim != first.ndim:
                raise IllFormedProgram(f"gather: index arrays must have one shape, found "
                                       f"{show_shape(first.shape)} and {show_shape(ix.shape)}")
            for a, b in zip(first.shape, ix.shape):
                require_equal(a, b, "gather: index array shapes")
        s = self.arg.shape
        self._set(s[:axes[0]] + first.shape + tuple(
            n for d, n in enumerate(s) if d > axes[0] and d not in axes), self.arg.dtype)

    @property
    def index_shape(self):
        return self.indices[0].shape

    def source(self, out: tuple, reads: tuple) -> tuple:
        """The backward map: the input coordinate of output coordinate ``out`` (a tuple of
        coordinates or coordinate arrays), ``reads[j]`` being ``norm_j(idx_j[kb])``."""
        a0, nb = self.axes[0], len(self.index_shape)
        rest = iter(out[:a0] + out[a0 + nb:])
        return tuple(reads[self.axes.index(d)] if d in self.axes else next(rest)
                     for d in range(self.arg.ndim))


def normalize_indices(values: np.ndarray, n: int, axis: int) -> np.ndarray:
    """``norm`` of the module docstring over an index array (int64), or
    :class:`InvalidIndex` naming the first value out of range."""
    v = np.asarray(values)
    if v.dtype.kind not in "iu":
        raise InvalidIndex(f"arrays used as indices must be of integer type, found {v.dtype}")
    if v.dtype.kind == "u" and v.size and int(v.max()) >= n:  # before a cast could wrap it
        raise InvalidIndex(f"index {int(v.max())} is out of bounds for axis {axis} with "
                           f"size {n}")
    v = v.astype(np.int64, copy=False)
    bad = (v < -n) | (v >= n)
    if bad.any():
        raise InvalidIndex(f"index {int(v[bad].flat[0])} is out of bounds for axis {axis} "
                           f"with size {n}")
    return np.where(v < 0, v + n, v)

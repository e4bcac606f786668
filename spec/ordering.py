"""Orderings and scans: nodes whose output reorders, ranks or accumulates along an axis
(the array API's ``sort``, ``argsort``, ``searchsorted``, ``cumulative_sum``/``_prod``).

Like :class:`~sparsefold.spec.ops_gather.Gather`, these are not shape-operator entries: which
element lands where depends on the *values*, so no index expression states it. Each node's
docstring is its meaning, stated once; the interpreter evaluates it with NumPy on dense
arrays (``interp.evaluate``), and a compiled program is *staged* at these nodes
(``sparsefold.staging``): the operand is computed by a kernel, the node runs over its
storage — a sparse operand stays sparse where the result is — and the rest of the program
reads the result as an input.

Order is NumPy's: ascending, NaN after every number (complex: lexicographic, real part
first; NaN components last); ``descending`` is the ascending order reversed for values,
and for indices the order that keeps equal elements in their original order (the standard's
stable descending sort). The standard leaves NaN and signed-zero placement to the
implementation; this is it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sparsefold.spec.errors import IllFormedProgram
from sparsefold.spec.functions import Monoid, check_dtype, get_monoid
from sparsefold.spec.ir import Node, normalize_axis, show_shape
from sparsefold.spec.sizes import add

__all__ = ["Sort", "ArgSort", "SearchSorted", "Scan", "ORDERING_NODES", "INDEX_DTYPE"]

INDEX_DTYPE = np.dtype(np.int64)  # the standard's default index dtype


def _sortable(node: Node, what: str) -> None:
    if node.dtype.kind not in "biufc":
        raise IllFormedProgram(f"{what}: cannot order {node.dtype}")


def _flag(value, what: str) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise IllFormedProgram(f"{what} must be True or False, found {value!r}")
    return bool(value)


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Sort(Node):
    """``arg`` sorted along ``axis`` (``np.sort``; ``descending``: that reversed along the
    axis). Same shape and dtype. A sparse ``arg`` sorts to a sparse result with the same
    nonzeros: the negative ones first, then every zero, then the positive ones and NaN."""

    arg: Node
    axis: int = -1
    descending: bool = False

    def operands(self): return (self.arg,)

    def __post_init__(self):
        if self.arg.ndim == 0:
            raise IllFormedProgram("sort: expected an array of 1 or more dimensions, found 0-d")
        object.__setattr__(self, "axis", normalize_axis(self.axis, self.arg.ndim,
                                                        what="sort axis"))
        object.__setattr__(self, "descending", _flag(self.descending, "sort descending"))
        _sortable(self.arg, "sort")
        self._set(self.arg.shape, self.arg.dtype)


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class ArgSort(Node):
    """The int64 indices along ``axis`` that sort ``arg`` (``np.argsort(kind="stable")``):
    ``take_along_axis(arg, argsort(arg), axis)`` is ``sort(arg)``. Equal elements keep their
    original relative order, also when ``descending`` (``n - 1 - flip(argsort(flip(arg)))``
    along the axis). The result is dense: every position holds an index."""

    arg: Node
    axis: int = -1
    descending: bool = False

    def operands(self): return (self.arg,)

    def __post_init__(self):
        if self.arg.ndim == 0:
            raise IllFormedProgram("argsort: expected an array of 1 or more dimensions, "
                                   "found 0-d")
        object.__setattr__(self, "axis", normalize_axis(self.axis, self.arg.ndim,
                                                        what="argsort axis"))
        object.__setattr__(self, "descending", _flag(self.descending, "argsort descending"))
        _sortable(self.arg, "argsort")
        self._set(self.arg.shape, INDEX_DTYPE)


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class SearchSorted(Node):
    """For each element ``v`` of ``values``, the int64 position in the 1-d ascending
    ``sorted`` where ``v`` would be inserted (``np.searchsorted``): ``side="left"``, the
    count of elements ``< v``; ``"right"``, of elements ``<= v`` (NaN counts as the
    largest). Shape of ``values``. ``sorted`` not being sorted is the data's fault; the
    result is then unspecified, as the standard says."""

    sorted: Node
    values: Node
    side: str = "left"

    def operands(self): return (self.sorted, self.values)

    def __post_init__(self):
        if self.sorted.ndim != 1:
            raise IllFormedProgram(f"searchsorted: x1 must be 1-d, found shape "
                                   f"{show_shape(self.sorted.shape)}")
        if self.side not in ("left", "right"):
            raise IllFormedProgram(f"searchsorted: side must be 'left' or 'right', found "
                                   f"{self.side!r}")
        _sortable(self.sorted, "searchsorted")
        _sortable(self.values, "searchsorted")
        self._set(self.values.shape, INDEX_DTYPE)


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Scan(Node):
    """The running reduction of ``arg`` along ``axis`` with a monoid (sum or prod):
    ``out[..., j, ...] = combine(arg[..., 0, ...], ..., arg[..., j, ...])``
    (``np.cumsum``/``np.cumprod``), in ``dtype`` (the monoid's result dtype for ``arg``
    when None, as ``sum``). ``include_initial``: the identity first, one element longer."""

    arg: Node
    axis: int
    monoid: Monoid
    dtype_request: np.dtype | None = None
    include_initial: bool = False

    def operands(self): return (self.arg,)

    def __post_init__(self):
        m = get_monoid(self.monoid)
        if m.name not in ("sum", "prod"):
            raise IllFormedProgram(f"scan: expected the sum or prod monoid, found {m}")
        object.__setattr__(self, "monoid", m)
        if self.arg.ndim == 0:
            raise IllFormedProgram("cumulative: expected an array of 1 or more dimensions, "
                                   "found 0-d")
        object.__setattr__(self, "axis", normalize_axis(self.axis, self.arg.ndim,
                                                        what=f"cumulative_{m} axis"))
        req = None if self.dtype_request is None else check_dtype(self.dtype_request)
        object.__setattr__(self, "dtype_request", req)
        object.__setattr__(self, "include_initial",
                           _flag(self.include_initial, "include_initial"))
        shape = list(self.arg.shape)
        if self.include_initial:
            shape[self.axis] = add(shape[self.axis], 1)
        self._set(tuple(shape), m.result_dtype(self.arg.dtype, req))

    def params(self):
        return {"axis": self.axis, "monoid": self.monoid.name,
                "include_initial": self.include_initial}


ORDERING_NODES = (Sort, ArgSort, SearchSorted, Scan)

"""Leaves and compute nodes: Input, Literal, Map, Reduce.

Contraction is not a node: ``A @ B`` is ``Reduce(sum, Map(multiply, A[:, :, None],
B[None]))`` — the front end builds it, and the engines recognise the pattern.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from sparsefold.spec.errors import IllFormedProgram, InvalidData
from sparsefold.spec.formats import Format, named_format
from sparsefold.spec.functions import ElementwiseFunction, Monoid, check_dtype, get_monoid
from sparsefold.spec.ir import Node, broadcast_shapes, normalize_axis, show_shape
from sparsefold.spec.sizes import Expr, ExprLike, as_expr, check_symbol_name, const_value, product

__all__ = ["Input", "Literal", "SizeOf", "Iota", "Map", "Reduce", "symbolic_input"]

INTP = np.dtype(np.intp)


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Input(Node):
    """A named array: shape of ints or size symbols (non-negative), dtype, storage format."""

    name: str
    shape: tuple[Expr, ...]
    dtype: np.dtype
    format: Format

    def __post_init__(self):
        check_symbol_name(self.name, what="input name")
        shape = tuple(as_expr(n) for n in self.shape)
        for n in shape:
            v = const_value(n)
            if v is not None and v < 0:
                raise IllFormedProgram(
                    f"input {self.name!r}: sizes must be non-negative, found {show_shape(shape)}")
        fmt = self.format
        fmt = named_format(fmt, len(shape)) if not isinstance(fmt, Format) else fmt
        if fmt.ndim != len(shape):
            raise IllFormedProgram(
                f"input {self.name!r}: format {fmt} stores {fmt.ndim}-d arrays, "
                f"found shape {show_shape(shape)}")
        object.__setattr__(self, "format", fmt)
        self._set(shape, check_dtype(self.dtype, what=f"input {self.name!r}"))


def symbolic_input(name: str, *shape: ExprLike, fmt: str = "dense",
                   dtype: str = "float64") -> Input:
    """An input with (symbolic) sizes: ``symbolic_input("A", "I", "J")`` is
    ``A: float64[I, J]`` (operator configurations and examples are built on these)."""
    return Input(name, tuple(as_expr(n) for n in shape), np.dtype(dtype), fmt)


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Literal(Node):
    """A scalar constant. ``weak`` literals (from Python scalars) follow NEP 50: they take
    the dtype of the array they meet (``float32_array * 2`` stays float32)."""

    value: Any
    weak: bool = True

    def __post_init__(self):
        if isinstance(self.value, np.generic):
            object.__setattr__(self, "weak", False)
        elif not isinstance(self.value, (bool, int, float, complex)):
            raise IllFormedProgram(f"expected a scalar, found {self.value!r}")
        self._set((), check_dtype(np.asarray(self.value).dtype, what="scalar"))

    def _key(self) -> tuple:
        # NaN != NaN, but two NaN literals of one dtype are the same program
        v = self.value
        same = ("nan", type(v).__name__) if isinstance(v, (float, np.floating)) and v != v \
            else (type(v).__name__, v)
        return (type(self), same, self.weak, self.dtype)

    def probe(self) -> Any:
        """What NumPy should see for type promotion: the Python scalar, or a typed one."""
        return self.value if self.weak else np.asarray(self.value).dtype

    def typed_value(self) -> Any:
        """The value as NumPy computes with it: weak, a Python scalar (NEP 50); strong, a
        0-d array of its dtype."""
        return self.value if self.weak else np.asarray(self.value, self.dtype)


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class SizeOf(Node):
    """The value of a size expression (``I*J``: how many elements a mean divides by), as a
    0-d intp array. A strong scalar: it is a NumPy integer in NumPy's own definitions
    (``np.mean`` divides by ``np.intp(count)``). Sizes stay symbolic until a call binds
    them, so the count of a traced program is this node, not a literal."""

    size: Expr

    def __post_init__(self):
        object.__setattr__(self, "size", as_expr(self.size))
        self._set((), INTP)


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Iota(Node):
    """The coordinate along ``axis`` of an array of ``shape`` (intp): element ``k`` is
    ``k[axis]`` — ``np.indices(shape)[axis]``. What argmax/argmin return is read from it."""

    target: tuple[Expr, ...]
    axis: int

    def __post_init__(self):
        shape = tuple(as_expr(n) for n in self.target)
        object.__setattr__(self, "target", shape)
        object.__setattr__(self, "axis", normalize_axis(self.axis, len(shape),
                                                        what="iota axis"))
        self._set(shape, INTP)


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Map(Node):
    """``fn`` applied elementwise to ``args`` broadcast together (NumPy's rules)."""

    fn: ElementwiseFunction
    args: tuple[Node, ...]

    def operands(self): return self.args

    def __post_init__(self):
        if len(self.args) != self.fn.arity:
            raise IllFormedProgram(
                f"{self.fn.name} takes {self.fn.arity} arguments, found {len(self.args)}")
        for a in self.args:
            if not isinstance(a, Node):
                raise IllFormedProgram(f"{self.fn.name}: expected arrays, found {a!r}")
        shape = broadcast_shapes(*(a.shape for a in self.args))
        probes = tuple(a.probe() if isinstance(a, Literal) else a.dtype for a in self.args)
        if all(isinstance(a, Literal) and a.weak for a in self.args):
            probes = tuple(a.dtype for a in self.args)
        self._set(shape, self.fn.result_dtype(probes))

    def params(self):
        return {"fn": self.fn.name}


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Reduce(Node):
    """Combine ``arg`` over ``axes`` with a monoid (sum, prod, max, min, any, all; given as
    a :class:`Monoid` or its name).

    Reducing over a 0-length axis gives the monoid's identity; max/min have none, so that is
    ill-formed when the size is known (NumPy raises too). ``dtype`` is the accumulator and
    result dtype (NumPy's default: platform int for integer sums)."""

    arg: Node
    axes: tuple[int, ...]
    monoid: Monoid
    dtype_request: np.dtype | None = None

    def operands(self): return (self.arg,)

    def __post_init__(self):
        m = get_monoid(self.monoid)
        object.__setattr__(self, "monoid", m)
        nd = self.arg.ndim
        axes = tuple(sorted(normalize_axis(a, nd, what=f"{self.monoid} axis") for a in self.axes))
        if len(set(axes)) != len(axes):
            raise IllFormedProgram(
                f"{self.monoid}: expected distinct axes, found a repeated axis in {self.axes}")
        object.__setattr__(self, "axes", axes)
        if m.identity is None:
            for a in axes:
                if const_value(self.arg.shape[a]) == 0:
                    raise IllFormedProgram(
                        f"{self.monoid}: zero-size reduction over axis {a} of shape "
                        f"{show_shape(self.arg.shape)}; {self.monoid} has no identity")
        req = None if self.dtype_request is None else check_dtype(self.dtype_request)
        object.__setattr__(self, "dtype_request", req)
        shape = tuple(n for d, n in enumerate(self.arg.shape) if d not in axes)
        self._set(shape, m.result_dtype(self.arg.dtype, req))

    def extent(self) -> Expr:
        """How many elements are combined into each output element."""
        return product(self.arg.shape[a] for a in self.axes)

    def check_extent(self, extent: int) -> None:
        """:class:`InvalidData` when, with sizes bound, ``extent`` is 0 and the monoid has
        no identity: max/min of nothing has no value (a symbolic axis bound to 0)."""
        if extent == 0 and self.monoid.identity is None:
            raise InvalidData(f"{self.monoid} over a zero-length axis has no value "
                              f"(no identity)")

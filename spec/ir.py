"""The IR's base classes and the shape-operator entry (DESIGN §1, "operators are defined once").

Every node is a frozen, slotted dataclass whose invariants are checked in ``__post_init__``;
a node that exists is well-formed. Each node knows its ``shape`` (a tuple of size
expressions) and ``dtype`` (a NumPy dtype). Equality is structural; hashes are cached so
programs that share subtrees hash in linear time.

A **shape operator** is a :class:`ShapeOp` subclass. Its entry is the set of methods below,
written side by side in one class:

======================  ==================================================================
``check(shapes)``        well-formedness of the parameters against operand shapes
``shape_rule(shapes)``   output sizes from operand sizes
``pieces(shapes)``       per operand: guard and backward map (output coordinate → operand
                         coordinate), forward guard and forward map (operand → output)
``fill``                 the value of output coordinates no piece covers (``pad``), else None
``requires(shapes)``     preconditions on symbolic sizes (e.g. an index < its axis size)
======================  ==================================================================

and, so that a new operator is one entry and nothing else, how it is checked and shown
(classmethods; a user's entry may leave them out):

==========================  ==============================================================
``configurations()``         instances on symbolic inputs the verifier proves the entry on
``examples()``               ``(how a user writes it, instance)`` for the language reference
``random_row()``             how random programs draw it (a :class:`RandomRow`), or None
==========================  ==============================================================

Coordinates are the symbols ``_k0.._k{n-1}`` (output) and ``_i0.._i{m-1}`` (operand). The
meaning of every shape operator is then the same gather (DESIGN §2)::

    out[k] = operand_p[backward_p(k)]   for the piece p whose guard_p(k) holds
    out[k] = fill                        when no guard holds

The interpreter evaluates exactly that; the compiler iterates the forward maps; the
verifier proves that the two directions are inverse, in bounds, and order-preserving.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from sparsefold.spec.errors import (
    IllFormedArgument,
    IllFormedIndex,
    IllFormedProgram,
    InternalError,
)
from sparsefold.spec.sizes import TRUE, Const, Expr, as_expr, assume_equal, definitely_equal

__all__ = ["Node", "ShapeOp", "Piece", "IndexMap", "RandomRow", "Shape", "normalize_axis",
           "show_shape", "require_equal", "broadcast_shapes"]

Shape = tuple[Expr, ...]


class Node:
    """Base of IR nodes. Subclasses are ``@dataclass(frozen=True, slots=True, eq=False)``."""

    __slots__ = ("shape", "dtype", "_hash")

    def operands(self) -> tuple[Node, ...]:
        """The nodes this node reads, in order."""
        return ()

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def _key(self) -> tuple:
        return (type(self),) + tuple(getattr(self, f.name) for f in dataclasses.fields(self))

    def __eq__(self, other: object) -> bool:
        if self is other:
            return True
        if type(self) is not type(other) or hash(self) != hash(other):
            return False
        return self._key() == other._key()

    def __hash__(self) -> int:
        try:
            return self._hash
        except AttributeError:
            h = hash(self._key())
            object.__setattr__(self, "_hash", h)
            return h

    def _set(self, shape: Shape, dtype: np.dtype) -> None:
        object.__setattr__(self, "shape", tuple(as_expr(s) for s in shape))
        object.__setattr__(self, "dtype", np.dtype(dtype))

    def params(self) -> dict[str, Any]:
        """Non-operand fields, for printing."""
        ops = {id(o) for o in self.operands()}
        out = {}
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            if id(v) in ops or (isinstance(v, tuple) and v and all(id(x) in ops for x in v)):
                continue
            out[f.name] = v
        return out

    def __repr__(self) -> str:
        from sparsefold.spec.printer import show_program
        return show_program(self)


@dataclass(frozen=True, slots=True)
class Piece:
    """How one operand contributes to a shape operator's output.

    ``guard`` and ``backward`` are over output coordinates ``_k*``; ``forward_guard`` and
    ``forward`` over the operand's coordinates ``_i*``. A ``None`` in ``forward`` means the
    output coordinate is free (broadcast: every value receives the operand's element).
    """

    operand: int
    guard: Expr
    backward: tuple[Expr, ...]
    forward_guard: Expr
    forward: tuple[Expr | None, ...]


@dataclass(frozen=True, slots=True)
class IndexMap:
    """A shape operator instantiated on its operands' shapes: everything the engines read."""

    out_shape: Shape
    in_shapes: tuple[Shape, ...]
    pieces: tuple[Piece, ...]
    fill: Any = None
    requires: Expr = TRUE


@dataclass(frozen=True, slots=True)
class RandomRow:
    """How random programs (``sparsefold.verify.programs``) draw an operator.

    ``applies(shape, limits)``: whether it can take an operand of ``shape``;
    ``draw(draw, st, shape, limits)``: its parameters, with Hypothesis's ``draw`` and ``st``
    (Hypothesis's strategies and ``sparsefold.verify.strategies``), including
    ``"operands"``: the shapes of further operands; ``build(*operands, **params)``: the
    node, over spec nodes; ``source``: how it prints, a format string over ``{0}, {1}, ...``
    and the parameters, or a function ``(operand texts, params) -> text``. ``limits`` has
    ``max_dims`` and ``max_side``."""

    name: str
    applies: Callable[..., bool]
    draw: Callable[..., dict]
    build: Callable[..., Node]
    source: str | Callable[[list[str], dict], str]


class ShapeOp(Node):
    """Base of shape operators; see the module docstring for the entry's parts."""

    __slots__ = ()
    fill: Any = None  # overridden by pad

    # --- the entry (subclasses define these) -----------------------------------------------
    def check(self, shapes: tuple[Shape, ...]) -> None:
        """Raise :class:`IllFormedProgram` unless the parameters fit the operand shapes."""

    def shape_rule(self, shapes: tuple[Shape, ...]) -> Shape:
        raise NotImplementedError

    def pieces(self, shapes: tuple[Shape, ...]) -> tuple[Piece, ...]:
        raise NotImplementedError

    def requires(self, shapes: tuple[Shape, ...]) -> Expr:
        return TRUE

    def result_dtype(self) -> np.dtype:
        return self.operands()[0].dtype

    @classmethod
    def configurations(cls) -> Iterable[ShapeOp]:
        """Instances on symbolic inputs covering the entry's discrete structure (ranks,
        axes, steps, number of operands), every size a symbol: what the verifier proves."""
        return ()

    @classmethod
    def examples(cls) -> list[tuple[str, ShapeOp]]:
        """``(how a user writes it, the instance)`` pairs for the language reference."""
        return []

    @classmethod
    def random_row(cls) -> RandomRow | None:
        """How random programs draw this operator; None when another entry's row draws it
        (split: reshape, on collapse) or it is not drawn."""
        return None

    # --- shared machinery ---------------------------------------------------------------
    def __post_init__(self) -> None:
        for o in self.operands():
            if not isinstance(o, Node):
                raise IllFormedProgram(
                    f"{type(self).__name__}: operands must be arrays, found {o!r}")
        shapes = tuple(o.shape for o in self.operands())
        self.check(shapes)
        self._set(self.shape_rule(shapes), self.result_dtype())

    def index_map(self) -> IndexMap:
        shapes = tuple(o.shape for o in self.operands())
        pieces = self.pieces(shapes)
        for p in pieces:
            if len(p.backward) != len(shapes[p.operand]) or len(p.forward) != self.ndim:
                raise InternalError(f"{type(self).__name__}: piece arity does not match shapes")
        return IndexMap(self.shape, shapes, pieces, self.fill, self.requires(shapes))


def normalize_axis(axis: Any, ndim: int, *, what: str = "axis") -> int:
    """NumPy's axis convention: ``-ndim <= axis < ndim``; negative counts from the end."""
    if isinstance(axis, np.ndarray) and axis.ndim == 0 and axis.dtype.kind in "iu":
        axis = int(axis)
    if isinstance(axis, (bool, np.bool_)) or not isinstance(axis, (int, np.integer)):
        raise IllFormedArgument(f"{what} must be an integer, found {axis!r}")
    if not -ndim <= axis < ndim:
        raise IllFormedIndex(
            f"{what} {axis} is out of bounds for an array with {ndim} dimensions")
    return int(axis) % ndim if ndim else 0


def _broadcast_pair(a: Expr, b: Expr) -> Expr | None:
    if definitely_equal(a, b) or b == Const(1):
        return a
    if a == Const(1):
        return b
    if assume_equal(a, b):  # tracing: equal sizes assumed, checked when the kernel runs
        return a
    return None


def broadcast_shapes(*shapes: Shape) -> Shape:
    """NumPy's broadcasting rule: align on the right; sizes equal, or one of them is 1.

    Symbolic sizes broadcast only when provably equal (``I`` with ``I``) or against 1."""
    ndim = max((len(s) for s in shapes), default=0)
    out: list[Expr] = [Const(1)] * ndim
    for s in shapes:
        for d, size in enumerate(s, start=ndim - len(s)):
            merged = _broadcast_pair(out[d], as_expr(size))
            if merged is None:
                found = ", ".join(show_shape(x) for x in shapes)
                raise IllFormedProgram(
                    f"shapes {found} cannot be broadcast: axis {d - ndim} has sizes "
                    f"{out[d]} and {size}; expected them equal or one of them 1")
            out[d] = merged
    return tuple(out)


def show_shape(shape: Shape) -> str:
    return "(" + ", ".join(str(s) for s in shape) + ("," if len(shape) == 1 else "") + ")"


def require_equal(a: Expr, b: Expr, what: str) -> None:
    """Sizes that must be equal: decided on normal forms; unknown counts as unequal (or,
    while tracing, becomes an assumption checked when the kernel runs: ``sizes.assuming``)."""
    if not definitely_equal(a, b) and not assume_equal(a, b):
        raise IllFormedProgram(f"{what}: expected equal sizes, found {a} and {b}")

"""The three kinds of error (DESIGN §6): who is at fault is part of the type.

* :class:`IllFormedProgram` — the program is wrong (shape, dtype, format or parameter
  mismatch). Raised when the program is *built*, before anything runs. Two subclasses are
  also the Python errors NumPy raises for the same mistake, so code that catches those
  still works: :class:`IllFormedIndex` (an ``IndexError``) and :class:`IllFormedArgument`
  (a ``TypeError``).
* :class:`InvalidData` — the program is fine but the data handed to it is not (a malformed
  CSR, an array whose shape contradicts a size already bound, ...). Its subclass
  :class:`InvalidIndex` (an ``IndexError``) is an index array whose values are out of range.
* :class:`InternalError` — sparsefold's own bug.

Messages state what was expected and what was found; tests match a stable piece of them.
"""

from __future__ import annotations

__all__ = ["SparsefoldError", "IllFormedProgram", "IllFormedIndex", "IllFormedArgument",
           "InvalidData", "InvalidIndex", "InternalError"]


class SparsefoldError(Exception):
    """Base class of every error sparsefold raises on purpose."""


class IllFormedProgram(SparsefoldError, ValueError):
    """The program is not well-formed: a shape, dtype, format or parameter mismatch."""


class IllFormedIndex(IllFormedProgram, IndexError):
    """An ill-formed program that indexes outside an array: an index or axis out of
    bounds, too many indices, an index of a kind that is not one (NumPy raises
    ``IndexError``, or ``AxisError``, which is one too)."""


class IllFormedArgument(IllFormedProgram, TypeError):
    """An ill-formed program with an argument of the wrong type (``axis=1.5``, a set of
    axes): NumPy raises ``TypeError``."""


class InvalidData(SparsefoldError, ValueError):
    """The data given to a well-formed program is invalid (malformed storage, wrong shape)."""


class InvalidIndex(InvalidData, IndexError):
    """Invalid data that indexes outside an array: a value of an index array (fancy
    indexing, ``take``) out of range for its axis (NumPy raises ``IndexError``)."""


class InternalError(SparsefoldError, RuntimeError):
    """A bug in sparsefold: an invariant that should hold did not."""

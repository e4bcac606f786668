"""The three kinds of error (DESIGN §6): who is at fault is part of the type.

* :class:`IllFormedProgram` — the program is wrong (shape, dtype, format or parameter
  mismatch). Raised when the program is *built*, before anything runs.
* :class:`InvalidData` — the program is fine but the data handed to it is not (a malformed
  CSR, an array whose shape contradicts a size already bound, ...).
* :class:`InternalError` — sparsefold's own bug.

Messages state what was expected and what was found; tests match a stable piece of them.
"""

from __future__ import annotations

__all__ = ["SparsefoldError", "IllFormedProgram", "InvalidData", "InternalError"]


class SparsefoldError(Exception):
    """Base class of every error sparsefold raises on purpose."""


class IllFormedProgram(SparsefoldError, ValueError):
    """The program is not well-formed: a shape, dtype, format or parameter mismatch."""


class InvalidData(SparsefoldError, ValueError):
    """The data given to a well-formed program is invalid (malformed storage, wrong shape)."""


class InternalError(SparsefoldError, RuntimeError):
    """A bug in sparsefold: an invariant that should hold did not."""

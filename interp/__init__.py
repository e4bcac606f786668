"""sparsefold.interp — the dense reference interpreter (DESIGN §2). Imports spec only."""

from sparsefold.interp.evaluate import bind_sizes, densify, evaluate

__all__ = ["evaluate", "bind_sizes", "densify"]

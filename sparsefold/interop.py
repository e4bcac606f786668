"""Recognising user arrays (kept for ``from sparsefold.interop import ...``): the definitions
live in :mod:`sparsefold.storage.describe`."""

from sparsefold.storage.describe import ArrayInfo, describe, is_pydata_sparse, is_scipy_sparse

__all__ = ["ArrayInfo", "describe", "is_scipy_sparse", "is_pydata_sparse"]

"""sparsefold.storage — foreign arrays in, result containers out (DESIGN §1 formats, §6 errors).

Between the language and the engines: imports ``spec`` only; the interpreter and the
compiler both read their inputs and build their results through it, so they accept and
reject the same data and hand back the same containers.
"""

from sparsefold.storage.binding import bind_sizes
from sparsefold.storage.dense import dense_operand, densify
from sparsefold.storage.describe import ArrayInfo, describe, is_pydata_sparse, is_scipy_sparse
from sparsefold.storage.levels import (
    INDEX_DTYPES,
    canonical_order,
    check_supported,
    index_dtypes_of,
    sparse_levels,
    validate_storage,
)
from sparsefold.storage.results import (
    OUT_FORMATS,
    compress,
    from_dense,
    out_format,
    result_container,
    result_library,
    storage_kind,
    wrap_levels,
)

__all__ = [
    "ArrayInfo", "describe", "is_scipy_sparse", "is_pydata_sparse", "bind_sizes", "densify",
    "dense_operand", "sparse_levels", "index_dtypes_of", "check_supported", "validate_storage",
    "canonical_order", "INDEX_DTYPES", "OUT_FORMATS", "out_format", "storage_kind",
    "result_container", "result_library", "compress", "wrap_levels", "from_dense",
]

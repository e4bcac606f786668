"""sparsefold — a formally specified array language for sparse data.

    import sparsefold as sf
    x = sf.asarray(a)                       # NumPy, scipy.sparse or pydata/sparse; no copy
    y = sf.concat([x, x], axis=1)[::2].reshape(-1) * 2 + 1
    y.interpret()                           # reference interpreter -> numpy.ndarray

The language lives in ``sparsefold.spec``, the reference interpreter in
``sparsefold.interp``; this package is the user-facing front end.
"""

from sparsefold.functions import (
                                  abs,
                                  add,
                                  all,
                                  any,
                                  apply,
                                  apply_operator,
                                  broadcast_to,
                                  concat,
                                  divide,
                                  equal,
                                  expand_dims,
                                  greater,
                                  greater_equal,
                                  hstack,
                                  less,
                                  less_equal,
                                  logical_and,
                                  logical_or,
                                  matmul,
                                  max,
                                  maximum,
                                  min,
                                  minimum,
                                  moveaxis,
                                  multiply,
                                  negative,
                                  not_equal,
                                  pad,
                                  permute_dims,
                                  pow,
                                  prod,
                                  reshape,
                                  squeeze,
                                  stack,
                                  subtract,
                                  sum,
                                  tensordot,
                                  vstack,
                                  where,
)
from sparsefold.jit import jit, show
from sparsefold.lazy import LazyArray, asarray, symbol
from sparsefold.spec.errors import IllFormedProgram, InternalError, InvalidData, SparsefoldError
from sparsefold.spec.functions import register_function

__version__ = "0.1.0"

__all__ = [
    "LazyArray", "asarray", "symbol", "register_function", "jit", "show",
    "concat", "stack", "hstack", "vstack", "reshape", "permute_dims", "moveaxis",
    "expand_dims", "squeeze", "broadcast_to", "pad", "sum", "prod", "max", "min", "any", "all",
    "matmul", "tensordot", "add", "subtract", "multiply", "divide", "pow", "maximum",
    "minimum", "where", "abs", "negative", "less", "less_equal", "greater", "greater_equal",
    "equal", "not_equal", "logical_and", "logical_or", "apply", "apply_operator",
    "SparsefoldError", "IllFormedProgram", "InvalidData", "InternalError",
]

"""sparsefold — a formally specified array language for sparse data.

    import sparsefold as sf
    x = sf.asarray(a)                       # NumPy, scipy.sparse or pydata/sparse; no copy
    y = sf.concat([x, x], axis=1)[::2].reshape(-1) * 2 + 1
    y.interpret()                           # reference interpreter -> numpy.ndarray

The language lives in ``sparsefold.spec``, the reference interpreter in
``sparsefold.interp``; this package is the user-facing front end.
"""

from sparsefold.elementwise import ELEMENTWISE as _ELEMENTWISE
from sparsefold.elementwise import astype, clip, round
from sparsefold.functions import (
                                  abs,
                                  add,
                                  all,
                                  any,
                                  apply,
                                  apply_operator,
                                  argwhere,
                                  block_array,
                                  broadcast_to,
                                  compress,
                                  concat,
                                  diagonal,
                                  diff,
                                  divide,
                                  dot,
                                  einsum,
                                  equal,
                                  expand_dims,
                                  flip,
                                  greater,
                                  greater_equal,
                                  hstack,
                                  less,
                                  less_equal,
                                  logical_and,
                                  logical_or,
                                  matmul,
                                  matrix_transpose,
                                  max,
                                  maximum,
                                  min,
                                  minimum,
                                  moveaxis,
                                  multiply,
                                  negative,
                                  nonzero,
                                  not_equal,
                                  outer,
                                  pad,
                                  permute_dims,
                                  pow,
                                  prod,
                                  repeat,
                                  reshape,
                                  roll,
                                  squeeze,
                                  stack,
                                  subtract,
                                  sum,
                                  swapaxes,
                                  take,
                                  tensordot,
                                  tile,
                                  transpose,
                                  tril,
                                  triu,
                                  unstack,
                                  vecdot,
                                  vstack,
                                  where,
)
from sparsefold.jit import jit, show
from sparsefold.lazy import LazyArray, asarray, symbol
from sparsefold.reductions import (
                                  argmax,
                                  argmin,
                                  count_nonzero,
                                  mean,
                                  nanmax,
                                  nanmean,
                                  nanmin,
                                  nanprod,
                                  nanstd,
                                  nansum,
                                  nanvar,
                                  std,
                                  var,
)
from sparsefold.spec.errors import (
                                  IllFormedArgument,
                                  IllFormedIndex,
                                  IllFormedProgram,
                                  InternalError,
                                  InvalidData,
                                  InvalidIndex,
                                  SparsefoldError,
)
from sparsefold.spec.functions import register_function

__version__ = "0.1.0"

__all__ = [
    "LazyArray", "asarray", "symbol", "register_function", "jit", "show",
    "concat", "stack", "hstack", "vstack", "reshape", "permute_dims", "moveaxis",
    "expand_dims", "squeeze", "broadcast_to", "pad", "sum", "prod", "max", "min", "any", "all",
    "matmul", "tensordot", "add", "subtract", "multiply", "divide", "pow", "maximum",
    "minimum", "where", "abs", "negative", "less", "less_equal", "greater", "greater_equal",
    "equal", "not_equal", "logical_and", "logical_or", "apply", "apply_operator",
    "block_array", "flip", "roll", "swapaxes", "matrix_transpose", "transpose", "tile",
    "repeat", "diagonal", "tril", "triu", "diff", "unstack", "outer", "dot", "vecdot",
    "einsum", "nonzero", "argwhere", "take", "compress", "astype", "clip", "round", "mean",
    "var", "std",
    "argmax", "argmin", "nansum", "nanprod", "nanmax", "nanmin", "nanmean", "nanvar",
    "nanstd", "count_nonzero",
    "SparsefoldError", "IllFormedProgram", "IllFormedIndex", "IllFormedArgument",
    "InvalidData", "InvalidIndex", "InternalError",
]
# the elementwise functions of the array API (and NumPy's spellings): sf.exp, sf.sin, ...
globals().update(_ELEMENTWISE)
__all__ += sorted(_ELEMENTWISE)

# the array API standard's namespace over these arrays (x.__array_namespace__()), importable
# as sparsefold.array_api and reachable as sf.array_api
from sparsefold import array_api  # noqa: E402, F401

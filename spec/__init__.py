"""sparsefold.spec — the language: sizes and index expressions, IR nodes, the shape-operator
table, elementwise functions and monoids, storage formats, and the error classes.

Imports nothing else of sparsefold (DESIGN: ``spec`` ← interp, compiler, verify)."""

# the built-in elementwise functions register themselves in FUNCTIONS (first: every other
# spec module may look them up)
from sparsefold.spec import function_table  # noqa: F401, I001
from sparsefold.spec.compute import Input, Iota, Literal, Map, Reduce, SizeOf
from sparsefold.spec.errors import IllFormedProgram, InternalError, InvalidData, SparsefoldError
from sparsefold.spec.formats import Compressed, Dense, Format, Singleton, named_format
from sparsefold.spec.functions import (
    FUNCTIONS,
    MONOIDS,
    ElementwiseFunction,
    Monoid,
    get_function,
    get_monoid,
    register_function,
)
from sparsefold.spec.ir import IndexMap, Node, Piece, ShapeOp
from sparsefold.spec.ops_axes import (
    BroadcastTo,
    ExpandDims,
    PermuteDims,
    Squeeze,
    broadcast_shapes,
)
from sparsefold.spec.ops_concat import Concat
from sparsefold.spec.ops_diagonal import Diagonal, Triangle
from sparsefold.spec.ops_index import Index, Pad, Slice, normalize_slice
from sparsefold.spec.ops_order import Flip, Roll
from sparsefold.spec.ops_place import Place
from sparsefold.spec.ops_reshape import Collapse, Split, reshape_steps
from sparsefold.spec.printer import show_program, topological

# The shape-operator table: every built-in entry by its language name.
SHAPE_OPERATORS: dict[str, type[ShapeOp]] = {
    "collapse": Collapse, "split": Split, "concat": Concat, "slice": Slice, "index": Index,
    "broadcast_to": BroadcastTo, "expand_dims": ExpandDims, "squeeze": Squeeze,
    "permute_dims": PermuteDims, "pad": Pad, "flip": Flip, "roll": Roll,
    "diagonal": Diagonal, "triangle": Triangle, "place": Place,
}

__all__ = [
    "Input", "Literal", "SizeOf", "Iota", "Map", "Reduce", "Node", "ShapeOp", "Piece",
    "IndexMap", "Collapse", "Split", "Concat", "Slice", "Index", "Pad", "BroadcastTo",
    "ExpandDims", "Squeeze", "PermuteDims", "Flip", "Roll", "Diagonal", "Triangle", "Place",
    "SHAPE_OPERATORS", "broadcast_shapes", "normalize_slice",
    "reshape_steps", "show_program", "topological",
    "Format", "Dense", "Compressed", "Singleton", "named_format",
    "ElementwiseFunction", "Monoid", "FUNCTIONS", "MONOIDS", "get_function", "get_monoid",
    "register_function",
    "SparsefoldError", "IllFormedProgram", "InvalidData", "InternalError",
]

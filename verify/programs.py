"""Small generic operations on programs (kept for ``from sparsefold.verify.programs import
...``): the definitions are :mod:`sparsefold.spec.programs`, shared with the compiler's
optimize pass."""

from sparsefold.spec.programs import (
           as_node,
           input_nodes,
           preconditions,
           rebuild,
           size_parameters,
           substitute_program,
           symbols_of,
)

__all__ = ["substitute_program", "rebuild", "size_parameters", "preconditions", "as_node",
           "symbols_of", "input_nodes"]

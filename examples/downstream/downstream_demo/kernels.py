"""The kernels downstream_demo ships, declared for ahead-of-time compilation.

This module is the *spec*: ``sparsefold aot downstream_demo/kernels.py -o
downstream_demo/_kernels`` (run by ``setup.py`` at build time) compiles every function
below for the signatures listed in its ``@aot.export``. Import the functions from
``downstream_demo`` (which takes them from the built ``_kernels``), not from here: here
they are plain ``sf.jit`` functions that compile on first call.
"""

import sparsefold as sf
from sparsefold import aot

__all__ = ["stack_rows", "row_distance", "slice_matvec", "antisymmetric_part"]


# a shape operation: one kernel that copies both inputs' rows, in two value dtypes
@aot.export(aot.signature(aot.csr("float64"), aot.csr("float64")),
            aot.signature(aot.csr("float32"), aot.csr("float32")))
@sf.jit
def stack_rows(a, b):
    return sf.vstack([a, b])


# a fused computation: |a - b| summed per row, one pass co-iterating both operands, no
# sparse temporary for a - b
@aot.export(aot.signature(aot.csr("float64"), aot.csr("float64")))
@sf.jit(out="dense")
def row_distance(a, b):
    return sf.sum(sf.abs(a - b), axis=1)


# int64 indices, and size arguments: rows start:stop of a times a dense vector, fused (the
# slice is never materialized); one kernel for every start and stop
@aot.export(aot.signature(aot.csr("float64", index="int64"), aot.size("start"),
                          aot.size("stop"), aot.dense("float64")))
@sf.jit(out="dense")
def slice_matvec(a, start, stop, x):
    return a[start:stop] @ x


# a staged program: a.T is reordered into a temporary by a first kernel, then merged
@aot.export(aot.signature(aot.csr("float64")))
@sf.jit
def antisymmetric_part(a):
    return (a - a.T) * 0.5

"""downstream_demo: a tiny package shipping sparse kernels compiled ahead of time with
sparsefold. Its kernels run without Cython or a C compiler on the machine."""

from downstream_demo._kernels import antisymmetric_part, row_distance, slice_matvec, stack_rows

__all__ = ["stack_rows", "row_distance", "slice_matvec", "antisymmetric_part"]

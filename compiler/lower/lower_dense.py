"""Lowering an all-dense program to loop IR: every output coordinate, row-major, its value
computed pointwise from the spec's definitions (``values.py``). Only programs without a
sparse input take this path; programs with one never densify it (``planner.py``)."""

from __future__ import annotations

from sparsefold.compiler.emit.loops import INT, Lit
from sparsefold.compiler.lower.lowering import Lowering
from sparsefold.compiler.lower.outputs import DenseOut
from sparsefold.compiler.lower.values import Values, convert, index
from sparsefold.spec.ir import Node

__all__ = ["lower_dense"]


def lower_dense(low: Lowering, program: Node, asm: DenseOut) -> None:
    b = low.b
    values = Values(b, low.dense, sites=low.sites)
    coords = tuple(b.fresh(f"k{d}") for d in range(program.ndim))
    lin = b.fresh("lin")
    with b.block("every output coordinate in row-major order; lin is its offset"):
        b.assign(lin, Lit("0", INT))
        loops = []
        for d, k in enumerate(coords):
            cm = b.loop(k, 0, index(program.shape[d]))
            cm.__enter__()
            loops.append(cm)
        v = values.value(program, coords)
        b.store(asm.val, lin, convert(v, program.dtype))
        b.assign(lin, lin + 1)
        for cm in reversed(loops):
            cm.__exit__(None, None, None)

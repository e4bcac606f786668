"""The dense kernel: the universal lowering, for any well-formed program.

Every output coordinate is visited and its value computed pointwise (``pointwise.py``) from
dense operands. Sparse inputs are densified before the call (an explicit, documented
fallback). This path exists so that ``sf.jit`` compiles *every* program the interpreter
accepts; programs whose result is sparse take the stream kernels instead (``stream_kernel``),
and this one is chosen only when they do not apply (non-zero fill values, e.g. ``A + 1``).
"""

from __future__ import annotations

from sparsefold.compiler.cnames import array_var, check_compilable_dtype, size_var, storage_ctype
from sparsefold.compiler.pointwise import Body, Pointwise, as_type, expr_c
from sparsefold.compiler.source import Arg, render_module
from sparsefold.spec.compute import Input
from sparsefold.spec.ir import Node
from sparsefold.spec.printer import show_program, topological
from sparsefold.spec.sizes import free_symbols

__all__ = ["dense_kernel_source", "input_size_args"]


def input_size_args(program: Node) -> list[Arg]:
    """One int64 argument per size symbol of the program's inputs, in first-seen order."""
    seen: list[str] = []
    for node in topological(program):
        if isinstance(node, Input):
            for n in node.shape:
                for s in sorted(free_symbols(n)):
                    if s not in seen:
                        seen.append(s)
    return [Arg(size_var(s), "int", ("size", s)) for s in seen]


def dense_kernel_source(program: Node) -> tuple[str, list[Arg]]:
    """Cython text and argument list of a kernel writing ``program`` into a C-contiguous
    dense output. Inputs are dense arrays addressed with element strides."""
    for node in topological(program):
        check_compilable_dtype(node.dtype, f"{type(node).__name__} node")
    inputs = [n for n in topological(program) if isinstance(n, Input)]
    args: list[Arg] = []
    for inp in inputs:
        val = array_var(inp.name, "val")
        args.append(Arg(f"p_{val}", "addr", ("dense", inp.name), storage_ctype(inp.dtype)))
        args += [Arg(array_var(inp.name, f"st{d}"), "int", ("stride", inp.name, d))
                 for d in range(inp.ndim)]
    args += input_size_args(program)
    args.append(Arg("p_out_val", "ptr", ("out", "val"), storage_ctype(program.dtype)))

    body = Body(depth=2)

    def leaf(inp: Input, coords: tuple[str, ...]) -> str:
        offset = " + ".join(f"{c}*{array_var(inp.name, f'st{d}')}"
                            for d, c in enumerate(coords)) or "0"
        return f"{array_var(inp.name, 'val')}[{offset}]"

    pw = Pointwise(body, leaf)
    coords = tuple(body.declare(f"k{d}", "int64_t") for d in range(program.ndim))
    lin = body.declare("lin", "int64_t")
    body.comment("visit every output coordinate in row-major order; lin is its offset")
    body.line(f"{lin} = 0")
    for d, k in enumerate(coords):
        body.line(f"for {k} in range({expr_c(program.shape[d], {})}):")
        body.depth += 1
    v = pw.value(program, coords)
    body.line(f"out_val[{lin}] = {as_type(v, program.dtype)}")
    body.line(f"{lin} = {lin} + 1")
    source = render_module(
        title="dense evaluation (every output coordinate)",
        program_text=show_program(program),
        notes=["Strategy: dense kernel. Sparse inputs were densified before this call."],
        args=args, body=body)
    return source, args

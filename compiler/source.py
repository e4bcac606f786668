"""Assembling a kernel module's Cython text: header, imports, helpers, the ``run`` function.

Every kernel module has one entry point ``run(*args)`` whose arguments are described by a
list of :class:`Arg` — the call (``pipeline.Kernel``) fills them in from the call's arrays, so
generated code and argument preparation cannot disagree. Arrays arrive as raw addresses
(Python ints) and are cast to typed pointers: no memoryviews, whose boilerplate costs seconds
of C compile time per module.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from sparsefold.compiler.build import BUFFER_ADDRESS_PYX, COMPILER_VERSION
from sparsefold.compiler.checks import failure_epilogue
from sparsefold.compiler.pointwise import Body

__all__ = ["Arg", "render_module", "COMPILER_VERSION"]


@dataclass(frozen=True, slots=True)
class Arg:
    """One argument of ``run``: ``kind`` is "ptr" (a contiguous array, passed as the object),
    "addr" (a strided array's element-0 address as an int) or "int" (an int64 value);
    ``source`` says where the runtime finds it, e.g. ("input", "a0", "val"),
    ("size", "n0_1"), ("stride", "a0", 1), ("out", "val"), ("bound", "nnz")."""

    name: str
    kind: str
    source: tuple
    ctype: str = "int64_t"  # pointee type for "ptr", the value type for "int"


def _function(name: str, args: list[Arg], body: Body, returns: str | None) -> list[str]:
    """One ``def``: typed pointers from its array arguments, the body without the GIL."""
    kinds = {"ptr": "object", "addr": "size_t", "int": "int64_t"}
    params = ", ".join(f"{kinds[a.kind]} {a.name}" for a in args)
    casts = []
    for a in args:
        if a.kind == "ptr":  # a contiguous array: its address through the buffer protocol
            writable = "1" if a.source[0] == "out" else "0"
            casts.append(f"    cdef {a.ctype}* {a.name[2:]} = <{a.ctype}*>_sf_address("
                         f"{a.name}, sizeof({a.ctype}), {writable})")
        elif a.kind == "addr":  # a strided array: the address of element 0, as an int
            casts.append(f"    cdef {a.ctype}* {a.name[2:]} = <{a.ctype}*>{a.name}")
    code = [f"def {name}(" + params + "):"]
    code += body.declarations(1) + casts
    _, before, after = failure_epilogue(body)
    code.append("    with nogil:")
    code += ["        " + line for line in before]
    code += body.lines or ["        pass"]
    code += ["    " + line for line in after]
    if returns:
        code.append(f"    return {returns}")
    return code


def render_module(*, title: str, program_text: str, notes: list[str], args: list[Arg],
                  body: Body, returns: str | None = None, helpers: list[str] = (),
                  count: tuple[list[Arg], Body] | None = None) -> str:
    """The whole .pyx text: ``run``, and ``count`` (the exact number of entries ``run``
    will write, for right-sized outputs) when given. Deterministic: same inputs, same
    bytes."""
    code = _function("run", args, body, returns)
    if count is not None:
        code += ["", ""] + _function("count", count[0], count[1], "total")
    checks_text = failure_epilogue(body)[0]
    text_body = "\n".join(code)
    digest = hashlib.sha256((program_text + text_body).encode()).hexdigest()[:16]
    header = [
        "# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True",
        "# cython: initializedcheck=False, nonecheck=False",
        f"# sparsefold kernel: {title}",
        f"# sparsefold compiler {COMPILER_VERSION}; source hash {digest}",
        "#",
        "# Program:",
        *[f"#   {line}" for line in program_text.splitlines()],
        *[f"# {n}" for n in notes],
        "",
        "from libc.stdint cimport int8_t, int16_t, int32_t, int64_t, uint8_t, uint16_t, "
        "uint32_t, uint64_t",
        "from libc.math cimport NAN, INFINITY, fabs, pow",
        "from libc.string cimport memcpy",
        BUFFER_ADDRESS_PYX,
        *helpers,
        *checks_text,
        "",
    ]
    return "\n".join(header) + text_body + "\n"

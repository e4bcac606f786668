"""Assembling a kernel module's Cython text: header, imports, helpers, the ``run`` function.

Every kernel module has one entry point ``run(*args)`` whose arguments are described by a
list of :class:`Arg` — the runtime (``kernel.py``) fills them in from the call's arrays, so
generated code and argument preparation cannot disagree. Arrays arrive as raw addresses
(Python ints) and are cast to typed pointers: no memoryviews, whose boilerplate costs seconds
of C compile time per module.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from sparsefold.compiler.pointwise import Body

__all__ = ["Arg", "render_module", "COMPILER_VERSION"]

COMPILER_VERSION = "0.1.0"


@dataclass(frozen=True, slots=True)
class Arg:
    """One argument of ``run``: ``kind`` is "ptr" (an array's address), "int" (an int64
    value); ``source`` says where the runtime finds it, e.g. ("input", "a0", "val"),
    ("size", "n0_1"), ("stride", "a0", 1), ("out", "val"), ("bound", "nnz")."""

    name: str
    kind: str
    source: tuple
    ctype: str = "int64_t"  # pointee type for "ptr", the value type for "int"


def render_module(*, title: str, program_text: str, notes: list[str], args: list[Arg],
                  body: Body, returns: str | None = None, helpers: list[str] = ()) -> str:
    """The whole .pyx text. Deterministic: same inputs, same bytes."""
    params = ", ".join(f"size_t {a.name}" if a.kind == "ptr" else f"int64_t {a.name}"
                       for a in args)
    casts = [f"    cdef {a.ctype}* {a.name[2:]} = <{a.ctype}*>{a.name}"
             for a in args if a.kind == "ptr"]
    code = ["def run(" + params + "):"]
    code += body.declarations(1) + casts
    code.append("    with nogil:")
    code += body.lines or ["        pass"]
    if returns:
        code.append(f"    return {returns}")
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
        "",
        *helpers,
        "",
    ]
    return "\n".join(header) + text_body + "\n"

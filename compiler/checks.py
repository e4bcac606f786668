"""Coordinate range checks inside kernels: every stored coordinate is tested as it is read.

Kernels have no bounds checks, so a coordinate outside its axis must never reach an index
computation. The runtime (``runtime.py``) checks what is O(rows) — ``pos`` lengths,
monotonicity, ends inside ``crd`` — before the call; the O(nnz) test that each coordinate
lies in ``[0, size)`` is done here, fused with the read that needs it: one unsigned compare
on a value already in a register, instead of separate NumPy passes (``min``, ``max``) over
every index array on every call. A kernel therefore checks exactly the entries it reads (a
strided row slice reads only the rows it keeps); an entry it never reads cannot affect memory
or the result.

A failing check raises :class:`~sparsefold.spec.errors.InvalidData` naming the input array.
"""

from __future__ import annotations

import re

from sparsefold.compiler.cnames import array_var
from sparsefold.compiler.pointwise import Body, expr_c
from sparsefold.spec.compute import Input

__all__ = ["read_coordinate", "copy_coordinates", "RANGE_ERROR_PYX"]

RANGE_ERROR_PYX = '''
cdef int _sf_out_of_range(const char* what, int64_t found, int64_t size) except -1 nogil:
    # a stored coordinate outside its axis: the input is malformed. Raised from the kernel
    # (which releases everything it holds on the way out), never read past.
    with gil:
        from sparsefold.spec.errors import InvalidData
        raise InvalidData(f"{what.decode()} out of range [0, {size}): found {found}")
'''

_SAFE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def _label(leaf: Input, level_no: int) -> str:
    """The array's name in messages: scipy's ``indices`` or ``coords[d]`` (COO)."""
    mode = leaf.format.mode_order[level_no]
    what = f"coords[{mode}]" if leaf.format.name == "coo" else "indices"
    name = leaf.name if _SAFE.match(leaf.name) else "input"
    return f"{name}: {what}"


def _size(leaf: Input, level_no: int) -> str:
    return expr_c(leaf.shape[leaf.format.mode_order[level_no]], {})


def read_coordinate(body: Body, leaf: Input, level_no: int, pos: str, var: str) -> None:
    """``var = crd[pos]``, then the range test (one unsigned compare covers both ends)."""
    body.helpers["range"] = RANGE_ERROR_PYX
    crd = array_var(leaf.name, f"crd{level_no}")
    size = _size(leaf, level_no)
    body.line(f"{var} = {crd}[{pos}]")
    body.line(f"if <uint64_t>{var} >= <uint64_t>{size}: "
              f"_sf_out_of_range(b\"{_label(leaf, level_no)}\", {var}, {size})")


def copy_coordinates(body: Body, leaf: Input, level_no: int, *, dst: str, src_start: str,
                     count: str, shift: str, out_type: str, index_type: str,
                     also: tuple[str, ...] = ()) -> None:
    """``dst[t] = crd[src_start + t] + shift`` for ``t < count``, with the range test folded
    into the copy as an OR of flags; the first bad coordinate is found and reported only
    when the flag is set. The test is done in the index array's own width (``index_type``,
    int32_t or int64_t) against a limit clamped to that width, so the loop stays a
    straight copy that gcc vectorizes (``-fvect-cost-model=cheap`` in ``build.CFLAGS``).
    ``also`` are statements of ``t`` fused into the same loop (a row's values: for short
    rows one loop beats a ``memcpy`` call per array)."""
    body.helpers["range"] = RANGE_ERROR_PYX
    crd = array_var(leaf.name, f"crd{level_no}")
    size = _size(leaf, level_no)
    bits = {"int32_t": 32, "int64_t": 64}[index_type]
    unsigned = f"uint{bits}_t"
    bad, c, lim = (body.declare(f"range_{x}{bits}", unsigned) for x in ("bad", "c", "lim"))
    t = body.declare("t", "int64_t")
    if bits == 32:  # every non-negative int32 is below a size of 2**31 or more
        body.line(f"{lim} = <{unsigned}>({size} if {size} < <int64_t>2147483648 else "
                  f"<int64_t>2147483648)")
    else:
        body.line(f"{lim} = <{unsigned}>{size}")
    body.line(f"{bad} = 0")
    if shift == "0" and out_type == index_type:
        value = f"<{out_type}>{c}"
    elif out_type == index_type:  # same width: the sum wraps in the unsigned type, then casts
        value = f"<{out_type}>({c} + <{unsigned}>({shift}))"
    else:
        value = f"<{out_type}>{crd}[{src_start} + {t}] + <{out_type}>({shift})"
    with body.block(f"for {t} in range({count}):"):
        body.line(f"{c} = <{unsigned}>{crd}[{src_start} + {t}]")
        body.line(f"{bad} = {bad} | ({c} >= {lim})")
        body.line(f"{dst}[{t}] = {value}")
        for stmt in also:
            body.line(stmt)
    with body.block(f"if {bad}:"):
        with body.block(f"for {t} in range({count}):"):
            read_coordinate(body, leaf, level_no, f"{src_start} + {t}", "range_v")
            body.declare("range_v", "int64_t")

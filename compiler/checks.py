"""Coordinate range checks inside kernels: every stored coordinate is tested as it is read.

Kernels have no bounds checks, so a coordinate outside its axis must never reach an index
computation. The runtime (``runtime.py``) checks the ``pos`` arrays — length, starts at 0,
monotone, ends inside ``crd``: O(rows), and what bounds the number of entries any kernel
reads and writes — before the call. The O(nnz) test that each coordinate lies in
``[0, size)`` is done here, fused with the read that needs it: one unsigned compare on a
value already in a register, instead of separate NumPy passes (``min``, ``max``) over every
index array on every call. A kernel therefore checks exactly the entries it reads (a
strided row slice reads only the rows it keeps); an entry it never reads cannot affect
memory or the result.

A failing test does not leave the loop: it records the first failure (site, value, size) in
``sf_bad``/``sf_a``/``sf_b`` and replaces the coordinate by 0, so the hot loops contain no
calls (a call would make gcc assume memory is clobbered and spill accumulators: the SpMV
ran 3x slower). After the loops ``run`` raises :class:`~sparsefold.spec.errors.InvalidData`
naming the array; the partial output is discarded. Coordinate 0 is inside every axis a
kernel indexes with it: the runtime rejects a sparse input that stores entries but has an
empty axis. The number of entries written never depends on coordinate values, so a
replaced coordinate cannot overflow an output either.
"""

from __future__ import annotations

import re

from sparsefold.compiler.cnames import array_var
from sparsefold.compiler.pointwise import Body, expr_c
from sparsefold.spec.compute import Input

__all__ = ["read_coordinate", "copy_coordinates", "failure_epilogue", "FAIL_PY"]

FAIL_PY = '''
def _sf_fail(site, found, size):
    # the first failed range check of the call: which array, what was found
    from sparsefold.spec.errors import InvalidData
    raise InvalidData(f"{_SF_SITES[site - 1]} out of range [0, {size}): found {found}")
'''

_SAFE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def _name(leaf: Input) -> str:
    return leaf.name if _SAFE.match(leaf.name) else "input"


def _site(body: Body, what: str) -> int:
    """Register a check site (the array it reads); its number is what ``sf_bad`` records."""
    sites = body.helpers.setdefault("sites", [])
    for name in ("sf_bad", "sf_a", "sf_b"):
        body.declare(name, "int64_t")
    if what not in sites:
        sites.append(what)
    return sites.index(what) + 1


def failure_epilogue(body: Body) -> tuple[list[str], list[str], list[str]]:
    """(module-level helper text, lines before the loops, lines after the nogil block) for
    a body that registered check sites; empty lists if it registered none."""
    sites = body.helpers.get("sites")
    if not sites:
        return [], [], []
    table = "_SF_SITES = (" + "".join(f"{w!r}, " for w in sites) + ")"
    return ([FAIL_PY, table], ["sf_bad = 0"],
            ["if sf_bad:", "    _sf_fail(sf_bad, sf_a, sf_b)"])


def _label(leaf: Input, level_no: int) -> str:
    """The array's name in messages: scipy's ``indices`` or ``coords[d]`` (COO)."""
    mode = leaf.format.mode_order[level_no]
    what = f"coords[{mode}]" if leaf.format.name == "coo" else "indices"
    return f"{_name(leaf)}: {what}"


def _size(leaf: Input, level_no: int) -> str:
    return expr_c(leaf.shape[leaf.format.mode_order[level_no]], {})


def read_coordinate(body: Body, leaf: Input, level_no: int, pos: str, var: str) -> None:
    """``var = crd[pos]``, then the range test (one unsigned compare covers both ends)."""
    site = _site(body, _label(leaf, level_no))
    crd = array_var(leaf.name, f"crd{level_no}")
    size = _size(leaf, level_no)
    body.line(f"{var} = {crd}[{pos}]")
    with body.block(f"if <uint64_t>{var} >= <uint64_t>{size}:"):
        with body.block("if sf_bad == 0:"):
            body.line(f"sf_bad = {site}")
            body.line(f"sf_a = {var}")
            body.line(f"sf_b = {size}")
        body.line(f"{var} = 0")


def copy_coordinates(body: Body, leaf: Input, level_no: int, *, dst: str, src_start: str,
                     count: str, shift: str, out_type: str, index_type: str,
                     also: tuple[str, ...] = ()) -> None:
    """``dst[t] = crd[src_start + t] + shift`` for ``t < count``, with the range test folded
    into the copy as an OR of flags; the first bad coordinate is found and recorded only
    when the flag is set. The test is done in the index array's own width (``index_type``,
    int32_t or int64_t) against a limit clamped to that width, so the loop stays a
    straight copy that gcc vectorizes (``-fvect-cost-model=cheap`` in ``build.CFLAGS``).
    ``also`` are statements of ``t`` fused into the same loop (a row's values: for short
    rows one loop beats a ``memcpy`` call per array)."""
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
    with body.block(f"if {bad}:"):  # only ever stored, never used as an index: just report
        body.declare("range_v", "int64_t")
        with body.block(f"for {t} in range({count}):"):
            read_coordinate(body, leaf, level_no, f"{src_start} + {t}", "range_v")

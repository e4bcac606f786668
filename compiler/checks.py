"""Coordinate range checks inside kernels: every stored coordinate is tested as it is read.

Kernels have no bounds checks, so a coordinate outside its axis must never reach an index
computation. The runtime (``sparsefold.storage.levels``) checks the ``pos`` arrays — length,
starts at 0, monotone, ends inside ``crd``: O(rows), and what bounds the number of entries
any kernel reads and writes — before the call. The O(nnz) test that each coordinate lies in
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

__all__ = ["read_coordinate", "copy_coordinates", "check_rows_first", "failure_epilogue",
           "FAIL_PY"]

FAIL_PY = '''
def _sf_fail(site, a, b, c):
    # the first failed check of the call: which array, what was found
    from sparsefold.spec.errors import InvalidData
    kind, what = _SF_SITES[site - 1]
    if kind == "pos":
        raise InvalidData(f"{what} is not monotone non-decreasing: row {a} spans [{b}, {c})")
    raise InvalidData(f"{what} out of range [0, {b}): found {a}")
'''

_SAFE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def _name(leaf: Input) -> str:
    return leaf.name if _SAFE.match(leaf.name) else "input"


def _site(body: Body, kind: str, what: str) -> int:
    """Register a check site (kind, the array it reads); its number is what ``sf_bad``
    records."""
    sites = body.helpers.setdefault("sites", [])
    for name in ("sf_bad", "sf_a", "sf_b", "sf_c"):
        body.declare(name, "int64_t")
    if (kind, what) not in sites:
        sites.append((kind, what))
    return sites.index((kind, what)) + 1


def failure_epilogue(body: Body) -> tuple[list[str], list[str], list[str]]:
    """(module-level helper text, lines before the loops, lines after the nogil block) for
    a body that registered check sites; empty lists if it registered none."""
    sites = body.helpers.get("sites")
    if not sites:
        return [], [], []
    table = "_SF_SITES = (" + "".join(f"({k!r}, {w!r}), " for k, w in sites) + ")"
    return ([FAIL_PY, table], ["sf_bad = 0"],
            ["if sf_bad:", "    _sf_fail(sf_bad, sf_a, sf_b, sf_c)"])


def _label(leaf: Input, level_no: int) -> str:
    """The array's name in messages: scipy's ``indices`` or ``coords[d]`` (COO)."""
    mode = leaf.format.mode_order[level_no]
    what = f"coords[{mode}]" if leaf.format.name == "coo" else "indices"
    return f"{_name(leaf)}: {what}"


def _size(leaf: Input, level_no: int) -> str:
    return expr_c(leaf.shape[leaf.format.mode_order[level_no]], {})


def read_coordinate(body: Body, leaf: Input, level_no: int, pos: str, var: str) -> None:
    """``var = crd[pos]``, then the range test (one unsigned compare covers both ends)."""
    site = _site(body, "range", _label(leaf, level_no))
    crd = array_var(leaf.name, f"crd{level_no}")
    size = _size(leaf, level_no)
    body.line(f"{var} = {crd}[{pos}]")
    with body.block(f"if <uint64_t>{var} >= <uint64_t>{size}:"):
        with body.block("if sf_bad == 0:"):
            body.line(f"sf_bad = {site}")
            body.line(f"sf_a = {var}")
            body.line(f"sf_b = {size}")
            body.line("sf_c = 0")
        body.line(f"{var} = 0")


def check_rows_first(body: Body, leaves: list[Input]) -> bool:
    """Before any loop reads them: each CSR/CSC leaf's ``pos1`` monotone (one vectorizable
    pass over O(rows) values; the runtime checks its length, first and last entry, O(1)).
    Monotone ``pos`` is what bounds the entries every later loop reads and writes by
    ``pos1[rows]``, so on failure the rest of the kernel must not run: returns True when
    checks were emitted, and the caller nests the kernel under ``if sf_bad == 0:``."""
    compressed = [leaf for leaf in leaves if leaf.format.kinds == ("full", "pos")]
    t = body.declare("t", "int64_t")
    for leaf in compressed:
        site = _site(body, "pos", f"{_name(leaf)}: indptr")
        pos = array_var(leaf.name, "pos1")
        rows = expr_c(leaf.shape[leaf.format.mode_order[0]], {})
        bad = body.declare("pos_bad", "int64_t")
        body.comment(f"{leaf.name}: rows in order before anything reads them")
        body.line(f"{bad} = 0")
        with body.block(f"for {t} in range({rows}):"):
            body.line(f"{bad} = {bad} | ({pos}[{t} + 1] < {pos}[{t}])")
        with body.block(f"if {bad} and sf_bad == 0:"):
            with body.block(f"for {t} in range({rows}):"):
                with body.block(f"if {pos}[{t} + 1] < {pos}[{t}]:"):
                    body.line(f"sf_bad = {site}")
                    body.line(f"sf_a = {t}")
                    body.line(f"sf_b = {pos}[{t}]")
                    body.line(f"sf_c = {pos}[{t} + 1]")
                    body.line("break")
    return bool(compressed)


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

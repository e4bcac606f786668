"""In-kernel safety checks: every stored coordinate is range-checked as it is read.

Kernels have no bounds checks, so a coordinate outside its axis must never reach an index
computation. The storage layer checks the ``pos`` arrays' length, first and last entry
before the call (O(1)); monotone ``pos`` is checked here, in one vectorizable pass before any
loop reads a row (:func:`rows_first`); each coordinate's range ``[0, size)`` is tested as it
is read (:func:`read_coordinate`): one unsigned compare on a value already in a register,
fused with the read that needs it, instead of extra passes over every index array. A kernel
therefore checks exactly the entries it reads.

A failing test does not leave the loop: it records the first failure in ``sf_bad`` and its
values (a :class:`~loops.Raise`) and replaces the coordinate by 0, so hot loops contain no
calls (a call makes gcc assume memory is clobbered and spill accumulators). ``run`` raises
:class:`~sparsefold.spec.errors.InvalidData` after the loops; the partial output is
discarded. Coordinate 0 is inside every axis a kernel indexes with it: the storage layer
rejects a sparse input that stores entries but has an empty axis. The number of entries
written never depends on coordinate values, so a replaced coordinate cannot overflow an
output either.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from sparsefold.compiler.emit.cnames import array_var
from sparsefold.compiler.emit.loops import (
    INT,
    Array,
    Assign,
    Bin,
    Builder,
    Expr,
    If,
    Lit,
    Load,
    Raise,
    Var,
    cast,
)
from sparsefold.compiler.lower.values import index
from sparsefold.spec.compute import Input

__all__ = ["Sites", "read_coordinate", "copy_coordinates", "rows_first", "leaf_label",
           "check_segment", "segment_bad"]

_SAFE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


@dataclass
class Sites:
    """The checks of one kernel module: (kind, what) per site; a site's number (from 1) is
    what ``sf_bad`` records. Kinds: "range" (a coordinate outside its axis), "pos" (a row
    pointer array not monotone), "map" (a user operator's map left its axis), "order" (COO
    row coordinates out of order under a canonical flag the kernel trusted)."""

    table: list[tuple[str, str]] = field(default_factory=list)

    def site(self, kind: str, what: str) -> int:
        if (kind, what) not in self.table:
            self.table.append((kind, what))
        return self.table.index((kind, what)) + 1


def _name(leaf: Input) -> str:
    return leaf.name if _SAFE.match(leaf.name) else "input"


def leaf_label(leaf: Input, level_no: int) -> str:
    """The array's name in messages: scipy's ``indices``, or ``coords[d]`` for COO."""
    mode = leaf.format.mode_order[level_no]
    what = f"coords[{mode}]" if leaf.format.name == "coo" else "indices"
    return f"{_name(leaf)}: {what}"


def crd_array(leaf: Input, level_no: int, index_ctype: str) -> Array:
    return Array(array_var(leaf.name, f"crd{level_no}"), index_ctype)


__all__.append("crd_array")


def axis_size(leaf: Input, level_no: int) -> Expr:
    return index(leaf.shape[leaf.format.mode_order[level_no]])


__all__.append("axis_size")


def read_coordinate(b: Builder, sites: Sites, leaf: Input, level_no: int, crd: Array,
                    pos: Expr, var: Var) -> None:
    """``var = crd[pos]``, then the range test (one unsigned compare covers both ends)."""
    site = sites.site("range", leaf_label(leaf, level_no))
    size = axis_size(leaf, level_no)
    b.assign(var, Load(crd, pos))
    b.emit(If(((Bin(">=", cast("uint64_t", var), cast("uint64_t", size)),
                (Raise(site, (var, size)), Assign(var, Lit("0", INT)))),)))


def segment_bad(b: Builder, leaf: Input, level_no: int, crd: Array, start: Expr, end: Expr,
                prefix: str, t: Var | None = None) -> Var:
    """A flag set when some coordinate of ``crd[start:end]`` is outside its axis: one
    vectorizable pass, an OR of unsigned compares in the index array's own width against the
    axis size clamped to that width (every non-negative int32 is below a size of 2**31 or
    more). Records nothing: the caller finds and records the first bad coordinate."""
    bits = {"int32_t": 32, "int64_t": 64}[crd.ctype]
    unsigned = f"uint{bits}_t"
    bad = b.fresh(f"{prefix}_bad{bits}", unsigned)
    lim = b.fresh(f"{prefix}_lim{bits}", unsigned)
    t = t or b.fresh("t")
    size = axis_size(leaf, level_no)
    if bits == 32:
        b.assign(lim, cast(unsigned, Lit(f"({size.text} if {size.text} < "
                                         f"<int64_t>2147483648 else <int64_t>2147483648)",
                                         INT, size.uses)))
    else:
        b.assign(lim, cast(unsigned, size))
    b.assign(bad, Lit("0", unsigned))
    with b.loop(t, start, end):
        b.assign(bad, Bin("|", bad, Bin(">=", cast(unsigned, Load(crd, t)), lim)))
    return bad


def check_segment(b: Builder, sites: Sites, leaf: Input, level_no: int, crd: Array,
                  start: Expr, end: Expr) -> Var:
    """Every coordinate of ``crd[start:end]`` (a row) in range, tested in one vectorizable
    pass before the loop that uses them (:func:`segment_bad`). When the flag is set the first
    bad coordinate is recorded (as :func:`read_coordinate` would) and the caller skips the
    row: the call raises after the loops anyway, and the loop that follows reads the row with
    no test per entry. Returns the flag."""
    t = b.fresh("t")
    bad = segment_bad(b, leaf, level_no, crd, start, end, "row", t)
    with b.if_(bad):
        v = b.fresh("range_v")
        with b.loop(t, start, end):
            read_coordinate(b, sites, leaf, level_no, crd, t, v)
    return bad


def rows_first(b: Builder, sites: Sites, leaves_pos: list[tuple[Input, Array]]) -> Var | None:
    """Before any loop reads them: each CSR/CSC leaf's ``pos1`` is monotone (one
    vectorizable OR-reduction over O(rows) values; the runtime checked its length, first and
    last entry). Monotone ``pos`` is what bounds the entries every later loop reads and
    writes, so on failure the kernel must not run: returns the flag the caller tests (None
    when there is nothing to check)."""
    if not leaves_pos:
        return None
    t = b.fresh("t")
    bad = Var("pos_bad", INT)
    for leaf, pos in leaves_pos:
        site = sites.site("pos", f"{_name(leaf)}: indptr")
        rows = axis_size(leaf, 0)
        with b.block(f"{leaf.name}: rows in order before anything reads them"):
            b.assign(bad, Lit("0", INT))
            with b.loop(t, 0, rows):
                b.assign(bad, Bin("|", bad, Bin("<", Load(pos, t + 1), Load(pos, t))))
            with b.if_(Bin("and", bad, Bin("==", Var("sf_bad"), Lit("0")))):
                with b.loop(t, 0, rows):
                    with b.if_(Bin("<", Load(pos, t + 1), Load(pos, t))):
                        b.emit(Raise(site, (t, Load(pos, t), Load(pos, t + 1))))
                        b.brk()
    return Var("sf_bad", INT)


def copy_coordinates(b: Builder, sites: Sites, leaf: Input, level_no: int, *, dst: Array,
                     dst_start: Expr, crd: Array, src_start: Expr, count: Expr, shift: Expr,
                     also: tuple = ()) -> None:
    """``dst[dst_start + t] = crd[src_start + t] + shift`` for ``t < count``, the range test
    folded into the copy as an OR of flags; the first bad coordinate is found and recorded
    only when the flag is set. The test is done in the index array's own width against a
    limit clamped to that width, so the loop stays a straight copy that gcc vectorizes.
    ``also(t)`` gives statements fused into the same loop (a row's values: for short rows
    one loop beats a ``memcpy`` call per array)."""
    bits = {"int32_t": 32, "int64_t": 64}[crd.ctype]
    unsigned = f"uint{bits}_t"
    bad = b.fresh(f"range_bad{bits}", unsigned)
    c = b.fresh(f"range_c{bits}", unsigned)
    lim = b.fresh(f"range_lim{bits}", unsigned)
    t = b.fresh("t")
    size = axis_size(leaf, level_no)
    if bits == 32:  # every non-negative int32 is below a size of 2**31 or more
        b.assign(lim, cast(unsigned, Lit(f"({size.text} if {size.text} < "
                                         f"<int64_t>2147483648 else <int64_t>2147483648)")))
    else:
        b.assign(lim, cast(unsigned, size))
    b.assign(bad, Lit("0", unsigned))
    zero_shift = isinstance(shift, Lit) and shift.text == "0"
    if zero_shift and dst.ctype == crd.ctype:
        value = cast(dst.ctype, c)
    elif dst.ctype == crd.ctype:  # same width: the sum wraps in the unsigned type, then casts
        value = cast(dst.ctype, Bin("+", c, cast(unsigned, shift)))
    else:
        value = Bin("+", cast(dst.ctype, Load(crd, src_start + t)), cast(dst.ctype, shift))
    with b.loop(t, 0, count):
        b.assign(c, cast(unsigned, Load(crd, src_start + t)))
        b.assign(bad, Bin("|", bad, Bin(">=", c, lim)))
        b.store(dst, dst_start + t, value)
        for stmt in also:
            b.emit(stmt(t))
    with b.if_(bad):  # only ever stored, never used as an index: just report
        v = b.fresh("range_v")
        with b.loop(t, 0, count):
            read_coordinate(b, sites, leaf, level_no, crd, src_start + t, v)


# --- maps of operator entries that are not proved (run with checks) -------------------------

def check_map(b: Builder, sites: Sites, value: Expr, size: Expr, what: str) -> Var:
    """``value`` (an output coordinate an unproved operator's forward map computed) in a
    fresh variable, tested against ``[0, size)``: a failure is recorded (site kind "map")
    and the coordinate replaced by 0, so nothing downstream indexes with it."""
    site = sites.site("map", what)
    var = b.fresh("m")
    b.assign(var, value)
    b.emit(If(((Bin(">=", cast("uint64_t", var), cast("uint64_t", size)),
                (Raise(site, (var, size)), Assign(var, Lit("0", INT)))),)))
    return var


class MapChecked:
    """An output assembler whose entries' coordinates are range-checked first (a stage
    computing an operator whose maps are not proved): everything else is the wrapped
    assembler's. Coordinates outside the output are recorded and replaced by 0, so a wrong
    forward map is a clear error after the loops, never an out-of-bounds write or a loop
    driven by a huge coordinate."""

    def __init__(self, inner, shape: tuple, what: str):
        object.__setattr__(self, "_inner", inner)
        object.__setattr__(self, "_shape", shape)
        object.__setattr__(self, "_what", what)

    def __getattr__(self, name):
        return getattr(self._inner, name)

    def __setattr__(self, name, value):
        setattr(self._inner, name, value)

    def emit(self, low, coords, value) -> None:
        checked = tuple(check_map(low.b, low.sites, c, index(n), f"{self._what}: axis {d}")
                        for d, (c, n) in enumerate(zip(coords, self._shape)))
        self._inner.emit(low, checked, value)


__all__ += ["check_map", "MapChecked"]

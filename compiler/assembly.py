"""Output assembly (DESIGN §3.5): where a stream's entries go.

* :class:`DenseOut` — into a zeroed C-contiguous array (assign, or accumulate for ``sum``).
* :class:`AppendOut` — append-only into a sparse format's level arrays, for streams *proved*
  to arrive in the output's storage order. Levels are asked what they are: a full level
  followed by a ``pos``/``crd`` level fills ``pos`` for every row as it is passed (empty
  rows included); ``pos``/``crd`` levels append a coordinate when it changes; singleton
  levels append one coordinate per entry.
* :class:`BufferOut` — the fallback for streams that are not in order: entries are written
  as coordinate lists, then sorted by the runtime (a stable sort in storage order) and
  compressed. The generated code says so in a comment.

The capacity of every buffer is an upper bound the runtime computes before the call (stored
entries of each leaf times its broadcast extents), so appends never overflow.
"""

from __future__ import annotations

import numpy as np

from sparsefold.compiler.cnames import ctype, index_ctype, storage_ctype
from sparsefold.compiler.pointwise import Body, as_type, expr_c
from sparsefold.compiler.source import Arg
from sparsefold.spec import sizes as sz
from sparsefold.spec.errors import IllFormedProgram
from sparsefold.spec.formats import Format
from sparsefold.spec.functions import Monoid

__all__ = ["Assembler", "DenseOut", "AppendOut", "BufferOut", "ScatterOut"]


class Assembler:
    note = ""
    returns = "0"
    passes = 1
    needs_value = True

    def begin_pass(self, body: Body, pass_no: int) -> None:
        """Called before each pass over the stream (two-pass assemblers switch mode)."""

    def args(self) -> list[Arg]: return []
    def prologue(self, body: Body) -> None: pass
    def emit(self, body: Body, coords: tuple[str, ...], value: str) -> None: ...
    def end_row(self, body: Body, r: str) -> None: pass
    def epilogue(self, body: Body) -> None: pass


class DenseOut(Assembler):
    """``out[lin(coords)] = value``, or combined with a reduction's monoid.

    For a reduction the runtime initializes ``out`` with the monoid's identity; every
    monoid but ``sum`` also counts the stored entries reaching each cell (``out_cnt``), so
    that the runtime can then combine cells that also cover implicit zeros with 0 (the max
    of a row with an unstored entry is at least 0; its product is 0)."""

    def __init__(self, shape: tuple[sz.Expr, ...], dtype, *, monoid: Monoid | None = None):
        self.shape, self.dtype, self.monoid = shape, dtype, monoid
        self.note = (f"Output: dense, each stored entry combined with {monoid}" if monoid
                     else "Output: dense, each stored entry written once")

    def _counts(self) -> bool:
        # a cell that may also cover implicit zeros must meet a 0 afterwards; for sum that
        # changes nothing
        return self.monoid is not None and self.monoid.name != "sum"

    def args(self):
        out = [Arg("p_out_val", "ptr", ("out", "val"), storage_ctype(self.dtype))]
        if self._counts():
            out.append(Arg("p_out_cnt", "ptr", ("out", "cnt"), "int64_t"))
        return out

    def emit(self, body, coords, value):
        lin = "0"
        for c, n in zip(coords, self.shape):
            lin = c if lin == "0" else f"({lin}) * {expr_c(n, {})} + {c}"
        v = as_type(value, self.dtype)
        cell = f"out_val[{lin}]"
        m = self.monoid
        if m is None:
            body.line(f"{cell} = {v}")
            return
        if self._counts():
            body.line(f"out_cnt[{lin}] = out_cnt[{lin}] + 1")
        if m.combine in (np.logical_and, np.logical_or):  # any/all: on truth values
            combined = m.c_combine.format(f"({cell} != 0)", f"({v} != 0)")
            body.line(f"{cell} = {as_type(combined, self.dtype)}")
        elif m.selects is None:
            body.line(f"{cell} = {as_type(m.c_combine.format(cell, v), self.dtype)}")
        else:  # max/min: replace when better, or NaN (which propagates)
            x = body.var("x", ctype(self.dtype))
            body.line(f"{x} = {v}")
            nan = f" or {x} != {x}" if np.dtype(self.dtype).kind == "f" else ""
            body.line(f"if {cell} == {cell} and ({x} {m.selects} {cell}{nan}):")
            body.line(f"    {cell} = {x}")


class AppendOut(Assembler):
    """Append-only assembly into ``fmt`` (entries arrive in storage order, no duplicates)."""

    def __init__(self, fmt: Format, shape, dtype, index_dtype: str):
        self.fmt, self.shape, self.dtype, self.ix = fmt, shape, dtype, index_ctype(index_dtype)
        kinds = fmt.kinds
        if kinds not in (("full", "pos"), ("pos",), ("pos", "pos")) and not (
                kinds and kinds[0] == "pos" and all(k == "one" for k in kinds[1:])):
            raise IllFormedProgram(f"not supported yet by the compiler: output format {fmt}")
        self.kinds = kinds
        self.note = (f"Output: {fmt}, appended in storage order (order proved for every "
                     f"piece; no sort needed)")
        self.returns = "(n, m)"

    def args(self):
        out = []
        for level, k in enumerate(self.kinds):
            if k == "pos" and level > 0:
                out.append(Arg(f"p_out_pos{level}", "ptr", ("out", f"pos{level}"), self.ix))
            if k != "full":
                out.append(Arg(f"p_out_crd{level}", "ptr", ("out", f"crd{level}"), self.ix))
        out.append(Arg("p_out_val", "ptr", ("out", "val"), storage_ctype(self.dtype)))
        return out

    def prologue(self, body):
        body.declare("n", "int64_t")
        body.declare("m", "int64_t")
        body.declare("cur", "int64_t")
        body.line("n = 0")
        body.line("m = 0")
        body.line("cur = 0")
        if self.kinds == ("full", "pos"):
            body.line("out_pos1[0] = 0")

    def emit(self, body, coords, value):
        s = [coords[m] for m in self.fmt.mode_order]
        ix = self.ix
        if self.kinds == ("full", "pos") and self.row_driven:
            body.line(f"out_crd1[n] = <{ix}>{s[1]}")
        elif self.kinds == ("full", "pos"):
            body.line(f"while cur < {s[0]}:")
            body.line("    cur = cur + 1")
            body.line(f"    out_pos1[cur] = <{ix}>n")
            body.line(f"out_crd1[n] = <{ix}>{s[1]}")
        elif self.kinds == ("pos", "pos"):
            body.line(f"if m == 0 or out_crd0[m - 1] != {s[0]}:")
            body.line(f"    out_crd0[m] = <{ix}>{s[0]}")
            body.line(f"    out_pos1[m] = <{ix}>n")
            body.line("    m = m + 1")
            body.line(f"out_crd1[n] = <{ix}>{s[1]}")
        else:
            for level, c in enumerate(s):
                body.line(f"out_crd{level}[n] = <{ix}>{c}")
        body.line(f"out_val[n] = {as_type(value, self.dtype)}")
        body.line("n = n + 1")

    row_driven = False

    def end_row(self, body, r: str) -> None:
        """Row-driven loops close each output row here (empty rows included)."""
        if self.kinds == ("full", "pos"):
            body.line(f"out_pos1[{r} + 1] = <{self.ix}>n")

    def epilogue(self, body):
        if self.kinds == ("full", "pos") and self.row_driven:
            return
        if self.kinds == ("full", "pos"):
            rows = expr_c(self.shape[self.fmt.mode_order[0]], {})
            body.comment("rows after the last entry are empty")
            body.line(f"while cur < {rows}:")
            body.line("    cur = cur + 1")
            body.line(f"    out_pos1[cur] = <{self.ix}>n")
        elif self.kinds == ("pos", "pos"):
            body.line(f"out_pos1[m] = <{self.ix}>n")


class BufferOut(AppendOut):
    """Coordinate lists in storage order, sorted afterwards by the runtime (fallback)."""

    def __init__(self, fmt: Format, shape, dtype, index_dtype: str, *, bucket: bool = False):
        self.fmt, self.shape, self.dtype, self.ix = fmt, shape, dtype, index_ctype(index_dtype)
        self.kinds = ("pos",) + ("one",) * (len(shape) - 1)
        how = ("a stable sort by the outer coordinate alone (proved: entries arrive in order "
               "within each outer coordinate)" if bucket else "a full sort in storage order")
        self.note = ("Output: FALLBACK — the stream is not proved to arrive in the output's "
                     f"storage order, so entries are buffered as coordinates, then {how} "
                     f"after the kernel, then compressed into {fmt}")
        self.returns = "(n, m)"

    def args(self):
        out = [Arg(f"p_out_crd{level}", "ptr", ("out", f"crd{level}"), self.ix)
               for level in range(len(self.shape))]
        return out + [Arg("p_out_val", "ptr", ("out", "val"), storage_ctype(self.dtype))]

    def prologue(self, body):
        body.declare("n", "int64_t")
        body.declare("m", "int64_t")
        body.line("n = 0")
        body.line("m = 0")

    def epilogue(self, body):
        pass


class ScatterOut(Assembler):
    """Count-and-scatter into a format with a full outer level and one more level (CSR, CSC,
    2-d COO): pass 1 counts entries per outer coordinate, prefix sums make ``pos``, pass 2
    places each entry at its row's next free slot. Placement is stable, so it yields storage
    order whenever entries arrive in order *within* each outer coordinate — which is what was
    proved for this stream (e.g. concat along an inner axis of COO inputs)."""

    passes = 2

    def __init__(self, fmt: Format, shape, dtype, index_dtype: str):
        self.fmt, self.shape, self.dtype, self.ix = fmt, shape, dtype, index_ctype(index_dtype)
        self.coo = not fmt.levels[0].full
        self.rows = expr_c(shape[fmt.mode_order[0]], {})
        self.note = (f"Output: {fmt} by count-and-scatter over the outer coordinate (FALLBACK "
                     f"for a stream not in storage order; within each outer coordinate its "
                     f"order is proved, so the stable placement needs no sort)")
        self.returns = "(n, m)"

    def args(self):
        out = [Arg("p_out_pos1", "ptr", ("out", "pos1"), self.ix),
               Arg("p_out_nxt", "ptr", ("out", "nxt"), "int64_t")]
        if self.coo:
            out.append(Arg("p_out_crd0", "ptr", ("out", "crd0"), self.ix))
        out.append(Arg("p_out_crd1", "ptr", ("out", "crd1"), self.ix))
        return out + [Arg("p_out_val", "ptr", ("out", "val"), storage_ctype(self.dtype))]

    def prologue(self, body):
        for v in ("n", "m", "cur", "slot"):
            body.declare(v, "int64_t")
        body.line("n = 0")
        body.line("m = 0")
        with body.block(f"for cur in range({self.rows} + 1):"):
            body.line("out_pos1[cur] = 0")

    def begin_pass(self, body, pass_no):
        self.mode = pass_no
        self.needs_value = pass_no == 1
        if pass_no == 1:
            body.comment("prefix sums: out_pos1[r] is where row r starts; out_nxt its next slot")
            with body.block(f"for cur in range({self.rows}):"):
                body.line("out_pos1[cur + 1] = out_pos1[cur + 1] + out_pos1[cur]")
                body.line("out_nxt[cur] = out_pos1[cur]")
            body.line(f"n = out_pos1[{self.rows}]")
            body.comment("pass 2: place every entry at its row's next slot (stable)")
        else:
            body.comment("pass 1: count the entries of every output row")

    def emit(self, body, coords, value):
        s = [coords[m] for m in self.fmt.mode_order]
        if self.mode == 0:
            body.line(f"out_pos1[{s[0]} + 1] = out_pos1[{s[0]} + 1] + 1")
            return
        body.line(f"slot = out_nxt[{s[0]}]")
        body.line(f"out_nxt[{s[0]}] = slot + 1")
        if self.coo:
            body.line(f"out_crd0[slot] = <{self.ix}>{s[0]}")
        body.line(f"out_crd1[slot] = <{self.ix}>{s[1]}")
        body.line(f"out_val[slot] = {as_type(value, self.dtype)}")

"""Output assembly (DESIGN §3.5): where a kernel's entries go, as loop-IR statements.

* :class:`DenseOut` — into a zeroed C-contiguous array: store, or combine with a
  reduction's monoid (``accumulate``), optionally from a register the lowering keeps.
* :class:`AppendOut` — append-only into a sparse format's level arrays, for entries
  *proved* to arrive in the output's storage order. Levels are asked what they are: a full
  level followed by a ``pos``/``crd`` level fills ``pos`` for every row as it is passed
  (empty rows included); ``pos``/``crd`` levels append a coordinate when it changes;
  singleton levels append one coordinate per entry.
* :class:`ScatterOut` — count-and-scatter over the outer coordinate, for entries that arrive
  in order only *within* each outer coordinate (proved): two passes, a prefix sum between.
* :class:`BufferOut` — the fallback for entries in no proved order: coordinate lists the
  runtime sorts afterwards. The kernel header says so.

Capacities are upper bounds the runtime computes before the call, so appends never overflow.
"""

from __future__ import annotations

import numpy as np

from sparsefold.compiler.emit.cnames import c_literal, ctype, index_ctype, storage_ctype
from sparsefold.compiler.emit.loops import INT, Array, Bin, Call, Expr, Lit, Load, Var, cast
from sparsefold.compiler.lower.lowering import Lowering
from sparsefold.compiler.lower.values import convert, index, monoid_combine
from sparsefold.compiler.plan.facts import appendable
from sparsefold.spec import sizes as sz
from sparsefold.spec.errors import IllFormedProgram
from sparsefold.spec.formats import Format
from sparsefold.spec.functions import get_monoid

__all__ = ["Assembler", "DenseOut", "AppendOut", "BufferOut", "ScatterOut"]


class Assembler:
    note = ""
    returns: tuple[Expr, ...] = (Lit("0", INT),)
    passes = 1
    needs_value = True
    row_driven = False

    def begin_pass(self, low: Lowering, pass_no: int) -> None:
        """Called before each pass over the entries (two-pass assemblers switch mode)."""

    def allocation(self, shape: tuple[int, ...], capacity: int) -> dict[str, tuple]:
        """The output arrays ``run`` writes, for concrete sizes: part -> (shape, dtype,
        initial value or None)."""
        raise NotImplementedError

    def prologue(self, low: Lowering) -> None: ...
    def emit(self, low: Lowering, coords: tuple[Expr, ...], value: Expr) -> None: ...
    def end_row(self, low: Lowering, r: Expr) -> None: ...
    def epilogue(self, low: Lowering) -> None: ...


_INDEX = {"int32_t": "int32", "int64_t": "int64"}


def _linear(coords, shape) -> Expr:
    lin: Expr | None = None
    for c, n in zip(coords, shape):
        lin = c if lin is None else Bin("+", Bin("*", lin, index(n)), c)
    return lin if lin is not None else Lit("0", INT)


class DenseOut(Assembler):
    """``out[lin(coords)] = value``, or combined with a reduction's monoid.

    For a reduction the runtime initializes ``out`` with the monoid's identity; every
    monoid but ``sum`` and ``any`` also counts the stored entries reaching each cell
    (``out_cnt``), so that the runtime can combine cells that also cover implicit zeros
    with 0 (the max of a row with an unstored entry is at least 0; its product is 0)."""

    def __init__(self, shape: tuple[sz.Expr, ...], dtype, *, monoid: str | None = None,
                 order: tuple[int, ...] | None = None, count: bool = False):
        self.shape, self.dtype, self.monoid = shape, np.dtype(dtype), monoid
        # the axes in memory, outermost first (None: C order). A permuted layout puts the
        # axis the innermost loop writes last, so that loop writes contiguous cells (dense @
        # sparse: each entry updates one output column); the runtime returns the array
        # transposed back (``dense_view``), the layout scipy's own result has there.
        self.order = None if order is None or tuple(order) == tuple(range(len(shape))) \
            else tuple(order)
        self.counts = monoid not in (None, "sum", "any") or (monoid is not None and count)
        self.note = (f"Output: dense, each entry combined with {monoid}" if monoid
                     else "Output: dense, each entry written once")
        if self.order is not None:
            self.note += f", stored with axes in the order {self.order}"

    def prologue(self, low):
        self.val = low.out("val", storage_ctype(self.dtype))
        self.cnt = low.out("cnt", INT) if self.counts else None

    def allocation(self, shape, capacity):
        init = 0 if self.monoid is None else start_value(self.monoid, self.dtype)
        stored = tuple(shape) if self.order is None else tuple(shape[a] for a in self.order)
        out = {"val": (stored, self.dtype, init)}
        if self.counts:
            out["cnt"] = (stored, np.dtype(np.int64), 0)
        return out

    def dense_view(self, stored: np.ndarray) -> np.ndarray:
        """The output array, axes as the program's, of the array ``allocation`` gave."""
        return stored if self.order is None else stored.transpose(np.argsort(self.order))

    def cell(self, coords) -> Expr:
        if self.order is None:
            return _linear(coords, self.shape)
        return _linear([coords[a] for a in self.order], [self.shape[a] for a in self.order])

    def emit(self, low, coords, value):
        lin = self.cell(coords)
        if self.monoid is None:
            low.b.store(self.val, lin, convert(value, self.dtype))
            return
        self.combine(low, lin, value, Lit("1", INT))

    def combine(self, low, lin: Expr, value: Expr, count: Expr) -> None:
        """``out[lin] = out[lin] ⊕ value`` and ``cnt[lin] += count``."""
        if not isinstance(lin, Var) and not isinstance(lin, Lit):
            cell = low.b.fresh("cell")
            low.b.assign(cell, lin)
            lin = cell
        if self.cnt is not None:
            low.b.store(self.cnt, lin, Bin("+", Load(self.cnt, lin), count))
        low.b.store(self.val, lin, monoid_combine(self.monoid, Load(self.val, lin),
                                                  convert(value, self.dtype), self.dtype))

    def identity(self) -> Lit:
        """The register start value of a reduction over stored entries."""
        return Lit(c_literal(start_value(self.monoid, self.dtype), self.dtype),
                   ctype(self.dtype))


def start_value(monoid, dt: np.dtype):
    """Where a reduction over stored entries starts (the spec monoid's ``start``: its
    identity, or max/min's extreme of the dtype, which every entry replaces); the runtime
    combines with 0 where entries are missing."""
    return get_monoid(monoid).start(np.dtype(dt))


__all__.append("start_value")


class AppendOut(Assembler):
    """Append-only assembly into ``fmt`` (entries arrive in storage order, no duplicates)."""

    def __init__(self, fmt: Format, shape, dtype, index_dtype: str):
        if not appendable(fmt):
            raise IllFormedProgram(f"not supported yet by the compiler: output format {fmt}")
        self.fmt, self.shape, self.dtype = fmt, shape, np.dtype(dtype)
        self.ix = index_ctype(index_dtype)
        self.kinds = fmt.kinds
        self.note = (f"Output: {fmt}, appended in storage order (order proved for every "
                     f"piece; no sort needed)")
        self.n, self.m, self.cur = Var("n"), Var("m"), Var("cur")
        self.returns = (self.n, self.m)

    def prologue(self, low):
        b = low.b
        for v in (self.n, self.m, self.cur):
            b.reserve(v.name)
        self.crd = {li: low.out(f"crd{li}", self.ix) for li, k in enumerate(self.kinds)
                    if k != "full"}
        self.pos = {li: low.out(f"pos{li}", self.ix) for li, k in enumerate(self.kinds)
                    if k == "pos" and li > 0}
        self.val = low.out("val", storage_ctype(self.dtype))
        b.assign(self.n, Lit("0", INT))
        b.assign(self.m, Lit("0", INT))
        if self.kinds == ("full", "pos") and not self.row_driven:
            b.assign(self.cur, Lit("0", INT))
        if self.kinds == ("full", "pos"):
            b.store(self.pos[1], Lit("0", INT), Lit("0", self.ix))

    def storage(self, coords) -> list[Expr]:
        return [coords[m] for m in self.fmt.mode_order]

    def allocation(self, shape, capacity):
        ix = np.dtype(_INDEX[self.ix])
        rows = shape[self.fmt.mode_order[0]]
        out = {"val": ((capacity,), self.dtype, None)}
        if self.kinds == ("full", "pos"):
            out["pos1"] = ((rows + 1,), ix, None)
            out["crd1"] = ((capacity,), ix, None)
        elif self.kinds == ("pos", "pos"):
            parents = min(capacity, rows)
            out["crd0"] = ((parents,), ix, None)
            out["pos1"] = ((parents + 1,), ix, None)
            out["crd1"] = ((capacity,), ix, None)
        else:
            for li in range(len(self.kinds)):
                out[f"crd{li}"] = ((capacity,), ix, None)
        return out

    def emit(self, low, coords, value):
        b, s, ix, n = low.b, self.storage(coords), self.ix, self.n
        if self.kinds == ("full", "pos") and not self.row_driven:
            with b.while_(Bin("<", self.cur, s[0])):
                b.assign(self.cur, self.cur + 1)
                b.store(self.pos[1], self.cur, cast(ix, n))
        if self.kinds == ("pos", "pos"):
            with b.if_(Bin("or", Bin("==", self.m, Lit("0")),
                           Bin("!=", Load(self.crd[0], self.m - 1), s[0]))):
                b.store(self.crd[0], self.m, cast(ix, s[0]))
                b.store(self.pos[1], self.m, cast(ix, n))
                b.assign(self.m, self.m + 1)
        for li, c in enumerate(s):
            if li in self.crd and not (self.kinds == ("pos", "pos") and li == 0):
                b.store(self.crd[li], n, cast(ix, c))
        b.store(self.val, n, convert(value, self.dtype))
        b.assign(n, n + 1)

    def end_row(self, low, r):
        """Row-driven loops close each output row here (empty rows included)."""
        if self.kinds == ("full", "pos"):
            low.b.store(self.pos[1], r + 1, cast(self.ix, self.n))

    def epilogue(self, low):
        b = low.b
        if self.kinds == ("full", "pos") and not self.row_driven:
            rows = index(self.shape[self.fmt.mode_order[0]])
            b.comment("rows after the last entry are empty")
            with b.while_(Bin("<", self.cur, rows)):
                b.assign(self.cur, self.cur + 1)
                b.store(self.pos[1], self.cur, cast(self.ix, self.n))
        elif self.kinds == ("pos", "pos"):
            b.store(self.pos[1], self.m, cast(self.ix, self.n))


class BufferOut(AppendOut):
    """Coordinate lists in storage order, sorted afterwards by the runtime (fallback)."""

    def __init__(self, fmt: Format, shape, dtype, index_dtype: str, *, bucket: bool = False):
        self.fmt, self.shape, self.dtype = fmt, shape, np.dtype(dtype)
        self.ix = index_ctype(index_dtype)
        self.kinds = ("pos",) + ("one",) * (len(shape) - 1)
        how = ("a stable sort by the outer coordinate alone (proved: entries arrive in order "
               "within each outer coordinate)" if bucket else "a full sort in storage order")
        self.note = ("Output: FALLBACK — the entries are not proved to arrive in the output's "
                     f"storage order, so they are buffered as coordinates, then {how} after "
                     f"the kernel, then compressed into {fmt}")
        self.n, self.m, self.cur = Var("n"), Var("m"), Var("cur")
        self.returns = (self.n, self.m)

    def allocation(self, shape, capacity):
        ix = np.dtype(_INDEX[self.ix])
        out = {"val": ((capacity,), self.dtype, None)}
        for li in range(len(self.shape)):
            out[f"crd{li}"] = ((capacity,), ix, None)
        return out

    def prologue(self, low):
        low.b.reserve("n")
        self.crd = {li: low.out(f"crd{li}", self.ix) for li in range(len(self.shape))}
        self.val = low.out("val", storage_ctype(self.dtype))
        low.b.assign(self.n, Lit("0", INT))
        low.b.assign(self.m, Lit("0", INT))

    def emit(self, low, coords, value):
        b, n = low.b, self.n
        for li, c in enumerate(self.storage(coords)):
            b.store(self.crd[li], n, cast(self.ix, c))
        b.store(self.val, n, convert(value, self.dtype))
        b.assign(n, n + 1)

    def end_row(self, low, r):
        pass

    def epilogue(self, low):
        pass


class ScatterOut(Assembler):
    """Count-and-scatter into a format with an outer level and one more (CSR, CSC, 2-d
    COO): pass 1 counts entries per outer coordinate, prefix sums make ``pos``, pass 2
    places each entry at its row's next free slot. Placement is stable, so it yields storage
    order whenever entries arrive in order *within* each outer coordinate — which is what was
    proved for these entries (e.g. a transpose, or concat along an inner axis of COO)."""

    passes = 2

    def __init__(self, fmt: Format, shape, dtype, index_dtype: str):
        self.fmt, self.shape, self.dtype = fmt, shape, np.dtype(dtype)
        self.ix = index_ctype(index_dtype)
        self.coo = not fmt.levels[0].full
        self.rows = index(shape[fmt.mode_order[0]])
        self.note = (f"Output: {fmt} by count-and-scatter over the outer coordinate (FALLBACK "
                     f"for entries not in storage order; within each outer coordinate their "
                     f"order is proved, so the stable placement needs no sort)")
        self.n, self.m = Var("n"), Var("m")
        self.returns = (self.n, self.m)
        # split (``split_rows``): each pass's loop runs ``chunks`` contiguous blocks of source
        # rows, block c counting into and placing from its own row of ``cnt``
        self.chunks: Var | None = None
        self.chunk: Var | None = None
        self.cnt: Array | None = None

    def allocation(self, shape, capacity):
        ix = np.dtype(_INDEX[self.ix])
        rows = shape[self.fmt.mode_order[0]]
        out = {"pos1": ((rows + 1,), ix, None), "nxt": ((rows,), np.dtype(np.int64), None),
               "crd1": ((capacity,), ix, None), "val": ((capacity,), self.dtype, None)}
        if self.coo:
            out["crd0"] = ((capacity,), ix, None)
        return out

    def prologue(self, low):
        b = low.b
        self.pos = low.out("pos1", self.ix)
        self.nxt = low.out("nxt", INT)
        self.crd0 = low.out("crd0", self.ix) if self.coo else None
        self.crd1 = low.out("crd1", self.ix)
        self.val = low.out("val", storage_ctype(self.dtype))
        self.cur, self.slot = b.fresh("cur"), b.fresh("slot")
        b.assign(self.n, Lit("0", INT))
        b.assign(self.m, Lit("0", INT))
        with b.loop(self.cur, 0, self.rows + 1):
            b.store(self.pos, self.cur, Lit("0", self.ix))

    def blocks(self, low, pieces) -> Var | None:
        """One compressed leaf (a transpose, csc to csr): both passes run over blocks of its
        rows in parallel (:meth:`split_rows`); the block count, or None."""
        if len(pieces) != 1:
            return None
        leaf = pieces[0].leaf
        if leaf.format.kinds != ("full", "pos") or pieces[0].free:
            return None
        pos = low.leaf(leaf).pos[1]
        rows = index(leaf.shape[leaf.format.mode_order[0]])
        return self.split_rows(low, Bin("-", Load(pos, rows), Load(pos, Lit("0", INT))))

    def split_rows(self, low, entries: Expr) -> Var:
        """Split the source rows into blocks that both passes run in parallel, one block per
        thread: block c counts its entries per output row into ``cnt[c * rows + row]``; the
        prefix sum over (row, block) makes each block's first slot in each row, so every
        entry lands where the serial placement puts it (rows of earlier blocks first) and
        the result is bit-identical for any thread count. ``cnt`` is the runtime's ``nxt``
        with one block, else allocated here when it holds no more counts than ``entries``
        (the result's size; otherwise one block). Returns the block count."""
        b = low.b
        rows = self.rows
        self.chunks = b.fresh("chunks")  # each pass sets ``chunk``, its own loop variable
        ptr = b.fresh("cnt", "int64_t*")
        self.cnt = Array(ptr.name, INT)
        self._cnt_ptr = ptr
        b.comment("blocks of source rows, one per thread: each counts into its own row of cnt")
        b.assign(self.chunks, Lit("sf_max_threads()", INT))
        with b.if_(Bin("and", Bin(">", self.chunks, Lit("1", INT)),
                       Bin(">", Bin("*", self.chunks, rows), entries))):
            b.assign(self.chunks, Lit("1", INT))  # more counts than entries: one block
        b.assign(ptr, Lit(self.nxt.name, "int64_t*", ()))
        with b.if_(Bin(">", self.chunks, Lit("1", INT))):
            cells = b.fresh("cnt_cells")
            b.assign(cells, Bin("*", self.chunks, rows))
            b.assign(ptr, Lit(f"<int64_t*>calloc({cells.name}, 8)", "int64_t*", (cells,)))
            with b.if_(Bin("==", ptr, Lit("NULL", "int64_t*"))):
                b.assign(self.chunks, Lit("1", INT))
                b.assign(ptr, Lit(self.nxt.name, "int64_t*", ()))
        with b.if_(Bin("==", self.chunks, Lit("1", INT))):
            with b.loop(self.cur, 0, rows):
                b.store(self.nxt, self.cur, Lit("0", INT))
        return self.chunks

    def begin_pass(self, low, pass_no):
        b = low.b
        self.mode = pass_no
        self.needs_value = pass_no == 1
        if pass_no == 0:
            b.comment("pass 1: count the entries of every output row")
            return
        if self.cnt is not None:
            c, run, v = b.fresh("c"), b.fresh("run"), b.fresh("v")
            b.comment("prefix sums over (output row, block): out_pos1[r] is where row r starts; "
                      "cnt[c * rows + r] block c's next slot in it")
            b.assign(run, Lit("0", INT))
            b.store(self.pos, Lit("0", INT), Lit("0", self.ix))
            with b.loop(self.cur, 0, self.rows):
                with b.loop(c, 0, self.chunks):
                    at = Bin("+", Bin("*", c, self.rows), self.cur)
                    b.assign(v, Load(self.cnt, at))
                    b.store(self.cnt, at, run)
                    b.assign(run, run + v)
                b.store(self.pos, self.cur + 1, cast(self.ix, run))
            b.assign(self.n, run)
            b.comment("pass 2: place every entry at its block's next slot in its row (stable)")
            return
        b.comment("prefix sums: out_pos1[r] is where row r starts; out_nxt its next slot")
        with b.loop(self.cur, 0, self.rows):
            b.store(self.pos, self.cur + 1, Bin("+", Load(self.pos, self.cur + 1),
                                                Load(self.pos, self.cur)))
            b.store(self.nxt, self.cur, Load(self.pos, self.cur))
        b.assign(self.n, Load(self.pos, self.rows))
        b.comment("pass 2: place every entry at its row's next slot (stable)")

    def emit(self, low, coords, value):
        b = low.b
        s = [coords[m] for m in self.fmt.mode_order]
        if self.cnt is not None:
            counts, at = self.cnt, Bin("+", Bin("*", self.chunk, self.rows), s[0])
            if self.mode == 0:
                b.store(counts, at, Bin("+", Load(counts, at), Lit("1", INT)))
                return
        else:
            counts, at = self.nxt, s[0]
            if self.mode == 0:
                b.store(self.pos, s[0] + 1, Bin("+", Load(self.pos, s[0] + 1),
                                                Lit("1", self.ix)))
                return
        b.assign(self.slot, Load(counts, at))
        b.store(counts, at, self.slot + 1)
        if self.coo:
            b.store(self.crd0, self.slot, cast(self.ix, s[0]))
        b.store(self.crd1, self.slot, cast(self.ix, s[1]))
        b.store(self.val, self.slot, convert(value, self.dtype))

    def end_row(self, low, r):
        pass

    def epilogue(self, low):
        if self.cnt is not None:
            b = low.b
            with b.if_(Bin(">", self.chunks, Lit("1", INT))):
                b.emit(Call("free", (self._cnt_ptr,)))

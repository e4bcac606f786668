"""A dense row workspace with a list of touched coordinates (Kjolstad et al., CGO 2019).

Scatter-heavy work — a row of ``A @ B`` receives ``A[i, k] * B[k, :]`` for every ``k`` —
becomes appends: values accumulate in ``ws_val`` (one slot per column), ``ws_mark[j]``
records which row last touched column ``j`` (so the workspace is never cleared between
rows: a row's tag differs from every earlier one), and ``ws_list`` lists the columns in the
order they were first touched. Flushing a row emits its columns in increasing order: by
sorting the list (the runtime's ``sf_sort``, ``runtime.pyx``: left alone when already in
order, buckets over the row's span and an insertion sort for 25 to 2048 columns, else an
introsort), or — when the row
touched more than a sixteenth of the columns — by scanning the marks, which is cheaper than
sorting so many.

Memory: O(columns) arrays allocated once per call: the marks ``count`` uses (8 bytes a
column), the list (8) and ``run``'s marks and values, paired in 16-byte slots (class doc).
A parallel row loop gives every thread its own workspace: the arrays hold one slice of the
row length per thread, and each thread works in the slice at ``offset`` (its number times
the row length).

**A sorted workspace** (:class:`SortedWorkspace`) serves rows whose length (the result's
column count) is far larger than what the product touches, where three O(columns) arrays
would not fit or would dwarf the inputs: a row's products are appended as (column, order of
arrival, value), sorted by (column, arrival), and each run of equal columns summed in
arrival order: the same additions, in the same order, as the dense workspace, so the two
give bit-identical results. Memory: three arrays of the largest row's product count.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from sparsefold.compiler.emit.cnames import storage_ctype
from sparsefold.compiler.emit.loops import INT, Bin, Call, Expr, Lit, Load, Var
from sparsefold.compiler.lower.lowering import Lowering
from sparsefold.compiler.lower.values import convert

__all__ = ["Workspace", "SortedWorkspace"]

def _paired(dtype) -> bool:
    """Do a column's mark and value share one 16-byte slot (``ws_slot``)?"""
    return dtype is not None and 8 % np.dtype(dtype).itemsize == 0


class Workspace:
    """The workspace of one kernel; ``size`` is the row length (an IR expression).

    With values (``run``) whose item is at most 8 bytes, a column's mark and value share one
    16-byte slot of ``ws_slot`` (the mark at its start, the value 8 bytes in, read through
    ``ws_slot_val``, a view of the same buffer in the value's type: the two never touch the
    same bytes): a product's first touch of a column is one cache miss, not two (uniform
    200000², ~100 columns per row: run 0.83 -> 0.67 s, measured side by side). Without values
    (``count``) the marks are ``ws_mark``, 8 bytes a column, half the slots' footprint."""

    def __init__(self, low: Lowering, size: Expr, dtype: np.dtype | None):
        self.low, self.size = low, size
        self.dtype = np.dtype(dtype) if dtype is not None else None
        self.paired = _paired(dtype)
        self.touched = low.out("ws_list", INT)
        if self.paired:
            self.mark = low.out("ws_slot", INT)
            self.val = low.out("ws_slot_val", storage_ctype(self.dtype))
        else:
            self.mark = low.out("ws_mark", INT)
            self.val = low.out("ws_val", storage_ctype(self.dtype)) if dtype is not None \
                else None
        self.n = low.b.fresh("ws_n")
        self.offset: Var | None = None  # this thread's slice (a parallel row loop)

    @staticmethod
    def scratch(columns: int, dtype: np.dtype | None, values: bool = True,
                slices: int = 1) -> dict:
        """The arrays the runtime allocates: part -> (shape, dtype, initial value); one
        slice of ``columns`` per thread. ``ws_slot_val`` is made by :meth:`views`."""
        n = columns * slices
        out = {"ws_mark": ((n,), np.dtype(np.int64), -1),
               "ws_list": ((n,), np.dtype(np.int64), None)}
        if values and _paired(dtype):
            out["ws_slot"] = ((2 * n,), np.dtype(np.int64), -1)
        elif values:
            out["ws_val"] = ((n,), np.dtype(dtype), None)
        return out

    @staticmethod
    def views(arrays: dict, dtype: np.dtype) -> dict:
        """The value view of the slots (when :meth:`scratch` made them)."""
        if "ws_slot" not in arrays:
            return {}
        return {"ws_slot_val": arrays["ws_slot"].view(np.dtype(dtype))}

    @staticmethod
    def bytes_per_column(dtype: np.dtype) -> int:
        """Bytes of one slice's arrays per column (the memory limit's test)."""
        return 16 + (16 if _paired(dtype) else np.dtype(dtype).itemsize)

    def slice_of(self, thread: Expr) -> None:
        """From here on, work in ``thread``'s slice (assigned where this is called)."""
        if self.offset is None:
            self.offset = self.low.b.fresh("ws_off")
        self.low.b.assign(self.offset, Bin("*", thread, self.size))

    def _at(self, j: Expr) -> Expr:
        return j if self.offset is None else Bin("+", self.offset, j)

    def _mark_at(self, j: Expr) -> Expr:
        return Bin("*", Lit("2", INT), self._at(j)) if self.paired else self._at(j)

    def _val_at(self, j: Expr) -> Expr:
        if not self.paired:
            return self._at(j)
        per = 8 // self.dtype.itemsize  # values per 8 bytes
        return Bin("+", Bin("*", Lit(str(2 * per), INT), self._at(j)), Lit(str(per), INT))

    def start_row(self) -> None:
        self.low.b.assign(self.n, Lit("0", INT))

    def add(self, j: Expr, v: Expr, tag: Expr) -> None:
        """``ws[j] += v`` (the first touch of ``j`` in this row sets it and lists ``j``)."""
        b, at, mark = self.low.b, self._val_at(j), self._mark_at(j)
        with b.if_(Bin("!=", Load(self.mark, mark), tag)):
            b.store(self.mark, mark, tag)
            b.store(self.touched, self._at(self.n), j)
            b.assign(self.n, self.n + 1)
            b.store(self.val, at, convert(v, self.dtype))
        with b.else_():
            b.store(self.val, at, convert(Bin("+", Load(self.val, at), convert(v, self.dtype)),
                                          self.dtype))

    def count(self, j: Expr, tag: Expr) -> None:
        """Count ``j`` once per row (the symbolic pass: no values)."""
        b, at = self.low.b, self._at(j)
        with b.if_(Bin("!=", Load(self.mark, at), tag)):
            b.store(self.mark, at, tag)
            b.assign(self.n, self.n + 1)

    def flush(self, tag: Expr, emit: Callable[[Expr, Expr], None]) -> None:
        """Hand the row's columns to ``emit(j, value)`` in increasing ``j``."""
        b = self.low.b
        t, j = b.fresh("t"), b.fresh("j")
        with b.if_(Bin(">", Bin("*", self.n, Lit("16", INT)), self.size)):
            b.comment("a dense row: scanning the marks is cheaper than sorting")
            with b.loop(j, 0, self.size):
                with b.if_(Bin("==", Load(self.mark, self._mark_at(j)), tag)):
                    emit(j, Load(self.val, self._val_at(j)))
        with b.else_():
            first = Lit(self.touched.name) if self.offset is None else \
                Lit(f"{self.touched.name} + {self.offset.name}", INT, (self.offset,))
            b.emit(Call("sf_sort", (first, self.n)))
            with b.loop(t, 0, self.n):
                b.assign(j, Load(self.touched, self._at(t)))
                emit(j, Load(self.val, self._val_at(j)))



# (column, arrival) pairs in increasing order; arrivals are distinct, so the order is total
# and the result does not depend on the sort's stability. Heapsort: O(n log n) on any input,
# no recursion, no extra memory.
class SortedWorkspace:
    """A row's products as (column, arrival, value) triples (module doc); ``size`` bounds a
    row's product count (the runtime sizes the arrays from the symbolic pass)."""

    def __init__(self, low: Lowering, size: Expr, dtype: np.dtype):
        self.low, self.size, self.dtype = low, size, np.dtype(dtype)
        self.key = low.out("ws_key", INT)
        self.seq = low.out("ws_seq", INT)
        self.val = low.out("ws_val", storage_ctype(self.dtype))
        self.n = low.b.fresh("ws_n")

    @staticmethod
    def scratch(products: int, dtype: np.dtype) -> dict:
        n = max(products, 1)
        return {"ws_key": ((n,), np.dtype(np.int64), None),
                "ws_seq": ((n,), np.dtype(np.int64), None),
                "ws_val": ((n,), np.dtype(dtype), None)}

    def start_row(self) -> None:
        self.low.b.assign(self.n, Lit("0", INT))

    def add(self, j: Expr, v: Expr, tag: Expr) -> None:
        b = self.low.b
        b.store(self.key, self.n, j)
        b.store(self.seq, self.n, self.n)
        b.store(self.val, self.n, convert(v, self.dtype))
        b.assign(self.n, self.n + 1)

    def flush(self, tag: Expr, emit: Callable[[Expr, Expr], None]) -> None:
        """Sort the row's pairs, then hand each column's sum (arrival order) to ``emit``."""
        b = self.low.b
        t, j = b.fresh("t"), b.fresh("j")
        acc = b.fresh("ws_acc", storage_ctype(self.dtype))
        b.emit(Call("sf_pair_sort", (Lit(self.key.name), Lit(self.seq.name), self.n)))
        b.assign(t, Lit("0", INT))
        with b.while_(Bin("<", t, self.n)):
            b.assign(j, Load(self.key, t))
            b.assign(acc, Load(self.val, Load(self.seq, t)))
            b.assign(t, t + 1)
            with b.while_(Bin("and", Bin("<", t, self.n), Bin("==", Load(self.key, t), j))):
                b.assign(acc, convert(Bin("+", acc, Load(self.val, Load(self.seq, t))),
                                      self.dtype))
                b.assign(t, t + 1)
            emit(j, acc)

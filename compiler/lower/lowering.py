"""What every lowering shares: the statement builder, the kernel's parameters and its
in-kernel checks, and how input arrays are addressed.

A sparse input's level arrays (``pos<li>``, ``crd<li>``) and values, a dense input's element-0
address and element strides, each size symbol and each output array become parameters of
the kernel's functions; :class:`Lowering` registers each once, in first-use order, with the
``source`` that tells the runtime where to find it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from sparsefold.compiler.emit.cnames import array_var, index_ctype, size_var, storage_ctype
from sparsefold.compiler.emit.emit import render_expr
from sparsefold.compiler.emit.loops import (
    BOOL,
    INT,
    Array,
    Assign,
    Bin,
    Builder,
    Cond,
    Expr,
    Function,
    If,
    Lit,
    Load,
    Param,
    Raise,
    cast,
    variables,
    walk_stmts,
)
from sparsefold.compiler.lower.bounds import Sites
from sparsefold.compiler.lower.values import index
from sparsefold.spec.compute import Input, SizeOf
from sparsefold.spec.ir import Node, ShapeOp
from sparsefold.spec.printer import topological
from sparsefold.spec.sizes import free_symbols

__all__ = ["Lowering", "LeafArrays", "size_symbols"]


@dataclass(frozen=True)
class LeafArrays:
    """The typed arrays of one sparse input: ``pos[li]``/``crd[li]`` per level (None where
    the level has none) and ``val``."""

    leaf: Input
    pos: tuple[Array | None, ...]
    crd: tuple[Array | None, ...]
    val: Array


def size_symbols(program: Node) -> list[str]:
    """Every size symbol the program mentions — its inputs' first, then any other node's
    shape or index map (a later stage of a staged program may broadcast to sizes that only
    an earlier stage's inputs bind) — in first-seen order."""
    seen: list[str] = []

    def add(e) -> None:
        for s in sorted(free_symbols(e)):
            if not s.startswith("_") and s not in seen:
                seen.append(s)
    nodes = topological(program)
    for node in nodes:
        if isinstance(node, Input):
            for n in node.shape:
                add(n)
    for node in nodes:
        for n in node.shape:
            add(n)
        if isinstance(node, SizeOf):
            add(node.size)
        if isinstance(node, ShapeOp):
            im = node.index_map()
            add(im.requires)
            for p in im.pieces:
                for e in (p.guard, p.forward_guard, *p.backward, *p.forward):
                    if e is not None:
                        add(e)
    return seen


@dataclass
class Lowering:
    """One kernel function under construction."""

    index_dtypes: dict[str, dict[str, np.dtype]]
    unit_stride: frozenset[str] = frozenset()   # dense inputs whose last axis is contiguous
    check_reads: str = ""   # an unproved operator's name: dense reads are range-checked
    # a dense output's row loops may run in parallel (lower_stream._rows_parallel decides)
    rows_parallel: bool = False
    # a sparse product's rows accumulate in a sorted workspace (workspace.SortedWorkspace)
    sorted_workspace: bool = False
    b: Builder = field(default_factory=Builder)
    sites: Sites = field(default_factory=Sites)
    params: list[Param] = field(default_factory=list)
    _leaves: dict[str, LeafArrays] = field(default_factory=dict)

    def _param(self, p: Param) -> Param:
        for q in self.params:
            if q.name == p.name:
                return q
        self.params.append(p)
        self.b.reserve(p.name)
        return p

    def sizes(self, program: Node) -> None:
        for s in size_symbols(program):
            self._param(Param(size_var(s), "int", ("size", s)))

    def leaf(self, leaf: Input) -> LeafArrays:
        """The arrays of a sparse input (registered as parameters on first use)."""
        hit = self._leaves.get(leaf.name)
        if hit is not None:
            return hit
        pos, crd = [], []
        dtypes = self.index_dtypes[leaf.name]
        for li, level in enumerate(leaf.format.levels):
            for part, present, out in (("pos", level.has_pos, pos), ("crd", level.has_crd, crd)):
                if present:
                    name = array_var(leaf.name, f"{part}{li}")
                    ct = index_ctype(dtypes[f"{part}{li}"])
                    out.append(self._param(Param(name, "array", ("input", leaf.name,
                                                                 f"{part}{li}"), ct)).array)
                else:
                    out.append(None)
        val = self._param(Param(array_var(leaf.name, "val"), "array",
                                ("input", leaf.name, "val"), storage_ctype(leaf.dtype))).array
        arrays = LeafArrays(leaf, tuple(pos), tuple(crd), val)
        self._leaves[leaf.name] = arrays
        return arrays

    def dense(self, inp: Input, coords: tuple[Expr, ...]) -> Expr:
        """A dense input's element at coordinates (element strides are parameters). With
        ``check_reads`` (a stage of an operator whose maps are not proved) every coordinate
        is tested first; a read outside the array is recorded and reads 0 instead."""
        ok = None
        if self.check_reads:
            coords, ok = self._checked_coordinates(inp, coords)
        val = self._param(Param(array_var(inp.name, "val"), "address", ("dense", inp.name),
                                storage_ctype(inp.dtype))).array
        terms, uses = [], []
        for d, c in enumerate(coords):
            uses += variables(c)
            if d == len(coords) - 1 and inp.name in self.unit_stride:
                terms.append(_atom(c, 9))  # contiguous: consecutive elements, no multiply
                continue
            st = self._param(Param(array_var(inp.name, f"st{d}"), "int",
                                   ("stride", inp.name, d)))
            terms.append(f"{_atom(c)}*{st.name}")
        read = Load(val, Lit(" + ".join(terms) or "0", INT, tuple(dict.fromkeys(uses))))
        return read if ok is None else Cond(ok, read, Lit("0", read.ctype))

    def _checked_coordinates(self, inp: Input, coords):
        b = self.b
        ok = b.fresh("read_ok", BOOL)
        b.assign(ok, Lit("True", BOOL))
        out = []
        for d, c in enumerate(coords):
            site = self.sites.site("map", f"{self.check_reads}: reading {inp.name}, axis {d}")
            var = b.fresh("m")
            b.assign(var, c)
            size = index(inp.shape[d])
            bad = Bin(">=", cast("uint64_t", var), cast("uint64_t", size))
            b.emit(If(((bad, (Raise(site, (var, size)), Assign(var, Lit("0", INT)),
                              Assign(ok, Lit("False", BOOL)))),)))
            out.append(var)
        return tuple(out), ok

    def out(self, part: str, ctype: str) -> Array:
        """An output array (``val``, ``pos1``, ``crd0``, ...), written by the kernel."""
        return self._param(Param(f"out_{part}", "array", ("out", part), ctype,
                                 writable=True)).array

    def size(self, e) -> Expr:
        return index(e)

    def function(self, name: str, returns: tuple[Expr, ...] = ()) -> Function:
        body = self.b.finish()
        checks = any(isinstance(s, Raise) for s in walk_stmts(body))
        return Function(name, tuple(self.params), body, returns, checks=checks)


def _atom(e: Expr, prec: int = 10) -> str:
    return render_expr(e, prec)

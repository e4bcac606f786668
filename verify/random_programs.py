"""Random well-typed programs for differential testing (DESIGN §4): :func:`programs`.

A program is a tree built with ``st.recursive``: leaves are inputs (random format, dtype,
shape — 0-length and size-1 axes included — and data from :mod:`.strategies`), inner nodes
are rows of an **operator table**. Each row declares

* ``requires(shape, limits)`` — which operand shapes it applies to (``squeeze`` needs a
  size-1 axis, ``permute_dims`` two axes, ...);
* ``draw(draw, shape, limits)`` — its parameters for such a shape, including the shapes of
  further operands (``operands``: the second operand of ``+`` must broadcast, concat's must
  agree off the axis); and
* ``build`` / ``source`` — how it is written with ``sparsefold`` functions and printed.

The *result* shape and dtype are not restated: each node is built on the spot, so the
spec's shape rules compute them (and reject what is ill-typed, e.g. ``-x`` of a bool: the
node is then left out). Further operands are subtrees drawn from the program so far when
their shape fits, fresh inputs otherwise, or the first operand itself (a repeated input).
Failures shrink toward fewer nodes, then smaller leaves.

A shape operator's row is part of its entry (``ShapeOp.random_row``, a spec ``RandomRow``
over nodes, adapted here by :func:`as_operator`); the compute rows (maps, reductions,
matmul) are :data:`COMPUTE_ROWS`. :func:`operator_table` collects them, so an entry
registered in ``spec.SHAPE_OPERATORS`` is drawn with no other code. Users may also pass
their own rows: ``programs(operators={**OPERATORS, "flip": Operator(...)})`` (see
``docs/verification.md``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from hypothesis import strategies as st

from sparsefold.spec import SHAPE_OPERATORS
from sparsefold.spec.derived import apply, matmul, reduce
from sparsefold.spec.errors import IllFormedProgram
from sparsefold.spec.ir import RandomRow
from sparsefold.verify.strategies import dense_arrays, format_fits, shapes, sparse_arrays

__all__ = ["programs", "Program", "Term", "Operator", "Limits", "OPERATORS", "UNARY_MAPS",
           "BINARY_MAPS", "COMPUTE_ROWS", "operator_table", "as_operator"]


@dataclass(frozen=True)
class Limits:
    """Bounds every generated program respects (kernels and the interpreter stay quick)."""

    max_dims: int = 3
    max_side: int = 4
    max_size: int = 192          # elements of any intermediate array
    # "pydata": a pydata/sparse COO (n-d); "filled": one with a non-zero fill value
    formats: tuple[str, ...] = ("csr", "csc", "coo", "dense")
    dtypes: tuple[str, ...] = ("float64", "float32", "int64", "int32", "bool")
    adversarial: bool = True     # stored zeros, duplicates/unsorted entries, int64 indices


@dataclass(frozen=True, eq=False)
class Term:
    """A node of a generated program: ``op`` (a table key, or ``"input"``), its operands,
    its parameters, and the node built over the leaves' data (its shape and dtype)."""

    op: str
    args: tuple[Term, ...]
    params: Mapping[str, Any]
    lazy: Any = field(repr=False)  # a sparsefold.LazyArray

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.lazy.shape)


@dataclass(frozen=True)
class Operator:
    """One row of the operator table (see the module docstring)."""

    requires: Callable[[tuple, Limits], bool]
    draw: Callable[..., dict]
    build: Callable[..., Any]  # operand LazyArrays -> LazyArray
    source: str | Callable[[list[str], dict], str]


# --- the table ---------------------------------------------------------------------------------

def _broadcast_partner(draw, st, shape: tuple, limits: Limits) -> tuple:
    """A shape that broadcasts against ``shape`` to ``shape``: a suffix of it, with some axes
    set to 1."""
    keep = draw(st.integers(0, len(shape)))
    sub = list(shape[len(shape) - keep:])
    for d in range(len(sub)):
        if draw(st.booleans()):
            sub[d] = 1
    return tuple(sub)


def _reduce_params(draw, st, shape, limits):
    monoid = draw(st.sampled_from(["sum", "max", "min", "any", "all", "prod"]))
    # prod over one axis only: products of up to max_side small values fit int32
    axes = [d for d in range(len(shape))]
    if monoid == "prod" or not axes or draw(st.booleans()):
        axis = draw(st.sampled_from(axes)) if axes else None
    else:
        axis = draw(st.sampled_from([None, *axes]))
    return {"monoid": monoid, "axis": axis, "keepdims": draw(st.booleans())}


def _matmul_params(draw, st, shape, limits):
    k = shape[-1]
    other = (k,) if draw(st.booleans()) else (k, draw(st.integers(0, limits.max_side)))
    return {"operands": [other]}


# built over spec nodes, as the front end builds x op y; sources are parenthesized: they
# are spliced into each other and into ``{0}[...]``
UNARY_MAPS: dict[str, tuple[Callable, str]] = {
    "negative": (lambda x: apply("negative", x), "(-{0})"),
    "abs": (lambda x: apply("abs", x), "sf.abs({0})"),
    "times2": (lambda x: apply("multiply", x, 2), "({0} * 2)"),
    "plus1": (lambda x: apply("add", x, 1), "({0} + 1)"),
    "positive": (lambda x: apply("greater", x, 0), "({0} > 0)"),
    "half": (lambda x: apply("multiply", x, 0.5), "({0} * 0.5)"),
}

BINARY_MAPS: dict[str, tuple[Callable, str]] = {
    "add": (lambda x, y: apply("add", x, y), "({0} + {1})"),
    "subtract": (lambda x, y: apply("subtract", x, y), "({0} - {1})"),
    "multiply": (lambda x, y: apply("multiply", x, y), "({0} * {1})"),
    "divide": (lambda x, y: apply("divide", x, y), "({0} / {1})"),
    "maximum": (lambda x, y: apply("maximum", x, y), "sf.maximum({0}, {1})"),
    "minimum": (lambda x, y: apply("minimum", x, y), "sf.minimum({0}, {1})"),
}

# Rows that are not shape-operator entries: compute nodes and matmul (the entries' rows are
# on the entries, ``ShapeOp.random_row``).
COMPUTE_ROWS: tuple[RandomRow, ...] = (
    RandomRow("map", lambda s, lim: len(s) <= lim.max_dims,
              lambda draw, st, s, lim: {"fn": draw(st.sampled_from(sorted(UNARY_MAPS)))},
              lambda x, fn: UNARY_MAPS[fn][0](x),
              lambda a, p: UNARY_MAPS[p["fn"]][1].format(*a)),
    RandomRow("binary", lambda s, lim: len(s) <= lim.max_dims,
              lambda draw, st, s, lim: {"fn": draw(st.sampled_from(sorted(BINARY_MAPS))),
                                        "operands": [_broadcast_partner(draw, st, s, lim)]},
              lambda x, y, fn: BINARY_MAPS[fn][0](x, y),
              lambda a, p: BINARY_MAPS[p["fn"]][1].format(*a)),
    RandomRow("reduce", lambda s, lim: 1 <= len(s) <= lim.max_dims, _reduce_params,
              lambda x, monoid, axis, keepdims: reduce(monoid, x, axis, keepdims),
              lambda a, p: f"sf.{p['monoid']}({a[0]}, axis={p['axis']}, "
                           f"keepdims={p['keepdims']})"),
    RandomRow("matmul", lambda s, lim: 1 <= len(s) <= 2, _matmul_params,
              lambda x, y: matmul(x, y), "({0} @ {1})"),
)

# Hypothesis draws a row by its position in the table: this order keeps the derandomized
# CI examples what they were. Rows of entries registered later come last.
_DRAW_ORDER = ("slice", "reshape", "permute_dims", "expand_dims", "squeeze", "broadcast_to",
               "pad", "map", "binary", "concat", "reduce", "matmul")


class _Strategies:
    """Hypothesis's strategies and ``sparsefold.verify.strategies``, as the one namespace a
    row's ``draw`` gets (rows live on spec entries, which import neither)."""

    def __getattr__(self, name: str):
        from sparsefold.verify import strategies as ours
        if name in ours.__all__:
            return getattr(ours, name)
        return getattr(st, name)


_STRATEGIES = _Strategies()


def as_operator(row: RandomRow) -> Operator:
    """A spec :class:`RandomRow` (over nodes) as a table row (over front-end arrays)."""
    def draw(draw, shape, limits):
        return row.draw(draw, _STRATEGIES, shape, limits)

    def build(*arrays, **params):
        import sparsefold as sf
        bindings: dict[str, Any] = {}
        for a in arrays:
            bindings.update(a.bindings)
        return sf.LazyArray(row.build(*(a.node for a in arrays), **params), bindings)
    return Operator(row.applies, draw, build, row.source)


def operator_table(entries=None) -> dict[str, Operator]:
    """The rows random programs are built from: the random row of every entry of
    ``entries`` (default: ``spec.SHAPE_OPERATORS`` as it is now, so registered entries
    join) and the compute rows."""
    entries = SHAPE_OPERATORS if entries is None else entries
    rows = {row.name: row for row in (cls.random_row() for cls in entries.values()) if row}
    rows.update({row.name: row for row in COMPUTE_ROWS})
    order = [n for n in _DRAW_ORDER if n in rows] + [n for n in rows if n not in _DRAW_ORDER]
    return {name: as_operator(rows[name]) for name in order}


OPERATORS: dict[str, Operator] = operator_table()


# --- leaves ------------------------------------------------------------------------------------

@st.composite
def _leaf(draw, limits: Limits, shape: tuple | None = None, prefer: str | None = None):
    """One input array of ``shape`` (drawn if None) in a format that can hold its rank;
    ``prefer``: that format half the time when it fits (a program's inputs mostly share
    one format, as a user's do, which is where the compiled fast paths meet)."""
    if shape is None:
        # 0-d inputs (dense only) now and then; half the leaves without 0/1 sizes, which
        # jit traces as concrete edge cases while every other size is a symbol
        ranks = [d for d in (2, 1, 3, 2, 1, 3, 0) if d <= limits.max_dims
                 and (d or "dense" in limits.formats)]
        nd = draw(st.sampled_from(ranks))
        shape = draw(shapes(nd, nd, limits.max_side,
                            min_side=draw(st.sampled_from([2, 0]))))
    shape = tuple(shape)
    fits = [f for f in limits.formats if format_fits(f, len(shape)) or
            (f in ("pydata", "filled") and len(shape) >= 1)]
    if prefer in fits and draw(st.booleans()):
        fmt = prefer
    else:
        fmt = draw(st.sampled_from(fits or ["dense"]))
    dtype = draw(st.sampled_from(limits.dtypes))
    if fmt == "dense":
        data = draw(dense_arrays(shape, dtype))
    elif fmt in ("pydata", "filled"):
        data = draw(_pydata(shape, dtype, fmt == "filled"))
    else:
        odd = limits.adversarial and draw(st.booleans())
        data = draw(sparse_arrays(
            shape, fmt, dtype,
            explicit_zeros=odd and draw(st.booleans()),
            canonical=not (odd and draw(st.booleans())),
            index_dtype="int64" if odd and draw(st.booleans()) else None))
    import sparsefold as sf
    return Term("input", (), {"array": data}, sf.asarray(data))


@st.composite
def _pydata(draw, shape: tuple, dtype: str, filled: bool):
    """A pydata/sparse COO of ``shape``: stored entries at unique drawn positions; with
    ``filled``, a non-zero fill value (every other coordinate reads it)."""
    import sparse
    coo = draw(sparse_arrays(shape, "coo", dtype, explicit_zeros=draw(st.booleans())))
    dt = np.dtype(dtype)
    fill = dt.type(0)
    if filled:
        fill = dt.type(True) if dt.kind == "b" else dt.type(draw(st.sampled_from(
            [1, 2] if dt.kind == "u" else [1, -1, 2])))
    coords = np.stack([np.asarray(c, dtype=np.int64) for c in coo.coords]) if shape else \
        np.zeros((0, coo.nnz), dtype=np.int64)
    return sparse.COO(coords, np.asarray(coo.data, dtype=dt), shape=shape, fill_value=fill,
                      has_duplicates=False, sorted=True)


# --- inner nodes -------------------------------------------------------------------------------

@st.composite
def _node(draw, children: st.SearchStrategy[Term], table: Mapping[str, Operator],
          limits: Limits):
    x = draw(children)
    names = [n for n, op in table.items() if op.requires(x.shape, limits)]
    if not names:
        return x
    name = draw(st.sampled_from(names))
    params = dict(table[name].draw(draw, x.shape, limits))
    args = [x]
    for want in params.pop("operands", []):
        want = tuple(want)
        choice = draw(st.sampled_from(["subtree", "input", "same"]))
        if choice == "same" and x.shape == want:
            args.append(x)
            continue
        y = draw(children) if choice == "subtree" else None
        args.append(y if y is not None and y.shape == want else draw(_leaf(limits, want)))
    try:
        lazy = table[name].build(*(a.lazy for a in args), **params)
    except IllFormedProgram:
        return x  # ill-typed for these operands (e.g. -x of a bool): leave the node out
    if lazy.ndim > limits.max_dims or math.prod(lazy.shape) > limits.max_size:
        return x
    return Term(name, tuple(args), params, lazy)


@dataclass(frozen=True, eq=False)
class Program:
    """A generated program: call it on arrays like the function it prints as; ``inputs`` are
    the drawn arrays in argument order, ``out`` the drawn output format."""

    root: Term
    table: Mapping[str, Operator] = field(repr=False)
    out: str = "dense"

    @property
    def leaves(self) -> list[Term]:
        """The input terms in argument order (first use, depth first; shared leaves once)."""
        seen: dict[int, Term] = {}

        def walk(t: Term):
            if t.op == "input":
                seen.setdefault(id(t), t)
            for a in t.args:
                walk(a)
        walk(self.root)
        return list(seen.values())

    @property
    def inputs(self) -> tuple:
        return tuple(t.params["array"] for t in self.leaves)

    def __call__(self, *arrays):
        leaves = self.leaves
        if len(arrays) != len(leaves):
            raise TypeError(f"program takes {len(leaves)} arrays, {len(arrays)} given")
        import sparsefold as sf
        env = {id(t): sf.asarray(a) for t, a in zip(leaves, arrays)}

        def build(t: Term):
            if id(t) not in env:
                env[id(t)] = self.table[t.op].build(*(build(a) for a in t.args), **t.params)
            return env[id(t)]
        return build(self.root)

    @property
    def source(self) -> str:
        """The program as a Python lambda over ``x0, x1, ...``."""
        names = {id(t): f"x{p}" for p, t in enumerate(self.leaves)}

        def text(t: Term) -> str:
            if t.op == "input":
                return names[id(t)]
            args = [text(a) for a in t.args]
            src = self.table[t.op].source
            if callable(src):
                return src(args, t.params)
            return src.format(*args, **{k: repr(v) for k, v in t.params.items()})
        return f"lambda {', '.join(names.values())}: {text(self.root)}"

    def __repr__(self) -> str:
        shown = ", ".join(f"x{p}: {_brief(a)}" for p, a in enumerate(self.inputs))
        return f"Program({self.source}, out={self.out!r}; {shown})"

    def _repr_pretty_(self, printer, cycle) -> None:
        # Hypothesis prints falsifying examples with this hook (else dataclass fields)
        printer.text(repr(self))


def _brief(a) -> str:
    fmt = getattr(a, "format", "dense")
    return f"{fmt} {a.dtype} {tuple(a.shape)}"


def programs(*, operators: Mapping[str, Operator] | None = None, max_leaves: int = 3,
             outs: Sequence[str] = ("csr", "csc", "coo", "dcsr", "dense"),
             limits: Limits | None = None) -> st.SearchStrategy[Program]:
    """Well-typed random programs (:class:`Program`) over inputs drawn with ``limits``,
    using the rows of ``operators`` (default :data:`OPERATORS`), with at most
    ``max_leaves`` leaf draws, and an output format from ``outs``. Test one with
    ``verify.differential(p, *p.inputs, out=p.out)``."""
    table = operator_table() if operators is None else dict(operators)
    limits = limits or Limits()
    tree = st.recursive(_leaf(limits), lambda children: _node(children, table, limits),
                        max_leaves=max_leaves)
    # at least one operator at the root: a bare input is not much of a program
    return st.builds(Program, _node(tree, table, limits), st.just(table),
                     st.sampled_from(list(outs)))


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

The *result* shape and dtype are not restated: each node is built through the front end
on the spot, so the spec's shape rules compute them (and reject what is ill-typed, e.g.
``-x`` of a bool: the node is then left out). Further operands are subtrees drawn from the
program so far when their shape fits, fresh inputs otherwise, or the first operand itself
(a repeated input). Failures shrink toward fewer nodes, then smaller leaves.

Users add their own operator with a row: ``programs(operators={**OPERATORS, "flip":
Operator(...)})`` (see ``docs/verification.md``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from hypothesis import strategies as st

import sparsefold as sf
from sparsefold.spec.errors import IllFormedProgram
from sparsefold.verify.strategies import dense_arrays, format_fits, reshape_targets, shapes, \
    slice_keys, sparse_arrays

__all__ = ["programs", "Program", "Term", "Operator", "Limits", "OPERATORS", "UNARY_MAPS",
           "BINARY_MAPS"]


@dataclass(frozen=True)
class Limits:
    """Bounds every generated program respects (kernels and the interpreter stay quick)."""

    max_dims: int = 3
    max_side: int = 4
    max_size: int = 192          # elements of any intermediate array
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
    lazy: sf.LazyArray = field(repr=False)

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.lazy.shape)


@dataclass(frozen=True)
class Operator:
    """One row of the operator table (see the module docstring)."""

    requires: Callable[[tuple, Limits], bool]
    draw: Callable[..., dict]
    build: Callable[..., sf.LazyArray]
    source: str | Callable[[list[str], dict], str]


# --- the table ---------------------------------------------------------------------------------

def _key_source(key: tuple) -> str:
    def one(k):
        if k is None:
            return "None"
        if k is Ellipsis:
            return "..."
        if isinstance(k, slice):
            text = ":".join("" if v is None else str(v) for v in (k.start, k.stop))
            return text + (f":{k.step}" if k.step is not None else "")
        return str(k)
    return ", ".join(one(k) for k in key) if key else "()"


def _broadcast_partner(draw, shape: tuple, limits: Limits) -> tuple:
    """A shape that broadcasts against ``shape`` to ``shape``: a suffix of it, with some axes
    set to 1."""
    keep = draw(st.integers(0, len(shape)))
    sub = list(shape[len(shape) - keep:])
    for d in range(len(sub)):
        if draw(st.booleans()):
            sub[d] = 1
    return tuple(sub)


def _concat_params(draw, shape, limits):
    axis = draw(st.integers(-len(shape), len(shape) - 1))
    other = list(shape)
    other[axis] = draw(st.integers(0, limits.max_side))
    return {"axis": axis, "operands": [tuple(other)]}


def _broadcast_target(draw, shape, limits):
    target = [draw(st.integers(0, limits.max_side)) if n == 1 else n for n in shape]
    if len(shape) < limits.max_dims and draw(st.booleans()):
        target.insert(0, draw(st.integers(0, limits.max_side)))
    return {"shape": tuple(target)}


def _reduce_params(draw, shape, limits):
    monoid = draw(st.sampled_from(["sum", "max", "min", "any", "all", "prod"]))
    # prod over one axis only: products of up to max_side small values fit int32
    axes = [d for d in range(len(shape))]
    if monoid == "prod" or not axes or draw(st.booleans()):
        axis = draw(st.sampled_from(axes)) if axes else None
    else:
        axis = draw(st.sampled_from([None, *axes]))
    return {"monoid": monoid, "axis": axis, "keepdims": draw(st.booleans())}


def _matmul_params(draw, shape, limits):
    k = shape[-1]
    other = (k,) if draw(st.booleans()) else (k, draw(st.integers(0, limits.max_side)))
    return {"operands": [other]}


# sources are parenthesized: they are spliced into each other and into ``{0}[...]``
UNARY_MAPS: dict[str, tuple[Callable, str]] = {
    "negative": (lambda x: -x, "(-{0})"),
    "abs": (lambda x: sf.abs(x), "sf.abs({0})"),
    "times2": (lambda x: x * 2, "({0} * 2)"),
    "plus1": (lambda x: x + 1, "({0} + 1)"),
    "positive": (lambda x: x > 0, "({0} > 0)"),
    "half": (lambda x: x * 0.5, "({0} * 0.5)"),
}

BINARY_MAPS: dict[str, tuple[Callable, str]] = {
    "add": (lambda x, y: x + y, "({0} + {1})"),
    "subtract": (lambda x, y: x - y, "({0} - {1})"),
    "multiply": (lambda x, y: x * y, "({0} * {1})"),
    "divide": (lambda x, y: x / y, "({0} / {1})"),
    "maximum": (lambda x, y: sf.maximum(x, y), "sf.maximum({0}, {1})"),
    "minimum": (lambda x, y: sf.minimum(x, y), "sf.minimum({0}, {1})"),
}


def _nd(lo: int = 0, hi: int | None = None) -> Callable[[tuple, Limits], bool]:
    return lambda shape, limits: lo <= len(shape) <= (limits.max_dims if hi is None else hi)


OPERATORS: dict[str, Operator] = {
    "slice": Operator(
        _nd(),
        lambda draw, s, lim: {"key": draw(slice_keys(s, allow_new_axes=len(s) < lim.max_dims))},
        lambda x, key: x[key],
        lambda a, p: f"{a[0]}[{_key_source(p['key'])}]"),
    "reshape": Operator(
        _nd(),
        lambda draw, s, lim: {"shape": draw(reshape_targets(s, max_dims=lim.max_dims,
                                                             max_side=lim.max_side))},
        lambda x, shape: x.reshape(shape),
        "{0}.reshape({shape})"),
    "permute_dims": Operator(
        _nd(2),
        lambda draw, s, lim: {"axes": tuple(draw(st.permutations(range(len(s)))))},
        lambda x, axes: sf.permute_dims(x, axes),
        "sf.permute_dims({0}, {axes})"),
    "expand_dims": Operator(
        lambda s, lim: len(s) < lim.max_dims,
        lambda draw, s, lim: {"axis": draw(st.integers(-len(s) - 1, len(s)))},
        lambda x, axis: sf.expand_dims(x, axis=axis),
        "sf.expand_dims({0}, axis={axis})"),
    "squeeze": Operator(
        lambda s, lim: 1 in s,
        lambda draw, s, lim: {"axis": draw(st.sampled_from([d for d, n in enumerate(s)
                                                             if n == 1]))},
        lambda x, axis: sf.squeeze(x, axis=axis),
        "sf.squeeze({0}, axis={axis})"),
    "broadcast_to": Operator(
        lambda s, lim: 1 in s or len(s) < lim.max_dims,
        _broadcast_target,
        lambda x, shape: sf.broadcast_to(x, shape),
        "sf.broadcast_to({0}, {shape})"),
    "pad": Operator(
        _nd(1),
        lambda draw, s, lim: {
            "widths": tuple((draw(st.integers(0, 2)), draw(st.integers(0, 2))) for _ in s),
            "value": draw(st.sampled_from([0, 0, 1]))},
        lambda x, widths, value: sf.pad(x, widths, constant_values=value),
        "sf.pad({0}, {widths}, constant_values={value})"),
    "map": Operator(
        _nd(),
        lambda draw, s, lim: {"fn": draw(st.sampled_from(sorted(UNARY_MAPS)))},
        lambda x, fn: UNARY_MAPS[fn][0](x),
        lambda a, p: UNARY_MAPS[p["fn"]][1].format(*a)),
    "binary": Operator(
        _nd(),
        lambda draw, s, lim: {"fn": draw(st.sampled_from(sorted(BINARY_MAPS))),
                              "operands": [_broadcast_partner(draw, s, lim)]},
        lambda x, y, fn: BINARY_MAPS[fn][0](x, y),
        lambda a, p: BINARY_MAPS[p["fn"]][1].format(*a)),
    "concat": Operator(
        _nd(1),
        _concat_params,
        lambda x, y, axis: sf.concat([x, y], axis=axis),
        "sf.concat([{0}, {1}], axis={axis})"),
    "reduce": Operator(
        _nd(1),
        _reduce_params,
        lambda x, monoid, axis, keepdims: getattr(sf, monoid)(x, axis=axis, keepdims=keepdims),
        lambda a, p: f"sf.{p['monoid']}({a[0]}, axis={p['axis']}, keepdims={p['keepdims']})"),
    "matmul": Operator(
        _nd(1, 2),
        _matmul_params,
        lambda x, y: x @ y,
        "({0} @ {1})"),
}


# --- leaves ------------------------------------------------------------------------------------

@st.composite
def _leaf(draw, limits: Limits, shape: tuple | None = None):
    """One input array of ``shape`` (drawn if None) in a format that can hold its rank."""
    if shape is None:
        # 0-d inputs (dense only) now and then; half the leaves without 0/1 sizes, which
        # jit traces as concrete edge cases while every other size is a symbol
        ranks = [d for d in (2, 1, 3, 2, 1, 3, 0) if d <= limits.max_dims
                 and (d or "dense" in limits.formats)]
        nd = draw(st.sampled_from(ranks))
        shape = draw(shapes(nd, nd, limits.max_side,
                            min_side=draw(st.sampled_from([2, 0]))))
    shape = tuple(shape)
    fits = [f for f in limits.formats if format_fits(f, len(shape))]
    fmt = draw(st.sampled_from(fits or ["dense"]))
    dtype = draw(st.sampled_from(limits.dtypes))
    if fmt == "dense":
        data = draw(dense_arrays(shape, dtype))
    else:
        odd = limits.adversarial and draw(st.booleans())
        data = draw(sparse_arrays(
            shape, fmt, dtype,
            explicit_zeros=odd and draw(st.booleans()),
            canonical=not (odd and draw(st.booleans())),
            index_dtype="int64" if odd and draw(st.booleans()) else None))
    return Term("input", (), {"array": data}, sf.asarray(data))


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
    table = dict(OPERATORS if operators is None else operators)
    limits = limits or Limits()
    tree = st.recursive(_leaf(limits), lambda children: _node(children, table, limits),
                        max_leaves=max_leaves)
    # at least one operator at the root: a bare input is not much of a program
    return st.builds(Program, _node(tree, table, limits), st.just(table),
                     st.sampled_from(list(outs)))


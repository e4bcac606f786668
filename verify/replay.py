"""Counterexamples to equalities of programs, replayed through the reference interpreter.

A model from Z3 gives sizes and an output coordinate. :func:`find_counterexample` turns it
into concrete programs (sizes substituted), tries a few kinds of concrete input data —
distinct *tags* first (any wrong element shows up), then NaN, infinities, zeros — evaluates
both sides with ``sparsefold.interp.evaluate`` and keeps the first data on which they differ.
Only then is the counterexample reported; it prints as

    sizes={I: 1, J: 2} k=(0, 1) lhs=A[0,1] rhs=B[0,0]  (replayed with tags: 2.0 != 5.0)

and :meth:`Counterexample.as_test` writes a pytest function that reproduces it.
"""

from __future__ import annotations

import math
import textwrap
from dataclasses import dataclass, field
from itertools import product

import numpy as np

from sparsefold.spec import sizes as sz
from sparsefold.spec.compute import Input, Literal, Map, Reduce
from sparsefold.spec.errors import SparsefoldError
from sparsefold.spec.ir import Node, ShapeOp
from sparsefold.verify.obligations import py_eval
from sparsefold.verify.programs import input_nodes, substitute_program, symbols_of

__all__ = ["Counterexample", "find_counterexample", "term", "DATA_KINDS"]

DATA_KINDS = ("tags", "negated tags", "nan", "inf", "zeros", "nan at first")


def _data(kind: str, inputs: dict[str, Input], offset_step: int = 100):
    out = {}
    for n, (name, node) in enumerate(sorted(inputs.items())):
        shape = tuple(sz.const_value(s) for s in node.shape)
        size = int(np.prod(shape, dtype=np.int64))
        dt = node.dtype
        tags = np.arange(1, size + 1, dtype=np.int64) + offset_step * (n + 1)
        if dt.kind == "b":
            base = (tags % 2).astype(bool)
        elif kind == "negated tags":
            base = -tags
        elif kind == "zeros":
            base = np.zeros(size, dtype=np.int64)
        else:
            base = tags
        arr = base.astype(dt).reshape(shape)
        if dt.kind in "fc" and size:
            if kind == "nan":
                arr[...] = np.nan
            elif kind == "inf":
                arr[...] = np.inf
            elif kind == "nan at first":
                arr.reshape(-1)[0] = np.nan
        elif kind in ("nan", "inf", "nan at first"):
            return None  # nothing new for integer data
        out[name] = arr
    return out


def _same(a, b) -> bool:
    if np.shape(a) != np.shape(b):
        return False
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype.kind in "fc" or b.dtype.kind in "fc":
        return bool(np.all((a == b) | (np.isnan(a) & np.isnan(b))))
    return bool(np.all(a == b))


@dataclass
class Counterexample:
    """Concrete sizes, an output coordinate, and data on which ``lhs`` and ``rhs`` differ."""

    lhs: Node                      # with sizes substituted (concrete)
    rhs: Node | None               # None when the right-hand side is ill-formed there
    sizes: dict[str, int]
    coord: tuple[int, ...] | None
    obligation: str
    inputs: dict[str, np.ndarray] = field(default_factory=dict)
    data: str = ""
    lhs_value: object = None
    rhs_value: object = None
    reason: str = ""

    def replay(self) -> bool:
        """Evaluate both sides again with the interpreter: True when they still differ
        (or the right-hand side fails, where the left-hand side does not)."""
        from sparsefold.interp import evaluate
        left = evaluate(self.lhs, self.inputs)
        if self.rhs is None:
            return True
        try:
            right = evaluate(self.rhs, self.inputs)
        except SparsefoldError:
            return True
        if left.shape != right.shape or left.dtype != right.dtype:
            return True
        if self.coord is not None and left.shape and all(
                0 <= c < n for c, n in zip(self.coord, left.shape)):
            return not _same(left[self.coord], right[self.coord])
        return not _same(left, right)

    def terms(self) -> tuple[str, str]:
        if self.coord is None or self.rhs is None:
            return "", ""
        return term(self.lhs, self.coord), term(self.rhs, self.coord)

    def __str__(self) -> str:
        sizes = "{" + ", ".join(f"{k}: {v}" for k, v in sorted(self.sizes.items())) + "}"
        text = f"sizes={sizes}"
        if self.coord is not None:
            lt, rt = self.terms()
            text += f" k={self.coord} lhs={lt} rhs={rt}"
        if self.reason:
            text += f"  ({self.reason})"
        elif self.data:
            text += f"  (replayed with {self.data}: {_show(self.lhs_value)} != " \
                    f"{_show(self.rhs_value)})"
        return text

    def as_test(self, name: str = "test_counterexample") -> str:
        """A pytest function that reproduces the counterexample: it fails (with
        ``AssertionError`` or the right-hand side's own error) while the two sides differ."""
        from sparsefold.verify.source import grouped_imports, program_source
        imports = {"import numpy as np", "from sparsefold.interp import evaluate"}
        lines = []
        li, ll = program_source(self.lhs, "lhs")
        imports.update(li)
        lines += ll
        if self.rhs is not None:
            ri, rl = program_source(self.rhs, "rhs")
            imports.update(ri)
            lines += rl
        lines.append("inputs = {" + ", ".join(f"{k!r}: {_array_source(v)}"
                                             for k, v in sorted(self.inputs.items())) + "}")
        lines.append("left = evaluate(lhs, inputs)")
        if self.rhs is None:
            message = "right-hand side is ill-formed: " + self.reason
            lines.append(f"raise AssertionError({message!r})")
        else:
            lines.append("right = evaluate(rhs, inputs)")
            lines.append("assert left.shape == right.shape and left.dtype == right.dtype")
            lines.append("np.testing.assert_array_equal(left, right)")
        body = "\n".join("    " + x for x in grouped_imports(imports) + lines)
        doc = textwrap.fill("Found by sparsefold.verify: " + str(self), 90,
                            subsequent_indent="    ").replace('"""', "'''")
        doc = doc.replace("\\", "/")
        return f'def {name}():\n    """{doc}\n    """\n{body}\n'


def _show(v) -> str:
    if isinstance(v, np.ndarray) and v.ndim == 0:
        v = v[()]
    return repr(v.item()) if isinstance(v, np.generic) else repr(v)


def _array_source(a: np.ndarray) -> str:
    def item(x):
        if isinstance(x, list):
            return "[" + ", ".join(item(y) for y in x) + "]"
        if isinstance(x, float) and not math.isfinite(x):
            return f"float({str(x)!r})"
        return repr(x)
    return f"np.array({item(a.tolist())}, dtype={str(a.dtype)!r}).reshape({a.shape!r})"


def term(node: Node, coord: tuple[int, ...]) -> str:
    """The value of a concrete program at ``coord`` as a term over input elements:
    ``A[0,1]``, ``multiply(0, B[2])``, ``sum(A[0,0], A[0,1])``."""
    coord = tuple(int(c) for c in coord)
    if isinstance(node, Input):
        return node.name + ("[" + ",".join(map(str, coord)) + "]" if coord else "")
    if isinstance(node, Literal):
        return repr(node.value)
    if isinstance(node, ShapeOp):
        im = node.index_map()
        env = sz.out_binding(coord)
        for p in im.pieces:
            if py_eval(p.guard, env):
                sub = tuple(py_eval(b, env) for b in p.backward)
                return term(node.operands()[p.operand], sub)
        fill = im.fill.item() if isinstance(im.fill, np.generic) else im.fill
        return f"fill({fill!r})"
    if isinstance(node, Map):
        args = []
        for a in node.args:
            lead = node.ndim - a.ndim
            sub = tuple(0 if sz.const_value(n) == 1 else coord[lead + d]
                        for d, n in enumerate(a.shape))
            args.append(term(a, sub))
        return f"{node.fn.name}({', '.join(args)})"
    if isinstance(node, Reduce):
        ranges = [range(sz.const_value(node.arg.shape[a])) for a in node.axes]
        items = []
        for js in product(*ranges):
            full, it, rest = [], iter(js), iter(coord)
            for d in range(node.arg.ndim):
                full.append(next(it) if d in node.axes else next(rest))
            items.append(term(node.arg, tuple(full)))
        if len(items) > 6:
            items = items[:3] + ["…"] + items[-1:]
        return f"{node.monoid}({', '.join(items)})"
    return f"<{type(node).__name__}>"


def find_counterexample(lhs: Node, rhs: Node, sizes: dict[str, int],
                        coord: tuple[int, ...] | None, obligation: str,
                        kinds=DATA_KINDS) -> Counterexample | None:
    """Replay a model through the interpreter; the counterexample, or ``None`` when no data
    kind makes the two sides differ (the model is then not confirmed)."""
    from sparsefold.interp import evaluate
    values = {k: v for k, v in sizes.items() if not k.startswith("_")}
    for name in sorted(symbols_of(lhs) | symbols_of(rhs)):
        values.setdefault(name, 2)  # not in the query: unconstrained, any small value
    try:
        left_program = substitute_program(lhs, values)
    except SparsefoldError:
        return None  # the model violates the left-hand side's own preconditions
    try:
        right_program = substitute_program(rhs, values)
    except SparsefoldError as exc:
        return Counterexample(left_program, None, values, coord, obligation,
                              _data("tags", input_nodes(left_program)) or {}, "tags",
                              reason=f"right-hand side is ill-formed here: {exc}")
    inputs = input_nodes(left_program) | input_nodes(right_program)
    for kind in kinds:
        data = _data(kind, inputs)
        if data is None:
            continue
        try:
            left = evaluate(left_program, data)
        except SparsefoldError:
            return None
        try:
            right = evaluate(right_program, data)
        except (SparsefoldError, IndexError) as exc:
            return Counterexample(left_program, right_program, values, coord, obligation,
                                  data, kind, reason=f"right-hand side fails: {exc}")
        cx = Counterexample(left_program, right_program, values, coord, obligation, data, kind)
        if left.shape != right.shape or left.dtype != right.dtype:
            cx.reason = (f"shapes/dtypes differ: {left.dtype}{left.shape} vs "
                         f"{right.dtype}{right.shape}")
            return cx
        at = coord if coord is not None and left.ndim == len(coord) and all(
            0 <= c < n for c, n in zip(coord, left.shape)) else None
        if at is not None and not _same(left[at], right[at]):
            cx.lhs_value, cx.rhs_value = left[at], right[at]
            return cx
        if not _same(left, right):
            where = tuple(int(x) for x in np.argwhere(~_elementwise_same(left, right))[0])
            cx.coord, cx.lhs_value, cx.rhs_value = where, left[where], right[where]
            return cx
    return None


def _elementwise_same(a, b):
    if a.dtype.kind in "fc":
        return (a == b) | (np.isnan(a) & np.isnan(b))
    return a == b

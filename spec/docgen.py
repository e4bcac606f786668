"""The language reference, generated from the spec so that it cannot drift from it.

    python -m sparsefold.spec.docgen > docs/language.md

Everything in the reference is *read* from the definitions: the index-expression table
(:data:`sizes.OPS` and its C reading), every entry of :data:`SHAPE_OPERATORS` instantiated on
symbolic inputs (its docstring, shape rule, requirements, fill and, per piece, guard,
backward map, forward guard and forward map, printed as index expressions), the derived
operators as the programs they are built from, the compute nodes, the elementwise functions
with their declared facts, the monoids, the named formats with their levels, and the error
classes. The only text written here is connective prose and the choice of examples.

A shape operator's examples are part of its entry (``examples()``); the test suite checks
that every operator is documented and that docs/language.md equals :func:`render`.
"""

from __future__ import annotations

import inspect
import sys
from collections.abc import Callable

import numpy as np

from sparsefold.spec import (
    SHAPE_OPERATORS,
    compute,
    derived,
    derived_shape,
    einsum,
    errors,
    fills,
    formats,
    indexing,
    reductions,
)
from sparsefold.spec import sizes as sz
from sparsefold.spec.compute import Input, symbolic_input
from sparsefold.spec.functions import FUNCTIONS, MONOIDS, cast_function, cast_name
from sparsefold.spec.ir import Node, ShapeOp, show_shape
from sparsefold.spec.printer import show_program

__all__ = ["render", "main", "EXAMPLES", "DERIVED", "derived_programs"]

F64 = np.dtype("float64")


_in = symbolic_input  # _in("A", I, J) is A: float64[I, J]

I, J, K, N = (sz.Sym(s) for s in "IJKN")  # noqa: E741 - the sizes' names in the math and docs


# --- derived operators: compositions of entries (defined in spec/derived.py) ---------------

# name -> (composition, [(call as a user writes it, the program it denotes)])
DERIVED: dict[str, tuple[str, list[tuple[str, Callable[[], Node]]]]] = {
    "reshape": (
        "Row-major (C order) reshape, `-1` allowed once. Planned by `reshape_steps` as a chain "
        "of `collapse` and `split` (plus `expand_dims`/`squeeze` for size-1 axes), grouping "
        "axes where products of consecutive input and output sizes agree.",
        [("reshape(A, (I, J*K))  with A: (I, J, K)",
          lambda: derived.reshape(_in("A", I, J, K), (I, J * K))),
         ("reshape(A, (-1,))  with A: (I, J)", lambda: derived.reshape(_in("A", I, J), (-1,))),
         ("reshape(A, (I, J))  with A: (I*J,)",
          lambda: derived.reshape(_in("A", I * J), (I, J)))]),
    "stack": (
        "`stack(arrays, axis)` = `concat([expand_dims(a, axis) for a in arrays], axis)`.",
        [("stack([A, B], axis=0)  with A, B: (I, J)",
          lambda: derived.stack([_in("A", I, J), _in("B", I, J)], axis=0))]),
    "hstack": (
        "NumPy's rule: `concat(arrays, axis=1)`, or `axis=0` when the arrays are 1-d.",
        [("hstack([A, B])  with A: (I, J), B: (I, K)",
          lambda: derived.hstack([_in("A", I, J), _in("B", I, K)])),
         ("hstack([v, w])  with v: (N,), w: (K,)",
          lambda: derived.hstack([_in("v", N), _in("w", K)]))]),
    "vstack": (
        "NumPy's rule: 1-d arrays become rows (`reshape(a, (1, -1))`), then "
        "`concat(arrays, axis=0)`.",
        [("vstack([A, B])  with A: (I, J), B: (K, J)",
          lambda: derived.vstack([_in("A", I, J), _in("B", K, J)])),
         ("vstack([v, w])  with v, w: (N,)",
          lambda: derived.vstack([_in("v", N), _in("w", N)]))]),
    "matmul": (
        "NumPy's `matmul`: `sum(x1[..., :, :, None] * x2[..., None, :, :], axis=-2)` "
        "accumulated in the product's dtype (int32 stays int32, bool is *or*), leading "
        "(batch) axes broadcast by `multiply`. A 1-d `x1` is first given a leading size-1 "
        "axis and a 1-d `x2` a trailing one; those axes are squeezed from the result. "
        "Contraction is not a node: the engines recognise `sum(multiply(...))`.",
        [("matmul(A, B)  with A: (I, J), B: (J, K)",
          lambda: derived.matmul(_in("A", I, J), _in("B", J, K))),
         ("matmul(A, x)  with A: (I, J), x: (J,)",
          lambda: derived.matmul(_in("A", I, J), _in("x", J)))]),
    "tensordot": (
        "`np.tensordot`: move the free axes of `x1` first and its contracted axes last, the "
        "contracted axes of `x2` first and its free axes last (`permute_dims`), pad both with "
        "size-1 axes so they broadcast, `multiply`, and `sum` over the contracted axes "
        "(accumulating in the product's dtype). `axes=n` pairs the last `n` axes of `x1` "
        "with the first `n` of `x2`.",
        [("tensordot(A, B, axes=2)  with A: (I, J, K), B: (J, K, N)",
          lambda: derived.tensordot(_in("A", I, J, K), _in("B", J, K, N), axes=2))]),
    "dot": (
        "`np.dot`: a product with a 0-d array; otherwise `tensordot(x1, x2, ([-1], [-2]))` "
        "(the last axis of `x2` when it is 1-d): free axes of `x1` first.",
        [("dot(A, B)  with A: (I, J, K), B: (N, K, J)",
          lambda: einsum.dot(_in("A", I, J, K), _in("B", N, K, J)))]),
    "outer": ("`np.outer`: both flattened, `x1[:, None] * x2[None, :]`.",
              [("outer(v, w)  with v: (N,), w: (K,)",
                lambda: einsum.outer(_in("v", N), _in("w", K)))]),
    "vecdot": ("The array API's `vecdot`: `sum(conj(x1) * x2, axis)` over the broadcast "
               "shape (no `conj` for real dtypes).",
               [("vecdot(A, B)  with A, B: (I, J)",
                 lambda: einsum.vecdot(_in("A", I, J), _in("B", I, J)))]),
    "einsum": (
        "`np.einsum`, operand by operand: a label repeated within an operand reads its "
        "`diagonal`; operands are permuted into one label order and padded with size-1 "
        "axes, multiplied into the running product, and every label no later operand and "
        "not the output uses is summed away at once (each step a two-operand contraction).",
        [("einsum('ij,jk,kl->il', A, B, C)  with A: (I, J), B: (J, K), C: (K, N)",
          lambda: einsum.einsum("ij,jk,kl->il", _in("A", I, J), _in("B", J, K),
                                _in("C", K, N))),
         ("einsum('ii->i', A)  with A: (N, N)", lambda: einsum.einsum("ii->i", _in("A", N, N)))]),
    "swapaxes / matrix_transpose": (
        "A permutation; `matrix_transpose(x)` (`x.mT`) swaps the last two axes.",
        [("matrix_transpose(A)  with A: (N, I, J)",
          lambda: derived_shape.matrix_transpose(_in("A", N, I, J)))]),
    "tile / repeat": (
        "A size-1 axis broadcast to the count and collapsed with its neighbour: before the "
        "axis for `tile` (the axis repeats), after it for `repeat` (each element repeats).",
        [("tile(A, (2, 3))  with A: (I, J)", lambda: derived_shape.tile(_in("A", I, J), (2, 3))),
         ("repeat(A, 2, axis=0)  with A: (I, J)",
          lambda: derived_shape.repeat(_in("A", I, J), 2, 0))]),
    "diff": ("`np.diff`: `x[1:] - x[:-1]` along the axis (`!=` for bool), `n` times; "
             "`prepend`/`append` concatenated first.",
             [("diff(A, axis=1)  with A: (I, J)", lambda: derived_shape.diff(_in("A", I, J)))]),
    "reshape(order='F')": (
        "Axes reversed, reshaped row-major to the reversed shape, reversed back.",
        [("reshape(A, (J, I), order='F')  with A: (I, J)",
          lambda: derived_shape.reshape_order(_in("A", I, J), (J, I), "F"))]),
    "block_array": (
        "scipy's `block_array`: each row of blocks a concat along axis 1, the rows a concat "
        "along axis 0; a `None` block is padding of the block beside it (zeros, nothing "
        "stored); `dtype=` casts every block first.",
        [("block_array([[A, None], [None, B]])  with A: (I, J), B: (K, N)",
          lambda: derived_shape.block_array([[_in("A", I, J), None], [None, _in("B", K, N)]]))]),
    "gather: x[i], take, compress, boolean masks": (
        "Integer-array indexing, NumPy's rules: `gather` reads its operand through index "
        "arrays — dense integer inputs of the program — the way a level reads `crd` "
        "(`out[.., k, ..] = x[.., norm(i[k]), ..]`, `norm(v) = v + n` for `v < 0`; a value "
        "outside `[-n, n)` is `InvalidIndex`, an `IndexError`). Several index arrays "
        "broadcast to one shape, whose axes replace the indexed ones where the first was "
        "when the advanced indices are adjacent, and come first otherwise; integers in such "
        "a key are indices too. A boolean mask is its `nonzero()` (so it must be data), "
        "`take(x, i, axis)` is `x[(:,) * axis + (i,)]`, `compress(c, x, axis)` is "
        "`take(x, nonzero(c), axis)`. Its map reads data, so it is not a table entry: "
        "`verify/gather.py` proves its bounds and its order (given a sorted index array, "
        "checked at run time) with the index array uninterpreted.",
        [("A[:, i]  with A: (I, J), i: int64 (K,)",
          lambda: indexing.getitem(_in("A", I, J), (slice(None), _index("i", K)))),
         ("A[i, :, j]  with A: (I, J, N), i, j: int64 (K,)",
          lambda: indexing.getitem(_in("A", I, J, N), (_index("i", K), slice(None),
                                                       _index("j", K))))]),
    "mean": (
        "`np.mean`: the sum in the accumulation dtype (float64 for integers and bool, float32 "
        "for float16) divided by the element count (`sizeof`), cast to the result dtype.",
        [("mean(A, axis=1)  with A: (I, J)", lambda: reductions.mean(_in("A", I, J), 1))]),
    "var / std": (
        "`np.var`: the mean with kept axes, squared deviations (`re² + im²` for complex), their "
        "sum over `maximum(count - correction, 0)`; `std` its `sqrt`.",
        [("var(A, axis=0, correction=1)  with A: (I, J)",
          lambda: reductions.var(_in("A", I, J), 0, correction=1))]),
    "argmax / argmin": (
        "The smallest coordinate (`iota`) where the array equals its maximum or is NaN (NumPy "
        "reports the first NaN); `axis=None` reads the flattened array.",
        [("argmax(A, axis=1)  with A: (I, J)", lambda: reductions.argmax(_in("A", I, J), 1))]),
    "nansum / nanprod / nanmax / nanmin / nanmean / nanvar / nanstd": (
        "NaNs replaced by the identity (`nanmax`: by -inf, and a slice of NaNs only is NaN "
        "again); the `nanmean` family divides by the count of non-NaN elements.",
        [("nanmax(A, axis=0)  with A: (I, J)", lambda: reductions.nanmax(_in("A", I, J), 0))]),
    "count_nonzero": ("The sum of `x != 0` as intp.",
                      [("count_nonzero(A)  with A: (I, J)",
                        lambda: reductions.count_nonzero(_in("A", I, J)))]),
    "max(explicit=True)": (
        "scipy's `explicit=True`: the maximum of the nonzero elements, 0 where there is "
        "none. (scipy reads stored elements, so a stored 0 counts there; the language's "
        "values do not record storage.)",
        [("max(A, axis=1, explicit=True)  with A: (I, J)",
          lambda: reductions.explicit_extreme("max", _in("A", I, J), 1))]),
}


def _index(name: str, *shape) -> Node:
    return symbolic_input(name, *shape, dtype="int64")


def _examples_by_name() -> dict[str, list[tuple[str, Callable[[], ShapeOp]]]]:
    return {name: [(call, (lambda node=node: node)) for call, node in cls.examples()]
            for name, cls in SHAPE_OPERATORS.items()}


# Kept for ``docgen.EXAMPLES``: the built-in entries' examples() by name, as (call, builder).
EXAMPLES = _examples_by_name()


def derived_programs() -> dict[str, list[tuple[str, Node]]]:
    """The derived operators' example programs, built (for tests and the reference)."""
    return {name: [(call, build()) for call, build in examples]
            for name, (_, examples) in DERIVED.items()}


# --- rendering ------------------------------------------------------------------------------

def _doc(obj) -> str:
    return inspect.getdoc(obj) or ""


def _cell(text: str) -> str:
    """Text for a Markdown table cell."""
    return str(text).replace("|", "\\|").replace("\n", " ")


def _code(e) -> str:
    return f"`{e}`"


def _guard(e: sz.Expr) -> str:
    return "`true`" if e == sz.TRUE else _code(e)


def _tuple(exprs) -> str:
    return "(" + ", ".join("free" if e is None else str(e) for e in exprs) + \
        ("," if len(exprs) == 1 else "") + ")"


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]
    return out


def _section_sizes() -> list[str]:
    lines = [
        "## 1. Sizes and index expressions", "",
        "Sizes (`I*J`, `(E - S + 2) // 3`) and coordinate maps (`_k0 // J`) are expressions "
        "over integer constants and symbols. Every symbol is non-negative. Coordinate "
        "symbols are `_k0, _k1, ...` (an operator's output) and `_i0, _i1, ...` (an operand); "
        "user symbols may not start with `_`. Predicates are integers (true is 1). "
        "`//` and `%` are floor division and modulo; wherever the language uses them the "
        "dividend is non-negative and the divisor at least 1, so they agree with C's `/` and "
        "`%` (the kernels use `cdivision`) and with Z3's `div`/`mod`.", "",
        "One table, several readings: the NumPy column *is* each operator's meaning "
        "(the interpreter evaluates it on coordinate grids); the C column is the text the "
        "Cython emitter prints (`sizes.C`); constant folding uses exact Python integers "
        "(`sizes.PYTHON`); the Z3 reading (`sizes_z3.Z3_TABLE`, used by the verifier and by the "
        "compiler's order proofs) is built from the NumPy one by overrides.",
        "",
    ]
    rows = []
    for name, info in sz.OPS.items():
        args = ("a", "b", "c")[:info.arity]
        rows.append([f"`{name}`", str(info.arity), _code(info.infix) if info.infix else "",
                     f"`np.{info.numpy.__name__}`", _code(sz.C[name](*args))])
    lines += _table(["operator", "arity", "infix", "NumPy meaning", "C reading"], rows)
    return lines + [""]


def _render_entry(call: str, node: ShapeOp) -> list[str]:
    im = node.index_map()
    lines = [f"*Example:* `{call}`", ""]
    for p, (operand, shape) in enumerate(zip(node.operands(), im.in_shapes)):
        lines.append(f"- operand {p}: `{operand.name if isinstance(operand, Input) else p}` "
                     f"of shape `{show_shape(shape)}`")
    lines += [f"- parameters: `{_param_text(node.params())}`",
              f"- **shape rule:** output shape `{show_shape(im.out_shape)}`"]
    if im.requires != sz.TRUE:
        lines.append(f"- **requires:** `{im.requires}`")
    lines.append(f"- **fill:** `{im.fill}` (in the operand's dtype)" if im.fill is not None else
                 "- **fill:** none (the pieces cover the output)")
    lines.append("")
    k = _tuple(sz.out_coords(len(im.out_shape)))
    rows = []
    for piece in im.pieces:
        i = _tuple(sz.in_coords(len(im.in_shapes[piece.operand])))
        rows.append([str(piece.operand), _guard(piece.guard),
                     _code(f"{i} = {_tuple(piece.backward)}"), _guard(piece.forward_guard),
                     _code(f"{k} = {_tuple(piece.forward)}")])
    lines += _table(["piece", "guard (on `_k`)", "backward map", "forward guard (on `_i`)",
                     "forward map"], rows)
    return lines + [""]


def _param_text(params: dict) -> str:
    def show(v):
        if isinstance(v, tuple):
            return "(" + ", ".join(show(x) for x in v) + ("," if len(v) == 1 else "") + ")"
        return str(v)
    return ", ".join(f"{k}={show(v)}" for k, v in params.items())


def _section_shape_ops() -> list[str]:
    lines = [
        "## 2. Shape operators", "",
        "Each shape operator is one entry (one class in `spec/ops_*.py`). Instantiated on "
        "operand shapes it gives the output shape, preconditions on symbolic sizes, an "
        "optional fill value, and one *piece* per contributing operand: a guard and a "
        "backward map over output coordinates `_k`, a forward guard and a forward map over "
        "the operand's coordinates `_i` (`free` in a forward map: every value of that output "
        "coordinate receives the element, as in broadcasting). Its meaning is one gather:", "",
        "```", "out[k] = operand_p[backward_p(k)]   for the piece p whose guard_p(k) holds",
        "out[k] = fill                        when no guard holds", "```", "",
        "The interpreter evaluates exactly that; the compiler iterates the forward maps; the "
        "verifier proves both directions inverse, in bounds and order-preserving.", "",
    ]
    missing = sorted(name for name, cls in SHAPE_OPERATORS.items()
                     if not any(type(node) is cls for _, node in cls.examples()))
    if missing:
        raise KeyError(f"no documentation example for shape operator(s) {missing}; give the "
                       f"entry an examples() classmethod")
    for name, cls in SHAPE_OPERATORS.items():
        lines += [f"### `{name}` ({cls.__name__})", "", _doc(cls), ""]
        for call, node in cls.examples():
            lines += _render_entry(call, node)
    return lines


def _section_derived() -> list[str]:
    lines = ["## 3. Derived operators", "",
             "These are not entries: the front end builds them from entries and compute "
             "nodes, exactly as the programs below show (`show_program` form).", ""]
    programs = derived_programs()
    for name, (composition, _) in DERIVED.items():
        lines += [f"### `{name}`", "", composition, ""]
        for call, node in programs[name]:
            lines += [f"*Example:* `{call}` has shape `{show_shape(node.shape)}`:", "", "```",
                      show_program(node), "```", ""]
    return lines


def _section_compute() -> list[str]:
    lines = ["## 4. Compute nodes", ""]
    for cls in (compute.Input, compute.Literal, compute.SizeOf, compute.Iota, compute.Map,
                compute.Reduce):
        lines += [f"### `{cls.__name__}`", "", _doc(cls), ""]
    return lines


def _facts(fn) -> tuple[str, str]:
    ann = ", ".join(map(str, fn.annihilates))
    if ann and fn.annihilation_needs_finite:
        ann += " (finite operands)"
    return ann, "" if fn.identity is None else repr(fn.identity)


def _c_reading(fn) -> str:
    """The Cython reading: one text, or one per dtype kind group (``f``: floats, ``b``:
    bool, ``i``/``u``: signed/unsigned integers); kinds without one are not compiled."""
    if fn.c_expr is None:
        return ""
    if isinstance(fn.c_expr, str):
        return _code(fn.c_expr)
    return "; ".join(f"{kinds}: {_code(text)}" for kinds, text in fn.c_expr)


def _value_at_zero(fn) -> str:
    """``f(0, ..., 0)`` in the first dtype of float64, int64, bool with a NumPy loop."""
    for dt in (F64, np.dtype("int64"), np.dtype("bool")):
        try:
            with np.errstate(all="ignore"):
                value = fn.value_at_zero((dt,) * fn.arity)
        except (TypeError, ValueError):
            continue
        return f"{value!r} ({dt})" if dt != F64 else str(value)
    return ""


def _section_functions() -> list[str]:
    lines = [
        "## 5. Elementwise functions", "",
        "A function's meaning is its NumPy implementation under NumPy's broadcasting and "
        "type promotion (NEP 50: Python scalars are weak, so `float32_array * 2` stays "
        "float32). Its declared facts tell the compiler how it may iterate sparse operands: "
        "*annihilates* lists argument positions where a 0 makes the result 0 (an "
        "intersection merge is exact; for floats only with finite other operands, since "
        "`0 * nan` is `nan`); *identity* is `e` with `f(x, e) == f(e, x) == x`; "
        "`f(0, ..., 0)` is the output's fill value (a union merge is exact when it is 0). "
        "The Cython reading is one text, or one per dtype kind (`f` floats, `b` bool, `i`/`u` "
        "integers) where C's meaning differs (`maximum` must propagate NaN); a kind without "
        "one is not compiled yet. "
        "User functions are added with `register_function`; declared facts are checked on "
        "sample values. How each built-in's zero algebra is known — proved by Z3 on its C "
        "text, or probed numerically against NumPy — per dtype kind, with the reasons a kind "
        "is not proved: [zero_algebra.md](zero_algebra.md) (rendered by the verifier: "
        "`python -m sparsefold.verify.zero_algebra_doc`).", "",
    ]
    rows = []
    for name, fn in FUNCTIONS.items():
        ann, ident = _facts(fn)
        rows.append([f"`{name}`", str(fn.arity), fn.doc, ann, ident, _value_at_zero(fn),
                     "yes" if fn.commutative else "", "yes" if fn.associative else "",
                     _c_reading(fn)])
    lines += _table(["name", "arity", "meaning", "annihilates", "identity",
                     "f(0, ..., 0)", "commutative", "associative", "Cython"], rows)
    cast = cast_function(np.dtype("float32"))
    lines += ["", f"`astype(x, dtype)` is one function per target dtype "
              f"(`{cast_name(np.dtype('float32'))}`, ...): x as dtype (NumPy's unsafe cast); "
              f"it annihilates 0 and its Cython reading is {_c_reading(cast)} "
              f"(float32 shown)."]
    lines += ["", "### Monoids (reductions)", "",
              "A reduction over a 0-length axis gives the monoid's identity; `max`/`min` have "
              "none, so reducing a known-empty axis is ill-formed and a symbolic one bound to "
              "0 is invalid data. Result dtypes follow NumPy (integer sums accumulate in "
              "int64).", ""]
    rows = []
    probe = [np.dtype(t) for t in ("bool", "int32", "float32")]
    for name, m in MONOIDS.items():
        dts = ", ".join(f"{p} → {m.result_dtype(p)}" for p in probe)
        rows.append([f"`{name}`", "none" if m.identity is None else repr(m.identity),
                     _code(m.c_combine), "yes" if m.takes_dtype else "", dts])
    lines += _table(["monoid", "identity", "Cython combine", "takes `dtype=`", "result dtype"],
                    rows)
    return lines + [""] + _section_fills()


_FILL_SAMPLES = ((2.0,), (-2.0,), (float("nan"),))
_FILL_PAIRS = ((2.0, 0.0), (0.0, 2.0), (2.0, -2.0), (float("nan"), 0.0))


def _fill_cell(fn, values) -> str:
    """``f`` at fill values of float64 (literals for the other arguments of ``where``)."""
    try:
        with np.errstate(all="ignore"):
            out = fn.impl(*(np.asarray(v, F64) for v in values))
    except (TypeError, ValueError):
        return ""
    out = np.asarray(out)[()]
    out = out.item() if hasattr(out, "item") else out
    if isinstance(out, float) and out == out:
        # 15 significant digits: NumPy's SIMD paths (AVX-512 or not) differ in the last ulp
        # of log1p, sinh, acosh, ..., and the reference must not depend on the CPU
        return f"{out:.15g}" if abs(out) != float("inf") else repr(out)
    return repr(out)


def _section_fills() -> list[str]:
    """The fill algebra (``spec/fills.py``): how each function and monoid maps fill values,
    computed from their NumPy meanings."""
    lines = ["### Fill values", "", _doc(fills), "",
             "A function's result fill is `f(fill_0, fill_1, ...)`; the lattice intersects on "
             "argument p only when p's fill is 0 (and, for floats, the other fills are "
             "finite), and takes a union of the arguments' storage whenever the other "
             "arguments are literals — the result is sparse when its fill is 0, dense-valued "
             "otherwise, and a pydata result carries the fill. `sparsefold prove` checks per "
             "function that its Cython reading is 0 at sample fills exactly where NumPy's is. "
             "Examples, float64 (unary: f(c); binary: f(a, b)):", ""]
    rows = []
    for name, fn in FUNCTIONS.items():
        if fn.arity == 1:
            cells = [f"f({_fill_num(v[0])}) = {_fill_cell(fn, v)}" for v in _FILL_SAMPLES]
        elif fn.arity == 2:
            cells = [f"f({', '.join(map(_fill_num, v))}) = {_fill_cell(fn, v)}"
                     for v in _FILL_PAIRS]
        else:
            continue
        cells = [c for c in cells if not c.endswith("= ")]
        if cells:
            ann, _ = _facts(fn)
            rows.append([f"`{name}`", "; ".join(cells), ann])
    lines += _table(["function", "result fill at sample fills", "intersects on (fill 0)"],
                    rows)
    lines += ["", "A reduction of `n` entries of which some are implicit counts each as the "
              "fill `c`: `sum` adds `c` once per implicit entry (the result fill of a whole "
              "implicit fiber is `n * c`), `prod` multiplies by it, `max`/`min`/`any`/`all` "
              "include it when any entry is implicit; `mean`, `var` and `std` are built from "
              "those. Shape operators keep the fill; `pad` pads with its own value (NumPy's "
              "meaning; pydata raises unless it is the fill), and `concat`/`stack` of arrays "
              "with different fills is ill-formed, as in pydata.", ""]
    return lines


def _fill_num(v: float) -> str:
    return "nan" if v != v else repr(v)


_CAPABILITIES = ("full", "locate", "iterate", "append", "has_pos", "has_crd")


def _section_formats() -> list[str]:
    lines = [
        "## 6. Storage formats", "",
        "A format is a list of levels in storage order and the logical mode each level "
        "stores (`mode order`). Lowering asks levels what they can do and never branches on "
        "a format's name.", "",
    ]
    kinds = (formats.Dense, formats.Compressed, formats.Singleton)
    rows = [[f"`{k.__name__}`", _doc(k)] + ["yes" if getattr(k, c) else "" for c in
                                            _CAPABILITIES] for k in kinds]
    lines += _table(["level", "meaning"] + list(_CAPABILITIES), rows)
    lines += ["", "Named formats, for each rank they can store (1-d to 3-d shown):", ""]
    rows = []
    for name in formats.FORMAT_NAMES:
        for ndim in (1, 2, 3):
            try:
                fmt = formats.named_format(name, ndim)
            except errors.IllFormedProgram:
                continue
            rows.append([f"`{name}`", str(ndim), ", ".join(map(str, fmt.levels)),
                         str(fmt.mode_order)])
    lines += _table(["format", "ndim", "levels (storage order)", "mode order"], rows)
    return lines + [""]


def _section_errors() -> list[str]:
    lines = ["## 7. Errors", "",
             "Three kinds, never mixed; messages state what was expected and what was found.",
             ""]
    for cls in (errors.IllFormedProgram, errors.InvalidData, errors.InternalError):
        builtin = next(b for b in cls.__mro__[1:] if b.__module__ == "builtins")
        lines.append(f"- `{cls.__name__}` (a `{builtin.__name__}`): {_doc(cls)}")
    return lines + [""]


def render() -> str:
    """The whole language reference as Markdown."""
    lines = [
        "# The sparsefold language", "",
        "<!-- GENERATED by `python -m sparsefold.spec.docgen > docs/language.md` from the "
        "definitions in spec/. Do not edit by hand. -->", "",
        "This reference is generated from `sparsefold.spec`: every shape rule, index map, "
        "fact and table below is printed from the definitions the interpreter, compiler "
        "and verifier read.", "",
    ]
    for section in (_section_sizes, _section_shape_ops, _section_derived, _section_compute,
                    _section_functions, _section_formats, _section_errors):
        lines += section()
    while lines and lines[-1] == "":
        lines.pop()
    return "\n".join(lines) + "\n"


def main() -> int:
    sys.stdout.write(render())
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Generators for the whole language: one row per public name, drawn by random programs.

``random_programs`` builds programs from an *operator table* of rows (``Operator``: which
operand shapes a row applies to, how it draws its parameters, how it builds and prints).
The shape-operator entries carry their own rows (``ShapeOp.random_row``) and
``random_programs.COMPUTE_ROWS`` adds maps, reductions and matmul. This module adds a row
for every other way a user writes a program:

* **every elementwise function** of ``spec.FUNCTIONS``, derived from the entry itself
  (its arity; spelled by its front-end name, or through ``sf.apply``): a function
  registered later is drawn with no code here;
* **every reduction** of the front end (``sum`` ... ``count_nonzero``, ``mean``, ``var``,
  ``std``, ``argmax``/``argmin``, the ``nan*`` family), with axes, ``keepdims``,
  ``correction`` and ``explicit``;
* **every other public function**: ``stack``, ``hstack``/``vstack``, ``block_array``,
  ``where``, ``clip``, ``astype``, ``round``, ``take``, ``compress``, ``tile``, ``repeat``,
  ``diff``, ``unstack``, ``moveaxis``, ``swapaxes``, ``transpose``, ``outer``, ``dot``,
  ``vecdot``, ``tensordot``, ``einsum``, ``tril``/``triu``, ``diagonal``, ...;
* **indexing forms**: integer indices (negative too) alone and beside slices, ``None`` and
  ``...``; integer index arrays along one axis or several; boolean masks;
* **the operators** of :class:`~sparsefold.LazyArray` (``+ - * / // % ** @``, comparisons,
  ``& | ^ << >> ~``, unary ``- + abs``, reflected scalars) and **its methods** (``.T``,
  ``.mT``, ``.sum()``, ``.reshape``, ...).

:func:`surface` lists every name a user can write (``sparsefold.__all__``, the array's
methods and operators, the indexing forms, the spec entries, functions and monoids);
:data:`NOT_DRAWN` says, with a reason, which of them no program builds (``jit``, error
classes, eager ``nonzero``). ``tests/verify/test_language_coverage.py`` fails when a name
has neither a row nor a reason, and samples programs to check that every spec node kind,
function and monoid is *reached*: a new operator without a generator fails a test.

Parameters are chosen to stay valid when every input side of length >= 2 is multiplied by
the same factor (slices with open ends and small constant offsets, integer indices 0, 1 or
-1, shape-relative reshapes), so ``sparsefold fuzz --programs`` can rebuild a program over
larger inputs and check that its work grows linearly (``verify.program_fuzz``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from sparsefold.spec.functions import FUNCTIONS, MONOIDS
from sparsefold.verify.random_programs import Limits, Operator, operator_table

__all__ = ["language_table", "surface", "NOT_DRAWN", "ROW_COVERS", "elementwise_rows",
           "INDEXING_FORMS", "OPERATOR_FORMS", "METHOD_FORMS"]


def _sf():
    import sparsefold as sf
    return sf


def _partner(draw, st, shape):
    """A shape that broadcasts against ``shape`` to ``shape``: a suffix, some axes 1."""
    # the full rank first: Hypothesis favours the first choice, and a partner of every
    # axis (two arrays merged coordinate by coordinate) is the case that tests the most
    keep = draw(st.sampled_from(range(len(shape), -1, -1)))
    sub = list(shape[len(shape) - keep:])
    for d in range(len(sub)):
        if draw(st.booleans()):
            sub[d] = 1
    return tuple(sub)


def _scalar(draw, st):
    return draw(st.sampled_from([0, 1, 2, -1, 0.5, 3]))


def _axis(draw, st, shape, *, none=True, tuple_axes=False):
    """An axis of ``shape`` (negative too), None, or a tuple of distinct axes."""
    nd = len(shape)
    choices = ["int"] if nd else []
    if none:
        choices.append("none")
    if tuple_axes and nd >= 2:
        choices.append("tuple")
    kind = draw(st.sampled_from(choices)) if choices else "none"
    if kind == "none":
        return None
    if kind == "tuple":
        axes = draw(st.lists(st.integers(0, nd - 1), min_size=1, max_size=nd, unique=True))
        return tuple(sorted(axes))
    return draw(st.integers(-nd, nd - 1))


def _fmt(template: str) -> Callable[[list[str], dict], str]:
    def source(args, params):
        return template.format(*args, **{k: repr(v) for k, v in params.items()})
    return source


def _op(applies, draw, build, source) -> Operator:
    return Operator(applies, draw, build, source if callable(source) else _fmt(source))


def _any(shape, limits) -> bool:
    return len(shape) <= limits.max_dims


def _nd(lo, hi=None):
    def applies(shape, limits):
        return lo <= len(shape) <= (limits.max_dims if hi is None else hi)
    return applies


# --- elementwise: one row per spec function ----------------------------------------------------

_SPELLING = {"power": "pow"}  # the front end's name where it differs from the entry's


def _front_name(name: str) -> str:
    return _SPELLING.get(name, name)


def _elementwise_row(name: str) -> Operator:
    fn = FUNCTIONS[name]
    front = _front_name(name)

    def call(args: list, via_apply: bool):
        sf = _sf()
        if via_apply:
            return sf.apply(name, *args)
        return getattr(sf, front)(*args)

    def text(args: list[str], via_apply: bool) -> str:
        return (f"sf.apply({name!r}, {', '.join(args)})" if via_apply
                else f"sf.{front}({', '.join(args)})")

    if fn.arity == 1:
        def draw(draw, st, shape, limits):
            return {"via_apply": draw(st.booleans())}

        def build(x, via_apply):
            return call([x], via_apply)

        def source(a, p):
            return text([a[0]], p["via_apply"])
        return Operator(_any, draw, build, source)

    def draw(draw, st, shape, limits):
        # each further argument: a broadcast partner (a subtree or an input) or a scalar;
        # the drawn array takes a random position among the arguments
        slots, operands = [], []
        for _ in range(fn.arity - 1):
            if draw(st.integers(0, 2)) == 0:
                slots.append(("scalar", _scalar(draw, st)))
            else:
                slots.append(("operand", None))
                operands.append(_partner(draw, st, shape))
        first = draw(st.integers(0, fn.arity - 1))
        return {"slots": tuple(slots), "first": first, "via_apply": draw(st.booleans()),
                "operands": operands}

    def arrange(x, more, slots, first):
        rest, it = [], iter(more)
        for kind, value in slots:
            rest.append(next(it) if kind == "operand" else value)
        return rest[:first] + [x] + rest[first:]

    def build(x, *more, slots, first, via_apply):
        return call(arrange(x, more, slots, first), via_apply)

    def source(a, p):
        more = iter(a[1:])
        texts = [next(more) if kind == "operand" else repr(v) for kind, v in p["slots"]]
        args = texts[:p["first"]] + [a[0]] + texts[p["first"]:]
        return text(args, p["via_apply"])
    return Operator(_any, draw, build, source)


def _table_row(op: Operator) -> Operator:
    """A row of this module (``draw(draw, st, shape, limits)``, as the spec entries' rows)
    as a table row (``draw(draw, shape, limits)``)."""
    def draw(draw, shape, limits):
        return op.draw(draw, _STRATEGIES, shape, limits)
    return Operator(op.requires, draw, op.build, op.source)


def elementwise_rows() -> dict[str, Operator]:
    """A row ``fn:NAME`` per function of ``spec.FUNCTIONS`` as it is now (registered user
    functions included)."""
    return {f"fn:{name}": _table_row(_elementwise_row(name)) for name in FUNCTIONS}


# --- reductions --------------------------------------------------------------------------------

_REDUCTIONS = ("sum", "prod", "max", "min", "any", "all", "mean", "var", "std", "argmax",
               "argmin", "nansum", "nanprod", "nanmax", "nanmin", "nanmean", "nanvar",
               "nanstd", "count_nonzero")
_SINGLE_AXIS = {"argmax", "argmin"}  # an int or None, no tuple
_CORRECTED = {"var", "std", "nanvar", "nanstd"}


def _reduction_row(name: str, method: bool = False) -> Operator:
    def draw(draw, st, shape, limits):
        p: dict[str, Any] = {"axis": _axis(draw, st, shape, tuple_axes=name not in _SINGLE_AXIS),
                             "keepdims": draw(st.booleans())}
        if name in ("prod", "nanprod") and p["axis"] is None and len(shape) > 1:
            p["axis"] = -1  # products of a whole array of small values overflow int32
        if name in _CORRECTED and draw(st.booleans()):
            p["correction"] = draw(st.sampled_from([0, 1]))
        if name in ("max", "min") and draw(st.integers(0, 3)) == 0:
            p["explicit"] = True
        if name in ("sum", "prod", "mean", "nansum", "nanmean") and \
                draw(st.integers(0, 3)) == 0:
            p["dtype"] = draw(st.sampled_from(["float64", "int64", "float32"]))
        return p

    def build(x, **p):
        if method:
            return getattr(x, name)(**p)
        return getattr(_sf(), name)(x, **p)

    def source(a, p):
        kw = ", ".join(f"{k}={v!r}" for k, v in p.items())
        return f"{a[0]}.{name}({kw})" if method else f"sf.{name}({a[0]}, {kw})"
    return Operator(_nd(1), draw, build, source)


# --- indexing ------------------------------------------------------------------------------------

def _int_index_row() -> Operator:
    """An integer index beside open slices (``x[1]``, ``x[:, -1]``, ``x[..., 0, None]``)."""
    def draw(draw, st, shape, limits):
        nonempty = [d for d, n in enumerate(shape) if n > 0]
        d = draw(st.sampled_from(nonempty))
        k = draw(st.sampled_from([v for v in (0, 1, -1) if -shape[d] <= v < shape[d]]))
        style = draw(st.sampled_from(["plain", "ellipsis", "newaxis", "slices"]))
        key: list[Any] = [slice(None)] * d + [k]
        if style == "ellipsis" and d == len(shape) - 1 and d > 0:
            key = [Ellipsis, k]
        elif style == "newaxis" and len(shape) < limits.max_dims:
            key.append(None)
        elif style == "slices" and d + 1 < len(shape):
            key.append(slice(None, None, draw(st.sampled_from([1, 2, -1]))))
        return {"key": tuple(key)}

    def source(a, p):
        from sparsefold.spec.indexing import key_source
        return f"{a[0]}[{key_source(p['key'])}]"
    return Operator(lambda s, lim: 1 <= len(s) <= lim.max_dims and any(n > 0 for n in s),
                    draw, lambda x, key: x[key], source)


# the slices a user writes, offsets first: the spec entry's own row (strategies.slice_keys)
# draws open bounds, '...' and None most often (Hypothesis favours the simplest choice), so
# a start read one too far went unnoticed; each of these stays valid on larger inputs
_OFFSET_SLICES = (slice(1, None), slice(1, None, 2), slice(None, -1), slice(1, -1),
                  slice(2, None), slice(None, None, 2), slice(None, None, -1),
                  slice(-2, None, -1), slice(None))


def _offset_slice_row() -> Operator:
    """Slices with constant offsets on one or every axis (``x[1:]``, ``x[:, 1::2]``,
    ``x[1:-1, ::-1]``)."""
    def draw(draw, st, shape, limits):
        every = draw(st.booleans())
        d = draw(st.sampled_from(range(len(shape))))
        key = tuple(draw(st.sampled_from(_OFFSET_SLICES)) if every or a == d else slice(None)
                    for a in range(len(shape)))
        return {"key": key}

    def source(a, p):
        from sparsefold.spec.indexing import key_source
        return f"{a[0]}[{key_source(p['key'])}]"
    return Operator(lambda s, lim: 1 <= len(s) <= lim.max_dims, draw,
                    lambda x, key: x[key], source)


def _int_array_row() -> Operator:
    """Integer index arrays: ``x[idx]``, ``x[:, idx]``, ``x[i0, i1]`` (negative entries,
    repeats and empty arrays too)."""
    def draw(draw, st, shape, limits):
        nonempty = [d for d, n in enumerate(shape) if n > 0]
        axes = sorted(draw(st.lists(st.sampled_from(nonempty), min_size=1,
                                    max_size=min(2, len(nonempty)), unique=True)))
        length = draw(st.integers(0, 4))
        arrays = tuple(tuple(draw(st.integers(-shape[d], shape[d] - 1)) for _ in range(length))
                       for d in axes)
        return {"axes": tuple(axes), "arrays": arrays}

    def key(ndim, axes, arrays):
        k: list[Any] = [slice(None)] * (max(axes) + 1)
        for d, arr in zip(axes, arrays):
            k[d] = np.array(arr, dtype=np.int64)
        return tuple(k)

    def build(x, axes, arrays):
        return x[key(x.ndim, axes, arrays)]

    def source(a, p):
        parts = [":"] * (max(p["axes"]) + 1)
        for d, arr in zip(p["axes"], p["arrays"]):
            parts[d] = f"np.array({list(arr)}, dtype=np.int64)"
        return f"{a[0]}[{', '.join(parts)}]"
    return Operator(lambda s, lim: 1 <= len(s) <= lim.max_dims and any(n > 0 for n in s),
                    draw, build, source)


def _mask_row() -> Operator:
    """A boolean mask over the leading axes (``x[mask]``, ``x[mask2d]``)."""
    def draw(draw, st, shape, limits):
        k = draw(st.integers(1, len(shape)))
        size = math.prod(shape[:k])
        bits = tuple(draw(st.booleans()) for _ in range(size))
        return {"lead": tuple(shape[:k]), "bits": bits}

    def build(x, lead, bits):
        return x[np.array(bits, dtype=bool).reshape(lead)]

    def source(a, p):
        return (f"{a[0]}[np.array({list(p['bits'])}, dtype=bool).reshape({p['lead']!r})]")
    return Operator(_nd(1), draw, build, source)


def _place_row() -> Operator:
    """``x[key] = value`` (``spec.ops_place.Place``): a basic key (slices with start, stop
    and step; integers), a scalar or an operand of the region's shape as the value. A
    statement, so the program spells it as an expression on a copy (the copy leaves ``x``,
    which other parts of the program may read, as it was)."""
    def draw(draw, st, shape, limits):
        k = draw(st.integers(1, len(shape)))
        key: list[Any] = []
        for n in shape[:k]:
            if n > 0 and draw(st.booleans()):
                key.append(draw(st.integers(-n, n - 1)))
            else:
                start = draw(st.sampled_from([None, 0, 1, -1]))
                stop = draw(st.sampled_from([None, n, -1, 2]))
                step = draw(st.sampled_from([None, 1, 2, -1]))
                key.append(slice(start, stop, step))
        region = np.empty(shape, dtype=np.int8)[tuple(key)].shape
        if draw(st.booleans()):
            return {"key": tuple(key), "scalar": _scalar(draw, st)}
        return {"key": tuple(key), "scalar": None, "operands": [region]}

    def build(x, *more, key, scalar):
        y = _sf().array_api.asarray(x, copy=True)
        try:
            y[key] = more[0] if scalar is None else scalar
        except OverflowError as exc:  # -1 into uint8: NumPy's error, a program not drawn
            raise _sf().IllFormedProgram(str(exc)) from None
        return y

    def source(a, p):
        value = a[1] if p["scalar"] is None else repr(p["scalar"])
        return (f"(lambda t: t.__setitem__({p['key']!r}, {value}) or t)"
                f"(sf.array_api.asarray({a[0]}, copy=True))")
    return Operator(_nd(1), draw, build, source)


def _take_row() -> Operator:
    def draw(draw, st, shape, limits):
        axes = [d for d, n in enumerate(shape) if n > 0]
        axis = draw(st.sampled_from(axes))
        n = shape[axis]
        return {"axis": axis, "indices": tuple(draw(st.lists(st.integers(0, n - 1),
                                                             max_size=4)))}

    def build(x, axis, indices):
        return _sf().take(x, np.array(indices, dtype=np.int64), axis=axis)
    return Operator(lambda s, lim: 1 <= len(s) <= lim.max_dims and any(n > 0 for n in s),
                    draw, build,
                    lambda a, p: f"sf.take({a[0]}, np.array({list(p['indices'])}, "
                                 f"dtype=np.int64), axis={p['axis']})")


def _compress_row() -> Operator:
    def draw(draw, st, shape, limits):
        axis = draw(st.integers(0, len(shape) - 1))
        return {"axis": axis, "condition": tuple(draw(st.booleans())
                                                 for _ in range(shape[axis]))}
    return Operator(_nd(1), draw,
                    lambda x, axis, condition: _sf().compress(list(condition), x, axis=axis),
                    lambda a, p: f"sf.compress({list(p['condition'])}, {a[0]}, "
                                 f"axis={p['axis']})")


# --- joining ------------------------------------------------------------------------------------

def _stack_row() -> Operator:
    def draw(draw, st, shape, limits):
        more = draw(st.integers(1, 2))
        return {"axis": draw(st.integers(-len(shape) - 1, len(shape))),
                "operands": [tuple(shape)] * more}
    return Operator(lambda s, lim: len(s) < lim.max_dims, draw,
                    lambda *xs, axis: _sf().stack(list(xs), axis=axis),
                    lambda a, p: f"sf.stack([{', '.join(a)}], axis={p['axis']})")


def _hvstack_row(which: str) -> Operator:
    def draw(draw, st, shape, limits):
        other = list(shape)
        axis = 0 if which == "vstack" or len(shape) == 1 else 1
        if which == "vstack" and len(shape) == 1:
            return {"operands": [tuple(shape)]}
        other[axis] = draw(st.integers(0, limits.max_side))
        return {"operands": [tuple(other)]}
    applies = _nd(1, 2)
    return Operator(applies, draw, lambda *xs: getattr(_sf(), which)(list(xs)),
                    lambda a, p: f"sf.{which}([{', '.join(a)}])")


def _block_row() -> Operator:
    def draw(draw, st, shape, limits):
        r, c = shape
        r2, c2 = draw(st.integers(0, 3)), draw(st.integers(0, 3))
        return {"operands": [(r, c2), (r2, c), (r2, c2)]}
    return Operator(_nd(2, 2), draw,
                    lambda a, b, c, d: _sf().block_array([[a, b], [c, d]]),
                    lambda a, p: f"sf.block_array([[{a[0]}, {a[1]}], [{a[2]}, {a[3]}]])")


def _unstack_row() -> Operator:
    def draw(draw, st, shape, limits):
        axes = [d for d, n in enumerate(shape) if n > 0]
        axis = draw(st.sampled_from(axes))
        return {"axis": axis, "pick": draw(st.sampled_from([0, -1]))}
    return Operator(lambda s, lim: 1 <= len(s) <= lim.max_dims and any(n > 0 for n in s),
                    draw, lambda x, axis, pick: _sf().unstack(x, axis=axis)[pick],
                    "sf.unstack({0}, axis={axis})[{pick}]")


# --- shape functions -----------------------------------------------------------------------------

def _axes_pair(draw, st, shape):
    a, b = draw(st.permutations(range(len(shape))))[:2]
    return a, b


def _moveaxis_row() -> Operator:
    def draw(draw, st, shape, limits):
        a, b = _axes_pair(draw, st, shape)
        return {"source": a, "destination": b}
    return Operator(_nd(2), draw,
                    lambda x, source, destination: _sf().moveaxis(x, source, destination),
                    "sf.moveaxis({0}, {source}, {destination})")


def _swapaxes_row(method: bool) -> Operator:
    def draw(draw, st, shape, limits):
        a, b = _axes_pair(draw, st, shape)
        return {"axis1": a, "axis2": b}
    if method:
        return Operator(_nd(2), draw, lambda x, axis1, axis2: x.swapaxes(axis1, axis2),
                        "{0}.swapaxes({axis1}, {axis2})")
    return Operator(_nd(2), draw, lambda x, axis1, axis2: _sf().swapaxes(x, axis1, axis2),
                    "sf.swapaxes({0}, {axis1}, {axis2})")


def _transpose_row() -> Operator:
    def draw(draw, st, shape, limits):
        if draw(st.booleans()):
            return {"axes": None}
        return {"axes": tuple(draw(st.permutations(range(len(shape)))))}
    return Operator(_nd(1), draw, lambda x, axes: _sf().transpose(x, axes),
                    "sf.transpose({0}, {axes})")


def _tile_row() -> Operator:
    def draw(draw, st, shape, limits):
        n = draw(st.integers(1, len(shape)))
        return {"reps": tuple(draw(st.integers(1, 2)) for _ in range(n))}
    return Operator(_nd(1), draw, lambda x, reps: _sf().tile(x, reps), "sf.tile({0}, {reps})")


def _repeat_row() -> Operator:
    def draw(draw, st, shape, limits):
        return {"repeats": draw(st.integers(0, 3)), "axis": _axis(draw, st, shape)}
    return Operator(_nd(1), draw, lambda x, repeats, axis: _sf().repeat(x, repeats, axis=axis),
                    "sf.repeat({0}, {repeats}, axis={axis})")


def _diff_row() -> Operator:
    def draw(draw, st, shape, limits):
        axis = draw(st.integers(-len(shape), len(shape) - 1))
        return {"axis": axis, "n": draw(st.integers(1, 2))}
    return Operator(_nd(1), draw, lambda x, axis, n: _sf().diff(x, axis=axis, n=n),
                    "sf.diff({0}, axis={axis}, n={n})")


def _matrix_transpose_row(spelling: str) -> Operator:
    build = {"sf": lambda x: _sf().matrix_transpose(x), ".mT": lambda x: x.mT,
             ".T": lambda x: x.T, ".transpose()": lambda x: x.transpose()}[spelling]
    source = {"sf": "sf.matrix_transpose({0})", ".mT": "{0}.mT", ".T": "{0}.T",
              ".transpose()": "{0}.transpose()"}[spelling]
    applies = _nd(2) if spelling in ("sf", ".mT") else _nd(1)
    return Operator(applies, lambda draw, st, shape, limits: {}, build, source)


def _reshape_method_row(spelling: str) -> Operator:
    build = {"flatten": lambda x: x.flatten(), "ravel": lambda x: x.ravel(),
             "reshape(-1)": lambda x: x.reshape(-1),
             "sf.reshape": lambda x, shape: _sf().reshape(x, shape)}[spelling]
    if spelling == "sf.reshape":
        def draw(draw, st, shape, limits):
            # shape-relative: the trailing axes collapsed, or the leading axis kept
            if len(shape) >= 2 and draw(st.booleans()):
                return {"shape": (shape[0], -1)}
            return {"shape": (-1,)}
        return Operator(_nd(1), draw, build, "sf.reshape({0}, {shape})")
    return Operator(_nd(1), lambda draw, st, shape, limits: {}, build,
                    {"flatten": "{0}.flatten()", "ravel": "{0}.ravel()",
                     "reshape(-1)": "{0}.reshape(-1)"}[spelling])


def _squeeze_method_row() -> Operator:
    def draw(draw, st, shape, limits):
        ones = [d for d, n in enumerate(shape) if n == 1]
        return {"axis": draw(st.sampled_from(ones))}
    return Operator(lambda s, lim: 1 in s, draw, lambda x, axis: x.squeeze(axis=axis),
                    "{0}.squeeze(axis={axis})")


def _triangle_row(which: str) -> Operator:
    def draw(draw, st, shape, limits):
        return {"k": draw(st.integers(-2, 2))}
    return Operator(_nd(2), draw, lambda x, k: getattr(_sf(), which)(x, k=k),
                    f"sf.{which}({{0}}, k={{k}})")


def _diagonal_row(method: bool) -> Operator:
    def draw(draw, st, shape, limits):
        return {"offset": draw(st.integers(-2, 2))}
    if method:
        return Operator(_nd(2), draw, lambda x, offset: x.diagonal(offset=offset),
                        "{0}.diagonal(offset={offset})")
    return Operator(_nd(2), draw, lambda x, offset: _sf().diagonal(x, offset=offset),
                    "sf.diagonal({0}, offset={offset})")


def _flip_row() -> Operator:
    def draw(draw, st, shape, limits):
        return {"axis": _axis(draw, st, shape, tuple_axes=True)}
    return Operator(_nd(1), draw, lambda x, axis: _sf().flip(x, axis=axis),
                    "sf.flip({0}, axis={axis})")


def _roll_row() -> Operator:
    def draw(draw, st, shape, limits):
        return {"shift": draw(st.integers(-3, 3)), "axis": _axis(draw, st, shape)}
    return Operator(_nd(1), draw, lambda x, shift, axis: _sf().roll(x, shift, axis=axis),
                    "sf.roll({0}, {shift}, axis={axis})")


# --- casts and clip --------------------------------------------------------------------------

_DTYPES = ("float64", "float32", "int64", "int32", "bool", "int8", "uint8", "complex128")


def _astype_row(method: bool) -> Operator:
    def draw(draw, st, shape, limits):
        return {"dtype": draw(st.sampled_from(_DTYPES))}
    if method:
        return Operator(_any, draw, lambda x, dtype: x.astype(dtype), "{0}.astype({dtype})")
    return Operator(_any, draw, lambda x, dtype: _sf().astype(x, dtype),
                    "sf.astype({0}, {dtype})")


def _clip_row(method: bool) -> Operator:
    def draw(draw, st, shape, limits):
        lo = draw(st.sampled_from([None, -2, -1, 0, 0.5]))
        hi = draw(st.sampled_from([None, 1, 2, 3]))
        if lo is None and hi is None:
            hi = 2
        return {"min": lo, "max": hi}
    if method:
        return Operator(_any, draw, lambda x, min, max: x.clip(min, max),  # noqa: A006
                        "{0}.clip({min}, {max})")
    return Operator(_any, draw, lambda x, min, max: _sf().clip(x, min, max),  # noqa: A006
                    "sf.clip({0}, {min}, {max})")


def _round_row(method: bool) -> Operator:
    def draw(draw, st, shape, limits):
        return {"decimals": draw(st.sampled_from([0, 0, 1, -1]))}
    if method:
        return Operator(_any, draw, lambda x, decimals: x.round(decimals),
                        "{0}.round({decimals})")
    return Operator(_any, draw, lambda x, decimals: _sf().round(x, decimals),
                    "sf.round({0}, {decimals})")


def _where_row() -> Operator:
    def draw(draw, st, shape, limits):
        slots = [draw(st.sampled_from(["operand", "scalar"])) for _ in range(2)]
        scalars = [_scalar(draw, st) for _ in range(2)]
        operands = [_partner(draw, st, shape) for s in slots if s == "operand"]
        return {"slots": tuple(slots), "scalars": tuple(scalars), "operands": operands}

    def args(x, more, slots, scalars):
        it = iter(more)
        return [next(it) if s == "operand" else c for s, c in zip(slots, scalars)]

    def build(cond, *more, slots, scalars):
        return _sf().where(cond, *args(cond, more, slots, scalars))

    def source(a, p):
        it = iter(a[1:])
        rest = [next(it) if s == "operand" else repr(c)
                for s, c in zip(p["slots"], p["scalars"])]
        return f"sf.where({a[0]}, {', '.join(rest)})"
    return Operator(_any, draw, build, source)


# --- products -------------------------------------------------------------------------------

def _vector_product_row(name: str) -> Operator:
    def draw(draw, st, shape, limits):
        if name == "outer":
            return {"operands": [(draw(st.integers(0, limits.max_side)),)]}
        if name == "vecdot":
            return {"operands": [tuple(shape)]}
        # dot: matrix . vector / vector . vector / matrix . matrix
        k = shape[-1]
        other = (k,) if draw(st.booleans()) else (k, draw(st.integers(0, limits.max_side)))
        return {"operands": [other]}
    applies = {"outer": _nd(1, 1), "vecdot": _nd(1, 2), "dot": _nd(1, 2)}[name]
    return Operator(applies, draw, lambda x, y: getattr(_sf(), name)(x, y),
                    f"sf.{name}({{0}}, {{1}})")


def _tensordot_row() -> Operator:
    def draw(draw, st, shape, limits):
        n = draw(st.integers(0, min(2, len(shape))))
        tail = tuple(shape[len(shape) - n:])
        extra = tuple(draw(st.integers(0, 3)) for _ in range(draw(st.integers(0, 1))))
        return {"axes": n, "operands": [tail + extra]}
    return Operator(_nd(1, 3), draw, lambda x, y, axes: _sf().tensordot(x, y, axes=axes),
                    "sf.tensordot({0}, {1}, axes={axes})")


def _einsum_row() -> Operator:
    patterns = {1: [("i->", ()), ("i->i", ()), ("i,i->", "same"), ("i,j->ij", "new")],
                2: [("ij->ji", ()), ("ij->i", ()), ("ij->j", ()), ("ij->", ()),
                    ("ij,j->i", "last"), ("ij,ij->ij", "same"), ("ij,jk->ik", "right")],
                3: [("ijk->ik", ()), ("ijk->kji", ()), ("ijk,k->ij", "last")]}

    def draw(draw, st, shape, limits):
        spec, partner = draw(st.sampled_from(patterns[len(shape)]))
        if partner == "same":
            ops = [tuple(shape)]
        elif partner == "last":
            ops = [(shape[-1],)]
        elif partner == "new":
            ops = [(draw(st.integers(0, 3)),)]
        elif partner == "right":
            ops = [(shape[-1], draw(st.integers(0, 3)))]
        else:
            ops = []
        return {"subscripts": spec, "operands": ops}
    return Operator(_nd(1, 3), draw,
                    lambda *xs, subscripts: _sf().einsum(subscripts, *xs),
                    lambda a, p: f"sf.einsum({p['subscripts']!r}, {', '.join(a)})")


# --- operators and methods -------------------------------------------------------------------

_BINARY_OPERATORS = {"+": "add", "-": "sub", "*": "mul", "/": "truediv", "//": "floordiv",
                     "%": "mod", "**": "pow", "<": "lt", "<=": "le", ">": "gt", ">=": "ge",
                     "==": "eq", "!=": "ne", "&": "and", "|": "or", "^": "xor",
                     "<<": "lshift", ">>": "rshift"}


def _binary_operator_row(symbol: str) -> Operator:
    import operator as pyop
    fn = {"+": pyop.add, "-": pyop.sub, "*": pyop.mul, "/": pyop.truediv,
          "//": pyop.floordiv, "%": pyop.mod, "**": pyop.pow, "<": pyop.lt, "<=": pyop.le,
          ">": pyop.gt, ">=": pyop.ge, "==": pyop.eq, "!=": pyop.ne, "&": pyop.and_,
          "|": pyop.or_, "^": pyop.xor, "<<": pyop.lshift, ">>": pyop.rshift}[symbol]

    def draw(draw, st, shape, limits):
        kind = draw(st.sampled_from(["array", "scalar", "rscalar"]))
        p: dict[str, Any] = {"kind": kind}
        if kind == "array":
            p["operands"] = [_partner(draw, st, shape)]
        else:
            p["scalar"] = draw(st.sampled_from([1, 2, 0, -1] if symbol in ("<<", ">>", "**",
                                                                          "&", "|", "^")
                                               else [1, 2, 0, -1, 0.5]))
            if symbol in ("<<", ">>", "**"):
                p["scalar"] = abs(p["scalar"])
        return p

    def build(x, *more, kind, scalar=None):
        if kind == "array":
            return fn(x, more[0])
        return fn(x, scalar) if kind == "scalar" else fn(scalar, x)

    def source(a, p):
        if p["kind"] == "array":
            return f"({a[0]} {symbol} {a[1]})"
        if p["kind"] == "scalar":
            return f"({a[0]} {symbol} {p['scalar']!r})"
        return f"({p['scalar']!r} {symbol} {a[0]})"
    return Operator(_any, draw, build, source)


def _matmul_operator_row() -> Operator:
    def draw(draw, st, shape, limits):
        k = shape[-1]
        other = (k,) if draw(st.booleans()) else (k, draw(st.integers(0, limits.max_side)))
        return {"operands": [other]}
    return Operator(_nd(1, 2), draw, lambda x, y: x @ y, "({0} @ {1})")


def _unary_operator_row(symbol: str) -> Operator:
    build = {"-": lambda x: -x, "+": lambda x: +x, "~": lambda x: ~x,
             "abs": lambda x: abs(x)}[symbol]
    source = {"-": "(-{0})", "+": "(+{0})", "~": "(~{0})", "abs": "abs({0})"}[symbol]
    return Operator(_any, lambda draw, st, shape, limits: {}, build, source)


def _method_row(name: str) -> Operator:
    """Methods without parameters: ``.conj()``, ``.real``, ``.imag``, ``.conjugate()``."""
    build = {"conj": lambda x: x.conj(), "conjugate": lambda x: x.conjugate(),
             "real": lambda x: x.real, "imag": lambda x: x.imag}[name]
    source = {"conj": "{0}.conj()", "conjugate": "{0}.conjugate()", "real": "{0}.real",
              "imag": "{0}.imag"}[name]
    return Operator(_any, lambda draw, st, shape, limits: {}, build, source)


def _dot_method_row() -> Operator:
    row = _vector_product_row("dot")
    return Operator(row.requires, row.draw, lambda x, y: x.dot(y), "{0}.dot({1})")


# --- the table -------------------------------------------------------------------------------

INDEXING_FORMS = ("x[int]", "x[int array]", "x[bool mask]", "x[slice]", "x[key] = value")
OPERATOR_FORMS = tuple(f"x {s} y" for s in _BINARY_OPERATORS) + \
    ("x @ y", "-x", "+x", "~x", "abs(x)")
METHOD_FORMS = (".T", ".mT", ".transpose", ".reshape", ".flatten", ".ravel", ".squeeze",
                ".swapaxes", ".astype", ".clip", ".round", ".conj", ".conjugate", ".real",
                ".imag", ".diagonal", ".dot") + tuple(f".{r}" for r in
                                                      ("sum", "prod", "max", "min", "any",
                                                       "all", "mean", "var", "std", "argmax",
                                                       "argmin", "count_nonzero"))

# the rows of this module: table key -> (the public forms it draws)
ROW_COVERS: dict[str, tuple[str, ...]] = {}


def _rows() -> dict[str, Operator]:
    rows: dict[str, Operator] = {}

    def add(key: str, op: Operator, *covers: str) -> None:
        rows[key] = _table_row(op)
        ROW_COVERS[key] = covers or (key,)

    for name in _REDUCTIONS:
        add(name, _reduction_row(name), name)
    for name in ("sum", "prod", "max", "min", "any", "all", "mean", "var", "std", "argmax",
                 "argmin", "count_nonzero"):
        if hasattr(_sf().LazyArray, name):
            add(f".{name}", _reduction_row(name, method=True), f".{name}")
    add("int_index", _int_index_row(), "x[int]")
    add("offset_slice", _offset_slice_row(), "x[slice]")
    add("int_array_index", _int_array_row(), "x[int array]")
    add("mask_index", _mask_row(), "x[bool mask]")
    add("place", _place_row(), "x[key] = value")
    add("take", _take_row())
    add("compress", _compress_row())
    add("stack", _stack_row())
    add("hstack", _hvstack_row("hstack"))
    add("vstack", _hvstack_row("vstack"))
    add("block_array", _block_row())
    add("unstack", _unstack_row())
    add("moveaxis", _moveaxis_row())
    add("swapaxes", _swapaxes_row(False))
    add(".swapaxes", _swapaxes_row(True))
    add("transpose", _transpose_row())
    add("tile", _tile_row())
    add("repeat", _repeat_row())
    add("diff", _diff_row())
    add("matrix_transpose", _matrix_transpose_row("sf"))
    add(".mT", _matrix_transpose_row(".mT"))
    add(".T", _matrix_transpose_row(".T"))
    add(".transpose", _matrix_transpose_row(".transpose()"))
    add(".flatten", _reshape_method_row("flatten"))
    add(".ravel", _reshape_method_row("ravel"))
    add(".reshape", _reshape_method_row("reshape(-1)"))
    add("sf.reshape", _reshape_method_row("sf.reshape"), "reshape")
    add(".squeeze", _squeeze_method_row())
    add("tril", _triangle_row("tril"))
    add("triu", _triangle_row("triu"))
    add("sf.diagonal", _diagonal_row(False), "diagonal")
    add(".diagonal", _diagonal_row(True))
    add("sf.flip", _flip_row(), "flip")
    add("sf.roll", _roll_row(), "roll")
    add("astype", _astype_row(False))
    add(".astype", _astype_row(True))
    add("clip", _clip_row(False))
    add(".clip", _clip_row(True))
    add("round", _round_row(False))
    add(".round", _round_row(True))
    add("where", _where_row())
    add("outer", _vector_product_row("outer"))
    add("dot", _vector_product_row("dot"))
    add(".dot", _dot_method_row())
    add("vecdot", _vector_product_row("vecdot"))
    add("tensordot", _tensordot_row())
    add("einsum", _einsum_row())
    add("x @ y", _matmul_operator_row(), "x @ y", "matmul")
    for symbol in _BINARY_OPERATORS:
        add(f"x {symbol} y", _binary_operator_row(symbol))
    for symbol in ("-", "+", "~", "abs"):
        add(f"{symbol}x" if symbol != "abs" else "abs(x)", _unary_operator_row(symbol))
    for name in ("conj", "conjugate", "real", "imag"):
        add(f".{name}", _method_row(name))
    return rows


# public names no program builds, with the reason (checked by the coverage test)
NOT_DRAWN: dict[str, str] = {
    "LazyArray": "the array class itself (its methods and operators have rows)",
    "asarray": "wraps an input: every leaf of every program is an sf.asarray",
    "symbol": "a symbolic input for the verifier (no data to run a kernel on)",
    "jit": "compiles programs: the differential test's harness itself",
    "show": "prints a kernel's source (tested by tests/frontend); not a program",
    "register_function": "registers a user function; registered functions join the fn: "
                         "rows of elementwise_rows() automatically",
    "apply_operator": "applies a shape entry by its class: every entry is drawn by its "
                      "own row (ShapeOp.random_row); user entries through it are tested "
                      "by tests/test_one_entry_operator.py",
    "nonzero": "eager: returns NumPy index arrays of data-dependent length (its value is "
               "what x[mask] programs read, and int_array_index draws)",
    "argwhere": "eager, as nonzero",
}
for _name in ("SparsefoldError", "IllFormedProgram", "IllFormedIndex", "IllFormedArgument",
              "InvalidData", "InvalidIndex", "InternalError"):
    NOT_DRAWN[_name] = "an error class"


def _covered_elsewhere() -> dict[str, str]:
    """Public names drawn by rows outside this module: the spec entries' and the compute
    rows (name -> row key)."""
    return {"concat": "concat", "expand_dims": "expand_dims", "squeeze": "squeeze",
            "broadcast_to": "broadcast_to", "permute_dims": "permute_dims", "pad": "pad",
            "matmul": "matmul", "add": "fn:add", "subtract": "fn:subtract"}


def language_table(entries=None, limits: Limits | None = None) -> dict[str, Operator]:
    """Every row: the shape entries' and compute rows (``random_programs.operator_table``),
    one per elementwise function, and this module's (reductions, other functions,
    indexing forms, operators, methods)."""
    table = dict(operator_table(entries))
    table.update(elementwise_rows())
    table.update(_rows())
    return table


def surface() -> set[str]:
    """Every public form a user writes a program with: the front end's functions
    (``sparsefold.__all__``, elementwise spellings included), the array's operators and
    methods, the indexing forms."""
    sf = _sf()
    names = set(sf.__all__)
    names |= set(OPERATOR_FORMS) | set(INDEXING_FORMS)
    names |= {m for m in METHOD_FORMS if hasattr(sf.LazyArray, m[1:])}
    return names


def drawn_names(table: Mapping[str, Operator] | None = None) -> dict[str, str]:
    """Public form -> the row key that draws it."""
    table = language_table() if table is None else table
    out: dict[str, str] = {}
    for key in table:
        for form in ROW_COVERS.get(key, ()):
            out.setdefault(form, key)
        if key.startswith("fn:"):
            name = key[3:]
            out.setdefault(_front_name(name), key)
            out.setdefault("apply", key)  # (the rows spell a function through sf.apply too)
    out.update({k: v for k, v in _covered_elsewhere().items() if v in table})
    # spellings of one function (sf.arcsin is asin's row, sf.absolute abs's, ...)
    from sparsefold.spec.function_table import NUMPY_ALIASES
    for alias, target in NUMPY_ALIASES.items():
        if f"fn:{target}" in table:
            out.setdefault(alias, f"fn:{target}")
    return out


_ = MONOIDS  # (the monoids are reached through the reduction rows; see the coverage test)


# --- programs over the whole language ----------------------------------------------------------

_CATEGORIES = {
    "indexing": ("slice", "offset_slice", "int_index", "int_array_index", "mask_index", "take",
                 "compress", "unstack", "place"),
    "joins": ("concat", "stack", "hstack", "vstack", "block_array"),
    "products": ("matmul", "x @ y", "dot", ".dot", "vecdot", "outer", "tensordot", "einsum"),
    "casts": ("astype", ".astype", "clip", ".clip", "round", ".round", "where", ".conj",
              ".conjugate", ".real", ".imag"),
    "reductions": ("reduce",) + _REDUCTIONS + tuple(f".{r}" for r in _REDUCTIONS),
}
# joins and indexing are where pieces, guards and offsets compose (the compiler's most
# intricate part, and issue #27's bug), and elementwise holds ~75 rows: each drawn twice as
# often as the other categories
_WEIGHT = {"joins": 2, "indexing": 2, "elementwise": 2}
# after a row of the first category, 3 times in 4 one of the second: the pairs whose
# interaction is easy to get wrong (stack([a, b])[1]; a reduction of a map)
_FOLLOW = {"joins": "indexing", "elementwise": "reductions", "indexing": "joins",
           "products": "elementwise", "shape": "indexing"}


def category(key: str) -> str:
    """The category a table row belongs to (how :func:`language_programs` draws rows)."""
    if key.startswith("fn:") or key in ("map", "binary"):
        return "elementwise"
    for name, keys in _CATEGORIES.items():
        if key in keys:
            return name
    if key.startswith("x ") or key in ("-x", "+x", "~x", "abs(x)"):
        return "operators"
    return "shape"


def _pick(rng, choices: list):
    """One of ``choices``, uniformly, by the program's own generator ``rng`` (seeded by one
    Hypothesis draw per program). Hypothesis's own choices favour the simplest (the first of
    ``sampled_from``, 0 and the bounds of ``integers``): rows picked by them left some of the
    ~70 elementwise rows undrawn in 1500 programs, and a drawn 32-bit seed per pick came out 0
    so often that most programs were the same reduction."""
    return choices[rng.randrange(len(choices))]


def _joined_axis(x) -> int | None:
    """The axis a join row (``x.op``) joined its operands along, in ``x``'s axes."""
    if x.op == "input" or category(x.op) != "joins":
        return None
    nd = len(x.shape)
    if x.op == "vstack" or (x.op == "hstack" and nd == 1):
        return 0
    if x.op == "hstack":
        return 1
    axis = x.params.get("axis")
    if not isinstance(axis, int) or not nd:
        return None
    return axis % nd


def _grow(draw, x, table: Mapping[str, Operator], limits: Limits, rng, home: str):
    """``x`` with one row applied (a drawn row that applies to its shape and builds), or
    ``x`` itself when none does. Further operands are fresh inputs of the shape the row
    asks, ``x`` itself when it has that shape, or an elementwise function of an input."""
    from hypothesis import strategies as st

    from sparsefold.spec.errors import IllFormedProgram
    from sparsefold.verify.random_programs import Term, _leaf
    names = [n for n, op in table.items() if op.requires(x.shape, limits)]
    if not names:
        return x
    # a category first, then a row of it: the ~70 elementwise rows would otherwise crowd
    # out the rest, and pairs that interact (a join, then an integer index) would be rare
    groups: dict[str, list[str]] = {}
    for n in names:
        groups.setdefault(category(n), []).append(n)
    kinds = sorted(groups)
    follow = _FOLLOW.get(category(x.op)) if x.op != "input" else None
    if follow in groups and rng.random() < 0.75:
        kind = follow
    else:  # the shape machinery's own categories twice as often (_WEIGHT)
        kind = _pick(rng, [k for k in kinds for _ in range(_WEIGHT.get(k, 1))])
    name = _pick(rng, groups[kind])
    axis = _joined_axis(x)
    if kind == "indexing" and axis is not None and "int_index" in groups[kind] and \
            x.shape[axis] > 0 and rng.random() < 0.5:
        # the interaction itself: an integer index of the joined axis picks one operand
        # (stack([a, b])[1], hstack([a, b])[:, -1]), the rest of the key open
        name = "int_index"
        n = x.shape[axis]
        k = draw(st.sampled_from([v for v in (0, 1, -1, n - 1) if -n <= v < n]))
        params = {"key": (slice(None),) * axis + (k,)}
    else:
        params = dict(table[name].draw(draw, x.shape, limits))
    args = [x]
    for want in params.pop("operands", []):
        want = tuple(want)
        choice = draw(st.sampled_from(["input", "same", "mapped"]))
        if choice == "same" and x.shape == want:
            args.append(x)
            continue
        leaf = draw(_leaf(limits, want, prefer=home))
        if choice == "mapped":
            unary = [n for n in table if n.startswith("fn:") and
                     FUNCTIONS[n[3:]].arity == 1]
            mapped = draw(st.sampled_from(unary))
            try:
                lazy = table[mapped].build(leaf.lazy, via_apply=False)
                leaf = Term(mapped, (leaf,), {"via_apply": False}, lazy)
            except IllFormedProgram:
                pass
        args.append(leaf)
    try:
        lazy = table[name].build(*(a.lazy for a in args), **params)
    except IllFormedProgram:
        return x  # ill-typed for these operands (e.g. ~x of a float): leave the node out
    if lazy.ndim > limits.max_dims or math.prod(lazy.shape) > limits.max_size:
        return x
    return Term(name, tuple(args), params, lazy)


class _Strategies:
    """Hypothesis's strategies and ``verify.strategies`` as one namespace (as the spec
    entries' rows get it)."""

    def __getattr__(self, name: str):
        from hypothesis import strategies as st

        from sparsefold.verify import strategies as ours
        if name in ours.__all__:
            return getattr(ours, name)
        return getattr(st, name)


_STRATEGIES = _Strategies()

LANGUAGE_LIMITS = Limits(formats=("csr", "csc", "coo", "dense", "pydata", "filled"),
                         dtypes=("float64", "float32", "int64", "int32", "bool", "uint8",
                                 "complex128"))


def language_programs(*, max_depth: int = 5, min_depth: int = 1,
                      outs=("csr", "csc", "coo", "dcsr", "dense", None),
                      limits: Limits | None = None, table: Mapping[str, Operator] | None = None):
    """Random programs of ``min_depth..max_depth`` rows over the whole language
    (:func:`language_table`), on inputs in csr, csc, coo (n-d too), dense, pydata and
    filled pydata storage; each a ``random_programs.Program`` (``p(*p.inputs)``,
    ``p.source``, ``p.out``; ``out=None`` is ``sf.jit``'s default)."""
    from hypothesis import strategies as st

    from sparsefold.verify.random_programs import Program, _leaf
    limits = limits or LANGUAGE_LIMITS
    table = language_table() if table is None else dict(table)

    @st.composite
    def program(draw):
        import random
        rng = random.Random(draw(st.integers(0, 2**64 - 1)))  # the rows' picks (_pick)
        depth = draw(st.integers(min_depth, max_depth))
        home = limits.formats[rng.randrange(len(limits.formats))]  # the inputs' usual format
        x = draw(_leaf(limits, prefer=home))
        for _ in range(depth):
            x = _grow(draw, x, table, limits, rng, home)
        for _ in range(4):  # nothing applied (ill-typed for its operands): more tries
            if x.op != "input":
                break
            x = _grow(draw, x, table, limits, rng, home)
        return Program(x, table, draw(st.sampled_from(list(outs))))
    return program()

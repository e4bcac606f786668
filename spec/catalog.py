"""The rewrite-rule catalog: one rule per line, the math in the comment above it, grouped by
family (STYLE 7). Rules are language data: written over spec nodes with the derived
operators (``spec.derived``), proved by ``sparsefold prove`` for symbolic sizes, and
applied by the compiler's optimize pass to proved instances only.

Notation: ``at(x, key[a:b])`` is ``x[a:b]`` (NumPy basic indexing, ``spec.indexing``);
``x[a:b]`` in a comment slices with non-negative symbolic bounds (clipped as Python does);
``N``, ``I``, ``J``, ``K`` are sizes; sums are exact on ``int64`` (ring arithmetic), so the
optimizer applies sum rules for ``int64`` only. The same rules over ``float64`` hold in real
arithmetic only (floating-point sums are not associative): they expect ``proved-real`` and
are never applied. ``max``/``min`` select rather than compute, so their rules are exact for
floats too (NaN included), given non-empty extents (the max of nothing has no value).
"""

from __future__ import annotations

from itertools import permutations

from sparsefold.spec import sizes as sz
from sparsefold.spec.derived import (
    apply,
    broadcast_to,
    concat,
    expand_dims,
    pad,
    permute_dims,
    reduce,
    reshape,
    squeeze,
    stack,
    transpose,
)
from sparsefold.spec.indexing import getitem
from sparsefold.spec.rules import PROVED_REAL, Rule, rule

__all__ = ["RULES", "at", "key", "add", "sub", "mul", "div", "neg", "total", "prod", "amax",
           "amin", "maximum", "minimum"]


class _Key:
    """``key[a:b, ::r]`` is the index key ``(slice(a, b), slice(None, None, r))``."""

    def __getitem__(self, k):
        return k


key = _Key()


def at(x, k):
    """``x[k]``."""
    return getitem(x, k)


def add(x, y):
    return apply("add", x, y)


def sub(x, y):
    return apply("subtract", x, y)


def mul(x, y):
    return apply("multiply", x, y)


def div(x, y):
    return apply("divide", x, y)


def neg(x):
    return apply("negative", x)


def total(x, axis=None):
    """``sum(x, axis)``."""
    return reduce("sum", x, axis)


def prod(x, axis=None):
    return reduce("prod", x, axis)


def amax(x, axis=None):
    """``max(x, axis)``."""
    return reduce("max", x, axis)


def amin(x, axis=None):
    return reduce("min", x, axis)


def maximum(x, y):
    return apply("maximum", x, y)


def minimum(x, y):
    return apply("minimum", x, y)


I, J, K, N = sz.Sym("I"), sz.Sym("J"), sz.Sym("K"), sz.Sym("N")  # noqa: E741 - the sizes' names in the math and docs
a, b, c, d, m = (sz.Sym(s) for s in "abcdm")
p, p1 = sz.Sym("p"), sz.Sym("p1")
VEC, MAT, CUBE = ("N",), ("I", "J"), ("I", "J", "K")
_PERMS = list(permutations(range(3)))

RULES: list[Rule] = [
    # --- slice ∘ slice -----------------------------------------------------------------------
    # x[a:b][c:d] == x[a+c : min(b, a+d)]
    rule("slice_slice", lambda x: at(at(x, key[a:b]), key[c:d]),
         lambda x: at(x, key[a + c:sz.minimum(b, a + d)]), x=VEC),
    # x[::r][::s] == x[::r*s]
    rule("slice_slice_steps", lambda x, r, s: at(at(x, key[::r]), key[::s]),
         lambda x, r, s: at(x, key[::r * s]), grid=dict(r=(1, 2, 3), s=(2, 3)), x=VEC),
    # x[a::r][c::s] == x[a + r*c :: r*s]
    rule("slice_slice_start_steps", lambda x, r, s: at(at(x, key[a::r]), key[c::s]),
         lambda x, r, s: at(x, key[a + r * c::r * s]), grid=dict(r=(1, 2), s=(1, 3)), x=VEC),
    # x[::-1][::-1] == x
    rule("reverse_reverse", lambda x: at(at(x, key[::-1]), key[::-1]), lambda x: x, x=VEC),
    # x[:N] == x   (N = len(x))
    rule("slice_whole", lambda x: at(x, key[:N]), lambda x: x, x=VEC),

    # --- reshape ∘ reshape -------------------------------------------------------------------
    # collapse(collapse(x, J·K), I·(J·K)) == collapse(x, I·J·K)
    rule("collapse_collapse", lambda x: reshape(reshape(x, (I, J * K)), (I * J * K,)),
         lambda x: reshape(x, (I * J * K,)), x=CUBE),
    # split(split(x, (I, J·K)), (J, K)) == split(x, (I, J, K))
    rule("split_split", lambda x: reshape(reshape(x, (I, J * K)), (I, J, K)),
         lambda x: reshape(x, (I, J, K)), x=(I * J * K,)),
    # x.reshape(I·J, K).reshape(I, J·K) == x.reshape(I, J·K)
    rule("reshape_reshape", lambda x: reshape(reshape(x, (I * J, K)), (I, J * K)),
         lambda x: reshape(x, (I, J * K)), x=CUBE),

    # --- collapse ∘ split, split ∘ collapse --------------------------------------------------
    # split(collapse(x)) == x
    rule("split_collapse", lambda x: reshape(reshape(x, (I * J,)), (I, J)), lambda x: x,
         x=MAT),
    # collapse(split(x)) == x
    rule("collapse_split", lambda x: reshape(reshape(x, (I, J)), (I * J,)), lambda x: x,
         x=(I * J,)),
    # split(collapse(x)) == x, rank 3
    rule("split_collapse_3d", lambda x: reshape(reshape(x, (I * J * K,)), (I, J, K)),
         lambda x: x, x=CUBE),

    # --- transpose ∘ transpose ---------------------------------------------------------------
    # (xᵀ)ᵀ == x
    rule("transpose_transpose", lambda x: transpose(transpose(x)), lambda x: x, x=MAT),
    # permute(permute(x, p), q) == permute(x, (p[q[0]], p[q[1]], p[q[2]]))
    rule("permute_permute", lambda x, P, Q: permute_dims(permute_dims(x, P), Q),
         lambda x, P, Q: permute_dims(x, tuple(P[i] for i in Q)),
         grid=dict(P=_PERMS, Q=_PERMS), x=CUBE),

    # --- slice of a concat that falls in one piece -------------------------------------------
    # concat(A, B)[a:b] == A[a:b]            when b <= J = len(A)
    rule("slice_concat_first", lambda A, B: at(concat([A, B]), key[a:b]),
         lambda A, B: at(A, key[a:b]), when="b <= J", A=("J",), B=("K",)),
    # concat(A, B)[a:b] == B[a-J : b-J]      when J <= a <= b (bounds stay non-negative)
    rule("slice_concat_second", lambda A, B: at(concat([A, B]), key[a:b]),
         lambda A, B: at(B, key[a - J:b - J]), when="J <= a <= b", A=("J",), B=("K",)),
    # concat(A, B, axis=1)[:, :J] == A
    rule("slice_concat_axis1", lambda A, B: at(concat([A, B], axis=1), key[:, :J]),
         lambda A, B: A, A=("I", "J"), B=("I", "K")),
    # concat(A, B)[i] == A[i]                when i < J
    rule("index_concat_first", lambda A, B: at(concat([A, B]), "i"), lambda A, B: at(A, "i"),
         when="i < J", A=("J", "M"), B=("K", "M")),

    # --- concat of adjacent slices -----------------------------------------------------------
    # concat(x[:m], x[m:]) == x
    rule("concat_split_point", lambda x: concat([at(x, key[:m]), at(x, key[m:])]),
         lambda x: x, x=VEC),
    # concat(x[a:b], x[b:c]) == x[a:c]       when a <= b <= c
    rule("concat_adjacent", lambda x: concat([at(x, key[a:b]), at(x, key[b:c])]),
         lambda x: at(x, key[a:c]), when="a <= b <= c", x=VEC),
    # concat(x[:, :m], x[:, m:], axis=1) == x
    rule("concat_split_point_axis1",
         lambda x: concat([at(x, key[:, :m]), at(x, key[:, m:])], axis=1), lambda x: x,
         x=MAT),

    # --- elementwise maps through shape operators --------------------------------------------
    # concat(A, B) * concat(C, D) == concat(A*C, B*D)
    rule("map_concat", lambda A, B, C, D: mul(concat([A, B]), concat([C, D])),
         lambda A, B, C, D: concat([mul(A, C), mul(B, D)]), A=("J",), B=("K",), C=("J",),
         D=("K",)),
    # -concat(A, B, axis=1) == concat(-A, -B, axis=1)
    rule("negative_concat", lambda A, B: neg(concat([A, B], axis=1)),
         lambda A, B: concat([neg(A), neg(B)], axis=1), A=("I", "J"), B=("I", "K")),
    # (x + y)[a:b:r] == x[a:b:r] + y[a:b:r]
    rule("map_slice", lambda x, y, r: at(add(x, y), key[a:b:r]),
         lambda x, y, r: add(at(x, key[a:b:r]), at(y, key[a:b:r])),
         grid=dict(r=(1, -1, 2)), x=VEC, y=VEC),
    # (2 * x)[a:b] == 2 * x[a:b]
    rule("scalar_slice", lambda x: at(mul(2, x), key[a:b]), lambda x: mul(2, at(x, key[a:b])),
         x=VEC),
    # (x * y).reshape(I·J) == x.reshape(I·J) * y.reshape(I·J)
    rule("map_reshape", lambda x, y: reshape(mul(x, y), (I * J,)),
         lambda x, y: mul(reshape(x, (I * J,)), reshape(y, (I * J,))), optimize=False,
         x=MAT, y=MAT),
    # (x - y)ᵀ == xᵀ - yᵀ
    rule("map_transpose", lambda x, y: transpose(sub(x, y)),
         lambda x, y: sub(transpose(x), transpose(y)), optimize=False, x=MAT, y=MAT),
    # broadcast(x * y) == broadcast(x) * broadcast(y)
    rule("map_broadcast", lambda x, y: broadcast_to(mul(x, y), (N, J)),
         lambda x, y: mul(broadcast_to(x, (N, J)), broadcast_to(y, (N, J))),
         optimize=False, x=("J",), y=("J",)),

    # --- sums (int64: exact) -----------------------------------------------------------------
    # Σ_j concat(A, B, axis=1)[i, j] == Σ_j A[i, j] + Σ_j B[i, j]
    rule("sum_concat_axis", lambda A, B: total(concat([A, B], axis=1), axis=1),
         lambda A, B: add(total(A, axis=1), total(B, axis=1)), dtype="int64",
         A=("I", "J"), B=("I", "K")),
    # Σ concat(A, B, C) == (Σ A + Σ B) + Σ C
    rule("sum_concat_three", lambda A, B, C: total(concat([A, B, C])),
         lambda A, B, C: add(add(total(A), total(B)), total(C)), dtype="int64",
         A=("J",), B=("K",), C=("M",)),
    # Σ_j concat(A, B, axis=0)[i, j] == concat(Σ_j A[·, j], Σ_j B[·, j])[i]
    rule("sum_concat_other_axis", lambda A, B: total(concat([A, B]), axis=1),
         lambda A, B: concat([total(A, axis=1), total(B, axis=1)]), dtype="int64",
         A=("J", "M"), B=("K", "M")),
    # Σ_j broadcast(A, (N, I, J))[n, i, j] == broadcast(Σ_j A[i, j], (N, I))[n, i]
    rule("sum_broadcast", lambda A: total(broadcast_to(A, (N, I, J)), axis=2),
         lambda A: broadcast_to(total(A, axis=1), (N, I)), dtype="int64", A=MAT),
    # Σ over a new size-1 axis: sum(expand_dims(x, 0), 0) == x
    rule("sum_expand_dims", lambda x: total(expand_dims(x, axis=0), axis=0),
         lambda x: x, dtype="int64", x=MAT),

    # --- broadcast ∘ broadcast ---------------------------------------------------------------
    # broadcast(broadcast(x, (J, I)), (K, J, I)) == broadcast(x, (K, J, I))
    rule("broadcast_broadcast",
         lambda x: broadcast_to(broadcast_to(x, (J, I)), (K, J, I)),
         lambda x: broadcast_to(x, (K, J, I)), x=("I",)),
    # the same, stretching a size-1 axis twice
    rule("broadcast_stretch_twice",
         lambda x: broadcast_to(broadcast_to(x, (J, I)), (K, J, I)),
         lambda x: broadcast_to(x, (K, J, I)), x=(1, "I")),

    # --- expand_dims ∘ squeeze ---------------------------------------------------------------
    # squeeze(expand_dims(x, e), e) == x
    rule("squeeze_expand", lambda x, e: squeeze(expand_dims(x, axis=e), e),
         lambda x, e: x, grid=dict(e=(0, 1, 2)), x=MAT),
    # expand_dims(squeeze(x, 1), 1) == x     for x of shape (I, 1, J)
    rule("expand_squeeze", lambda x: expand_dims(squeeze(x, 1), axis=1), lambda x: x,
         x=("I", 1, "J")),

    # --- pad then slice ----------------------------------------------------------------------
    # pad(x, (p, q))[p : p+N] == x
    rule("pad_slice", lambda x: at(pad(x, ("p", "q")), key[p:p + N]), lambda x: x, x=VEC),
    # pad(x, ((p, q), (p1, q1)))[p : p+I, p1 : p1+J] == x
    rule("pad_slice_2d",
         lambda x: at(pad(x, (("p", "q"), ("p1", "q1"))), key[p:p + I, p1:p1 + J]),
         lambda x: x, x=MAT),
    # pad(x, 0) == x
    rule("pad_zero", lambda x: pad(x, 0), lambda x: x, x=MAT),

    # --- reductions over floats and max/min (never applied: optimize=False) ----------------
    # over float64 these hold in real arithmetic only: floating point may round differently
    # Σ_j concat(A, B, axis=1)[i, j] == Σ_j A[i, j] + Σ_j B[i, j]
    rule("sum_concat_axis_float", lambda A, B: total(concat([A, B], axis=1), axis=1),
         lambda A, B: add(total(A, axis=1), total(B, axis=1)), expect=PROVED_REAL,
         optimize=False, family="real", A=("I", "J"), B=("I", "K")),
    # Σ concat(A, B, C) == (Σ A + Σ B) + Σ C
    rule("sum_concat_three_float", lambda A, B, C: total(concat([A, B, C])),
         lambda A, B, C: add(add(total(A), total(B)), total(C)), expect=PROVED_REAL,
         optimize=False, family="real", A=("J",), B=("K",), C=("M",)),
    # Σ_n stack(A, B)[n, i, j] == A[i, j] + B[i, j]
    rule("sum_stack_float", lambda A, B: total(stack([A, B]), axis=0),
         lambda A, B: add(A, B), expect=PROVED_REAL, optimize=False, family="real", A=MAT,
         B=MAT),
    # Σ_j broadcast(A, (N, I, J))[n, i, j] == broadcast(Σ_j A[i, j], (N, I))[n, i]
    rule("sum_broadcast_float", lambda A: total(broadcast_to(A, (N, I, J)), axis=2),
         lambda A: broadcast_to(total(A, axis=1), (N, I)), expect=PROVED_REAL,
         optimize=False, family="real", A=MAT),
    # Π concat(A, B) == Π A · Π B
    rule("prod_concat_float", lambda A, B: prod(concat([A, B])),
         lambda A, B: mul(prod(A), prod(B)), expect=PROVED_REAL, optimize=False,
         family="real", A=("J",), B=("K",)),
    # the same over int64: exact (ring arithmetic modulo 2^64)
    rule("prod_concat", lambda A, B: prod(concat([A, B])), lambda A, B: mul(prod(A), prod(B)),
         dtype="int64", optimize=False, A=("J",), B=("K",)),
    # max concat(A, B) == maximum(max A, max B)      (floats: exact, NaN included)
    rule("max_concat", lambda A, B: amax(concat([A, B])),
         lambda A, B: maximum(amax(A), amax(B)), "J >= 1 and K >= 1", optimize=False,
         A=("J",), B=("K",)),
    # min concat(A, B) == minimum(min A, min B)
    rule("min_concat", lambda A, B: amin(concat([A, B])),
         lambda A, B: minimum(amin(A), amin(B)), "J >= 1 and K >= 1", dtype="int64",
         optimize=False, A=("J",), B=("K",)),
    # max_n stack(A, B)[n, i, j] == maximum(A, B)[i, j]
    rule("max_stack", lambda A, B: amax(stack([A, B]), axis=0), lambda A, B: maximum(A, B),
         optimize=False, A=MAT, B=MAT),
    # max over a slice of a concat that is exactly B: concat(A, B)[J:] == B
    rule("max_slice_concat", lambda A, B: amax(at(concat([A, B]), key[J:])),
         lambda A, B: amax(B), "K >= 1", optimize=False, A=("J",), B=("K",)),
    # max_j broadcast(A, (N, I, J))[n, i, j] == broadcast(max_j A[i, j], (N, I))[n, i]
    rule("max_broadcast", lambda A: amax(broadcast_to(A, (N, I, J)), axis=2),
         lambda A: broadcast_to(amax(A, axis=1), (N, I)), "J >= 1", optimize=False, A=MAT),
]

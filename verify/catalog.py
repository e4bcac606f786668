"""The rewrite-rule catalog: one rule per line, the math in the comment above it, grouped by
family (STYLE 7). Every rule is proved by ``sparsefold prove`` for symbolic sizes; the
optimizer (``verify.rewrite``) applies only proved instances.

Notation: ``x[a:b]`` slices with non-negative symbolic bounds (clipped as Python does);
``N``, ``I``, ``J``, ``K`` are sizes; sums are exact on ``int64`` (ring arithmetic), so the
sum rules are stated — and applied — for ``int64`` only.
"""

from __future__ import annotations

from itertools import permutations

import sparsefold as sf
from sparsefold.spec import sizes as sz
from sparsefold.verify.rules import Rule, rule

__all__ = ["RULES", "get_rule"]

I, J, K, N = sz.Sym("I"), sz.Sym("J"), sz.Sym("K"), sz.Sym("N")
a, b, c, d, m = (sz.Sym(s) for s in "abcdm")
p, p1 = sz.Sym("p"), sz.Sym("p1")
VEC, MAT, CUBE = ("N",), ("I", "J"), ("I", "J", "K")
_PERMS = list(permutations(range(3)))

RULES: list[Rule] = [
    # --- slice ∘ slice -----------------------------------------------------------------------
    # x[a:b][c:d] == x[a+c : min(b, a+d)]
    rule("slice_slice", lambda x: x[a:b][c:d], lambda x: x[a + c:sz.minimum(b, a + d)], x=VEC),
    # x[::r][::s] == x[::r*s]
    rule("slice_slice_steps", lambda x, r, s: x[::r][::s], lambda x, r, s: x[::r * s],
         grid=dict(r=(1, 2, 3), s=(2, 3)), x=VEC),
    # x[a::r][c::s] == x[a + r*c :: r*s]
    rule("slice_slice_start_steps", lambda x, r, s: x[a::r][c::s],
         lambda x, r, s: x[a + r * c::r * s], grid=dict(r=(1, 2), s=(1, 3)), x=VEC),
    # x[::-1][::-1] == x
    rule("reverse_reverse", lambda x: x[::-1][::-1], lambda x: x, x=VEC),
    # x[:N] == x   (N = len(x))
    rule("slice_whole", lambda x: x[:N], lambda x: x, x=VEC),

    # --- reshape ∘ reshape -------------------------------------------------------------------
    # collapse(collapse(x, J·K), I·(J·K)) == collapse(x, I·J·K)
    rule("collapse_collapse", lambda x: x.reshape(I, J * K).reshape(I * J * K),
         lambda x: x.reshape(I * J * K), x=CUBE),
    # split(split(x, (I, J·K)), (J, K)) == split(x, (I, J, K))
    rule("split_split", lambda x: x.reshape(I, J * K).reshape(I, J, K),
         lambda x: x.reshape(I, J, K), x=(I * J * K,)),
    # x.reshape(I·J, K).reshape(I, J·K) == x.reshape(I, J·K)
    rule("reshape_reshape", lambda x: x.reshape(I * J, K).reshape(I, J * K),
         lambda x: x.reshape(I, J * K), x=CUBE),

    # --- collapse ∘ split, split ∘ collapse --------------------------------------------------
    # split(collapse(x)) == x
    rule("split_collapse", lambda x: x.reshape(I * J).reshape(I, J), lambda x: x, x=MAT),
    # collapse(split(x)) == x
    rule("collapse_split", lambda x: x.reshape(I, J).reshape(I * J), lambda x: x,
         x=(I * J,)),
    # split(collapse(x)) == x, rank 3
    rule("split_collapse_3d", lambda x: x.reshape(I * J * K).reshape(I, J, K), lambda x: x,
         x=CUBE),

    # --- transpose ∘ transpose ---------------------------------------------------------------
    # (xᵀ)ᵀ == x
    rule("transpose_transpose", lambda x: x.T.T, lambda x: x, x=MAT),
    # permute(permute(x, p), q) == permute(x, (p[q[0]], p[q[1]], p[q[2]]))
    rule("permute_permute", lambda x, P, Q: sf.permute_dims(sf.permute_dims(x, P), Q),
         lambda x, P, Q: sf.permute_dims(x, tuple(P[i] for i in Q)),
         grid=dict(P=_PERMS, Q=_PERMS), x=CUBE),

    # --- slice of a concat that falls in one piece -------------------------------------------
    # concat(A, B)[a:b] == A[a:b]            when b <= J = len(A)
    rule("slice_concat_first", lambda A, B: sf.concat([A, B])[a:b], lambda A, B: A[a:b],
         when="b <= J", A=("J",), B=("K",)),
    # concat(A, B)[a:b] == B[a-J : b-J]      when J <= a <= b (bounds stay non-negative)
    rule("slice_concat_second", lambda A, B: sf.concat([A, B])[a:b],
         lambda A, B: B[a - J:b - J], when="J <= a <= b", A=("J",), B=("K",)),
    # concat(A, B, axis=1)[:, :J] == A
    rule("slice_concat_axis1", lambda A, B: sf.concat([A, B], axis=1)[:, :J],
         lambda A, B: A, A=("I", "J"), B=("I", "K")),
    # concat(A, B)[i] == A[i]                when i < J
    rule("index_concat_first", lambda A, B: sf.concat([A, B])["i"], lambda A, B: A["i"],
         when="i < J", A=("J", "M"), B=("K", "M")),

    # --- concat of adjacent slices -----------------------------------------------------------
    # concat(x[:m], x[m:]) == x
    rule("concat_split_point", lambda x: sf.concat([x[:m], x[m:]]), lambda x: x, x=VEC),
    # concat(x[a:b], x[b:c]) == x[a:c]       when a <= b <= c
    rule("concat_adjacent", lambda x: sf.concat([x[a:b], x[b:c]]), lambda x: x[a:c],
         when="a <= b <= c", x=VEC),
    # concat(x[:, :m], x[:, m:], axis=1) == x
    rule("concat_split_point_axis1", lambda x: sf.concat([x[:, :m], x[:, m:]], axis=1),
         lambda x: x, x=MAT),

    # --- elementwise maps through shape operators --------------------------------------------
    # concat(A, B) * concat(C, D) == concat(A*C, B*D)
    rule("map_concat", lambda A, B, C, D: sf.concat([A, B]) * sf.concat([C, D]),
         lambda A, B, C, D: sf.concat([A * C, B * D]), A=("J",), B=("K",), C=("J",),
         D=("K",)),
    # -concat(A, B, axis=1) == concat(-A, -B, axis=1)
    rule("negative_concat", lambda A, B: -sf.concat([A, B], axis=1),
         lambda A, B: sf.concat([-A, -B], axis=1), A=("I", "J"), B=("I", "K")),
    # (x + y)[a:b:r] == x[a:b:r] + y[a:b:r]
    rule("map_slice", lambda x, y, r: (x + y)[a:b:r], lambda x, y, r: x[a:b:r] + y[a:b:r],
         grid=dict(r=(1, -1, 2)), x=VEC, y=VEC),
    # (2 * x)[a:b] == 2 * x[a:b]
    rule("scalar_slice", lambda x: (2 * x)[a:b], lambda x: 2 * x[a:b], x=VEC),
    # (x * y).reshape(I·J) == x.reshape(I·J) * y.reshape(I·J)
    rule("map_reshape", lambda x, y: (x * y).reshape(I * J),
         lambda x, y: x.reshape(I * J) * y.reshape(I * J), optimize=False, x=MAT, y=MAT),
    # (x - y)ᵀ == xᵀ - yᵀ
    rule("map_transpose", lambda x, y: (x - y).T, lambda x, y: x.T - y.T, optimize=False,
         x=MAT, y=MAT),
    # broadcast(x * y) == broadcast(x) * broadcast(y)
    rule("map_broadcast", lambda x, y: sf.broadcast_to(x * y, (N, J)),
         lambda x, y: sf.broadcast_to(x, (N, J)) * sf.broadcast_to(y, (N, J)),
         optimize=False, x=("J",), y=("J",)),

    # --- sums (int64: exact) -----------------------------------------------------------------
    # Σ_j concat(A, B, axis=1)[i, j] == Σ_j A[i, j] + Σ_j B[i, j]
    rule("sum_concat_axis", lambda A, B: sf.sum(sf.concat([A, B], axis=1), axis=1),
         lambda A, B: sf.sum(A, axis=1) + sf.sum(B, axis=1), dtype="int64",
         A=("I", "J"), B=("I", "K")),
    # Σ concat(A, B, C) == (Σ A + Σ B) + Σ C
    rule("sum_concat_three", lambda A, B, C: sf.sum(sf.concat([A, B, C])),
         lambda A, B, C: sf.sum(A) + sf.sum(B) + sf.sum(C), dtype="int64",
         A=("J",), B=("K",), C=("M",)),
    # Σ_j concat(A, B, axis=0)[i, j] == concat(Σ_j A[·, j], Σ_j B[·, j])[i]
    rule("sum_concat_other_axis", lambda A, B: sf.sum(sf.concat([A, B]), axis=1),
         lambda A, B: sf.concat([sf.sum(A, axis=1), sf.sum(B, axis=1)]), dtype="int64",
         A=("J", "M"), B=("K", "M")),
    # Σ_j broadcast(A, (N, I, J))[n, i, j] == broadcast(Σ_j A[i, j], (N, I))[n, i]
    rule("sum_broadcast", lambda A: sf.sum(sf.broadcast_to(A, (N, I, J)), axis=2),
         lambda A: sf.broadcast_to(sf.sum(A, axis=1), (N, I)), dtype="int64", A=MAT),
    # Σ over a new size-1 axis: sum(expand_dims(x, 0), 0) == x
    rule("sum_expand_dims", lambda x: sf.sum(sf.expand_dims(x, axis=0), axis=0),
         lambda x: x, dtype="int64", x=MAT),

    # --- broadcast ∘ broadcast ---------------------------------------------------------------
    # broadcast(broadcast(x, (J, I)), (K, J, I)) == broadcast(x, (K, J, I))
    rule("broadcast_broadcast",
         lambda x: sf.broadcast_to(sf.broadcast_to(x, (J, I)), (K, J, I)),
         lambda x: sf.broadcast_to(x, (K, J, I)), x=("I",)),
    # the same, stretching a size-1 axis twice
    rule("broadcast_stretch_twice",
         lambda x: sf.broadcast_to(sf.broadcast_to(x, (J, I)), (K, J, I)),
         lambda x: sf.broadcast_to(x, (K, J, I)), x=(1, "I")),

    # --- expand_dims ∘ squeeze ---------------------------------------------------------------
    # squeeze(expand_dims(x, e), e) == x
    rule("squeeze_expand", lambda x, e: sf.squeeze(sf.expand_dims(x, axis=e), e),
         lambda x, e: x, grid=dict(e=(0, 1, 2)), x=MAT),
    # expand_dims(squeeze(x, 1), 1) == x     for x of shape (I, 1, J)
    rule("expand_squeeze", lambda x: sf.expand_dims(sf.squeeze(x, 1), axis=1), lambda x: x,
         x=("I", 1, "J")),

    # --- pad then slice ----------------------------------------------------------------------
    # pad(x, (p, q))[p : p+N] == x
    rule("pad_slice", lambda x: sf.pad(x, ("p", "q"))[p:p + N], lambda x: x, x=VEC),
    # pad(x, ((p, q), (p1, q1)))[p : p+I, p1 : p1+J] == x
    rule("pad_slice_2d", lambda x: sf.pad(x, (("p", "q"), ("p1", "q1")))[p:p + I, p1:p1 + J],
         lambda x: x, x=MAT),
    # pad(x, 0) == x
    rule("pad_zero", lambda x: sf.pad(x, 0), lambda x: x, x=MAT),
]


def get_rule(name: str) -> Rule:
    """The catalog (or wrong-rule) entry called ``name``."""
    from sparsefold.verify.wrong_rules import WRONG_RULES
    for r in RULES + WRONG_RULES:
        if r.name == name:
            return r
    raise KeyError(f"no rule named {name!r}")

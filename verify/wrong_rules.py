"""Deliberately wrong rules — the verifier's own test suite (Halide's ``bad_rules``, Alive2's
``; ERROR:`` tests). Each must be *refuted* at the obligation named by ``fails=``, with a
counterexample that replays through the reference interpreter. ``sparsefold prove`` counts
any other outcome as a failure. The comment above each says what is wrong. Written over
spec nodes in the catalog's notation (``spec.catalog``: ``at(x, key[a:b])`` is ``x[a:b]``).
"""

from __future__ import annotations

from sparsefold.spec import sizes as sz
from sparsefold.spec.catalog import add, at, div, key, mul, total
from sparsefold.spec.derived import broadcast_to, concat, pad, permute_dims, reshape, transpose
from sparsefold.spec.rules import REFUTED, Rule, rule

__all__ = ["WRONG_RULES"]

I, J, K, N = sz.Sym("I"), sz.Sym("J"), sz.Sym("K"), sz.Sym("N")  # noqa: E741 - the sizes' names in the math
a, b, p = sz.Sym("a"), sz.Sym("b"), sz.Sym("p")


def wrong(name, lhs, rhs, when=None, *, fails, **kw) -> Rule:
    return rule(name, lhs, rhs, when, expect=REFUTED, fails=fails, optimize=False,
                family="wrong", **kw)


WRONG_RULES: list[Rule] = [
    # off-by-one concat offset: B starts at J, not J - 1
    wrong("wrong_concat_offset", lambda A, B: at(concat([A, B]), key[a:b]),
          lambda A, B: at(B, key[a - J + 1:b - J + 1]), when="J <= a <= b and b + 1 <= J + K",
          fails="value", A=("J",), B=("K",)),
    # collapse in the wrong (column-major) order
    wrong("wrong_collapse_order", lambda x: reshape(x, (I * J,)),
          lambda x: reshape(transpose(x), (I * J,)), fails="value", x=("I", "J")),
    # slice steps merged by adding instead of multiplying
    wrong("wrong_slice_steps", lambda x: at(at(x, key[::2]), key[::3]),
          lambda x: at(x, key[::5]), fails="shape", x=("N",)),
    # 0 * x -> 0 is false for floats: 0 * nan and 0 * inf are nan
    wrong("zero_times_x", lambda x: mul(0, x), lambda x: broadcast_to(0.0, (I, J)),
          fails="value", x=("I", "J")),
    # x / x -> 1 is false for floats: 0 / 0 is nan
    wrong("x_over_x", lambda x: div(x, x), lambda x: broadcast_to(1.0, ("N",)), fails="value",
          x=("N",)),
    # transposing a concat along axis 0 concatenates along axis 1, not 0
    wrong("wrong_concat_axis", lambda A, B: transpose(concat([A, B], axis=0)),
          lambda A, B: concat([transpose(A), transpose(B)], axis=0), fails="shape",
          A=("I", "J"), B=("I", "J")),
    # reshape is not transpose, even when the shapes agree
    wrong("reshape_is_transpose", lambda x: reshape(x, (J, I)), lambda x: transpose(x),
          fails="value", x=("I", "J")),
    # collapse then split with the sizes swapped is not a transpose either
    wrong("split_swapped_sizes", lambda x: reshape(reshape(x, (I * J,)), (J, I)),
          lambda x: transpose(x), fails="value", x=("I", "J")),
    # summing over the wrong axis (square, so the shapes agree)
    wrong("sum_wrong_axis", lambda x: total(x, axis=0), lambda x: total(x, axis=1),
          dtype="int64", fails="value", x=("N", "N")),
    # a sum over a concat must include every piece
    wrong("sum_concat_missing_piece", lambda A, B, C: total(concat([A, B, C])),
          lambda A, B, C: add(total(A), total(B)), dtype="int64", fails="value", A=("J",),
          B=("K",), C=("M",)),
    # summing a broadcast over its broadcast axis multiplies by N; it is not the identity
    wrong("sum_broadcast_forgets_factor",
          lambda x: total(broadcast_to(x, (N, I)), axis=0), lambda x: x, dtype="int64",
          fails="value", x=("I",)),
    # pad then slice, one element too far
    wrong("pad_slice_off_by_one", lambda x: at(pad(x, ("p", "q")), key[p + 1:p + N + 1]),
          lambda x: x, when="q >= 1", fails="value", x=("N",)),
    # a slice of a concat falls in the first piece only when it ends by J
    wrong("slice_concat_missing_condition", lambda A, B: at(concat([A, B]), key[a:b]),
          lambda A, B: at(A, key[a:b]), fails="shape", A=("J",), B=("K",)),
    # permutations compose as p[q[d]], not q[p[d]]
    wrong("wrong_permute_composition",
          lambda x: permute_dims(permute_dims(x, (1, 0, 2)), (0, 2, 1)),
          lambda x: permute_dims(x, (2, 0, 1)), fails="value", x=("N", "N", "N")),
    # reversing then taking every other element is not x[::-2]
    wrong("reverse_step_merge", lambda x: at(at(x, key[::2]), key[::-1]),
          lambda x: at(x, key[::-2]), fails="value", x=("N",)),
    # --- sides that are ill-formed for some sizes: refuted with those sizes ---------------
    # slicing a map slices both operands alike: y[1::2] is one shorter than x[::2] for odd N
    wrong("slice_map_misaligned", lambda x, y: at(add(x, y), key[::2]),
          lambda x, y: add(at(x, key[::2]), at(y, key[1::2])), fails="rhs_defined", x=("N",),
          y=("N",)),
    # transposing a map transposes every operand, not one: (J, I) + (I, J) needs I == J
    wrong("transpose_map_one_side", lambda A, B: transpose(add(A, B)),
          lambda A, B: add(transpose(A), B), fails="rhs_defined", A=("I", "J"),
          B=("I", "J")),
    # a map over a concat splits its other operand at J (A's length), not at K
    wrong("map_concat_wrong_offset", lambda A, B, C: mul(concat([A, B]), C),
          lambda A, B, C: concat([mul(A, at(C, key[:K])), mul(B, at(C, key[K:]))]),
          fails="rhs_defined", A=("J",), B=("K",), C=("M",)),
]

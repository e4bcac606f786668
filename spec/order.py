"""Order preservation, stated once in the size language (DESIGN §1 "properties", §3.2).

Entries of an array arrive in some *iteration order* (an operand walked in row-major or in
storage order, pieces one after another) and each lands at an output position. The
arrival is *in order* when

    e arrives before e'  ⇒  key(e) <lex key(e')

where ``key`` is the entry's output coordinates in the order that matters (row-major, or
the output format's storage order). An :class:`Entry` describes one symbolic entry: its
iteration key, its output key and what holds of it (bounds, guards). The verifier proves
this of every operator entry's forward map (``verify.obligations``); the compiler proves it
of the composed streams it is about to assemble append-only (``compiler.plan.order``). Both build
their query here, so the property they prove is the same one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sparsefold.spec import sizes as sz

__all__ = ["Entry", "lex_less", "arrives_in_order"]


@dataclass(frozen=True, slots=True)
class Entry:
    """One symbolic entry: ``iteration`` orders arrivals (lexicographically) within its
    source, ``key`` orders output positions (lexicographically), ``domain`` holds of it."""

    iteration: tuple[sz.Expr, ...]
    key: tuple[sz.Expr, ...]
    domain: tuple[sz.Expr, ...]


def lex_less(a: Sequence[sz.Expr], b: Sequence[sz.Expr]) -> sz.Expr:
    """``a <lex b``: at the first position where they differ, ``a`` is smaller."""
    if not a:
        return sz.FALSE
    return sz.or_(sz.lt(a[0], b[0]), sz.and_(sz.eq(a[0], b[0]), lex_less(a[1:], b[1:])))


def arrives_in_order(first: Entry, second: Entry, *, same_source: bool,
                     ) -> tuple[tuple[sz.Expr, ...], sz.Expr]:
    """``(assumptions, goal)``: ``first`` arrives before ``second`` ⇒ its key is smaller.

    With ``same_source`` both come from one source, and ``first`` arrives before
    ``second`` when its iteration key is smaller; otherwise ``first``'s whole source is
    iterated before ``second``'s, so every such pair counts."""
    before = (lex_less(first.iteration, second.iteration),) if same_source else ()
    return first.domain + second.domain + before, lex_less(first.key, second.key)

"""Walking size expressions for the verifier's obligations: every division (the
``divisions`` obligation) and every integer-valued subterm (``magnitude``), each with the
condition under which C evaluates it.

The Z3 reading of the size table itself — ``Z3_TABLE``, ``Reading`` (direct or staged),
``as_int``, ``as_bool`` — is ``sparsefold.spec.sizes_z3``, shared with the compiler's order
proofs; it is re-exported here.
"""

from __future__ import annotations

from sparsefold.spec import sizes as sz
from sparsefold.spec.sizes_z3 import Z3_TABLE, Reading, as_bool, as_int

__all__ = ["Z3_TABLE", "Reading", "as_bool", "as_int", "division_sites", "subterms"]


# --- walking expressions -------------------------------------------------------------------

def _applications(e: sz.Expr, path: sz.Expr = sz.TRUE):
    """``(path, op)`` for every operator application in ``e``, children first, where
    ``path`` is the condition under which its value is used: ``and``/``or`` short-circuit
    and ``select`` evaluates one branch, as in C (the NumPy reading evaluates everything but
    masks what these conditions exclude)."""
    e = sz.as_expr(e)
    if not isinstance(e, sz.Op):
        return
    a = e.args
    if e.op in ("and", "or", "select"):
        first = sz.and_(path, a[0]) if e.op != "or" else sz.and_(path, sz.not_(a[0]))
        yield from _applications(a[0], path)
        yield from _applications(a[1], first)
        if e.op == "select":
            yield from _applications(a[2], sz.and_(path, sz.not_(a[0])))
    else:
        for x in a:
            yield from _applications(x, path)
    yield path, e


def division_sites(e: sz.Expr, path: sz.Expr = sz.TRUE):
    """``(path, dividend, divisor)`` for every ``floordiv``/``mod`` in ``e``, with the
    condition under which its value is used (see :func:`_applications`)."""
    for where, t in _applications(e, path):
        if t.op in ("floordiv", "mod"):
            yield where, t.args[0], t.args[1]


_PREDICATES = {"lt", "le", "eq", "ne", "gt", "ge", "and", "or", "not"}


def subterms(e: sz.Expr, path: sz.Expr = sz.TRUE):
    """``(path, term)`` for every integer-valued operator application in ``e`` (used for
    the overflow obligations), with the same short-circuit paths as :func:`division_sites`."""
    for where, t in _applications(e, path):
        if t.op not in _PREDICATES:
            yield where, t

"""The array API's elementwise functions, one per built-in of ``spec.function_table``, with
NumPy's other spellings (``arcsin`` for ``asin``, ``left_shift`` for
``bitwise_left_shift``, ...). Each builds ``Map(function, arguments)``: the meaning, dtypes
and zero algebra are the spec's; nothing is computed here.

``astype``, ``clip`` and ``round`` (with ``decimals``) are their ``spec.derived``
definitions.
"""

from __future__ import annotations

from sparsefold.lazy import LazyArray, lift
from sparsefold.spec import derived
from sparsefold.spec.function_table import NUMPY_ALIASES
from sparsefold.spec.functions import FUNCTIONS

__all__ = ["ELEMENTWISE", "astype", "clip", "round"]


def _apply(name: str, *args) -> LazyArray:
    from sparsefold.functions import apply
    return apply(name, *args)


def _make(name: str, spelled: str):
    fn = FUNCTIONS[name]
    if fn.arity == 1:
        def f(x, /):
            return _apply(name, x)
    elif fn.arity == 2:
        def f(x1, x2, /):
            return _apply(name, x1, x2)
    else:
        def f(*args):
            return _apply(name, *args)
    f.__name__ = f.__qualname__ = spelled
    f.__module__ = "sparsefold"
    f.__doc__ = f"Elementwise ``{name}``: {fn.doc} (``spec.function_table``)."
    return f


# built-ins the front end names explicitly elsewhere (functions.py) or differently here
_OWN = {"add", "subtract", "multiply", "divide", "power", "maximum", "minimum", "where", "abs",
        "negative", "less", "less_equal", "greater", "greater_equal", "equal", "not_equal",
        "logical_and", "logical_or", "clip", "round"}
_BUILTIN = [name for name in FUNCTIONS if name not in _OWN]

# name -> function, every spelling
ELEMENTWISE = {name: _make(name, name) for name in _BUILTIN}
ELEMENTWISE.update({alias: _make(target, alias) for alias, target in NUMPY_ALIASES.items()
                    if target not in _OWN or alias in ("absolute", "true_divide", "pow")})
ELEMENTWISE.pop("pow", None)  # sf.pow is the power function already


def astype(x, dtype, /, *, copy: bool = True) -> LazyArray:
    """``x`` cast to ``dtype`` (NumPy's unsafe cast); ``copy`` is accepted and means nothing
    for a lazy program (results are always new arrays)."""
    node, bindings = lift(x)
    return LazyArray(derived.astype(node, dtype), bindings)


def clip(x, /, min=None, max=None) -> LazyArray:  # noqa: A002 - the array API's names
    """``np.clip(x, min, max)``; either bound may be None (both: ``x`` itself)."""
    if min is None and max is None:
        node, bindings = lift(x)
        return LazyArray(node, bindings)
    nodes = [lift(a) for a in (x, min, max) if a is not None]
    from sparsefold.lazy import merge_bindings
    lo = lift(min)[0] if min is not None else None
    hi = lift(max)[0] if max is not None else None
    return LazyArray(derived.clip(nodes[0][0], lo, hi),
                     merge_bindings(*(b for _, b in nodes)))


def round(x, /, decimals: int = 0) -> LazyArray:  # noqa: A001 - NumPy's name
    """``np.round``: half to even, ``decimals`` as NumPy computes it."""
    node, bindings = lift(x)
    return LazyArray(derived.round_(node, decimals), bindings)

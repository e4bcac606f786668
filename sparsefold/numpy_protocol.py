"""NumPy's dispatch protocols for lazy arrays (NEP 13 ``__array_ufunc__``, NEP 18
``__array_function__``): ``np.sum(x)``, ``np.concatenate([x, y])``, ``np.abs(x)`` or
``ndarray * x`` on a :class:`~sparsefold.LazyArray` build the same program as ``sf.sum(x)``,
``sf.concat([x, y])``, ``sf.abs(x)``, ``ndarray * x``.

A NumPy function is handled by the sparsefold function of the same name (``concatenate``
is ``concat``, ``transpose`` is ``permute_dims``, ``absolute`` is ``abs``, ``power`` is
``pow``, ``amax``/``amin`` are ``max``/``min``), so functions added to ``sparsefold``
later are picked up by name. Its arguments are matched to the sparsefold function's
parameters: by name where the names agree, by position for the leading positional ones.
NumPy arguments the sparsefold function does not take (``out=``, ``where=``, ``initial=``,
``order=``) are accepted only at NumPy's default value. Anything else — a NumPy function
sparsefold does not have, an unsupported argument, a ufunc method such as ``np.add.reduce`` —
raises :class:`IllFormedProgram` saying so, instead of silently densifying the program.
"""

from __future__ import annotations

import inspect
from typing import Any

import numpy as np

from sparsefold.spec.errors import IllFormedProgram

__all__ = ["array_function", "array_ufunc", "sparsefold_name"]

# NumPy names whose sparsefold function is spelled differently (the array-API names)
_ALIASES = {
    "concatenate": "concat", "absolute": "abs", "power": "pow", "true_divide": "divide",
    "amax": "max", "amin": "min", "transpose": "permute_dims",
}

# the ufuncs behind ``&`` and ``|`` (``ndarray & x`` reaches x as np.bitwise_and): the lazy
# array's own operators, defined for bool operands only
_HINT = ("call .interpret() (or np.asarray) for a NumPy array first, or use the sparsefold "
         "functions (help(sparsefold))")


def sparsefold_name(numpy_name: str) -> str:
    """The sparsefold function that stands for a NumPy function or ufunc name."""
    return _ALIASES.get(numpy_name, numpy_name)


def _target(numpy_name: str, what: str):
    import sparsefold as sf  # every public function (functions, elementwise, ...)
    name = sparsefold_name(numpy_name)
    if name not in sf.__all__ or not callable(getattr(sf, name)):
        raise IllFormedProgram(f"{what} is not supported on sparsefold arrays (sparsefold has "
                               f"no {name!r}); {_HINT}")
    return name, getattr(sf, name)


def array_ufunc(ufunc: np.ufunc, method: str, inputs: tuple, kwargs: dict) -> Any:
    """``ufunc(*inputs)`` where an input is a lazy array: the sparsefold function of that
    name (``np.multiply(ndarray, x)`` is ``sf.multiply(ndarray, x)``)."""
    what = f"numpy.{ufunc.__name__}" + ("" if method == "__call__" else f".{method}")
    if method != "__call__":
        raise IllFormedProgram(f"{what} is not supported on sparsefold arrays; {_HINT}")
    _, fn = _target(ufunc.__name__, what)
    if kwargs:
        raise IllFormedProgram(f"{what}(..., {', '.join(f'{k}=' for k in kwargs)}...) is not "
                               f"supported on sparsefold arrays; call it without "
                               f"{'that argument' if len(kwargs) == 1 else 'those arguments'}")
    return fn(*inputs)


def array_function(func, types: tuple, args: tuple, kwargs: dict) -> Any:
    """``func(*args, **kwargs)`` where an argument is a lazy array (NEP 18)."""
    from sparsefold.lazy import LazyArray
    if not all(issubclass(t, (LazyArray, np.ndarray)) for t in types):
        return NotImplemented  # another library's array: let it (or NumPy) decide
    what = f"numpy.{func.__name__}"
    name, fn = _target(func.__name__, what)
    given = _given_arguments(func, args, kwargs, what)
    if name == "permute_dims" and "axes" not in given:  # np.transpose(x): reverse the axes
        from sparsefold.lazy import lift
        given["axes"] = tuple(reversed(range(lift(next(iter(given.values())))[0].ndim)))
    positional, keywords = _match(fn, given, what, name)
    try:
        inspect.signature(fn).bind(*positional, **keywords)
    except TypeError as exc:  # e.g. np.where(condition) alone: sparsefold's needs three
        raise IllFormedProgram(f"{what}: as sparsefold.{name}{inspect.signature(fn)}, {exc}") \
            from None
    return fn(*positional, **keywords)


def _given_arguments(func, args: tuple, kwargs: dict, what: str) -> dict[str, Any]:
    """The arguments of the NumPy call by NumPy's parameter names, in NumPy's order,
    without those left at NumPy's default."""
    try:
        sig = inspect.signature(func)
        bound = sig.bind(*args, **kwargs)
    except (TypeError, ValueError) as exc:
        raise IllFormedProgram(f"{what}: {exc}") from None
    given: dict[str, Any] = {}
    for name, value in bound.arguments.items():
        param = sig.parameters[name]
        if param.kind is inspect.Parameter.VAR_KEYWORD:
            given.update(value)
        elif param.kind is inspect.Parameter.VAR_POSITIONAL:
            raise IllFormedProgram(f"{what}: variadic arguments are not supported on "
                                   f"sparsefold arrays; {_HINT}")
        elif not _is_default(value, param.default):
            given[name] = value
    return given


def _is_default(value: Any, default: Any) -> bool:
    if value is default:
        return True
    simple = (str, bool, int, float, type(None))
    return (isinstance(default, simple) and type(value) is type(default)
            and value == default)


def _match(fn, given: dict[str, Any], what: str, name: str) -> tuple[list, dict]:
    """NumPy's arguments as the sparsefold function's: by name where the names agree, else
    by position among the leading positional parameters."""
    params = list(inspect.signature(fn).parameters.values())
    positional_slots = [p for p in params if p.kind in (inspect.Parameter.POSITIONAL_ONLY,
                                                        inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    by_name = {p.name for p in params if p.kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD,
                                                    inspect.Parameter.KEYWORD_ONLY)}
    positional: list = []
    keywords: dict[str, Any] = {}
    for index, (arg, value) in enumerate(given.items()):
        if arg in by_name:
            keywords[arg] = value
        elif index < len(positional_slots) and index == len(positional):
            positional.append(value)
        else:
            accepted = ", ".join(p.name for p in params)
            raise IllFormedProgram(f"{what}(..., {arg}=...) is not supported on sparsefold "
                                   f"arrays (sparsefold.{name} takes {accepted})")
    return positional, keywords

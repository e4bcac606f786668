"""Materialization: a lazy array's value, computed at the moment Python needs one.

Programs are lazy; a few operations cannot be: converting to a Python scalar (``bool``,
``int``, ``float``, ``complex``, ``operator.index``), handing the data to another library
(``__array__``, ``__dlpack__``), and functions whose output *shape* depends on the data
(``unique_*``, ``nonzero``, a boolean mask). Those compute the program here, with the
engine its size calls for:

* **the reference interpreter** when every node of the program holds at most
  :data:`INTERPRET_MAX` elements densely (``SPARSEFOLD_INTERPRET_MAX``; default 65536):
  it answers in tens of microseconds where building a kernel takes a second or more, so a
  stream of tiny programs (a test suite, a REPL) never waits for a C compiler;
* **a compiled kernel** otherwise, through ``sf.jit``'s machinery: the program is retraced
  on inputs with symbolic sizes (one size class per distinct size, as ``sf.jit`` traces a
  function), so one kernel serves every size with the same structure, and a loop of calls
  on arrays of changing sizes compiles once. The result keeps its format: a sparse result
  stays a sparse container.

Both engines compute the same values (the interpreter is the compiler's oracle).
"""

from __future__ import annotations

import os
import threading
from typing import Any

import numpy as np

from sparsefold.spec import sizes as sz
from sparsefold.spec.compute import Input
from sparsefold.spec.errors import InvalidData
from sparsefold.spec.printer import topological
from sparsefold.spec.programs import substitute_program

__all__ = ["INTERPRET_MAX", "engine_for", "value", "compiled_value", "dense_value", "scalar",
           "has_data"]


def _interpret_max() -> int:
    text = os.environ.get("SPARSEFOLD_INTERPRET_MAX", "65536")
    try:
        n = int(text)
    except ValueError:
        raise InvalidData(f"SPARSEFOLD_INTERPRET_MAX must be an integer, found {text!r}") \
            from None
    return max(n, 0)


# the largest node (in elements, held densely) the interpreter is used for
INTERPRET_MAX = _interpret_max()


def _dense_size(node) -> int | None:
    n = sz.product(node.shape)
    return sz.const_value(n) if sz.is_const(n) else None


def engine_for(program) -> str:
    """"interp" when every node of ``program`` holds at most :data:`INTERPRET_MAX` elements
    densely, else "compiled"."""
    for node in topological(program):
        n = _dense_size(node)
        if n is None or n > INTERPRET_MAX:
            return "compiled"
    return "interp"


# one traced function per (concrete program, out): its kernels (keyed by the *symbolic*
# program in sparsefold.jit) are shared with every other size of the same structure
_TRACERS: dict[Any, Any] = {}
_TRACERS_LOCK = threading.Lock()


def _tracer(program, names: tuple[str, ...], out: str | None):
    from sparsefold.jit import JitFunction
    key = (program, names, out)
    with _TRACERS_LOCK:
        hit = _TRACERS.get(key)
        if hit is None:
            def retrace(*arrays):
                return _retraced(program, names, arrays)
            hit = _TRACERS[key] = JitFunction(retrace, out)
            if len(_TRACERS) > 4096:  # programs are small; keep the table bounded anyway
                _TRACERS.pop(next(iter(_TRACERS)))
        return hit


def _retraced(program, names, arrays):
    """``program`` over the traced inputs ``arrays`` (LazyArrays on symbolic inputs)."""
    from sparsefold.lazy import LazyArray
    inputs = {name: a.node for name, a in zip(names, arrays)}
    return LazyArray(substitute_program(program, inputs=inputs))


def compiled_value(x, out: str | None = None) -> Any:
    """``x`` computed by compiled kernels (``LazyArray.compute``'s result): retraced on
    symbolic sizes so its kernel serves every size; staged at ordering nodes
    (``sparsefold.staging``)."""
    from sparsefold.jit import _canonical
    from sparsefold.staging import compute_staged, is_staged
    program, values = _canonical(x)
    if is_staged(program):
        return compute_staged(program, values, out)
    if not values:
        from sparsefold.jit import compute
        return compute(x, out)
    names = tuple(sorted(values, key=lambda n: int(n[1:])))
    return _tracer(program, names, out)(*(values[n] for n in names))


def _small(x) -> bool:
    """``x`` is computed (or would be) by the interpreter."""
    cached = x._value
    if cached is not None and cached[0] is x.node:
        return isinstance(cached[1], np.ndarray)
    return engine_for(x.node) == "interp"


def value(x) -> Any:
    """``x`` computed: a NumPy array (the interpreter's result, or a dense-valued compiled
    one) or the sparse container a compiled kernel returns (scipy or pydata, as
    ``LazyArray.compute``). Remembered on ``x`` until its program changes."""
    cached = x._value
    if cached is not None and cached[0] is x.node:
        return cached[1]
    node = x.node
    if isinstance(node, Input) and node.name in x.bindings and node.format.is_dense:
        return x.bindings[node.name]  # the array itself
    if x._base is not None:  # x = base[i, j, ...]: read off the base's value when it is small
        base, base_node, key = x._base
        if base.node is base_node and _small(base):
            out = np.asarray(dense_value(base)[key])
            x._value = (x.node, out)
            return out
    from sparsefold.jit import _canonical
    program, values = _canonical(x)
    if engine_for(program) == "interp":
        from sparsefold.interp import evaluate
        out = evaluate(program, values)
    else:
        out = compiled_value(x)
    x._value = (x.node, out)
    return out


def dense_value(x) -> np.ndarray:
    """``x`` computed as a dense NumPy array (a sparse result is densified from its
    storage: the caller asked for every element)."""
    out = value(x)
    if isinstance(out, np.ndarray):
        return out
    from sparsefold.storage.dense import densify
    return densify(out)


def scalar(x) -> Any:
    """The value of a 0-d ``x`` as a NumPy scalar."""
    return dense_value(x)[()]


def has_data(x) -> bool:
    """Every input of ``x``'s program is bound to data (none is an ``sf.symbol``)."""
    return all(n.name in x.bindings for n in topological(x.node) if isinstance(n, Input))

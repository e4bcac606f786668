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
from collections import OrderedDict
from typing import Any

import numpy as np

from sparsefold.spec import sizes as sz
from sparsefold.spec.compute import Input
from sparsefold.spec.errors import InvalidData
from sparsefold.spec.printer import topological
from sparsefold.spec.programs import substitute_program

__all__ = ["INTERPRET_MAX", "engine_for", "value", "compiled_value", "dense_value", "scalar",
           "has_data", "written"]


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


def _small_nodes(order) -> bool:
    """Every node of ``order`` holds at most :data:`INTERPRET_MAX` elements densely."""
    for node in order:
        n = 1
        for size in node.shape:
            if not isinstance(size, sz.Const):
                return False
            n *= size.value
        if n > INTERPRET_MAX:
            return False
    return True


def engine_for(program) -> str:
    """"interp" when every node of ``program`` holds at most :data:`INTERPRET_MAX` elements
    densely, else "compiled"."""
    return "interp" if _small_nodes(topological(program)) else "compiled"


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


# Values the interpreter computed, by node (the programs a loop of small calls builds share
# nodes: x[i] == y[i] reads x's and y's values instead of evaluating them again). Every
# entry holds its node, so ids stay unique while it is here; a write into an array that
# programs read (``x[key] = v`` on a NumPy array) starts a new epoch and forgets them all.
_KNOWN: OrderedDict[int, tuple[Any, int, np.ndarray, tuple]] = OrderedDict()
_KNOWN_MAX = 4096             # entries ...
_KNOWN_TOTAL = 1 << 22        # ... and elements held in all (32 MiB of float64)
_KNOWN_ELEMENTS = 1 << 16     # the largest value remembered
_EPOCH = [0]
_TOTAL = [0]
_LOCK = threading.Lock()


def written() -> None:
    """A NumPy array that programs may read was written: forget every computed value."""
    with _LOCK:
        _EPOCH[0] += 1
        _KNOWN.clear()
        _TOTAL[0] = 0


def _remember(node, out, bindings) -> None:
    """Remember ``node``'s value, with the arrays it was computed from (a node is only
    reused over the same arrays: a program may be bound to other data)."""
    if isinstance(out, np.ndarray) and out.size <= _KNOWN_ELEMENTS:
        read = tuple((n.name, bindings[n.name]) for n in topological(node)
                     if isinstance(n, Input) and n.name in bindings)
        with _LOCK:
            old = _KNOWN.pop(id(node), None)
            if old is not None:
                _TOTAL[0] -= old[2].size
            _KNOWN[id(node)] = (node, _EPOCH[0], out, read)
            _TOTAL[0] += out.size
            while len(_KNOWN) > _KNOWN_MAX or _TOTAL[0] > _KNOWN_TOTAL:
                _TOTAL[0] -= _KNOWN.popitem(last=False)[1][2].size


def _known_for(order, bindings) -> dict[int, np.ndarray]:
    with _LOCK:
        if not _KNOWN:
            return {}
        found = {}
        for node in order:
            hit = _KNOWN.get(id(node))
            if hit is not None and hit[0] is node and hit[1] == _EPOCH[0] and all(
                    bindings.get(name) is arr for name, arr in hit[3]):
                found[id(node)] = hit[2]
                _KNOWN.move_to_end(id(node))  # recently used: kept longest
        return found


def _cached(x):
    c = x._value
    if c is not None and c[0] is x.node and c[1] == _EPOCH[0]:
        return c
    return None


def known_element(x) -> None:
    """``x = base[i, j, ...]``: when ``base`` is small (the interpreter's), its value is
    computed now (or read: a NumPy array bound as it is, a value computed before) and
    ``x``'s is one read away; remember it, so programs built on ``x`` find it (a loop
    reading elements evaluates ``base`` once, not once per element)."""
    base, base_node, key = x._base
    if base.node is not base_node:
        return
    c = _cached(base)
    if c is not None:
        got = c[2]
    else:
        node = base.node
        if isinstance(node, Input) and node.format.is_dense:
            got = base.bindings.get(node.name)
        elif _small(base) and has_data(base):
            try:  # reading one element of a small array computes it
                got = dense_value(base)
            except Exception:  # noqa: BLE001 - the error belongs to when x is computed
                return
        else:
            return
    if isinstance(got, np.ndarray):
        out = np.asarray(got[key])
        x._value = (x.node, _EPOCH[0], out)
        _remember(x.node, out, x.bindings)


def _small(x) -> bool:
    """``x`` is computed (or would be) by the interpreter."""
    c = _cached(x)
    if c is not None:
        return isinstance(c[2], np.ndarray)
    return engine_for(x.node) == "interp"


def value(x) -> Any:
    """``x`` computed: a NumPy array (the interpreter's result, or a dense-valued compiled
    one) or the sparse container a compiled kernel returns (scipy or pydata, as
    ``LazyArray.compute``). Remembered on ``x`` until its program changes or an array it
    may read is written."""
    c = _cached(x)
    if c is not None:
        return c[2]
    node = x.node
    if isinstance(node, Input) and node.name in x.bindings and node.format.is_dense:
        return x.bindings[node.name]  # the array itself
    if x._base is not None:  # x = base[i, j, ...]: read off the base's value when it is small
        base, base_node, key = x._base
        if base.node is base_node and _small(base):
            out = np.asarray(dense_value(base)[key])
            x._value = (node, _EPOCH[0], out)
            _remember(node, out, x.bindings)
            return out
    order = topological(node)
    if _small_nodes(order):
        from sparsefold.interp import evaluate
        from sparsefold.spec.fills import prepare
        for n in order:
            if isinstance(n, Input) and n.name not in x.bindings:
                raise InvalidData(f"input {n.name!r} has no data; bind it with sf.asarray")
        program = prepare(node)
        known = _known_for(order if program is node else topological(program), x.bindings)
        out = evaluate(program, x.bindings, known)
        _remember(node, out, x.bindings)
    else:
        out = compiled_value(x)
    x._value = (node, _EPOCH[0], out)
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

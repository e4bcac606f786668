"""Ahead-of-time kernels for packages (DESIGN §3.7, §5): declare, generate, bind.

A package lists ``sf.jit`` functions and the signatures to build in a *spec module*::

    import sparsefold as sf
    from sparsefold import aot

    @aot.export(aot.signature(aot.csr("float64"), aot.csr("float64")),
                aot.signature(aot.csr("float32"), aot.csr("float32")))
    @sf.jit
    def stack_rows(a, b):
        return sf.vstack([a, b])

    @aot.export(aot.signature(aot.csr("float64", index="int64"), aot.size(), aot.size(),
                              aot.dense("float64")))
    @sf.jit(out="dense")
    def rows_times(a, start, stop, x):
        return a[start:stop] @ x

``sparsefold aot PKG/kernels.py -o PKG/_kernels`` (or :func:`generate`) writes the kernels
as Cython, a dispatch module and setuptools glue (``sparsefold/aot_generate.py``); the
package builds them with its own ``pip install``; its ``_kernels/__init__.py`` calls
:func:`bind`, after which calls of ``stack_rows`` run on the built extension and need
neither Cython nor a C compiler.

A bound call *is* an ``sf.jit`` call — same tracing, validation, errors and result types —
with two differences: an argument signature that was not declared raises
:class:`NotPrebuilt` listing the declared ones, and a kernel that was not built raises
:class:`NotPrebuilt` instead of being compiled. How prebuilt kernels are found:
``sparsefold/aot_registry.py`` (a traced program matched to a declared generic one) and
``compiler/run/build.py`` (stage variants by source digest). Unbound (during development, or
in the spec module itself), an exported function is the plain JIT function.

Signatures: each array argument's storage format (``csr``, ``csc``, ``coo``, ``dense``),
value dtype, index dtype (``int32``/``int64``, what the array's ``indices``/``coords`` hold)
and rank; sizes are symbolic unless ``shape=`` names them (equal names, equal sizes) or
fixes them. :func:`size` arguments are non-negative ints the kernel takes per call (slice
bounds, indices). Other Python scalars are not supported: the JIT compiles them in as
constants.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

import numpy as np

from sparsefold.compiler.aot import INDEX_WIDTHS, MANIFEST_NAME, VARIANTS_NAME
from sparsefold.compiler.emit.cnames import check_compilable_dtype
from sparsefold.compiler.run import build
from sparsefold.compiler.run.build import NotPrebuilt
from sparsefold.interop import describe, is_pydata_sparse, is_scipy_sparse
from sparsefold.jit import JitFunction, _default_out, jit, traced_program
from sparsefold.lazy import LazyArray
from sparsefold.spec import sizes as sz
from sparsefold.spec.compute import Input
from sparsefold.spec.errors import IllFormedProgram
from sparsefold.spec.functions import check_dtype

__all__ = ["array", "csr", "csc", "coo", "dense", "size", "signature", "export",
           "ArraySpec", "SizeSpec", "Signature", "AotFunction", "NotPrebuilt", "bind",
           "exported", "trace_generic", "generate"]

_FORMATS = {"csr": (1, 2), "csc": (2,), "coo": None, "dense": None}  # allowed ranks
_DEFAULT_SYMBOL = re.compile(r"d\d+_\d+\Z")


# --- declarations -----------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class ArraySpec:
    """An array argument: storage ``format``, value ``dtype``, ``index`` dtype of its index
    arrays (None for dense), rank ``ndim``, and ``shape`` (size names / ints) or None."""

    format: str
    dtype: np.dtype
    index: str | None
    ndim: int
    shape: tuple[str | int, ...] | None = None

    def __post_init__(self):
        if self.format not in _FORMATS:
            raise IllFormedProgram(f"aot: format must be one of {', '.join(_FORMATS)}, found "
                                   f"{self.format!r}")
        ranks = _FORMATS[self.format]
        if ranks is not None and self.ndim not in ranks:
            raise IllFormedProgram(f"aot: a {self.format} array has rank "
                                   f"{' or '.join(map(str, ranks))}, found ndim={self.ndim}")
        object.__setattr__(self, "dtype", check_dtype(self.dtype, what="aot array"))
        check_compilable_dtype(self.dtype, f"aot {self.format} array")
        if self.format == "dense":
            if self.index is not None:
                raise IllFormedProgram("aot: a dense array has no index dtype")
        elif self.index not in INDEX_WIDTHS:
            raise IllFormedProgram(f"aot: index must be 'int32' or 'int64', found "
                                   f"{self.index!r}")
        if self.shape is not None:
            if len(self.shape) != self.ndim:
                raise IllFormedProgram(f"aot: shape {self.shape} has {len(self.shape)} sizes "
                                       f"for ndim={self.ndim}")
            for n in self.shape:
                if isinstance(n, str):
                    sz.check_symbol_name(n)
                    if _DEFAULT_SYMBOL.match(n):
                        raise IllFormedProgram(f"aot: size name {n!r} is reserved")
                elif not (isinstance(n, int) and not isinstance(n, bool) and n >= 0):
                    raise IllFormedProgram(f"aot: a size is a name or an int >= 0, found {n!r}")

    def __repr__(self) -> str:
        args = [repr(self.dtype.name)]
        if self.format != "dense" and self.index != "int32":
            args.append(f"index={self.index!r}")
        if self.format in ("coo", "dense") or (self.format == "csr" and self.ndim != 2):
            args.append(f"ndim={self.ndim}")
        if self.shape is not None:
            args.append(f"shape={self.shape!r}")
        return f"{self.format}({', '.join(args)})"

    def accepts(self, value: Any) -> bool:
        fmt, dtype, ndim, index = _kind(value)
        # index None: a layout the runtime converts (bsr, lil, ...); scipy picks its dtype
        return (fmt, dtype, ndim) == (self.format, self.dtype, self.ndim) and \
            index in (None, self.index)


@dataclass(frozen=True, slots=True)
class SizeSpec:
    """A size argument: a non-negative int the kernel takes per call (a slice bound, an
    index); ``name`` is its symbol in the generated kernel."""

    name: str | None = None

    def __post_init__(self):
        if self.name is not None:
            sz.check_symbol_name(self.name)

    def __repr__(self) -> str:
        return f"size({self.name!r})" if self.name else "size()"

    def accepts(self, value: Any) -> bool:
        return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)) \
            and value >= 0


@dataclass(frozen=True, slots=True)
class Signature:
    """The arguments of one build of a function; ``out_index``: the output index widths
    built (int32 is used whenever every size and entry count fits; int64 beyond)."""

    args: tuple[ArraySpec | SizeSpec, ...]
    out_index: tuple[str, ...] = ("int32",)

    def __post_init__(self):
        for a in self.args:
            if not isinstance(a, (ArraySpec, SizeSpec)):
                raise IllFormedProgram(f"aot: a signature lists aot.array(...) / aot.size() "
                                       f"arguments, found {a!r}")
        if not self.out_index or any(w not in INDEX_WIDTHS for w in self.out_index):
            raise IllFormedProgram(f"aot: out_index must name int32 and/or int64, found "
                                   f"{self.out_index!r}")

    def __repr__(self) -> str:
        extra = [] if self.out_index == ("int32",) else [f"out_index={self.out_index!r}"]
        return f"signature({', '.join([*map(repr, self.args), *extra])})"

    def accepts(self, args: tuple) -> bool:
        return len(args) == len(self.args) and all(s.accepts(a) for s, a in zip(self.args, args))


def array(format: str, dtype, *, index: str | None = "int32", ndim: int | None = None,
          shape: tuple | None = None) -> ArraySpec:
    """An array argument (``format`` csr, csc, coo or dense; ``ndim`` defaults to 2 for
    sparse formats, 1 for dense; ``index`` is ignored for dense)."""
    if ndim is None:
        ndim = len(shape) if shape is not None else (1 if format == "dense" else 2)
    return ArraySpec(format, dtype, None if format == "dense" else index, ndim,
                     None if shape is None else tuple(shape))


def csr(dtype, *, index: str = "int32", shape: tuple | None = None) -> ArraySpec:
    return array("csr", dtype, index=index, shape=shape)


def csc(dtype, *, index: str = "int32", shape: tuple | None = None) -> ArraySpec:
    return array("csc", dtype, index=index, shape=shape)


def coo(dtype, *, index: str = "int32", ndim: int = 2, shape: tuple | None = None) -> ArraySpec:
    return array("coo", dtype, index=index, ndim=ndim, shape=shape)


def dense(dtype, *, ndim: int = 1, shape: tuple | None = None) -> ArraySpec:
    return array("dense", dtype, ndim=ndim, shape=shape)


def size(name: str | None = None) -> SizeSpec:
    return SizeSpec(name)


def signature(*args, out_index: tuple[str, ...] | str = ("int32",)) -> Signature:
    return Signature(tuple(args), (out_index,) if isinstance(out_index, str) else
                     tuple(out_index))


def export(*signatures: Signature):
    """Decorator: build ``fn`` (an ``sf.jit`` function, or a plain one, jitted with default
    options) for ``signatures``; returns an :class:`AotFunction`."""
    for s in signatures:
        if not isinstance(s, Signature):
            raise IllFormedProgram(f"aot.export takes aot.signature(...) objects, found {s!r}")
    if not signatures:
        raise IllFormedProgram("aot.export needs at least one aot.signature(...)")

    def wrap(fn) -> AotFunction:
        return AotFunction(fn if isinstance(fn, JitFunction) else jit(fn), signatures)
    return wrap


# --- the exported function ----------------------------------------------------------------------

class AotFunction:
    """An exported ``sf.jit`` function. Unbound: the JIT function. Bound to a built extension
    (:func:`bind`): the same call, with kernels from the extension only."""

    def __init__(self, jit_function: JitFunction, signatures: tuple[Signature, ...]):
        self.jit = jit_function
        self.signatures = tuple(signatures)
        fn = jit_function.fn
        self.__name__ = getattr(fn, "__name__", "kernel")
        self.__qualname__ = getattr(fn, "__qualname__", self.__name__)
        self.__module__ = getattr(fn, "__module__", None)
        self.__doc__ = getattr(fn, "__doc__", None)
        self.extension: str | None = None

    def __repr__(self) -> str:
        where = f"bound to {self.extension}" if self.extension else "not bound"
        return f"<sparsefold.aot function {self.__module__}.{self.__qualname__} ({where})>"

    def built(self) -> str:
        """The declared signatures, one per line."""
        return "\n".join(f"  {self.__name__}{_call_text(s)}" for s in self.signatures)

    def __call__(self, *args):
        if self.extension is None:
            return self.jit(*args)
        if not any(s.accepts(args) for s in self.signatures):
            raise NotPrebuilt(f"{self.__module__}.{self.__qualname__} was not built for "
                              f"{self.__name__}({', '.join(_arg_text(a) for a in args)}); "
                              f"built signatures:\n{self.built()}")
        with build.prebuilt_only(f"{self.__module__}.{self.__qualname__} (prebuilt in "
                                 f"{self.extension})"):
            return self.jit(*args)


def _call_text(s: Signature) -> str:
    return "(" + ", ".join(map(repr, s.args)) + ")" + (
        f" out_index={s.out_index}" if s.out_index != ("int32",) else "")


def _kind(value: Any) -> tuple:
    """(format, dtype, ndim, index dtype name or None) of an argument, as the JIT sees it."""
    if isinstance(value, (bool, int, float, complex, np.generic)):
        return ("scalar", type(value).__name__, 0, None)
    try:
        info = describe(value)
    except Exception:  # noqa: BLE001 - not an array: no signature accepts it
        return ("unknown", type(value).__name__, 0, None)
    index = None
    if is_scipy_sparse(value) and value.format == info.format:
        arr = value.indices if info.format in ("csr", "csc") else value.coords[0] \
            if value.ndim else None
        index = None if arr is None else np.dtype(arr.dtype).name
    elif is_pydata_sparse(value):
        arr = getattr(value, "indices", None) if info.format != "coo" else value.coords
        index = None if arr is None else np.dtype(arr.dtype).name
    if index is not None and index not in INDEX_WIDTHS:
        index = "int64"  # the runtime reads other integer index arrays as int64
    return (info.format, info.dtype, len(info.shape), index)


def _arg_text(value: Any) -> str:
    fmt, dtype, ndim, index = _kind(value)
    if fmt in ("scalar", "unknown"):
        return f"{dtype} {value!r}" if fmt == "scalar" else dtype
    return f"{fmt} {np.dtype(dtype).name}" + (f" ({index} indices)" if index else "") + \
        f" {ndim}-d"


# --- tracing a declared signature ---------------------------------------------------------------

def trace_generic(fn: AotFunction, sig: Signature):
    """(program, out format, preconditions, size-parameter names) of ``fn`` on ``sig``:
    every undeclared size its own symbol ``d<arg>_<axis>``, size arguments symbols."""
    lazies, params, infos = [], [], []
    for p, a in enumerate(sig.args):
        if isinstance(a, SizeSpec):
            name = a.name or f"size{p}"
            if name in params:
                raise IllFormedProgram(f"aot: two size arguments named {name!r}")
            params.append(name)
            lazies.append(sz.Sym(name))
            continue
        shape = tuple(sz.Sym(n) if isinstance(n, str) else n for n in a.shape) \
            if a.shape is not None else tuple(sz.Sym(f"d{p}_{d}") for d in range(a.ndim))
        node = Input(f"a{p}", shape, a.dtype, a.format)
        infos.append(a)  # _default_out reads .format: the first sparse argument's
        lazies.append(LazyArray(node))
    with sz.assuming() as assumed:
        result = fn.jit.fn(*lazies)
    # the one check of what a trace returned (sf.jit's, sf.show's, Dask's); a shipped
    # kernel takes its arguments only, so index-array constants are refused here
    program, constants = traced_program(result)
    if constants:
        raise IllFormedProgram(f"{fn.__qualname__}: an ahead-of-time kernel takes its "
                               f"arguments only; pass the index arrays its keys use as "
                               f"arguments")
    out = fn.jit.out or _default_out(infos, program, tuple(assumed))
    return program, out, tuple(assumed), tuple(params)


def exported(module) -> dict[str, AotFunction]:
    """The module's exported functions by attribute name, in definition order."""
    return {name: v for name, v in vars(module).items() if isinstance(v, AotFunction)}


def runtime():
    """The shared kernel runtime (``sparsefold.compiler.runtime``), imported: the kernels of
    an extension call it, so a generated dispatch module calls this before importing its
    extensions (an editable install whose runtime sources changed gets a fresh build)."""
    return build.ensure_runtime()


def bind(extensions, spec) -> dict[str, AotFunction]:
    """Use the built ``extensions`` (a module or a list, as generated) for the functions
    ``spec`` (a spec module) exports; returns them by name. Called by the generated
    dispatch module at import."""
    from sparsefold import aot_registry
    modules = extensions if isinstance(extensions, (list, tuple)) else [extensions]
    declared: dict[str, list[str]] = {}
    for ext in modules:
        build.register_prebuilt(getattr(ext, VARIANTS_NAME))
        for name, sigs in json.loads(getattr(ext, MANIFEST_NAME))["functions"].items():
            declared.setdefault(name, sigs)
    functions = exported(spec)
    names = ", ".join(m.__name__ for m in modules)
    for name, fn in functions.items():
        if name not in declared:
            continue  # not in this build: stays a plain JIT function
        built = set(declared[name])
        for sig in fn.signatures:
            if repr(sig) not in built:
                continue  # declared after the extension was generated: not bound
            program, out, requires, params = trace_generic(fn, sig)
            aot_registry.register(program, out, requires, params,
                                  f"{fn.__module__}.{fn.__qualname__}{_call_text(sig)}")
        fn.signatures = tuple(s for s in fn.signatures if repr(s) in built)
        fn.extension = names
    return {name: fn for name, fn in functions.items() if fn.extension}


def generate(spec_path, out_dir, *, parts: int = 1):
    """Write the kernels, dispatch module and setuptools glue for ``spec_path`` into
    ``out_dir`` (see ``sparsefold/aot_generate.py``); returns the written paths."""
    from sparsefold import aot_generate
    return aot_generate.generate(spec_path, out_dir, parts=parts)

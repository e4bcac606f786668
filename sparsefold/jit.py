"""``sf.jit``, ``LazyArray.compute`` and ``sf.show``: programs compiled to fused kernels.

Tracing: the function is called once per *argument signature* (each argument's format,
dtype, ndim, and which sizes are 0 or 1) on symbolic inputs ``a0, a1, ...`` whose sizes are
symbols ``n<arg>_<axis>`` — so one kernel serves every size. Sizes 0 and 1 stay concrete
because they change meaning (broadcasting, empty reductions). If the function cannot be
traced symbolically (it branches on a size, or a reshape needs concrete sizes), it is traced
with the call's concrete shapes instead and the kernel is specialized to them.

Results come back as the inputs' library: scipy arrays (pydata arrays when any input was
pydata), NumPy for dense results.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from sparsefold.lazy import LazyArray
from sparsefold.spec import sizes as sz
from sparsefold.spec.compute import Input
from sparsefold.spec.errors import IllFormedProgram, InvalidData
from sparsefold.spec.printer import topological
from sparsefold.storage.describe import describe
from sparsefold.storage.results import result_library

__all__ = ["jit", "JitFunction", "compute", "show", "compile_program"]

_KERNELS: dict[tuple, Any] = {}
_KERNELS_LOCK = threading.Lock()


def compile_program(program, out: str, requires: tuple = ()):
    """The kernel for ``program`` with output format ``out`` (cached by structure);
    ``requires``: size equalities the trace assumed, checked before the kernel runs."""
    from sparsefold.compiler import Kernel
    from sparsefold.verify.entries import check_entry
    from sparsefold.verify.rules import instance_proved
    key = (program, out, tuple(requires))
    with _KERNELS_LOCK:
        k = _KERNELS.get(key)
        if k is None:  # optimized with the rule instances verify has proved; operator
            # entries proved (user entries on first use) or trusted with run-time checks
            k = _KERNELS[key] = Kernel(program, out, proved=instance_proved,
                                       requires=tuple(requires), operators=check_entry)
        return k


def _default_out(infos, program=None, assumed: tuple = ()) -> str:
    """The result format when the caller names none: dense when the result is dense-valued
    (as scipy's is: ``A @ x``, a reduction, ``A + 1``), else the first sparse argument's
    format."""
    from sparsefold.compiler import dense_valued
    if program is not None and dense_valued(program, assumed):
        return "dense"
    for info in infos:
        if info is not None and info.format != "dense":
            return info.format
    return "dense"


class JitFunction:
    """A traced, compiled function. Call it like the original."""

    def __init__(self, fn: Callable, out: str | None = None):
        self.fn = fn
        self.out = out
        self._programs: dict[tuple, tuple] = {}
        self._recent: dict[tuple, tuple] = {}
        self._assumed: dict = {}   # program -> size equalities its trace assumed
        self._lock = threading.Lock()

    def _trace(self, args, infos, mode: str):
        """Trace on symbolic sizes (``mode`` "plain": equal sizes share a symbol;
        "products": a size equal to the product of two others is that product) or on the
        call's concrete sizes ("concrete")."""
        lazies = []
        concrete = mode == "concrete"
        classes = _size_classes(infos, products=mode == "products")
        for p, (a, info) in enumerate(zip(args, infos)):
            if info is None:
                lazies.append(a)
                continue
            shape = tuple(n if (concrete or n in (0, 1)) else _size_expr(classes[n])
                          for n in info.shape)
            lazies.append(LazyArray(Input(f"a{p}", shape, info.dtype, info.format)))
        if concrete:
            result, assumed = self.fn(*lazies), []
        else:  # sizes that must agree but differ symbolically become preconditions
            with sz.assuming() as assumed:
                result = self.fn(*lazies)
        if not isinstance(result, LazyArray):
            raise IllFormedProgram(f"a jit function must return a sparsefold array, found "
                                   f"{type(result).__name__}")
        if result.bindings:
            raise IllFormedProgram("a jit function must compute from its arguments only; it "
                                   "captured arrays wrapped with sf.asarray")
        if assumed and not _hold(assumed, result.node, args):
            raise IllFormedProgram("the traced program's size assumptions fail here")
        return result.node, tuple(assumed)

    def program_for(self, *args):
        """(program, input names, output format) for these arguments (traced if new)."""
        infos = [None if _is_scalar(a) else describe(a) for a in args]
        plain, prods = _size_classes(infos), _size_classes(infos, products=True)
        sig = tuple(("scalar", type(a).__name__, a) if info is None else
                    (info.format, info.dtype.str, len(info.shape),
                     tuple(n if n in (0, 1) else (plain[n], prods[n]) for n in info.shape))
                    for a, info in zip(args, infos))
        with self._lock:
            hit = self._programs.get(sig)
        shapes = tuple(i.shape for i in infos if i)
        if hit is not None and hit[3] and not _hold(hit[3], hit[0], args):
            hit = None  # this call breaks an assumption: the concrete trace says how
        if hit is None or (hit[1] and hit[2] != shapes):
            program = None
            for mode in ("plain", "products"):
                try:
                    (program, assumed), concrete = self._trace(args, infos, mode), False
                    break
                except (IllFormedProgram, TypeError, ValueError):
                    continue
            if program is None:
                (program, assumed), concrete = self._trace(args, infos, "concrete"), True
            hit = (program, concrete, shapes, assumed)
            with self._lock:
                if assumed:
                    self._assumed[program] = assumed
                if not concrete:
                    self._programs[sig] = hit
        out = self.out or _default_out(infos, hit[0], hit[3])
        return hit[0], out

    def __call__(self, *args):
        # fast path: the same kinds of arguments as a previous call (sizes may differ only
        # where the traced program is symbolic; the key carries the equality pattern)
        quick = tuple((type(a), getattr(a, "format", None), getattr(a, "dtype", None),
                       getattr(a, "shape", a)) for a in args)
        hit = self._recent.get(quick)
        if hit is None:
            program, out = self.program_for(*args)
            hit = (compile_program(program, out, self._assumed.get(program, ())),
                   result_library(args))
            if len(self._recent) < 64:
                self._recent[quick] = hit
        kernel, library = hit
        values = {f"a{p}": a for p, a in enumerate(args) if not _is_scalar(a)}
        return kernel(values, library)


def _hold(assumed, program, args) -> bool:
    """Every assumed size equality holds for these arguments' shapes."""
    env: dict[str, int] = {}
    for node in topological(program):
        if isinstance(node, Input) and node.name.startswith("a"):
            arg = args[int(node.name[1:])]
            for declared, n in zip(node.shape, np.shape(arg)):
                if isinstance(declared, sz.Sym):
                    env[declared.name] = int(n)
    try:
        return all(bool(sz.evaluate(e, env)) for e in assumed)
    except IllFormedProgram:
        return False


def _size_classes(infos, *, products: bool = False) -> dict[int, object]:
    """Sizes (other than 0 and 1) numbered by first appearance: equal sizes share a symbol,
    so ``concat([a, b], axis=1)`` of two 50-row arrays traces with one row symbol. With
    ``products``, a size that is the product of two others is traced as that product
    (``flatten(A) * b`` with ``b`` of length ``N*C``); tracing tries that only when the plain
    classes fail. The pattern is part of the signature, so the kernel is never used where it
    differs."""
    seen = [n for info in infos if info is not None for n in info.shape if n not in (0, 1)]
    order = list(dict.fromkeys(seen))                      # distinct, by first appearance
    base: list[int] = []
    factored: dict[int, tuple[int, int]] = {}
    for n in sorted(order):  # ascending, so factors are decided before their products
        pair = next(((a, b) for a in base for b in base if a <= b and a * b == n), None) \
            if products else None
        if pair is None:
            base.append(n)
        else:
            factored[n] = pair
    number = {n: k for k, n in enumerate(x for x in order if x not in factored)}
    classes: dict[int, object] = dict(number)
    for n, (a, b) in factored.items():
        classes[n] = tuple(sorted((number[a], number[b])))
    return classes


def _size_expr(cls) -> sz.Expr:
    if isinstance(cls, tuple):
        return sz.mul(sz.Sym(f"n{cls[0]}"), sz.Sym(f"n{cls[1]}"))
    return sz.Sym(f"n{cls}")


def _is_scalar(a) -> bool:
    return isinstance(a, (bool, int, float, complex, np.generic))


def jit(fn: Callable | None = None, *, out: str | None = None):
    """Compile ``fn`` (a function of arrays returning a sparsefold array) into fused kernels,
    one per argument signature, built on first call. ``out``: "csr", "csc", "coo", "dcsr" or
    "dense"; default: dense when the result is dense-valued (``A @ x``, a reduction, ``A +
    1``, as scipy returns them), else the first sparse argument's format, else dense."""
    if fn is None:
        return lambda f: JitFunction(f, out)
    return JitFunction(fn, out)


def _canonical(x: LazyArray):
    """The program (its inputs keep the names ``sf.asarray`` gave them) and the array bound
    to each input, in first-use order."""
    inputs = [n for n in topological(x.node) if isinstance(n, Input)]
    values = []
    for n in inputs:
        if n.name not in x.bindings:
            raise InvalidData(f"input {n.name!r} has no data; bind it with sf.asarray")
        values.append(x.bindings[n.name])
    return x.node, {n.name: v for n, v in zip(inputs, values)}


def compute(x: LazyArray, out: str | None = None):
    """Run a lazy array's program as one compiled kernel."""
    program, values = _canonical(x)
    infos = [describe(v) for v in values.values()]
    kernel = compile_program(program, out or _default_out(infos, program))
    return kernel(values, result_library(list(values.values())))


def show(fn, *example_args, out: str | None = None) -> str:
    """The generated Cython for ``fn`` on arguments like ``example_args`` (printed and
    returned; index widths as for these arguments; every stage of a staged program, in the
    order they run). ``fn`` may also be a LazyArray."""
    if isinstance(fn, LazyArray):
        program, values = _canonical(fn)
        out = out or _default_out([describe(v) for v in values.values()], program)
    else:
        jf = fn if isinstance(fn, JitFunction) else JitFunction(fn, out)
        program, out = jf.program_for(*example_args)
        values = {f"a{p}": a for p, a in enumerate(example_args) if not _is_scalar(a)}
    text = compile_program(program, out).source_for(values)
    print(text)
    return text

"""``sf.jit``, ``LazyArray.compute`` and ``sf.show``: programs compiled to fused kernels.

Tracing: the function is called once per *argument signature* (each argument's format,
dtype, ndim, and which sizes are 0 or 1) on symbolic inputs ``a0, a1, ...`` whose sizes are
symbols ``n<arg>_<axis>`` — so one kernel serves every size. Sizes 0 and 1 stay concrete
because they change meaning (broadcasting, empty reductions). If the function cannot be
traced symbolically (it branches on a size, or a reshape needs concrete sizes), it is traced
with the call's concrete shapes instead and the kernel is specialized to them.

Results come back as the inputs' library: scipy arrays (pydata arrays when any input was
pydata), NumPy for dense results.

Tiered execution (``sparsefold.tiering``): a call whose kernel is not built yet answers on
the fallback evaluator while the kernel builds in the background, unless the function was
made with ``wait=True`` or ``$SPARSEFOLD_TIERED`` is ``0``.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np
import scipy.sparse as sp

from sparsefold import tiering
from sparsefold.lazy import LazyArray, canonical
from sparsefold.spec import sizes as sz
from sparsefold.spec.compute import Input, Reduce
from sparsefold.spec.errors import IllFormedProgram, InvalidData
from sparsefold.spec.fills import filled, has_fill, implicit_value, prepare
from sparsefold.spec.ir import Node
from sparsefold.spec.printer import topological
from sparsefold.spec.programs import substitute_program
from sparsefold.storage.binding import bind_sizes
from sparsefold.storage.describe import describe
from sparsefold.storage.fills import fill_of, readable, split_fill, with_fill
from sparsefold.storage.results import result_library

# scipy's sparse classes whose ``data`` and ``_shape`` attributes are the sources of their
# ``dtype`` and ``shape`` properties (the call key reads them directly)
_SCIPY = frozenset(getattr(sp, f"{kind}_{cls}") for kind in ("csr", "csc", "coo", "bsr", "dia")
                   for cls in ("array", "matrix"))

__all__ = ["jit", "JitFunction", "compute", "show", "compile_program", "runnable_kernel",
           "KernelSource", "Traced", "traced_program"]

_KERNELS: dict[tuple, Any] = {}
_KERNELS_LOCK = threading.Lock()


def compile_program(program, out: str, requires: tuple = (), certify: bool = False):
    """The kernel for ``program`` with output format ``out`` (cached by structure);
    ``requires``: size equalities the trace assumed, checked before the kernel runs;
    ``certify``: the kernel's certificate is proved first (``verify.prove_kernel``) and its
    digest printed in the kernel's header."""
    from sparsefold.compiler import Kernel
    from sparsefold.verify.entries import check_entry
    from sparsefold.verify.rules import instance_proved
    key = (program, out, tuple(requires), certify)
    with _KERNELS_LOCK:
        k = _KERNELS.get(key)
        if k is None and certify:
            from sparsefold.verify.kernels import certify_program
            k = _KERNELS[key] = certify_program(program, out, tuple(requires))[0]
        elif k is None:  # optimized with the rule instances verify has proved; operator
            # entries proved (user entries on first use) or trusted with run-time checks
            k = _KERNELS[key] = Kernel(program, out, proved=instance_proved,
                                       requires=tuple(requires), operators=check_entry)
        return k


_RUNNABLE: dict[tuple, Any] = {}


def runnable_kernel(program, out: str, requires: tuple = (), certify: bool = False):
    """What a call of ``program`` runs: a prebuilt generic kernel that *is* this program
    (``sparsefold.aot_registry``; ahead-of-time kernels, docs/aot.md), else
    :func:`compile_program`'s. ``show`` prints the latter: the JIT's own kernel. A
    certified kernel is always the JIT's (a prebuilt one carries no certificate)."""
    if certify:
        return compile_program(program, out, requires, certify=True)
    key = (program, out, tuple(requires))
    k = _RUNNABLE.get(key)
    if k is None:
        from sparsefold.aot_registry import find
        k = find(program, out, tuple(requires)) or compile_program(program, out, requires)
        with _KERNELS_LOCK:
            k = _RUNNABLE.setdefault(key, k)
        tiering.register(k, program, out, tuple(requires))
    return k


def _default_out(infos, program=None, assumed: tuple = ()) -> str:
    """The result format when the caller names none: dense when the result is dense-valued
    (as scipy's is: ``A @ x``, a reduction, ``A + 1``), else the first sparse argument's
    format."""
    if program is not None and has_fill(program):
        if any(isinstance(n, Reduce) for n in topological(program)):
            return "dense"  # reductions of filled arrays: NumPy results, as for fill 0
        if implicit_value(program) is not None:
            # pydata's rule: an elementwise or shape result of filled arrays is a sparse
            # array with the fill f(fill_a, fill_b), even where every coordinate is computed
            return next((i.format for i in infos if i is not None and i.format != "dense"),
                        "dense")
    if program is not None and _dense_valued(program, tuple(assumed)):
        return "dense"
    for info in infos:
        if info is not None and info.format != "dense":
            return info.format
    return "dense"


_DENSE_VALUED: dict[tuple, bool] = {}


def _dense_valued(program, assumed: tuple) -> bool:
    """``compiler.dense_valued``, remembered per program: planning it again on every
    ``.compute()`` cost more than running a small kernel."""
    key = (program, assumed)
    hit = _DENSE_VALUED.get(key)
    if hit is None:
        from sparsefold.compiler import dense_valued
        hit = _DENSE_VALUED[key] = bool(dense_valued(program, assumed))
    return hit


class JitFunction:
    """A traced, compiled function. Call it like the original."""

    def __init__(self, fn: Callable, out: str | None = None, certify: bool = False,
                 threads: int | None = None, wait: bool | None = None,
                 allow_dense_work: bool = False):
        self.fn = fn
        self.out = out
        self.certify = certify
        self.allow_dense_work = bool(allow_dense_work)
        # True: every call waits for its compiled kernel; False: tiered; None: as
        # $SPARSEFOLD_TIERED says (tiered unless 0). A certified kernel is always waited for.
        if wait is not None and not isinstance(wait, bool):
            raise IllFormedProgram(f"wait must be True, False or None, found {wait!r}")
        self.wait_for_kernels = True if certify else wait
        # the threads its kernels' parallel loops use (None: $SPARSEFOLD_NUM_THREADS, else
        # the CPU count); small calls run on one (compiler/run/threads.py)
        if threads is not None:
            from sparsefold.compiler.run.threads import check_threads
            threads = check_threads(threads)
        self.threads = threads
        self._programs: dict[tuple, tuple] = {}
        self._recent: dict[tuple, tuple] = {}
        # the kernel whose fast entry the last call ran on all of its arguments, as they were,
        # and how many there were
        self._fast_last: tuple = (None, -1)
        self._assumed: dict = {}   # program -> size equalities its trace assumed
        self._constants: dict = {}  # program -> its index-array constants (traced_program)
        self._runnable_keys: set = set()  # the kernels its calls ran (for wait)
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
            node = Input(f"a{p}", shape, info.dtype, info.format)
            if info.fill is not None:  # where(present, stored, fill): spec/fills.py
                node = filled(node, Input(f"mask{p}", shape, np.dtype(bool), info.format),
                              info.fill)
            lazies.append(LazyArray(node))
        if concrete:
            result, assumed = self.fn(*lazies), []
        else:  # sizes that must agree but differ symbolically become preconditions
            with sz.assuming() as assumed:
                result = self.fn(*lazies)
        program, constants = traced_program(result)
        from sparsefold.staging import is_staged
        if is_staged(program):
            raise IllFormedProgram(
                "sort, argsort, searchsorted and cumulative sums/products are not fused into "
                "a kernel (where each element goes depends on the values); call them "
                "outside sf.jit: LazyArray.compute() runs such programs in stages")
        if assumed and not _hold(assumed, program, args):
            raise IllFormedProgram("the traced program's size assumptions fail here")
        if constants:
            with self._lock:
                self._constants[program] = constants
        return program, tuple(assumed)

    def program_for(self, *args):
        """(program, input names, output format) for these arguments (traced if new)."""
        infos = [None if _is_scalar(a) else _describe_argument(p, a) for p, a in enumerate(args)]
        plain, prods = _size_classes(infos), _size_classes(infos, products=True)
        sig = tuple(("scalar", type(a).__name__, a) if info is None else
                    (info.format, info.dtype.str, len(info.shape), repr(info.fill),
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

    def trace(self, *args) -> Traced:
        """What a call on these arguments runs: the traced program (traced if new), its
        output format, the size preconditions the trace assumed, its index-array
        constants. ``sf.show``, certificates, AOT and ``sparsefold.dask`` read this one
        trace, so each compiles exactly the kernel a call runs."""
        program, out = self.program_for(*args)
        return Traced(program, out, self._assumed.get(program, ()),
                      self._constants.get(program, {}))

    def kernel_for(self, *args):
        """The JIT's ``compiler.Kernel`` for these arguments (planned, built on first
        call); a prebuilt kernel a call may run instead computes the same."""
        t = self.trace(*args)
        return compile_program(t.program, t.out, t.requires, self.certify)

    def __call__(self, *args):
        # fastest path: the kernel module entry the last call ran, tried on the arguments as
        # they are. It returns None unless it computes what the checked path of its kernel
        # would, for these arguments: their exact classes, dtypes, index widths, ranks and
        # the size relations and preconditions the kernel's trace holds (fastcall.py); and a
        # trace of these arguments gives a program equal to that kernel's on such arguments
        # (symbolic sizes stand for any sizes meeting those relations; a concrete trace's
        # sizes are constants the entry checks), so the result is the one the call would
        # otherwise compute
        last, arity = self._fast_last
        tried = None
        if last is not None and len(args) == arity and last._fast_ok:
            tried = last.entry.fast
            if tried is not None:
                result = tried(*args) if self.threads is None else \
                    tried(*args, threads=self.threads)
                if result is not None:
                    return result
        # fast path: the same kinds of arguments as a previous call (sizes may differ only
        # where the traced program is symbolic; the key carries the equality pattern)
        # (a scipy class implies its format; pydata's also needs its compressed axes and
        # its fill, as repr: a nan fill equals itself)
        # (NumPy and scipy arguments read their attributes directly: scipy's dtype and
        # shape are Python properties, a third of a small call's overhead)
        quick = tuple([(np.ndarray, a.dtype, a.shape, None) if type(a) is np.ndarray else
                       (type(a), a.data.dtype, a._shape, None) if type(a) in _SCIPY else
                       (type(a), getattr(a, "dtype", None), getattr(a, "shape", a),
                        (repr(a.fill_value), getattr(a, "compressed_axes", None))
                        if type(a).__module__.startswith("sparse.") else None)
                       for a in args])
        try:
            hit = self._recent.get(quick)
        except TypeError:  # an unhashable argument (a list): program_for says what is wrong
            hit = None
        if hit is None:
            if any(type(a).__module__.startswith("dask.") for a in args):
                from sparsefold.dask import call  # a lazy dask.array: sparsefold.dask
                return call(self, *args)
            program, out, requires, constants = self.trace(*args)
            kernel = runnable_kernel(program, out, requires, self.certify)
            with self._lock:
                self._runnable_keys.add((program, out, tuple(requires)))
            hit = _Recent(kernel, result_library(args),
                          *(_fast_positions(kernel, args) if not constants else (None, None)),
                          program if has_fill(program) else None, constants)
            if len(self._recent) < 64:
                self._recent[quick] = hit
        kernel, library, positions, compiled, filled_program, constants = hit
        if positions is not None and compiled._fast_ok and filled_program is None:
            # the kernel module's own entry (compiler/lower/fastcall.py) on the arguments as they
            # are (it sets the thread count as the checked path does); None: it leaves the
            # call to the checked path below
            fast = compiled.entry.fast
            if fast is not None and fast is not tried:
                taken = args if positions is True else [args[p] for p in positions]
                result = fast(*taken) if self.threads is None else \
                    fast(*taken, threads=self.threads)
                if result is not None:
                    if positions is True:  # the next call tries this entry first
                        self._fast_last = (compiled, len(args))  # one store: atomic
                    return result
        values = {f"a{p}": a for p, a in enumerate(args) if not _is_scalar(a)}
        if filled_program is not None:
            values = _split_values(values, "mask")
        if constants:
            values.update(constants)
        run = tiering.call if tiering.enabled(self.wait_for_kernels) else _untiered
        with contextlib.ExitStack() as scope:
            if self.threads is not None:
                from sparsefold.compiler.run.threads import using
                scope.enter_context(using(self.threads))
            if self.allow_dense_work:  # (a dense-work plan has no fast entry: always here)
                from sparsefold.compiler.plan.cost import allowing
                scope.enter_context(allowing())
            result = run(kernel, values, library)
        if filled_program is None:
            return result
        return _with_result_fill(filled_program, values, result)

    def fallback(self, *args):
        """The answer of the fallback evaluator alone for these arguments: what a tiered
        call returns while its kernel builds (docs/tiering.md), for differential tests of
        the first answer. Raises ``sparsefold.compiler.fallback.Declined`` where the
        fallback declines (a call would wait for the kernel) and ``Unsupported`` where it
        does not cover the program; never builds a kernel."""
        program, out, requires, constants = self.trace(*args)
        kernel = runnable_kernel(program, out, requires, self.certify)
        values = {f"a{p}": a for p, a in enumerate(args) if not _is_scalar(a)}
        filled = has_fill(program)
        if filled:
            values = _split_values(values, "mask")
        if constants:
            values.update(constants)
        result = tiering.fallback_only(kernel, values, result_library(args))
        return _with_result_fill(program, values, result) if filled else result

    def wait(self, timeout: float | None = None) -> bool:
        """Wait for the kernels this function's calls are building in the background
        (tiered calls); True when none is left within ``timeout`` seconds. Raises the
        error of a build that failed (``InternalError``)."""
        with self._lock:
            kernels = [hit.kernel for hit in self._recent.values()]
            kernels += [_RUNNABLE[key] for key in self._runnable_keys if key in _RUNNABLE]
        return tiering.wait(kernels, timeout)


def _untiered(kernel, values: dict, library: str):
    return kernel(values, library)


def traced_program(result) -> tuple[Node, dict[str, np.ndarray]]:
    """The program a trace returned (``result``: what the function gave on symbolic
    inputs), ready to compile, and its constants: the concrete index arrays its keys hold
    (``x[[0, 2]]``, a mask, ``compress``'s condition; ``index_keys.is_key_array``), renamed
    ``k0, k1, ...`` by first use, with their values at trace time. Any other array the
    function captured is an error: it would be read once, and silently stale after. Shared
    by ``sf.jit``, ``sf.show``, AOT and ``sparsefold.dask`` (one trace)."""
    from sparsefold.index_keys import is_key_array
    if not isinstance(result, LazyArray):
        raise IllFormedProgram(f"a jit function must return a sparsefold array, found "
                               f"{type(result).__name__}")
    captured = [a for a in result.bindings.values() if not is_key_array(a)]
    if captured:
        raise IllFormedProgram(_captured_message(captured))
    program = prepare(result.node)
    if not result.bindings:
        return program, {}
    constants, renamed = {}, {}
    for n in topological(program):
        if isinstance(n, Input) and n.name in result.bindings and n.name not in renamed:
            name = f"k{len(constants)}"
            renamed[n.name] = Input(name, n.shape, n.dtype, n.format)
            constants[name] = result.bindings[n.name]
    return substitute_program(program, inputs=renamed), constants


def _split_values(values: dict, mask: str) -> dict:
    """Each filled pydata argument ``a<p>`` as its storage with fill 0 (``a<p>``) and its
    presence mask (``<mask><p>``), the inputs the trace gave it (``storage/fills.py``)."""
    out = {}
    for name, a in values.items():
        if fill_of(a) is None:
            out[name] = readable(a)
        else:
            out[name], out[f"{mask}{name[1:]}"] = split_fill(a)
    return out


def _with_result_fill(program, values: dict, result):
    """A pydata result with the fill the program gives where every sparse input is
    implicit (``spec.fills.implicit_value``; sizes bound by this call)."""
    env = bind_sizes([n for n in topological(program) if isinstance(n, Input)], values)
    return with_fill(result, implicit_value(program, env))


class Traced(NamedTuple):
    """A function traced for one argument signature (``JitFunction.trace``)."""

    program: Node
    out: str
    requires: tuple          # size equalities the trace assumed, checked before any stage
    constants: dict          # index-array constants, by input name (traced_program)


class _Recent(NamedTuple):
    """What a call with the same kinds of arguments as an earlier one reuses."""

    kernel: Any                   # runnable: the checked path
    library: str                  # the result's container family
    positions: Any                # the fast entry's arguments (True: all), None: no entry
    compiled: Any                 # the pipeline.Kernel whose fast entry it is
    filled_program: Any           # the program when a pydata input has a non-zero fill
    constants: dict               # the program's index-array constants (traced_program)


def _fast_positions(kernel, args) -> tuple:
    """(which arguments a compiled kernel's fast entry takes, in its order — True: all of
    them, as they are —, the ``pipeline.Kernel`` whose entry it is); (None, None) when calls
    go through the kernel's ``__call__`` only (a prebuilt kernel with size parameters,
    results for pydata, inputs named otherwise)."""
    from sparsefold.aot_registry import BoundKernel
    from sparsefold.compiler.pipeline import Kernel
    if type(kernel) is BoundKernel and kernel._static == {}:
        kernel = kernel.kernel  # a prebuilt kernel without size parameters: called as is
    if type(kernel) is not Kernel or result_library(args) != "scipy":
        return None, None
    names = {f"a{p}": p for p, a in enumerate(args) if not _is_scalar(a)}
    if any(name not in names for name in kernel._fast_names):
        return None, None
    positions = tuple(names[name] for name in kernel._fast_names)
    return (True if positions == tuple(range(len(args))) else positions), kernel


def _describe_argument(position: int, a) -> Any:
    """``describe(a)``, or :class:`InvalidData` naming the argument (a Python list is the
    usual mistake: NumPy functions accept one, a compiled kernel needs an array)."""
    try:
        return describe(a)
    except InvalidData as exc:
        hint = ("; convert it with np.asarray(...) first"
                if isinstance(a, (list, tuple)) else "")
        raise InvalidData(f"argument {position} of the jit function: {exc}{hint}") from None


def _captured_message(arrays) -> str:
    """Why a traced program may not hold arrays of its own: the kernel is compiled for the
    arguments, and an array from the enclosing scope (or made inside the function) is none."""
    found = []
    for a in arrays:
        try:
            info = describe(a)
            found.append(f"{type(a).__module__.split('.')[0]}.{type(a).__name__} "
                         f"{info.dtype} of shape {tuple(info.shape)}")
        except InvalidData:
            found.append(type(a).__name__)
    return ("a jit function must compute from its arguments only, but it uses "
            f"{'an array' if len(found) == 1 else f'{len(found)} arrays'} that "
            f"{'is' if len(found) == 1 else 'are'} not an argument ({'; '.join(found)}), "
            "captured from the enclosing scope or made inside the function; pass "
            f"{'it' if len(found) == 1 else 'them'} as "
            f"{'an argument' if len(found) == 1 else 'arguments'} instead")


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


def jit(fn: Callable | None = None, *, out: str | None = None, certify: bool = False,
        threads: int | None = None, wait: bool | None = None,
        allow_dense_work: bool = False):
    """Compile ``fn`` (a function of arrays returning a sparsefold array) into fused kernels,
    one per argument signature, built on first call. ``out``: "csr", "csc", "coo", "dcsr" or
    "dense"; default: dense when the result is dense-valued (``A @ x``, a reduction, ``A +
    1``, as scipy returns them), else the first sparse argument's format, else dense.
    ``certify``: each kernel's certificate (``verify.prove_kernel``) is proved when it is
    compiled, and its digest is a line ``# certificate: sha256:...`` of the kernel's
    header (``sf.show`` prints it); without it, kernels are not certified.
    ``threads``: how many threads a kernel's parallel loops may use (default:
    ``$SPARSEFOLD_NUM_THREADS``, else the CPU count; calls below a measured size use one;
    results are identical for every count — docs/threads.md).
    ``wait``: True, every call waits for its compiled kernel (built on the first call of
    each argument signature, as the calls of benchmarks and AOT builds must); False, calls
    are *tiered*: a call whose kernel is not built yet answers at once on the fallback
    evaluator while the kernel builds in the background (``sparsefold.tiering``,
    docs/tiering.md); None (default): tiered unless ``$SPARSEFOLD_TIERED`` is ``0``.
    A certified function always waits.
    ``allow_dense_work``: run a kernel whose plan visits every coordinate of a product of
    extents (rows x columns) although its inputs and output are sparse, at any size; by
    default such a plan is refused above ``compiler.plan.cost.DENSE_WORK_LIMIT`` coordinates
    with :class:`~sparsefold.compiler.plan.cost.DenseWork` (``sf.show`` prints each stage's
    cost bound; ``$SPARSEFOLD_DENSE_WORK``: ``error``, ``allow`` or a limit)."""
    if fn is None:
        return lambda f: JitFunction(f, out, certify, threads, wait, allow_dense_work)
    return JitFunction(fn, out, certify, threads, wait, allow_dense_work)


def _canonical(x: LazyArray):
    """The program with its bound inputs renamed ``a0, a1, ...`` by first use
    (:func:`sparsefold.lazy.canonical`: the kernel cache sees equal programs from fresh
    ``sf.asarray`` wrappers as equal) and the array bound to each input."""
    program, values = canonical(x)
    for n in topological(program):
        if isinstance(n, Input) and n.name not in values:
            raise InvalidData(f"input {n.name!r} has no data; bind it with sf.asarray")
    return program, values


def compute(x: LazyArray, out: str | None = None, wait: bool | None = None, *,
            allow_dense_work: bool = False):
    """Run a lazy array's program as one compiled kernel, tiered as ``sf.jit``'s calls are
    by ``wait`` (a program with ordering nodes — sort, argsort, searchsorted, cumulative
    sums — in stages: ``sparsefold.staging``)."""
    from sparsefold.compiler.plan.cost import allowing
    program, values = _canonical(x)
    from sparsefold.staging import compute_staged, is_staged
    if is_staged(program):
        return compute_staged(program, values, out)
    infos = [describe(v) for v in values.values()]
    kernel = runnable_kernel(program, out or _default_out(infos, program))
    library = result_library(list(values.values()))
    with allowing(allow_dense_work):
        result = tiering.call(kernel, values, library) if tiering.enabled(wait) else \
            kernel(values, library)
    return _with_result_fill(program, values, result) if has_fill(program) else result


class KernelSource(str):
    """The Cython source ``sf.show`` printed, as a ``str`` (search it, save it, ``print`` it
    again) whose ``repr`` is one line: an interactive session echoes the value of an
    expression, and printing the kernel a second time would bury the first."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"<Cython source, {self.count(chr(10)) + 1} lines: printed above>"


def show(fn, *example_args, out: str | None = None) -> KernelSource:
    """Print the generated Cython for ``fn`` on arguments like ``example_args`` and return
    it as a :class:`KernelSource` (a ``str`` with a one-line ``repr``, so a REPL does not
    show it twice). Index widths are as for these arguments; a staged program shows every
    stage, in the order they run. ``fn`` may also be a LazyArray (its inputs are named
    ``a0, a1, ...`` by first use)."""
    if isinstance(fn, LazyArray):
        program, values = _canonical(fn)
        out = out or _default_out([describe(v) for v in values.values()], program)
    else:
        jf = fn if isinstance(fn, JitFunction) else JitFunction(fn, out)
        t = jf.trace(*example_args)
        values = _split_values({f"a{p}": a for p, a in enumerate(example_args)
                                if not _is_scalar(a)}, "mask")
        values.update(t.constants)
        # the kernel the call compiles: the same trace, preconditions and certificate
        text = KernelSource(compile_program(t.program, t.out, t.requires,
                                            jf.certify).source_for(values))
        print(text)
        return text
    text = KernelSource(compile_program(program, out).source_for(values))
    print(text)
    return text

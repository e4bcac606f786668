"""A kernel module's fast entry: the happy path of a call, done in Cython (issue #13: call
overhead).

A call normally goes through Python: bind sizes, read and validate each input's storage
(``storage/levels.py``), size and allocate outputs, build the argument list, run, wrap. For
a kernel variant (fixed index dtypes and output index width), ``fast(*inputs, threads=0)``
does the same in the generated module, for inputs of the exact kinds the variant expects —
scipy CSR/CSC and COO arrays whose cached canonical flag is set, 1-d CSR vectors, C-ordered
or strided NumPy arrays of the expected dtype — sets the calling thread's OpenMP thread
count by ``threads.threads_for``'s rule (``threads=N``: jit's explicit count), and returns
the result. Anything else (another container or dtype, a non-canonical or stale flag, sizes
that need Python integers, a non-finite operand the plan relies on, an allocation past the
memory limit, a result the fast entry does not wrap) makes it return ``None`` *before* any
kernel work, and the caller takes the checked Python path, which computes the same result
or raises the documented error. So the fast entry decides nothing the checked path would
decide differently; it skips Python, not checks: every O(1) check of ``storage.levels`` is
repeated here, and the O(rows) and O(nnz) checks run inside the kernel body, as on the
checked path.

Size arithmetic is done in int64 only when it provably cannot overflow: each expression's
magnitude is bounded as ``2**(a*B + c)`` when every bound size is below ``2**B``
(:func:`_bits`), ``B`` is chosen so every bound stays under ``2**62``, and the fast entry
checks the sizes against ``2**B`` first. Floor division and modulo (strided slices:
``(n0 + 1) // 2``) take Python's meaning through small C helpers, after a check that every
divisor is at least 1 (else ``None``: the checked path raises on a zero divisor).
"""

from __future__ import annotations

import numpy as np

from sparsefold.compiler.cnames import size_var, storage_ctype
from sparsefold.compiler.emit import body_name
from sparsefold.compiler.fastcall_pyx import FAST_HELPERS
from sparsefold.compiler.loops import Function
from sparsefold.compiler.outputs import AppendOut, DenseOut, ScatterOut, start_value
from sparsefold.compiler.parallel import has_parallel
from sparsefold.compiler.plans import CoiterPlan, ContractPlan, DensePlan, StreamPlan
from sparsefold.spec import sizes as sz
from sparsefold.spec.compute import Input
from sparsefold.spec.printer import topological

__all__ = ["fast_entry", "FAST_HELPERS"]

_INT32_MAX = 2**31 - 1

_TYPES = {"int32": "_np.dtype(_np.int32)", "int64": "_np.dtype(_np.int64)"}


def _dtype_const(dt: np.dtype, consts: dict[str, str]) -> str:
    """A module-level name holding ``np.dtype(dt)`` (identity checks need the object)."""
    dt = np.dtype(dt)
    name = f"_SF_DT_{dt.name.upper()}"
    consts[name] = f"_np.dtype(_np.{dt.name})"
    return name


# --- bounding size arithmetic ---------------------------------------------------------------

def _bits(e: sz.Expr) -> tuple[int, int]:
    """(a, c): the expression's value (and every intermediate) is below ``2**(a*B + c)``
    when every size symbol is below ``2**B``."""
    if isinstance(e, sz.Const):
        return 0, max(abs(e.value), 1).bit_length()
    if isinstance(e, sz.Sym):
        return 1, 0
    parts = [_bits(x) for x in e.args]
    if e.op == "mul":
        return parts[0][0] + parts[1][0], parts[0][1] + parts[1][1]
    if e.op in ("add", "sub"):
        return max(p[0] for p in parts), max(p[1] for p in parts) + 1
    return max(p[0] for p in parts), max(p[1] for p in parts) + 1


def _size_bound(exprs) -> int:
    """The largest ``B`` (at most 31) such that every expression stays below ``2**62``."""
    best = 31
    for e in exprs:
        a, c = _bits(e)
        if a:
            best = min(best, (62 - c) // a)
        elif c > 62:
            return 0
    return best


class _Unsupported(Exception):
    pass


# The C reading of sizes with Python's floor division and modulo: the module is compiled with
# ``cdivision`` (C truncates toward zero), and intermediates such as ``e - s`` of a slice with
# a negative step can be negative. The helpers (``fastcall_pyx``) are exact for a divisor >= 1;
# the entry checks every divisor first (:meth:`_Entry.guard_divisions`) and otherwise returns
# None, so the checked path meets a zero or negative divisor and decides.
_C_FLOOR = sz.C | {"floordiv": lambda a, b: f"_sf_floordiv({a}, {b})",
                   "mod": lambda a, b: f"_sf_mod({a}, {b})"}


def _c(e: sz.Expr) -> str:
    """C text of a size expression whose divisors the entry has checked to be >= 1."""
    return sz.read(e, _C_FLOOR, lambda x: sz.to_c(x, size_var))


def _divisors(e: sz.Expr, found: dict[sz.Expr, None]) -> None:
    """The divisors of ``e``'s divisions, each after the divisors inside it."""
    if isinstance(e, sz.Op):
        for a in e.args:
            _divisors(a, found)
        if e.op in ("floordiv", "mod"):
            found.setdefault(e.args[1], None)


def _increasing(crds: list[str], t: str) -> str:
    """C test: entry ``t`` comes strictly after entry ``t - 1`` in row-major order."""
    head, rest = crds[0], crds[1:]
    if not rest:
        return f"{head}[{t} - 1] < {head}[{t}]"
    return (f"{head}[{t} - 1] < {head}[{t}] or ({head}[{t} - 1] == {head}[{t}] and "
            f"({_increasing(rest, t)}))")


# --- the entry ------------------------------------------------------------------------------

def fast_entry(stage, index_dtypes: dict, out_index: str, unit: frozenset,
               functions: list[Function], asm, requires: tuple = ()) -> str:
    """Cython text of ``def fast(...)`` for this variant, or "" when the fast entry does not
    cover it (the call then always takes the checked path)."""
    try:
        return _Entry(stage, index_dtypes, out_index, unit, functions, asm, requires).text()
    except _Unsupported:
        return ""


class _Entry:
    def __init__(self, stage, index_dtypes, out_index, unit, functions, asm, requires):
        self.stage, self.dtypes, self.out_index, self.unit = stage, index_dtypes, out_index, unit
        self.functions, self.asm = functions, asm
        self.requires = tuple(stage.requires) + tuple(requires)
        self.lines: list[str] = []
        self.consts: dict[str, str] = {}
        self.decls: dict[str, str] = {}
        self.bound: set[str] = set()
        self.pointers: dict[tuple, str] = {}    # param source -> C expression
        self.nnz: dict[str, str] = {}           # input name -> its stored-entry count
        self.stored: dict[str, str] = {}        # input name -> its val array's length
        self.elements: dict[str, str] = {}      # dense input name -> its element count
        plan = stage.plan
        if isinstance(plan, DensePlan) or (isinstance(plan, (StreamPlan, CoiterPlan)) and
                                           plan.assembly in ("bucket", "sort")):
            raise _Unsupported
        if isinstance(asm, DenseOut) and (asm.counts or not stage.fmt.is_dense):
            raise _Unsupported  # the max/min zero combine, or a dense result made sparse
        if getattr(stage.reduction, "total", None) is not None:
            raise _Unsupported  # the runtime adds the background's sum after the kernel
        if isinstance(asm, AppendOut) and asm.kinds not in (("full", "pos"),) and not (
                asm.kinds[0] == "pos" and (len(asm.kinds) > 1 or stage.program.ndim == 1) and
                all(k == "one" for k in asm.kinds[1:])):
            raise _Unsupported
        if isinstance(plan, ContractPlan) and not isinstance(asm, DenseOut):
            raise _Unsupported  # the workspace and the symbolic pass stay on Python's path
        if stage.checked:
            raise _Unsupported  # an unproved operator: its sort and collision check
        if isinstance(asm, DenseOut) and asm.monoid is not None and \
                start_value(asm.monoid, asm.dtype) != 0:
            raise _Unsupported  # outputs start at zero here
        if not stage.fmt.is_dense and np.dtype(stage.program.dtype) == np.float16:
            raise _Unsupported  # the checked path refuses it (no float16 in scipy.sparse)
        if stage.fmt.is_dense != isinstance(asm, DenseOut):
            raise _Unsupported

    def line(self, text: str, depth: int = 1) -> None:
        self.lines.append("    " * depth + text)

    def var(self, name: str, ctype: str) -> str:
        self.decls[name] = ctype
        return name

    def fail(self, cond: str) -> None:
        self.line(f"if {cond}:")
        self.line("return None", 2)

    # --- inputs -----------------------------------------------------------------------
    def bind(self, declared, actual: str) -> None:
        if isinstance(declared, sz.Sym):
            name = size_var(declared.name)
            if declared.name in self.bound:
                self.fail(f"{name} != {actual}")
            else:
                self.var(name, "int64_t")
                self.line(f"{name} = {actual}")
                self.bound.add(declared.name)
        elif isinstance(declared, sz.Const):
            self.fail(f"{actual} != {declared.value}")
        else:
            raise _Unsupported

    def sparse_input(self, inp: Input, v: str) -> None:
        kinds, fmt = inp.format.kinds, inp.format
        d = self.dtypes[inp.name]
        n = inp.name
        if kinds == ("full", "pos") and inp.ndim == 2:
            cls = "_SF_CSR" if fmt.mode_order == (0, 1) else "_SF_CSC"
            self.fail(f"type({v}) is not {cls}[0] and type({v}) is not {cls}[1]")
            self.fail(f"getattr({v}, '_has_canonical_format', None) is not True")
            shape = self._shape(v, n, 2)
            outer, inner = fmt.mode_order
            for axis in range(2):
                self.bind(inp.shape[axis], f"{shape}[{axis}]")
            pos, crd, val = (self._array(v, part, d.get(key) or inp.dtype, n, key)
                             for part, key in (("indptr", "pos1"), ("indices", "crd1"),
                                               ("data", "val")))
            rows = f"{shape}[{outer}]"
            cols = f"{shape}[{inner}]"
            nnz = self.var(f"nnz_{n}", "int64_t")
            self.fail(f"len_{pos} != {rows} + 1 or {pos}[0] != 0")
            self.line(f"{nnz} = {pos}[{rows}]")
            self.fail(f"{nnz} < 0 or {nnz} > len_{crd} or {nnz} > len_{val}")
            self.fail(f"{nnz} > 0 and ({rows} == 0 or {cols} == 0)")
            self.nnz[n] = nnz
            self.stored[n] = f"len_{val}"
        elif kinds == ("pos",) and inp.ndim == 1:
            self.fail(f"type({v}) is not _SF_CSR[0]")
            self.fail(f"getattr({v}, '_has_canonical_format', None) is not True")
            shape = self._shape(v, n, 1)
            self.bind(inp.shape[0], f"{shape}[0]")
            pos, crd, val = (self._array(v, part, d.get(key) or inp.dtype, n, key)
                             for part, key in (("indptr", "pos0"), ("indices", "crd0"),
                                               ("data", "val")))
            nnz = self.var(f"nnz_{n}", "int64_t")
            self.fail(f"len_{pos} != 2 or {pos}[0] != 0")
            self.line(f"{nnz} = {pos}[1]")
            self.fail(f"{nnz} < 0 or {nnz} > len_{crd} or {nnz} > len_{val}")
            self.fail(f"{nnz} > 0 and {shape}[0] == 0")
            self.nnz[n] = nnz
            self.stored[n] = f"len_{val}"
        elif kinds and kinds[0] == "pos" and all(k == "one" for k in kinds[1:]):
            self.fail(f"type({v}) is not _SF_COO[0] and type({v}) is not _SF_COO[1]")
            canonical = self.var(f"canonical_{n}", "bint")
            self.line(f"{canonical} = getattr({v}, 'has_canonical_format', None) is True")
            shape = self._shape(v, n, inp.ndim)
            for axis in range(inp.ndim):
                self.bind(inp.shape[axis], f"{shape}[{axis}]")
            coords = self.var(f"coords_{n}", "object")
            self.line(f"{coords} = getattr({v}, 'coords', None)")
            self.fail(f"type({coords}) is not tuple or len({coords}) != {inp.ndim}")
            val = self._array(v, "data", inp.dtype, n, "val")
            nnz = self.var(f"nnz_{n}", "int64_t")
            self.line(f"{nnz} = len_{val}")
            crds = []
            for axis in range(inp.ndim):
                c = self._array(f"{coords}[{axis}]", None, d[f"crd{axis}"], n, f"crd{axis}")
                self.fail(f"len_{c} != {nnz}")
                crds.append(c)
            if crds:  # unflagged: the checked path's scan (canonical_order), else None
                t = self.var("t", "Py_ssize_t")
                unordered = self.var("unordered", "bint")
                self.line(f"{unordered} = False")
                self.line(f"if not {canonical}:")
                self.line("with nogil:", 2)
                self.line(f"for {t} in range(1, {nnz}):", 3)
                self.line(f"if not ({_increasing(crds, t)}):", 4)
                self.line(f"{unordered} = True", 5)
                self.line("break", 5)
                self.fail(unordered)
            if inp.ndim:
                sizes = " or ".join(f"{shape}[{a}] == 0" for a in range(inp.ndim))
                self.fail(f"{nnz} > 0 and ({sizes})")
            pos0 = self.var(f"pos0_{n}", "int64_t[2]")
            self.line(f"{pos0}[0] = 0")
            self.line(f"{pos0}[1] = {nnz}")
            self.pointers[("input", n, "pos0")] = f"&{pos0}[0]"
            self.nnz[n] = nnz
            self.stored[n] = f"len_{val}"
        else:
            raise _Unsupported

    def _shape(self, v: str, n: str, ndim: int) -> str:
        """A C array of a scipy input's ``_shape`` (Python ints of the expected rank), or
        ``return None``."""
        dims = self.var(f"shape_{n}", f"int64_t[{max(ndim, 1)}]")
        self.fail(f"not _sf_shape(getattr({v}, '_shape', None), {ndim}, {dims})")
        return dims

    def _array(self, owner: str, attr, dtype, n: str, key: str) -> str:
        """Pointer and length of an index or value array of an input (exact dtype, 1-d,
        C-contiguous), or ``return None``."""
        ct = storage_ctype(dtype)
        ptr = self.var(f"{key}_{n}", f"{ct}*")
        length = self.var(f"len_{ptr}", "Py_ssize_t")  # the checks name it len_<ptr>
        obj = f"getattr({owner}, {attr!r}, None)" if attr else owner
        dt = _dtype_const(dtype, self.consts)
        self.line(f"{ptr} = <{ct}*>_sf_contiguous({obj}, {dt}, &{length})")
        self.fail(f"{ptr} == NULL")
        self.pointers[("input", n, key)] = ptr
        return ptr

    def dense_input(self, inp: Input, v: str) -> None:
        n = inp.name
        ct = storage_ctype(inp.dtype)
        dt = _dtype_const(inp.dtype, self.consts)
        nd = max(inp.ndim, 1)
        shape = self.var(f"dshape_{n}", f"Py_ssize_t[{nd}]")
        strides = self.var(f"dstrides_{n}", f"Py_ssize_t[{nd}]")
        ptr = self.var(f"dense_{n}", f"{ct}*")
        self.line(f"{ptr} = <{ct}*>_sf_strided({v}, {dt}, {inp.ndim}, {shape}, {strides})")
        self.fail(f"{ptr} == NULL")
        for axis in range(inp.ndim):
            self.bind(inp.shape[axis], f"{shape}[{axis}]")
            self.pointers[("stride", n, axis)] = f"{strides}[{axis}]"
        self.elements[n] = " * ".join(f"<double>{shape}[{a}]" for a in range(inp.ndim)) or "1.0"
        if inp.ndim and n in self.unit:
            self.fail(f"{strides}[{inp.ndim - 1}] != 1")
        elif inp.ndim and n not in self.unit:
            self.fail(f"{strides}[{inp.ndim - 1}] == 1")  # the variant for strided input
        self.pointers[("dense", n)] = ptr

    # --- sizes ------------------------------------------------------------------------
    def check_sizes(self) -> None:
        program = self.stage.program
        extents = [sz.product(x.shape) for x in topological(program) if x.ndim]
        free = [size for p in self.stage.plan.pieces for _, size in p.free]
        exprs = extents + list(self.requires) + free + list(program.shape)
        bound = _size_bound(exprs)
        if bound < 16:
            raise _Unsupported
        for e in exprs:  # a size this stage's inputs do not bind (a precondition of the
            if not sz.free_symbols(e) <= self.bound:  # whole trace): the checked path
                raise _Unsupported
        for s in sorted(self.bound):
            self.fail(f"{size_var(s)} >= {1 << bound}")
        reduced = [node.extent() for node in self.stage._empty_reductions]
        self.guard_divisions(exprs + reduced)
        for r in self.requires:
            self.fail(f"not ({_c(r)})")
        for extent in reduced:  # max/min over nothing: the checked path raises
            self.fail(f"({_c(extent)}) == 0")

    def guard_divisions(self, exprs) -> None:
        """``return None`` unless every divisor in ``exprs`` is >= 1 (the checked path
        raises on 0, and floors with a negative divisor, which the helpers do not do):
        innermost first, so a divisor's own divisions are checked before it is computed."""
        divisors: dict[sz.Expr, None] = {}
        for e in exprs:
            _divisors(e, divisors)
        for d in divisors:
            if not isinstance(d, sz.Const):
                self.fail(f"({_c(d)}) < 1")
            elif d.value < 1:
                raise _Unsupported  # a negative constant step: left to the checked path

    def finite(self) -> None:
        for inp in self.stage.plan.finite:
            t = self.var("t", "Py_ssize_t")
            bad = self.var("nonfinite", "int")
            ptr = self.pointers.get(("dense", inp.name)) or \
                self.pointers.get(("input", inp.name, "val"))
            if ptr is None:
                raise _Unsupported
            if ("dense", inp.name) in self.pointers:
                # a C-ordered operand is checked as one flat run; others: the checked path
                expect = "1"
                for axis in range(inp.ndim - 1, -1, -1):
                    self.fail(f"dstrides_{inp.name}[{axis}] != {expect}")
                    expect = f"{expect} * dshape_{inp.name}[{axis}]"
                count = _c(sz.product(inp.shape)) if inp.ndim else "1"
            else:
                count = self.nnz[inp.name]
            width = np.dtype(inp.dtype).itemsize if np.dtype(inp.dtype).kind == "f" else 0
            if width in (4, 8):  # O(entries) passes run without the GIL, as kernels do
                self.line("with nogil:")
                self.line(f"{bad} = _sf_nonfinite{8 * width}({ptr}, {count})", 2)
            else:
                self.line(f"{bad} = 0")
                self.line("with nogil:")
                self.line(f"for {t} in range({count}):", 2)
                self.line(f"{bad} = {bad} | ({ptr}[{t}] - {ptr}[{t}] != 0)", 3)
            self.fail(bad)

    # --- threads ----------------------------------------------------------------------
    def threads(self) -> None:
        """The calling thread's OpenMP setting, as ``StageKernel.__call__`` makes it for a
        variant with a parallel loop: ``threads.threads_for(work)`` with ``work`` the entries
        the loops walk (each piece's stored values, or a dense operand's elements, times its
        free extents); the ``threads`` argument is jit's ``threads=N`` (0: none)."""
        if not any(has_parallel(fn.body) for fn in self.functions):
            return
        terms = []
        for piece in self.stage.plan.pieces:
            n = self.stored.get(piece.leaf.name) or self.elements.get(piece.leaf.name)
            if n is None:
                raise _Unsupported
            if piece.leaf.name in self.stored:
                n = f"<double>{n}"
            terms.append(" * ".join([n] + [f"<double>({_c(size)})" for _, size in piece.free]))
        count, dynamic = self.var("team", "int"), self.var("dynamic", "int")
        self.line(f"{count} = _sf_thread_count({' + '.join(terms) or '0.0'}, threads, "
                  f"&{dynamic})")
        self.fail(f"{count} < 1")
        self.line(f"sf_set_threads({count}, {dynamic})")

    # --- outputs ----------------------------------------------------------------------
    def outputs(self) -> None:
        """Output arrays sized and checked as ``StageKernel.__call__`` sizes them: the same
        capacity (stored values times free extents), the same output index width (this
        variant's, else ``return None``), the same memory limit; an allocation that fails
        is left to the checked path (which raises ``TooLarge``)."""
        asm, stage = self.asm, self.stage
        shape = [self.var(f"out_d{d}", "int64_t") for d in range(stage.program.ndim)]
        for d, e in enumerate(stage.program.shape):
            self.line(f"{shape[d]} = {_c(e)}")
        dt = _dtype_const(stage.program.dtype, self.consts)
        ct = storage_ctype(stage.program.dtype)
        self.out_shape = shape
        limit = self.var("limit", "int64_t")
        self.line(f"{limit} = _sf_memory_limit()")
        if isinstance(asm, DenseOut):
            count = " * ".join(f"<double>{s}" for s in shape) or "1.0"
            self.fail(f"({count}) * {np.dtype(stage.program.dtype).itemsize} > <double>{limit}")
            stored = shape if asm.order is None else [shape[a] for a in asm.order]
            shape_t = "(" + "".join(f"{s}, " for s in stored) + ")"
            self.objects = {"val": "o_val"}
            self._allocate([f"o_val = _SF_ZEROS({shape_t}, {dt})"])
            self._out_ptr("val", ct)
            return
        cap = self.var("capacity", "int64_t")
        capd = self.var("capacity_bound", "double")
        terms, dterms = [], []
        for piece in stage.plan.pieces:
            n = self.stored.get(piece.leaf.name)
            if n is None:
                raise _Unsupported
            exts = [f"({_c(size)})" for _, size in piece.free]
            terms.append(" * ".join([n] + exts))
            dterms.append(" * ".join([f"<double>{n}"] + [f"<double>{e}" for e in exts]))
        # the bound in floating point first: the exact int64 sum cannot overflow after it
        self.line(f"{capd} = {_capacity(stage.capacity_points, dterms)}")
        self.fail(f"{capd} > {float(1 << 60)}")
        self.line(f"{cap} = {_capacity(stage.capacity_points, terms)}")
        # the output index width the checked path would choose (kernel: ``big``)
        big = " or ".join([f"{cap} > {_INT32_MAX}"] + [f"{s} > {_INT32_MAX}" for s in shape])
        self.fail(f"{big}" if self.out_index == "int32" else f"not ({big})")
        if stage._rows_skipped:
            from sparsefold.compiler.kernel import _EXACT_CAPACITY_ABOVE
            # a row loop that skips rows (a strided slice): above this many entries the
            # checked path counts them first and sizes the outputs exactly (peak memory);
            # the count cannot exceed the bound, so the index width above stands
            count = self.functions[1] if len(self.functions) > 1 else None
            mark = len(self.lines)
            try:
                if count is None or count.name != "count" or len(count.returns) != 1:
                    raise _Unsupported
                self.line(f"if {cap} > {_EXACT_CAPACITY_ABOVE}:")
                self._call(count, "sf_count", 2)
                self.line(f"{cap} = max(0, min({cap}, sf_count[0]))", 2)
            except _Unsupported:  # a count this entry cannot call: the checked path counts
                del self.lines[mark:]
                self.fail(f"{cap} > {_EXACT_CAPACITY_ABOVE}")
        ix = _dtype_const(np.dtype(self.out_index), self.consts)
        ixt = "int32_t" if self.out_index == "int32" else "int64_t"
        isz = 4 if self.out_index == "int32" else 8
        item = np.dtype(stage.program.dtype).itemsize
        rows = shape[stage.fmt.mode_order[0]]
        parts = {"val": (cap, dt, ct, item)}
        if isinstance(asm, ScatterOut):
            parts.update(pos1=(f"{rows} + 1", ix, ixt, isz), crd1=(cap, ix, ixt, isz))
            parts["nxt"] = (rows, _dtype_const(np.dtype(np.int64), self.consts), "int64_t", 8)
            if asm.coo:
                parts["crd0"] = (cap, ix, ixt, isz)
        elif asm.kinds == ("full", "pos"):
            parts.update(pos1=(f"{rows} + 1", ix, ixt, isz), crd1=(cap, ix, ixt, isz))
        else:
            for lv in range(len(asm.kinds)):
                parts[f"crd{lv}"] = (cap, ix, ixt, isz)
        if set(parts) != set(asm.allocation(tuple(range(2, 2 + stage.program.ndim)), 1)):
            raise _Unsupported  # an assembler this entry does not know
        total = " + ".join(f"<double>({n}) * {size}" for n, _, _, size in parts.values())
        self.fail(f"{total} > <double>{limit}")
        self.objects = {part: f"o_{part}" for part in parts}
        self.out_dtypes = {part: (dtc, size) for part, (_, dtc, _, size) in parts.items()}
        self._allocate([f"o_{part} = sf_np_empty({n}, {dtc})"
                        for part, (n, dtc, _, _) in parts.items()])
        for part, (_, _, ctp, _) in parts.items():
            self._out_ptr(part, ctp)

    def _allocate(self, lines: list[str]) -> None:
        self.line("try:")
        for text in lines:
            self.line(text, 2)
        self.line("except MemoryError:")
        self.line("return None", 2)

    def _out_ptr(self, part: str, ct: str) -> None:
        ptr = self.var(f"optr_{part}", f"{ct}*")
        self.line(f"{ptr} = <{ct}*>_sf_out(o_{part})")
        self.fail(f"{ptr} == NULL")
        self.pointers[("out", part)] = ptr

    # --- run and wrap -------------------------------------------------------------------
    def run(self) -> None:
        run = self.functions[0]
        self.nret = len(run.returns)
        self._call(run, "sf_ret", 1)

    def _call(self, fn: Function, ret: str, depth: int) -> None:
        """Call ``fn``'s body without the GIL on this entry's pointers and sizes, results in
        ``ret``; a failed check raises as the module's ``def`` of ``fn`` raises."""
        args = []
        for p in fn.params:
            src = p.source
            if src[0] == "size":
                if src[1] not in self.bound:
                    raise _Unsupported
                args.append(size_var(src[1]))
            elif src in self.pointers:
                args.append(f"<{p.ctype}*>{self.pointers[src]}" if p.kind != "int"
                            else self.pointers[src])
            else:
                raise _Unsupported
        nret = len(fn.returns)
        self.var(ret, f"int64_t[{nret + 4}]")
        self.line(f"{ret}[{nret}] = 0", depth)
        self.line("with nogil:", depth)
        self.line(f"{body_name(fn)}({', '.join(args + [ret])})", depth + 1)
        if fn.checks:
            self.line(f"if {ret}[{nret}]:", depth)
            self.line(f"_sf_fail({ret}[{nret}], {ret}[{nret + 1}], {ret}[{nret + 2}], "
                      f"{ret}[{nret + 3}])", depth + 1)

    def wrap(self) -> None:
        """The result ``StageKernel._finish`` would return (library "scipy"): the dense
        array, or the trimmed arrays in the scipy container ``storage.results`` builds."""
        asm, stage = self.asm, self.stage
        shape_t = "(" + "".join(f"{s}, " for s in self.out_shape) + ")"
        if isinstance(asm, DenseOut):
            if asm.order is None:
                self.line("return o_val")
            else:  # stored with permuted axes (DenseOut.order): the program's axes
                inverse = tuple(int(a) for a in np.argsort(asm.order))
                self.line(f"return o_val.transpose({inverse})")
            return
        self.line("cdef int64_t n = sf_ret[0]")
        trim = [p for p in self.objects if p.startswith("crd") or p == "val"]
        for part in trim:
            dt, item = self.out_dtypes[part]
            self.line(f"o_{part} = _sf_trim(o_{part}, n, {dt}, {item})")
        kind = stage.fmt.name if stage.fmt.name in ("csr", "csc") else "coo"
        if kind in ("csr", "csc") and stage.program.ndim == 2 and "pos1" in self.objects:
            cls = "_sp.csr_array" if kind == "csr" else "_sp.csc_array"
            layout = "_SF_CSR_DICT" if kind == "csr" else "_SF_CSC_DICT"
            self.line(f"return _sf_compressed({cls}, {layout}, o_val, o_crd1, o_pos1, "
                      f"{shape_t})")
        elif kind == "csr" and stage.program.ndim == 1 and set(self.objects) == {"val", "crd0"}:
            self.line(f"return _sf_vector(o_val, o_crd0, {self.out_dtypes['crd0'][1]}, "
                      f"{shape_t})")
        elif kind == "coo" and stage.program.ndim >= 1 and "pos1" not in self.objects:
            crds = "(" + "".join(f"o_crd{d}, " for d in range(stage.program.ndim)) + ")"
            self.line(f"return _sf_coo(_SF_COO_DICT, o_val, {crds}, {shape_t})")
        else:
            raise _Unsupported

    def text(self) -> str:
        stage = self.stage
        names = [f"v_{inp.name}" for inp in stage.inputs]
        for inp, v in zip(stage.inputs, names):
            if inp.format.is_dense:
                self.dense_input(inp, v)
            else:
                self.sparse_input(inp, v)
        self.check_sizes()
        self.finite()
        self.threads()
        self.outputs()
        self.run()
        self.wrap()
        head = [f"def fast({''.join(f'object {v}, ' for v in names)}*, int threads=0):",
                "    # the happy path of a call (compiler/fastcall.py); None: take the",
                "    # checked path"]
        decls = [f"    cdef {t.split('[')[0]} {n}{'[' + t.split('[')[1] if '[' in t else ''}"
                 for n, t in sorted(self.decls.items()) if t not in ("tuple",)]
        decls += [f"    cdef tuple {n}" for n, t in sorted(self.decls.items()) if t == "tuple"]
        consts = [f"{k} = {v}" for k, v in sorted(self.consts.items())]
        return "\n".join(consts + ["", ""] + head + decls + self.lines) + "\n"


def _capacity(points, terms: list[str]) -> str:
    """``kernel.capacity_points`` as a C expression over the pieces' ``terms``."""
    def operand(pieces):
        return " + ".join(terms[i] for i in pieces)
    sums = []
    for point in points:
        parts = [operand(o) for o in point]
        sums.append(parts[0] if len(parts) == 1 else "min(" + ", ".join(parts) + ")")
    return " + ".join(sums) or "0"

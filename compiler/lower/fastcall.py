"""A kernel module's fast entry: the happy path of a call, lowered to the loop IR
(``loops.Entry``) and printed with the kernel (issue #13: call overhead).

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

What needs Python objects — reading a scipy or NumPy argument into its storage, the thread
count and memory limit of a call, allocating outputs, building the result container — is
done by the shared runtime (``runtime.pyx``: ``sf_compressed_input``, ``sf_empty``,
``sf_compressed_result``, ...); the entry itself is C-level size arithmetic and checks
between those calls, and the calls of the kernel's loops.
"""

from __future__ import annotations

import numpy as np

from sparsefold.compiler.emit.cnames import size_var, storage_ctype
from sparsefold.compiler.emit.emit import SITES_TABLE, body_name
from sparsefold.compiler.emit.loops import (
    BOOL,
    INT,
    NONE,
    OBJECT,
    THREADS,
    Apply,
    Array,
    Assign,
    Bin,
    Builder,
    Call,
    Cast,
    Entry,
    Expr,
    Field,
    Function,
    If,
    Lit,
    Load,
    Nogil,
    Not,
    Ref,
    Return,
    Tuple,
    Var,
    argument,
)
from sparsefold.compiler.emit.parallel import has_parallel
from sparsefold.compiler.lower.outputs import AppendOut, DenseOut, ScatterOut, start_value
from sparsefold.compiler.plan.cost import EXACT_CAPACITY_ABOVE
from sparsefold.compiler.plan.plans import CoiterPlan, ContractPlan, DensePlan, StreamPlan
from sparsefold.spec import sizes as sz
from sparsefold.spec.compute import Input
from sparsefold.spec.printer import topological

__all__ = ["fast_entry"]

_INT32_MAX = 2**31 - 1
_MAXDIM = 32  # runtime.pxd's SF_MAXDIM: the most axes the runtime's readers take


def _dtype_code(dt) -> Lit:
    """The runtime's code of ``dt`` (``runtime.pxd``'s ``sf_dtype``: SF_FLOAT32, ...)."""
    return Lit(f"SF_{np.dtype(dt).name.upper()}", "int")


def _int(value: int) -> Lit:
    """An int64 literal (``LL`` past 32 bits: Cython reads a bare one as a Python int)."""
    return Lit(str(value) if -2**31 <= value < 2**31 else f"{value}LL", INT)


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
# a negative step can be negative. The runtime's ``sf_floordiv`` and ``sf_mod`` are exact for a
# divisor >= 1; the entry checks every divisor first (:meth:`_Entry.guard_divisions`) and
# otherwise returns None, so the checked path meets a zero or negative divisor and decides.
_C_FLOOR = sz.C | {"floordiv": lambda a, b: f"sf_floordiv({a}, {b})",
                   "mod": lambda a, b: f"sf_mod({a}, {b})"}


def _c(e: sz.Expr) -> Lit:
    """A size expression whose divisors the entry has checked to be >= 1, in C."""
    uses = tuple(Var(size_var(s)) for s in sorted(sz.free_symbols(e)))
    return Lit(sz.read(e, _C_FLOOR, lambda x: sz.to_c(x, size_var)), INT, uses)


def _divisors(e: sz.Expr, found: dict[sz.Expr, None]) -> None:
    """The divisors of ``e``'s divisions, each after the divisors inside it."""
    if isinstance(e, sz.Op):
        for a in e.args:
            _divisors(a, found)
        if e.op in ("floordiv", "mod"):
            found.setdefault(e.args[1], None)


def _any(conds: list[Expr]) -> Expr:
    out = conds[0]
    for c in conds[1:]:
        out = Bin("or", out, c)
    return out


def _sum(terms: list[Expr]) -> Expr:
    out = terms[0]
    for t in terms[1:]:
        out = Bin("+", out, t)
    return out


def _product(factors: list[Expr]) -> Expr:
    out = factors[0]
    for f in factors[1:]:
        out = Bin("*", out, f)
    return out


def _double(e: Expr) -> Expr:
    return Cast("double", e)


# --- the entry ------------------------------------------------------------------------------

def fast_entry(stage, index_dtypes: dict, out_index: str, unit: frozenset,
               functions: list[Function], asm, requires: tuple = ()) -> Entry | None:
    """The fast entry of this variant (``loops.Entry``), or None when it does not cover it
    (the call then always takes the checked path)."""
    try:
        return _Entry(stage, index_dtypes, out_index, unit, functions, asm, requires).entry()
    except _Unsupported:
        return None


class _Entry:
    def __init__(self, stage, index_dtypes, out_index, unit, functions, asm, requires):
        self.stage, self.dtypes, self.out_index, self.unit = stage, index_dtypes, out_index, unit
        self.functions, self.asm = functions, asm
        self.requires = tuple(stage.requires) + tuple(requires)
        self.b = Builder()
        self.arrays: dict[str, Var] = {}        # local C arrays
        self.bound: set[str] = set()
        self.pointers: dict[tuple, Expr] = {}   # param source -> its value in the entry
        self.inputs: dict[str, Var] = {}        # input name -> the struct read from it
        self.nnz: dict[str, Expr] = {}          # input name -> its stored-entry count
        self.stored: dict[str, Expr] = {}       # input name -> its val array's length
        self.elements: dict[str, Expr] = {}     # dense input name -> its element count
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
        if stage.program.ndim > _MAXDIM or any(i.ndim > _MAXDIM for i in stage.inputs):
            raise _Unsupported

    def fail(self, cond: Expr) -> None:
        """``return None`` when ``cond`` holds."""
        self.b.emit(If(((cond, (Return(NONE),)),)))

    def read(self, reader: str, *args: Expr) -> None:
        """``return None`` unless the runtime's ``reader`` accepts the argument."""
        self.fail(Not(Apply(reader, args, "int")))

    # --- inputs -----------------------------------------------------------------------
    def bind(self, declared, actual: Expr) -> None:
        if isinstance(declared, sz.Sym):
            var = Var(size_var(declared.name))
            if declared.name in self.bound:
                self.fail(Bin("!=", var, actual))
            else:
                self.b.assign(var, actual)
                self.bound.add(declared.name)
        elif isinstance(declared, sz.Const):
            self.fail(Bin("!=", actual, _int(declared.value)))
        else:
            raise _Unsupported

    def sparse_input(self, inp: Input, v: Expr) -> None:
        kinds, fmt = inp.format.kinds, inp.format
        d = self.dtypes[inp.name]
        n = inp.name
        if kinds == ("full", "pos") and inp.ndim == 2 or kinds == ("pos",) and inp.ndim == 1:
            level = "1" if inp.ndim == 2 else "0"
            a = self.inputs[n] = Var(f"in_{n}", "sf_compressed")
            columns = int(inp.ndim == 2 and fmt.mode_order != (0, 1))
            self.read("sf_compressed_input", v, Lit(str(columns), "int"),
                      Lit(str(inp.ndim), "int"), _dtype_code(d.get(f"pos{level}")),
                      _dtype_code(d.get(f"crd{level}")), _dtype_code(inp.dtype), Ref(a))
            for axis in range(inp.ndim):
                self.bind(inp.shape[axis], Field(a, f"shape[{axis}]"))
            for key, member in ((f"pos{level}", "pos"), (f"crd{level}", "crd"),
                                ("val", "val")):
                self.pointers[("input", n, key)] = Field(a, member, "void*")
        elif kinds and kinds[0] == "pos" and all(k == "one" for k in kinds[1:]):
            crd_dtypes = {np.dtype(d[f"crd{axis}"]) for axis in range(inp.ndim)}
            if len(crd_dtypes) != 1:
                raise _Unsupported  # coordinates of several dtypes: the checked path
            a = self.inputs[n] = Var(f"in_{n}", "sf_coo")
            self.read("sf_coo_input", v, Lit(str(inp.ndim), "int"),
                      _dtype_code(crd_dtypes.pop()), _dtype_code(inp.dtype), Ref(a))
            for axis in range(inp.ndim):
                self.bind(inp.shape[axis], Field(a, f"shape[{axis}]"))
                self.pointers[("input", n, f"crd{axis}")] = Field(a, f"crd[{axis}]", "void*")
            self.pointers[("input", n, "pos0")] = Field(a, "pos0", "int64_t*")
            self.pointers[("input", n, "val")] = Field(a, "val", "void*")
        else:
            raise _Unsupported
        self.nnz[n] = Field(a, "nnz")
        self.stored[n] = Field(a, "stored")

    def dense_input(self, inp: Input, v: Expr) -> None:
        n = inp.name
        a = self.inputs[n] = Var(f"in_{n}", "sf_dense")
        self.read("sf_dense_input", v, Lit(str(inp.ndim), "int"), _dtype_code(inp.dtype),
                  Ref(a))
        for axis in range(inp.ndim):
            self.bind(inp.shape[axis], Field(a, f"shape[{axis}]"))
            self.pointers[("stride", n, axis)] = Field(a, f"strides[{axis}]")
        self.elements[n] = _product([_double(Field(a, f"shape[{axis}]"))
                                     for axis in range(inp.ndim)]) if inp.ndim else \
            Lit("1.0", "double")
        if inp.ndim:  # the unit-stride variant, or the one for strided rows
            last = Field(a, f"strides[{inp.ndim - 1}]")
            self.fail(Bin("!=" if n in self.unit else "==", last, _int(1)))
        self.pointers[("dense", n)] = Field(a, "data", "void*")

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
        if self.bound:
            self.fail(_any([Bin(">=", Var(size_var(s)), _int(1 << bound))
                            for s in sorted(self.bound)]))
        reduced = [node.extent() for node in self.stage._empty_reductions]
        self.guard_divisions(exprs + reduced)
        for r in self.requires:
            self.fail(Not(_c(r)))
        for extent in reduced:  # max/min over nothing: the checked path raises
            self.fail(Bin("==", _c(extent), _int(0)))

    def guard_divisions(self, exprs) -> None:
        """``return None`` unless every divisor in ``exprs`` is >= 1 (the checked path
        raises on 0, and floors with a negative divisor, which the helpers do not do):
        innermost first, so a divisor's own divisions are checked before it is computed."""
        divisors: dict[sz.Expr, None] = {}
        for e in exprs:
            _divisors(e, divisors)
        for d in divisors:
            if not isinstance(d, sz.Const):
                self.fail(Bin("<", _c(d), _int(1)))
            elif d.value < 1:
                raise _Unsupported  # a negative constant step: left to the checked path

    def finite(self) -> None:
        for inp in self.stage.plan.finite:
            ptr = self.pointers.get(("dense", inp.name)) or \
                self.pointers.get(("input", inp.name, "val"))
            if ptr is None:
                raise _Unsupported
            if ("dense", inp.name) in self.pointers:
                # a C-ordered operand is checked as one flat run; others: the checked path
                a = self.inputs[inp.name]
                expect: Expr = _int(1)
                for axis in range(inp.ndim - 1, -1, -1):
                    self.fail(Bin("!=", Field(a, f"strides[{axis}]"), expect))
                    expect = Bin("*", expect, Field(a, f"shape[{axis}]"))
                count = _c(sz.product(inp.shape)) if inp.ndim else _int(1)
            else:
                count = self.nnz[inp.name]
            bad = Var("nonfinite", BOOL)  # O(entries): without the GIL, as kernels run
            self.b.emit(Nogil((Assign(bad, Apply("sf_nonfinite", (
                ptr, count, _dtype_code(inp.dtype)), BOOL)),)))
            self.fail(bad)

    # --- threads ----------------------------------------------------------------------
    def threads(self) -> None:
        """The calling thread's OpenMP setting, as ``StageKernel.__call__`` makes it for a
        variant with a parallel loop: ``threads.threads_for(work)`` with ``work`` the entries
        the loops walk (each piece's stored values, or a dense operand's elements, times its
        free extents); ``threads`` is jit's ``threads=N`` (0: none)."""
        if not any(has_parallel(fn.body) for fn in self.functions):
            return
        terms = []
        for piece in self.stage.plan.pieces:
            name = piece.leaf.name
            n = _double(self.stored[name]) if name in self.stored else \
                self.elements.get(name)
            if n is None:
                raise _Unsupported
            terms.append(_product([n] + [_double(_c(size)) for _, size in piece.free]))
        work = _sum(terms) if terms else Lit("0.0", "double")
        self.fail(Bin("<", Apply("sf_threads", (work, THREADS), "int"), _int(1)))

    # --- outputs ----------------------------------------------------------------------
    def outputs(self) -> None:
        """Output arrays sized and checked as ``StageKernel.__call__`` sizes them: the same
        capacity (stored values times free extents), the same output index width (this
        variant's, else ``return None``), the same memory limit; an allocation that fails
        is left to the checked path (which raises ``TooLarge``)."""
        asm, stage = self.asm, self.stage
        ndim = stage.program.ndim
        dims = Array("out_shape", INT)
        self.shape = self._array("out_shape", max(ndim, 1))
        for d, e in enumerate(stage.program.shape):
            self.b.store(dims, _int(d), _c(e))
        shape = [Load(dims, _int(d)) for d in range(ndim)]
        dt = stage.program.dtype
        ct = storage_ctype(dt)
        limit = Var("limit")
        self.b.assign(limit, Apply("sf_memory_limit", (), INT))
        item = np.dtype(dt).itemsize
        if isinstance(asm, DenseOut):
            count = _product([_double(s) for s in shape]) if shape else Lit("1.0", "double")
            self.fail(Bin(">", Bin("*", count, _int(item)), _double(limit)))
            if asm.order is not None:  # stored with permuted axes (DenseOut.order)
                stored = self._array("stored_shape", ndim)
                for d, a in enumerate(asm.order):
                    self.b.store(Array(stored.name, INT), _int(d), shape[a])
            else:
                stored = self.shape
            self.objects = {"val": Var("o_val", OBJECT)}
            self._allocate({"val": Apply("sf_zeros", (Lit(str(ndim), "int"), stored,
                                                      _dtype_code(dt)), OBJECT)})
            self._out_ptr("val", ct)
            return
        cap, capd = Var("capacity"), Var("capacity_bound", "double")
        terms, dterms = [], []
        for piece in stage.plan.pieces:
            n = self.stored.get(piece.leaf.name)
            if n is None:
                raise _Unsupported
            exts = [_c(size) for _, size in piece.free]
            terms.append(_product([n] + exts))
            dterms.append(_product([_double(n)] + [_double(e) for e in exts]))
        # the bound in floating point first: the exact int64 sum cannot overflow after it
        self.b.assign(capd, _capacity(stage.capacity_points, dterms))
        self.fail(Bin(">", capd, Lit(f"{1 << 60}.0", "double")))
        self.b.assign(cap, _capacity(stage.capacity_points, terms))
        # the output index width the checked path would choose (kernel: ``big``)
        big = _any([Bin(">", x, _int(_INT32_MAX)) for x in [cap] + shape])
        self.fail(big if self.out_index == "int32" else Not(big))
        if stage._rows_skipped:
            # a row loop that skips rows (a strided slice): above this many entries the
            # checked path counts them first and sizes the outputs exactly (peak memory);
            # the count cannot exceed the bound, so the index width above stands
            count = self.functions[1] if len(self.functions) > 1 else None
            above = Bin(">", cap, _int(EXACT_CAPACITY_ABOVE))
            try:
                if count is None or count.name != "count" or len(count.returns) != 1:
                    raise _Unsupported
                with self.b.collect() as counted:
                    ret = self._call(count, "sf_count")
                    self.b.assign(cap, Apply("max", (_int(0), Apply("min", (
                        cap, Load(ret, _int(0))), INT)), INT))
                self.b.emit(If(((above, tuple(counted)),)))
            except _Unsupported:  # a count this entry cannot call: the checked path counts
                self.fail(above)
        index = np.dtype(self.out_index)
        ixt = storage_ctype(index)
        rows = shape[stage.fmt.mode_order[0]]
        parts: dict[str, tuple[Expr, np.dtype, str]] = {"val": (cap, np.dtype(dt), ct)}
        if isinstance(asm, ScatterOut):
            parts.update(pos1=(Bin("+", rows, _int(1)), index, ixt), crd1=(cap, index, ixt))
            parts["nxt"] = (rows, np.dtype(np.int64), "int64_t")
            if asm.coo:
                parts["crd0"] = (cap, index, ixt)
        elif asm.kinds == ("full", "pos"):
            parts.update(pos1=(Bin("+", rows, _int(1)), index, ixt), crd1=(cap, index, ixt))
        else:
            for lv in range(len(asm.kinds)):
                parts[f"crd{lv}"] = (cap, index, ixt)
        if set(parts) != set(asm.allocation(tuple(range(2, 2 + ndim)), 1)):
            raise _Unsupported  # an assembler this entry does not know
        total = _sum([Bin("*", _double(n), _int(t.itemsize)) for n, t, _ in parts.values()])
        self.fail(Bin(">", total, _double(limit)))
        self.objects = {part: Var(f"o_{part}", OBJECT) for part in parts}
        self.out_dtypes = {part: t for part, (_, t, _) in parts.items()}
        self._allocate({part: Apply("sf_empty", (n, _dtype_code(t)), OBJECT)
                        for part, (n, t, _) in parts.items()})
        for part, (_, _, ctp) in parts.items():
            self._out_ptr(part, ctp)

    def _allocate(self, arrays: dict[str, Expr]) -> None:
        """The outputs allocated; None (the checked path raises TooLarge) if one fails."""
        for part, value in arrays.items():
            self.b.assign(self.objects[part], value)
        self.fail(_any([Bin("is", self.objects[part], NONE) for part in arrays]))

    def _array(self, name: str, size: int) -> Var:
        """A local C array of ``size`` int64 values."""
        var = self.arrays[name] = Var(name, f"int64_t[{size}]")
        return var

    def _out_ptr(self, part: str, ct: str) -> None:
        ptr = Var(f"optr_{part}", f"{ct}*")
        self.b.assign(ptr, Cast(f"{ct}*", Apply("sf_data", (self.objects[part],), "void*")))
        self.pointers[("out", part)] = ptr

    # --- run and wrap -------------------------------------------------------------------
    def run(self) -> None:
        self.ret = self._call(self.functions[0], "sf_ret")

    def _call(self, fn: Function, ret: str) -> Array:
        """Call ``fn``'s loops without the GIL on this entry's pointers and sizes, results in
        ``ret``; a failed check raises as the module's ``fn`` raises."""
        args: list[Expr] = []
        for p in fn.params:
            src = p.source
            if src[0] == "size":
                if src[1] not in self.bound:
                    raise _Unsupported
                args.append(Var(size_var(src[1])))
            elif src in self.pointers:
                value = self.pointers[src]
                args.append(Cast(f"{p.ctype}*", value) if p.kind != "int" else value)
            else:
                raise _Unsupported
        nret = len(fn.returns)
        slots = self._array(ret, nret + 4)
        array = Array(ret, INT)
        self.b.store(array, _int(nret), _int(0))
        self.b.emit(Nogil((Call(body_name(fn), tuple(args) + (slots,)),)))
        if fn.checks:
            self.b.emit(If(((Load(array, _int(nret)), (Call("sf_raise", (
                Lit(SITES_TABLE, OBJECT),
                *[Load(array, _int(nret + k)) for k in range(4)])),)),)))
        return array

    def wrap(self) -> None:
        """The result ``StageKernel._finish`` would return (library "scipy"): the dense
        array, or the trimmed arrays in the scipy container ``storage.results`` builds."""
        asm, stage = self.asm, self.stage
        o = self.objects
        if isinstance(asm, DenseOut):
            if asm.order is None:
                self.b.emit(Return(o["val"]))
            else:  # stored with permuted axes (DenseOut.order): the program's axes
                inverse = tuple(_int(int(a)) for a in np.argsort(asm.order))
                self.b.emit(Return(Apply("sf_dense_result", (o["val"], Tuple(inverse)),
                                         OBJECT)))
            return
        n = Var("n")
        self.b.assign(n, Load(self.ret, _int(0)))
        for part in o:
            if part.startswith("crd") or part == "val":
                self.b.assign(o[part], Apply("sf_trim", (o[part], n, _dtype_code(
                    self.out_dtypes[part])), OBJECT))
        kind = stage.fmt.name if stage.fmt.name in ("csr", "csc") else "coo"
        ndim = stage.program.ndim
        if kind in ("csr", "csc") and ndim == 2 and "pos1" in o:
            result = Apply("sf_compressed_result", (
                Lit(str(int(kind == "csc")), "int"), o["val"], o["crd1"], o["pos1"],
                self.shape), OBJECT)
        elif kind == "csr" and ndim == 1 and set(o) == {"val", "crd0"}:
            result = Apply("sf_vector_result", (o["val"], o["crd0"],
                                                Load(Array(self.shape.name, INT), _int(0))),
                           OBJECT)
        elif kind == "coo" and ndim >= 1 and "pos1" not in o:
            crds = Tuple(tuple(o[f"crd{d}"] for d in range(ndim)))
            result = Apply("sf_coo_result", (o["val"], crds, Lit(str(ndim), "int"),
                                              self.shape), OBJECT)
        else:
            raise _Unsupported
        self.b.emit(Return(result))

    def entry(self) -> Entry:
        stage = self.stage
        for k, inp in enumerate(stage.inputs):
            if inp.format.is_dense:
                self.dense_input(inp, argument(k))
            else:
                self.sparse_input(inp, argument(k))
        self.check_sizes()
        self.finite()
        self.threads()
        self.outputs()
        self.run()
        self.wrap()
        return Entry(len(stage.inputs), self.b.finish(), tuple(self.arrays.values()))


def _capacity(points, terms: list[Expr]) -> Expr:
    """``kernel.capacity_points`` over the pieces' ``terms``."""
    sums = []
    for point in points:
        parts = [_sum([terms[i] for i in o]) for o in point]
        sums.append(parts[0] if len(parts) == 1 else Apply("min", tuple(parts), parts[0].ctype))
    return _sum(sums) if sums else _int(0)

"""The one printer: loop IR (``loops.py``) to a Cython module's text (DESIGN §3.4).

Deterministic (same IR, same bytes) and readable: a header naming the program, strategy and
a hash; one parameter per line when a signature would pass 99 columns; each function
declares exactly the variables its body uses, grouped by type.

A module holds its loops and little else; what every kernel shares is the compiled runtime
(``runtime.pxd``), of which it cimports exactly the names its text uses. Per kernel function
(``loops.Function``: ``run``, ``count``) the module has the loops, ``cdef void
_<name>_body(typed pointers, sizes, int64_t* ret) noexcept nogil`` (results and the first
failed in-kernel check written to ``ret``, ``bounds.py``); a trampoline ``_<name>_loops``
taking the sizes and array addresses as two C arrays; and the Python-callable ``<name> =
sf_function(_<name>_loops, "<one word per parameter>", <results>, _SF_SITES)``, which
converts the arguments (arrays through the buffer protocol), runs the loops without the GIL
and raises a recorded failure. The fast entry (``loops.Entry``, lowered by ``fastcall.py``)
is ``cdef object _fast(tuple args, int threads)``, made callable as ``fast =
sf_fast_entry(_fast, <arity>)``.
"""

from __future__ import annotations

import hashlib
import re

from sparsefold.compiler.emit.cnames import C_SPELLING, storage_itemsize
from sparsefold.compiler.emit.loops import (
    Apply,
    Assign,
    Bin,
    Block,
    Break,
    Call,
    Cast,
    Comment,
    Cond,
    Continue,
    Entry,
    Expr,
    Field,
    For,
    Function,
    If,
    Lit,
    Load,
    Memcpy,
    Nogil,
    Not,
    Raise,
    Ref,
    Return,
    Store,
    Template,
    Tuple,
    Var,
    While,
    walk_exprs,
    walk_stmts,
)
from sparsefold.compiler.emit.parallel import (
    SLOT,
    check_parallel,
    checks_inside,
    parallel_declarations,
)
from sparsefold.compiler.emit.runtime_source import MODULE as RUNTIME
from sparsefold.compiler.emit.runtime_source import exported_names
from sparsefold.spec.c_library import declarations
from sparsefold.spec.errors import InternalError

__all__ = ["render_module", "render_expr", "render_entry", "COMPILER_VERSION", "SITES_TABLE"]

COMPILER_VERSION = "0.3.0"
_WIDTH = 99
SITES_TABLE = "_SF_SITES"  # the module's check sites: (kind, what) per loops.Raise site

# --- expressions ------------------------------------------------------------------------------

_PREC = {"or": 1, "and": 2, "is": 4, "<": 4, "<=": 4, "==": 4, "!=": 4, ">": 4, ">=": 4, "|": 5,
         "^": 6, "&": 7, "<<": 8, ">>": 8, "+": 9, "-": 9, "*": 10, "/": 10, "//": 10,
         "%": 10}
_ATOM = 13
_SIMPLE = re.compile(r"-?[A-Za-z0-9_.]+\Z|[A-Za-z_][A-Za-z0-9_]*\[[^\[\]]*\]\Z")


def _balanced(text: str) -> bool:
    """``text`` is one parenthesized group or a call ``name(...)`` spanning all of it."""
    m = re.match(r"[A-Za-z_][A-Za-z0-9_]*\(|\(", text)
    if not m or not text.endswith(")"):
        return False
    depth = 0
    for k, ch in enumerate(text):
        depth += ch == "("
        depth -= ch == ")"
        if depth == 0 and k != len(text) - 1:
            return False
    return True


def _text_prec(text: str) -> int:
    return _ATOM if _SIMPLE.match(text) or _balanced(text) else 0


_COMPLEX_MAKE = {"double complex": "CMPLX", "float complex": "CMPLXF"}
_REAL_CTYPES = frozenset({"bint", "int8_t", "int16_t", "int32_t", "int64_t", "uint8_t",
                          "uint16_t", "uint32_t", "uint64_t", "float", "double", "sf_half"})


def _known_ctype(e: Expr) -> str:
    """``e``'s C type, looking through a template that is its one argument (``{0}``: an
    identity function's C reading — astype(int64 -> complex128) read an int as complex)."""
    while isinstance(e, Template) and not e.ctype and e.text == "{0}" and len(e.args) == 1:
        e = e.args[0]
    return e.ctype


def render_expr(e: Expr, parent: int = 0) -> str:
    """Cython text of ``e``, parenthesized only where precedence needs it."""
    text, prec = _render(e)
    return f"({text})" if prec < parent else text


def _render(e: Expr) -> tuple[str, int]:
    if isinstance(e, Var):
        return e.name, _ATOM
    if isinstance(e, Lit):
        return e.text, _text_prec(e.text)
    if isinstance(e, Load):
        return f"{e.array.name}[{render_expr(e.index)}]", _ATOM
    if isinstance(e, Bin):
        p = _PREC[e.op]
        # comparisons do not chain in C the way they do in Python: keep operands atomic;
        # and "a or b and c" reads better as "a or (b and c)"
        left = p + 1 if p == 4 else p
        if e.op == "or" and not (isinstance(e.a, Bin) and e.a.op == "or"):
            left = _PREC["and"] + 1
        right = p + 1 if e.op != "or" else _PREC["and"] + 1
        return f"{render_expr(e.a, left)} {e.op} {render_expr(e.b, right)}", p
    if isinstance(e, Not):
        return f"not {render_expr(e.a, 4)}", 3
    if isinstance(e, Cast):
        if e.ctype in _COMPLEX_MAKE and _known_ctype(e.a) not in _REAL_CTYPES:
            # Cython casts a complex value to a complex type by rebuilding it as re + im*I,
            # which turns an infinite imaginary part's real part into NaN (inf * 0); build it
            # from its parts with C11's CMPLX instead
            a = render_expr(e.a, 0)
            return f"{_COMPLEX_MAKE[e.ctype]}(creal({a}), cimag({a}))", _ATOM
        return f"<{e.ctype}>{render_expr(e.a, _ATOM)}", 12
    if isinstance(e, Cond):
        return (f"{render_expr(e.a, 1)} if {render_expr(e.c, 1)} else {render_expr(e.b, 0)}",
                0)
    if isinstance(e, Template):
        args = [render_expr(a, _ATOM) for a in e.args]
        text = e.text.format(*args)
        return text, _text_prec(text)
    if isinstance(e, Field):
        return f"{e.base.name}.{e.name}", _ATOM
    if isinstance(e, Apply):
        return f"{e.name}({', '.join(render_expr(a) for a in e.args)})", _ATOM
    if isinstance(e, Ref):
        return f"&{e.var.name}", 12
    if isinstance(e, Tuple):
        items = [render_expr(x) for x in e.items]
        return f"({items[0]},)" if len(items) == 1 else f"({', '.join(items)})", _ATOM
    raise InternalError(f"cannot print {type(e).__name__}")


# --- statements -------------------------------------------------------------------------------

def _stmts(stmts, depth: int, out: list[str], row: str | None = None) -> None:
    """Print ``stmts`` at ``depth``; ``row`` is the variable of the parallel loop they are
    inside, if any (a failed check then goes to the thread's own slots)."""
    pad = "    " * depth
    for s in stmts:
        if isinstance(s, Assign):
            out.append(f"{pad}{s.var.name} = {render_expr(s.value)}")
        elif isinstance(s, Store):
            out.append(f"{pad}{s.array.name}[{render_expr(s.index)}] = {render_expr(s.value)}")
        elif isinstance(s, For) and s.parallel:
            _parallel_for(s, depth, out)
        elif isinstance(s, For):
            start = render_expr(s.start)
            head = f"range({render_expr(s.stop)})" if start == "0" else \
                f"range({start}, {render_expr(s.stop)})"
            out.append(f"{pad}for {s.var.name} in {head}:")
            _body(s.body, depth + 1, out, row)
        elif isinstance(s, While):
            out.append(f"{pad}while {render_expr(s.cond)}:")
            _body(s.body, depth + 1, out, row)
        elif isinstance(s, If):
            for k, (cond, body) in enumerate(s.cases):
                out.append(f"{pad}{'if' if k == 0 else 'elif'} {render_expr(cond)}:")
                _body(body, depth + 1, out, row)
            if s.orelse:
                out.append(f"{pad}else:")
                _body(s.orelse, depth + 1, out, row)
        elif isinstance(s, Break):
            out.append(f"{pad}break")
        elif isinstance(s, Continue):
            out.append(f"{pad}continue")
        elif isinstance(s, Comment):
            out.append(f"{pad}# {s.text}")
        elif isinstance(s, Block):
            if s.note:
                out.append(f"{pad}# {s.note}")
            _stmts(s.body, depth, out, row)
        elif isinstance(s, Memcpy):
            out.append(f"{pad}memcpy(&{s.dst.name}[{render_expr(s.dst_index)}], "
                       f"&{s.src.name}[{render_expr(s.src_index)}], "
                       f"{render_expr(s.count, 10)} * sizeof({s.dst.ctype}))")
        elif isinstance(s, Call):
            out += _wrap_call(f"{pad}{s.name}({', '.join(render_expr(a) for a in s.args)})",
                              len(pad))
        elif isinstance(s, Return):
            out.append(f"{pad}return {render_expr(s.value)}")
        elif isinstance(s, Nogil):
            out.append(f"{pad}with nogil:")
            _body(s.body, depth + 1, out, row)
        elif isinstance(s, Raise) and row is not None:
            vals = [render_expr(v) for v in s.values] + ["0"] * (3 - len(s.values))
            slot = f"sf_terr[sf_tid * {SLOT}"
            out.append(f"{pad}if {slot}] == 0:")
            for k, v in enumerate((str(s.site), row, *vals)):
                out.append(f"{pad}    {slot}{f' + {k}' if k else ''}] = {v}")
        elif isinstance(s, Raise):
            vals = [render_expr(v) for v in s.values] + ["0"] * (3 - len(s.values))
            out.append(f"{pad}if sf_bad == 0:")
            out.append(f"{pad}    sf_bad = {s.site}")
            for slot, v in zip(("sf_a", "sf_b", "sf_c"), vals):
                out.append(f"{pad}    {slot} = {v}")
        else:
            raise InternalError(f"cannot print {type(s).__name__}")


def _parallel_for(s: For, depth: int, out: list[str]) -> None:
    """A parallel loop (``parallel.py``): ``prange`` over the calling thread's OpenMP thread
    count, static schedule (each thread a contiguous block of iterations); a failed check
    inside goes to the thread's slots, merged after the loop (lowest iteration first)."""
    pad = "    " * depth
    checks = checks_inside(s)
    start = render_expr(s.start)
    out.append(f"{pad}# parallel: iterations on OpenMP threads (identical results for any "
               "thread count)")
    # prange needs C-typed bounds (it cannot type a Python-level max(...))
    out.append(f"{pad}sf_hi = {render_expr(s.stop)}")
    bounds = "sf_hi"
    if start != "0":
        out.append(f"{pad}sf_lo = {start}")
        bounds = "sf_lo, sf_hi"
    out.append(f"{pad}sf_nt = sf_max_threads()")
    if s.team is not None:  # no more threads than the per-thread workspace has slices
        out += [f"{pad}if sf_nt > {render_expr(s.team)}:",
                f"{pad}    sf_nt = {render_expr(s.team)}"]
    if checks:
        out += [f"{pad}for sf_t in range(sf_nt * {SLOT}):", f"{pad}    sf_terr[sf_t] = 0"]
    out.append(f"{pad}for {s.var.name} in prange({bounds}, num_threads=sf_nt, "
               "schedule='static'):")
    if checks or s.team is not None:
        out.append(f"{pad}    sf_tid = threadid()")
    _body(s.body, depth + 1, out, s.var.name)
    if not checks:
        return
    first = f"sf_terr[sf_t * {SLOT} + 1] < sf_terr[sf_pick * {SLOT} + 1]"
    out += [f"{pad}sf_pick = -1",
            f"{pad}for sf_t in range(sf_nt):",
            f"{pad}    if sf_terr[sf_t * {SLOT}] != 0:",
            f"{pad}        if sf_pick < 0 or {first}:",
            f"{pad}            sf_pick = sf_t",
            f"{pad}if sf_pick >= 0 and sf_bad == 0:",
            f"{pad}    sf_bad = sf_terr[sf_pick * {SLOT}]"]
    for k, slot in enumerate(("sf_a", "sf_b", "sf_c"), start=2):
        out.append(f"{pad}    {slot} = sf_terr[sf_pick * {SLOT} + {k}]")


def _body(stmts, depth: int, out: list[str], row: str | None = None) -> None:
    start = len(out)
    _stmts(stmts, depth, out, row)
    if all(line.lstrip().startswith("#") for line in out[start:]):
        out.append("    " * depth + "pass")


# --- functions and modules --------------------------------------------------------------------

def _variable_types(stmts, params=frozenset()) -> dict[str, str]:
    types: dict[str, str] = {}
    for e in walk_exprs(stmts):
        if isinstance(e, Var) and e.name not in params:
            if types.setdefault(e.name, e.ctype) != e.ctype:
                raise InternalError(f"variable {e.name} used with types {types[e.name]} and "
                                    f"{e.ctype}")
    return types


def _declare(types: dict[str, str]) -> list[str]:
    """``cdef`` lines for ``types`` (name -> C type), grouped by type; a pointer or array
    type (``float*``, ``int64_t[6]``) one variable a line, as Cython reads them."""
    by_type: dict[str, list[str]] = {}
    for name, t in sorted(types.items()):
        by_type.setdefault(t, []).append(name)
    lines = []
    for t in sorted(by_type):
        names = by_type[t]
        if "[" in t:
            base, size = t.split("[", 1)
            lines += [f"    cdef {base} {name}[{size}" for name in names]
            continue
        if t.endswith("*"):
            lines += [f"    cdef {t} {name}" for name in names]
            continue
        line = f"    cdef {t} "
        for k, name in enumerate(names):
            piece = name + (", " if k < len(names) - 1 else "")
            if len(line) + len(piece.rstrip()) > _WIDTH:
                lines.append(line.rstrip().rstrip(","))
                line = f"    cdef {t} "
            line += piece
        lines.append(line.rstrip().rstrip(","))
    return lines


def _declarations(fn: Function) -> list[str]:
    params = {p.name for p in fn.params}
    types = _variable_types(fn.body, params)
    for e in fn.returns:
        for sub in walk_exprs((Assign(Var("_sf_ret"), e),)):
            if isinstance(sub, Var) and sub.name not in params and sub.name != "_sf_ret":
                types.setdefault(sub.name, sub.ctype)
    if fn.checks:
        for slot in ("sf_bad", "sf_a", "sf_b", "sf_c"):
            types[slot] = "int64_t"
    return _declare(types)


def _restrict(ctype: str) -> str:
    return f"{ctype.replace(' ', '_')}_restrict"


def _restrict_typedefs(functions) -> list[str]:
    """``restrict`` pointer types for the arrays the functions take. Every array a kernel
    reads is an input it never writes, and every array it writes is an output the runtime
    allocated for this call alone, so no array it writes is reached through another
    pointer: C's ``restrict`` holds, and gcc may keep loaded values in registers and
    vectorize across stores."""
    types = sorted({p.ctype for fn in functions for p in fn.params
                    if p.kind in ("array", "address")})
    if not types:
        return []
    return ["", "cdef extern from *:"] + [
        f'    ctypedef {t}* {_restrict(t)} "{C_SPELLING.get(t, t)} * __restrict__"'
        for t in types]


def _reads(stmts) -> set[str]:
    """Names of variables some statement reads (assignment targets do not count)."""
    names: set[str] = set()
    for s in walk_stmts(stmts):
        exprs: tuple = ()
        if isinstance(s, Assign):
            exprs = (s.value,)
        elif isinstance(s, Store):
            exprs = (s.index, s.value)
        elif isinstance(s, For):
            exprs = (s.var, s.start, s.stop) + (() if s.team is None else (s.team,))
        elif isinstance(s, While):
            exprs = (s.cond,)
        elif isinstance(s, If):
            exprs = tuple(c for c, _ in s.cases)
        elif isinstance(s, Memcpy):
            exprs = (s.dst_index, s.src_index, s.count)
        elif isinstance(s, Raise):
            exprs = s.values
        elif isinstance(s, Call):
            exprs = s.args
        for e in exprs:
            for sub in walk_exprs((Assign(Var("_sf_read"), e),)):
                if isinstance(sub, Var):
                    names.add(sub.name)
    return names


def _drop_dead(stmts, live: set[str]) -> tuple:
    out = []
    for s in stmts:
        if isinstance(s, Assign) and s.var.name not in live:
            continue
        if isinstance(s, For):
            s = For(s.var, s.start, s.stop, _drop_dead(s.body, live), s.parallel, s.team)
        elif isinstance(s, While):
            s = While(s.cond, _drop_dead(s.body, live))
        elif isinstance(s, Block):
            s = Block(_drop_dead(s.body, live), s.note)
        elif isinstance(s, If):
            s = If(tuple((c, _drop_dead(b, live)) for c, b in s.cases),
                   _drop_dead(s.orelse, live))
        out.append(s)
    return tuple(out)


def dead_assignments_removed(fn: Function) -> Function:
    """``fn`` without assignments to variables nothing reads (IR values have no side
    effects), repeated until none is left."""
    body = fn.body
    returned = set()
    for e in fn.returns:
        for sub in walk_exprs((Assign(Var("_sf_ret"), e),)):
            if isinstance(sub, Var):
                returned.add(sub.name)
    while True:
        live = _reads(body) | returned | {"sf_bad", "sf_a", "sf_b", "sf_c"}
        new = _drop_dead(body, live)
        if new == body:
            return Function(fn.name, fn.params, body, fn.returns, fn.checks)
        body = new


def _body_params(fn: Function) -> list[str]:
    out = []
    for p in fn.params:
        out.append(f"{_restrict(p.ctype)} {p.name}" if p.kind in ("array", "address")
                   else f"int64_t {p.name}")
    return out


def body_name(fn: Function) -> str:
    """The ``cdef`` function holding ``fn``'s loops: its trampoline and a fast entry call
    it."""
    return f"_{fn.name}_body"


def loops_name(fn: Function) -> str:
    """``fn``'s trampoline: its loops called on C arrays of sizes and of addresses."""
    return f"_{fn.name}_loops"


def _param_words(fn: Function) -> str:
    """How ``sf_function`` converts each argument: ``i`` a size, ``a`` an address (an int),
    ``r<n>``/``w<n>`` an array of n-byte items the loops read / write."""
    words = []
    for p in fn.params:
        if p.kind == "int":
            words.append("i")
        elif p.kind == "address":
            words.append("a")
        else:
            words.append(f"{'w' if p.writable else 'r'}{storage_itemsize(p.ctype)}")
    return " ".join(words)


def render_function(fn: Function, sites: bool = False) -> list[str]:
    """``fn`` as its loops (``cdef void _<name>_body(...) noexcept nogil``), its trampoline
    and the module-level ``<name> = sf_function(...)``; ``sites``: the module has a table of
    check sites (``_SF_SITES``) for the failures it raises."""
    fn = dead_assignments_removed(fn)
    check_parallel(fn)
    nret = len(fn.returns)
    params = _body_params(fn) + ["int64_t* sf_ret"]
    head = _wrap_words(f"cdef void {body_name(fn)}(", params, ") noexcept nogil:", 8)
    code = head + _declarations(fn) + parallel_declarations(fn)
    if fn.checks:
        code.append("    sf_bad = 0")
    body: list[str] = []
    _stmts(fn.body, 1, body)
    code += body or ["    pass"]
    for k, e in enumerate(fn.returns):
        code.append(f"    sf_ret[{k}] = {render_expr(e)}")
    if fn.checks:
        for k, slot in enumerate(("sf_bad", "sf_a", "sf_b", "sf_c")):
            code.append(f"    sf_ret[{nret + k}] = {slot}")
    args, sizes, arrays = [], 0, 0
    for p in fn.params:
        if p.kind == "int":
            args.append(f"s[{sizes}]")
            sizes += 1
        else:
            args.append(f"<{p.ctype}*>p[{arrays}]")
            arrays += 1
    code += ["", "", f"cdef void {loops_name(fn)}(const int64_t* s, void** p, int64_t* r) "
             "noexcept nogil:"]
    code += _wrap_call(f"    {body_name(fn)}({', '.join(args + ['r'])})", 4)
    table = SITES_TABLE if sites else "()"
    code += ["", "", f'{fn.name} = sf_function({loops_name(fn)}, "{_param_words(fn)}", {nret}, '
             f"{table})"]
    return code


def render_entry(entry: Entry) -> list[str]:
    """The fast entry ``cdef object _fast(tuple args, int threads)`` and the module-level
    ``fast = sf_fast_entry(_fast, <arity>)``."""
    code = ["cdef object _fast(tuple args, int threads):",
            "    # the happy path of a call (fastcall.py); None: the checked path decides"]
    code += _declare(_variable_types(entry.body) | {v.name: v.ctype for v in entry.arrays})
    body: list[str] = []
    _stmts(entry.body, 1, body)
    return code + body + ["", "", f"fast = sf_fast_entry(_fast, {entry.arity})"]


def _wrap_words(first: str, items: list[str], last: str, indent: int) -> list[str]:
    """``first`` + the items joined by commas + ``last``, split after a comma where a line
    would pass the width; continuation lines start ``indent`` spaces in."""
    out, cur = [], first
    for k, item in enumerate(items):
        piece = item + (", " if k < len(items) - 1 else last)
        if len(cur) + len(piece.rstrip()) > _WIDTH and cur.strip():
            out.append(cur.rstrip())
            cur = " " * indent
        cur += piece
    out.append(cur)
    return out


def _wrap_call(line: str, indent: int) -> list[str]:
    """A long call split after its commas."""
    if len(line) <= _WIDTH:
        return [line]
    head, args = line.split("(", 1)
    return _wrap_words(head + "(", args[:-1].split(", "), ")", indent + 4)


_STDINT = ("int8_t", "int16_t", "int32_t", "int64_t", "uint8_t", "uint16_t", "uint32_t",
           "uint64_t", "INT64_MAX")
# libc names a kernel's text may use that spec.c_library leaves to the printer
_LIBC = (("libc.math", ("NAN", "INFINITY", "fabs", "pow")), ("libc.string", ("memcpy",)),
         ("libc.stdlib", ("calloc", "free")))
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _code_words(text: str) -> set[str]:
    """The identifiers ``text`` uses outside comments and string literals."""
    words = set()
    for line in text.splitlines():
        code = re.sub(r"'[^']*'|\"[^\"]*\"", "", line.split("#", 1)[0])
        words.update(_WORD.findall(code))
    return words


def _cimports(text: str) -> list[str]:
    """The cimport lines of a module whose functions are ``text``: exactly the names used."""
    used = _code_words(text)
    lines = []
    stdint = [n for n in _STDINT if n in used]
    if stdint:
        lines.append(f"from libc.stdint cimport {', '.join(stdint)}")
    for module, names in _LIBC:
        found = [n for n in names if n in used]
        if found:
            lines.append(f"from {module} cimport {', '.join(found)}")
    if "prange" in used:
        lines.append("from cython.parallel cimport prange"
                     + (", threadid" if "threadid" in used else ""))
    runtime = sorted(used & exported_names())
    if runtime:
        line = f"from {RUNTIME} cimport "
        one = line + ", ".join(runtime)
        if len(one) <= _WIDTH:
            lines.append(one)
        else:
            lines += _wrap_call(f"{line}({', '.join(runtime)})", 4)
    return lines


def render_module(*, title: str, program_text: str, notes: list[str],
                  functions: list[Function], sites: tuple[tuple[str, str], ...] = (),
                  entry: Entry | None = None, certificate: str = "") -> str:
    """The whole ``.pyx``: header, cimports, then ``functions`` in order and the fast entry.
    ``sites`` are the in-kernel checks' descriptions; :class:`~loops.Raise` numbers index
    them; ``certificate`` is the SHA-256 of the kernel's certificate
    (``verify.prove_kernel``), when it has one."""
    blocks = ["\n".join(render_function(fn, bool(sites))) for fn in functions]
    if entry is not None:
        blocks.append("\n".join(render_entry(entry)))
    text_body = "\n\n\n".join(blocks)
    digest = hashlib.sha256((program_text + text_body).encode()).hexdigest()[:16]
    typedefs = _restrict_typedefs(functions)
    library = declarations("\n".join(typedefs) + text_body)
    header = [
        "# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True",
        "# cython: initializedcheck=False, nonecheck=False",
        f"# sparsefold kernel: {title}",
        f"# sparsefold compiler {COMPILER_VERSION}; source hash {digest}",
        *([f"# certificate: sha256:{certificate}"] if certificate else []),
        "#",
        "# Program:",
        *[f"#   {line}" for line in program_text.splitlines()],
        *_wrap_notes(notes),
        "",
        *_cimports("\n".join(typedefs + library) + "\n" + text_body),
        *library,
        *typedefs,
    ]
    if sites:
        header += ["", "", f"{SITES_TABLE} = (\n" + "".join(f"    ({k!r}, {w!r}),\n"
                                                      for k, w in sites) + ")"]
    return "\n".join(header) + "\n\n\n" + text_body + "\n"


def _wrap_notes(notes: list[str]) -> list[str]:
    out = []
    for note in notes:
        words = note.split()
        line = "#"
        for w in words:
            if len(line) + 1 + len(w) > _WIDTH and line != "#":
                out.append(line)
                line = "#  "
            line += " " + w
        out.append(line)
    return out


__all__ += ["render_function", "body_name", "loops_name"]

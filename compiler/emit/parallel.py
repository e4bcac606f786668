"""Parallel loops of the loop IR (``loops.For(parallel=True)``): what the printer adds
around one, and the check that its iterations really are independent (docs/threads.md).

A parallel loop is printed as Cython's ``prange`` with a static schedule over
``sf_max_threads()`` threads (the shared runtime's reading of the calling thread's OpenMP
setting, which every call sets: ``compiler/run/threads.py`` on the checked path, the runtime's
``sf_threads`` in the module's fast entry; 1 when the runtime is built without OpenMP; a
module built without it compiles ``prange`` to a plain loop).
Every thread runs a contiguous block of iterations, each in the order a single thread would,
so a result that depends only on what each iteration does is bit-identical for any thread
count.

In-kernel checks (``loops.Raise``) must not write the function's shared failure slots from
several threads: inside a parallel loop each thread records its first failure, with the
iteration it happened in, in slots of its own (``sf_terr``); after the loop the failure of
the lowest iteration — the one a single thread would have met first — becomes the call's, if
no earlier check failed. Nothing inside the parallel region calls into Python.
"""

from __future__ import annotations

from sparsefold.compiler.emit.loops import (
    INT,
    Assign,
    Block,
    Break,
    Call,
    Expr,
    For,
    Function,
    If,
    Lit,
    Memcpy,
    Raise,
    Store,
    Var,
    While,
    walk_exprs,
    walk_stmts,
)
from sparsefold.spec.errors import InternalError

__all__ = ["SLOT", "MAX_THREADS", "THREAD_ID", "has_parallel",
           "check_parallel", "parallel_declarations", "checks_inside"]

SLOT = 8          # int64 slots per thread (site, iteration, 3 values; one cache line)
MAX_THREADS = 64  # threads a parallel loop uses at most (the failure slots are on the stack)

# the running thread's number, 0 <= THREAD_ID < the loop's team: readable inside a parallel
# loop that has a ``team`` (its per-thread workspace slice), set by the printer
THREAD_ID = Lit("sf_tid", INT)

def has_parallel(stmts) -> bool:
    return any(isinstance(s, For) and s.parallel for s in walk_stmts(stmts))


def checks_inside(loop: For) -> bool:
    """Does the loop's body record failed checks (then it needs per-thread slots)?"""
    return any(isinstance(s, Raise) for s in walk_stmts(loop.body))


def parallel_declarations(fn: Function) -> list[str]:
    """The C variables the printed parallel loops of ``fn`` use."""
    if not has_parallel(fn.body):
        return []
    lines = ["    cdef int sf_nt, sf_t, sf_pick, sf_tid", "    cdef int64_t sf_lo, sf_hi"]
    if any(isinstance(s, For) and s.parallel and checks_inside(s) for s in walk_stmts(fn.body)):
        lines.append(f"    cdef int64_t sf_terr[{SLOT * MAX_THREADS}]")
    return lines


_FAILURE_SLOTS = {"sf_bad", "sf_a", "sf_b", "sf_c"}


def check_parallel(fn: Function) -> None:
    """Refuse (``InternalError``: our bug) a parallel loop whose iterations might not be
    independent as far as variables go: a variable it assigns read before this iteration
    assigned it, or read after the loop; a ``break`` out of it; a nested parallel loop; the
    shared failure slots read inside it. (Which output cells an iteration writes is the
    lowering's proof, not re-checked here.)"""
    loops = [s for s in walk_stmts(fn.body) if isinstance(s, For) and s.parallel]
    for loop in loops:
        where = f"the parallel loop over {loop.var.name} in {fn.name}"
        if any(isinstance(s, For) and s.parallel for s in walk_stmts(loop.body)):
            raise InternalError(f"{where} contains another parallel loop")
        if any(isinstance(s, Break) for s in _top_level(loop.body)):
            raise InternalError(f"{where} breaks out of the parallel loop")
        assigned = _assigned(loop.body)
        read_inside = {e.name for e in walk_exprs(loop.body) if isinstance(e, Var)}
        if read_inside & _FAILURE_SLOTS:
            raise InternalError(f"{where} reads the shared failure slots")
        _flow(loop.body, {loop.var.name}, assigned, where)
        outside = _reads_outside(fn, loop)
        leaked = sorted((assigned | {loop.var.name}) & outside)
        if leaked:
            raise InternalError(f"{where}: {', '.join(leaked)} assigned in it and read after")


def _top_level(stmts):
    """Statements of the loop body not inside a nested loop (a break there leaves the
    parallel loop itself)."""
    for s in stmts:
        yield s
        if isinstance(s, Block):
            yield from _top_level(s.body)
        elif isinstance(s, If):
            for _, body in s.cases:
                yield from _top_level(body)
            yield from _top_level(s.orelse)


def _assigned(stmts) -> set[str]:
    names = set()
    for s in walk_stmts(stmts):
        if isinstance(s, Assign):
            names.add(s.var.name)
        elif isinstance(s, For):
            names.add(s.var.name)
    return names


def _names(*exprs: Expr) -> set[str]:
    return {e.name for e in walk_exprs((Assign(Var("_sf_x"), x) for x in exprs))
            if isinstance(e, Var) and e.name != "_sf_x"}


def _flow(stmts, defined: set[str], assigned: set[str], where: str) -> set[str]:
    """Walk ``stmts`` in order, with ``defined`` the body's variables surely assigned in
    this iteration so far; a read of a body variable outside it is refused."""
    defined = set(defined)

    def reads(*exprs):
        early = (_names(*exprs) & assigned) - defined
        if early:
            raise InternalError(f"{where}: {', '.join(sorted(early))} may be read before "
                                f"the iteration assigns it")
    for s in stmts:
        if isinstance(s, Assign):
            reads(s.value)
            defined.add(s.var.name)
        elif isinstance(s, Store):
            reads(s.index, s.value)
        elif isinstance(s, Memcpy):
            reads(s.dst_index, s.src_index, s.count)
        elif isinstance(s, (Raise, Call)):
            reads(*(s.values if isinstance(s, Raise) else s.args))
        elif isinstance(s, For):
            reads(s.start, s.stop)
            _flow(s.body, defined | {s.var.name}, assigned, where)
        elif isinstance(s, While):
            reads(s.cond)
            _flow(s.body, defined, assigned, where)
        elif isinstance(s, If):
            branches = []
            for cond, body in s.cases:
                reads(cond)
                branches.append(_flow(body, defined, assigned, where))
            branches.append(_flow(s.orelse, defined, assigned, where))
            defined = set.intersection(*branches)
        elif isinstance(s, Block):
            defined = _flow(s.body, defined, assigned, where)
    return defined


def _reads_outside(fn: Function, loop: For) -> set[str]:
    names: set[str] = set()
    for e in fn.returns:
        names |= _names(e)

    def visit(stmts):
        for s in stmts:
            if s is loop:
                continue
            if isinstance(s, Assign):
                names.update(_names(s.value))
            elif isinstance(s, Store):
                names.update(_names(s.index, s.value))
            elif isinstance(s, Memcpy):
                names.update(_names(s.dst_index, s.src_index, s.count))
            elif isinstance(s, Raise):
                names.update(_names(*s.values))
            elif isinstance(s, Call):
                names.update(_names(*s.args))
            elif isinstance(s, For):
                names.update(_names(s.start, s.stop))
                visit(s.body)
            elif isinstance(s, While):
                names.update(_names(s.cond))
                visit(s.body)
            elif isinstance(s, If):
                for cond, body in s.cases:
                    names.update(_names(cond))
                    visit(body)
                visit(s.orelse)
            elif isinstance(s, Block):
                visit(s.body)
    visit(fn.body)
    return names

"""Guards around sparsefold calls in the compute group: a plan probe before running, and an
address-space limit while running.

Today's compiler takes the *dense* strategy for most compute programs (issue #11): it
densifies its sparse inputs and would allocate rows × cols elements — 298 GiB on a
200000² input. The compiler is being rewritten, so the harness asks each kernel for its plan
instead of assuming one: ``probe`` reads ``plan.strategy`` of the kernel that
``sf.jit`` would run for these arguments (``JitFunction.program_for`` and
``sparsefold.jit.compile_program``; planning only — nothing is built), and ``densifies``
decides whether it is a dense plan over a sparse input whose dense arrays exceed
``DENSE_LIMIT`` elements. Such a program is reported as "densifies" and not run.

``memory_limit`` additionally lowers the process's address-space limit around each call, so
an allocation the probe did not foresee (a changed compiler, a plan it cannot read) fails with
``MemoryError`` — recorded as that call's error — instead of swapping or waking the OOM killer
on a shared machine.
"""

from __future__ import annotations

import contextlib
import math
from dataclasses import dataclass

__all__ = ["DENSE_LIMIT", "DENSE_WORK_LIMIT", "PlanInfo", "probe", "densifies",
           "memory_limit", "dense_elements"]

# 2**27 elements: 1 GiB of float64 — a dense temporary beyond this is not worth timing
DENSE_LIMIT = 2**27
# A dense contraction (A @ B densified) does out elements × inner extent multiply-adds in
# compiled code, which the per-call timeout (a signal) cannot interrupt: 2**28 is about a
# second (2**31 took over 10 s per call on the shared matrices).
DENSE_WORK_LIMIT = 2**28


@dataclass(frozen=True)
class PlanInfo:
    """What the compiler plans for one call: ``strategy`` as it names it ("stream",
    "merge", "dense", ...; None when it could not be read, ``note`` says why)."""

    strategy: str | None
    note: str = ""

    @property
    def is_dense(self) -> bool:
        return self.strategy is not None and self.strategy.lower() == "dense"


def _strategy_name(strategy) -> str:
    """A plan's strategy as text, whether it is a string or an enum (typed plans)."""
    for attr in ("value", "name"):
        inner = getattr(strategy, attr, None)
        if isinstance(inner, str):
            return inner
    return str(strategy)


def probe(jit_fn, args) -> PlanInfo:
    """The plan ``jit_fn(*args)`` would run, without building or running it."""
    try:
        kernel = jit_fn.kernel_for(*args)  # the trace and kernel a call runs
        # a staged kernel densifies if any stage does; its final stage names the strategy
        stages = [s for _, s in getattr(kernel, "stages", ())] + [getattr(kernel, "final",
                                                                       kernel)]
        names = [_strategy_name(getattr(s, "strategy", None) or s.plan.strategy)
                 for s in stages]
        return PlanInfo("dense" if "dense" in names else names[-1])
    except Exception as exc:  # a changed front end: the memory limit still guards the call
        return PlanInfo(None, f"plan unknown ({type(exc).__name__}: {exc})"[:200])


def _is_sparse(a) -> bool:
    return hasattr(a, "nnz")  # scipy and pydata sparse arrays; NumPy arrays have no nnz


def dense_elements(args, out_shape) -> int:
    """Elements a dense plan allocates: every sparse argument densified, plus the output."""
    total = math.prod(out_shape)
    for a in args:
        if _is_sparse(a):
            total += math.prod(a.shape)
    return total


def densifies(plan: PlanInfo, args, out_shape, limit: int = DENSE_LIMIT, inner: int = 1,
              work_limit: int = DENSE_WORK_LIMIT) -> str:
    """"" when the call may run; otherwise the reason it is not run. ``inner``: the
    contracted extent of a product (1 for element-wise programs)."""
    if not plan.is_dense or not any(_is_sparse(a) for a in args):
        return ""
    n = dense_elements(args, out_shape)
    if n > limit:
        return (f"plan 'dense' densifies sparse inputs: {n:.3g} elements "
                f"(~{n * 8 / 2**30:.3g} GiB as float64) > limit {limit:.3g}")
    work = math.prod(out_shape) * inner
    if work > work_limit:
        return (f"plan 'dense' contracts densely: {work:.3g} multiply-adds > limit "
                f"{work_limit:.3g}")
    return ""


def _meminfo(key: str) -> int | None:
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith(key + ":"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def _vm_size() -> int | None:
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmSize:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


@contextlib.contextmanager
def memory_limit(budget: int | None = None):
    """Allow the block at most ``budget`` bytes of new address space (default: three
    quarters of the machine's available memory, at most 16 GiB). No-op where the limit
    cannot be read or set (non-Linux)."""
    try:
        import resource
    except ImportError:
        yield
        return
    vm = _vm_size()
    if budget is None:
        avail = _meminfo("MemAvailable")
        budget = min(16 * 2**30, int(avail * 0.75)) if avail else 16 * 2**30
    if vm is None:
        yield
        return
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    limit = vm + budget
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    if soft != resource.RLIM_INFINITY and soft <= limit:
        yield  # already at least this strict
        return
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))

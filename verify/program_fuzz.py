"""``sparsefold fuzz --programs N``: random programs over the whole language, each compiled
and checked against the interpreter, in worker subprocesses (issue #27).

Programs come from :func:`verify.language.language_programs` (every public function,
operator, method and indexing form has a row; depth 1-5; csr, csc, coo — n-d too — dense,
pydata and filled inputs). :func:`generate` draws ``count`` distinct programs for a seed
(one Hypothesis run, derandomized by the seed; duplicates by source and inputs dropped) as
:class:`ProgramCase` records — the program's source, its inputs, the output format — which
pickle, so workers can run them and a failure can be replayed and printed as a test.

Each case is judged by :func:`check` on four properties:

* **agreement** — ``verify.differential``: the compiled result equals the interpreter's
  (values, dtype, container, canonical storage; the inputs left unchanged; invalid data
  rejected by both). A kernel that raises where the interpreter answers is a ``failure``;
  ``IllFormedProgram: not supported yet`` is counted apart (``unsupported``), listed, and
  so is a program the generator drew that its inputs make ill-formed (``ill-formed``: the
  generator's slip, e.g. joining pydata arrays of different fills);
* **no crash, no hang** — the driver (``verify.fuzz``'s) sees a worker die or stall;
* **no dense work** — the plan's stated cost (``Kernel.cost``) has no product of extents
  while its inputs and output are sparse (``dense-work``);
* **linear work** (``scale``) — the program is rebuilt over inputs whose every side of
  length >= 2 is multiplied by ``K`` and by ``4K`` (sides 0 and 1 kept, so the kernel is
  the same), with a fixed number of entries per row; its best-of-3 time may grow at most
  ``SCALE_SLACK`` times faster than its inputs' and output's stored sizes. A program
  whose parameters do not fit the larger inputs (a constant slice partner), or whose
  larger version would hold a dense array (or sparse inputs' entries) of over
  ``SCALE_MAX_ELEMENTS``, is not scaled
  (counted). A superlinear time is measured again before it counts.
"""

from __future__ import annotations

import math
import time
import traceback
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["ProgramCase", "generate", "check", "as_test", "scaled_inputs", "SCALE_SLACK",
           "SCALE_MAX_ELEMENTS", "OUTCOMES"]

OUTCOMES = ("correct", "unsupported", "ill-formed", "failure", "dense-work", "superlinear",
            "crash", "hang")
# what the compiler refuses by design, with IllFormedProgram (docs/guide.md, "Errors")
_REFUSALS = ("not supported yet", "scipy.sparse does not support float16")
SCALE_SLACK = 2.5            # time ratio allowed per stored-size ratio (log factors, noise)
SCALE_MIN_SECONDS = 1e-3     # a larger run faster than this is not judged (overheads)
SCALE_MAX_ELEMENTS = 1 << 22  # no dense array of the larger run holds more (4M: a
#                              rows x cols term is 16x the 4x of the entries already)
SCALE_ROW_ENTRIES = 4        # stored entries per row of a scaled sparse input


@dataclass
class ProgramCase:
    """One generated program: ``source`` (a lambda over ``sf`` and ``np``), its inputs, the
    output format (None: ``sf.jit``'s default) and the row names it applies."""

    index: int
    seed: int
    source: str
    out: str | None
    inputs: tuple
    rows: tuple[str, ...]

    def function(self):
        import sparsefold as sf
        return eval(self.source, {"sf": sf, "np": np})  # noqa: S307 - our own generated text

    def describe(self) -> dict:
        return {"index": self.index, "seed": self.seed, "mutation": "program",
                "group": "language", "program": self.source, "family": _family(self.rows),
                "format": ",".join(_brief(a) for a in self.inputs) or "-",
                "out": str(self.out)}


def _family(rows: tuple[str, ...]) -> str:
    return rows[-1] if rows else "?"


def _brief(a) -> str:
    from sparsefold.storage.describe import is_pydata_sparse, is_scipy_sparse
    if is_scipy_sparse(a):
        return f"{a.format}{a.ndim}"
    if is_pydata_sparse(a):
        return f"pydata{a.ndim}" + ("(fill)" if a.fill_value != 0 else "")
    return f"dense{np.ndim(a)}"


def _rows_of(term) -> tuple[str, ...]:
    out: list[str] = []

    def walk(t):
        for a in t.args:
            walk(a)
        if t.op != "input":
            out.append(t.op)
    walk(term)
    return tuple(out)


def generate(seed: int, count: int, *, max_depth: int = 5) -> list[ProgramCase]:
    """``count`` distinct programs (fewer if the generator runs dry), deterministically from
    ``seed``."""
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as hseed

    from sparsefold.verify.language import language_programs
    cases: list[ProgramCase] = []
    seen: set[str] = set()

    # Hypothesis's generate phase draws many near-copies of earlier examples (the same
    # program over other values, or into another output format): a case is new only when
    # its program or the storage of its inputs is, so ``count`` programs are ``count``
    # different things to compile (about half of the drawn examples were repeats when
    # values counted, and a third when output formats did)
    @hseed(seed)
    @settings(max_examples=max(10, 8 * count), database=None, phases=[Phase.generate],
              deadline=None, suppress_health_check=list(HealthCheck))
    @given(language_programs(max_depth=max_depth))
    def collect(p):
        if len(cases) >= count:
            return
        key = p.source + "|" + "|".join(_brief(a) for a in p.inputs)
        if key in seen:
            return
        seen.add(key)
        cases.append(ProgramCase(len(cases), seed, p.source, p.out, tuple(p.inputs),
                                 _rows_of(p.root)))
    collect()
    return cases


# --- judging one case ---------------------------------------------------------------------

def check(case: ProgramCase, *, scale: bool = True) -> tuple[str, str, dict]:
    """``(outcome, detail, info)`` of one case (see the module docstring)."""
    import sparsefold as sf
    from sparsefold.spec.errors import IllFormedProgram, SparsefoldError
    from sparsefold.verify.differential import DifferentialError, differential
    fn = case.function()
    try:  # built and interpreted first: a program its inputs make ill-formed was drawn
        lazy = fn(*(a if np.ndim(a) == 0 and not hasattr(a, "nnz") and np.isscalar(a)
                    else sf.asarray(a) for a in case.inputs))
        lazy.interpret()
    except IllFormedProgram as exc:
        return "ill-formed", str(exc).splitlines()[0], {}
    except SparsefoldError:
        pass  # (invalid data: the differential check requires the kernel to reject it too)
    try:
        differential(fn, *case.inputs, out=case.out)
    except DifferentialError as exc:
        text = str(exc)
        first = text.splitlines()[0]
        if "compiled kernel raised IllFormedProgram" in first and any(
                why in first for why in _REFUSALS):
            return "unsupported", first, {}  # a documented refusal of the compiler
        return "failure", text, {}
    except IllFormedProgram as exc:
        text = str(exc)
        if "not supported yet" in text:
            return "unsupported", text.splitlines()[0], {}
        return "failure", f"IllFormedProgram from a program the generator built: {text}", {}
    info: dict[str, Any] = {}
    jf = sf.jit(fn, out=case.out)
    cost = _cost(jf, case.inputs)
    if cost is not None:
        info["cost"] = cost[0]
        if cost[1]:
            return "dense-work", f"the plan's cost bound {cost[0]} has a product of " \
                                 f"extents with sparse inputs and output", info
    if scale:
        verdict = scale_check(fn, case.inputs, case.out)
        info.update(verdict)
        if verdict.get("superlinear"):
            return "superlinear", verdict["detail"], info
    return "correct", "", info


def _cost(jf, inputs) -> tuple[str, bool] | None:
    """The compiled kernel's stated cost and whether it is dense work (None when the
    program has no kernel of its own, e.g. a result the interpreter gives)."""
    try:
        kernel = jf.kernel_for(*inputs)
    except Exception:  # noqa: BLE001 - the differential check already ran the call
        return None
    cost = getattr(kernel, "cost", None)
    if cost is None:
        return None
    return str(cost), bool(cost.dense_work)


# --- scale ----------------------------------------------------------------------------------

def _scaled_shape(shape: tuple[int, ...], k: int) -> tuple[int, ...]:
    return tuple(n * k if n >= 2 else n for n in shape)


def scaled_inputs(inputs: tuple, k: int, seed: int = 0, *, empty: bool = False) -> tuple:
    """Inputs of the same kinds (format, dtype, index dtype, fill) whose every side of
    length >= 2 is ``k`` times longer; sparse ones with :data:`SCALE_ROW_ENTRIES` stored
    entries per row (random positions, small nonzero values), dense ones random. With
    ``empty``, no memory: sparse inputs store nothing and dense ones are a broadcast zero
    (for the shapes a program takes on them)."""
    from sparsefold.storage.describe import is_pydata_sparse, is_scipy_sparse
    rng = np.random.default_rng(seed)
    out = []
    for a in inputs:
        shape = _scaled_shape(tuple(np.shape(a)), k)
        dtype = np.dtype(a.dtype)
        if not (is_scipy_sparse(a) or is_pydata_sparse(a)):
            out.append(np.broadcast_to(np.zeros((), dtype), shape) if empty else
                       _values(rng, math.prod(shape), dtype).reshape(shape))
            continue
        size = math.prod(shape)
        rows = math.prod(shape[:-1]) if len(shape) > 1 else 1
        nnz = 0 if empty else min(size, SCALE_ROW_ENTRIES * rows)
        flat = np.unique(rng.integers(0, size, nnz, dtype=np.int64)) if size else \
            np.zeros(0, np.int64)
        coords = np.unravel_index(flat, shape) if shape else ()
        vals = _values(rng, len(flat), dtype, nonzero=True)
        if is_pydata_sparse(a):
            import sparse
            out.append(sparse.COO(np.stack(coords) if shape else np.zeros((0, len(flat))),
                                  vals, shape=shape, fill_value=a.fill_value,
                                  has_duplicates=False, sorted=True))
            continue
        import scipy.sparse as sp
        b = sp.coo_array((vals, coords), shape=shape).asformat(a.format)
        ix = a.coords[0].dtype if a.format == "coo" else a.indices.dtype
        if a.format == "coo":
            b.coords = tuple(c.astype(ix) for c in b.coords)
        else:
            b.indices, b.indptr = b.indices.astype(ix), b.indptr.astype(ix)
        out.append(b)
    return tuple(out)


def _values(rng, n: int, dtype: np.dtype, nonzero: bool = False) -> np.ndarray:
    if dtype.kind == "b":
        return np.ones(n, bool) if nonzero else rng.integers(0, 2, n).astype(bool)
    v = rng.integers(1, 5, n) * rng.choice([-1, 1], n) if nonzero else rng.integers(-4, 5, n)
    if dtype.kind == "u":
        v = np.abs(v)
    return v.astype(dtype)


def _stored(x) -> int:
    from sparsefold.storage.describe import is_pydata_sparse, is_scipy_sparse
    if is_scipy_sparse(x) or is_pydata_sparse(x):
        return int(x.nnz)
    return int(np.size(x))


def _best(f, args, repeat: int = 3) -> tuple[float, Any]:
    out = f(*args)  # the kernel compiled and warm
    best = math.inf
    for _ in range(repeat):
        t = time.perf_counter()
        out = f(*args)
        best = min(best, time.perf_counter() - t)
    return best, out


def scale_check(fn, inputs: tuple, out: str | None) -> dict:
    """Time ``fn`` at two scales 4x apart (see the module docstring)."""
    import sparsefold as sf
    from sparsefold.spec.errors import SparsefoldError
    big = 1024
    while big >= 16:
        try:
            shapes = scaled_inputs(inputs, big, empty=True)
            lazy = fn(*(sf.asarray(a) for a in shapes))
        except SparsefoldError:
            return {"scaled": "no: the program does not fit larger inputs"}
        except (ValueError, TypeError, IndexError) as exc:
            return {"scaled": f"no: {type(exc).__name__} on larger inputs"}
        dense = [np.size(a) for a in shapes if isinstance(a, np.ndarray)]
        # and the sparse inputs' entries (a 3-d input x1024 has 10^7 rows of entries)
        stored = [SCALE_ROW_ENTRIES * math.prod(np.shape(a)[:-1]) for a in shapes
                  if not isinstance(a, np.ndarray) and np.ndim(a) > 1]
        if max([math.prod(lazy.shape), *dense, *stored], default=0) <= SCALE_MAX_ELEMENTS:
            break
        big //= 2
    if big < 16:
        return {"scaled": "no: too large at any scale"}
    hi = scaled_inputs(inputs, big, seed=1)
    lo = scaled_inputs(inputs, big // 4, seed=2)
    jf = sf.jit(fn, out=out)
    try:
        t_lo, r_lo = _best(jf, lo)
        t_hi, r_hi = _best(jf, hi)
    except SparsefoldError as exc:  # e.g. a precondition the larger sizes break
        return {"scaled": f"no: {type(exc).__name__}: {str(exc).splitlines()[0][:120]}"}
    s_lo = sum(_stored(a) for a in lo) + _stored(r_lo) + 1
    s_hi = sum(_stored(a) for a in hi) + _stored(r_hi) + 1
    info = {"scaled": f"x{big // 4} -> x{big}", "seconds": (t_lo, t_hi),
            "stored": (s_lo, s_hi)}
    for attempt in range(3):
        ratio, size_ratio = t_hi / max(t_lo, 1e-7), s_hi / s_lo
        if t_hi < SCALE_MIN_SECONDS or ratio <= SCALE_SLACK * size_ratio:
            return info
        if attempt < 2:  # measured again (a busy machine), both sides
            t_lo, _ = _best(jf, lo)
            t_hi, _ = _best(jf, hi)
            info["seconds"] = (t_lo, t_hi)
    info["superlinear"] = True
    info["detail"] = (f"time grew {ratio:.1f}x while stored sizes grew {size_ratio:.1f}x "
                      f"({t_lo * 1e3:.2f} -> {t_hi * 1e3:.2f} ms; inputs "
                      f"{[tuple(np.shape(a)) for a in lo]} -> "
                      f"{[tuple(np.shape(a)) for a in hi]})")
    return info


def run_case(case: ProgramCase, scale: bool = True):
    """The case judged, as a ``fuzz_cases.CaseResult``."""
    from sparsefold.verify.fuzz_cases import CaseResult
    desc = case.describe()
    try:
        with np.errstate(all="ignore"):
            outcome, detail, info = check(case, scale=scale)
    except Exception as exc:  # noqa: BLE001 - a harness error is a failure too
        outcome, detail, info = "failure", "harness error: " + "".join(
            traceback.format_exception(exc)[-4:]), {}
    if outcome == "failure":
        detail = detail + "\n" + as_test(case)
    return CaseResult.of(dict(desc, **{"scale": info.get("scaled", "")}), outcome, detail)


# --- replay -----------------------------------------------------------------------------

def _code(a) -> str:
    """Python source building ``a`` (scipy, pydata or NumPy)."""
    from sparsefold.storage.describe import is_pydata_sparse, is_scipy_sparse
    if is_pydata_sparse(a):
        return (f"sparse.COO(np.array({a.coords.tolist()}, dtype=np.int64).reshape("
                f"{a.coords.shape}), np.array({a.data.tolist()}, dtype={str(a.dtype)!r}), "
                f"shape={a.shape}, fill_value={a.fill_value.item()!r})")
    if is_scipy_sparse(a):
        if a.format == "coo":
            coords = ", ".join(f"np.array({c.tolist()}, dtype={str(c.dtype)!r})"
                               for c in a.coords)
            return (f"sp.coo_array((np.array({a.data.tolist()}, dtype={str(a.dtype)!r}), "
                    f"({coords},)), shape={a.shape})")
        cls = f"sp.{a.format}_array"
        return (f"{cls}((np.array({a.data.tolist()}, dtype={str(a.dtype)!r}), "
                f"np.array({a.indices.tolist()}, dtype={str(a.indices.dtype)!r}), "
                f"np.array({a.indptr.tolist()}, dtype={str(a.indptr.dtype)!r})), "
                f"shape={a.shape})")
    arr = np.asarray(a)
    return f"np.array({arr.tolist()!r}, dtype={str(arr.dtype)!r}).reshape({arr.shape})"


def as_test(case: ProgramCase) -> str:
    """A regression test reproducing the case."""
    args = ",\n        ".join(_code(a) for a in case.inputs)
    return (f"def test_program_{case.seed}_{case.index}():\n"
            f"    import numpy as np, scipy.sparse as sp, sparse\n"
            f"    import sparsefold as sf\n"
            f"    from sparsefold import verify\n"
            f"    verify.differential({case.source}, \n        {args},\n"
            f"        out={case.out!r})\n")


def summary(report, args=None) -> str:
    """The run's tables (outcome by last row, by input kinds, by output), each failure with
    its program, detail and replay command, the unsupported programs, the scale check's
    coverage; then ``N passed, N failed``."""
    from collections import Counter

    from sparsefold.verify.fuzz import FAILING
    results = report.results
    lines = [f"sparsefold fuzz --programs: seed {report.seed}, {len(results)} of "
             f"{report.iterations} programs, {report.jobs} worker(s), {report.seconds:.1f} s,"
             f" {report.restarts} restart(s)"]
    outcomes = Counter(r.outcome for r in results)
    lines.append("outcomes: " + ", ".join(f"{k} {v}" for k, v in sorted(outcomes.items())))
    scaled = Counter("scaled" if (r.info.get("scale") or "").startswith("x") else
                     (r.info.get("scale") or "not run").split(":")[0]
                     for r in results if r.outcome in ("correct", "superlinear"))
    lines.append("scale check: " + ", ".join(f"{k} {v}" for k, v in sorted(scaled.items())))
    rows = Counter(r.family for r in results)
    lines.append(f"rows applied last: {len(rows)} distinct")
    for r in results:
        if r.outcome in FAILING:
            lines.append(f"\n{r.outcome.upper()} program {r.index} (seed {r.seed}): "
                         f"{r.program}  [{r.format} -> {r.out}]\n  "
                         + r.detail.strip().replace("\n", "\n  ")
                         + f"\n  replay: sparsefold fuzz --programs {report.iterations} "
                           f"--seed {r.seed} --replay {r.seed}:{r.index}")
    unsupported = [r for r in results if r.outcome == "unsupported"]
    if unsupported:
        lines.append(f"\nunsupported ({len(unsupported)}):")
        reasons = Counter(r.detail.split(";")[0][:140] for r in unsupported)
        lines += [f"  {n} x {why}" for why, n in reasons.most_common(20)]
    failed = sum(1 for r in results if r.outcome in FAILING)
    lines.append(f"\n{len(results) - failed} passed, {failed} failed")
    return "\n".join(lines)

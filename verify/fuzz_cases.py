"""The fuzzer's catalogue of programs and its cases (``sparsefold.verify.fuzz``).

:func:`programs` covers every kernel family — shape operators (transpose, collapse, split,
concat on either axis, strided slice, pad, broadcast, expand, squeeze), maps (sparse and
dense-valued), merges (union and intersection), reductions (sum, max), contractions
(matmul, matvec, dot) and a fused chain — on 2-d and 1-d inputs. :func:`make_case` builds
case ``(seed, index)`` deterministically: a configuration (program, input format, output
format), a mutation from ``fuzz_mutations.MUTATIONS``, valid partners, and the reference
result (the interpreter on the mutated input's meaning). :func:`run_case` calls the compiled
program and judges the outcome. Cases run in the calling process: the crash-safe way is
``fuzz.run``, which runs them in worker subprocesses.
"""

from __future__ import annotations

import json
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from sparsefold.verify.fuzz_mutations import (
    FORMATS,
    MUTATIONS,
    Expect,
    Mutation,
    build_input,
    meaning,
    storage,
)

__all__ = ["Program", "programs", "configurations", "Case", "CaseResult", "make_case",
           "run_case", "replay", "OUTS"]

OUTS = ("csr", "csc", "coo", "dense")


# --- programs: one or more per kernel family -------------------------------------------------

@dataclass(frozen=True)
class Program:
    """A program of the catalogue: ``fn`` over the mutated input (argument ``target``) and
    valid partners. ``partners`` name the extra arguments' kinds (see ``_partner_shape``);
    ``one_row`` programs take a ``(1, n)`` input (squeeze, broadcast)."""

    name: str
    family: str
    rank: int
    fn: Callable
    partners: tuple[str, ...] = ()
    outs: tuple[str, ...] = OUTS
    one_row: bool = False


def _programs() -> tuple[Program, ...]:
    import sparsefold as sf
    P = Program
    return (
        P("transpose", "shape", 2, lambda a: a.T),
        P("collapse", "shape", 2, lambda a: a.reshape(-1)),
        P("collapse_split", "shape", 2, lambda a: a.reshape(a.shape[-1], a.shape[0])),
        P("concat0", "shape", 2, lambda a, b: sf.concat([a, b], axis=0), ("rows",)),
        P("concat1", "shape", 2, lambda a, b: sf.concat([a, b], axis=1), ("cols",)),
        P("slice", "shape", 2, lambda a: a[1::2, ::2]),
        P("pad", "shape", 2, lambda a: sf.pad(a, 1)),
        P("broadcast", "shape", 2, lambda a: sf.broadcast_to(a, (3, a.shape[-1])),
          one_row=True),
        P("expand", "shape", 2, lambda a: sf.expand_dims(a, axis=1), outs=("coo", "dense")),
        P("squeeze", "shape", 2, lambda a: sf.squeeze(a, axis=0), one_row=True),
        P("scale", "map", 2, lambda a: a * 3),
        P("plus1", "map", 2, lambda a: a + 1),
        P("times_dense", "map", 2, lambda a, d: a * d, ("dense",)),
        P("add", "merge", 2, lambda a, b: a + b, ("same",)),
        P("multiply", "merge", 2, lambda a, b: a * b, ("same",)),
        P("sum1", "reduction", 2, lambda a: sf.sum(a, axis=1)),
        P("max0", "reduction", 2, lambda a: sf.max(a, axis=0)),
        P("sum_all", "reduction", 2, lambda a: sf.sum(a), outs=("dense",)),
        P("matmul", "contraction", 2, lambda a, d: a @ d, ("dense_right",)),
        P("matvec", "contraction", 2, lambda a, x: a @ x, ("dense_vec",)),
        P("fused", "fused", 2, lambda a, b: (sf.concat([a, b], axis=0)[::2] * 2).reshape(-1),
          ("rows",)),
        P("v_slice", "shape", 1, lambda v: v[1::2]),
        P("v_concat", "shape", 1, lambda v, w: sf.concat([v, w]), ("rows",)),
        P("v_pad", "shape", 1, lambda v: sf.pad(v, 2)),
        P("v_broadcast", "shape", 1, lambda v: sf.broadcast_to(v, (3, v.shape[-1]))),
        P("v_split", "shape", 1, lambda v: sf.expand_dims(v, axis=0).reshape(v.shape[0], 1)),
        P("v_scale", "map", 1, lambda v: v * 3),
        P("v_add", "merge", 1, lambda v, w: v + w, ("same",)),
        P("v_sum", "reduction", 1, lambda v: sf.sum(v), outs=("dense",)),
        P("v_dot", "contraction", 1, lambda v, x: v @ x, ("dense",), outs=("dense",)),
    )


_PROGRAMS: tuple[Program, ...] | None = None


def programs() -> tuple[Program, ...]:
    """The catalogue (built on first use: it needs the front end)."""
    global _PROGRAMS
    if _PROGRAMS is None:
        _PROGRAMS = _programs()
    return _PROGRAMS


def configurations(full: bool) -> list[tuple[Program, str, str]]:
    """(program, input format, output format) triples. ``full``: the whole cross product;
    otherwise the *core* set — each program once, formats and outputs rotated so that every
    format and every output occurs — whose kernels a bounded CI run can afford to build."""
    out = []
    for k, p in enumerate(programs()):
        fmts = FORMATS[p.rank]
        if full:
            out += [(p, f, o) for f in fmts for o in p.outs]
        else:
            out.append((p, fmts[k % len(fmts)], p.outs[k % len(p.outs)]))
    return out


# --- cases ----------------------------------------------------------------------------------

@dataclass
class Case:
    """One deterministic fuzz case: a program, its arguments (one of them mutated) and what
    is acceptable. ``reference`` is the expected dense result (None for ``invalid``)."""

    seed: int
    index: int
    program: Program
    fmt: str
    out: str
    mutation: Mutation
    args: list
    target: int
    expect: Expect
    reference: np.ndarray | None = None
    dropped: int = 0

    def describe(self) -> dict[str, Any]:
        a = self.args[self.target]
        return {"index": self.index, "seed": self.seed, "mutation": self.mutation.name,
                "group": self.mutation.group, "program": self.program.name,
                "family": self.program.family, "format": self.fmt, "out": self.out,
                "expect": self.expect.kind, "target": self.target,
                "shape": [int(n) for n in a.shape], "dtype": str(a.dtype)}


def _values(rng, n: int, dtype: np.dtype) -> np.ndarray:
    """Small nonzero integer values: sums and products stay exact in every dtype."""
    if dtype == np.bool_:
        return np.ones(n, dtype=bool)
    v = rng.integers(1, 8, size=n) * rng.choice([-1, 1], size=n)
    return v.astype(dtype)


def _random_dense(rng, shape: tuple, dtype: np.dtype, min_nnz: int = 3) -> np.ndarray:
    size = int(np.prod(shape))
    nnz = int(rng.integers(min(min_nnz, size), size + 1))
    flat = np.zeros(size, dtype=dtype)
    flat[rng.choice(size, size=nnz, replace=False)] = _values(rng, nnz, dtype)
    return flat.reshape(shape)


def _partner_shape(kind: str, shape: tuple, extra: tuple[int, int], bad: bool) -> tuple:
    """The shape of a partner argument (``bad``: one that does not fit)."""
    r, c = (shape + (0,))[:2] if len(shape) == 2 else (shape[0], 0)
    b = int(bad)
    if kind in ("same", "dense"):
        return shape[:-1] + (shape[-1] + b,)
    if kind == "rows":
        return (extra[0],) + ((c + b,) if len(shape) == 2 else ())
    if kind == "cols":
        return (r + b, extra[0])
    if kind == "dense_right":
        return (c + b, extra[1])
    return (c + b,)  # dense_vec


def _usable(program: Program, fmt: str, only: tuple[str, ...] | None) -> list[Mutation]:
    return [m for m in MUTATIONS if m.formats(fmt) and (program.partners or not m.needs_partner)
            and not (m.name == "operand_shape_mismatch" and program.name == "v_concat")
            and (only is None or m.name in only)]


def _fits(config, mutations, formats, names) -> bool:
    program, fmt, _ = config
    return ((formats is None or fmt in formats) and (names is None or program.name in names)
            and bool(_usable(program, fmt, mutations)))


def make_case(seed: int, index: int, full: bool = False, *,
              mutations: tuple[str, ...] | None = None, formats: tuple[str, ...] | None = None,
              programs: tuple[str, ...] | None = None) -> Case:
    """Case ``index`` of the run with ``seed``. ``full``: a random configuration of all,
    random dtypes and index widths. Otherwise (core) configuration ``index`` modulo their
    number, float64 values and native index widths, and the mutations cycled so that a few
    hundred cases try each one several times. ``mutations`` / ``formats`` / ``programs``
    restrict the cases to those names (a targeted run; core configurations if any fit,
    else all)."""
    import sparsefold as sf
    rng = np.random.default_rng([seed, index])
    only = (mutations, formats, programs)
    configs = [c for c in configurations(full) if _fits(c, *only)] or \
        [c for c in configurations(True) if _fits(c, *only)]
    if not configs:
        raise ValueError(f"no configuration fits mutations={mutations} formats={formats} "
                         f"programs={programs}")
    k = index % len(configs)
    program, fmt, out = configs[int(rng.integers(len(configs))) if full else k]
    usable = _usable(program, fmt, mutations)
    turn = index // len(configs) + 7 * k  # each configuration starts at another mutation
    mutation = usable[int(rng.integers(len(usable))) if full else turn % len(usable)]
    dtype = np.dtype(rng.choice(["float64", "float64", "int64", "float32"]) if full
                     else "float64")
    index_dtype = str(rng.choice(["int32", "int64"])) if full else "int32"
    sizes = [int(n) for n in rng.choice(np.arange(3, 12), size=4, replace=False)]
    shape = (1, sizes[1]) if program.one_row else tuple(sizes[:program.rank])
    bad = mutation.name == "operand_shape_mismatch"
    shapes = [shape] + [_partner_shape(k, shape, (sizes[2], sizes[3]), bad)
                        for k in program.partners]
    kinds = ["self"] + list(program.partners)
    dense = [_random_dense(rng, s, dtype) for s in shapes]
    sparse_at = [p for p, k in enumerate(kinds) if not k.startswith("dense")]
    target = int(rng.choice(sparse_at)) if not bad else 0
    if target:  # the mutated operand is the second: swap shapes so the program still fits
        dense[0], dense[target] = dense[target], dense[0]
    args = [d if k.startswith("dense") else build_input(d, fmt, index_dtype)
            for d, k in zip(dense, kinds)]
    expect = mutation.apply(rng, args[target], fmt)
    case = Case(seed, index, program, fmt, out, mutation, args, target, expect)
    if expect.kind != "invalid":
        a = args[target]
        ref_in, case.dropped = meaning(storage(a, fmt), fmt, tuple(a.shape), dtype,
                                       getattr(a, "fill_value", 0))
        lazies = [sf.asarray(ref_in if p == target else d) for p, d in enumerate(dense)]
        with np.errstate(all="ignore"):
            case.reference = np.asarray(program.fn(*lazies).interpret())
    return case


# --- running a case -------------------------------------------------------------------------

@dataclass
class CaseResult:
    """The outcome of one case: one of :data:`OUTCOMES`, with a detail line."""

    index: int
    seed: int
    mutation: str
    group: str
    program: str
    family: str
    format: str
    out: str
    outcome: str
    detail: str = ""
    info: dict = field(default_factory=dict)

    @classmethod
    def of(cls, desc: dict, outcome: str, detail: str = "") -> CaseResult:
        keys = ("index", "seed", "mutation", "group", "program", "family", "format", "out")
        return cls(*(desc[k] for k in keys), outcome=outcome, detail=detail, info=desc)


_JITS: dict[tuple[str, str], Any] = {}


def _snapshot(a) -> list[np.ndarray]:
    if isinstance(a, np.ndarray):
        return [a.copy()]
    arr = storage(a, "csr" if hasattr(a, "indptr") else "coo")
    return [np.array(x, copy=True) for k in sorted(arr) for x in
            (arr[k] if k == "coords" else [arr[k]])]


def _storage_kind(got) -> str | None:
    from sparsefold.storage.describe import is_pydata_sparse
    if isinstance(got, np.ndarray):
        return None
    if is_pydata_sparse(got):
        if type(got).__name__ == "GCXS":
            return "csc" if tuple(got.compressed_axes) == (1,) else "csr"
        return "coo"
    return got.format


def _dense_of(got) -> np.ndarray:
    if isinstance(got, np.ndarray):
        return got
    return np.asarray(got.todense() if hasattr(got, "fill_value") else got.toarray())


def _result_problems(case: Case, got, canonical: bool) -> tuple[list[str], bool]:
    """(storage/shape/dtype problems, whether the values equal the reference)."""
    from sparsefold.verify.differential import storage_problems, tolerance
    ref = case.reference
    dense_wanted = case.out == "dense" or ref.ndim == 0
    if isinstance(got, np.ndarray) != dense_wanted:
        return [f"result is a {type(got).__name__} for out={case.out!r}"], False
    if tuple(got.shape) != ref.shape or np.dtype(got.dtype) != ref.dtype:
        return [f"result {tuple(got.shape)} {got.dtype}, expected {ref.shape} {ref.dtype}"], \
            False
    problems = storage_problems(got, _storage_kind(got), canonical=canonical)
    if problems:
        return problems, False
    val = _dense_of(got)
    tol = tolerance(ref.dtype)
    if tol is None:
        return [], bool(np.array_equal(val, ref))
    return [], bool(np.allclose(val, ref, rtol=tol[0], atol=tol[1] * max(1.0, np.abs(
        ref[np.isfinite(ref)]).max(initial=0)), equal_nan=True))


def run_case(case: Case) -> CaseResult:
    """Call the compiled program on the case's arguments and judge what came back."""
    import warnings

    import sparsefold as sf
    desc = case.describe()
    key = (case.program.name, case.out)
    jf = _JITS.get(key) or _JITS.setdefault(key, sf.jit(case.program.fn, out=case.out,
                                                               wait=True))
    before = [_snapshot(a) for a in case.args]
    exp = case.expect
    try:
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            got = jf(*case.args)
    except (sf.InvalidData, sf.IllFormedProgram) as exc:
        name, msg = type(exc).__name__, str(exc)
        if exp.kind == "valid":
            return CaseResult.of(desc, "failure", f"rejected valid data: {name}: {msg}")
        if name not in exp.errors or not any(p in msg for p in exp.pieces):
            return CaseResult.of(desc, "failure", f"{name}: {msg!r} (expected "
                                 f"{'/'.join(exp.errors)} naming one of {exp.pieces})")
        outcome, detail = "error", f"{name}: {msg}"
    except Exception as exc:  # noqa: BLE001 - any other exception is the finding
        tb = "".join(traceback.format_exception(exc)[-4:])
        return CaseResult.of(desc, "failure", f"raised {type(exc).__name__}: {exc}\n{tb}")
    else:
        if exp.kind == "invalid":
            return CaseResult.of(desc, "failure", "returned a result for invalid data")
        problems, equal = _result_problems(case, got, canonical=exp.kind != "trusted")
        if problems:
            return CaseResult.of(desc, "failure", "; ".join(problems))
        if not equal and exp.kind != "trusted":
            what = "with the unread bad entries dropped" if case.dropped else ""
            return CaseResult.of(desc, "failure", f"wrong values: differ from the "
                                 f"interpreter on the input's meaning {what}".strip())
        outcome = {"either": "unread" if case.dropped else "correct",
                   "trusted": "correct" if equal else "trusted"}.get(exp.kind, "correct")
        detail = "" if equal else "values differ (stale flag trusted)"
    after = [_snapshot(a) for a in case.args]
    for p, (x, y) in enumerate(zip(before, after)):
        if len(x) != len(y) or not all(np.array_equal(u, v) for u, v in zip(x, y)):
            return CaseResult.of(desc, "failure", f"argument {p} was modified")
    return CaseResult.of(desc, outcome, detail)


def replay(seed: int, index: int, full: bool = False, *, verbose: bool = True,
           **only) -> CaseResult:
    """Case ``(seed, index)`` in this process (no crash protection), printed if
    ``verbose``: the way to debug a case the fuzzer reported (``only``: the run's
    ``mutations`` / ``formats`` / ``programs`` restriction)."""
    case = make_case(seed, index, full, **only)
    if verbose:
        print(json.dumps(case.describe()))
        print(f"target argument: {case.args[case.target]!r}")
    result = run_case(case)
    if verbose:
        print(f"outcome: {result.outcome} {result.detail}")
    return result


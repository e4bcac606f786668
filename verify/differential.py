"""Differential testing as a library (DESIGN §4): a compiled kernel against the interpreter.

    from sparsefold import verify
    verify.differential(fn, A, B, out="csr")                  # concrete arrays: checks once
    verify.differential(fn, sparse_arrays((3, 4), "csc"))     # strategies: a Hypothesis test

For each set of inputs, :func:`differential` computes

* **interpreted** — ``fn(*map(sf.asarray, inputs)).interpret()``, the dense reference, and
* **compiled** — ``sf.jit(fn, out=out)(*inputs)``,

and requires, beyond equal values (floats: ``allclose`` with ``equal_nan``, a tolerance for
reassociated sums; ints and bools: exact), that the compiled result is **well-formed
storage of the requested kind**: the container the documented ``out`` rule names, the
interpreter's shape and dtype, and for a sparse result canonical storage — consistent
lengths, ``indptr`` starting at 0 and non-decreasing, coordinates in range, sorted in storage
order with no duplicates (what the format's unique/ordered levels
forbid). Storage is checked before the result is densified, so broken storage is reported,
not read. The kernel must also leave its inputs' arrays unchanged. When the interpreter
rejects the data (:class:`InvalidData`), the kernel must reject it too.

The result containers are the rules of ``sparsefold.storage.results`` (a table by ``out``
and rank there), which every engine follows.

A failure raises :class:`DifferentialError` (an ``AssertionError``) whose message shows the
program as compiled, the inputs, both results and what differs. Hypothesis (a test
dependency) is imported only when a strategy is given.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from sparsefold.spec.errors import InvalidData
from sparsefold.storage.describe import is_pydata_sparse, is_scipy_sparse
from sparsefold.storage.results import result_container

__all__ = ["differential", "DifferentialError", "storage_problems", "tolerance"]

# rtol per float dtype: reassociating a sum of n terms changes it by up to ~n*eps*sum|x|;
# these allow ~1e5 terms for float64 and ~1e3 for float32 (user-overridable).
_RTOL = {np.dtype("float16"): 1e-2, np.dtype("float32"): 1e-4, np.dtype("float64"): 1e-9,
         np.dtype("complex64"): 1e-4, np.dtype("complex128"): 1e-9}


class DifferentialError(AssertionError):
    """Compiled and interpreted results disagree (values, storage, type, or errors)."""


def tolerance(dtype: Any) -> tuple[float, float] | None:
    """``(rtol, atol)`` used for results of ``dtype``; ``None`` means exact. ``atol`` is
    scaled by the largest finite magnitude involved — ``max(1, |inputs|, |interpreted|)`` —
    because a reassociated sum with cancellation errs relative to its terms, not to its
    result."""
    dt = np.dtype(dtype)
    if dt.kind not in "fc":
        return None
    r = _RTOL.get(dt, 1e-9)
    return r, r


def differential(fn: Callable, *args: Any, out: Any = None, settings: Any = None,
                 rtol: float | None = None, atol: float | None = None,
                 time_limit: float | None = None) -> None:
    """Check that ``sf.jit(fn, out=out)`` agrees with the interpreter on ``args``.

    ``args`` are the inputs of ``fn``: NumPy / scipy.sparse / pydata arrays or Python
    scalars (checked once), or Hypothesis strategies of them (then a Hypothesis test runs
    here, with the active settings profile and ``deadline=None`` unless ``settings`` is
    given; concrete arguments may be mixed in). ``out``: an output format name, ``None``
    (``sf.jit``'s default), a list of names (each is checked), or a strategy of names.
    ``rtol``/``atol`` override :func:`tolerance` for floating results. ``time_limit``
    (seconds): each compiled call runs in a child process and one that runs longer is
    stopped and reported as a failure with its inputs (``verify.limited``; building a
    kernel does not count); ``None`` runs it in this process, unlimited.

    Several operands of one (drawn) shape: pass strategies built on one
    ``verify.strategies.shared_shape(...)``. Hypothesis' ``deadline`` is off (a first call
    compiles a kernel) unless ``settings`` sets one other than the profile's.

    Do not call it with strategies from inside a ``@given`` test (Hypothesis forbids nested
    tests); draw the inputs there and pass them concretely. Raises
    :class:`DifferentialError` on a disagreement; an ill-formed ``fn`` raises
    ``IllFormedProgram`` as when it is called directly.
    """
    if not callable(fn):
        raise TypeError(f"differential: fn must be callable, found {type(fn).__name__}")
    if time_limit is not None and not time_limit > 0:
        raise ValueError(f"differential: time_limit must be a positive number of seconds, "
                         f"found {time_limit!r}")
    checker = _Checker(fn, rtol, atol, time_limit)
    if any(_is_strategy(a) for a in args) or _is_strategy(out):
        _run_hypothesis(checker, args, out, settings)
    else:
        checker.check_all(args, out)


def _is_strategy(x: Any) -> bool:
    try:
        from hypothesis.strategies import SearchStrategy
    except ImportError:  # pragma: no cover - without hypothesis nothing is a strategy
        return False
    return isinstance(x, SearchStrategy)


def _run_hypothesis(checker: _Checker, args: Sequence, out: Any, test_settings: Any) -> None:
    from hypothesis import given
    from hypothesis import settings as hsettings
    from hypothesis import strategies as st

    inputs = st.tuples(*(a if _is_strategy(a) else st.just(a) for a in args))
    outs = out if _is_strategy(out) else st.just(out)

    def differential_test(inputs, out):
        checker.check_all(inputs, out)

    # Hypothesis derives the derandomized seed and the example-database key from the test
    # function's source, identical for every caller: add the user function's identity
    differential_test._hypothesis_internal_add_digest = _digest(checker.fn)
    test = given(inputs, outs)(differential_test)
    # a new program structure compiles a kernel (~1 s): the default 200 ms deadline would
    # report every first call as a failure — off, unless the caller's settings chose one
    if test_settings is None:
        test_settings = hsettings(deadline=None)
    elif test_settings.deadline == hsettings.default.deadline:
        test_settings = hsettings(test_settings, deadline=None)
    test = test_settings(test)
    test()


def _digest(fn: Callable) -> bytes:
    import inspect
    h = hashlib.sha256(f"{getattr(fn, '__module__', '')}.{_name(fn)}".encode())
    try:
        h.update(inspect.getsource(fn).encode())
    except (OSError, TypeError):
        h.update(repr(fn).encode())
    return h.digest()


def _name(fn: Callable) -> str:
    return getattr(fn, "__qualname__", None) or type(fn).__name__


def _scalar(v: Any) -> str:
    return repr(v.item() if isinstance(v, np.generic) else v)


def _is_scalar(a: Any) -> bool:
    return isinstance(a, (bool, int, float, complex, np.generic))


class _Checker:
    """One differential test: ``fn``, its jitted versions per ``out``, the tolerances."""

    def __init__(self, fn: Callable, rtol: float | None, atol: float | None,
                 time_limit: float | None = None):
        self.fn = fn
        self.rtol = rtol
        self.atol = atol
        self.time_limit = time_limit
        self._computed_in: set[np.dtype] = set()  # of the program check() judges
        self._jitted: dict[Any, Any] = {}

    def check_all(self, inputs: Sequence, out: Any) -> None:
        outs = out if isinstance(out, (list, tuple)) else [out]
        for o in outs:
            self.check(tuple(inputs), o)

    def _jit(self, out: str | None):
        import sparsefold as sf
        if out not in self._jitted:
            # the compiled kernel is what is tested: every call waits for it (no tiering)
            self._jitted[out] = sf.jit(self.fn, out=out, wait=True)
        return self._jitted[out]

    def check(self, inputs: tuple, out: str | None) -> None:
        import sparsefold as sf
        lazies = [a if _is_scalar(a) else sf.asarray(a) for a in inputs]
        expr = self.fn(*lazies)  # IllFormedProgram here is the program's fault: propagate
        if not isinstance(expr, sf.LazyArray):
            raise TypeError(f"differential: fn must return a sparsefold array, found "
                            f"{type(expr).__name__}")
        report = _Report(self.fn, inputs, out)
        # the floating dtypes the program computes in: a complex64 expm1 stacked into a
        # complex128 result carries complex64's rounding (NumPy's and the kernel's differ
        # by an ulp there), so the result is judged at the loosest of them
        from sparsefold.spec.printer import topological
        self._computed_in = {np.dtype(n.dtype) for n in topological(expr.node)
                             if getattr(n, "dtype", None) is not None and
                             np.dtype(n.dtype).kind in "fc"}
        try:
            with np.errstate(all="ignore"):  # 0/0 and overflow are values here, not news
                expected, rejected = expr.interpret(), None
        except InvalidData as exc:
            expected, rejected = None, exc
        report.expected, report.rejected = expected, rejected
        jf = self._jit(out)
        try:
            report.program, report.out = jf.program_for(*inputs)
        except Exception:  # the call below reports the same failure with its context
            pass
        got, crash, modified = self._call(jf, inputs)
        if crash is not None:
            if isinstance(crash, InvalidData) or (isinstance(crash, tuple) and crash[3]):
                if rejected is not None:
                    return  # both reject the data
            if isinstance(crash, tuple):  # raised in the child process (time_limit)
                report.fail(f"the compiled kernel raised {crash[0]}: {crash[1]}", crash[2])
            if isinstance(crash, str):  # stopped at the time limit, or its process died
                report.fail(crash)
            # raised outside the except block, the kernel's traceback quoted in the message:
            # Hypothesis tells failures apart by their exception chains, and a chain through
            # each generated module would make every kernel a "distinct" failure
            report.fail(f"the compiled kernel raised {type(crash).__name__}: {crash}",
                        _traceback_text(crash))
        report.got = got
        for p in modified:
            report.fail(f"the compiled kernel modified its input {p}")
        if rejected is not None:
            report.fail(f"the interpreter rejected the data ({rejected}) but the compiled "
                        f"kernel returned a result")
        library = "pydata" if any(is_pydata_sparse(a) for a in inputs) else "scipy"
        scale = max([1.0, *(_magnitude(a) for a in inputs)])
        self._compare(report, got, np.asarray(expected), report.out or "dense", library, scale)

    def _call(self, jf, inputs: tuple):
        """(result, crash, inputs modified): ``crash`` is the exception raised here, the
        child's (type, message, traceback, is-InvalidData), or what stopped it."""
        if self.time_limit is not None:
            from sparsefold.verify.limited import call_limited
            o = call_limited(jf, inputs, self.time_limit, _storage_snapshot, _same_storage)
            if o.kind == "ok":
                return o.result, None, o.modified
            return None, (o.error if o.kind == "raised" else o.error[0]), ()
        before = [_storage_snapshot(a) for a in inputs]
        try:
            with np.errstate(all="ignore"):
                got = jf(*inputs)
        except Exception as exc:  # noqa: BLE001 - any crash of the kernel is the finding
            return None, exc, ()
        modified = tuple(p for p, (a, snap) in enumerate(zip(inputs, before))
                         if not _same_storage(snap, _storage_snapshot(a)))
        return got, None, modified

    def _compare(self, report, got, expected: np.ndarray, out: str, library: str,
                 scale: float) -> None:
        want = result_container(out, expected.ndim, library)
        if not _has_container(got, want):
            report.fail(f"expected a {want[0]} result for out={out!r} ({expected.ndim}-d), "
                        f"found {_kind(got)}")
        if tuple(got.shape) != expected.shape:
            report.fail(f"shape {tuple(got.shape)} != interpreted {expected.shape}")
        if np.dtype(got.dtype) != expected.dtype:
            report.fail(f"dtype {got.dtype} != interpreted {expected.dtype}")
        problems = storage_problems(got, want[1])
        if problems:
            report.fail("malformed storage: " + "; ".join(problems))
        dense = _dense(got)
        mismatch = self._mismatch(dense, expected, max(scale, _magnitude(expected)))
        if mismatch.any():
            where = np.argwhere(mismatch)
            first = ", ".join(f"at {tuple(int(c) for c in w)}: compiled "
                              f"{_scalar(dense[tuple(w)])}, interpreted "
                              f"{_scalar(expected[tuple(w)])}" for w in where[:3])
            report.fail(f"values differ at {len(where)} of {expected.size} coordinates "
                        f"({first}{', ...' if len(where) > 3 else ''})")

    def _mismatch(self, got: np.ndarray, expected: np.ndarray, scale: float) -> np.ndarray:
        tol = tolerance(expected.dtype)
        if tol is None:
            return got != expected
        loose = max([tol[0]] + [tolerance(d)[0] for d in self._computed_in])
        tol = (loose, loose)
        rtol = self.rtol if self.rtol is not None else tol[0]
        atol = self.atol if self.atol is not None else tol[1] * scale
        return ~np.isclose(got, expected, rtol=rtol, atol=atol, equal_nan=True)


def _magnitude(a: Any) -> float:
    """The largest finite absolute value stored in ``a`` (0 for non-numeric or empty)."""
    if _is_scalar(a):
        a = np.asarray(a)
    values = a if isinstance(a, np.ndarray) else _storage_arrays(a).get("data")
    if values is None or values.dtype.kind not in "iufc" or not values.size:
        return 0.0
    finite = np.abs(values[np.isfinite(values)])
    return float(finite.max()) if finite.size else 0.0


# --- what a result must look like ------------------------------------------------------------

def _has_container(got: Any, want: tuple[str, str | None]) -> bool:
    name, kind = want
    if name == "numpy.ndarray":
        return isinstance(got, np.ndarray)
    if name.startswith("sparse."):
        if type(got).__name__ != name.split(".")[1] or not is_pydata_sparse(got):
            return False
        return name == "sparse.COO" or tuple(got.compressed_axes) == ((1,) if kind == "csc"
                                                                       else (0,))
    return is_scipy_sparse(got) and type(got).__name__ == name


def _kind(a: Any) -> str:
    if is_scipy_sparse(a):
        return f"scipy {type(a).__name__} (format {a.format!r})"
    if is_pydata_sparse(a):
        return f"pydata {type(a).__name__}"
    return f"{type(a).__module__}.{type(a).__name__}"


def _storage_arrays(a: Any) -> dict[str, np.ndarray]:
    """The raw arrays of a sparse result, by name (not densified, not copied)."""
    if is_scipy_sparse(a):
        if a.format in ("csr", "csc"):
            return {"indptr": a.indptr, "indices": a.indices, "data": a.data}
        if a.format == "coo":
            return {**{f"coords[{d}]": c for d, c in enumerate(a.coords)}, "data": a.data}
        return {}
    if is_pydata_sparse(a):
        if type(a).__name__ == "GCXS":
            return {"indptr": a.indptr, "indices": a.indices, "data": a.data}
        if type(a).__name__ == "COO":
            return {"coords": a.coords, "data": a.data}
    return {}


def storage_problems(a: Any, kind: str | None, *, canonical: bool = True) -> list[str]:
    """What is wrong with ``a`` as canonical storage of kind ``kind`` ("csr", "csc",
    "coo"; None: dense, nothing to check): inconsistent lengths, a bad ``indptr``,
    coordinates out of range, unsorted, or duplicated. Empty when it is sound.
    ``canonical=False`` checks only what memory safety needs (valid, not canonical)."""
    if kind is None:
        return []
    arrays = _storage_arrays(a)
    shape = tuple(int(n) for n in a.shape)
    data = arrays.get("data")
    if data is None or data.ndim != 1:
        return ["no 1-d data array"]
    if kind in ("csr", "csc"):
        if len(shape) == 1:
            n_outer, n_inner = 1, shape[0]
        else:
            n_outer, n_inner = (shape[0], shape[1]) if kind == "csr" else (shape[1], shape[0])
        return _compressed_problems(arrays["indptr"], arrays["indices"], data, n_outer, n_inner,
                                    canonical)
    coords = arrays.get("coords")
    if coords is None:
        coords = [arrays[f"coords[{d}]"] for d in range(len(shape))
                  if f"coords[{d}]" in arrays]
    coords = [np.asarray(c) for c in coords]
    return _coo_problems(coords, data, shape, canonical)


def _index_problems(name: str, arr: np.ndarray) -> list[str]:
    if arr.ndim != 1 or arr.dtype.kind not in "iu":
        return [f"{name} must be a 1-d integer array, found {arr.dtype} {arr.shape}"]
    return []


def _compressed_problems(indptr, indices, data, n_outer: int, n_inner: int,
                         canonical: bool) -> list[str]:
    bad = _index_problems("indptr", indptr) + _index_problems("indices", indices)
    if bad:
        return bad
    if indptr.shape[0] != n_outer + 1:
        return [f"indptr has {indptr.shape[0]} entries, expected {n_outer + 1}"]
    if indptr[0] != 0:
        bad.append(f"indptr[0] is {indptr[0]}, expected 0")
    steps = np.diff(indptr.astype(np.int64))
    if (steps < 0).any():
        bad.append(f"indptr decreases at {int(np.argmax(steps < 0))}")
    if not indptr[-1] == indices.shape[0] == data.shape[0]:
        bad.append(f"indptr[-1]={indptr[-1]}, {indices.shape[0]} indices, {data.shape[0]} "
                   f"values: expected all equal")
    if bad:
        return bad
    if indices.size and (indices.min() < 0 or indices.max() >= n_inner):
        bad.append(f"indices outside [0, {n_inner})")
    if bad or not canonical:
        return bad
    # strictly increasing inside each segment: sorted, no duplicates
    row_start = np.zeros(indices.shape[0], dtype=bool)
    row_start[indptr[:-1][indptr[:-1] < indices.shape[0]]] = True
    ascending = np.diff(indices.astype(np.int64)) > 0
    broken = ~ascending & ~row_start[1:]
    if broken.any():
        p = int(np.argmax(broken)) + 1
        bad.append(f"indices not strictly increasing within a segment (position {p}: "
                   f"{indices[p - 1]} then {indices[p]}): unsorted or duplicated")
    return bad


def _coo_problems(coords: list[np.ndarray], data: np.ndarray, shape: tuple,
                  canonical: bool) -> list[str]:
    if len(coords) != len(shape):
        return [f"{len(coords)} coordinate arrays for a {len(shape)}-d array"]
    bad = []
    for d, c in enumerate(coords):
        bad += _index_problems(f"coords[{d}]", c)
        if not bad and c.shape != data.shape:
            bad.append(f"coords[{d}] has {c.shape[0]} entries, data {data.shape[0]}")
        if not bad and c.size and (c.min() < 0 or c.max() >= shape[d]):
            bad.append(f"coords[{d}] outside [0, {shape[d]})")
    if bad or not canonical or data.shape[0] < 2:
        return bad
    # row-major strictly increasing: at the first axis where neighbours differ, it grows
    c = np.stack([x.astype(np.int64) for x in coords])
    diff = np.diff(c, axis=1)
    nonzero = diff != 0
    first = np.argmax(nonzero, axis=0)
    grows = diff[first, np.arange(diff.shape[1])] > 0
    ok = nonzero.any(axis=0) & grows
    if not ok.all():
        p = int(np.argmax(~ok)) + 1
        bad.append(f"coordinates not in strictly increasing row-major order (entry {p}: "
                   f"{tuple(int(x) for x in c[:, p - 1])} then "
                   f"{tuple(int(x) for x in c[:, p])}): unsorted or duplicated")
    return bad


def _storage_kind(a: Any) -> str:
    """The storage kind ``a`` actually has (for describing it)."""
    if is_pydata_sparse(a):
        if type(a).__name__ == "GCXS":
            return "csc" if tuple(a.compressed_axes) == (1,) else "csr"
        return "coo"
    return a.format if a.format in ("csr", "csc") else "coo"


def _dense(a: Any) -> np.ndarray:
    if isinstance(a, np.ndarray):
        return a
    if is_pydata_sparse(a):
        return np.asarray(a.todense())
    return np.asarray(a.toarray())


def _storage_snapshot(a: Any) -> list[np.ndarray] | None:
    if isinstance(a, np.ndarray):
        return [a.copy()]
    arrays = _storage_arrays(a)
    return [np.array(x, copy=True) for x in arrays.values()] if arrays else None


def _same_storage(a, b) -> bool:
    if a is None or b is None:
        return a is b
    return len(a) == len(b) and all(
        x.shape == y.shape and x.dtype == y.dtype and np.array_equal(x, y, equal_nan=True)
        if x.dtype.kind in "fc" else x.shape == y.shape and np.array_equal(x, y)
        for x, y in zip(a, b))


# --- the failure message -----------------------------------------------------------------------

class _Report:
    """What one check saw, turned into the AssertionError's message."""

    def __init__(self, fn: Callable, inputs: tuple, out: str | None):
        self.fn, self.inputs, self.out = fn, inputs, out
        self.program = None
        self.expected = self.rejected = self.got = None

    def fail(self, what: str, detail: str | None = None):
        raise DifferentialError(self.message(what, detail))

    def message(self, what: str, detail: str | None = None) -> str:
        lines = [f"differential: {what}"]
        if detail:
            lines += ["kernel traceback (most recent call last):", _indent(detail)]
        lines += [f"function: {_function_text(self.fn)}", f"out: {self.out!r}"]
        if self.program is not None:
            lines += ["program (as compiled, sizes symbolic):", _indent(repr(self.program))]
        lines.append("inputs:")
        for p, a in enumerate(self.inputs):
            lines.append(_indent(f"[{p}] " + describe_array(a)))
        lines.append("compiled:")
        lines.append(_indent("(no result)" if self.got is None else describe_array(self.got)))
        lines.append("interpreted:")
        if self.rejected is not None:
            lines.append(_indent(f"InvalidData: {self.rejected}"))
        else:
            lines.append(_indent(describe_array(self.expected)))
        return "\n".join(lines)


def _traceback_text(exc: BaseException) -> str:
    import traceback
    return "".join(traceback.format_tb(exc.__traceback__)[-4:]).rstrip()


def _function_text(fn: Callable) -> str:
    """A function's source (if short), an object's own repr (a generated program's repr is
    its source), else its name."""
    code = getattr(fn, "__code__", None)
    if code is not None:
        import inspect
        where = f"{_name(fn)} ({code.co_filename}:{code.co_firstlineno})"
        try:
            src = inspect.getsource(fn).strip()
        except (OSError, TypeError):
            return where
        return where + ("\n" + _indent(src) if len(src) < 600 else "")
    return repr(fn) if type(fn).__repr__ is not object.__repr__ else _name(fn)


def _indent(text: str) -> str:
    return "\n".join("    " + line for line in text.splitlines())


def describe_array(a: Any) -> str:
    """One array for a failure message: kind, dtype, shape, raw storage, values."""
    def show(x):
        return np.array2string(np.asarray(x), threshold=120, edgeitems=4,
                               max_line_width=95)
    if _is_scalar(a):
        return f"scalar {a!r}"
    if isinstance(a, np.ndarray):
        return f"numpy {a.dtype} {a.shape}\n{show(a)}"
    head = f"{_kind(a)} {a.dtype} {tuple(a.shape)}, nnz={a.nnz}"
    arrays = _storage_arrays(a)
    body = [f"{k} ({v.dtype}) = {show(v)}" for k, v in arrays.items()]
    kind = _storage_kind(a) if arrays else None
    if kind is None or storage_problems(a, kind, canonical=False):
        body.append("(invalid storage: not densified)")
    else:
        if storage_problems(a, kind):
            body.append("(valid, not canonical: unsorted or duplicated entries)")
        body.append("as dense:\n" + show(_dense(a)))
    return head + "\n" + "\n".join(body)

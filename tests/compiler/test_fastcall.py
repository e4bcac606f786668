"""The fast call entry generated in each kernel module (``compiler/lower/fastcall.py``).

It must give exactly the checked path's result (container, dtypes, index widths, values) on
the inputs it takes, and decline (return ``None``, so the checked path decides) on every
input where the checked path would copy, convert, canonicalize, pick another variant or
raise before the kernel runs. Bad data it does take (an out-of-range coordinate under a
stale canonical flag) fails inside the kernel with the checked path's message.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

import sparsefold as sf
from sparsefold.compiler.kernel import TooLarge
from sparsefold.compiler.lower.fastcall import _bits, _size_bound
from sparsefold.spec import sizes as sz

pytestmark = pytest.mark.cython


def _csr(seed, shape=(6, 5), fmt="csr", dtype=np.float64):
    """A random array; COO in row-major order with its flag unset (scipy's random COO is in
    random order, which the checked path sorts on a copy)."""
    a = sp.random_array(shape, density=0.4, format=fmt, dtype=dtype, rng=seed)
    if fmt == "coo":
        a = a.tocsr().tocoo()
        a.has_canonical_format = False
    return a


def _kernel(f):
    """The compiled ``pipeline.Kernel`` a jit function's one cached call runs (the one
    whose fast entry it calls: a prebuilt generic kernel's own, for instance)."""
    (entry,) = f._recent.values()
    kernel, compiled = entry.kernel, entry.compiled
    return compiled if compiled is not None else kernel


def _checked(f, args):
    """The result of the checked path for ``f(*args)`` (the fast entry switched off)."""
    kernel = _kernel(f)
    kernel._fast_ok = False
    try:
        return f(*args)
    finally:
        kernel._fast_ok = True


def _same(fast, checked):
    assert type(fast) is type(checked)
    if isinstance(checked, np.ndarray):
        assert fast.dtype == checked.dtype and fast.shape == checked.shape
        np.testing.assert_array_equal(fast, checked)
        return
    assert fast.format == checked.format and fast.shape == checked.shape
    assert set(vars(fast)) == set(vars(checked))
    for key, value in vars(checked).items():
        found = vars(fast)[key]
        if isinstance(value, np.ndarray):
            assert found.dtype == value.dtype, key
            np.testing.assert_array_equal(found, value)
        elif isinstance(value, tuple) and value and isinstance(value[0], np.ndarray):
            for x, y in zip(found, value):
                assert x.dtype == y.dtype
                np.testing.assert_array_equal(x, y)
        else:
            assert found == value, key


PROGRAMS = {
    "spmv": (lambda a, x: a @ x, lambda: (_csr(1, (6, 6)), np.arange(6.0))),
    "hstack": (lambda a, b: sf.hstack([a, b]), lambda: (_csr(1), _csr(2))),
    "vstack_coo": (lambda a, b: sf.vstack([a, b]), lambda: (_csr(1, fmt="coo"),
                                                             _csr(2, fmt="coo"))),
    "add3": (lambda a, b, c: a + b + c, lambda: (_csr(1), _csr(2), _csr(3))),
    "transpose": (lambda a: a.T, lambda: (_csr(4),)),
    "csc_scale": (lambda a: a * 2.0, lambda: (_csr(5, fmt="csc"),)),
    "row_sums": (lambda a: sf.sum(a, axis=1), lambda: (_csr(6),)),
    "dense_times_sparse": (lambda a, x: a * x, lambda: (_csr(7), np.ones((6, 5)))),
    # programs with stages: each stage's entry in turn (pipeline._StagedEntry)
    "sub_transpose": (lambda a: a - a.T, lambda: (_csr(8, (6, 6)),)),
    "sum_then_scale": (lambda a, b: (a + b).T * 2.0, lambda: (_csr(9), _csr(10))),
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_the_fast_entry_gives_the_checked_paths_result(name):
    fn, make = PROGRAMS[name]
    f = sf.jit(fn)
    args = make()
    f(*args)
    kernel = _kernel(f)
    assert kernel.entry.fast is not None, "no fast entry for a plain program"
    assert kernel.entry.fast(*args) is not None, "the fast entry declined a plain call"
    _same(f(*args), _checked(f, args))


@pytest.mark.parametrize("name", ["sub_transpose", "sum_then_scale"])
def test_programs_with_stages_run_each_stages_entry(name):
    fn, make = PROGRAMS[name]
    f = sf.jit(fn)
    args = make()
    f(*args)
    kernel = _kernel(f)
    assert kernel.stages, "the program was meant to have a stage"
    stages = [stage for _, stage in kernel.stages] + [kernel.final]
    entries = [stage.fast for stage in stages]
    calls = []
    for stage, entry in zip(stages, entries):  # count the entries' calls
        stage.fast = lambda *a, _entry=entry, **k: calls.append(1) or _entry(*a, **k)
    try:
        result = kernel.entry.fast(*args)
    finally:
        for stage, entry in zip(stages, entries):
            stage.fast = entry
    assert len(calls) == len(stages)
    _same(result, _checked(f, args))


def _vector(seed, n=30):
    """A 1-d CSR vector (canonical), as the collapse kernels take one."""
    a = sp.random_array((1, n), density=0.4, format="csr", rng=seed)
    return sp.csr_array((a.data, a.indices, a.indptr[[0, -1]]), shape=(n,))


VECTOR_PROGRAMS = {  # 1-d results: a sparse vector (csr_array), or a 1-d COO array
    "collapse_csr": (lambda a: a.reshape(-1), "csr", lambda: (_csr(1),)),
    "collapse_coo": (lambda a: a.reshape(-1), "csr", lambda: (_csr(2, fmt="coo"),)),
    "collapse_times_vector": (lambda a, v: a.reshape(-1) * v, "csr",
                              lambda: (_csr(3), _vector(4))),
    "collapse_to_coo": (lambda a: a.reshape(-1), "coo", lambda: (_csr(5),)),
}


@pytest.mark.parametrize("name", sorted(VECTOR_PROGRAMS))
def test_a_one_d_result_comes_from_the_fast_entry_as_the_checked_path_builds_it(name):
    fn, out, make = VECTOR_PROGRAMS[name]
    f = sf.jit(fn, out=out)
    args = make()
    f(*args)
    kernel = _kernel(f)
    assert kernel.entry.fast is not None and kernel.entry.fast(*args) is not None
    assert kernel.entry.fast(*args).ndim == 1
    _same(f(*args), _checked(f, args))



@pytest.mark.parametrize("n", [8, 70000], ids=["int32", "int64"])
def test_a_one_d_result_is_the_vector_scipys_constructor_builds(n):
    # the fast entry builds the 1-d csr_array from a layout (not scipy's ~10 us constructor):
    # it must be the array the constructor makes of the same arrays, indptr [0, nnz] of the
    # indices' dtype (int64 once N*C passes int32: 70000**2 does), and usable as one
    a = sp.csr_array((np.array([1.0, -2.0, 3.0]), np.array([1, 3, 7]),
                      np.array([0, 1, 2, 2, 3] + [3] * (n - 4))), shape=(n, n))
    f = sf.jit(lambda x: x.reshape(-1), out="csr")
    f(a)
    entry = _kernel(f).entry.fast
    v = entry(a)
    assert v is not None and type(v) is sp.csr_array and v.shape == (n * n,)
    ref = sp.csr_array((v.data.copy(), v.indices.copy(),
                        np.array([0, v.nnz], dtype=v.indices.dtype)), shape=(n * n,))
    assert v.indices.dtype == np.dtype("int32" if n * n < 2**31 else "int64")
    assert v.indptr.dtype == v.indices.dtype and list(v.indptr) == [0, 3]
    np.testing.assert_array_equal(v.indices, [1, n + 3, 3 * n + 7])
    np.testing.assert_array_equal(v.data, ref.data)
    assert v.has_canonical_format and v.nnz == 3
    assert (v - ref).nnz == 0 and (v * 2).sum() == ref.sum() * 2
    _same(v, _checked(f, (a,)))

def _fast_of(fn, args):
    f = sf.jit(fn)
    f(*args)
    return _kernel(f).final.fast


def _non_canonical():
    a = _csr(1)
    a.has_canonical_format = False
    return a


def _stale_indptr():
    a = _csr(1)
    a.indptr = a.indptr[:-1]
    return a


def _wide_indices():
    a = _csr(1)
    a.indices = a.indices.astype(np.int64)
    a.indptr = a.indptr.astype(np.int64)
    return a


def _strided_values():
    a = _csr(1)
    a.data = np.repeat(a.data, 2)[::2]
    return a


def _float32():
    return _csr(1, dtype=np.float32)


def _numpy_int_shape():
    a = _csr(1)
    a._shape = (np.int64(6), np.int64(5))
    return a


DECLINED = {  # the checked path copies, converts, canonicalizes, or raises for these
    "non_canonical": _non_canonical,
    "indptr_too_short": _stale_indptr,
    "int64_indices": _wide_indices,
    "strided_data": _strided_values,
    "other_dtype": _float32,
    "numpy_int_shape": _numpy_int_shape,
    "csc_for_csr": lambda: _csr(1, fmt="csc"),
    "coo_for_csr": lambda: _csr(1, fmt="coo"),
    "dense_for_csr": lambda: _csr(1).toarray(),
}


@pytest.mark.parametrize("case", sorted(DECLINED))
def test_the_fast_entry_declines_what_the_checked_path_must_decide(case):
    fast = _fast_of(lambda a: a * 2.0, (_csr(0),))
    assert fast(DECLINED[case]()) is None


def test_coo_inputs_are_scanned_for_order_unless_flagged():
    fast = _fast_of(lambda a: a * 2.0, (_csr(0, fmt="coo"),))
    a = _csr(1, fmt="coo")
    a.has_canonical_format = False
    assert fast(a) is not None  # sorted, unflagged: the checked path's scan, done here
    swapped = a.copy()
    swapped.coords = tuple(c[::-1].copy() for c in a.coords)
    swapped.data = a.data[::-1].copy()
    swapped.has_canonical_format = False
    assert fast(swapped) is None  # the checked path sorts it
    repeated = a.copy()
    repeated.coords = tuple(np.repeat(c, 2) for c in a.coords)
    repeated.data = np.repeat(a.data, 2)
    repeated.has_canonical_format = False
    assert fast(repeated) is None  # the checked path sums duplicates
    f = sf.jit(lambda a: a * 2.0)
    np.testing.assert_array_equal(f(swapped).toarray(), 2 * a.toarray())
    np.testing.assert_array_equal(f(repeated).toarray(), 4 * a.toarray())


def test_a_non_finite_operand_the_plan_relies_on_is_declined():
    fast = _fast_of(lambda a, x: a @ x, (_csr(1, (6, 6)), np.ones(6)))
    assert fast(_csr(1, (6, 6)), np.ones(6)) is not None
    assert fast(_csr(1, (6, 6)), np.array([1, 2, np.nan, 4, 5, 6.0])) is None
    assert fast(_csr(1, (6, 6)), np.array([1, 2, np.inf, 4, 5, 6.0])) is None


def test_dense_operands_of_the_other_stride_variant_or_size_are_declined():
    fast = _fast_of(lambda a, x: a @ x, (_csr(1, (6, 6)), np.ones(6)))
    assert fast(_csr(1, (6, 6)), np.ones(12)[::2]) is None  # the strided variant
    assert fast(_csr(1, (6, 6)), np.ones(7)) is None         # sizes disagree
    assert fast(_csr(1, (6, 6)), np.ones(6, np.float32)) is None
    assert fast(_csr(1, (6, 6)), np.ones(6).view(np.matrix)) is None


def test_a_result_over_the_memory_limit_is_left_to_the_checked_path(monkeypatch):
    f = sf.jit(lambda a, b: sf.hstack([a, b]))
    a, b = _csr(1), _csr(2)
    f(a, b)
    monkeypatch.setenv("SPARSEFOLD_MEMORY_LIMIT", "64")
    assert _kernel(f).final.fast(a, b) is None
    with pytest.raises(TooLarge):
        f(a, b)
    monkeypatch.setenv("SPARSEFOLD_MEMORY_LIMIT", "not a number")
    assert _kernel(f).final.fast(a, b) is None


def test_the_output_index_width_is_the_checked_paths():
    # a variant for int64 output indices must not serve a call the checked path gives int32
    f = sf.jit(lambda a, b: sf.hstack([a, b]))
    a, b = _csr(1), _csr(2)
    assert f(a, b).indices.dtype == np.int32
    stage = _kernel(f).final
    # the variant this call ran (kernels are shared across the process: another test may
    # have built other variants of the same program)
    (dtypes, out_index, unit), *_ = [
        key for key in stage._variants if key[1] == "int32" and
        all(np.dtype(d) == np.int32 for _, parts in key[0] for _, d in parts)]
    assert out_index == "int32"
    index_dtypes = {name: dict(parts) for name, parts in dtypes}
    wide = stage._variant((dtypes, "int64", unit), index_dtypes, "int64")[2]
    assert wide.fast is not None and wide.fast(a, b) is None


def test_a_bad_coordinate_under_a_stale_flag_fails_with_the_checked_paths_message():
    f = sf.jit(lambda a, b: sf.hstack([a, b]))
    a, b = _csr(1), _csr(2)
    f(a, b)
    bad = a.copy()
    bad.indices[-1] = 99
    bad.has_canonical_format = True
    assert _kernel(f).final.fast is not None
    with pytest.raises(sf.InvalidData) as fast_error:
        f(bad, b)
    with pytest.raises(sf.InvalidData) as checked_error:
        _checked(f, (bad, b))
    assert str(fast_error.value) == str(checked_error.value)
    assert "a0: indices out of range [0, 5): found 99" in str(fast_error.value)


def test_read_only_inputs_are_read_in_place():
    a = _csr(1)
    for arr in (a.data, a.indices, a.indptr):
        arr.flags.writeable = False
    fast = _fast_of(lambda a: a * 2.0, (_csr(0),))
    np.testing.assert_array_equal(fast(a).toarray(), (a * 2.0).toarray())


def test_size_arithmetic_bounds():
    n, m = sz.Sym("n"), sz.Sym("m")
    assert _bits(sz.mul(n, m)) == (2, 0)
    assert _bits(sz.add(n, sz.Const(1))) == (1, 2)
    assert _size_bound([sz.mul(n, m)]) == 31
    assert _size_bound([sz.mul(sz.mul(n, m), n)]) == 20


def test_a_trace_precondition_is_checked_by_the_fast_entry():
    # a kernel whose trace assumed two sizes equal (a prebuilt generic hstack is one): the
    # fast entry takes the call only when they are, and the checked path reports the rest
    from sparsefold.compiler import Kernel
    from sparsefold.lazy import LazyArray
    from sparsefold.spec.compute import Input
    from sparsefold.spec.formats import named_format
    csr = named_format("csr", 2)
    a = Input("a0", (sz.Sym("n0"), sz.Sym("n1")), np.dtype(np.float64), csr)
    b = Input("a1", (sz.Sym("n2"), sz.Sym("n3")), np.dtype(np.float64), csr)
    with sz.assuming() as assumed:
        program = sf.hstack([LazyArray(a), LazyArray(b)]).node
    assert assumed
    kernel = Kernel(program, "csr", requires=tuple(assumed))
    x, y = _csr(1), _csr(2)
    np.testing.assert_array_equal(kernel({"a0": x, "a1": y}).toarray(),
                                  sp.hstack([x, y]).toarray())
    assert kernel._fast_ok and kernel.final.fast is not None
    assert kernel.final.fast(x, y) is not None
    taller = _csr(3, (7, 5))
    assert kernel.final.fast(x, taller) is None
    with pytest.raises(sf.InvalidData, match="precondition"):
        kernel({"a0": x, "a1": taller})


# Strided slices: sizes with floor division (``(n0 + 2) // 3``; modulo: the preconditions below),
# computed by the fast entry with Python's meaning under the module's ``cdivision``.
SLICES = {
    "step_2": lambda a: a[::2],
    "step_minus_2": lambda a: a[::-2],
    "start_minus_2_step_minus_3": lambda a: a[-2::-3],
    "from_5_to_1_step_minus_2": lambda a: a[5:1:-2],
    "start_at_columns_step_3": lambda a: a[a.shape[1]::3],
    "paper_half": lambda a: a[0:(a.shape[0] + 1) // 2:2, :],
    "columns_from_1_step_2": lambda a: a[:, 1::2],
}


@pytest.mark.parametrize("name", sorted(SLICES))
def test_strided_slices_take_the_fast_entry_with_pythons_floor_division(name):
    fn = SLICES[name]
    for rows, cols in [(0, 5), (1, 5), (2, 5), (5, 0), (6, 3), (7, 5), (9, 6), (9, 1)]:
        a = _csr(rows + 10 * cols, (rows, cols))
        f = sf.jit(fn)
        result = f(a)
        fast = _kernel(f).final.fast
        assert fast is not None, "no fast entry for a strided slice"
        taken = fast(a)
        assert taken is not None, f"the fast entry declined a {rows} x {cols} input"
        expect = fn(a)  # scipy's own slicing: the oracle
        assert result.shape == taken.shape == expect.shape
        np.testing.assert_array_equal(taken.toarray(), expect.toarray())
        _same(taken, _checked(f, (a,)))


def test_a_strided_slice_times_an_operand_takes_the_fast_entry():
    # the paper's csr_slice_1d_csr_mul_csr: the operand's rows are the slice's (at least 2:
    # one row broadcasts, a staged kernel without a fast entry)
    fn = SLICES["paper_half"]
    for rows in (5, 7, 8, 9, 12):
        a = _csr(rows, (rows, 4))
        b = _csr(rows + 1, ((rows + 1) // 2 // 2 + (rows + 1) // 2 % 2, 4))
        f = sf.jit(lambda a, b: fn(a) * b)
        f(a, b)
        assert _kernel(f).final.fast(a, b) is not None
        np.testing.assert_array_equal(f(a, b).toarray(), fn(a).multiply(b).toarray())
        _same(f(a, b), _checked(f, (a, b)))
        # the kernel assumed the two row counts equal (sz.assuming): another count breaks
        # that precondition, which the fast entry computes and leaves to the checked path
        kernel = _kernel(f)
        taller = _csr(3, (b.shape[0] + 1, 4))
        assert kernel.final.fast(a, taller) is None
        with pytest.raises(sf.InvalidData, match="precondition"):
            kernel({"a0": a, "a1": taller})


def _hstack_requiring(*extra):
    """A compiled hstack of (n0, n1) and (n2, n3) CSR arrays whose preconditions are the
    trace's (n0 == n2) and ``extra``."""
    from sparsefold.compiler import Kernel
    from sparsefold.lazy import LazyArray
    from sparsefold.spec.compute import Input
    from sparsefold.spec.formats import named_format
    csr = named_format("csr", 2)
    a = Input("a0", (sz.Sym("n0"), sz.Sym("n1")), np.dtype(np.float64), csr)
    b = Input("a1", (sz.Sym("n2"), sz.Sym("n3")), np.dtype(np.float64), csr)
    with sz.assuming() as assumed:
        program = sf.hstack([LazyArray(a), LazyArray(b)]).node
    return Kernel(program, "csr", requires=tuple(assumed) + extra)


def test_floor_division_of_a_negative_size_is_pythons_in_the_fast_entry():
    # C truncates (-5) / 2 to -2 and (-5) % 3 to -2; Python floors: -3 and 1
    n1 = sz.Sym("n1")
    kernel = _hstack_requiring(sz.op("eq", sz.floordiv(sz.sub(n1, 7), 2), -3),
                               sz.op("eq", sz.mod(sz.sub(n1, 7), 3), 1))
    x, y = _csr(1, (6, 2)), _csr(2, (6, 4))  # n1 = 2: both hold in Python's meaning
    expect = sp.hstack([x, y]).toarray()
    np.testing.assert_array_equal(kernel({"a0": x, "a1": y}).toarray(), expect)
    assert kernel._fast_ok and kernel.final.fast is not None
    assert kernel.final.fast(x, y) is not None
    # (n1 - 7) // 2 == -2 holds for n1 = 4 (-3 // 2), not for n1 = 2 (C's -5 / 2 is -2)
    kernel = _hstack_requiring(sz.op("eq", sz.floordiv(sz.sub(n1, 7), 2), -2))
    x4 = _csr(3, (6, 4))
    np.testing.assert_array_equal(kernel({"a0": x4, "a1": y}).toarray(),
                                  sp.hstack([x4, y]).toarray())
    assert kernel.final.fast is not None and kernel.final.fast(x4, y) is not None
    assert kernel.final.fast(x, y) is None
    with pytest.raises(sf.InvalidData, match="precondition"):
        kernel({"a0": x, "a1": y})


def test_a_divisor_that_is_not_positive_at_run_time_is_left_to_the_checked_path():
    # n3 - n1 is 0 for equal widths (C's division would stop the process) and negative for
    # a narrower second operand; the checked path decides both
    n1, n3 = sz.Sym("n1"), sz.Sym("n3")
    kernel = _hstack_requiring(sz.op("ge", sz.floordiv(n3, sz.sub(n3, n1)), -9))
    x, wider, same, narrower = (_csr(1, (6, 2)), _csr(2, (6, 4)), _csr(3, (6, 2)),
                                _csr(4, (6, 1)))
    np.testing.assert_array_equal(kernel({"a0": x, "a1": wider}).toarray(),
                                  sp.hstack([x, wider]).toarray())
    assert kernel.final.fast is not None and kernel.final.fast(x, wider) is not None
    assert kernel.final.fast(x, same) is None
    with pytest.raises(ZeroDivisionError):
        kernel({"a0": x, "a1": same})
    assert kernel.final.fast(x, narrower) is None  # 1 // -1 == -1 >= -9: the checked path
    np.testing.assert_array_equal(kernel({"a0": x, "a1": narrower}).toarray(),
                                  sp.hstack([x, narrower]).toarray())


@pytest.mark.parametrize("shape", [(4, 4), (200, 200)])
def test_a_result_is_trimmed_to_its_entries_as_on_the_checked_path(shape):
    # a union's outputs are sized for every operand's entries and trimmed after the run:
    # a small one by copying into an exact array, a large one (over 4 KiB) in place
    f = sf.jit(lambda a, b, c: a + b + c)
    args = tuple(_csr(seed, shape) for seed in (1, 2, 3))
    f(*args)
    fast = _kernel(f).final.fast(*args)
    assert fast is not None
    capacity = sum(a.nnz for a in args)
    assert fast.nnz < capacity, "the test needs a result smaller than its capacity"
    for arr in (fast.data, fast.indices):
        assert arr.shape == (fast.nnz,) and arr.flags.owndata and arr.flags.c_contiguous
    _same(fast, _checked(f, args))
    np.testing.assert_array_equal(fast.toarray(), sum(a.toarray() for a in args))


def test_a_large_strided_slice_is_counted_first_by_the_fast_entry():
    # above cost.EXACT_CAPACITY_ABOVE entries a slice's outputs are sized exactly by a
    # counting pass (the checked path's too), so the result does not hold the input's size
    from sparsefold.compiler.plan.cost import EXACT_CAPACITY_ABOVE
    fn = SLICES["paper_half"]
    a = _csr(5, (400, 400))
    assert a.nnz > EXACT_CAPACITY_ABOVE
    f = sf.jit(fn)
    f(a)
    fast = _kernel(f).final.fast(a)
    assert fast is not None, "the fast entry declined a large strided slice"
    assert fast.data.shape == fast.indices.shape == (fast.nnz,)
    np.testing.assert_array_equal(fast.toarray(), fn(a).toarray())
    _same(fast, _checked(f, (a,)))
    small = _csr(6, (40, 40))  # below the threshold: no count, a trimmed bound
    f = sf.jit(fn)
    f(small)
    _same(_kernel(f).final.fast(small), _checked(f, (small,)))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("at", [0, 517, 999])
def test_the_fast_entrys_finite_check_finds_every_non_finite_value(dtype, bad, at):
    # the check reads the values' bits (exponent all ones) in a vectorized pass: a value in
    # the vector body or in the remainder, of either width, in the dense or sparse operand
    f = sf.jit(lambda a, x: a @ x)
    a, x = _csr(1, (50, 1000), dtype=dtype), np.linspace(-3, 3, 1000).astype(dtype)
    f(a, x)
    fast = _kernel(f).final.fast
    assert fast(a, x) is not None
    y = x.copy()
    y[at] = bad
    assert fast(a, y) is None
    g = sf.jit(lambda a, b: a * b)  # an intersection relies on both operands' values
    b = _csr(2, (50, 1000), dtype=dtype)
    g(a, b)
    product = _kernel(g).final.fast
    assert product(a, b) is not None
    b.data[at] = bad
    assert product(a, b) is None and product(b, a) is None
    tiny = np.full(1000, np.finfo(dtype).tiny / 2, dtype)  # subnormals and the largest
    tiny[1] = np.finfo(dtype).max                          # finite values are finite
    tiny[2] = -np.finfo(dtype).max
    assert fast(a, tiny) is not None


# -- the JIT's first try: the fast entry the last call ran --------------------------------

def _outcome(f, args):
    """(result as a dense array with its dtype, or the exception's class and text)."""
    try:
        out = f(*args)
    except Exception as exc:  # noqa: BLE001 - the outcome is compared, not handled
        return type(exc), str(exc)
    return (out.toarray() if hasattr(out, "toarray") else out).tolist(), out.dtype


def test_a_later_call_runs_the_last_fast_entry_where_it_applies():
    fn = lambda a, b: a + b  # noqa: E731
    f = sf.jit(fn)
    for _ in range(2):  # the first call builds the variant whose entry the second runs
        f(_csr(1), _csr(2))
    assert f._fast_last[0] is not None
    c, d = _csr(3, (9, 4)), _csr(4, (9, 4))
    np.testing.assert_array_equal(f(c, d).toarray(), (c + d).toarray())
    assert len(f._recent) == 1, "other sizes of the same relations: the same entry, first"


@pytest.mark.parametrize("args", [
    (_csr(1, (6, 5)), _csr(2, (6, 4))),                  # sizes the program cannot add
    (_csr(1, (1, 5)), _csr(2, (1, 5))),                  # a size of 1: traced as such
    (_csr(1, dtype=np.float32), _csr(2, dtype=np.float32)),
    (_csr(1, fmt="csc"), _csr(2)),
    (_csr(1),),                                          # another number of arguments
    (_csr(1), 2.0),                                      # a scalar in an array's place
    (_csr(1), np.ones((6, 5))),
], ids=["sizes", "one", "float32", "csc", "arity", "scalar", "dense"])
def test_where_the_last_fast_entry_does_not_apply_the_call_is_a_first_call(args):
    fn = lambda *xs: xs[0] + xs[1] if len(xs) == 2 else xs[0]  # noqa: E731
    f = sf.jit(fn)
    for _ in range(2):
        f(_csr(3), _csr(4))
    assert f._fast_last[0] is not None
    assert _outcome(f, args) == _outcome(sf.jit(fn), args)


def test_a_scalar_argument_is_never_read_from_an_earlier_call():
    f = sf.jit(lambda a, s: a * s)
    a = _csr(1)
    f(a, 2.0)
    np.testing.assert_array_equal(f(a, 3.0).toarray(), 3.0 * a.toarray())

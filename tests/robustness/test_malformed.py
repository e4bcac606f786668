"""Malformed and non-canonical sparse inputs, systematically (issue #6 §1-§3).

Every malformation below × every input format (scipy csr/csc/coo, pydata COO/GCXS, 1-d
scipy csr/coo, 1-d pydata COO) × one program per kernel family (shape op, map, merge,
reduction, contraction, and a dense-valued map that takes the densifying path). Each case
states its acceptable outcome, and the oracle is NumPy on the input's intended dense value:

* invalid data: ``InvalidData`` (or ``IllFormedProgram`` where the program no longer fits)
  whose message contains a stable piece naming the problem;
* non-canonical but valid (unsorted, duplicates, explicit zeros, a False canonical flag,
  unread tails, foreign but fitting index dtypes, strided or read-only buffers): the result
  equals NumPy on the intended value, with canonical result storage;
* a coordinate out of range: ``InvalidData`` ("out of range"), or — allowed because the
  range checks are moving into the kernels, which check what they read — the result on the
  input with that entry dropped; never anything else;
* a stale ``has_canonical_format=True`` on unsorted or duplicated arrays: ``InvalidData``
  or memory-sound result storage (values are not guaranteed: the flag is trusted).

In every case the caller's arrays must be unchanged. Storage that claims another rank once
crashed scipy's conversions (compiler_failures.md §10), so those cases run in a subprocess.
The cases that found §10-§16 (fixed in 597eb60) are regression tests now.
The last part covers 64-bit sizes: coordinate spaces beyond 2**31 and 2**32, and sizes whose
product overflows int64 (a clear error, never a wrapped result).
"""

import functools
import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
import sparse as pydata

import sparsefold as sf
from sparsefold.verify.differential import storage_problems

pytestmark = pytest.mark.cython

D2 = np.array([[0, 1, 0, 2, 0, 3],
               [0, 0, 0, 0, 0, 0],
               [4, 0, 5, 0, 0, 6],
               [0, 7, 0, 0, 8, 0]], dtype=np.float64)
B2 = np.array([[1, 0, 0, 0, 2, 0],
               [0, 3, 0, 0, 0, 0],
               [0, 0, -5, 0, 0, 1],
               [0, 0, 0, 4, 0, 0]], dtype=np.float64)
D1 = np.array([0, 2, 0, -3, 4, 0, 5], dtype=np.float64)
B1 = np.array([1, 0, 0, 3, 0, -5, 0], dtype=np.float64)

FORMATS = ["csr", "csc", "coo", "pd_coo", "pd_gcxs", "vec", "coo1", "pd_coo1"]
COMPRESSED = {"csr", "csc", "pd_gcxs", "vec"}
SCIPY = {"csr", "csc", "coo", "vec", "coo1"}
STORAGE_KIND = {"csr": "csr", "pd_gcxs": "csr", "csc": "csc", "coo": "coo", "pd_coo": "coo",
                "vec": "vec", "coo1": "coo1", "pd_coo1": "coo1"}
OUTS = ["csr", "csc", "coo", "dense"]


def _rank(fmt):
    return 1 if fmt in ("vec", "coo1", "pd_coo1") else 2


def build(dense, fmt):
    """A canonical array of ``fmt`` holding ``dense``, int64 index arrays throughout (so a
    mutation that converts indices to int64 reuses the same kernel variant)."""
    if fmt in ("pd_coo", "pd_coo1"):
        return pydata.COO.from_numpy(dense)
    if fmt == "pd_gcxs":
        return pydata.GCXS.from_numpy(dense, compressed_axes=(0,))
    a = {"csr": sp.csr_array, "vec": sp.csr_array, "csc": sp.csc_array}.get(
        fmt, sp.coo_array)(dense)
    a.sum_duplicates()
    if fmt in COMPRESSED:
        a.indices, a.indptr = a.indices.astype(np.int64), a.indptr.astype(np.int64)
    else:
        a.coords = tuple(c.astype(np.int64) for c in a.coords)
    return a


# --- programs: one per kernel family, each with its NumPy oracle ---------------------------

X2 = np.arange(1, 7, dtype=np.float64)
X1 = np.arange(1, 8, dtype=np.float64)

# name: (2-d program, 1-d program, oracle, partner kind)
FAMILIES = {
    "shape": (lambda a: a.T, lambda v: sf.pad(v, 1),
              lambda d: d.T if d.ndim == 2 else np.pad(d, 1), None),
    "map": (lambda a: a * 3, lambda v: v * 3, lambda d: d * 3, None),
    "merge": (lambda a, b: a + b, lambda v, w: v + w, lambda d, b: d + b, "sparse"),
    "reduction": (lambda a: sf.sum(a, axis=1), lambda v: sf.sum(v),
                  lambda d: d.sum(axis=-1), None),
    "contraction": (lambda a, x: a @ x, lambda v, x: v @ x, lambda d, x: d @ x, "dense"),
    "dense_fill": (lambda a: a + 1, lambda v: v + 1, lambda d: d + 1, None),
}


def _out(family, fmt):
    """Outputs rotate over formats and families; formats sharing storage share kernels."""
    kinds = ["csr", "csc", "coo", "vec", "coo1"]
    return OUTS[(list(FAMILIES).index(family) + kinds.index(STORAGE_KIND[fmt])) % 4]


def _partner(family, fmt, bad=False):
    kind = FAMILIES[family][3]
    if kind == "sparse":
        b = B2 if _rank(fmt) == 2 else B1
        return build(np.pad(b, [(0, 0)] * (b.ndim - 1) + [(0, 1)]) if bad else b, fmt)
    if kind == "dense":
        x = X2 if _rank(fmt) == 2 else X1
        return np.append(x, 9.0) if bad else x
    return None


# --- storage access ----------------------------------------------------------------------------

def _coords(a):
    return [np.array(c) for c in a.coords]


def _set_coords(a, fmt, coords):
    a.coords = np.stack(coords) if fmt.startswith("pd_") else tuple(coords)


def _entry(a, fmt, p):
    """The dense coordinate of stored entry ``p`` (of canonical storage)."""
    if fmt in COMPRESSED:
        if fmt == "vec":
            return (int(a.indices[p]),)
        outer = int(np.searchsorted(np.asarray(a.indptr), p, side="right") - 1)
        inner = int(a.indices[p])
        return (inner, outer) if fmt == "csc" else (outer, inner)
    return tuple(int(c[p]) for c in a.coords)


def _snapshot(a):
    if isinstance(a, np.ndarray):
        return [a.copy()]
    names = ("indptr", "indices", "data") if hasattr(a, "indptr") else ("coords", "data")
    out = []
    for n in names:
        v = getattr(a, n)
        out += [np.array(x, copy=True) for x in v] if n == "coords" and isinstance(v, tuple) \
            else [np.array(v, copy=True)]
    return out


# --- mutations ---------------------------------------------------------------------------------

class Invalid:
    def __init__(self, piece, errors=(sf.InvalidData,)):
        self.piece, self.errors = piece, errors


class Valid:
    def __init__(self, dense):
        self.dense = dense


class Either:  # coordinates out of range
    def __init__(self, dropped):
        self.dropped = dropped


class Trusted:  # a stale canonical flag
    pass


def _indptr(kind):
    def mutate(a, fmt, dense):
        p = np.array(a.indptr)
        if kind == "short":
            p = p[:-1]
        elif kind == "long":
            p = np.append(p, p[-1])
        elif kind == "first_nonzero":
            p[0] = 1
        elif kind == "not_monotone":  # a boundary above the next (a vector's: below 0)
            if p.shape[0] > 2:
                p[1] = p[2] + 1
            else:
                p[1] = -1
        elif kind == "negative":
            p[1] = -5
        elif kind == "past_nnz":
            p[-1] = a.indices.shape[0] + 3
        a.indptr = p
        return Invalid("indptr|monotone")
    return mutate


def _indptr_uncached(a, fmt, dense):
    """A non-monotone indptr with scipy's canonical flag cached False: the runtime, not the
    kernel, must find it (with the flag cached True, as built, the kernel does)."""
    if fmt not in SCIPY:
        return None
    expect = _indptr("not_monotone")(a, fmt, dense)
    a.has_canonical_format = False
    return expect


def _coordinate(value, axis=-1):
    """One stored coordinate on ``axis`` set to ``value(size)``, out of range: the last
    entry's for a too-large value, the first entry's for a negative one, so the storage
    stays sorted (no canonicalization step comes first: this is the range check alone)."""
    def mutate(a, fmt, dense):
        n = dense.shape[axis] if fmt not in ("csc",) else dense.shape[0]
        bad = value(n)
        p = 0 if bad < 0 else int(np.asarray(a.data).shape[0]) - 1
        dropped = dense.copy()
        dropped[_entry(a, fmt, p)] = 0
        if fmt in COMPRESSED:
            if axis == 0 and fmt != "vec":
                return None  # compressed rows come from indptr: covered by the indptr cases
            idx = np.array(a.indices)
            idx[p] = bad
            a.indices = idx
        else:
            coords = _coords(a)
            coords[axis % len(coords)][p] = bad
            _set_coords(a, fmt, coords)
        return Either(dropped)
    return mutate


def _index_dtype(dtype, valid):
    def mutate(a, fmt, dense):
        def conv(x):
            if dtype == "uint64_huge":
                x = x.astype(np.uint64)
                x[-1] = np.uint64(2**64 - 1)
                return x
            if dtype == "byteswapped":
                return x.astype(x.dtype.newbyteorder(">"))
            return x.astype(dtype)
        if fmt in COMPRESSED:
            a.indices = conv(np.array(a.indices))
        else:
            _set_coords(a, fmt, [conv(c) for c in _coords(a)])
        return Valid(dense) if valid else Invalid("index array")
    return mutate


def _index_2d(a, fmt, dense):
    if fmt in COMPRESSED:
        a.indices = np.array(a.indices).reshape(1, -1)
        return Invalid("1-d index array")
    if fmt.startswith("pd_"):
        return None  # pydata keeps coordinates as one 2-d array
    a.coords = tuple(c.reshape(1, -1) for c in a.coords)
    return Invalid("1-d index array")


def _data(kind):
    def mutate(a, fmt, dense):
        d = np.array(a.data)
        if kind == "short":
            a.data = d[:-1]
            return Invalid("stored values|differ in length|entries|values for")
        if kind == "long":
            a.data = np.append(d, 99.0)
            # compressed: nnz is indptr[-1], an unread tail is harmless (scipy prunes it)
            return Valid(dense) if fmt in COMPRESSED else \
                Invalid("differ in length|entries|values for")
        if kind == "2d":
            a.data = d.reshape(1, -1)
            return Invalid("stored values|differ in length|values for")
        a.data = d.astype(object if kind == "object" else d.dtype.newbyteorder(">"))
        return Invalid("dtype")
    return mutate


def _coords_ragged(a, fmt, dense):
    if fmt != "coo":
        return None
    coords = _coords(a)
    coords[1] = coords[1][:-1]
    _set_coords(a, fmt, coords)
    return Invalid(r"coords\[1\]|differ in length|values for")


def _coords_count(a, fmt, dense):
    if fmt in COMPRESSED:
        return None
    coords = _coords(a)
    _set_coords(a, fmt, coords + [coords[0]])
    return Invalid("coordinate arrays")


def _set_shape(a, fmt, shape):
    if fmt.startswith("pd_"):
        a.shape = shape
    else:
        a._shape = shape


# A binary program may no longer fit the claimed shape: IllFormedProgram naming the sizes.
_ILL_OR_INVALID = (sf.InvalidData, sf.IllFormedProgram)


def _shape_negative(a, fmt, dense):
    _set_shape(a, fmt, (-3,) + tuple(a.shape[1:]))
    return Invalid("negative", _ILL_OR_INVALID)


def _shape_zero_axis(a, fmt, dense):
    """Entries stored on an axis of size 0 (the inner axis of a compressed format): the
    in-kernel range checks replace a bad coordinate by 0, so this must be rejected first."""
    shape = list(a.shape)
    shape[0 if fmt in ("csc", "vec") else -1] = 0
    _set_shape(a, fmt, tuple(shape))
    return Invalid("axis of size 0|broadcast|contracted|shape", _ILL_OR_INVALID)


def _shape_overflow(a, fmt, dense):
    _set_shape(a, fmt, (2**40, 2**40) if dense.ndim == 2 else (2**63 + 5,))
    return Invalid(r"2\*\*63|sizes", _ILL_OR_INVALID)


def _unsorted(a, fmt, dense, flag=False):
    """Entries reversed (within each row for compressed formats)."""
    if fmt in COMPRESSED:
        p = np.asarray(a.indptr)
        perm = np.concatenate([np.arange(s, e)[::-1] for s, e in zip(p[:-1], p[1:])])
        a.indices, a.data = np.array(a.indices)[perm], np.array(a.data)[perm]
    else:
        _set_coords(a, fmt, [c[::-1].copy() for c in _coords(a)])
        a.data = np.array(a.data)[::-1].copy()
    return _flag(a, fmt, dense, flag)


def _duplicates(a, fmt, dense, flag=False):
    """Stored entry 0 split into two entries (value - 3 and 3) at the same coordinate: the
    sum is the value, neither part is."""
    d = np.array(a.data)
    first = np.concatenate([[d[0] - 3], d])
    first[1] = 3.0
    if fmt in COMPRESSED:
        a.indices = np.insert(np.asarray(a.indices), 0, a.indices[0])
        p = np.array(a.indptr)
        p[p > 0] += 1  # every boundary after the first stored entry moves by one
        a.indptr, a.data = p, first
    else:
        _set_coords(a, fmt, [np.insert(c, 0, c[0]) for c in _coords(a)])
        a.data = first
    return _flag(a, fmt, dense, flag)


def _flag(a, fmt, dense, value):
    if fmt in SCIPY:
        a.has_canonical_format = value
        if hasattr(a, "has_sorted_indices"):
            a.has_sorted_indices = value
    elif value:
        return None  # pydata has no canonical flag to make stale
    return Trusted() if value else Valid(dense)


def _explicit_zeros(a, fmt, dense):
    """Compressed: stored entry 0 set to 0. COO: zeros stored at two empty places too."""
    d = np.array(a.data)
    d[0] = 0
    meant = dense.copy()
    meant[_entry(a, fmt, 0)] = 0
    if fmt in COMPRESSED:
        a.data = d
        return Valid(meant)
    empty = np.argwhere(dense == 0)[:2]
    _set_coords(a, fmt, [np.concatenate([c, empty[:, k]]) for k, c in enumerate(_coords(a))])
    a.data = np.concatenate([d, [0.0, 0.0]])
    return _flag(a, fmt, meant, False)


def _flag_false(a, fmt, dense):
    return _flag(a, fmt, dense, False) if fmt in SCIPY else None


def _indices_tail(a, fmt, dense):
    if fmt not in COMPRESSED:
        return None
    a.indices = np.append(np.asarray(a.indices), [-7, 10**9])
    a.data = np.append(np.asarray(a.data), [99.0, 98.0])
    return Valid(dense)


def _layout(kind):
    def conv(x):
        x = np.asarray(x)
        if kind == "read_only":
            x = x.copy()
            x.flags.writeable = False
            return x
        wide = np.zeros(x.shape[:-1] + (2 * x.shape[-1],), dtype=x.dtype)
        wide[..., ::2] = x
        return wide[..., ::2]

    def mutate(a, fmt, dense):
        names = ("indptr", "indices", "data") if fmt in COMPRESSED else ("data",)
        for n in names:
            setattr(a, n, conv(getattr(a, n)))
        if fmt not in COMPRESSED:
            c = a.coords
            a.coords = conv(c) if fmt.startswith("pd_") else tuple(conv(x) for x in c)
        return Valid(dense)
    return mutate


def _mismatch(a, fmt, dense):
    return "mismatch"  # the partner is built with a wrong shape (see _call)


MUTATIONS = {
    "indptr_short": _indptr("short"),
    "indptr_long": _indptr("long"),
    "indptr_first_nonzero": _indptr("first_nonzero"),
    "indptr_not_monotone": _indptr("not_monotone"),
    "indptr_negative": _indptr("negative"),
    "indptr_past_nnz": _indptr("past_nnz"),
    "indptr_not_monotone_flag_false": _indptr_uncached,
    "coordinate_negative": _coordinate(lambda n: -1),
    "coordinate_equal_to_size": _coordinate(lambda n: n),
    "coordinate_int64_max": _coordinate(lambda n: np.iinfo(np.int64).max),
    "coordinate_int64_min": _coordinate(lambda n: np.iinfo(np.int64).min),
    "coordinate_row_out_of_range": _coordinate(lambda n: n + 2, axis=0),
    "index_float": _index_dtype("float64", False),
    "index_object": _index_dtype("object", False),
    "index_bool": _index_dtype("bool", False),
    "index_uint64_huge": _index_dtype("uint64_huge", False),
    "index_2d": _index_2d,
    "index_uint64": _index_dtype("uint64", True),
    "index_int16": _index_dtype("int16", True),
    "index_byteswapped": _index_dtype("byteswapped", True),
    "data_short": _data("short"),
    "data_long": _data("long"),
    "data_2d": _data("2d"),
    "data_object": _data("object"),
    "data_byteswapped": _data("byteswapped"),
    "coords_ragged": _coords_ragged,
    "coords_count": _coords_count,
    "shape_negative": _shape_negative,
    "shape_zero_axis": _shape_zero_axis,
    "shape_overflow": _shape_overflow,
    "operand_shape_mismatch": _mismatch,
    "unsorted": _unsorted,
    "duplicates": _duplicates,
    "explicit_zeros": _explicit_zeros,
    "flag_false": _flag_false,
    "indices_tail_unread": _indices_tail,
    "non_contiguous": _layout("non_contiguous"),
    "read_only": _layout("read_only"),
    "stale_flag_unsorted": lambda a, fmt, dense: _unsorted(a, fmt, dense, flag=True),
    "stale_flag_duplicates": lambda a, fmt, dense: _duplicates(a, fmt, dense, flag=True),
}
INDPTR = {m for m in MUTATIONS if m.startswith("indptr")}

@functools.cache
def _applies_to_format(mutation, fmt):
    if mutation in INDPTR and fmt not in COMPRESSED:
        return False
    dense = D2 if _rank(fmt) == 2 else D1
    return MUTATIONS[mutation](build(dense, fmt), fmt, dense) is not None


def _applies(mutation, fmt, family):
    if mutation == "operand_shape_mismatch":
        return FAMILIES[family][3] is not None
    return _applies_to_format(mutation, fmt)


def _cases():
    for mutation in MUTATIONS:
        for fmt in FORMATS:
            for family in FAMILIES:
                if not _applies(mutation, fmt, family):
                    continue
                yield pytest.param(mutation, fmt, family, id=f"{mutation}-{fmt}-{family}")


def _dense(got):
    if isinstance(got, np.ndarray):
        return got
    return np.asarray(got.todense() if hasattr(got, "fill_value") else got.toarray())


def _storage_kind(got):
    if isinstance(got, np.ndarray):
        return None
    if isinstance(got, pydata.GCXS):
        return "csc" if tuple(got.compressed_axes) == (1,) else "csr"
    return "coo" if isinstance(got, pydata.COO) else got.format


def _call(mutation, fmt, family):
    """(expectation, outcome) where outcome is the result or the exception."""
    dense = D2 if _rank(fmt) == 2 else D1
    a = build(dense, fmt)
    expect = MUTATIONS[mutation](a, fmt, dense)
    bad = expect == "mismatch"
    if bad:
        expect = Invalid("broadcast|contracted|shape", (sf.IllFormedProgram,))
    fn2, fn1, oracle, _ = FAMILIES[family]
    partner = _partner(family, fmt, bad)
    args = [a] if partner is None else [a, partner]
    before = [_snapshot(x) for x in args]
    try:
        with np.errstate(all="ignore"):
            got = sf.jit(fn2 if _rank(fmt) == 2 else fn1, out=_out(family, fmt))(*args)
    except (sf.InvalidData, sf.IllFormedProgram) as exc:
        got = exc
    after = [_snapshot(x) for x in args]
    for x, y in zip(before, after):
        assert len(x) == len(y) and all(np.array_equal(u, v) for u, v in zip(x, y)), \
            "the caller's arrays were modified"
    want = None
    if isinstance(expect, (Valid, Either)):
        meant = expect.dense if isinstance(expect, Valid) else expect.dropped
        other = () if partner is None else (_dense(partner),)
        want = oracle(meant, *other)
    return expect, got, want


@pytest.mark.parametrize("mutation, fmt, family", list(_cases()))
def test_malformed_input(mutation, fmt, family):
    expect, got, want = _call(mutation, fmt, family)
    if isinstance(expect, Invalid):
        assert isinstance(got, expect.errors), f"expected {expect.errors}, got {got!r}"
        assert got.args and re.search(expect.piece, str(got)), str(got)
        return
    if isinstance(got, Exception):
        assert not isinstance(expect, Valid), f"valid data rejected: {got!r}"
        assert isinstance(got, sf.InvalidData), repr(got)
        piece = "out of range" if isinstance(expect, Either) else \
            "sorted|duplicate|canonical|out of range"
        assert re.search(piece, str(got)), str(got)
        return
    kind = _storage_kind(got)
    if isinstance(expect, Trusted):  # values not guaranteed; storage must be sound
        assert not storage_problems(got, kind, canonical=False)
        return
    assert not storage_problems(got, kind), storage_problems(got, kind)
    np.testing.assert_array_equal(_dense(got), want)


def test_the_matrix_is_systematic():
    """Every mutation is tried on every format it applies to, for every family."""
    cases = [p.values for p in _cases()]
    assert {m for m, _, _ in cases} == set(MUTATIONS)
    assert {f for _, f, _ in cases} == set(FORMATS)
    for fmt in FORMATS:
        fams = {fam for m, f, fam in cases if f == fmt and m == "unsorted"}
        assert fams == set(FAMILIES), fmt


# --- pydata fill values (compiler_failures.md §14) -------------------------------------------

@pytest.mark.parametrize("fmt", ["pd_coo", "pd_gcxs", "pd_coo1"])
def test_fill_value_nonzero(fmt):
    """A nonzero fill value means every unstored position holds it: a correct result or
    a clear InvalidData, never the result for fill 0."""
    dense = D2 if _rank(fmt) == 2 else D1
    a = build(dense, fmt)
    a.fill_value = np.float64(2.0)
    meant = np.where(dense == 0, 2.0, dense)
    try:
        got = sf.jit(lambda x: x * 3, out="dense")(a)
    except sf.InvalidData as exc:
        assert "fill" in str(exc)
        return
    np.testing.assert_array_equal(got, meant * 3)


# --- storage claiming another rank: in a subprocess (scipy crashed on it, §10) ------------------

_RANK_SCRIPT = r"""
import json, sys
import numpy as np
sys.path.insert(0, {here!r})
import test_malformed as t
import sparsefold as sf
fmt = {fmt!r}
dense = t.D2 if t._rank(fmt) == 2 else t.D1
for shape in {shapes!r}:
    for family, (fn2, fn1, _, kind) in t.FAMILIES.items():
        a = t.build(dense, fmt)
        t._set_shape(a, fmt, tuple(shape))
        partner = t._partner(family, fmt)
        args = [a] if partner is None else [a, partner]
        try:
            sf.jit(fn2 if t._rank(fmt) == 2 else fn1, out="coo")(*args)
            res = ["result", ""]
        except Exception as exc:  # our kinds by base class (IllFormedIndex is ill-formed)
            kind = next((c.__name__ for c in (sf.InvalidData, sf.IllFormedProgram)
                         if isinstance(exc, c)), type(exc).__name__)
            res = [kind, str(exc)]
        print(json.dumps([shape, family] + res), flush=True)
"""


def _rank_shapes(fmt):
    if _rank(fmt) == 2:
        return [[4], [4, 1000, 6], [4, 6, 3]]
    return [[7, 3], [1000, 7]]


@pytest.mark.parametrize("fmt", [f for f in FORMATS if f != "pd_gcxs"])
def test_shape_of_another_rank(fmt):
    """Storage of one rank whose shape claims another (pydata GCXS excluded: its n-d form
    reads the same arrays as a reshaped matrix, often validly). Every family must reject
    it with InvalidData or IllFormedProgram naming the problem, and nothing may crash."""
    here = str(Path(__file__).resolve().parent)
    code = _RANK_SCRIPT.format(here=here, fmt=fmt, shapes=_rank_shapes(fmt))
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, f"crashed ({proc.returncode}): {proc.stderr[-2000:]}"
    rows = [json.loads(line) for line in proc.stdout.splitlines()]
    assert len(rows) == len(_rank_shapes(fmt)) * len(FAMILIES)
    for shape, family, cls, msg in rows:
        assert cls in ("InvalidData", "IllFormedProgram"), (shape, family, cls, msg)
        assert re.search(r"indptr|coordinate arrays|axis|broadcast|shape|size|-d", msg), msg


# --- 64-bit sizes (issue #6 §3) ------------------------------------------------------------------

def _int32(a):
    a.indices, a.indptr = a.indices.astype(np.int32), a.indptr.astype(np.int32)
    return a


@pytest.mark.parametrize("n", [50_000, 100_000], ids=["2**31<n*n<2**32", "n*n>2**32"])
@pytest.mark.parametrize("out", ["coo", "csr"])
def test_collapse_of_a_large_square_matrix(n, out):
    """Collapsing an n x n CSR (int32 indices, four entries) whose flat coordinate space
    exceeds 2**31 (and 2**32): coordinates widen to int64, never wrap."""
    rows, cols = [0, n // 2, n - 3, n - 1], [5, n - 2, 0, n - 1]
    A = _int32(sp.csr_array((np.array([1.0, 2.0, 3.0, 4.0]), (rows, cols)), shape=(n, n)))
    got = sf.jit(lambda a: a.reshape(-1), out=out)(A)
    assert got.shape == (n * n,)
    flat = [r * n + c for r, c in zip(rows, cols)]  # Python ints: exact
    crd = got.coords[0] if out == "coo" else got.indices
    assert crd.dtype == np.int64
    assert crd.tolist() == flat
    np.testing.assert_array_equal(got.data, [1.0, 2.0, 3.0, 4.0])


@pytest.mark.parametrize("out", ["coo", "csr"])
def test_split_into_a_100000_square_matrix(out):
    """A 1-d COO of length 10**10 split into 100000 x 100000."""
    n = 100_000
    flat = [7, 5_000_000_123, n * n - 1]
    v = sp.coo_array((np.array([1.0, 2.0, 3.0]), (np.array(flat, dtype=np.int64),)),
                     shape=(n * n,))
    got = sf.jit(lambda a: a.reshape(n, n), out=out)(v).tocoo()
    assert got.shape == (n, n)
    assert list(zip(got.coords[0].tolist(), got.coords[1].tolist())) == \
        [divmod(f, n) for f in flat]


def test_collapse_with_coordinates_near_2_62():
    """(2**31) x (2**31) COO: flat coordinates up to 2**62 - 1, exact in int64."""
    n = 2**31
    C = sp.coo_array((np.array([1.0, 2.0]), (np.array([0, n - 1]), np.array([3, n - 1]))),
                     shape=(n, n))
    got = sf.jit(lambda a: a.reshape(-1), out="coo")(C)
    assert got.coords[0].tolist() == [3, (n - 1) * n + n - 1]


OVERFLOWS = [
    ("collapse 2**32 x 2**32", (2**32, 2**32), lambda a: a.reshape(-1)),
    ("broadcast 4 x 2**62", (2**62,), lambda a: sf.broadcast_to(a, (4, a.shape[0]))),
    ("concat 2**62 + 2**62", (2**62,), lambda a: sf.concat([a, a])),
    ("pad 2**62 by 2**61 each side", (2**62,), lambda a: sf.pad(a, 2**61)),
    ("outer product 2**62 x 2**62", (2**62,),
     lambda a: sf.expand_dims(a, axis=0) * sf.expand_dims(a, axis=1)),
]


@pytest.mark.parametrize("name, shape, fn", OVERFLOWS, ids=[o[0] for o in OVERFLOWS])
def test_sizes_overflowing_int64_are_a_clear_error(name, shape, fn):
    coords = tuple(np.array([0, 3], dtype=np.int64) for _ in shape)
    a = sp.coo_array((np.array([1.0, 2.0]), coords), shape=shape)
    with pytest.raises(sf.InvalidData, match=r"2\*\*63"):
        sf.jit(fn, out="coo")(a)

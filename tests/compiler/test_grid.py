"""The compiler grid (issue #3, "Tests"): every shape operator × input formats × output
formats × dtypes × index widths, compiled with ``sf.jit`` and compared with ``.interpret()``
of the same program on the same data.

Not a cartesian product (each distinct kernel costs ~1 s to build): every operator is run
with every input format and every output format at least once, pairing them diagonally,
while dtypes and index widths rotate through the cases. Each compiled case is run on
several inputs of one *signature* (random data, an all-zero array, another size with the
same size pattern), which reuses the kernel because sizes are symbolic. 0-length axes and
single rows change the signature (sizes 0 and 1 are traced concretely), so they are a
separate, smaller list. The sparse result itself is checked, not only its dense value
(``kernel_checks.check_result``): container type, shape, dtype, canonical storage, pattern.
"""

import itertools
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

import sparsefold as sf

sys.path.insert(0, str(Path(__file__).resolve().parent))
from kernel_checks import check_result, make_input, run_both  # noqa: E402

pytestmark = pytest.mark.cython

OUTS = ("csr", "csc", "coo", "dcsr", "dense")
IN_2D = ("csr", "csc", "coo", "dense")
IN_1D = ("csr", "coo", "dense")
IN_3D = ("coo", "dense")
DTYPES = ("float64", "float32", "int64", "int32", "bool")


@dataclass(frozen=True)
class Op:
    """A shape program, the shapes of its arguments (one tuple per signature-preserving
    variant: the first is also run all-zero), the input formats it is run with, the rank
    of its result, and whether its stored pattern must equal the nonzeros of the result."""

    name: str
    fn: object
    variants: tuple
    formats: tuple = IN_2D
    rank: int = 2
    pattern: bool = True
    dtypes: tuple = DTYPES
    cases: int = 0  # 0: every input format and output name; else this many pairs


OPS = [
    # operators in full (every input format, every output name)
    Op("concat0", lambda a, b: sf.concat([a, b], axis=0), (((4, 6), (3, 6)), ((6, 5), (2, 5)))),
    Op("collapse", lambda a: a.reshape(-1), (((4, 6),), ((3, 5),)), rank=1),
    Op("split", lambda a: a.reshape(4, -1), (((24,),),), IN_1D),
    Op("slice_neg", lambda a: a[-2:0:-2, 5:1:-2], (((7, 6),), ((6, 8),))),
    Op("index_row", lambda a: a[2], (((5, 6),), ((4, 3),)), rank=1),
    Op("transpose", lambda a: a.T, (((4, 6),), ((5, 3),))),
    Op("expand_1d", lambda a: sf.expand_dims(a, axis=1), (((6,),), ((4,),)), IN_1D),
    Op("squeeze0", lambda a: sf.squeeze(a, axis=0), (((1, 6),), ((1, 4),)), rank=1),
    Op("broadcast_row", lambda a: sf.broadcast_to(a, (4, a.shape[1])), (((1, 6),), ((1, 3),))),
    Op("pad0", lambda a: sf.pad(a, ((1, 2), (0, 3))), (((4, 6),), ((3, 5),))),
    Op("pad_const", lambda a: sf.pad(a, 1, constant_values=5), (((4, 6),), ((3, 5),)),
       pattern=False, dtypes=DTYPES[:4]),
    # variants (other axes, ranks, bounds, steps), a few pairs each
    Op("concat-1x3", lambda a, b, c: sf.concat([a, b, c], axis=-1),
       (((3, 2), (3, 4), (3, 5)), ((4, 6), (4, 2), (4, 3))), cases=3),
    Op("concat_1d", lambda a, b: sf.concat([a, b]), (((5,), (3,)), ((2,), (9,))), IN_1D, 1,
       cases=3),
    Op("stack_1d", lambda a, b: sf.stack([a, b], axis=1), (((5,), (5,)), ((3,), (3,))), IN_1D,
       cases=3),
    Op("stack1", lambda a, b: sf.stack([a, b], axis=1), (((4, 6), (4, 6)), ((3, 2), (3, 2))),
       rank=3, cases=2),
    Op("split_3d", lambda a: a.reshape(2, 3, 4), (((24,),),), IN_1D, 3, cases=2),
    Op("reshape_2d", lambda a: a.reshape(3, -1), (((4, 6),),), cases=3),
    Op("collapse_3d", lambda a: a.reshape(a.shape[0], -1), (((2, 3, 4),), ((3, 2, 5),)),
       IN_3D, cases=2),
    Op("slice_pos", lambda a: a[-100:-1:2, 1:100], (((7, 5),), ((6, 4),)), cases=3),
    Op("slice_1d", lambda a: a[7:1:-3], (((9,),), ((12,),)), IN_1D, 1, cases=3),
    Op("index_col", lambda a: a[:, -1], (((5, 6),), ((4, 3),)), rank=1, cases=2),
    Op("index_both", lambda a: a[1, -2], (((5, 6),), ((4, 3),)), rank=0, cases=2),
    Op("permute_index_3d", lambda a: sf.permute_dims(a, (2, 0, 1))[:, 1],
       (((2, 3, 4),), ((3, 4, 2),)), IN_3D, cases=3),
    Op("expand1", lambda a: sf.expand_dims(a, axis=1), (((4, 6),), ((3, 5),)), rank=3,
       cases=2),
    Op("squeeze1", lambda a: sf.squeeze(a, axis=1), (((6, 1),), ((4, 1),)), rank=1, cases=2),
    Op("broadcast_col", lambda a: sf.broadcast_to(a, (a.shape[0], 5)), (((4, 1),), ((6, 1),)),
       cases=2),
    Op("broadcast_1d", lambda a: sf.broadcast_to(a, (3, a.shape[0])), (((6,),), ((4,),)), IN_1D,
       cases=3),
    Op("pad0_1d", lambda a: sf.pad(a, (2, 1)), (((6,),), ((4,),)), IN_1D, 1, cases=3),
]


def effective_out(out: str, rank: int) -> str:
    """The storage an ``out`` name gives for a result of ``rank`` (pipeline docs: 1-d
    compressed results are sparse vectors, n-d sparse results COO, 0-d results dense):
    names with the same storage share one kernel."""
    if rank == 0:
        return "dense"
    if rank == 1 and out in ("csc", "dcsr"):
        return "csr"
    if rank > 2 and out in ("csr", "csc", "dcsr"):
        return "coo"
    return out


def _cases():
    """Diagonal pairing: op k runs input format (i + k) % #formats with output name
    (i + k) % 5, for max(#formats, 5) cases (``op.cases`` for variants of an operator
    already covered in full); dtypes and index widths rotate over the distinct kernels (an
    output name that only aliases another case's storage reuses that case's dtypes, so it
    checks the naming without building a kernel)."""
    dtypes = itertools.cycle(DTYPES)
    widths = itertools.cycle(("int32", "int64", "int64", "int32"))
    for k, op in enumerate(OPS):
        seen: dict[tuple, tuple] = {}
        for i in range(op.cases or max(len(op.formats), len(OUTS))):
            fmt = op.formats[(i + k) % len(op.formats)]
            out = OUTS[(i + k) % len(OUTS)]
            key = (fmt, effective_out(out, op.rank))
            if key not in seen:
                dt = next(dtypes)
                while dt not in op.dtypes:
                    dt = next(dtypes)
                seen[key] = (dt, next(widths))
            dt, width = seen[key]
            yield pytest.param(op, fmt, out, dt, width, id=f"{op.name}-{fmt}-{out}-{dt}-{width}")


def _inputs(shapes, fmt, dtype, width, *, seed=0, zero=False):
    return [make_input(s, fmt, dtype, width, seed=seed + p, zero=zero)
            for p, s in enumerate(shapes)]


@pytest.mark.parametrize("op, fmt, out, dtype, width", list(_cases()))
def test_shape_operator(op, fmt, out, dtype, width):
    runs = [_inputs(op.variants[0], fmt, dtype, width),
            _inputs(op.variants[0], fmt, dtype, width, zero=True)]
    runs += [_inputs(v, fmt, dtype, width, seed=7) for v in op.variants[1:]]
    for args in runs:
        got, expected = run_both(op.fn, args, out)
        check_result(got, expected, out, exact_pattern=op.pattern)


# --- mixed input formats and pydata ---------------------------------------------------------

def concat1(a, b):
    return sf.concat([a, b], axis=1)


PROGRAMS = {op.name: op.fn for op in OPS} | {"concat1": concat1}
PATTERN = {op.name: op.pattern for op in OPS} | {"concat1": True}

MIXED = [
    ("concat0", ((4, 6), (3, 6)), ("csr", "coo"), "csr"),
    ("concat1", ((4, 6), (4, 3)), ("csc", "csr"), "coo"),
    ("concat1", ((4, 6), (4, 3)), ("dense", "csr"), "csc"),
    ("concat-1x3", ((3, 2), (3, 4), (3, 5)), ("coo", "csc", "dense"), "dcsr"),
]


@pytest.mark.parametrize("name, shapes, fmts, out", MIXED,
                         ids=[f"{m[0]}-{'-'.join(m[2])}-{m[3]}" for m in MIXED])
def test_mixed_input_formats(name, shapes, fmts, out):
    args = [make_input(s, f, "float64", "int64", seed=p)
            for p, (s, f) in enumerate(zip(shapes, fmts))]
    got, expected = run_both(PROGRAMS[name], args, out)
    check_result(got, expected, out, exact_pattern=True)


PYDATA = [
    ("concat1", ((4, 6), (4, 3)), "pd_coo", "coo"),
    ("concat0", ((4, 6), (3, 6)), "pd_gcxs", "csr"),
    ("slice_neg", ((7, 6),), "pd_gcxs", "csc"),
    ("collapse", ((4, 6),), "pd_coo", "csr"),
    ("permute_index_3d", ((2, 3, 4),), "pd_coo", "dense"),
]


@pytest.mark.parametrize("name, shapes, fmt, out", PYDATA,
                         ids=[f"{m[0]}-{m[2]}-{m[3]}" for m in PYDATA])
def test_pydata_inputs(name, shapes, fmt, out):
    """pydata in, pydata out (GCXS for 2-d compressed results, COO otherwise)."""
    for zero in (False, True):
        args = _inputs(shapes, fmt, "float64", "int64", zero=zero)
        got, expected = run_both(PROGRAMS[name], args, out)
        check_result(got, expected, out, "pydata", exact_pattern=True)


# --- empty arrays, single rows, 0-length axes -----------------------------------------------

EDGES = [
    ("concat0", ((0, 5), (3, 5)), "csr", "csr"),
    ("concat1", ((3, 0), (3, 4)), "csc", "coo"),
    ("concat1", ((1, 4), (1, 3)), "csr", "dcsr"),
    ("collapse", ((0, 4),), "csr", "csr"),
    ("split", ((0,),), "coo", "csr"),
    ("slice_pos", ((0, 5),), "csr", "csc"),
    ("slice_neg", ((1, 4),), "coo", "dcsr"),
    ("index_row", ((3, 0),), "csr", "csr"),
    ("squeeze0", ((1, 0),), "csr", "coo"),
    ("broadcast_row", ((1, 0),), "csc", "csr"),
    ("pad0", ((0, 3),), "csr", "csr"),
    ("pad_const", ((0, 2),), "coo", "coo"),
]


@pytest.mark.parametrize("name, shapes, fmt, out", EDGES,
                         ids=[f"{e[0]}-{'x'.join(map(str, e[1][0]))}-{e[2]}-{e[3]}"
                              for e in EDGES])
def test_edge_shapes(name, shapes, fmt, out):
    """0-length axes and single rows, each with data and all-zero."""
    for zero in (False, True):
        args = _inputs(shapes, fmt, "float64", "int32", zero=zero, seed=3)
        got, expected = run_both(PROGRAMS[name], args, out)
        check_result(got, expected, out, exact_pattern=PATTERN[name])


def test_single_stored_entry_and_full_rows():
    """One stored entry, and a completely full sparse matrix (every position stored)."""
    f = concat1
    one = make_input((4, 6), "csr", "float64", "int32", density=1 / 24)
    full = make_input((4, 3), "csr", "float64", "int32", density=1.0)
    got, expected = run_both(f, [one, full], "csr")
    check_result(got, expected, "csr", exact_pattern=True)
    assert got.nnz == 1 + 12


def test_symbolic_sizes_reuse_one_kernel():
    """Different shapes of one signature run on the kernel already built (no new build)."""
    from sparsefold.compiler.run import build
    f = sf.jit(lambda a: a[::-2].reshape(-1), out="coo")
    f(make_input((5, 4), "csr", "float64", "int32"))
    before = build.stats()
    for shape in ((7, 3), (2, 9), (11, 5)):
        x = make_input(shape, "csr", "float64", "int32", seed=sum(shape))
        check_result(f(x), sf.asarray(x)[::-2].reshape(-1).interpret(), "coo",
                     exact_pattern=True)
    after = build.stats()
    assert after["builds"] == before["builds"]
    assert after["disk_hits"] == before["disk_hits"]

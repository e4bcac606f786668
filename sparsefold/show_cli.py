"""``sparsefold show``: print the Cython that sparsefold generates for an expression.

    sparsefold show "sf.concat([a, b], axis=1)" -i a=csr:float32:5x4 -i b=csr:float32:5x3 --out csr

Each ``-i NAME=FORMAT:DTYPE:SHAPE`` makes a random example input (formats: csr, csc, coo,
dense); the expression is Python over those names and ``sf``.
"""

from __future__ import annotations

import argparse

import numpy as np

__all__ = ["add_parser", "run"]


def _example(spec: str):
    import scipy.sparse as sp
    try:
        name, rest = spec.split("=", 1)
        fmt, dtype, shape = rest.split(":")
        dims = tuple(int(n) for n in shape.lower().split("x")) if shape else ()
    except ValueError:
        raise SystemExit(f"sparsefold show: bad input {spec!r}; expected "
                         f"NAME=FORMAT:DTYPE:SHAPE such as a=csr:float64:5x4") from None
    rng = np.random.default_rng(0)
    dense = (rng.random(dims) < 0.3) * rng.integers(1, 9, dims)
    dense = dense.astype(dtype)
    if fmt == "dense":
        return name, dense
    if fmt not in ("csr", "csc", "coo"):
        raise SystemExit(f"sparsefold show: format must be csr, csc, coo or dense, not {fmt!r}")
    return name, sp.coo_array(dense).asformat(fmt)


def add_parser(sub) -> None:
    p = sub.add_parser("show", help="print the generated Cython for an expression")
    p.add_argument("expr", help="Python expression over the input names and sf, e.g. "
                                "'sf.concat([a, b], axis=1)'")
    p.add_argument("-i", "--input", action="append", default=[], metavar="NAME=FMT:DTYPE:SHAPE",
                   help="an example input (repeatable), e.g. a=csr:float32:5x4")
    p.add_argument("--out", default=None, help="result format: csr, csc, coo, dcsr, dense")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    import sparsefold as sf
    examples = dict(_example(s) for s in args.input)
    names = list(examples)
    scope = {"sf": sf, "np": np}
    fn = eval(f"lambda {', '.join(names)}: {args.expr}", scope)  # the user's own command line
    sf.show(fn, *examples.values(), out=args.out)
    return 0

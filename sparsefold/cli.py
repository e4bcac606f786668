"""The ``sparsefold`` command line (argparse). Each subcommand lives in the package that owns
it and is registered here with ``add_parser(subparsers)`` / ``run(args) -> int``."""

from __future__ import annotations

import argparse
import sys

__all__ = ["main"]


def _demo(args: argparse.Namespace) -> int:
    import numpy as np
    import scipy.sparse as sp

    import sparsefold as sf

    rng = np.random.default_rng(0)
    a = sp.random_array((6, 5), density=0.3, format="csr", rng=rng, dtype=np.float64)
    x = sf.asarray(a)
    y = sf.concat([x, x], axis=1)[::2].reshape(-1) * 2 + 1
    print("Program (a lazy array; nothing has run yet):")
    print(y)
    got = y.interpret()
    dense = a.toarray()
    want = np.concatenate([dense, dense], axis=1)[::2].reshape(-1) * 2 + 1
    print("\ninterpret() ->", np.array2string(got[:10], precision=3), "... shape", got.shape)
    same = np.array_equal(got, want)
    print("equal to the same computation in NumPy:", same)

    A = sf.symbol("A", shape=("I", "J"))
    B = sf.symbol("B", shape=("I", "K"))
    z = sf.concat([A, B], axis=1)[:, :"J"]
    print("\nSymbolic sizes: concat([A(I,J), B(I,K)], axis=1)[:, :J] has shape", z.shape)
    return 0 if same else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="sparsefold", description="A formally specified array language for sparse data.")
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="build a small program and run the reference interpreter")
    demo.set_defaults(run=_demo)
    from sparsefold.compiler.run import cache_cli  # `sparsefold cache list|clear|dir`
    cache_cli.add_parser(sub)
    from sparsefold.benchmarks import run as _bench  # `sparsefold bench [--quick] ...`
    _bench.add_parser(sub)
    from sparsefold.benchmarks import dask_scaling  # `sparsefold bench --dask`
    dask_scaling.add_flag(sub.choices["bench"])
    from sparsefold.benchmarks import compile_time  # `sparsefold bench --compile-time`
    compile_time.add_flag(sub.choices["bench"])
    from sparsefold.benchmarks import sweep  # `sparsefold bench --sweep [--sweep-n N] ...`
    sweep.add_flag(sub.choices["bench"])
    # `sparsefold bench --first-answer`; last, so that every other bench run is untiered
    from sparsefold.benchmarks import first_answer
    first_answer.add_flag(sub.choices["bench"])
    from sparsefold import show_cli  # `sparsefold show EXPR -i a=csr:float64:5x4`
    show_cli.add_parser(sub)
    from sparsefold.verify import cli as _prove  # `sparsefold prove [--smt2 RULE]`
    _prove.add_parser(sub)
    from sparsefold.verify import fuzz as _fuzz  # `sparsefold fuzz [--iterations N] ...`
    _fuzz.add_parser(sub)
    from sparsefold import aot_generate as _aot  # `sparsefold aot SPEC.py -o PKG/_kernels`
    _aot.add_parser(sub)
    args = parser.parse_args(argv)
    return args.run(args)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

"""``sparsefold prove``: prove the lemma library, the counting-sort placement the bucket and
scatter assemblies rely on (``verify.coverage``), every shape-operator entry, the zero
algebra of every elementwise function (``verify.zero_algebra``: what the compiler's merge
lattices rely on), every rule of the catalog, and refute every deliberately wrong rule.
One row per item (name, status, time), a summary, then the final line
``N passed, N failed``; the exit status is 1 when any item has an unexpected status, 2 when
``--only`` matches no item. ``--smt2 RULE`` prints the SMT-LIB of a rule's value query.

The summary splits the rule instances by status: ``proved`` (exactly: the optimizer may apply
them) and ``proved-real`` (in real arithmetic only: floating point may differ by rounding,
as a reassociated sum does; never applied).
"""

from __future__ import annotations

import argparse
import sys
import time

__all__ = ["add_parser", "run"]


def add_parser(subparsers) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "prove", help="prove the operator entries and rewrite rules (Z3)",
        description="Prove every shape-operator entry and rewrite rule for symbolic sizes, "
                    "and check that every deliberately wrong rule is refuted.")
    p.add_argument("--only", metavar="TEXT", default=None,
                   help="only items whose name contains TEXT")
    p.add_argument("--smt2", metavar="RULE", default=None,
                   help="print the SMT-LIB query of RULE's value obligation and exit")
    p.add_argument("--obligation", default="value",
                   help="with --smt2: value | lhs_bounds | rhs_bounds (default: value)")
    p.add_argument("--module", metavar="MODULE", default=None,
                   help="prove the rules, wrong rules (expect=REFUTED) and operator entries "
                        "(ShapeOp subclasses with configurations()) defined in MODULE "
                        "instead of the built-in catalog")
    p.add_argument("--kernel", metavar="EXPR", default=None,
                   help="print the certificate of the kernel compiled for EXPR (a Python "
                        "expression over the inputs named by -i, with sf = sparsefold and "
                        "np = numpy) and exit: 0 when proved, 1 otherwise")
    p.add_argument("-i", "--input", metavar="NAME=FORMAT:SHAPE", action="append", default=[],
                   help="with --kernel: an input, e.g. a=csr:50x40 (csr, csc, coo or dense; "
                        "random float64 data)")
    p.add_argument("--out", default=None, help="with --kernel: the output format")
    p.add_argument("-v", "--verbose", action="store_true",
                   help="print every obligation of items that are not as expected")
    p.set_defaults(run=run)
    return p


def _row(name: str, status: str, seconds: float, detail: str, ok: bool) -> str:
    mark = "" if ok else "  UNEXPECTED"
    return f"{name:<38} {status:<11} {seconds:6.2f}s  {detail}{mark}"


def _example(spec: str):
    """``NAME=FORMAT:SHAPE`` -> (name, a random array of that format and shape)."""
    import numpy as np
    import scipy.sparse as sp
    try:
        name, rest = spec.split("=", 1)
        fmt, shape_text = rest.split(":", 1)
        shape = tuple(int(n) for n in shape_text.lower().split("x"))
    except ValueError:
        raise SystemExit(f"sparsefold prove: -i expects NAME=FORMAT:SHAPE such as "
                         f"a=csr:50x40, found {spec!r}") from None
    if not name.isidentifier() or fmt not in ("csr", "csc", "coo", "dense"):
        raise SystemExit(f"sparsefold prove: -i {spec!r}: expected an identifier and one of "
                         f"csr, csc, coo, dense")
    rng = np.random.default_rng(sum(map(ord, name)))
    if fmt == "dense":
        return name, rng.random(shape)
    return name, sp.random_array(shape, density=0.2, format=fmt, rng=rng)


def _kernel(args: argparse.Namespace) -> int:
    """``--kernel EXPR -i ...``: the certificate of the kernel ``sf.jit`` compiles."""
    import numpy as np

    import sparsefold as sf
    from sparsefold.verify.kernels import prove_kernel
    examples = dict(_example(s) for s in args.input)
    names = list(examples)
    # the user's own expression, evaluated in their own shell like python -c
    fn = eval(f"lambda {', '.join(names)}: {args.kernel}",  # noqa: S307
              {"sf": sf, "np": np})
    cert = prove_kernel(sf.jit(fn, out=args.out), *examples.values())
    print(cert)
    return 0 if cert.status == "proved" else 1


def _module_items(name: str):
    """(operator classes, rules, wrong rules) defined in module ``name``: module attributes
    that are rules (or lists of rules), and ShapeOp subclasses whose home is the module."""
    import importlib

    from sparsefold.spec.ir import ShapeOp
    from sparsefold.spec.rules import REFUTED, Rule
    try:
        mod = importlib.import_module(name)
    except ImportError as exc:
        raise SystemExit(f"sparsefold prove: cannot import --module {name!r}: {exc}") from None
    ops, rules, wrongs, seen = [], [], [], set()
    for value in vars(mod).values():
        for item in value if isinstance(value, (list, tuple)) else (value,):
            if id(item) in seen:
                continue
            seen.add(id(item))
            if isinstance(item, Rule):
                (wrongs if item.expect == REFUTED else rules).append(item)
            elif isinstance(item, type) and issubclass(item, ShapeOp) \
                    and item.__module__ == mod.__name__:
                ops.append(item)
    return ops, rules, wrongs


def run(args: argparse.Namespace) -> int:
    from sparsefold.spec import SHAPE_OPERATORS
    from sparsefold.spec.errors import IllFormedProgram
    from sparsefold.spec.functions import FUNCTIONS
    from sparsefold.verify import fill_algebra, lemmas, operators, zero_algebra
    from sparsefold.verify.catalog import RULES, get_rule
    from sparsefold.verify.results import PROVED, PROVED_REAL
    from sparsefold.verify.rules import prove_rule
    from sparsefold.verify.wrong_rules import WRONG_RULES

    if args.kernel:
        return _kernel(args)
    if args.smt2:
        from sparsefold.verify.equal import smt2
        try:
            r = get_rule(args.smt2)
        except KeyError as exc:
            print(exc.args[0], file=sys.stderr)
            return 2
        inst = r.instances()[0]
        print(f"; rule {inst.label}: lhs == rhs, obligation {args.obligation!r}; "
              f"the query is the negation (unsat = proved)")
        print(smt2(inst.lhs, inst.rhs, when=inst.when, obligation=args.obligation))
        return 0

    lemma_list, op_items, fn_names = list(lemmas.LEMMAS), list(SHAPE_OPERATORS), list(FUNCTIONS)
    rules, wrongs = list(RULES), list(WRONG_RULES)
    if args.module:  # the user's own items instead of the built-in catalog
        op_items, rules, wrongs = _module_items(args.module)
        lemma_list, fn_names = [], []

    def wanted(name: str) -> bool:
        return args.only is None or args.only in name

    t0 = time.perf_counter()
    passed = failed = 0
    totals = {"obligations": {}, "instances": {}}

    def record(ok: bool) -> None:
        nonlocal passed, failed
        passed, failed = passed + ok, failed + (not ok)

    print(f"{'item':<38} {'status':<11} {'time':>7}  detail")
    for lemma in lemma_list:
        if wanted("lemma " + lemma.name):
            status, secs = lemmas.prove_lemma(lemma.name)
            ok = status == PROVED
            record(ok)
            print(_row("lemma " + lemma.name, status, secs, lemma.statement, ok))
    if not args.module and wanted("reorder counting_sort"):
        from sparsefold.verify.coverage import REORDER_STATEMENT, prove_reorder
        t1 = time.perf_counter()
        results = prove_reorder()
        ok = all(s == PROVED for _, s in results)
        record(ok)
        print(_row("reorder counting_sort", PROVED if ok else "unproved",
                   time.perf_counter() - t1, REORDER_STATEMENT, ok))
    if not args.module and wanted("promotion table"):
        from sparsefold.verify.promotion import PROMOTION_STATEMENT, prove_promotion
        rep = prove_promotion()
        record(rep.proved)
        print(_row("promotion table", PROVED if rep.proved else "refuted", rep.seconds,
                   PROMOTION_STATEMENT if rep.proved else f"{rep.failures}", rep.proved))
    for what in op_items:
        name = what if isinstance(what, str) else what.__name__.lower()
        if not wanted("operator " + name):
            continue
        try:
            rep = operators.prove_operator(what)
        except IllFormedProgram as exc:  # a user class with no configurations()
            record(False)
            print(_row("operator " + name, "unproved", 0.0, str(exc), False))
            continue
        ok = rep.status == PROVED
        record(ok)
        for status, n in rep.counts().items():
            totals["obligations"][status] = totals["obligations"].get(status, 0) + n
        detail = (f"{len(rep.instances)} configurations, {len(rep.obligations)} obligations; "
                  f"{rep.order_summary()}")
        print(_row("operator " + name, rep.status, rep.seconds, detail, ok))
        if not ok and args.verbose:
            print(rep)
    for fn_name in fn_names:
        if not wanted("function " + fn_name):
            continue
        report = zero_algebra.prove_function(FUNCTIONS[fn_name])
        report.facts += fill_algebra.prove_fill_values(FUNCTIONS[fn_name])
        ok = report.status in (PROVED, zero_algebra.PROBED)  # probed: numerically, not proved
        record(ok)
        print(_row("function " + fn_name, report.status,
                   sum(f.seconds for f in report.facts), report.summary()[:160], ok))
    for r in rules + wrongs:
        label = ("wrong " if r in wrongs else "rule ") + r.name
        if not wanted(label):
            continue
        rep = prove_rule(r)
        ok = rep.as_expected
        record(ok)
        for res in rep.results:
            key = "wrong" if r in wrongs else res.status
            totals["instances"][key] = totals["instances"].get(key, 0) + 1
        n = len(rep.results)
        if r in wrongs:
            detail = f"refuted at {r.fails!r} as expected" if ok else \
                f"expected refutation at {r.fails!r}"
            cx = rep.counterexample
            if cx is not None:
                detail += f"; {cx}"
        else:
            methods = sorted({o.method for res in rep.results for o in res.obligations
                              if o.status in (PROVED, PROVED_REAL)
                              and o.method != "syntactic"})
            detail = f"{n} instance{'s' * (n != 1)}" + (f" ({', '.join(methods)})"
                                                       if methods else "")
            notes = {o.note for res in rep.results for o in res.obligations if o.note}
            if notes:
                detail += "; " + "; ".join(sorted(notes))
        print(_row(label, rep.status, rep.seconds, detail[:160], ok))
        if not ok and args.verbose:
            print(rep)
    if passed + failed == 0:
        print(f"no item matches --only {args.only!r}", file=sys.stderr)
        return 2
    ob = totals["obligations"]
    inst = totals["instances"]
    spelled = {PROVED: "proved exactly", PROVED_REAL: "proved-real (up to rounding)"}
    by_status = ", ".join(f"{v} {spelled.get(k, k)}" for k, v in sorted(inst.items())
                          if k != "wrong")
    print(f"summary: {sum(ob.values())} operator obligations "
          f"({', '.join(f'{v} {k}' for k, v in sorted(ob.items())) or 'none'}); "
          f"rule instances: {sum(v for k, v in inst.items() if k != 'wrong')} "
          f"({by_status or 'none'})"
          f"; wrong-rule instances: {inst.get('wrong', 0)}; "
          f"total {time.perf_counter() - t0:.1f}s")
    print(f"{passed} passed, {failed} failed")
    return 0 if failed == 0 else 1

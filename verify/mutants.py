"""Mutation check of the differential tests (issue #27): known bugs injected into a copy of
the compiler's planning and lowering must each be caught by random programs.

Each mutant replaces one function of ``sparsefold.compiler`` — in a child process of its
own, so the real compiler is never touched — with a version carrying a bug of a kind that
has happened or easily could:

* ``drop-index``: a forward map loses its constant offset (``i + M0`` of a concat's second
  piece, a pad's ``i + P``): entries land at the wrong coordinates;
* ``swap-pieces``: the first two pieces of a shape operator read each other's leaf (a
  concat of equal-shaped operands); the shape is right, the values are not;
* ``slice-start``: a slice's start read one too far (``x[1::2]`` as ``x[2::2]``, ``x[:]``
  as ``x[1:]``);
* ``reduction-identity``: a reduction's output cells start at the wrong value (sum at 1,
  max and min at 0);
* ``constant-guard``: issue #27's own bug again — a piece guard naming no coordinate is
  dropped by the row-driven loops (``stack([a, b])[1]`` computes ``a + b``).

:func:`run_mutant` draws programs from :func:`verify.language.language_programs` (a fixed
seed) and judges each by ``program_fuzz.check`` (without the scale check) until one fails —
the mutant is *caught* — or the budget runs out. Interpreter and compiler share the spec,
so every mutant lives on the compiler side only; the interpreter's answers stay right.
``tests/verify/test_mutants.py`` runs every mutant in CI; ``python -m
sparsefold.verify.mutants --mutant NAME`` runs one and prints the program that caught it.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable

__all__ = ["MUTANTS", "run_mutant", "apply_mutant"]


def _drop_index():
    from sparsefold.compiler.plan import streams
    from sparsefold.spec import sizes as sz
    original = streams._compose

    def coordinate_free(e):
        return not any(s.startswith("_") for s in sz.free_symbols(e)) and \
            sz.const_value(e) != 0

    def dropped(c):  # i + M0, M0 + i, i - M0: the offset (a size or a constant) dropped
        if isinstance(c, sz.Op) and c.op in ("add", "sub") and len(c.args) == 2:
            if coordinate_free(c.args[1]) and not coordinate_free(c.args[0]):
                return c.args[0]
            if c.op == "add" and coordinate_free(c.args[0]) and not coordinate_free(c.args[1]):
                return c.args[1]
        return c

    def compose(node, piece, sp):
        # both directions: the lowerings read the forward map (where an entry lands) or the
        # backward one (where an output coordinate reads), by plan
        out = original(node, piece, sp)
        return streams.StreamPiece(out.leaf, tuple(dropped(c) for c in out.coords), out.guard,
                                   out.free, out.layers,
                                   tuple(dropped(c) for c in out.backward), out.out_guard)
    streams._compose = compose


def _swap_pieces():
    from dataclasses import replace

    from sparsefold.compiler.plan import streams
    original = streams._through_shape_op

    def through(node):
        pieces = list(original(node))
        if len(pieces) >= 2 and pieces[0].leaf.shape == pieces[1].leaf.shape and \
                pieces[0].leaf.name != pieces[1].leaf.name:
            a, b = pieces[0], pieces[1]
            pieces[0], pieces[1] = replace(a, leaf=b.leaf), replace(b, leaf=a.leaf)
        return tuple(pieces)
    streams._through_shape_op = through


def _slice_start():
    from sparsefold.compiler.plan import streams
    from sparsefold.spec.ops_index import Slice
    original = streams._through_shape_op

    def through(node):
        if isinstance(node, Slice):
            shifted = []
            for start, stop, step in node.slices:
                if (step is None or (isinstance(step, int) and step > 0)) and \
                        (start is None or (isinstance(start, int) and start >= 0)):
                    start = (start or 0) + 1
                shifted.append((start, stop, step))
            mutated = Slice(node.arg, tuple(shifted))
            return tuple(streams._compose(node, piece, sp)
                         for piece in mutated.index_map().pieces
                         for sp in streams.stream_pieces(node.arg))
        return original(node)
    streams._through_shape_op = through


def _reduction_identity():
    import numpy as np

    from sparsefold.compiler.lower import fastcall, outputs
    original = outputs.start_value

    def start_value(monoid, dt):
        name = monoid if isinstance(monoid, str) else monoid.name
        if name == "sum":
            return np.asarray(1).astype(dt)[()]
        if name in ("max", "min"):
            return np.asarray(0).astype(dt)[()]
        return original(monoid, dt)
    outputs.start_value = start_value
    fastcall.start_value = start_value


def _constant_guard():
    from sparsefold.compiler.lower import cursors, lower_contract, lower_stream
    from sparsefold.spec import sizes as sz

    def row_guards(piece, row):
        return [g for g in sz.conjuncts(piece.out_guard) if row in sz.free_symbols(g)]

    def implied(piece, row, rows=None):  # the drop without its proof, as it was
        a = sz.in_coord(piece.leaf.format.mode_order[0]).name
        return tuple(g for g in sz.conjuncts(piece.guard)
                     if {s for s in sz.free_symbols(g) if s.startswith("_")} <= {a})
    for module in (cursors, lower_stream, lower_contract):
        module.implied_row_guards = implied

    def cursor_row_guards(self):
        return [g for g in sz.conjuncts(self.piece.out_guard)
                if self.row_symbol in sz.free_symbols(g)]
    lower_stream.row_guards = row_guards
    lower_contract.row_guards = row_guards
    cursors.RowCursor.row_guards = cursor_row_guards
    from sparsefold.compiler import kernel
    kernel.row_guards = row_guards


MUTANTS: dict[str, tuple[str, Callable[[], None]]] = {
    "drop-index": ("a forward map loses its constant offset", _drop_index),
    "swap-pieces": ("two pieces of a shape operator read each other's leaf", _swap_pieces),
    "slice-start": ("a slice's start is read one too far", _slice_start),
    "reduction-identity": ("reductions start at the wrong value", _reduction_identity),
    "constant-guard": ("a guard naming no coordinate is dropped (stack([a, b])[1])",
                       _constant_guard),
}


def apply_mutant(name: str) -> None:
    """Inject mutant ``name`` into this process's compiler (there is no undo)."""
    MUTANTS[name][1]()


def _hunt(name: str, programs: int, seed: int, time_budget: float, first: int = 0,
          only: bool = False) -> dict:
    """In this process: the mutant applied (``none``: no mutant), programs ``first, ...``
    judged until one fails (``only``: program ``first`` alone)."""
    from sparsefold.verify import program_fuzz
    if name != "none":
        apply_mutant(name)
    cases = program_fuzz.generate(seed, programs)
    start = time.time()
    for k, case in enumerate(cases):
        if k < first or (only and k > first):
            continue
        if time.time() - start > time_budget:
            return {"caught": False, "tried": k, "why": "time budget"}
        try:
            outcome, detail, _ = program_fuzz.check(case, scale=False)
        except Exception as exc:  # noqa: BLE001 - an exception out of the harness counts
            outcome, detail = "failure", f"{type(exc).__name__}: {exc}"
        if outcome == "failure":  # (dense work is a finding of its own, not the mutant's)
            return {"caught": True, "tried": k + 1, "index": k, "program": case.source,
                    "out": str(case.out), "detail": detail.splitlines()[0][:300],
                    "seconds": round(time.time() - start, 1)}
    return {"caught": False, "tried": len(cases), "why": "budget of programs"}


def _child(name: str, programs: int, seed: int, time_budget: float, first: int,
           only: bool = False) -> dict:
    cmd = [sys.executable, "-m", "sparsefold.verify.mutants", "--mutant", name, "--programs",
           str(programs), "--seed", str(seed), "--time-budget", str(time_budget), "--first",
           str(first), "--json"] + (["--only"] if only else [])
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=time_budget + 600,
                          # prebuilt kernels are compiled without the mutant: off
                          env=dict(os.environ, PYTHONFAULTHANDLER="1", SPARSEFOLD_PREBUILT="0"))
    if done.returncode != 0:
        return {"caught": True, "tried": None, "died": True, "detail": f"the child process "
                f"died (code {done.returncode}): {done.stderr.strip()[-300:]}"}
    return json.loads(done.stdout.strip().splitlines()[-1])


def run_mutant(name: str, *, programs: int = 200, seed: int = 0,
               time_budget: float = 600.0) -> dict:
    """Mutant ``name`` hunted in a child process: ``{"caught": bool, "tried": n,
    "program": ..., "detail": ...}``. A program counts only when the compiler without the
    mutant gets it right (checked in another child); one that fails there too is a bug of
    its own, listed under ``"unmutated_failures"``, and the hunt goes on after it. A child
    that dies (a crash the mutant causes) is caught too."""
    if name not in MUTANTS:
        raise ValueError(f"unknown mutant {name!r}; the mutants are {sorted(MUTANTS)}")
    start, first, real = time.time(), 0, []
    while True:
        left = time_budget - (time.time() - start)
        if left <= 0:
            return {"caught": False, "tried": first, "why": "time budget",
                    "unmutated_failures": real}
        result = _child(name, programs, seed, left, first)
        if not result["caught"] or result.get("died"):
            result["unmutated_failures"] = real
            return result
        plain = _child("none", programs, seed, max(60.0, left), result["index"], only=True)
        if not plain["caught"]:
            result["unmutated_failures"] = real
            return result
        real.append({"program": result["program"], "detail": result["detail"]})
        first = result["index"] + 1


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m sparsefold.verify.mutants",
                                description=__doc__.split("\n\n")[0])
    p.add_argument("--mutant", required=True, choices=sorted(MUTANTS) + ["none"])
    p.add_argument("--first", type=int, default=0, help="start at this program")
    p.add_argument("--only", action="store_true", help="judge program --first alone")
    p.add_argument("--programs", type=int, default=200)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--time-budget", type=float, default=600.0)
    p.add_argument("--json", action="store_true", help="print one JSON line")
    args = p.parse_args(argv)
    result = _hunt(args.mutant, args.programs, args.seed, args.time_budget, args.first,
                   only=args.only)
    if args.json:
        print(json.dumps(result))
    else:
        print(f"{args.mutant}: {'caught' if result['caught'] else 'NOT caught'} after "
              f"{result['tried']} program(s)")
        for key in ("program", "out", "detail", "why"):
            if key in result:
                print(f"  {key}: {result[key]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

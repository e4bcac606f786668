"""Counterexamples to index-level obligations (operator entries), confirmed without Z3.

A counterexample to a rule (two programs) is :class:`sparsefold.verify.replay.Counterexample`;
this module holds the one for an operator obligation: concrete sizes and coordinates at which
the obligation's assumptions hold and its goal does not, re-checked with the exact Python
reading of the size expressions (and, for the map obligations, through the interpreter).
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass

from sparsefold.spec import sizes as sz
from sparsefold.spec.ir import ShapeOp

__all__ = ["IndexCounterexample", "show_values"]


def show_values(values: dict[str, int], *, sizes: bool) -> str:
    names = sorted(n for n in values if n.startswith("_") != sizes)
    return "{" + ", ".join(f"{n.lstrip('_')}: {values[n]}" for n in names) + "}"


@dataclass
class IndexCounterexample:
    """Sizes and coordinates violating obligation ``obligation`` of instance ``node``."""

    node: ShapeOp
    obligation: str
    values: dict[str, int]

    def _find(self):
        from sparsefold.verify.obligations import obligations, properties
        for ob in obligations(self.node) + properties(self.node):
            if ob.name == self.obligation:
                return ob
        raise KeyError(self.obligation)

    def replay(self) -> bool:
        """True when the exact Python reading confirms the violation."""
        from sparsefold.verify.obligations import holds
        return holds(self._find(), self.values) is False

    def interpret(self) -> str | None:
        """Run the operator through the reference interpreter at these sizes, on distinct
        values, and compare with what the forward maps claim (``out[forward(i)]`` must be
        ``operand[i]``). A description of the first disagreement or failure, else None."""
        import numpy as np

        from sparsefold.interp import evaluate
        from sparsefold.spec.errors import SparsefoldError
        from sparsefold.verify.obligations import py_eval
        from sparsefold.verify.programs import substitute_program
        sizes = {k: v for k, v in self.values.items() if not k.startswith("_")}
        try:
            node = substitute_program(self.node, sizes)
            data = {}
            for n, o in enumerate(node.operands()):
                shape = tuple(int(py_eval(s, {})) for s in o.shape)
                data[o.name] = (np.arange(int(np.prod(shape)), dtype=np.float64)
                                + 100 * (n + 1)).reshape(shape)
            out = evaluate(node, data)
        except (SparsefoldError, IndexError) as exc:
            return f"the interpreter fails: {exc}"
        im = node.index_map()
        for p in im.pieces:
            src = data[node.operands()[p.operand].name]
            for i in np.ndindex(src.shape):
                env = sz.in_binding(i)
                if not py_eval(p.forward_guard, env):
                    continue
                k = tuple(0 if f is None else py_eval(f, env) for f in p.forward)
                if not all(0 <= c < n for c, n in zip(k, out.shape)):
                    return f"forward{i} = {k} is outside the output {out.shape}"
                if out[k] != src[i]:
                    return (f"the interpreter puts {out[k].item()!r} at forward{i} = {k}, but "
                            f"the operand holds {src[i].item()!r} at {i}")
        return None

    def detail(self) -> str:
        """What goes wrong at these values, evaluated with the Python reading."""
        from sparsefold.verify.obligations import failing_part, py_eval
        if not self.obligation.startswith("order"):
            return failing_part(self._find().goal, self.values)
        im = self.node.index_map()
        tag = self.obligation[len("order["):-1]
        first, _, second = tag.partition("<")
        p = next(x for x in im.pieces if str(x.operand) == first)
        q = next(x for x in im.pieces if str(x.operand) == (second or first))

        def image(piece, prefix, free):
            n = len(im.in_shapes[piece.operand])
            env = dict(self.values) | sz.in_binding(
                [self.values.get(f"{prefix}{d}", 0) for d in range(n)])
            return tuple(self.values.get(f"_f{free}{d}", "*") if f is None else py_eval(f, env)
                         for d, f in enumerate(piece.forward))

        def coords(prefix, piece):
            return tuple(self.values.get(f"{prefix}{d}", 0)
                         for d in range(len(im.in_shapes[piece.operand])))
        return (f"forward{coords('_i', p)} = {image(p, '_i', 'a')} does not precede "
                f"forward{coords('_j', q)} = {image(q, '_j', 'b')}")

    def __str__(self) -> str:
        return (f"{self.obligation} fails at sizes={show_values(self.values, sizes=True)} "
                f"coords={show_values(self.values, sizes=False)}: {self.detail()}")

    def as_test(self, name: str | None = None) -> str:
        """A pytest function that fails while the entry is wrong: it checks the obligation
        at these values with the exact Python reading."""
        from sparsefold.verify.source import program_source
        fname = name or f"test_{type(self.node).__name__.lower()}_{_ident(self.obligation)}"
        imports, lines = program_source(self.node, "node")
        body = "\n".join(f"    {line}" for line in imports + lines)
        doc = textwrap.fill(f"Regression found by sparsefold.verify: {self}", 90,
                            subsequent_indent="    ").replace('"' * 3, "'" * 3)
        return (
            f"def {fname}():\n"
            f'    """{doc}\n    """\n'
            f"    from sparsefold.verify.obligations import holds, obligations, properties\n"
            f"{body}\n"
            f"    ob = next(o for o in obligations(node) + properties(node)\n"
            f"              if o.name == {self.obligation!r})\n"
            f"    assert holds(ob, {self.values!r}) is not False\n")


def _ident(text: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in text).strip("_")

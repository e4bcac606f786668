"""``rewrite(program)``: the compiler's optimize pass (``sparsefold.compiler.plan.optimize``) with
this package's prover — only instances whose proof is ``proved`` (``verify.rules``, cached per
process) are applied. Accepts and returns front-end arrays as well as nodes.
"""

from __future__ import annotations

from sparsefold.compiler.plan.optimize import Rewrite, applicable_instances, match
from sparsefold.compiler.plan.optimize import rewrite as _rewrite
from sparsefold.spec.programs import as_node
from sparsefold.verify.rules import instance_proved

__all__ = ["rewrite", "match", "applicable_instances", "Rewrite"]


def rewrite(program, rules=None, *, max_steps: int = 1000, log: list | None = None):
    """``program`` (a node or LazyArray) with proved rules applied bottom-up to a fixed
    point. Returns the same kind of object; ``log`` (a list) receives :class:`Rewrite`
    records. ``rules`` defaults to the catalog."""
    result = _rewrite(as_node(program), instance_proved, rules, max_steps=max_steps, log=log)
    if hasattr(program, "node"):
        import sparsefold as sf
        return sf.LazyArray(result, program.bindings)
    return result

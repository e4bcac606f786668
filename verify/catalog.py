"""The rewrite-rule catalog as the verifier sees it: the rules are language data
(:mod:`sparsefold.spec.catalog`, re-exported here); :func:`get_rule` finds a catalog or
deliberately wrong rule by name (``sparsefold prove --smt2 RULE``)."""

from __future__ import annotations

from sparsefold.spec.catalog import RULES
from sparsefold.spec.rules import Rule

__all__ = ["RULES", "get_rule"]


def get_rule(name: str) -> Rule:
    """The catalog (or wrong-rule) entry called ``name``."""
    from sparsefold.verify.wrong_rules import WRONG_RULES
    for r in RULES + WRONG_RULES:
        if r.name == name:
            return r
    raise KeyError(f"no rule named {name!r}")

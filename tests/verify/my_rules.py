"""A user's module for ``sparsefold prove --module my_rules`` (``test_cli.py``): one rule,
one deliberately wrong rule, one operator entry with configurations, and one without.
Not a test module (no ``test_`` prefix)."""

from __future__ import annotations

from dataclasses import dataclass

from user_ops import Flip

from sparsefold.spec.compute import symbolic_input
from sparsefold.spec.rules import REFUTED
from sparsefold.verify.rules import rule

# reversing twice is the identity
TWICE = rule("reverse_twice", lambda x: x[::-1][::-1], lambda x: x, x=("N",))

RULES = [
    # a slice of a slice: x[2:][1:] == x[3:]
    rule("slice_of_slice", lambda x: x[2:][1:], lambda x: x[3:], x=("N",)),
    # wrong on purpose: x[1:][1:] is x[2:], not x[1:]
    rule("slice_of_slice_wrong", lambda x: x[1:][1:], lambda x: x[1:], expect=REFUTED,
         fails="shape", x=("N",)),
]


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class MyFlip(Flip):
    """Flip, with the configurations ``prove --module`` proves it over."""

    @classmethod
    def configurations(cls):
        yield MyFlip(symbolic_input("X", "N0", "N1"), 1)


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Unlisted(Flip):
    """No configurations(): prove --module cannot prove it, and says so."""

"""Conditions on sizes written as Python text (kept for ``from sparsefold.verify.conditions
import parse_condition``): the definition is :mod:`sparsefold.spec.conditions`, since a rule's
``when`` is language data."""

from sparsefold.spec.conditions import parse_condition

__all__ = ["parse_condition"]

"""The facts proved about gather's data-dependent map (verify/gather.py), and that each
one needs its run-time condition (without it, Z3 finds a counterexample)."""

from sparsefold.verify.gather import FACTS, prove_facts


def test_every_fact_is_proved():
    assert prove_facts() == {name: "proved" for name in FACTS}


def test_every_fact_needs_its_condition():
    assert prove_facts(wrong=True) == {name: "refuted" for name in FACTS}

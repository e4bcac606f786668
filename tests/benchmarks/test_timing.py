"""The timing loop frees every result it times, cyclic ones included (``benchmarks/timing``):
the collector is off while timing, and GraphBLAS and pydata results sit in reference cycles,
which once took a ``--scale`` run past the machine's memory."""

from __future__ import annotations

import time

from sparsefold.benchmarks import timing


class _Cyclic:
    """A result in a reference cycle: ``del`` alone does not free it."""

    alive = 0

    def __init__(self):
        self.me = self
        _Cyclic.alive += 1

    def __del__(self):
        _Cyclic.alive -= 1


def _slow_cyclic():
    time.sleep(2 * timing._COLLECT_AFTER_S)  # long enough to be collected after its clock
    return _Cyclic()


def test_cyclic_results_of_long_calls_are_freed_while_timing():
    seen = []

    def call():
        seen.append(_Cyclic.alive)  # how many earlier results are still alive at each call
        return _slow_cyclic()

    _Cyclic.alive = 0
    result = timing.best_of(call, repeat=6, limit=10.0)
    assert result.status == "ok" and result.runs == 6
    assert max(seen) == 0, seen
    assert _Cyclic.alive == 0


def test_cyclic_results_of_short_calls_are_freed_at_the_end():
    _Cyclic.alive = 0
    result = timing.best_of(_Cyclic, repeat=20, limit=10.0)
    assert result.status == "ok"
    assert _Cyclic.alive == 0

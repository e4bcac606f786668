"""A compiled call under a time limit (``verify.differential(..., time_limit=...)``).

The call runs in a forked child process, so a kernel that runs past the limit is killed and
reported instead of hanging the test run. Compiling a kernel is not running it: while the
child builds a kernel module (``compiler.run.build.load_module``: Cython and gcc on a cache
miss, a load otherwise) the clock stops, and it restarts from zero once the module is
loaded — the limit is on running time. The child sends back the result (pickled), the
exception it raised (its type, message, traceback text and whether it is
``InvalidData``), and which inputs the call modified.

Needs the ``fork`` start method (Linux, macOS); elsewhere a time limit is refused.
"""

from __future__ import annotations

import multiprocessing
import os
import time
from dataclasses import dataclass
from typing import Any

__all__ = ["Outcome", "call_limited"]


@dataclass
class Outcome:
    """What the call did: ``kind`` is "ok" (``result``, ``modified``), "raised"
    (``error``: type name, message, traceback text, is-InvalidData) or "timeout" / "died"
    (``error``: what happened)."""

    kind: str
    result: Any = None
    modified: tuple[int, ...] = ()
    error: tuple = ()


def _child(conn, call, inputs, snapshot, same) -> None:
    import numpy as np

    from sparsefold.compiler.run import build
    from sparsefold.spec.errors import InvalidData
    original = build.load_module

    def load_module(*args, **kwargs):
        conn.send(("building",))
        try:
            return original(*args, **kwargs)
        finally:
            conn.send(("built",))

    build.load_module = load_module
    try:
        before = [snapshot(a) for a in inputs]
        with np.errstate(all="ignore"):
            got = call(*inputs)
        modified = tuple(p for p, (a, s) in enumerate(zip(inputs, before))
                         if not same(s, snapshot(a)))
        conn.send(("ok", got, modified))
    except BaseException as exc:  # noqa: BLE001 - every failure is reported to the parent
        import traceback
        tb = "".join(traceback.format_tb(exc.__traceback__)[-4:]).rstrip()
        conn.send(("raised", type(exc).__name__, str(exc), tb, isinstance(exc, InvalidData)))
    finally:
        conn.close()
        os._exit(0)  # no atexit handlers, no flushing of the parent's inherited buffers


def call_limited(call, inputs: tuple, seconds: float, snapshot, same) -> Outcome:
    """``call(*inputs)`` in a child process, killed after ``seconds`` of running (time spent
    building kernel modules excluded)."""
    if "fork" not in multiprocessing.get_all_start_methods():
        raise ValueError("differential: time_limit needs the 'fork' start method")
    ctx = multiprocessing.get_context("fork")
    receive, send = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child, args=(send, call, inputs, snapshot, same), daemon=True)
    proc.start()
    send.close()
    deadline, building = time.monotonic() + seconds, False
    try:
        while True:
            wait = None if building else max(0.0, deadline - time.monotonic())
            if not receive.poll(wait):
                proc.kill()
                return Outcome("timeout", error=(f"the compiled kernel ran past the time "
                                                 f"limit of {seconds:g} s and was stopped",))
            try:
                msg = receive.recv()
            except EOFError:
                proc.join()
                return Outcome("died", error=(f"the compiled kernel's process died (exit code "
                                              f"{proc.exitcode})",))
            if msg[0] == "building":
                building = True
            elif msg[0] == "built":
                building, deadline = False, time.monotonic() + seconds
            elif msg[0] == "ok":
                return Outcome("ok", result=msg[1], modified=msg[2])
            else:
                return Outcome("raised", error=msg[1:])
    finally:
        receive.close()
        proc.join(timeout=10)
        if proc.is_alive():  # pragma: no cover - a child that ignores its exit
            proc.kill()
            proc.join()

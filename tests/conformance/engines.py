"""The engines the conformance suite runs every program on (STYLE 14): the reference
interpreter, and compiled kernels (``LazyArray.compute``) with each output format.

``engine(y, **inputs)`` evaluates the lazy array ``y`` (binding symbolic inputs by name) and
returns the dense NumPy array the result holds, after checking that a compiled result is
the container ``storage.results`` promises for its ``out`` format. Tests then compare it
with NumPy exactly as before.

What the compiler does not compile yet (compiler/README.md, "Not supported yet": functions
without a C reading for the dtypes) is marked
``xfail(strict=True, raises=IllFormedProgram)`` on the compiled engines, from the program
itself: if the compiler starts supporting it, the test fails until the mark is removed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

import sparsefold as sf
from sparsefold.compiler.emit.cnames import SUPPORTED_DTYPES
from sparsefold.compiler.lower.values import loop_dtypes
from sparsefold.spec.compute import Map
from sparsefold.spec.errors import IllFormedProgram
from sparsefold.spec.printer import topological
from sparsefold.storage.describe import is_pydata_sparse
from sparsefold.storage.results import result_container, result_library

__all__ = ["COMPILED", "ENGINES", "Engine", "not_compiled_yet", "dense"]

COMPILED = ("csr", "csc", "coo", "dense")
ENGINES = ("interp",) + COMPILED


def not_compiled_yet(program) -> str | None:
    """Why the compiler rejects ``program`` as not supported yet, or None."""
    for node in topological(program):
        if node.dtype not in SUPPORTED_DTYPES:
            return f"not compiled yet: dtype {node.dtype}"
        if isinstance(node, Map):
            kind = loop_dtypes(node)[0][0].kind
            if node.fn.c_text(kind) is None:
                return f"not compiled yet: {node.fn.name} of {loop_dtypes(node)[0][0]}"
    return None


def dense(a: Any) -> np.ndarray:
    """The NumPy array a result container holds."""
    if isinstance(a, np.ndarray):
        return a
    if is_pydata_sparse(a):
        return np.asarray(a.todense())
    return np.asarray(a.toarray())


@dataclass
class Engine:
    """One engine: ``"interp"`` or a compiled kernel's ``out`` format."""

    name: str
    request: Any = None

    @property
    def compiled(self) -> bool:
        return self.name != "interp"

    def __call__(self, y: sf.LazyArray, **inputs: Any) -> np.ndarray:
        if not self.compiled:
            return y.interpret(**inputs)
        bound = sf.LazyArray(y.node, {**y.bindings, **inputs})
        reason = not_compiled_yet(y.node)
        if reason is not None and self.request is not None:
            self.request.applymarker(pytest.mark.xfail(strict=True, reason=reason,
                                                       raises=IllFormedProgram))
        library = result_library(bound.bindings.values())
        if y.dtype == np.float16 and library == "scipy" and self.name != "dense" and y.ndim:
            # scipy.sparse has no float16 arrays: a clear refusal, and the values densely
            with pytest.raises(IllFormedProgram, match="float16 result cannot be a scipy"):
                bound.compute(out=self.name)
            return bound.compute(out="dense")
        got = bound.compute(out=self.name)
        name, _ = result_container(self.name, y.ndim, library)
        assert type(got).__name__ == name.split(".")[-1], (
            f"out={self.name!r} gave a {type(got).__name__}, expected {name}")
        return dense(got)

    def __repr__(self) -> str:
        return self.name

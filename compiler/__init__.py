"""sparsefold.compiler — fused sparse kernels (DESIGN §3). Imports ``spec`` and ``storage``.

The surface the front end uses::

    kernel = Kernel(program, "csr", proved=prover)   # optimize, plan (compiled on first call)
    kernel(values, library="scipy")                  # run: validate, allocate, wrap
    kernel.source_for(values)                        # the Cython it runs (sf.show)

``optimize(program, proved)`` is pass 1 on its own; ``OUT_FORMATS`` the ``out=`` names.
"""

from sparsefold.compiler.optimize import Prover, optimize
from sparsefold.compiler.pipeline import Kernel, Plan, plan
from sparsefold.storage.results import OUT_FORMATS

__all__ = ["Kernel", "Plan", "plan", "optimize", "Prover", "OUT_FORMATS"]

"""sparsefold.compiler — fused sparse kernels (DESIGN §3). Imports ``spec`` and ``storage``.

The surface the front end uses::

    kernel = Kernel(program, "csr", proved=prover)   # optimize, normalize, plan (stages)
    kernel(values, library="scipy")                  # run: validate, allocate, wrap
    kernel.source_for(values)                        # the Cython it runs (sf.show)
    dense_valued(program)                            # is the result dense, as scipy's?

``optimize(program, proved)`` is pass 1 on its own; ``plan(program, fmt)`` pass 2 (a typed
plan, or ``NeedsStage``); ``OUT_FORMATS`` the ``out=`` names.
"""

from sparsefold.compiler import plan  # the phase's package, callable: plan(program, fmt)
from sparsefold.compiler.kernel import TooLarge
from sparsefold.compiler.pipeline import Kernel, dense_valued
from sparsefold.compiler.plan.optimize import Prover, optimize
from sparsefold.compiler.plan.planner import NeedsStage
from sparsefold.compiler.plan.plans import CoiterPlan, ContractPlan, DensePlan, Plan, StreamPlan
from sparsefold.storage.results import OUT_FORMATS

__all__ = ["Kernel", "Plan", "StreamPlan", "CoiterPlan", "ContractPlan", "DensePlan", "plan",
           "NeedsStage", "optimize", "Prover", "OUT_FORMATS", "TooLarge", "dense_valued"]

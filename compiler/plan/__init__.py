"""The plan phase (DESIGN §3.1-3.2): the program's rewrites (``optimize.py``,
``normalize.py``), its sparse views (``streams.py``), orders proved by Z3 (``order.py``),
merge lattices (``lattice.py``), contraction planning (``contract.py``), the planner
(``planner.py``) and the typed plans it returns (``plans.py``), with their costs
(``cost.py``), backgrounds (``background.py``) and what a level or piece can do
(``facts.py``). Reads ``spec`` and ``storage``; imports no other phase of the compiler.

The package is also the planner's entry, as ``sparsefold.compiler.plan`` was before the
phase had a folder: ``plan(program, fmt)`` is :func:`planner.plan`.
"""

import sys
import types

from sparsefold.compiler.plan import planner


class _Phase(types.ModuleType):
    __call__ = staticmethod(planner.plan)


sys.modules[__name__].__class__ = _Phase

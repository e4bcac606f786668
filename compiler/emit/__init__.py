"""The emit phase (DESIGN §3.4): the loop IR (``loops.py``), the one printer that turns it
into Cython (``emit.py``, with ``parallel.py`` for ``prange`` loops), the C names of types
and literals (``cnames.py``) and what kernel modules cimport from the shared runtime
(``runtime_source.py``). It knows no formats and imports no other phase of the compiler.
"""

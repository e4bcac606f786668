"""The Python-level values every fast entry (``fastcall.py``) reads, computed once here
instead of in each kernel module.

Each generated module imports these names; they used to be defined in the module's own text
(``fastcall_pyx.FAST_HELPERS``), where the function building the result layouts, with its
comprehensions and lambdas, cost gcc about 1.5 s per kernel — half the C compile time of a
typical kernel (``docs/benchmarks.md``, "Compile time").

The result layouts: ``storage.results`` builds a scipy array by setting its attributes
(scipy's constructors re-check and copy). The fast entry makes the same object by giving a new
instance the instance dict ``storage.results`` produced for a tiny array here (minus the arrays
and shape); if that dict holds anything but those arrays, the shape and plain flags (a scipy
version with other internals), the layout is None and the fast entry calls
``storage.results`` instead.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from sparsefold.compiler import memory as _memory
from sparsefold.compiler import threads as _threads
from sparsefold.storage import results as _results

__all__ = ["threads", "NEW", "NDARRAY", "ZEROS", "CSR", "CSC", "COO", "PHYSICAL",
           "CSR_DICT", "CSC_DICT", "COO_DICT", "VECTOR_DICT", "memory_limit",
           "compressed_array", "coo_array"]

NDARRAY = np.ndarray
NEW = object.__new__  # a scipy array's own __new__ (checked below): no lookup through its MRO
ZEROS = np.zeros
CSR = (sp.csr_array, sp.csr_matrix)
CSC = (sp.csc_array, sp.csc_matrix)
COO = (sp.coo_array, sp.coo_matrix)
PHYSICAL = _memory.physical_memory()
threads = _threads
memory_limit = _memory.memory_limit
compressed_array = _results._compressed_array
coo_array = _results._coo_array


def _layout(cls, make) -> dict | None:
    if cls.__new__ is not NEW:
        return None
    one = np.ones(1)
    zero = np.zeros(1, np.int32)
    found = dict(make(cls, one, zero).__dict__)
    arrays = {k for k, v in found.items() if type(v) is NDARRAY or
              (type(v) is tuple and len(v) == 2 and v[0] is zero and v[1] is zero)}
    rest = {k: v for k, v in found.items() if k not in arrays and k != "_shape"}
    if arrays not in ({"data", "indices", "indptr"}, {"data", "coords"}) or any(
            type(v) not in (bool, int) for v in rest.values()):
        return None
    return rest


def _compressed(cls, values, index):
    return compressed_array(cls, values, index, np.array([0, 1], np.int32), (1, 1))


CSR_DICT = _layout(sp.csr_array, _compressed)
VECTOR_DICT = _layout(sp.csr_array, lambda cls, values, index: compressed_array(
    cls, values, index, np.array([0, 1], np.int32), (1,)))  # a 1-d CSR array
CSC_DICT = _layout(sp.csc_array, _compressed)
COO_DICT = _layout(sp.coo_array, lambda cls, values, index: coo_array(
    cls, values, (index, index), (1, 1)))

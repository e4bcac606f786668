"""scipy.sparse's construction functions on sparsefold's compiled kernels.

    import sparsefold.scipy as sparse       # instead of: import scipy.sparse as sparse
    C = sparse.hstack([A, B], format="csr")

``hstack``, ``vstack``, ``bmat``, ``block_array``, ``block_diag``, ``tril`` and ``triu``
take scipy's arguments and return what scipy returns: the same class (a sparse *matrix*
exactly where scipy returns one: when no input is a sparse array), format, dtype, shape and
values. ``kron`` is scipy's own (sparsefold's plan for it materializes its broadcast
operands: docs/dropin.md); ``diags_array`` and ``random_array`` are scipy's own (they build
from dense or random data: nothing to compile), and so is every other name of
``scipy.sparse`` (``csr_array``, ``issparse``, ...), so switching the import changes
nothing else.

What is compiled, and what is scipy's (docs/dropin.md lists every difference):

* block layouts (``hstack``, ``vstack``, ``bmat``, ``block_array``, ``block_diag``) of up to
  16 blocks that are 2-d scipy sparse arrays or matrices (``block_diag``: sparse only) or
  NumPy arrays, of the dtypes the compiler supports — one kernel per layout;
* ``tril``/``triu`` of a 2-d array, any ``k``.

Anything else — lists or scalars as blocks, more blocks, ``float16`` or complex values,
shapes scipy rejects or pads by its own rules — is passed to scipy unchanged, so it behaves
(and fails) exactly as scipy does.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as _sp

from sparsefold.compiler.emit.cnames import SUPPORTED_DTYPES
from sparsefold.scipy_kernels import layout_kernel, triangle_kernel

__all__ = ["hstack", "vstack", "bmat", "block_array", "block_diag", "kron", "tril", "triu",
           "diags_array", "random_array", "MAX_BLOCKS"]

MAX_BLOCKS = 16   # more blocks: scipy's (a layout's kernel grows with its block count)
_KERNEL_FORMATS = ("csr", "csc", "coo")
_MATRIX = {"csr": _sp.csr_matrix, "csc": _sp.csc_matrix, "coo": _sp.coo_matrix,
           "bsr": _sp.bsr_matrix, "dia": _sp.dia_matrix, "lil": _sp.lil_matrix,
           "dok": _sp.dok_matrix}

diags_array = _sp.diags_array
random_array = _sp.random_array


def __getattr__(name: str):
    """Every other name is scipy.sparse's, so ``import sparsefold.scipy as sparse`` is a
    one-line switch."""
    try:
        return getattr(_sp, name)
    except AttributeError:
        raise AttributeError(f"module 'sparsefold.scipy' has no attribute {name!r}") from None


def __dir__():
    return sorted(set(__all__) | set(dir(_sp)))


# --- the public functions -----------------------------------------------------------------------

def hstack(blocks, format=None, dtype=None):
    """scipy.sparse.hstack: blocks side by side."""
    grid = np.asarray(blocks, dtype="object")
    return _block(grid.reshape(1, -1) if grid.ndim == 1 else grid[None], format, dtype,
                  matrix=not _any_sparray(grid),
                  scipy=lambda: _sp.hstack(blocks, format=format, dtype=dtype))


def vstack(blocks, format=None, dtype=None):
    """scipy.sparse.vstack: blocks on top of each other."""
    grid = np.asarray(blocks, dtype="object")
    return _block(grid.reshape(-1, 1) if grid.ndim == 1 else grid[:, None], format, dtype,
                  matrix=not _any_sparray(grid),
                  scipy=lambda: _sp.vstack(blocks, format=format, dtype=dtype))


def bmat(blocks, format=None, dtype=None):
    """scipy.sparse.bmat: a sparse matrix (or array) from a grid of blocks; None is a zero
    block."""
    grid = np.asarray(blocks, dtype="object")
    return _block(grid, format, dtype, matrix=not _any_sparray(grid),
                  scipy=lambda: _sp.bmat(blocks, format=format, dtype=dtype))


def block_array(blocks, *, format=None, dtype=None):
    """scipy.sparse.block_array: a sparse array from a grid of blocks; None is a zero
    block."""
    return _block(np.asarray(blocks, dtype="object"), format, dtype, matrix=False,
                  scipy=lambda: _sp.block_array(blocks, format=format, dtype=dtype))


def block_diag(mats, format=None, dtype=None):
    """scipy.sparse.block_diag: the blocks along the diagonal, zero elsewhere."""
    def scipy():
        return _sp.block_diag(mats, format=format, dtype=dtype)
    mats = list(mats) if isinstance(mats, (list, tuple)) else None
    # scipy stores every element of a dense block (zeros too): dense blocks are scipy's
    if not mats or not all(_sp.issparse(m) and m.ndim == 2 for m in mats):
        return scipy()
    grid = np.empty((len(mats), len(mats)), dtype="object")
    for k, m in enumerate(mats):
        grid[k, k] = m
    # scipy builds a COO result and converts it: no csr/csc fast path, NumPy's dtype rule
    return _block(grid, format, dtype, matrix=not _any_sparray(grid), scipy=scipy,
                  fast_paths=False, dtype_rule=np.result_type)


def kron(A, B, format=None):
    """scipy.sparse.kron, scipy's own: sparsefold can express the product
    (``reshape(A[:, None, :, None] * B[None, :, None, :])``) but its compiled plan
    materializes both broadcast operands first, which costs far more than scipy
    (docs/dropin.md)."""
    return _sp.kron(A, B, format=format)


def tril(A, k=0, format=None):
    """scipy.sparse.tril: the entries on and below the k-th diagonal."""
    return _triangle(A, k, format, True, lambda: _sp.tril(A, k=k, format=format))


def triu(A, k=0, format=None):
    """scipy.sparse.triu: the entries on and above the k-th diagonal."""
    return _triangle(A, k, format, False, lambda: _sp.triu(A, k=k, format=format))


# --- shared machinery ---------------------------------------------------------------------------

def _any_sparray(grid: np.ndarray) -> bool:
    return any(isinstance(b, _sp.sparray) for b in grid.flat)


def _supported(dtype) -> bool:
    return np.dtype(dtype) in SUPPORTED_DTYPES


def _block_ok(b) -> bool:
    """A block a kernel reads as scipy does: a 2-d sparse array/matrix or a 2-d ndarray."""
    if _sp.issparse(b):
        return b.ndim == 2 and _supported(b.dtype)
    return type(b) is np.ndarray and b.ndim == 2 and _supported(b.dtype)


def _upcast(*dtypes):
    try:
        from scipy.sparse._sputils import upcast
    except ImportError:  # pragma: no cover - scipy moved it: NumPy's rule
        return np.result_type(*dtypes)
    return upcast(*dtypes)


def _block(grid: np.ndarray, format, dtype, *, matrix: bool, scipy, fast_paths: bool = True,
           dtype_rule=None):
    """The block matrix of ``grid`` (2-d object array, None for zero blocks), as scipy's
    ``_block`` returns it; ``scipy()`` computes it when a kernel cannot."""
    if grid.ndim != 2:
        return scipy()
    cells = [(i, j, grid[i, j]) for i in range(grid.shape[0]) for j in range(grid.shape[1])
             if grid[i, j] is not None]
    if not cells or len(cells) > MAX_BLOCKS or not all(_block_ok(b) for _, _, b in cells):
        return scipy()
    heights, widths = {}, {}
    for i, j, b in cells:
        if heights.setdefault(i, b.shape[0]) != b.shape[0] or \
                widths.setdefault(j, b.shape[1]) != b.shape[1]:
            return scipy()  # scipy raises, or (zero-sized blocks) applies its own rule
    try:
        target = np.dtype(dtype) if dtype is not None else \
            np.dtype((dtype_rule or _upcast)(*[b.dtype for _, _, b in cells]))
    except TypeError:
        return scipy()
    if not _supported(target):
        return scipy()
    # scipy's fast paths: every cell (None is not) a csr block, or every cell a csc block
    formats = {b.format if _sp.issparse(b) else "dense" for _, _, b in cells}
    fast_paths = fast_paths and len(cells) == grid.size
    if fast_paths and formats == {"csr"} and format in (None, "csr"):
        final = "csr"
    elif fast_paths and formats == {"csc"} and format in (None, "csc"):
        final = "csc"
    else:
        final = format or "coo"
    out = final if final in _KERNEL_FORMATS else "csr"
    kernel = layout_kernel(tuple((i, j) for i, j, _ in cells), grid.shape[0], grid.shape[1],
                           out)
    result = kernel(*[b if b.dtype == target else b.astype(target) for _, _, b in cells])
    return _finish(result, final, matrix)


def _finish(result, final: str, matrix: bool):
    """A kernel's scipy array in scipy's final format and class."""
    if result.format != final:
        result = result.asformat(final)
    return _MATRIX[final](result) if matrix else result


def _triangle(A, k, format, lower: bool, scipy):
    if isinstance(k, (bool, np.bool_)) or not isinstance(k, (int, np.integer)):
        return scipy()
    if not _block_ok(A):
        return scipy()
    final = format or "coo"
    out = final if final in _KERNEL_FORMATS else "csr"
    result = triangle_kernel(int(k), lower, out)(A)
    return _finish(result, final, matrix=not isinstance(A, _sp.sparray))

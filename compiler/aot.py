"""Ahead-of-time kernels (DESIGN §3.7): kernel variants gathered into one Cython module that
a package builds once with setuptools and ships; at run time no Cython or C compiler is needed.

A *variant* is the source one stage kernel renders for one choice of index dtypes
(``StageKernel.source``): the unit the JIT builds and caches. Its identity is the sha256 of
that text (``build.source_digest``). At run time the JIT renders the same text for the same
stage and index dtypes, and ``build.load_module`` takes the prebuilt functions registered
under that digest instead of compiling. So a prebuilt function is used exactly when the JIT
would have compiled the very same source; a compiler that renders anything differently
(another version, another plan) simply finds no match.

Variants of one program (:func:`kernel_variants`): every stage of ``pipeline.Kernel``, for
each index dtype its sparse inputs can have — a user input's declared dtype, a temporary's
the index width its stage writes — and each output index width asked for; plus the
program's exact variant (no annihilation that needs finite operands) when a plan relies on
finite operands, since the runtime switches to it when one holds a NaN or an infinity.

:func:`assemble` concatenates variants into one module. Each variant's text is kept verbatim
except for its module-level names: ``run``/``count`` become ``_sf<k>_run``/..., its check
table ``_SF<k>_SITES``, and its failure call ``_sf_fail(...)`` becomes
``_sf_fail_with(_SF<k>_SITES, ...)``, one copy of the failure helper taking the table as a
parameter; shared preludes (imports, the buffer-address helper, the workspace sort) appear
once (the parallel loops' header too). Anything else at module level
is refused (``InternalError``) rather than risk two variants sharing a name.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import numpy as np

from sparsefold.compiler.build import BUFFER_ADDRESS_PYX, CYTHON_DIRECTIVES, source_digest
from sparsefold.compiler.emit import FAIL_PY
from sparsefold.compiler.fastcall import FAST_HELPERS
from sparsefold.compiler.parallel import PARALLEL_HEADER
from sparsefold.compiler.workspace import SORT_HELPER
from sparsefold.spec.compute import Input
from sparsefold.spec.errors import InternalError
from sparsefold.storage.levels import sparse_levels
from sparsefold.storage.results import compress, wrap_levels

__all__ = ["Variant", "kernel_variants", "input_index_dtypes", "assemble", "COMPILE_ARGS",
           "GCC_ONLY_ARGS", "compile_args", "openmp_args", "VARIANTS_NAME", "MANIFEST_NAME",
           "INDEX_WIDTHS"]

INDEX_WIDTHS = ("int32", "int64")
VARIANTS_NAME = "_SF_VARIANTS"   # {digest: {function name: function}} in the built module
MANIFEST_NAME = "_SF_MANIFEST"   # JSON text: what was built, by which sparsefold
# Flags that change what the generated C means or how fast it runs, as build.CFLAGS gives
# them to the JIT: -fwrapv (signed overflow wraps, as NumPy's does) and no strict aliasing
# are semantic; the rest match the JIT's optimisation level.
COMPILE_ARGS = ("-O2", "-g0", "-w", "-fwrapv", "-fno-strict-aliasing", "-DNDEBUG")
GCC_ONLY_ARGS = ("-fvect-cost-model=cheap",)
# (PARALLEL_HEADER: the prange cimport and thread count)
_SHARED_HELPERS = (SORT_HELPER, FAST_HELPERS, PARALLEL_HEADER)


def _cc(cc: str | None) -> str:
    import os
    import sysconfig
    return cc or os.environ.get("CC") or sysconfig.get_config_var("CC") or ""


def compile_args(cc: str | None = None) -> list[str]:
    """C flags for building an AOT module with compiler ``cc`` (default: ``$CC``, else the
    one Python was built with): :data:`COMPILE_ARGS`, plus gcc's vectorizer setting, plus
    OpenMP's flags (:func:`openmp_args`), plus NumPy's C headers (the fast entries')."""
    import os
    cc = _cc(cc)
    head = os.path.basename(cc.split()[0]) if cc.split() else ""
    from sparsefold.compiler.build import numpy_include
    return list(COMPILE_ARGS) + (list(GCC_ONLY_ARGS) if "gcc" in head and "clang" not in head
                                 else []) + openmp_args(cc) + [f"-I{numpy_include()}"]


def openmp_args(cc: str | None = None) -> list[str]:
    """``-fopenmp`` when ``cc`` links an OpenMP runtime (and ``$SPARSEFOLD_OPENMP`` is not
    0), else nothing: the kernels' parallel loops then compile serially. Needed at compile
    and at link time."""
    import os

    from sparsefold.compiler.build import OPENMP_FLAGS, _openmp_runtime
    cc = _cc(cc)
    if os.environ.get("SPARSEFOLD_OPENMP", "1") == "0" or not cc.split():
        return []
    return list(OPENMP_FLAGS) if _openmp_runtime(cc) else []


@dataclass(frozen=True, slots=True)
class Variant:
    """One stage kernel's source for one choice of index dtypes; ``functions`` are the
    module-level ``def`` names it defines (``run``, ``count``), ``title`` its header line."""

    digest: str
    source: str
    functions: tuple[str, ...]
    title: str

    def __post_init__(self):
        if source_digest(self.source) != self.digest:
            raise InternalError("a variant's digest is not its source's")


def input_index_dtypes(inp: Input, index: str) -> dict[str, np.dtype]:
    """The index dtypes a kernel sees for sparse input ``inp`` stored with ``index``
    (``int32``/``int64``) indices: found by reading a tiny array of that layout through the
    runtime, exactly as a call reads the real one (COO's ``pos0`` is always int64, say)."""
    if index not in INDEX_WIDTHS:
        raise InternalError(f"index dtype must be one of {INDEX_WIDTHS}, found {index!r}")
    shape = (2,) * inp.ndim
    empty = [np.zeros(0, dtype=np.int64) for _ in range(inp.ndim)]
    arrays = compress(empty, inp.format, shape, index)
    value = wrap_levels(inp.format, shape, np.zeros(0, dtype=inp.dtype), arrays, "scipy")
    levels = sparse_levels(value, inp, inp.name, rows_in_kernel=True)
    return {k: v.dtype for k, v in levels.items() if k != "val"}


def _stage_kernels(kernel) -> list:
    stages = [stage for _, stage in kernel.stages] + [kernel.final]
    if any(stage.plan is None for stage in stages):  # compiler/gather.py: one fixed module
        from sparsefold.spec.errors import IllFormedProgram
        raise IllFormedProgram("ahead-of-time kernels of integer-array indexing (a gather "
                               "stage) are not supported yet; it is compiled on first use")
    return stages


def kernel_variants(kernel, input_index: Mapping[str, str],
                    out_indexes: Iterable[str] = ("int32",)) -> list[Variant]:
    """Every variant a call of ``kernel`` (a ``pipeline.Kernel``) can need when its sparse
    user inputs have the index dtypes ``input_index`` (input name -> ``int32``/``int64``) and
    each stage writes indices of a width in ``out_indexes``; without duplicates."""
    out_indexes = tuple(out_indexes)
    kernels = [kernel]
    if any(stage.plan.finite for stage in _stage_kernels(kernel)):
        kernels.append(kernel._exact_variant())  # the runtime's switch target (NotFinite)
    found: dict[str, Variant] = {}
    for k in kernels:
        temps = {temp.name for temp, _ in k.stages}
        for stage in _stage_kernels(k):
            choices = []
            for inp in stage.inputs:
                if inp.format.is_dense:
                    continue
                if inp.name in temps:
                    widths = out_indexes
                elif inp.name in input_index:
                    widths = (input_index[inp.name],)
                else:
                    raise InternalError(f"no index dtype given for input {inp.name!r}")
                choices.append([(inp.name, input_index_dtypes(inp, w)) for w in widths])
            # a dense operand whose last axis is contiguous reads without a stride (the
            # runtime's choice per call): both variants for each dense operand
            dense = [inp.name for inp in stage.inputs if inp.format.is_dense]
            units = [frozenset(c) for r in range(len(dense) + 1)
                     for c in itertools.combinations(dense, r)]
            for combo in itertools.product(*choices):
                for out_index in out_indexes:
                    for unit in units:
                        src, functions = stage.source(dict(combo), out_index, unit)
                        digest = source_digest(src)
                        if digest not in found:
                            names = tuple(f.name for f in functions)
                            if re.search(r"^def fast\(", src, re.M):  # fastcall.py
                                names += ("fast",)
                            found[digest] = Variant(digest, src, names, _title(src))
    return list(found.values())


def _title(src: str) -> str:
    m = re.search(r"^# sparsefold kernel: (.*)$", src, re.M)
    return m.group(1) if m else "kernel"


# --- one module from many variants ------------------------------------------------------------

# One copy of the failure helper for all variants: the check table becomes its first
# parameter, under the global's name, so the body reads it unchanged.
_FAIL_HEAD = "def _sf_fail(site, a, b, c):"
_FAIL_WITH = FAIL_PY.replace(_FAIL_HEAD, "def _sf_fail_with(_SF_SITES, site, a, b, c):")
_IMPORT = re.compile(r"^(from \S+ cimport .*|cimport .*)$")
_SITES = re.compile(r"^_SF_SITES = (\(\n(    .*\n)*\)|.*)$", re.M)  # one site per line
_EXTERN = "cdef extern from *:"
# a fast entry's dtype constants (``fastcall.py``): the same text wherever they appear
_DTYPE_CONST = re.compile(r"^_SF_DT_\w+ = _np\.dtype\(_np\.\w+\)$")
_TYPEDEF = re.compile(r'^    ctypedef \w+\* \w+ "[\w ]+\* __restrict__"$')


def _split(variant: Variant) -> tuple[list[str], list[str], str | None, str, list[str]]:
    """(header comment lines, import lines, the check table line, the body, helpers used);
    refuses module-level text it does not know."""
    src = variant.source
    name = re.escape(variant.functions[0])
    first = re.search(rf"^(def {name}\(|cdef void _{name}_body\()", src, re.M)
    if first is None:
        raise InternalError(f"AOT: no 'def {variant.functions[0]}(' in variant {variant.title}")
    prelude, body = src[:first.start()], src[first.start():]
    helpers = [h for h in _SHARED_HELPERS if h in prelude]
    for block in [BUFFER_ADDRESS_PYX, FAIL_PY, *helpers]:
        prelude = prelude.replace(block, "\n")
    sites = _SITES.search(prelude)
    if sites is not None:
        prelude = prelude[:sites.start()] + prelude[sites.end():]
    comments, imports = [], []
    in_extern = False
    for line in prelude.splitlines():
        if not line.strip():
            continue
        if in_extern and _TYPEDEF.match(line):
            imports.append(line)  # restrict pointer typedefs: identical text in every variant
            continue
        in_extern = line == _EXTERN
        if line.startswith("#"):
            comments.append(line)
        elif _IMPORT.match(line) or in_extern:
            imports.append(line)
        else:
            raise InternalError(f"AOT: unexpected module-level line in variant "
                                f"{variant.title}: {line!r}; compiler/aot.py must learn it")
    names = set(variant.functions)
    for line in body.splitlines():
        if line and not line[0].isspace() and not line.startswith("#") and \
                line not in ("):", ") noexcept nogil:") and not _DTYPE_CONST.match(line):
            m = re.match(r"def (\w+)\(|cdef void _(\w+)_body\(", line)
            if m is None or (m.group(1) or m.group(2)) not in names:
                raise InternalError(f"AOT: unexpected module-level line in variant "
                                    f"{variant.title}: {line!r}; compiler/aot.py must learn it")
    return comments, imports, sites.group(0) if sites else None, body, helpers


def _renamed(body: str, functions: tuple[str, ...], k: int) -> str:
    for name in functions:
        body, n = re.subn(rf"^def {re.escape(name)}\(", f"def _sf{k}_{name}(", body, flags=re.M)
        if n != 1:
            raise InternalError(f"AOT: expected one 'def {name}(' in a variant, found {n}")
        # its loops (``cdef void _<name>_body``), called by it and by the fast entry
        body = re.sub(rf"\b_{re.escape(name)}_body\(", f"_sf{k}_{name}_body(", body)
    if re.search(r"\b_SF_SITES\b", body):
        raise InternalError("AOT: a kernel body reads _SF_SITES directly")
    return re.sub(r"\b_sf_fail\(", f"_sf_fail_with(_SF{k}_SITES, ", body)


def _imports_first(lines: dict[str, None]) -> list[str]:
    """The variants' import lines, then one ``cdef extern from *:`` block of every restrict
    typedef they declare."""
    imports = [x for x in lines if x != _EXTERN and not _TYPEDEF.match(x)]
    typedefs = sorted(x for x in lines if _TYPEDEF.match(x))
    return imports + ([_EXTERN, *typedefs] if typedefs else [])


def assemble(variants: list[Variant], *, title: str, manifest: Mapping) -> str:
    """The ``.pyx`` text of one module holding every variant: its functions ``_sf<k>_<name>``,
    the table ``_SF_VARIANTS`` (digest -> {name: function}) and ``_SF_MANIFEST``."""
    if FAIL_PY.count(_FAIL_HEAD) != 1:
        raise InternalError("AOT: emit.FAIL_PY changed shape; compiler/aot.py must learn it")
    imports: dict[str, None] = {}
    helpers: dict[str, None] = {}
    parts = []
    for k, v in enumerate(variants):
        comments, imp, sites, body, used = _split(v)
        imports.update(dict.fromkeys(imp))
        helpers.update(dict.fromkeys(used))
        block = [f"# === variant {k}: {v.title}; source sha256 {v.digest}",
                 *[c for c in comments if not c.startswith("# cython:")]]
        if sites is not None:
            block.append(sites.replace("_SF_SITES", f"_SF{k}_SITES", 1))
        block += ["", "", _renamed(body, v.functions, k).rstrip("\n")]
        parts.append("\n".join(block))
    directives = ", ".join(f"{k}={v}" for k, v in sorted(CYTHON_DIRECTIVES.items()))
    table = [f"{VARIANTS_NAME} = {{"]
    for k, v in enumerate(variants):
        fns = ", ".join(f"{name!r}: _sf{k}_{name}" for name in v.functions)
        table.append(f"    {v.digest!r}: {{{fns}}},")
    table.append("}")
    head = [f"# cython: language_level=3, {directives}",
            f"# {title}", "# Generated by sparsefold AOT (compiler/aot.py); do not edit.",
            f"# {len(variants)} kernel variants.", "", *_imports_first(imports),
            BUFFER_ADDRESS_PYX,
            *helpers, _FAIL_WITH]
    manifest_text = json.dumps(dict(manifest), sort_keys=True)
    return ("\n".join(head) + "\n\n" + "\n\n\n".join(parts) + "\n\n\n" + "\n".join(table) +
            f"\n\n{MANIFEST_NAME} = {manifest_text!r}\n")

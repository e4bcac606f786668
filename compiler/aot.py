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
except for its module-level names: ``run``/``count``/``fast`` become ``_sf<k>_run``/...,
their loops and trampolines ``_sf<k>_run_body``/``_sf<k>_run_loops``/..., its check table
``_SF<k>_SITES``. The preludes are merged: one cimport per module of the names any variant
uses (the shared runtime's among them: a package built from these kernels needs sparsefold
installed, whose runtime they call), one block of restrict typedefs, and each declaration of
``spec.c_library`` once. Anything else at module level is refused (``InternalError``)
rather than risk two variants sharing a name.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import numpy as np

from sparsefold.compiler.emit.emit import SITES_TABLE
from sparsefold.compiler.run.build import (
    CYTHON_DIRECTIVES,
    OPENMP_FLAGS,
    _openmp_runtime,
    numpy_include,
    source_digest,
)
from sparsefold.spec.compute import Input
from sparsefold.spec.errors import IllFormedProgram, InternalError
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


def _cc(cc: str | None) -> str:
    import os
    import sysconfig
    return cc or os.environ.get("CC") or sysconfig.get_config_var("CC") or ""


def compile_args(cc: str | None = None, *, numpy: bool = False) -> list[str]:
    """C flags for building an AOT module with compiler ``cc`` (default: ``$CC``, else the
    one Python was built with): :data:`COMPILE_ARGS`, plus gcc's vectorizer setting, plus
    OpenMP's flags (:func:`openmp_args`); ``numpy``: plus NumPy's C headers (the shared
    runtime includes them; kernels do not)."""
    import os
    cc = _cc(cc)
    head = os.path.basename(cc.split()[0]) if cc.split() else ""
    return list(COMPILE_ARGS) + (list(GCC_ONLY_ARGS) if "gcc" in head and "clang" not in head
                                 else []) + openmp_args(cc) + (
        [f"-I{numpy_include()}"] if numpy else [])


def openmp_args(cc: str | None = None) -> list[str]:
    """``-fopenmp`` when ``cc`` links an OpenMP runtime (and ``$SPARSEFOLD_OPENMP`` is not
    0), else nothing: the kernels' parallel loops then compile serially. Needed at compile
    and at link time."""
    import os
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
    if any(stage.plan is None for stage in stages):  # compiler/run/gather.py: one fixed module
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
                            if re.search(r"^fast = sf_fast_entry\(", src, re.M):
                                names += ("fast",)
                            found[digest] = Variant(digest, src, names, _title(src))
    return list(found.values())


def _title(src: str) -> str:
    m = re.search(r"^# sparsefold kernel: (.*)$", src, re.M)
    return m.group(1) if m else "kernel"


# --- one module from many variants ------------------------------------------------------------

_CIMPORT = re.compile(r"^from (\S+) cimport (.*)$")
_EXTERN = "cdef extern from *:"
_TYPEDEF = re.compile(r'^    ctypedef [\w ]+\* \w+ "[\w ]+\* __restrict__"$')


def _statements(prelude: str) -> list[str]:
    """The prelude's top-level statements, each with its indented lines (a cimport with
    parenthesized names is one statement)."""
    out: list[str] = []
    open_paren = False
    for line in prelude.splitlines():
        if open_paren:
            out[-1] += "\n" + line
            open_paren = line.count("(") >= line.count(")") and not line.rstrip().endswith(")")
        elif line and (line[0].isspace() or line.startswith('"""')) and out:
            out[-1] += "\n" + line
        elif line.strip():
            out.append(line)
            open_paren = line.count("(") > line.count(")")
    return out


def _split(variant: Variant) -> tuple[list[str], dict[str, list[str]], list[str], list[str],
                                      str]:
    """(header comment lines, cimported names by module, restrict typedef lines, other
    declarations, the body: the check table and the functions)."""
    src = variant.source
    first = re.search(rf"^({SITES_TABLE} = \(|cdef void _\w+_body\()", src, re.M)
    if first is None:
        raise InternalError(f"AOT: no kernel function in variant {variant.title}")
    prelude, body = src[:first.start()], src[first.start():]
    comments: list[str] = []
    cimports: dict[str, list[str]] = {}
    typedefs: list[str] = []
    declarations: list[str] = []
    for stmt in _statements(prelude):
        m = _CIMPORT.match(stmt.replace("\n", " "))
        lines = stmt.splitlines()
        if stmt.startswith("#"):
            comments.append(stmt)
        elif m:
            names = [n.strip() for n in m.group(2).strip("() ").split(",") if n.strip()]
            cimports.setdefault(m.group(1), []).extend(names)
        elif lines[0] == _EXTERN and all(_TYPEDEF.match(x) for x in lines[1:]):
            typedefs += lines[1:]
        elif stmt.startswith(("cdef extern from ", "ctypedef ", "cdef inline ")):
            declarations.append(stmt)  # spec.c_library's: identical text in every variant
        else:
            raise InternalError(f"AOT: unexpected module-level line in variant "
                                f"{variant.title}: {lines[0]!r}; compiler/aot.py must learn it")
    return comments, cimports, typedefs, declarations, body


def _renamed(body: str, functions: tuple[str, ...], k: int) -> str:
    """``body`` with its module-level names made the variant's own."""
    body = re.sub(rf"\b{SITES_TABLE}\b", f"_SF{k}_SITES", body)
    for name in functions:
        body, n = re.subn(rf"^{re.escape(name)} = (sf_function|sf_fast_entry)\(",
                          rf"_sf{k}_{name} = \1(", body, flags=re.M)
        if n != 1:
            raise InternalError(f"AOT: expected one '{name} = ...' in a variant, found {n}")
        if name == "fast":  # the entry function ``_fast``
            body = re.sub(r"\b_fast\b", f"_sf{k}_fast_entry", body)
        else:  # its loops and trampoline (``_<name>_body``, ``_<name>_loops``)
            body = re.sub(rf"\b_{re.escape(name)}_(body|loops)\b", rf"_sf{k}_{name}_\1", body)
    for line in body.splitlines():
        if line and not line[0].isspace() and not line.startswith("#") and \
                line not in ("):", ") noexcept nogil:", ")"):
            if not re.match(rf"(cdef (void|object) _sf{k}_\w+\(|_sf{k}_\w+ = sf_\w+\(|"
                            rf"_SF{k}_SITES = \()", line):
                raise InternalError(f"AOT: unexpected module-level line in a variant: {line!r};"
                                    f" compiler/aot.py must learn it")
    return body


def assemble(variants: list[Variant], *, title: str, manifest: Mapping) -> str:
    """The ``.pyx`` text of one module holding every variant: its functions ``_sf<k>_<name>``,
    the table ``_SF_VARIANTS`` (digest -> {name: function}) and ``_SF_MANIFEST``."""
    cimports: dict[str, dict[str, None]] = {}
    typedefs: dict[str, None] = {}
    declarations: dict[str, None] = {}
    parts = []
    for k, v in enumerate(variants):
        comments, names, types, decls, body = _split(v)
        for module, found in names.items():
            cimports.setdefault(module, {}).update(dict.fromkeys(found))
        typedefs.update(dict.fromkeys(types))
        declarations.update(dict.fromkeys(decls))
        block = [f"# === variant {k}: {v.title}; source sha256 {v.digest}",
                 *[c for c in comments if not c.startswith("# cython:")]]
        block += ["", "", _renamed(body, v.functions, k).rstrip("\n")]
        parts.append("\n".join(block))
    directives = ", ".join(f"{k}={v}" for k, v in sorted(CYTHON_DIRECTIVES.items()))
    table = [f"{VARIANTS_NAME} = {{"]
    for k, v in enumerate(variants):
        fns = ", ".join(f"{name!r}: _sf{k}_{name}" for name in v.functions)
        table.append(f"    {v.digest!r}: {{{fns}}},")
    table.append("}")
    imports = [f"from {module} cimport ({', '.join(names)})"
               for module, names in cimports.items()]
    head = [f"# cython: language_level=3, {directives}",
            f"# {title}", "# Generated by sparsefold AOT (compiler/aot.py); do not edit.",
            f"# {len(variants)} kernel variants.", "", *imports, *declarations]
    if typedefs:
        head += [_EXTERN, *sorted(typedefs)]
    manifest_text = json.dumps(dict(manifest), sort_keys=True)
    return ("\n".join(head) + "\n\n\n" + "\n\n\n".join(parts) + "\n\n\n" +
            "\n".join(table) + f"\n\n{MANIFEST_NAME} = {manifest_text!r}\n")

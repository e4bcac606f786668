"""``sparsefold aot SPEC.py -o PKG/_kernels``: the files a package builds and ships (DESIGN §5).

Written into the output directory, which becomes a package:

* ``_ext.pyx`` (``_ext0.pyx``, ``_ext1.pyx``, ... with ``--parts``, which a parallel build
  compiles side by side): every kernel variant the declared signatures need
  (``compiler/aot.py``), and a manifest of what was declared;
* ``__init__.py``, the dispatch module: imports the extension(s) and the spec module, calls
  :func:`sparsefold.aot.bind`, and re-exports the functions;
* ``_include/sparsefold/compiler/runtime.pxd``: the declarations of sparsefold's shared
  kernel runtime, which the kernels cimport (and call at run time: the package needs
  sparsefold installed, as it does anyway);
* ``_build.py``, setuptools glue that imports neither sparsefold nor the package:
  ``extensions()`` returns the cythonized ``Extension`` objects with the C flags the JIT
  uses. In ``setup.py``: ``setup(ext_modules=runpy.run_path("PKG/_kernels/_build.py")
  ["extensions"]())``.

Generated files are build products: generate them in the build (as
``examples/downstream/setup.py`` does) or before packaging an sdist, not by hand.
The spec module is loaded on its own (its package's ``__init__`` is not run, since that
usually imports the not yet generated kernels), so it may import sparsefold and absolute
modules, but not its own package relatively.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import time
from collections.abc import Mapping
from pathlib import Path

from sparsefold.aot import AotFunction, ArraySpec, exported, trace_generic
from sparsefold.compiler import aot as compiler_aot
from sparsefold.compiler.emit import runtime_source
from sparsefold.compiler.run.build import CYTHON_DIRECTIVES
from sparsefold.spec.errors import IllFormedProgram

__all__ = ["sources", "generate", "load_spec", "package_of", "add_parser", "run"]


def sources(functions: Mapping[str, AotFunction], *, parts: int = 1,
            title: str = "sparsefold AOT kernels") -> tuple[list[str], dict]:
    """(the ``.pyx`` text of each part, statistics) for the exported ``functions``."""
    from sparsefold import __version__
    from sparsefold.compiler.emit.emit import COMPILER_VERSION
    from sparsefold.compiler.pipeline import Kernel
    if parts < 1:
        raise IllFormedProgram(f"aot: parts must be >= 1, found {parts}")
    kernels: dict[tuple, Kernel] = {}
    variants: dict[str, compiler_aot.Variant] = {}
    declared: dict[str, list[str]] = {}
    for name, fn in functions.items():
        declared[name] = []
        for sig in fn.signatures:
            program, out, requires, _ = trace_generic(fn, sig)
            key = (program, out, requires)
            if key not in kernels:  # as sparsefold.aot_registry.find builds it at run time
                kernels[key] = Kernel(program, out, requires=requires)
            index = {f"a{p}": a.index for p, a in enumerate(sig.args)
                     if isinstance(a, ArraySpec) and a.index is not None}
            for v in compiler_aot.kernel_variants(kernels[key], index, sig.out_index):
                variants.setdefault(v.digest, v)
            declared[name].append(repr(sig))
    buckets: list[list[compiler_aot.Variant]] = [[] for _ in range(parts)]
    weights = [0] * parts
    for v in sorted(variants.values(), key=lambda v: (-len(v.source), v.digest)):
        k = weights.index(min(weights))  # balance C size: parts compile in parallel
        buckets[k].append(v)
        weights[k] += len(v.source)
    texts = []
    for k, bucket in enumerate(buckets):
        manifest = {"sparsefold": __version__, "compiler": COMPILER_VERSION,
                    "functions": declared, "part": k, "parts": parts,
                    "variants": len(bucket)}
        texts.append(compiler_aot.assemble(sorted(bucket, key=lambda v: v.digest),
                                           title=f"{title} (part {k + 1} of {parts})",
                                           manifest=manifest))
    stats = {"functions": len(functions), "signatures": sum(map(len, declared.values())),
             "programs": len(kernels), "variants": len(variants)}
    return texts, stats


def package_of(path: Path) -> tuple[Path, str]:
    """(project root, dotted module name) of a module file or package directory, by the
    ``__init__.py`` files above it."""
    path = path.resolve()
    parts = [path.stem if path.is_file() or path.suffix == ".py" else path.name]
    d = path.parent
    while (d / "__init__.py").exists():
        parts.append(d.name)
        d = d.parent
    return d, ".".join(reversed(parts))


def load_spec(path: Path):
    """Execute a spec module under its dotted name without importing its package."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no spec module {path}")
    _, dotted = package_of(path)
    spec = importlib.util.spec_from_file_location(dotted, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _names(parts: int) -> list[str]:
    return ["_ext"] if parts == 1 else [f"_ext{k}" for k in range(parts)]


def generate(spec_path, out_dir, *, parts: int = 1) -> list[Path]:
    """Write the kernels, dispatch module and glue for ``spec_path`` into ``out_dir``."""
    from sparsefold import __version__
    spec_path, out_dir = Path(spec_path), Path(out_dir)
    module = load_spec(spec_path)
    functions = exported(module)
    if not functions:
        raise IllFormedProgram(f"{spec_path} exports no functions (decorate sf.jit functions "
                               f"with @sparsefold.aot.export(aot.signature(...)))")
    _, spec_dotted = package_of(spec_path)
    out_dir.mkdir(parents=True, exist_ok=True)
    root, package = package_of(out_dir)
    texts, _ = sources(functions, parts=parts, title=f"kernels of {spec_dotted}")
    names = _names(parts)
    written = []
    for name, text in zip(names, texts):
        written.append(out_dir / f"{name}.pyx")
        written[-1].write_text(text)
    built = "\n".join(fn.built() for fn in functions.values())
    imports = "\n".join(f"from . import {n} as _{n.lstrip('_')}  # noqa: E402" for n in names)
    bound = "\n".join(f"{name} = _functions[{name!r}]" for name in functions)
    dispatch = f'''"""Ahead-of-time kernels of {spec_dotted}: generated by ``sparsefold aot``
(sparsefold {__version__}); do not edit. Built signatures:

{built}

Calls run on the extension {", ".join(f"{package}.{n}" for n in names)} (no Cython or C compiler
needed); another signature raises sparsefold.aot.NotPrebuilt.
"""

import importlib

from sparsefold import aot as _aot

_aot.runtime()  # the kernels' shared runtime, before the extensions that call it

{imports}

_functions = _aot.bind([{", ".join("_" + n.lstrip("_") for n in names)}],
                       importlib.import_module({spec_dotted!r}))
{bound}

__all__ = {sorted(functions)!r}
'''
    written.append(out_dir / "__init__.py")
    written[-1].write_text(dispatch)
    modules = {f"{package}.{n}": (out_dir / f"{n}.pyx").resolve().relative_to(root).as_posix()
               for n in names}
    # the shared runtime's declarations, which the kernels cimport, for Cython at build time
    include = runtime_source.write_include(out_dir / "_include")
    written.append(include / "sparsefold" / "compiler" / "runtime.pxd")
    written.append(out_dir / "_build.py")
    written[-1].write_text(_glue(package, modules))
    return written


def _glue(package: str, modules: dict[str, str]) -> str:
    directives = dict(sorted(CYTHON_DIRECTIVES.items()), language_level=3)
    return f'''"""setuptools glue for the ahead-of-time kernels in {package} (generated by
``sparsefold aot``; do not edit). Needs Cython and a C compiler at build time only. In
setup.py, run from the project root:

    import runpy
    from setuptools import setup
    setup(ext_modules=runpy.run_path("{package.replace(".", "/")}/_build.py")["extensions"]())
"""

import os
import sysconfig

MODULES = {modules!r}
# the JIT's flags (sparsefold.compiler.run.build.CFLAGS): -fwrapv and no strict aliasing are
# part of what the generated C means
COMPILE_ARGS = {list(compiler_aot.COMPILE_ARGS)!r}
GCC_ONLY_ARGS = {list(compiler_aot.GCC_ONLY_ARGS)!r}
DIRECTIVES = {directives!r}


def _gcc():
    cc = (os.environ.get("CC") or sysconfig.get_config_var("CC") or "").split()
    return bool(cc) and "gcc" in os.path.basename(cc[0]) and "clang" not in cc[0]


def _openmp():
    # the kernels' parallel loops use OpenMP when the compiler links a runtime; without
    # -fopenmp they compile to serial loops (SPARSEFOLD_OPENMP=0 forces that)
    import subprocess
    cc = (os.environ.get("CC") or sysconfig.get_config_var("CC") or "").split()
    if not cc or os.environ.get("SPARSEFOLD_OPENMP", "1") == "0":
        return []
    for lib in ("libgomp.so", "libomp.so", "libgomp.dylib", "libomp.dylib"):
        try:
            path = subprocess.run(cc + ["-print-file-name=" + lib], capture_output=True,
                                  text=True, timeout=60).stdout.strip()
        except (OSError, subprocess.TimeoutExpired):
            return []
        if os.path.isabs(path) and os.path.exists(path):
            return ["-fopenmp"]
    return []


def extensions():
    from Cython.Build import cythonize
    from setuptools import Extension
    omp = _openmp()
    args = COMPILE_ARGS + (GCC_ONLY_ARGS if _gcc() else []) + omp
    exts = [Extension(name, [source], extra_compile_args=args, extra_link_args=omp)
            for name, source in MODULES.items()]
    # the kernels cimport the shared runtime, sparsefold/compiler/runtime.pxd (written
    # beside this file by `sparsefold aot`); at run time they call the installed one
    return cythonize(exts, compiler_directives=DIRECTIVES, quiet=True,
                     include_path=[os.path.join(os.path.dirname(__file__), "_include")],
                     nthreads=min(len(exts), os.cpu_count() or 1) if len(exts) > 1 else 0)
'''


# --- the `sparsefold aot` subcommand -------------------------------------------------------------

def add_parser(subparsers) -> None:
    p = subparsers.add_parser(
        "aot", help="generate ahead-of-time kernels (Cython + dispatch + setuptools glue)",
        description="Generate the kernels a spec module exports (@sparsefold.aot.export) as "
                    "a Cython extension, a dispatch module and setuptools glue.")
    p.add_argument("spec", help="the spec module (a .py file)")
    p.add_argument("-o", "--output", required=True,
                   help="output package directory, e.g. mypkg/_kernels")
    p.add_argument("--parts", type=int, default=1,
                   help="split the kernels into this many extensions (compiled in parallel)")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    started = time.perf_counter()
    try:
        written = generate(args.spec, args.output, parts=args.parts)
    except (IllFormedProgram, FileNotFoundError) as exc:
        print(f"sparsefold aot: {exc}", file=sys.stderr)
        return 2
    variants = sum(p.read_text().count("# === variant ") for p in written if p.suffix == ".pyx")
    print(f"{variants} kernel variants in {time.perf_counter() - started:.1f} s; wrote:")
    for path in written:
        print(f"  {path}")
    return 0

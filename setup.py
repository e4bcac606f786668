"""Build step: sparsefold's prebuilt kernels (``sparsefold/prebuilt.py``, DESIGN §3.7).

The kernels are generated from the source tree at build time through the same path as
``sparsefold aot`` (``sparsefold.aot_generate.sources``) — never committed — then cythonized
and compiled as the extensions ``sparsefold._prebuilt0`` and ``sparsefold._prebuilt1`` side
by side. Everything else is in ``pyproject.toml``. If generating or compiling fails (or
``SPARSEFOLD_PREBUILT=0``), sparsefold is installed without them and compiles every kernel
on first use instead.
"""

import importlib.abc
import importlib.util
import os
import sys
import time
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = Path(__file__).resolve().parent
# as [tool.setuptools.package-dir] in pyproject.toml
PACKAGE_DIRS = {"sparsefold": "sparsefold", "sparsefold.spec": "spec",
                "sparsefold.interp": "interp", "sparsefold.compiler": "compiler",
                "sparsefold.verify": "verify", "sparsefold.benchmarks": "benchmarks",
                "sparsefold.storage": "storage"}
PARTS = 2
NAMES = [f"sparsefold._prebuilt{k}" for k in range(PARTS)]
GENERATED = Path("build") / "sparsefold-prebuilt"  # relative: setuptools wants that


class _SourceTree(importlib.abc.MetaPathFinder):
    """Imports ``sparsefold.*`` from this source tree (the mapping above) while generating."""

    def find_spec(self, name, path=None, target=None):
        if name in PACKAGE_DIRS:
            d = ROOT / PACKAGE_DIRS[name]
            return importlib.util.spec_from_file_location(
                name, d / "__init__.py", submodule_search_locations=[str(d)])
        return None


def _generate() -> list[Path]:
    sys.meta_path.insert(0, _SourceTree())
    from sparsefold import aot, aot_generate, prebuilt
    started = time.perf_counter()
    texts, stats = aot_generate.sources(aot.exported(prebuilt), parts=PARTS,
                                        title="sparsefold's prebuilt kernels")
    out = ROOT / GENERATED
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, text in zip(NAMES, texts):
        path = out / (name.split(".")[-1] + ".pyx")
        if not path.exists() or path.read_text() != text:  # keep mtimes: no needless rebuild
            path.write_text(text)
        paths.append(GENERATED / path.name)
    print(f"sparsefold: generated {stats['variants']} prebuilt kernel variants "
          f"({stats['signatures']} signatures) in {time.perf_counter() - started:.1f} s")
    return paths


class BuildPrebuilt(build_ext):
    def finalize_options(self):
        super().finalize_options()
        if not self.parallel:
            self.parallel = os.cpu_count() or 1

    def run(self):
        if os.environ.get("SPARSEFOLD_PREBUILT", "1") == "0":
            return self._without("SPARSEFOLD_PREBUILT=0")
        try:
            from Cython.Build import cythonize
            paths = _generate()
            from sparsefold.compiler.aot import compile_args, openmp_args
            from sparsefold.compiler.build import CYTHON_DIRECTIVES
            started = time.perf_counter()
            exts = [Extension(name, [str(path)]) for name, path in zip(NAMES, paths)]
            c_files = cythonize(exts, compiler_directives=dict(CYTHON_DIRECTIVES),
                                language_level=3, quiet=True, nthreads=PARTS,
                                build_dir=str(GENERATED / "c"))
            print(f"sparsefold: cythonized in {time.perf_counter() - started:.1f} s")
            by_name = {e.name: e for e in c_files}
            args = compile_args()
            if "-fvect-cost-model=cheap" in args:  # gcc: as kernels are built at run time,
                from sparsefold.compiler.build import GCC_GLUE_LEVEL, split_levels  # glue at
                args = [GCC_GLUE_LEVEL if a == "-O2" else a for a in args]  # -Og, loops at -O2
                for ext in c_files:
                    for c_file in ext.sources:
                        text = Path(c_file).read_text()
                        Path(c_file).write_text(split_levels(text))
            for ext in self.extensions:  # setuptools' own objects: only their inputs change
                ext.sources = list(by_name[ext.name].sources)
                ext.extra_compile_args = args
                ext.extra_link_args = openmp_args()  # parallel loops; none: serial
        except Exception as exc:  # noqa: BLE001 - the JIT still works without them
            return self._without(f"{type(exc).__name__}: {exc}")
        started = time.perf_counter()
        super().run()
        print(f"sparsefold: compiled the prebuilt kernels in "
              f"{time.perf_counter() - started:.1f} s")

    def _without(self, why: str) -> None:
        print(f"sparsefold: WARNING: installing without prebuilt kernels ({why}); kernels "
              f"are compiled on first use", file=sys.stderr)
        self.extensions = []


setup(ext_modules=[Extension(name, [str(GENERATED / (name.split(".")[-1] + ".pyx"))],
                             optional=True) for name in NAMES],
      cmdclass={"build_ext": BuildPrebuilt})

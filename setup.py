"""Build step: the shared kernel runtime and sparsefold's prebuilt kernels (DESIGN §3.6-7).

* ``sparsefold.compiler.runtime`` (``compiler/runtime.pyx``): what every kernel module
  cimports — compiled here once, so that a kernel compiled at run time holds only its loops.
  If it cannot be built here, the first kernel build compiles it into the kernel cache
  instead (``build.ensure_runtime``), as it does when an editable install's sources change.
* ``sparsefold._prebuilt0`` and ``sparsefold._prebuilt1`` (``sparsefold/prebuilt.py``): the
  kernels are generated from the source tree at build time through the same path as
  ``sparsefold aot`` (``sparsefold.aot_generate.sources``) — never committed — then
  cythonized and compiled side by side. If generating or compiling fails (or
  ``SPARSEFOLD_PREBUILT=0``), sparsefold is installed without them and compiles every kernel
  on first use instead.

Everything else is in ``pyproject.toml``.
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
RUNTIME = "sparsefold.compiler.runtime"
RUNTIME_PYX = Path("compiler") / "runtime.pyx"  # relative: setuptools wants that
GENERATED = Path("build") / "sparsefold-prebuilt"


class _SourceTree(importlib.abc.MetaPathFinder):
    """Imports ``sparsefold.*`` from this source tree (the mapping above) while generating."""

    def find_spec(self, name, path=None, target=None):
        if name in PACKAGE_DIRS:
            d = ROOT / PACKAGE_DIRS[name]
            return importlib.util.spec_from_file_location(
                name, d / "__init__.py", submodule_search_locations=[str(d)])
        return None


def _generate() -> list[Path]:
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
        sys.meta_path.insert(0, _SourceTree())
        built = []
        try:
            built.append(self._runtime())
        except Exception as exc:  # noqa: BLE001 - the JIT builds it on first use then
            print(f"sparsefold: WARNING: installing without the compiled kernel runtime "
                  f"({type(exc).__name__}: {exc}); the first kernel build compiles it",
                  file=sys.stderr)
        if os.environ.get("SPARSEFOLD_PREBUILT", "1") == "0":
            self._without("SPARSEFOLD_PREBUILT=0")
        else:
            try:
                built += self._prebuilt()
            except Exception as exc:  # noqa: BLE001 - the JIT still works without them
                self._without(f"{type(exc).__name__}: {exc}")
        self.extensions = [ext for ext in self.extensions if ext.name in built]
        started = time.perf_counter()
        super().run()
        print(f"sparsefold: compiled {', '.join(built) or 'nothing'} in "
              f"{time.perf_counter() - started:.1f} s")

    def _ext(self, name: str) -> Extension:
        (ext,) = [e for e in self.extensions if e.name == name]
        return ext

    def _runtime(self) -> str:
        """The shared runtime: cythonized from compiler/runtime.pyx, compiled at -O2."""
        from Cython.Build import cythonize

        from sparsefold.compiler.aot import compile_args, openmp_args
        from sparsefold.compiler.run.build import CYTHON_DIRECTIVES, runtime_defines
        # Cython finds a module's .pxd by its dotted name: the sources under
        # sparsefold/compiler/ of a tree of their own
        tree = GENERATED / "runtime"
        package = ROOT / tree / "sparsefold" / "compiler"
        package.mkdir(parents=True, exist_ok=True)
        for name in ("runtime.pyx", "runtime.pxd"):
            text = (ROOT / RUNTIME_PYX.parent / name).read_text()
            if not (package / name).exists() or (package / name).read_text() != text:
                (package / name).write_text(text)  # keep mtimes: no needless rebuild
        ext = Extension(RUNTIME, [str(tree / "sparsefold" / "compiler" / "runtime.pyx")])
        (c_ext,) = cythonize([ext], compiler_directives=dict(CYTHON_DIRECTIVES),
                             language_level=3, quiet=True, build_dir=str(GENERATED / "c"),
                             include_path=[str(tree)])
        target = self._ext(RUNTIME)  # setuptools' own object: only its inputs change
        target.sources = list(c_ext.sources)
        target.extra_compile_args = compile_args(numpy=True)
        target.extra_link_args = openmp_args()
        target.define_macros = list(runtime_defines().items())
        return RUNTIME

    def _prebuilt(self) -> list[str]:
        from Cython.Build import cythonize
        paths = _generate()
        from sparsefold.compiler.aot import compile_args, openmp_args
        from sparsefold.compiler.emit import runtime_source
        from sparsefold.compiler.run.build import CYTHON_DIRECTIVES
        started = time.perf_counter()
        exts = [Extension(name, [str(path)]) for name, path in zip(NAMES, paths)]
        include = runtime_source.write_include(ROOT / GENERATED / "include")
        c_files = cythonize(exts, compiler_directives=dict(CYTHON_DIRECTIVES),
                            language_level=3, quiet=True, nthreads=PARTS,
                            build_dir=str(GENERATED / "c"), include_path=[str(include)])
        print(f"sparsefold: cythonized in {time.perf_counter() - started:.1f} s")
        by_name = {e.name: e for e in c_files}
        args = compile_args()
        if "-fvect-cost-model=cheap" in args:  # gcc: as kernels are built at run time,
            from sparsefold.compiler.run.build import GCC_GLUE_LEVEL, split_levels  # glue at
            args = [GCC_GLUE_LEVEL if a == "-O2" else a for a in args]  # -Og, loops at -O2
            for ext in c_files:
                for c_file in ext.sources:
                    text = Path(c_file).read_text()
                    Path(c_file).write_text(split_levels(text))
        for name in NAMES:  # setuptools' own objects: only their inputs change
            ext = self._ext(name)
            ext.sources = list(by_name[name].sources)
            ext.extra_compile_args = args
            ext.extra_link_args = openmp_args()  # parallel loops; none: serial
        return list(NAMES)

    def _without(self, why: str) -> None:
        print(f"sparsefold: WARNING: installing without prebuilt kernels ({why}); kernels "
              f"are compiled on first use", file=sys.stderr)


setup(ext_modules=[Extension(RUNTIME, [str(RUNTIME_PYX)], optional=True)] +
      [Extension(name, [str(GENERATED / (name.split(".")[-1] + ".pyx"))], optional=True)
       for name in NAMES],
      cmdclass={"build_ext": BuildPrebuilt})

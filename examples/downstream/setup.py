"""Build: generate the ahead-of-time kernels of downstream_demo/kernels.py (the same as
``sparsefold aot downstream_demo/kernels.py -o downstream_demo/_kernels``), then compile them
with the generated setuptools glue. Everything else is in pyproject.toml."""

import runpy

from setuptools import setup

from sparsefold import aot

aot.generate("downstream_demo/kernels.py", "downstream_demo/_kernels")
setup(ext_modules=runpy.run_path("downstream_demo/_kernels/_build.py")["extensions"]())

"""``sparsefold aot SPEC.py -o PKG/_kernels``: what it writes (nothing is compiled here)."""

from __future__ import annotations

import ast
import textwrap

from sparsefold.cli import main
from sparsefold.compiler.emit import runtime_source

SPEC = textwrap.dedent('''
    import sparsefold as sf
    from sparsefold import aot

    @aot.export(aot.signature(aot.csr("float64"), aot.csr("float64")))
    @sf.jit
    def stack(a, b):
        return sf.hstack([a, b])

    @aot.export(aot.signature(aot.csc("float32", index="int64")))
    @sf.jit(out="csr")
    def twice(a):
        return a * 2
''')


def test_writes_kernels_dispatch_and_glue(tmp_path, capsys):
    pkg = tmp_path / "mypkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "kernels.py").write_text(SPEC)
    assert main(["aot", str(pkg / "kernels.py"), "-o", str(pkg / "_kernels"),
                 "--parts", "2"]) == 0
    out = capsys.readouterr().out
    assert "kernel variants" in out
    files = sorted(p.name for p in (pkg / "_kernels").iterdir())
    assert files == ["__init__.py", "_build.py", "_ext0.pyx", "_ext1.pyx", "_include"]
    # the shared runtime's declarations, which the kernels cimport
    pxd = pkg / "_kernels" / "_include" / "sparsefold" / "compiler" / "runtime.pxd"
    assert pxd.read_text() == runtime_source.PXD.read_text()
    ext0 = (pkg / "_kernels" / "_ext0.pyx").read_text()
    assert "from sparsefold.compiler.runtime cimport" in ext0
    pyx = "".join((pkg / "_kernels" / f"_ext{k}.pyx").read_text() for k in range(2))
    assert pyx.count("# === variant ") == 2 and "_SF_VARIANTS = {" in pyx
    dispatch = (pkg / "_kernels" / "__init__.py").read_text()
    ast.parse(dispatch)
    assert "importlib.import_module('mypkg.kernels')" in dispatch
    assert "stack(csr('float64'), csr('float64'))" in dispatch
    assert "twice(csc('float32', index='int64'))" in dispatch
    glue = (pkg / "_kernels" / "_build.py").read_text()
    namespace = {}
    exec(compile(glue, "_build.py", "exec"), namespace)  # importable without sparsefold
    assert namespace["MODULES"] == {"mypkg._kernels._ext0": "mypkg/_kernels/_ext0.pyx",
                                    "mypkg._kernels._ext1": "mypkg/_kernels/_ext1.pyx"}
    assert "-fwrapv" in namespace["COMPILE_ARGS"]
    assert "import sparsefold" not in glue and "from sparsefold" not in glue
    assert "_include" in glue


def test_a_spec_without_exports_is_an_error(tmp_path, capsys):
    spec = tmp_path / "empty.py"
    spec.write_text("import sparsefold as sf\n")
    assert main(["aot", str(spec), "-o", str(tmp_path / "out")]) == 2
    assert "exports no functions" in capsys.readouterr().err

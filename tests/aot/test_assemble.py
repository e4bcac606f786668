"""compiler/aot.py: the variants of a program, one module from many, and the lookup by
source digest in compiler/run/build.py."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

import sparsefold as sf
from sparsefold import aot
from sparsefold.compiler import aot as compiler_aot
from sparsefold.compiler.pipeline import Kernel
from sparsefold.compiler.run import build
from sparsefold.spec.errors import InternalError


def _kernel(fn, sig):
    program, out, requires, _ = aot.trace_generic(aot.export(sig)(fn), sig)
    return Kernel(program, out, requires=requires)


def test_index_dtypes_make_different_variants():
    k = _kernel(lambda a: a.T, aot.signature(aot.csr("float64")))
    (v32,) = compiler_aot.kernel_variants(k, {"a0": "int32"})
    (v64,) = compiler_aot.kernel_variants(k, {"a0": "int64"})
    assert v32.digest != v64.digest
    assert "int64_t_restrict in_a0_crd1," in v64.source
    assert "int32_t_restrict in_a0_crd1," in v32.source
    both = compiler_aot.kernel_variants(k, {"a0": "int32"}, out_indexes=("int32", "int64"))
    assert len(both) == 2 and v32 in both


def test_a_plan_relying_on_finite_operands_brings_its_exact_variant():
    k = _kernel(lambda a, x: a @ x, aot.signature(aot.csr("float64"), aot.dense("float64")))
    assert k.final.plan.finite
    variants = compiler_aot.kernel_variants(k, {"a0": "int32"})
    # (finite, exact) x (x read with its stride, x contiguous)
    assert len(variants) == 4
    assert sum("Valid when" in v.source for v in variants) == 2


def test_every_stage_of_a_staged_program_is_a_variant():
    k = _kernel(lambda a: a - a.T, aot.signature(aot.csr("float64")))
    assert len(k.stages) == 1
    variants = compiler_aot.kernel_variants(k, {"a0": "int32"})
    assert len(variants) == 2
    assert any("Stage: computes temporary" in v.source for v in variants)


def test_input_index_dtypes_are_what_the_runtime_reads():
    k = _kernel(lambda a: a * 2.0, aot.signature(aot.coo("float64", index="int64")))
    (inp,) = k.final.inputs
    # COO's position array is always int64; its coordinates keep the declared width
    assert compiler_aot.input_index_dtypes(inp, "int32") == {
        "pos0": np.dtype(np.int64), "crd0": np.dtype(np.int32), "crd1": np.dtype(np.int32)}


def _variant_with(extra: str) -> compiler_aot.Variant:
    k = _kernel(lambda a: a * 2.0, aot.signature(aot.csr("float64")))
    (v,) = compiler_aot.kernel_variants(k, {"a0": "int32"})
    src = v.source.replace("\ncdef void _run_body(", f"\n{extra}\n\ncdef void _run_body(", 1)
    return compiler_aot.Variant(build.source_digest(src), src, v.functions, v.title)


def test_assembly_refuses_module_level_text_it_does_not_know():
    with pytest.raises(InternalError, match="unexpected module-level line"):
        compiler_aot.assemble([_variant_with("_SHARED = 1")], title="t", manifest={})
    with pytest.raises(InternalError, match="unexpected module-level line"):
        compiler_aot.assemble([_variant_with("def helper():\n    pass")], title="t",
                              manifest={})


def test_prebuilt_only_names_the_context_and_the_kernel_on_a_miss():
    source = "# sparsefold kernel: stream -> csr\nx = 1\n"
    with build.prebuilt_only("mypkg.kernel (prebuilt in mypkg._ext)"):
        with pytest.raises(build.NotPrebuilt, match=r"^mypkg.kernel \(prebuilt in mypkg._ext\):"
                           r" this call needs a kernel that was not built ahead of time "
                           r"\(stream -> csr; source sha256 [0-9a-f]{16}\)"):
            build.load_module(source, name_hint="x")
    assert isinstance(build.NotPrebuilt("x"), sf.IllFormedProgram)


@pytest.mark.cython
def test_an_assembled_module_serves_the_runtime_without_building(tmp_path, monkeypatch):
    """Assemble two programs' variants, compile the module once, register it: their calls
    then build nothing, even inside prebuilt_only."""
    monkeypatch.setenv("SPARSEFOLD_CACHE_DIR", str(tmp_path / "cache"))
    scale = _kernel(lambda a: a * 3.0 + a, aot.signature(aot.csr("float32")))
    skew = _kernel(lambda a: a - a.T, aot.signature(aot.csr("float32")))
    variants = [v for k in (scale, skew) for ix in ("int32", "int64")
                for v in compiler_aot.kernel_variants(k, {"a0": ix})]
    text = compiler_aot.assemble(variants, title="test", manifest={"functions": {}})
    module = build.load_module(text, name_hint="aot_test")  # the JIT's builder compiles it
    table = getattr(module, compiler_aot.VARIANTS_NAME)
    assert set(table) == {v.digest for v in variants}
    build.register_prebuilt(table)
    build.clear_memory_cache()
    a = sp.random_array((7, 7), density=0.4, format="csr", dtype=np.float32, rng=3)
    a64 = a.copy()
    a64.indptr, a64.indices = a.indptr.astype(np.int64), a.indices.astype(np.int64)
    with build.prebuilt_only("test"):
        for x in (a, a64):
            np.testing.assert_array_equal(scale({"a0": x}).toarray(), (a * 4.0).toarray())
            np.testing.assert_array_equal(skew({"a0": x}).toarray(), (a - a.T).toarray())
    assert build.stats()["builds"] == 0 and build.stats()["prebuilt_hits"] == len(variants)

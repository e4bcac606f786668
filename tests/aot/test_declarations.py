"""sparsefold.aot declarations: arrays, sizes, signatures, export."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

import sparsefold as sf
from sparsefold import aot
from sparsefold.jit import JitFunction


def test_reprs_read_as_the_declaration():
    sig = aot.signature(aot.csr("float64"), aot.csc("float32", index="int64"),
                        aot.coo("float64", ndim=3), aot.dense("float64", ndim=2),
                        aot.size("start"), aot.size(), out_index=("int32", "int64"))
    assert repr(sig) == ("signature(csr('float64'), csc('float32', index='int64'), "
                         "coo('float64', ndim=3), dense('float64', ndim=2), size('start'), "
                         "size(), out_index=('int32', 'int64'))")
    assert repr(aot.csr("float64", shape=("m", 4))) == "csr('float64', shape=('m', 4))"


@pytest.mark.parametrize("make, text", [
    (lambda: aot.array("bsr", "float64"), "format must be one of"),
    (lambda: aot.array("csc", "float64", ndim=1), "a csc array has rank 2"),
    (lambda: aot.csr("float64", index="int16"), "index must be 'int32' or 'int64'"),
    (lambda: aot.csr("longdouble"), "not supported yet by the compiler"),
    (lambda: aot.array("dense", "float64", shape=("n", -1)), "a size is a name or an int"),
    (lambda: aot.csr("float64", shape=("d0_1", "n")), "is reserved"),
    (lambda: aot.signature(aot.csr("float64"), out_index="int16"), "out_index"),
    (lambda: aot.signature("csr"), "aot.array(...) / aot.size()"),
    (lambda: aot.export()(lambda a: a), "at least one"),
])
def test_bad_declarations_are_ill_formed(make, text):
    with pytest.raises(sf.IllFormedProgram, match=text.replace("(", r"\(").replace(")", r"\)")):
        make()


def _csr(index=np.int32, dtype=np.float64):
    a = sp.random_array((4, 3), density=0.5, format="csr", dtype=dtype, rng=0)
    a.indptr, a.indices = a.indptr.astype(index), a.indices.astype(index)
    return a


def test_an_array_argument_accepts_its_format_dtype_rank_and_index_dtype():
    spec = aot.csr("float64")
    assert spec.accepts(_csr()) and spec.accepts(sp.csr_matrix(_csr()))
    assert not spec.accepts(_csr(np.int64))
    assert aot.csr("float64", index="int64").accepts(_csr(np.int64))
    assert not spec.accepts(_csr(dtype=np.float32))
    assert not spec.accepts(_csr().tocsc()) and not spec.accepts(_csr().toarray())
    assert spec.accepts(_csr().tobsr())  # converted at run time: scipy picks the dtype
    assert aot.coo("float64").accepts(_csr().tocoo())
    assert aot.dense("float64", ndim=2).accepts(np.zeros((2, 2)))
    assert not aot.dense("float64").accepts(np.zeros((2, 2)))


def test_a_size_argument_is_a_non_negative_int():
    s = aot.size()
    assert s.accepts(0) and s.accepts(7) and s.accepts(np.int64(3))
    assert not s.accepts(-1) and not s.accepts(True) and not s.accepts(2.0)


def test_export_wraps_a_plain_function_and_unbound_it_is_the_jit():
    @aot.export(aot.signature(aot.csr("float64"), aot.csr("float64")))
    def stack(a, b):
        return sf.vstack([a, b])
    assert isinstance(stack, aot.AotFunction) and isinstance(stack.jit, JitFunction)
    assert stack.extension is None and stack.__name__ == "stack"
    a = _csr()
    got = stack(a, _csr(dtype=np.float64))  # any signature: it is the JIT
    np.testing.assert_array_equal(got.toarray(), sp.vstack([a, a]).toarray())
    assert "stack(csr('float64'), csr('float64'))" in stack.built()

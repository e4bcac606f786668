"""Per-kernel certificates (``verify.prove_kernel``): the obligations the compiler relies on
for one kernel — its operator entries, its functions' zero algebra, the order facts its
planner used — proved again, shown with status and time, and digested.

Oracle for the order facts: each one the certificate lists as proved is asked of Z3 again
here, with the planner's cache bypassed (``decide_order``)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

import sparsefold as sf
from sparsefold import verify
from sparsefold.compiler import Kernel
from sparsefold.compiler.plan.order import recording
from sparsefold.spec.errors import IllFormedProgram
from sparsefold.verify.entries import check_entry
from sparsefold.verify.kernels import NOT_RELIED_ON

sys.path.insert(0, str(Path(__file__).resolve().parent))
from wrong_ops import Interleave  # noqa: E402

A = sp.random_array((50, 40), density=0.1, format="csr", random_state=1)
B = sp.random_array((30, 40), density=0.1, format="csr", random_state=2)


def test_a_fused_concat_of_a_reversed_slice_is_certified():
    f = sf.jit(lambda a, b: sf.concat([a, b[::-1]], axis=0) * 2, out="csr")
    cert = verify.prove_kernel(f, A, B)
    names = [o.name for o in cert.obligations]
    assert cert.status == "proved", str(cert)
    assert {"entry slice", "entry concat", "function multiply (f)"} <= set(names)
    relied = [o for o in cert.obligations if o.name.startswith("order")
              and o.status != NOT_RELIED_ON]
    assert relied and all(o.status == "proved" for o in relied)
    text = str(cert)
    assert text.startswith(f"kernel certificate: proved  sha256:{cert.digest[:16]}")
    assert "entry concat" in text and "s  " in text  # every row carries its time
    # the digest depends on the program and the out format, not on timings
    assert verify.prove_kernel(f, A, B).digest == cert.digest
    g = sf.jit(lambda a, b: sf.concat([a, b[::-1]], axis=0) * 2, out="coo")
    assert verify.prove_kernel(g, A, B).digest != cert.digest
    # and the kernel computes what the interpreter does
    verify.differential(lambda a, b: sf.concat([a, b[::-1]], axis=0) * 2, A, B, out="csr")


def test_the_order_facts_listed_are_the_ones_the_planner_asked():
    f = sf.jit(lambda a: a.T, out="csr")
    cert = verify.prove_kernel(f, A)
    program, out = f.program_for(A)
    with recording() as asked:
        Kernel(program, out, operators=check_entry)
    distinct = list(dict.fromkeys((q.pieces, q.out_order, q.same_outer, q.answer)
                                  for q in asked))
    listed = [o for o in cert.obligations if o.name.startswith("order")]
    assert len(listed) == len(distinct) >= 1
    for o, (_, _, same_outer, answer) in zip(listed, distinct):
        assert o.name.endswith("(row)") == same_outer
        assert o.status == ("proved" if answer else NOT_RELIED_ON)


def test_a_kernel_of_a_wrong_operator_gets_no_certificate():
    a = sp.random_array((6, 5), density=0.4, format="csr", random_state=0)
    f = sf.jit(lambda x, y: sf.apply_operator(Interleave, x, y, wrong=True), out="csr")
    with pytest.raises(IllFormedProgram, match=r"operator interleave is wrong"):
        verify.prove_kernel(f, a, a)
    right = sf.jit(lambda x, y: sf.apply_operator(Interleave, x, y), out="csr")
    cert = verify.prove_kernel(right, a, a)
    assert cert.status == "proved"
    assert any(o.name == "entry interleave" and o.status == "proved" for o in cert.obligations)


def test_the_kernel_header_carries_the_certificate_digest():
    cert = verify.prove_kernel(sf.jit(lambda a: a[::-1].T, out="csr"), A)
    assert cert.status == "proved", str(cert)
    line = f"# certificate: sha256:{cert.digest}"
    assert cert.header_line == line
    assert line in cert.source.splitlines()[:6]
    # sf.jit(certify=True) compiles the same kernel, digest in its header, and runs it
    f = sf.jit(lambda a: a[::-1].T, out="csr", certify=True)
    assert line in sf.show(f, A).splitlines()
    got = f(A)
    assert got.format == "csr" and np.array_equal(got.toarray(), A.toarray()[::-1].T)
    # an uncertified kernel has no such line: the digest is not made up
    assert "# certificate:" not in sf.show(sf.jit(lambda a: a[::-1].T, out="csr"), A)


def test_a_staged_kernel_is_certified_in_every_stage():
    f = sf.jit(lambda a: a - a.T, out="csr")
    cert = verify.prove_kernel(f, A[:40])
    names = [o.name for o in cert.obligations]
    assert cert.status == "proved", str(cert)
    assert "reorder tmp0 (scatter)" in names or "reorder tmp0 (bucket)" in names
    assert "lattice result" in names
    assert any(n.startswith("coverage tmp0") for n in names)
    assert cert.source.count(cert.header_line) == 2  # the stage and the final kernel


def test_a_kind_the_zero_algebra_does_not_read_is_not_proved():
    # Z3 has no reading of complex values: the facts are probed numerically against NumPy
    # (verify.zero_probe), and neither the row nor the certificate says "proved"
    c = sp.random_array((6, 5), density=0.4, format="csr", random_state=0).astype("complex128")
    cert = verify.prove_kernel(sf.jit(lambda x, y: x * y, out="csr"), c, c)
    row = next(o for o in cert.obligations if o.name.startswith("function multiply"))
    assert row.name == "function multiply (c)" and row.status == "probed"
    assert cert.status == "probed"


def test_a_gather_stage_is_certified_by_its_index_array_facts():
    a = sp.random_array((6, 5), density=0.4, format="csr", random_state=0)
    idx = np.array([3, 0, 0, 5])
    cert = verify.prove_kernel(sf.jit(lambda x, i: x[i] * 2), a, idx)
    row = next(o for o in cert.obligations if o.name.startswith("gather"))
    assert row.status == "proved" and "for any index array" in row.statement
    assert cert.status == "proved"
    got = sf.jit(lambda x, i: x[i] * 2, certify=True)(a, idx)
    np.testing.assert_array_equal(got.toarray(), a.toarray()[idx] * 2)

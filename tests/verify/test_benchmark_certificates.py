"""Every kernel of the benchmark suite (``benchmarks/kernels.py``, the 15 kernels of
BENCHMARKS.md, and every stage of the compute group's fused programs, ``benchmarks/
compute.py``) gets a certificate (``verify.prove_kernel``) in CI: the compiled plan's
operator entries, functions' zero algebra, coverage of the output support, lattice, reorder
and the order facts it appends by, all proved, and the digest in the kernel's header.

The kernels are prepared on a small matrix; the certificate is of the kernel the benchmark
compiles (the same ``sf.jit`` function, the same argument kinds), which is size-generic
except for ``v.reshape(N, C)`` (traced with the matrix's sizes).
"""

from __future__ import annotations

import pytest
import scipy.sparse as sp

from sparsefold import verify
from sparsefold.benchmarks import kernels as bk

# kernel name -> (its sf.jit function, given the matrix; the Case operands it is called on)
CALLS = {
    "cv_collapse_coo": (lambda m: bk._flatten, ("a",)),
    "coo_hstack_coo_coo": (lambda m: bk._hcat_coo, ("a", "b")),
    "coo_vstack_coo_coo": (lambda m: bk._vcat_coo, ("a", "b")),
    "csr_hstack_csr_csr": (lambda m: bk._hcat_csr, ("a", "b")),
    "csr_vstack_csr_csr": (lambda m: bk._vcat_csr, ("a", "b")),
    "csr_slice_1d_csr": (lambda m: bk._slice_csr, ("m",)),
    "coo_split_cv": (lambda m: bk._split(*m.shape, "coo"), ("v",)),
    "csr_split_cv": (lambda m: bk._split(*m.shape, "csr"), ("v",)),
    "csr_hstack_coo_coo": (lambda m: bk._hcat_csr, ("a", "b")),
    "coo_vstack_csr_csr": (lambda m: bk._vcat_coo, ("a", "b")),
    "coo_hstack_csr_csr": (lambda m: bk._hcat_coo, ("a", "b")),
    "coo_slice_1d_csr": (lambda m: bk._slice_coo, ("m",)),
    "cv_collapse_csr_mul_cv": (lambda m: bk._flatten_mul, ("m", "b")),
    "dv_sum_vstack_csr_csr_mul_dv": (lambda m: bk._vcat_matvec, ("a", "b", "x")),
    "csr_slice_1d_csr_mul_csr": (lambda m: bk._slice_mul, ("a", "b")),
}


def test_every_benchmark_kernel_is_listed():
    assert set(CALLS) == set(bk.kernel_names())


@pytest.mark.parametrize("kernel", bk.KERNELS, ids=lambda k: k.name)
def test_benchmark_kernel_has_a_certificate(kernel):
    m = sp.random_array((41, 30), density=0.15, format="csr", dtype="float32",
                        random_state=7)
    m.sort_indices()
    case = kernel.prepare(m)
    fn_of, names = CALLS[kernel.name]
    fn = fn_of(m)
    args = [case.operands[n] for n in names]
    cert = verify.prove_kernel(fn, *args)
    assert cert.status == "proved", str(cert)
    assert cert.out == kernel.out
    assert len(cert.digest) == 64


# the compute group (issue 11): every stage of every program's fused pipeline
def _compute_calls():
    from sparsefold.benchmarks import compute as bc
    m = sp.random_array((41, 41), density=0.15, format="csr", dtype="float64",
                        random_state=7)
    m.sort_indices()
    ops = bc.Operands(m)
    for program in bc.PROGRAMS:
        case = program.prepare(ops)
        assert not case.skip, f"{program.name} skipped on the test matrix: {case.skip}"
        for n, (fn, args) in enumerate(case.ours.stages):
            yield pytest.param(fn, args, case, id=f"{program.name}[{n}]")


@pytest.mark.parametrize("fn, args, case", list(_compute_calls()))
def test_compute_kernel_has_a_certificate(fn, args, case):
    cert = verify.prove_kernel(fn, *args)
    assert cert.status == "proved", str(cert)
    assert cert.out == case.out
    kinds = {o.name.split()[0] for o in cert.obligations}
    assert "coverage" in kinds or cert.strategy == "dense", str(cert)
    if cert.strategy == "coiterate":
        assert "lattice" in kinds and "function" in kinds, str(cert)
    assert cert.header_line in cert.source

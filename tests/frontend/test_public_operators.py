"""``sparsefold.operators``: the names a user writes an operator with, from one public module,
the very objects of their home modules (the old import paths keep working)."""

from __future__ import annotations

import sparsefold.operators as ops
from sparsefold import functions
from sparsefold.spec import compute, errors, ir, sizes
from sparsefold.verify import entries


def test_the_public_module_gathers_the_home_modules_objects():
    assert ops.ShapeOp is ir.ShapeOp and ops.Piece is ir.Piece and ops.Node is ir.Node
    assert ops.normalize_axis is ir.normalize_axis and ops.require_equal is ir.require_equal
    assert ops.sizes is sizes and ops.Input is compute.Input
    assert ops.apply_operator is functions.apply_operator and ops.trust is entries.trust
    assert ops.IllFormedProgram is errors.IllFormedProgram
    assert sorted(ops.__all__) == sorted(n for n in vars(ops) if not n.startswith("_")
                                         and n != "annotations")

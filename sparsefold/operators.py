"""Writing a shape operator: everything a user needs, from one public module.

    from dataclasses import dataclass

    import sparsefold as sf
    from sparsefold.operators import Input, Node, Piece, ShapeOp, normalize_axis, sizes as sz

    @dataclass(frozen=True, slots=True, eq=False, repr=False)
    class Flip(ShapeOp):
        arg: Node
        axis: int
        ...                                   # operands, check, shape_rule, pieces

    y = sf.apply_operator(Flip, x, axis=1)    # a LazyArray: interpreted, compiled, proved

* ``ShapeOp`` (the base class: a frozen, slotted dataclass), ``Piece`` (one operand's guard,
  backward map, forward guard and forward map), ``Node`` (the type of an operand field),
  ``IndexMap``;
* ``sizes`` — size and index expressions: ``sizes.out_coords(n)`` (``_k0 ..``),
  ``sizes.in_coords(n)`` (``_i0 ..``), ``add``/``sub``/``mul``/``floordiv``/``mod``,
  comparisons ``lt``/``le``/``eq``, ``and_``/``or_``/``not_``, ``TRUE``, ``Sym``,
  ``as_expr``, ``Expr``;
* ``normalize_axis``, ``require_equal`` — checks in ``check(shapes)`` that raise
  ``IllFormedProgram`` with a stable message;
* ``Input`` — a symbolic input (``Input("X", ("N0", "N1"), "float64", "dense")``), for
  ``verify.prove_operator([...])`` over symbolic sizes;
* ``apply_operator`` — build a node of your operator from arrays; ``trust`` — mark an entry
  whose proof is not decided as trusted (kernels then run with run-time checks);
* ``IllFormedProgram``.

The same names stay importable from their home modules (``sparsefold.spec.ir``,
``sparsefold.spec.sizes``, ``sparsefold.spec.compute``); this module only gathers them.
"""

from __future__ import annotations

from sparsefold.functions import apply_operator
from sparsefold.spec import sizes
from sparsefold.spec.compute import Input
from sparsefold.spec.errors import IllFormedProgram
from sparsefold.spec.ir import IndexMap, Node, Piece, ShapeOp, normalize_axis, require_equal
from sparsefold.verify.entries import trust

__all__ = ["ShapeOp", "Piece", "Node", "IndexMap", "sizes", "normalize_axis", "require_equal",
           "Input", "apply_operator", "trust", "IllFormedProgram"]

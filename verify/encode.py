"""Programs as Z3 terms: the value of a program at a symbolic output coordinate.

The encoding composes the operators' entries down to input reads (DESIGN §4):

* an :class:`Input` is an uninterpreted function ``Int^n -> Real`` of its coordinates;
* a shape operator is an ``If`` over its pieces' guards of the operand's value at the
  piece's backward map, else its fill value — exactly the interpreter's gather;
* a :class:`Map` applies an uninterpreted function per (function, operand dtypes), after
  broadcasting its operands through the ``broadcast_to`` entry. Only for ``int64`` are
  ``add``/``subtract``/``multiply``/``negative`` read as exact ring operations (every
  polynomial identity over the integers holds modulo 2^64); floats stay uninterpreted, so
  ``0 * x`` is *not* ``0`` (it is ``nan`` for ``x = inf``);
* a single-axis :class:`Reduce` over an integer array is a *range term*: a fresh constant
  standing for the monoid over ``body(j)`` for ``0 <= j < L``, with the facts that the
  prover derives about it (``verify.equal``). Other reductions (floats, several axes,
  nested) are opaque: an uninterpreted function of the output coordinate, the same for
  structurally equal reductions — sound, but it proves little.

Three *readings* of values (``arith``):

* ``"exact"`` (above): what holds bit for bit. Integer ``max``/``min`` (maps and single-axis
  reductions) are exact too. Float ``max``/``min`` are read as their order (``If`` terms)
  only in programs built from max/min, shape operators and inputs alone (``order_only``):
  there an identity over the reals holds over any total order, infinities included, and the
  ``"nan"`` reading decides the NaN cases;
* ``"nan"``: for order-only programs, whether each value is NaN — every input element has
  an uninterpreted NaN-ness, max/min propagate it (read as ``max``), literals and fills are
  not NaN. Both sides agreeing here and in ``"exact"`` is exact equality (NumPy's max/min
  propagate NaN; ``-0.0`` and ``0.0`` are equal values);
* ``"real"``: float ``add``/``subtract``/``multiply``/``negative`` are real arithmetic,
  ``maximum``/``minimum`` real max/min, and single-axis ``sum``/``prod``/``max``/``min``
  over floats are range terms with real combination: what holds in exact real arithmetic,
  i.e. up to rounding (reassociation); NaN and infinities are not covered.

Alongside the value, the encoder records what must hold for the program to be well-formed
at that coordinate: every input read in bounds, every division with divisor ≥ 1 and
dividend ≥ 0, each under the path condition that reaches it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np
import z3

from sparsefold.spec import sizes as sz
from sparsefold.spec.compute import Input, Literal, Map, Reduce
from sparsefold.spec.ir import Node, ShapeOp
from sparsefold.spec.ops_axes import BroadcastTo
from sparsefold.verify.z3_reading import Reading, division_sites

__all__ = ["Encoder", "RangeTerm", "Trace", "RING_FUNCTIONS", "RING_DTYPE", "READINGS",
           "order_only", "float_arithmetic"]

READINGS = ("exact", "nan", "real")
_ORDER_FUNCTIONS = {"maximum": ">=", "minimum": "<="}
_ORDER_MONOIDS = {"max": ">=", "min": "<="}

RING_DTYPE = np.dtype("int64")
RING_FUNCTIONS = {"add": lambda a, b: a + b, "subtract": lambda a, b: a - b,
                  "multiply": lambda a, b: a * b, "negative": lambda a: -a}
# monoids whose operation is a ring operation, exact on int64 (their spec combine, np.add or
# np.multiply, applies to Z3 terms through Python's operators)
_RING_MONOIDS = ("sum", "prod")


def _select(op: str):
    """max (``>=``) or min (``<=``) of two terms, as an ``If``."""
    if op == ">=":
        return lambda a, b: z3.If(a >= b, a, b)
    return lambda a, b: z3.If(a <= b, a, b)


def order_only(*programs: Node) -> bool:
    """Programs whose values are selected, not computed: shape operators, inputs, literals,
    and max/min maps and reductions (so their float readings are exact by order)."""
    from sparsefold.spec.printer import topological
    for p in programs:
        for n in topological(p):
            if isinstance(n, Map) and n.fn.name not in _ORDER_FUNCTIONS:
                return False
            if isinstance(n, Reduce) and n.monoid.name not in _ORDER_MONOIDS:
                return False
    return True


def float_arithmetic(*programs: Node) -> bool:
    """Some map or reduction computes in floating point (the real reading may differ)."""
    from sparsefold.spec.printer import topological
    return any(isinstance(n, (Map, Reduce)) and n.dtype.kind in "fc"
               for p in programs for n in topological(p))


@dataclass
class RangeTerm:
    """``monoid(body(j) for 0 <= j < length)`` abstracted as the constant ``value``."""

    value: z3.ArithRef
    var: z3.ArithRef
    length: z3.ArithRef
    body: z3.ArithRef
    monoid: str
    dtype: np.dtype
    combine: object = None        # Python function on Z3 terms, or None (uninterpreted)
    identity: object = None
    path: object = None           # the condition under which the program reads this term
    valid: object = None          # when the term means a monoid over a range (segments)


@dataclass
class Trace:
    """What one side's encoding requires: reads in bounds, divisions defined."""

    reads: list[tuple[z3.BoolRef, str, tuple, tuple]] = field(default_factory=list)
    divisions: list[tuple[z3.BoolRef, z3.ArithRef, z3.ArithRef]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def bounds_goal(self, ctx: z3.Context) -> z3.BoolRef:
        return z3.And(z3.BoolVal(True, ctx), *(
            z3.Implies(pc, z3.And(z3.BoolVal(True, ctx), *(z3.And(0 <= c, c < n)
                                                          for c, n in zip(coords, shape))))
            for pc, _, coords, shape in self.reads))

    def divisions_goal(self, ctx: z3.Context) -> z3.BoolRef:
        return z3.And(z3.BoolVal(True, ctx), *(z3.Implies(pc, z3.And(b >= 1, a >= 0))
                                               for pc, a, b in self.divisions))


class Encoder:
    """Encodes programs over one :class:`Reading`; inputs and functions are shared by every
    program encoded with the same encoder (both sides of a rule read the same arrays)."""

    def __init__(self, reading: Reading, arith: str = "exact", order: bool = False):
        if arith not in READINGS:
            raise ValueError(f"unknown value reading {arith!r}")
        self.rd = reading
        self.ctx = reading.ctx
        self.arith = arith
        self.order = order  # the programs are order-only: float max/min read by order
        self._inputs: dict[str, z3.FuncDeclRef] = {}
        self._functions: dict[str, z3.FuncDeclRef] = {}
        self._opaque: dict[object, z3.FuncDeclRef] = {}
        self._consts: dict[str, z3.ArithRef] = {}
        self.ranges: list[RangeTerm] = []
        self.trace = Trace()
        self._memo: dict[tuple, tuple] = {}

    # --- entry point ---------------------------------------------------------------------
    def encode(self, node: Node, coords: tuple, trace: Trace | None = None) -> z3.ArithRef:
        """The value of ``node`` at ``coords`` (Z3 integer terms); well-formedness
        conditions go to ``trace``."""
        if trace is not None:
            self.trace = trace
        return self._value(node, tuple(coords), z3.BoolVal(True, self.ctx))

    def size(self, e: sz.Expr) -> z3.ArithRef:
        return self.rd.int(e)

    # --- one method per node kind ----------------------------------------------------------
    def _value(self, node: Node, coords: tuple, pc) -> z3.ArithRef:
        # the node itself (not its id) is the key: broadcasts are built on the fly, and a
        # freed temporary's id could come back for a different node
        key = (node, tuple(c.get_id() for c in coords), pc.get_id(), id(self.trace))
        if key in self._memo:
            return self._memo[key][-1]
        if isinstance(node, Input):
            v = self._input(node, coords, pc)
        elif isinstance(node, Literal):
            v = self._literal(node)
        elif isinstance(node, ShapeOp):
            v = self._shape_op(node, coords, pc)
        elif isinstance(node, Map):
            v = self._map(node, coords, pc)
        elif isinstance(node, Reduce):
            v = self._reduce(node, coords, pc)
        else:
            v = self._opaque_value(node, coords, f"no encoding for {type(node).__name__}")
        self._memo[key] = (coords, pc, v)  # holding the terms keeps their ids unique
        return v

    def _input(self, node: Input, coords, pc):
        f = self._inputs.get(node.name)
        if self.arith == "nan" and node.dtype.kind not in "fc":
            return z3.RealVal(0, self.ctx)  # an integer is never NaN
        if f is None:  # in the nan reading: the element's NaN-ness
            name = node.name if self.arith != "nan" else f"isnan_{node.name}"
            f = self._inputs[node.name] = z3.Function(
                name, *([z3.IntSort(self.ctx)] * node.ndim), z3.RealSort(self.ctx))
        shape = tuple(self.size(n) for n in node.shape)
        self.trace.reads.append((pc, node.name, coords, shape))
        return f(*coords) if coords else f()

    def literal_value(self, value) -> z3.ArithRef:
        if isinstance(value, (bool, np.bool_)):
            return z3.RealVal(int(value), self.ctx)
        if isinstance(value, (int, np.integer)):
            return z3.RealVal(int(value), self.ctx)
        if isinstance(value, (float, np.floating)) and np.isfinite(value):
            return z3.RealVal(Fraction(float(value)), self.ctx)
        name = f"lit_{value!r}"
        if name not in self._consts:
            self._consts[name] = z3.Real(name, self.ctx)
        return self._consts[name]

    def _literal(self, node: Literal):
        if self.arith == "nan":
            return z3.RealVal(int(bool(np.isnan(node.value))) if np.issubdtype(
                np.asarray(node.value).dtype, np.floating) else 0, self.ctx)
        return self.literal_value(node.value)

    def _shape_op(self, node: ShapeOp, coords, pc):
        im = node.index_map()
        env = sz.out_binding(coords)
        for path, a, b in division_sites(im.requires):
            self._division(pc, path, a, b, env)
        ops = node.operands()
        pieces = im.pieces
        guards = [self.rd.pred(p.guard, env) for p in pieces]
        values = []
        for n, p in enumerate(pieces):
            # the interpreter assigns the pieces in order, so a later piece wins where
            # guards overlap (the operator proofs show they do not)
            reach = z3.And(pc, guards[n], *[z3.Not(g) for g in guards[n + 1:]])
            for path, a, b in division_sites(p.guard):
                self._division(pc, path, a, b, env)
            for e in p.backward:
                for path, a, b in division_sites(e):
                    self._division(reach, path, a, b, env)
            sub = tuple(self.rd.int(b, env) for b in p.backward)
            operand = ops[p.operand]
            v = self._value(operand, sub, reach)
            if operand.dtype != node.dtype and not self._converts_exactly(operand.dtype,
                                                                          node.dtype):
                # concat's promotion: a conversion, not identity
                v = self._function(f"astype[{operand.dtype}->{node.dtype}]", 1)(v)
            values.append(v)
        if im.fill is not None:
            out = self.literal_value(im.fill) if self.arith != "nan" else \
                z3.RealVal(int(bool(np.isnan(np.asarray(im.fill, dtype=float)))), self.ctx)
        else:  # coordinates no guard claims have no value (the interpreter would raise)
            out = self._uncovered(node, coords)
        for n in range(len(pieces)):
            out = values[n] if pieces[n].guard == sz.TRUE else z3.If(guards[n], values[n], out)
        return out

    def _uncovered(self, node: Node, coords):
        f = self._opaque.get(("uncovered", node))
        if f is None:
            f = self._opaque[("uncovered", node)] = z3.Function(
                f"uncovered{len(self._opaque)}", *([z3.IntSort(self.ctx)] * len(coords)),
                z3.RealSort(self.ctx))
        return f(*coords) if coords else f()

    def _function(self, key: str, arity: int) -> z3.FuncDeclRef:
        f = self._functions.get(key)
        if f is None:
            f = self._functions[key] = z3.Function(
                key, *([z3.RealSort(self.ctx)] * arity), z3.RealSort(self.ctx))
        return f

    def _division(self, pc, path, a, b, env):
        self.trace.divisions.append((z3.And(pc, self.rd.pred(path, env)),
                                     self.rd.int(a, env), self.rd.int(b, env)))

    def _converts_exactly(self, src: np.dtype, dst: np.dtype) -> bool:
        """In the real reading floats are reals: a float widening or narrowing is a rounding
        (what it ignores); a conversion keeps NaN-ness; elsewhere a conversion is a
        function of its own."""
        if self.arith == "nan":
            return True
        return self.arith == "real" and src.kind == "f" and dst.kind == "f"

    def _map(self, node: Map, coords, pc):
        args = []
        for a in node.args:
            if isinstance(a, Literal):
                args.append(self._literal(a))
            elif tuple(a.shape) == tuple(node.shape):
                args.append(self._value(a, coords, pc))
            else:
                args.append(self._value(BroadcastTo(a, node.shape), coords, pc))
        dtypes = [("weak" if isinstance(a, Literal) and a.weak else str(a.dtype))
                  for a in node.args]
        name = node.fn.name
        kinds = {a.dtype.kind for a in node.args if not (isinstance(a, Literal) and a.weak)}
        if self.arith == "nan":  # only order-only programs are read for NaN-ness
            if name in _ORDER_FUNCTIONS:
                return _select(">=")(*args)
            return self._function(f"isnan_{name}[{','.join(dtypes)}]", len(args))(*args)
        ring = name in RING_FUNCTIONS and node.dtype == RING_DTYPE and all(
            d in ("weak", str(RING_DTYPE)) for d in dtypes)
        if self.arith == "real" and name in RING_FUNCTIONS and node.dtype.kind == "f" \
                and kinds <= {"f"}:
            ring = True
        if ring:
            return RING_FUNCTIONS[name](*args)
        if name in _ORDER_FUNCTIONS and len(args) == 2 and kinds and (
                kinds <= set("iu") and node.dtype.kind in "iu"
                or (node.dtype.kind == "f" and kinds <= {"f"}
                    and (self.arith == "real" or self.order))):
            return _select(_ORDER_FUNCTIONS[name])(*args)
        return self._function(f"{name}[{','.join(dtypes)}]", len(args))(*args)

    def _monoid_reading(self, node: Reduce):
        """(combine, identity) of a reduction read as a range term here, else None."""
        m, arg = node.monoid, node.arg
        kind, akind = node.dtype.kind, arg.dtype.kind
        if m.name in _RING_MONOIDS:
            if node.dtype == RING_DTYPE and arg.dtype == RING_DTYPE and self.arith != "nan":
                return m.combine, m.identity
            if self.arith == "real" and kind == "f" and akind == "f":
                return m.combine, m.identity
            return None
        if m.name in _ORDER_MONOIDS:
            if self.arith == "nan":
                return _select(">="), None
            if kind in "iu" and akind == kind or (
                    kind == "f" and akind == "f" and (self.arith == "real" or self.order)):
                return _select(_ORDER_MONOIDS[m.name]), None
        return None

    def _reduce(self, node: Reduce, coords, pc):
        arg = node.arg
        reading = self._monoid_reading(node) if len(node.axes) == 1 else None
        if reading is None:
            why = ("a float or mixed-dtype reduction" if len(node.axes) == 1
                   else "a reduction over several axes")
            return self._opaque_value(node, coords, f"{why} is encoded opaquely")
        (axis,) = node.axes
        n = len(self.ranges)
        j = z3.Int(f"_j{n}", self.ctx)
        length = self.size(arg.shape[axis])
        inner = coords[:axis] + (j,) + coords[axis:]
        before = len(self.ranges)
        body = self._value(arg, inner, z3.And(pc, 0 <= j, j < length))
        if len(self.ranges) != before:
            return self._opaque_value(node, coords, "nested reductions are encoded opaquely")
        value = z3.Real(f"_s{n}", self.ctx)
        combine, identity = reading
        self.ranges.append(RangeTerm(value, j, length, body, node.monoid, node.dtype,
                                     combine, identity, pc))
        return value

    def _opaque_value(self, node: Node, coords, why: str):
        if why not in self.trace.notes:
            self.trace.notes.append(why)
        f = self._opaque.get(node)
        if f is None:
            f = self._opaque[node] = z3.Function(
                f"opaque{len(self._opaque)}", *([z3.IntSort(self.ctx)] * len(coords)),
                z3.RealSort(self.ctx))
        return f(*coords) if coords else f()

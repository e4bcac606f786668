"""Conditions on sizes written as Python text: ``"b <= J and J >= 1"`` → a size expression.

Only a whitelisted fragment of Python expressions is accepted: integer literals, names
(size symbols), ``+ - * // %``, unary minus, comparisons (chains too), ``and``/``or``/``not``,
and the calls ``min(a, b)`` and ``max(a, b)``. Anything else is :class:`IllFormedProgram`.
"""

from __future__ import annotations

import ast

from sparsefold.spec import sizes as sz
from sparsefold.spec.errors import IllFormedProgram

__all__ = ["parse_condition"]

_BIN = {ast.Add: sz.add, ast.Sub: sz.sub, ast.Mult: sz.mul, ast.FloorDiv: sz.floordiv,
        ast.Mod: sz.mod}
_CMP = {ast.Lt: sz.lt, ast.LtE: sz.le, ast.Gt: sz.gt, ast.GtE: sz.ge, ast.Eq: sz.eq,
        ast.NotEq: sz.ne}
_CALLS = {"min": sz.minimum, "max": sz.maximum}


def parse_condition(text: str) -> sz.Expr:
    """The size expression written as ``text`` (see the module docstring)."""
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError as exc:
        raise IllFormedProgram(f"condition {text!r} is not an expression: {exc.msg}") from None
    return _convert(tree.body, text)


def _convert(node, text: str) -> sz.Expr:
    if isinstance(node, ast.Constant) and isinstance(node.value, int) \
            and not isinstance(node.value, bool):
        return sz.Const(node.value)
    if isinstance(node, ast.Name):
        return sz.as_expr(node.id)
    if isinstance(node, ast.BinOp) and type(node.op) in _BIN:
        return _BIN[type(node.op)](_convert(node.left, text), _convert(node.right, text))
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return sz.sub(0, _convert(node.operand, text))
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        return sz.not_(_convert(node.operand, text))
    if isinstance(node, ast.BoolOp):
        parts = [_convert(v, text) for v in node.values]
        return sz.and_(*parts) if isinstance(node.op, ast.And) else sz.or_(*parts)
    if isinstance(node, ast.Compare) and all(type(o) in _CMP for o in node.ops):
        left, parts = _convert(node.left, text), []
        for o, right in zip(node.ops, node.comparators):
            r = _convert(right, text)
            parts.append(_CMP[type(o)](left, r))
            left = r
        return sz.and_(*parts)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
            and node.func.id in _CALLS and len(node.args) == 2 and not node.keywords:
        return _CALLS[node.func.id](*(_convert(a, text) for a in node.args))
    raise IllFormedProgram(f"condition {text!r}: unsupported syntax "
                           f"{ast.unparse(node)!r}; expected sizes, + - * // %, comparisons, "
                           f"and/or/not, min/max")

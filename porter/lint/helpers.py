"""Small queries several rules share. Rules stay one-per-file; what they have in common lives here."""
from __future__ import annotations

from porter.diagnostics import Edit
from porter.frontend.model import Node

# lower number binds tighter; only what we need to decide on parentheses
_PREC = {"*": 3, "/": 3, "%": 3, "+": 4, "-": 4, "<<": 5, ">>": 5, "<": 6, ">": 6, "<=": 6, ">=": 6, "==": 7,
         "!=": 7, "&": 8, "^": 9, "|": 10, "&&": 11, "||": 12, "=": 14}


def precedence(node: Node) -> int:
    if node.kind == "BINARY_OPERATOR":
        return _PREC.get(node.op, 14)
    if node.kind in ("CONDITIONAL_OPERATOR", "COMPOUND_ASSIGNMENT_OPERATOR"):
        return 13
    return 0


def operand_text(node: Node, op: str) -> str:
    """Source of `node` ready to be the left operand of `op`, parenthesised when needed."""
    t = node.text
    if precedence(node) > _PREC.get(op, 0) or (precedence(node) == _PREC.get(op, 0) and node.kind != "BINARY_OPERATOR"):
        return f"({t})"
    return t


def int_value(node: Node | None):
    if node is None:
        return None
    v = node.value
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def spelled(node: Node) -> bool:
    """Node written in the file itself or as exactly one macro-name token: safe to replace by an edit."""
    m = node.model.macro_at(node.start, node.end)
    if m is None:
        return True
    # a bare object-like macro use: the node spans exactly the macro name token
    return node.text == m


def in_device_code(node: Node) -> bool:
    f = node.model.function_of(node)
    return f is not None and f.is_device_code


def replace_binary(node: Node, new_op: str, rhs_text: str) -> Edit | None:
    """Rewrite `lhs OP rhs` as `lhs NEW_OP rhs_text`, keeping lhs text; None when not editable."""
    lhs = node.children[0]
    if not spelled(node) or not spelled(lhs):
        return None
    return Edit(node.start, node.end, f"{operand_text(lhs, new_op)} {new_op} {rhs_text}")


def is_shift_count(node: Node) -> bool:
    """The value is used as the right operand of a shift: a bit position, not a lane."""
    child, p = node, node.parent
    while p is not None and p.kind in ("PAREN_EXPR", "CSTYLE_CAST_EXPR", "UNEXPOSED_EXPR"):
        child, p = p, p.parent
    return p is not None and p.kind == "BINARY_OPERATOR" and p.op in ("<<", ">>") and len(p.children) == 2 and \
        p.children[1] is child


def const_decl_value(node: Node):
    """For DECL_REF to a constant variable/enum, its folded value."""
    n = node.strip
    if n.kind == "DECL_REF_EXPR":
        return int_value(n)
    return None

"""What the size questions of derive_sizes.py share: the node under parentheses and casts (_bare), the two
ways a size is not derived (Underivable, Unknown), the values taken for sizes the program decides at run time,
the statement kinds the questions walk, and the tidied text of a size expression (cdiv, outer parentheses)."""
from __future__ import annotations

import re

_WRAPPERS = ("PAREN_EXPR", "UNEXPOSED_EXPR", "CSTYLE_CAST_EXPR", "CXX_STATIC_CAST_EXPR", "CXX_FUNCTIONAL_CAST_EXPR")
_INTEGRAL = re.compile(r"\b(int|long|short|unsigned|size_t|u?int\d+_t)\b")
_FLOATING = re.compile(r"\b(float|double)\b")
_INPUT_CALLS = re.compile(r"\b(atoi|atol|atoll|atof|strto[a-z]*|std::sto[a-z]+|sto[ifdlu]l*|getenv|argv)\b")
_LOOPS = ("FOR_STMT", "WHILE_STMT", "DO_STMT", "CXX_FOR_RANGE_STMT")
_FUNCTIONS = ("FUNCTION_DECL", "FUNCTION_TEMPLATE", "CXX_METHOD")
_BRANCHES = ("IF_STMT", "FOR_STMT", "WHILE_STMT", "DO_STMT", "SWITCH_STMT", "CXX_FOR_RANGE_STMT")
HEURISTIC_SIZE = 1000            # a size the program decides at run time
HEURISTIC_BLOCK = 256            # a block size the program decides at run time (argv, a wrapper's parameter)


class Underivable(Exception):
    """One thing the source does not say (the message says what and where)."""


class Unknown(Underivable):
    """A value no run-time guess may stand for: read back from the device, or computed by the program's own
    functions from other sizes (hogbom's `rx = idxToPos(peakPos, residualWidth).x`); passed up through the
    fallbacks that would give it 1000 of its own."""


def _bare(node):
    """The node under parentheses and implicit / explicit casts."""
    while node is not None and node.kind in ("PAREN_EXPR", "UNEXPOSED_EXPR", "CSTYLE_CAST_EXPR",
                                             "CXX_STATIC_CAST_EXPR", "CXX_REINTERPRET_CAST_EXPR") and node.children:
        node = node.children[-1]
    return node


def _inside(outer, node) -> bool:
    return outer.start <= node.start and node.end <= outer.end


def _has_var_refs(node) -> bool:
    return any(n.kind == "DECL_REF_EXPR" and n.ref is not None and n.ref.kind in ("VAR_DECL", "PARM_DECL")
               for n in node.walk())


def _initialiser(decl):
    exprs = [c for c in decl.children if not c.kind.endswith("_ATTR") and c.kind not in ("TYPE_REF",
                                                                                         "NAMESPACE_REF")]
    return exprs[-1] if exprs else None


def _refers_to(node, decl) -> bool:
    return any(n.kind == "DECL_REF_EXPR" and n.ref is decl for n in node.walk())


_CDIV = re.compile(r"\(\(\((\w+) \+ (\w+)\) - 1\) // (\w+)\)|\((\w+) \+ (\d+)\) // (\d+)")


def _tidy(expr: str) -> str:
    """`((n + 256) - 1) // 256` and `(n + 255) // 256` as cdiv(n, 256); outer parentheses dropped."""
    def cdiv(m):
        if m.group(1) and m.group(2) == m.group(3):
            return f"cdiv({m.group(1)}, {m.group(3)})"
        if m.group(4) and int(m.group(5)) + 1 == int(m.group(6)):
            return f"cdiv({m.group(4)}, {m.group(6)})"
        return m.group(0)
    expr = _CDIV.sub(cdiv, f"({expr})")
    while expr.startswith("(") and expr.endswith(")"):
        depth = 0
        for i, ch in enumerate(expr):
            depth += ch == "("
            depth -= ch == ")"
            if depth == 0 and i < len(expr) - 1:
                return expr
        expr = expr[1:-1]
    return expr


def _expressible(sym, node) -> bool:
    try:
        sym.expr(node)
        return True
    except Unknown:
        raise
    except Underivable:
        return False

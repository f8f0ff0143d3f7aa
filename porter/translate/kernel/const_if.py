"""Constant conditions: `if (REDUCE == SUM)` in a template instance, where C++ runs one branch only. The other
branch is not emitted: it may hold what this instance cannot translate (scatter's `atomMul` on a float, a
functor of another size). Only conditions made of integer constants (literals, template arguments, enumerators,
constexpr values) fold; anything else is an ordinary condition."""
from __future__ import annotations

import operator

from porter.translate.kernel.target import TranslationError
from porter.translate.kernel.typeinfo import NON_EXPR

_COMPARE = {"==": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le, ">": operator.gt,
            ">=": operator.ge}


def truth(em, n) -> bool | None:
    """The value of condition n when it is a constant, else None."""
    s = n
    while s.kind in ("PAREN_EXPR", "UNEXPOSED_EXPR") and len([c for c in s.children if c.kind not in NON_EXPR]) == 1:
        s = [c for c in s.children if c.kind not in NON_EXPR][0]
    if s.kind == "UNARY_OPERATOR" and s.op == "!" and s.children:
        v = truth(em, s.children[0])
        return None if v is None else not v
    if s.kind == "BINARY_OPERATOR" and s.op in ("&&", "||"):
        a, b = truth(em, s.children[0]), truth(em, s.children[1])
        if s.op == "&&":
            return False if a is False or b is False else (True if a and b else None)
        return True if a is True or b is True else (False if a is False and b is False else None)
    if s.kind == "BINARY_OPERATOR" and s.op in _COMPARE:
        a, b = _value(em, s.children[0]), _value(em, s.children[1])
        return None if a is None or b is None else _COMPARE[s.op](a, b)
    v = _value(em, s)
    return None if v is None else bool(v)


_PURE = {"INTEGER_LITERAL", "CXX_BOOL_LITERAL_EXPR", "DECL_REF_EXPR", "PAREN_EXPR", "UNEXPOSED_EXPR",
         "BINARY_OPERATOR", "UNARY_OPERATOR", "CSTYLE_CAST_EXPR", "CXX_STATIC_CAST_EXPR", "CXX_FUNCTIONAL_CAST_EXPR",
         "TYPE_REF", "NAMESPACE_REF", "TEMPLATE_REF"}


def _value(em, n):
    """The integer (or bool) value of a constant expression, else None; nothing is emitted for it (only
    expressions without calls or side effects are tried)."""
    if em.ty(n).kind not in ("scalar",):
        return None
    for c in n.walk():
        if c.kind not in _PURE or (c.kind == "UNARY_OPERATOR" and c.op in ("++", "--", "post++", "post--", "&", "*")) \
                or (c.kind == "BINARY_OPERATOR" and (c.op.endswith("=") and c.op not in ("==", "!=", "<=", ">="))):
            return None
    return _eval(em, n)


_ARITH = {"+": operator.add, "-": operator.sub, "*": operator.mul, "<<": operator.lshift, ">>": operator.rshift,
          "&": operator.and_, "|": operator.or_, "^": operator.xor}


def _eval(em, n):
    kids = [c for c in n.children if c.kind not in NON_EXPR]
    if n.kind in ("PAREN_EXPR", "UNEXPOSED_EXPR", "CSTYLE_CAST_EXPR", "CXX_STATIC_CAST_EXPR",
                  "CXX_FUNCTIONAL_CAST_EXPR") and kids:
        if n.kind != "PAREN_EXPR" and not (em.ty(n).is_int or em.ty(n).is_bool):
            return None
        return _eval(em, kids[-1])
    if n.kind == "DECL_REF_EXPR":
        # a template argument (GLSL names it: its value is the frame's), an enumerator, a constexpr value
        if n.ref_kind in ("TEMPLATE_NON_TYPE_PARAMETER", "NON_TYPE_TEMPLATE_PARAMETER") and \
                isinstance(em.frame.subst.get(n.spelling), int):
            return em.frame.subst[n.spelling]
    if n.kind in ("DECL_REF_EXPR", "INTEGER_LITERAL", "CXX_BOOL_LITERAL_EXPR"):
        saved = (len(em.lines), em.indent)
        try:
            e = em.x(n)
        except TranslationError:
            return None
        finally:
            del em.lines[saved[0]:]
            em.indent = saved[1]
        return e.lit if isinstance(e.lit, (bool, int)) else None
    if n.kind == "UNARY_OPERATOR" and kids:
        v = _eval(em, kids[0])
        if v is None:
            return None
        return {"-": lambda x: -x, "+": lambda x: x, "!": lambda x: not x, "~": lambda x: ~x}.get(n.op, lambda x: None)(v)
    if n.kind == "BINARY_OPERATOR" and len(kids) == 2:
        a, b = _eval(em, kids[0]), _eval(em, kids[1])
        if a is None or b is None:
            return None
        if n.op in _COMPARE:
            return _COMPARE[n.op](a, b)
        if n.op in ("&&", "||"):
            return (a and b) if n.op == "&&" else (a or b)
        if n.op in _ARITH:
            return _ARITH[n.op](int(a), int(b))
        if n.op in ("/", "%") and b != 0:
            q = abs(int(a)) // abs(int(b)) * (1 if (a < 0) == (b < 0) else -1)     # C truncates
            return q if n.op == "/" else int(a) - q * int(b)
    return None

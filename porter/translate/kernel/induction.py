"""A reassigned local integer proven a multiple of m from every value it is given (lut-gemm's
`for (int m = m_start; m < m_end; m += m_step)` with `m_start = ... + threadIdx.x * 2`, `m_step = blockDim.x * 2`):
the initialiser and the right side of each write `x = e`, `x += e`, `x -= e` are multiples of m, `x *= e` and
`x <<= e` keep one; x itself counts as a multiple inside those (induction over the writes, in any order). Any
other write (`x++`, `x /= 2`, `&x`, a reference bound to x, a write through an operator call) or a missing
initialiser: no proof. The requirements on parameters are those of the pieces (pointers._multiple_req)."""
from __future__ import annotations

import re

from porter.translate.kernel.typeinfo import CASTS

_KEEP = ("*=", "<<=")            # x a multiple: x * e and x << e (e >= 0) are too
_ADD = ("=", "+=", "-=")         # x a multiple: the result is one when e is
_WRITE_OPS = {"=", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<<=", ">>=", "++", "--"}


def _writes(body, decl):
    """[(op, right-hand side)] of every write to decl in body by an assignment operator; None when some use
    could write it otherwise (`x++`, its address, a reference bound to it, a write through an operator call)."""
    out = []
    for n in body.walk():
        if n.kind != "DECL_REF_EXPR" or n.ref is not decl:
            continue
        c, p = n, n.parent
        while p is not None and p.kind in ("PAREN_EXPR", "UNEXPOSED_EXPR"):
            c, p = p, p.parent
        if p is None:
            return None
        if p.kind in ("BINARY_OPERATOR", "COMPOUND_ASSIGNMENT_OPERATOR") and p.children and p.children[0] is c \
                and (p.kind == "COMPOUND_ASSIGNMENT_OPERATOR" or p.op == "="):
            out.append((p.op, p.children[1]))
        elif _escapes(p, c):
            return None
    return out


def _escapes(p, c) -> bool:
    """The use c under p may change the variable other than by an assignment operator (the model leaves out
    clang's implicit conversions, so a read is any other use)."""
    if p.kind == "UNARY_OPERATOR":
        return p.op in ("++", "--", "post++", "post--", "&")
    if p.kind in CASTS or p.kind == "VAR_DECL":
        return _writable_ref(p.type)                 # a reference bound to it
    if p.kind == "CONDITIONAL_OPERATOR":
        return p.children[0] is not c                # `(c ? x : y) = v`, a reference bound to the choice
    if p.kind == "CALL_EXPR":
        oc = p.operator_call()
        if oc is not None:                           # `x += y` on a template type: an unresolved operator
            return bool(oc[1]) and oc[1][0].strip is c.strip and oc[0] in _WRITE_OPS
        if not p.children or p.children[0] is c:
            return True
        f = p.ref
        params = [x for x in f.children if x.kind == "PARM_DECL"] if f is not None else None
        k = p.children.index(c) - 1
        # a builtin (no declaration) takes values; a device function's reference parameter may write it
        return params is not None and (k >= len(params) or _writable_ref(params[k].type))
    return False


def _writable_ref(spelling) -> bool:
    """A reference type through which the variable could be written (`int &`; not `const int &`)."""
    t = (spelling or "").strip()
    return "&" in t and not re.fullmatch(r"(?:const\s+[^*&]+|[^*&]+\bconst)\s*&", t)


def only_read(em, decl) -> bool:
    """The local `decl` keeps its initial value: no write by an assignment operator or otherwise."""
    fn = em.model.function_of(decl)
    body = getattr(fn, "body", None) if fn is not None else None
    return body is not None and _writes(body, decl) == []


def multiple_req(em, decl, m: int, depth: int, prove):
    """None, or the requirements under which every value the local `decl` holds is a multiple of m; prove(n)
    is pointers._multiple_req(n, m, depth) for an expression."""
    active = em.__dict__.setdefault("_induction", set())
    if (id(decl), m) in active:
        return []                    # the induction hypothesis: x is a multiple inside its own updates
    fn = em.model.function_of(decl)
    body = getattr(fn, "body", None) if fn is not None else None
    init = em.init_of(decl)
    t = em.decl_type(decl)
    if body is None or init is None or t.kind != "scalar" or not t.is_int:
        return None
    writes = _writes(body, decl)
    if writes is None:
        return None
    active.add((id(decl), m))
    try:
        req = prove(init)
        for op, rhs in writes:
            if req is None:
                return None
            if op in _KEEP:
                continue
            if op not in _ADD:
                return None
            r = prove(rhs)
            req = req + r if r is not None else None
        return req
    finally:
        active.discard((id(decl), m))

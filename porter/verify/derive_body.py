"""What a kernel body does with its parameters (derive.py): pointers read / written, memory indexed with
loaded values, threads that communicate or loop (no special input values then)."""
from __future__ import annotations

import re

from porter.verify.derive_sizes import _bare


_COMM = re.compile(r"^(__shfl|__syncthreads|__syncwarp|atomic|__ballot|__any|__all|__reduce|__match|__activemask)")
_CASTS = ("CSTYLE_CAST_EXPR", "CXX_REINTERPRET_CAST_EXPR", "CXX_STATIC_CAST_EXPR", "CXX_CONST_CAST_EXPR")


def _pointer_use(fn, decl) -> tuple[bool, bool]:
    """(written, read) through pointer parameter `decl`; a use that is not clearly one or the other is both."""
    written = read = False
    for n in fn.body.walk():
        if n.kind != "DECL_REF_EXPR" or n.ref is not decl:
            continue
        child, p = n, n.parent
        while p is not None and (p.kind in ("PAREN_EXPR", "UNEXPOSED_EXPR", "ARRAY_SUBSCRIPT_EXPR",
                                            "MEMBER_REF_EXPR") or (p.kind == "UNARY_OPERATOR" and p.op == "*") or
                                 p.kind in _CASTS and "*" in (p.type or "")):   # cbsfil's `(uchar*)image + y`
            if p.kind == "ARRAY_SUBSCRIPT_EXPR" and p.children and p.children[0] is not child:
                break
            child, p = p, p.parent
        if p is None:
            continue
        if p.kind == "BINARY_OPERATOR" and p.op == "=" and p.children and p.children[0] is child:
            written = True
        elif p.kind == "COMPOUND_ASSIGNMENT_OPERATOR" and p.children and p.children[0] is child:
            written = read = True
        elif p.kind == "UNARY_OPERATOR" and p.op in ("++", "--", "post++", "post--", "&"):
            written = read = True
        elif p.kind == "CALL_EXPR" or (p.kind == "BINARY_OPERATOR" and p.op in ("+", "-") and
                                       (child is n or "*" in (child.type or ""))):
            written = read = True                   # atomics, device functions, pointer arithmetic
        elif p.kind == "VAR_DECL" and ("*" in (p.type or "") or "&" in (p.type or "")):
            written = read = True                   # an alias
        else:
            read = True
    return written, read


def _data_indexing(model, fn, pointers: set) -> str | None:
    """`bins[in[i] % 16]`: an index computed from a value loaded through a pointer parameter. Returns the text."""
    def loads(node, tainted):
        for n in node.walk():
            if n.kind == "DECL_REF_EXPR" and n.ref is not None and (id(n.ref) in pointers or id(n.ref) in tainted):
                if id(n.ref) in tainted:
                    return True
                p = n.parent
                while p is not None and p.kind in ("PAREN_EXPR", "UNEXPOSED_EXPR"):
                    p = p.parent
                if p is not None and (p.kind == "ARRAY_SUBSCRIPT_EXPR" or
                                      (p.kind == "UNARY_OPERATOR" and p.op == "*")):
                    return True
        return False

    tainted: set[int] = set()
    local_vars = [v for v in fn.body.walk() if v.kind == "VAR_DECL"]
    # (target, value) of each assignment; a struct's `h = p[i]` is a call of its operator= (ldpc's h_element)
    writes = [(w.children[0], w.children[1]) for w in fn.body.walk() if len(w.children) == 2 and (
        (w.kind == "BINARY_OPERATOR" and w.op == "=") or w.kind == "COMPOUND_ASSIGNMENT_OPERATOR")]
    writes += [(w.children[0], w.children[-1]) for w in fn.body.walk()     # [lhs, operator=, rhs]
               if w.kind == "CALL_EXPR" and w.spelling == "operator=" and len(w.children) >= 2]
    changed = True
    while changed:                               # locals holding loaded values, to a fixed point
        changed = False
        for v in local_vars:
            if id(v) not in tainted and v.children and "*" not in (v.type or "") and loads(v, tainted):
                tainted.add(id(v))
                changed = True
        for target, value in writes:
            t = _bare(target)
            if t is not None and t.kind == "DECL_REF_EXPR" and t.ref is not None and id(t.ref) not in tainted \
                    and t.ref.kind == "VAR_DECL" and loads(value, tainted):
                tainted.add(id(t.ref))
                changed = True
    for n in fn.body.walk():
        if n.kind == "ARRAY_SUBSCRIPT_EXPR" and len(n.children) == 2 and loads(n.children[1], tainted):
            return " ".join(n.text.split())
    return None


def _communicates(model, fn, depth: int = 0) -> bool:
    """Threads exchange values (shuffles, barriers, atomics, shared memory) or loop, in the kernel or a device
    function it calls (cbsfil's recursive filter loops in ConvertToInterpolationCoefficients: inf and NaN inputs
    then end as inf in one target and NaN in another): no special values then."""
    if any(s.function is fn for s in model.shared):
        return True
    for n in fn.body.walk():
        if n.kind in ("FOR_STMT", "WHILE_STMT", "DO_STMT") or (n.kind == "CALL_EXPR" and _COMM.match(n.callee)):
            return True
        if n.kind == "CALL_EXPR" and n.spelling and depth < 4:
            callee = next((f for f in model.functions if f.name == n.spelling and f.body is not None and
                           f is not fn), None)
            if callee is not None and _communicates(model, callee, depth + 1):
                return True
    return False

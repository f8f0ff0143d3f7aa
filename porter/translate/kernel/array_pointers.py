"""A pointer to an array made from a pointer to the array's own elements (HeCBench bitpermute's
`fr_t (*xchg)[Z][Z] = reinterpret_cast<decltype(xchg)>(exchange);` over `extern __shared__ fr_t exchange[]`):
C lays the arrays out contiguously, so `xchg[a][b][c]` is element (a * Z + b) * Z + c of what `exchange` points
to. Neither target has pointers to arrays: the pointer is bound as `fr_t *xchg = exchange;` would be, and each
full subscript chain becomes that element offset.

Only a pointer never reassigned, initialised from (a cast of) a pointer or array of the same element type, and
used only in full subscript chains (down to an element) is translated; anything else stays refused (CP907) at its
line: a cast from another element type (a reinterpretation of the bytes), `xchg[a]` used as an array or pointer,
`xchg + 1`, a reassignment."""
from __future__ import annotations

import re

from porter.translate.kernel import ctype as ct
from porter.translate.kernel.target import E
from porter.translate.kernel.typeinfo import CASTS, NON_EXPR, element

_PTA = re.compile(r"^(.*?)\(\s*\*\s*(?:(?:const|volatile|__restrict__|__restrict)\s*)*\)\s*((?:\[\s*\w+\s*\])+)$")


def _kids(n):
    return [c for c in n.children if c.kind not in NON_EXPR]


def _shape(em, d):
    """(element type, [dims]) of the pointer-to-array declaration d, else None."""
    canon = d.canonical_type.spelling or ""          # `fr_t` is a typedef the spelling does not resolve
    spelled = d.type if not canon or "type-parameter" in canon or "dependent" in canon else canon
    m = _PTA.match(re.sub(r"\s+", " ", spelled or "").strip())
    if not m:
        return None
    t = em.parse_type(m.group(1) + m.group(2))
    if t.kind != "array" or any(x is None for x in t.dims) or t.elem.kind not in ("scalar", "vector", "struct"):
        return None
    return t.elem, list(t.dims)


def _chain(n):
    """(innermost base, [indices outermost first]) of a subscript chain `b[i][j]...`."""
    idx = []
    s = n
    while s.kind == "ARRAY_SUBSCRIPT_EXPR" and len(s.children) == 2:
        idx.append(s.children[1])
        s = s.children[0]
        while s.kind in ("PAREN_EXPR", "UNEXPOSED_EXPR") and len(_kids(s)) == 1:
            s = _kids(s)[0]
    return s, idx[::-1]


def decl(em, d, name) -> list[str] | None:
    """The declaration of a pointer to an array bound to its elements' pointer; None when d is none."""
    got = _shape(em, d)
    if got is None:
        return None
    elem, dims = got
    # (init_of leaves out an initialiser of a type spelled with `[`: here the dimensions' literals come first)
    exprs = [c for c in d.children if c.kind not in NON_EXPR and not c.kind.endswith("_ATTR")]
    init = exprs[-1] if exprs and exprs[-1].kind != "INTEGER_LITERAL" and exprs[-1].start > d.start else None
    if init is None or id(d) in em.an.assigned:
        em.fail(d, f"a pointer to an array `{d.spelling}` (of type `{d.type}`) declared without a value or "
                   "reassigned (only one bound once to an array of its element type becomes element offsets)")
    s = init
    while (s.kind in ("PAREN_EXPR", "UNEXPOSED_EXPR") or s.kind in CASTS) and _kids(s):
        s = _kids(s)[-1]
    it = em.ty(s)
    if it.kind not in ("pointer", "array") or element(it).unqualified() != elem.unqualified():
        em.fail(init, f"a pointer to an array `{d.spelling}` (of type `{d.type}`) made from `{s.text}` (not a "
                      f"pointer to its elements `{ct.spell(elem)}`: a reinterpretation of the memory)")
    fn = em.model.function_of(d)
    for u in (fn.body.walk() if fn is not None and fn.body is not None else ()):
        if u.kind != "DECL_REF_EXPR" or u.ref is not d or d.start <= u.start and u.end <= d.end:
            continue                  # (`decltype(xchg)` in its own initialiser names only the type)
        top, c = u, u.parent
        depth = 0
        while c is not None and (c.kind in ("PAREN_EXPR", "UNEXPOSED_EXPR") or
                                 c.kind == "ARRAY_SUBSCRIPT_EXPR" and c.children[0] is top):
            depth += c.kind == "ARRAY_SUBSCRIPT_EXPR"
            top, c = c, c.parent
        if depth != len(dims) + 1:
            em.fail(u, f"`{top.text}`: the pointer to an array `{d.spelling}` used other than to reach an element "
                       f"with {len(dims) + 1} subscripts (an element offset into the array it points into)")
    em.__dict__.setdefault("array_pointers", {})[id(d)] = dims
    return em.t.pointer_decl(em, d, ct.pointer(elem), name, s)


def subscript(em, n, mode):
    """`xchg[a][b][c]` of a pointer to an array bound by decl(): the element at offset (a * B + b) * C + c of the
    array it points into; None for any other subscript."""
    ap = em.__dict__.get("array_pointers")
    if not ap:
        return None
    base, idx = _chain(n)
    if base.kind != "DECL_REF_EXPR" or base.ref is None or id(base.ref) not in ap:
        return None
    dims = ap[id(base.ref)]
    if len(idx) != len(dims) + 1:
        em.fail(n, f"`{n.text}`: a part of the array `{base.spelling}` points to")
    off = em.x(idx[0])
    for i, k in zip(idx[1:], dims):
        off = em.add_offset(em._scaled(em.conv(off, ct.promote(off.ct)), k), em.x(i), "+")
    root, boff = em.ptr(base)
    return E(em.t.deref(em, root, boff, off, mode, base), em.ty(n).unqualified())

"""Syntactic queries over the model that read tokens: the parts of a `for` header and the dimension
expressions of an array declaration (libclang's cursors do not say which child is which). Cached per node."""
from __future__ import annotations

from porter.frontend.model import Node


def for_parts(loop: Node):
    """(init, cond, inc, body) of a FOR_STMT, each None when omitted (libclang drops empty parts). Cached per
    loop (it lexes the loop header)."""
    cache = loop.model.__dict__.setdefault("_for_parts_h", {})
    hit = cache.get(id(loop))
    if hit is None or hit[0] is not loop:
        hit = cache[id(loop)] = (loop, _for_parts(loop))
    return hit[1]



def _for_parts(loop: Node):
    body = loop.children[-1] if loop.children else None
    toks = loop.model.tokens_in(loop.start, body.start if body is not None and body.start > loop.start else loop.end)
    depth, semis, close = 0, [], None
    for t in toks:
        if t.spelling == "(":
            depth += 1
        elif t.spelling == ")":
            depth -= 1
            if depth == 0:
                close = t.start
                break
        elif t.spelling == ";" and depth == 1:
            semis.append(t.start)
    parts = [None, None, None, None]
    if len(semis) != 2 or close is None:
        if loop.children:
            parts[3] = loop.children[-1]
        return tuple(parts)
    for c in loop.children:
        i = 0 if c.start < semis[0] else 1 if c.start < semis[1] else 2 if c.start < close else 3
        if parts[i] is None:
            parts[i] = c
    return tuple(parts)


def array_dim_exprs(decl: Node) -> list[Node]:
    """The dimension expressions written in an array declaration, outermost first (`x[A][B]` -> [A, B])."""
    cache = decl.model.__dict__.setdefault("_array_dim_exprs", {})
    hit = cache.get(id(decl))
    if hit is None or hit[0] is not decl:
        hit = cache[id(decl)] = (decl, _array_dim_exprs(decl))
    return list(hit[1])


def _array_dim_exprs(decl: Node) -> list[Node]:
    toks = decl.model.tokens_in(decl.start, decl.end)
    opens = {t.end for t in toks if t.spelling == "["}
    dims = []
    for c in decl.children:
        if c.kind.endswith("_ATTR") or c.kind in ("TYPE_REF", "TEMPLATE_REF", "NAMESPACE_REF"):
            continue
        # the token just before a bound is `[` (an initialiser follows `=`, `(` or `{`)
        if any(o <= c.start and decl.model.source.slice(o, c.start).strip() == "" for o in opens):
            dims.append(c)
    return sorted(dims, key=lambda d: d.start)

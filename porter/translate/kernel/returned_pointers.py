"""Device functions that return a pointer into one of their pointer parameters (HeCBench debayer's
`uchar *image_pixel_at_(uchar *im_p, ...) { return im_p + r * pitch + c * size; }`, dereferenced by its caller):
neither target returns the pointer. The function returns the element offset from that parameter instead
(`int`), and the caller's pointer is its argument's root at the argument's offset plus the result. Only a
return that points into the same parameter on every path, computed from the parameter itself (not through a
local pointer), is translated; anything else stays refused at the return (CP907)."""
from __future__ import annotations

import dataclasses

from porter.translate.kernel.ctype import I32
from porter.translate.kernel.typeinfo import ptrlike


def wanted(em, fn) -> bool:
    """Consumed by specialize(): `fn` is specialised for a call whose pointer result the caller follows."""
    w = getattr(em, "_returned_pointer_call", None) == id(fn.node)
    if w:
        em._returned_pointer_call = None
    return w


def offset(em, fn, n):
    """(index of the parameter `fn` returns a pointer into, the call `n` as the element offset from it)."""
    em._returned_pointer_call = id(fn.node)
    try:
        e = em.user_call(fn, n, ret=I32)
    finally:
        em._returned_pointer_call = None
    idx = getattr(em, "returned_param", {}).get(id(fn.node))
    if idx is None:
        em.fail(n, f"a pointer returned by `{fn.name}`, which returns none of its pointer parameters")
    if idx >= len(em.call_args(n)):
        em.fail(n, f"a pointer returned by `{fn.name}` into a parameter the call leaves to its default")
    return idx, e


def call(em, fn, n):
    """(root, offset) of the pointer `fn(...)` returns at call `n`: its argument's, moved by the result."""
    idx, e = offset(em, fn, n)
    root, off = em.ptr(em.call_args(n)[idx])
    return root, em.add_offset(off, e, "+")


def return_stmt(em, n) -> None:
    """`return P + k;` in a function specialised by call(): `return k;`, P's index recorded for the callers."""
    fr = em.frame
    expr = n.children[0]
    fn = fr.fn
    params = {id(p.node): i for i, p in enumerate(fn.params)}
    for c in expr.walk():
        r = c.ref if c.kind == "DECL_REF_EXPR" else None
        if r is not None and id(r) not in params and r.kind == "VAR_DECL" and ptrlike(em.decl_type(r)):
            em.fail(c, f"a pointer returned through the local pointer `{r.spelling}`")
    mine = {pid: b for pid, b in fr.ptrs.items() if pid in params and dataclasses.is_dataclass(b) and
            hasattr(b, "off")}
    # the parameters' offsets taken out: what the return computes is relative to the parameter it points into
    for pid, b in mine.items():
        fr.ptrs[pid] = dataclasses.replace(b, off=None)
    try:
        root, off = em.ptr(expr)
    finally:
        fr.ptrs.update(mine)
    which = [pid for pid, b in mine.items() if b.root is root]
    if len(which) != 1:
        em.fail(expr, f"a pointer returned by `{fn.name}` that is not into exactly one of its pointer parameters")
    idx = params[which[0]]
    seen = em.__dict__.setdefault("returned_param", {})
    if seen.get(id(fn.node), idx) != idx:
        em.fail(expr, f"`{fn.name}` returns pointers into different parameters")
    seen[id(fn.node)] = idx
    o = em.conv(off, I32).text if off is not None else "0"
    em.emit(f"return {o};")

"""How far a shuffle reaches: `__shfl_down_sync(m, v, 8)` reaches 8 lanes, and so does the counter of
`for (int c = 8; c > 0; c /= 2)` (marchingCubes' computeMinMaxLv2 reduces rows of 16 lanes that way; taken for
an unknown distance, its GLSL ran at subgroups of 4 and 8 and its OpenCL on one-lane warps, both wrong, exit 0)."""
from __future__ import annotations


def _bare(n):
    while n is not None and n.kind in ("PAREN_EXPR", "UNEXPOSED_EXPR", "CSTYLE_CAST_EXPR", "CXX_STATIC_CAST_EXPR",
                                       "CXX_FUNCTIONAL_CAST_EXPR") and n.children:
        n = n.children[-1]
    return n


def _int(n):
    v = _bare(n).value if n is not None else None
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def rewritten(em) -> set:
    """ids of the nodes the warp-sizing plan writes differently (a per-warp stage's `warpNum / 2` becomes the
    subgroup's size): their value in the source is not the one the output computes."""
    pl = getattr(em, "warp_plan", None)
    return set(getattr(pl, "subst", ()) or ()) | set(getattr(pl, "counts", ()) or ()) if pl is not None else set()


def reach(node, skip: set = frozenset()) -> int | None:
    """The largest lane distance the shuffle operand `node` takes: a constant, or the counter of a `for` loop
    declared in its init with a constant start that only falls (`c > 0` / `c >= 1` / `c != 0`) or rises to a
    constant bound (`c < B` / `c <= B`); None when not known, or when the start or the bound contains a node of
    `skip` (ids of nodes the output writes differently: `rewritten(em)`)."""
    v = _int(node)
    if v is not None:
        return v
    n = _bare(node)
    if n is None or n.kind != "DECL_REF_EXPR" or n.ref is None or n.ref.kind != "VAR_DECL":
        return None
    decl = n.ref
    stmt = decl.parent
    loop = stmt.parent if stmt is not None and stmt.kind == "DECL_STMT" else None
    if loop is None or loop.kind != "FOR_STMT" or len(loop.children) < 4 or loop.children[0] is not stmt:
        return None
    inits = [c for c in decl.children if not c.kind.endswith("_ATTR") and c.kind != "TYPE_REF"]
    start = _int(inits[-1]) if inits else None
    cond = _bare(loop.children[1])
    if start is None or cond is None or cond.kind != "BINARY_OPERATOR" or len(cond.children) != 2:
        return None
    lhs, rhs = (_bare(c) for c in cond.children)
    if lhs.kind != "DECL_REF_EXPR" or lhs.ref is not decl:
        return None
    bound = _int(rhs)
    if bound is None or any(id(x) in skip for e in (inits[-1], rhs) for x in e.walk()):
        return None
    if cond.op in (">", ">=", "!=") and bound >= 0:
        return start                               # falls from `start`
    if cond.op == "<":
        return max(start, bound - 1)
    if cond.op == "<=":
        return max(start, bound)
    return None


def reads_warp_size(model, fn) -> bool:
    """Whether the kernel `fn` or a device function it calls (transitively) reads `warpSize`."""
    by_name = {}
    for f in model.functions:
        if f.body is not None:
            by_name.setdefault(f.name, f)
    todo, seen = [fn], set()
    while todo:
        f = todo.pop()
        if id(f) in seen or f.body is None:
            continue
        seen.add(id(f))
        for x in f.body.walk():
            if x.kind == "DECL_REF_EXPR" and x.spelling == "warpSize" and x.ref is None:
                return True
            if x.kind == "CALL_EXPR" and x.spelling in by_name:
                todo.append(by_name[x.spelling])
    return False

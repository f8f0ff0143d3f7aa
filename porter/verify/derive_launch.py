"""A launch's shape (derive_sizes.py): the grid and block of `k<<<grid, block>>>` as size expressions (dim3
variables and their member writes), the block folded to constants through host wrappers (the translations fix
it), and a launch the derived sizes do not reach. `sym` is the expression writer (derive_expr._Sym)."""
from __future__ import annotations

from porter.verify.derive_host import Underivable, _bare, _tidy
from porter.verify.derive_values import _loop_start


def _fold_first(sym, node, depth: int = 0):
    """An integer the expression takes on the program's first way through (a block size): constants, locals
    initialised once, a loop counter's first value (`for (int j = 32; ...)`, `for (int b : {64, 128})` over an
    array of constants), a host wrapper's parameter at its call. None otherwise; no size names are made."""
    from porter.analysis.launch import fold_int
    if node is None or depth > 8:
        return None
    v = fold_int(node.model, node, sym.env)
    if v is not None:
        return v
    n = _bare(node)
    if n.kind != "DECL_REF_EXPR" or n.ref is None:
        return None
    return _fold_decl(sym, n.ref, depth, use=n)


def _fold_decl(sym, d, depth: int = 0, use=None):
    """_fold_first of a reference to the variable or parameter `d`."""
    if d.kind == "PARM_DECL":
        return _fold_first(sym, sym.caller_arg(d), depth + 1)
    if d.kind != "VAR_DECL":
        return None
    rng = d.parent
    if rng is not None and rng.kind == "CXX_FOR_RANGE_STMT" and rng.children and rng.children[0] is d:
        seq = _bare(rng.children[1]) if len(rng.children) > 1 else None
        if seq is not None and seq.kind == "DECL_REF_EXPR" and seq.ref is not None and seq.ref.kind == "VAR_DECL":
            seq = next((c for c in seq.ref.children if c.kind == "INIT_LIST_EXPR"), None)
        if seq is not None and seq.kind == "INIT_LIST_EXPR" and seq.children:
            return _fold_first(sym, seq.children[0], depth + 1)
        return None
    first = _loop_start(d)
    if first is not None:
        return _fold_first(sym, first, depth + 1)
    init = sym.definition(d, use)
    return _fold_first(sym, init, depth + 1) if init is not None else None


def _through_wrappers(sym, b):
    """`k<<<...>>>(d, n)` inside `void run(int *d, int n)` called as `run(d_v, 4096)`: the caller's argument
    (`d_v`, `4096`) for a parameter of the host function, up to 3 wrappers deep; `b` itself otherwise."""
    for _ in range(3):
        up = sym.caller_arg(b.ref) if b is not None and b.kind == "DECL_REF_EXPR" and b.ref is not None else None
        if up is None:
            break
        b = _bare(up)
    return b


def _mark_inline(sym, block) -> None:
    """Host variables that make up the block are constants, not sizes: the translations fix the block."""
    todo = [block]
    while todo:
        node = todo.pop()
        for n in node.walk():
            if n.kind == "DECL_REF_EXPR" and n.ref is not None and n.ref.kind == "PARM_DECL" and \
                    id(n.ref) not in sym.inline and sym.caller_arg(n.ref) is not None:
                sym.inline.add(id(n.ref))           # `run(d, n, 128)` with `k<<<g, threads>>>`
                todo.append(sym.caller_arg(n.ref))
            elif n.kind == "DECL_REF_EXPR" and n.ref is not None and n.ref.kind == "VAR_DECL" and \
                    id(n.ref) not in sym.inline:
                sym.inline.add(id(n.ref))
                d = sym.definition(n.ref, n)
                if d is not None:
                    todo.append(d)
                else:
                    todo.extend(c for c in n.ref.children if not c.kind.endswith("_ATTR"))


def _grid_text(sym, grid) -> str:
    from porter.analysis.launch import _members_written
    n = _bare(grid)
    while n.kind == "CXX_FUNCTIONAL_CAST_EXPR" and "dim3" in (n.type or "") and n.children:
        n = _bare(n.children[-1])       # `dim3(g)` is a functional cast around the constructor call `dim3(g)`
    if n.kind == "DECL_REF_EXPR" and n.ref is not None and n.ref.kind == "VAR_DECL" and "dim3" in (n.type or ""):
        exprs = [c for c in n.ref.children if not c.kind.endswith("_ATTR") and c.kind not in ("TYPE_REF",
                                                                                             "NAMESPACE_REF")]
        if _members_written(n.ref):
            dims = _member_writes(sym, n.ref, exprs[-1] if exprs else None)
            if dims is None:
                raise Underivable(f"`{n.spelling}` is changed after its declaration")
            while len(dims) > 1 and dims[-1] == "1":
                dims.pop()
            return _tidy(dims[0]) if len(dims) == 1 else "(" + ", ".join(_tidy(x) for x in dims) + ")"
        if not exprs:
            raise Underivable(f"`{n.spelling}` has no initial value")
        return _grid_text(sym, exprs[-1])
    if n.kind in ("CALL_EXPR", "CXX_FUNCTIONAL_CAST_EXPR") and (n.spelling == "dim3" or not n.spelling and
                                                                 "dim3" in (n.type or "")) or \
            n.kind in ("INIT_LIST_EXPR",):      # (no spelling: `dim3(v.size())` in a template is dependent)
        parts = [a for a in (n.args() if n.kind == "CALL_EXPR" else n.children)
                 if a.kind not in ("TYPE_REF", "NAMESPACE_REF")]
        if len(parts) == 1 and "dim3" in (parts[0].type or ""):
            return _grid_text(sym, parts[0])
        if not 1 <= len(parts) <= 3:
            raise Underivable(f"cannot read `{' '.join(n.text.split())}`")
        dims = [sym.expr(a) for a in parts]
        while len(dims) > 1 and dims[-1] == "1":
            dims.pop()
        return _tidy(dims[0]) if len(dims) == 1 else "(" + ", ".join(_tidy(x) for x in dims) + ")"
    return _tidy(sym.expr(n))


def _member_writes(sym, decl, init) -> list | None:
    """[x, y, z] of `dim3 b; b.x = E; b.y = F;` (moe-sum, clenergy): the declaration's values (1 where it gives
    none) with each member assigned once, before the launch, by a plain `=`; None for anything else (a
    compound assignment, a member assigned twice or after the launch, the whole variable assigned)."""
    fn = decl.enclosing("FUNCTION_DECL", "FUNCTION_TEMPLATE", "CXX_METHOD")
    if fn is None or sym.site is None:
        return None
    dims: list = ["1", "1", "1"]
    if init is not None and init.text.strip() in ("", decl.spelling):
        init = None                     # `dim3 volsize, Gsz, Bsz;`: the default constructor
    if init is not None:
        i = _bare(init)
        parts = [a for a in (i.args() if i.kind == "CALL_EXPR" else i.children)
                 if a.kind not in ("TYPE_REF", "NAMESPACE_REF")] if i.kind in ("CALL_EXPR", "INIT_LIST_EXPR") \
            else None
        if parts is None or len(parts) > 3:
            return None
        for j, a in enumerate(parts):
            dims[j] = sym.expr(a)
    seen = set()
    for m in fn.walk():
        if m.kind not in ("BINARY_OPERATOR", "COMPOUND_ASSIGNMENT_OPERATOR") or not m.children or \
                m.kind == "BINARY_OPERATOR" and m.op != "=":
            continue                    # reads (`Bsz.x * UNROLLX`) are not writes
        t = _bare(m.children[0])
        target = t.children[0].strip if t.kind == "MEMBER_REF_EXPR" and t.children else t
        if getattr(target, "ref", None) is not decl:
            continue
        if m.kind != "BINARY_OPERATOR" or t.kind != "MEMBER_REF_EXPR" or \
                t.spelling not in ("x", "y", "z") or t.spelling in seen or m.start > sym.site.node.start or \
                len(m.children) != 2:
            return None
        seen.add(t.spelling)
        dims["xyz".index(t.spelling)] = sym.expr(m.children[1])
    return dims


def _dims_text(dims) -> str:
    d = list(dims)
    while len(d) > 1 and d[-1] == 1:
        d.pop()
    return str(d[0]) if len(d) == 1 else "(" + ", ".join(map(str, d)) + ")"


def _wrapper_block(model, sym, block):
    """`k<<<g, threads>>>` / `dim3(threads)` with `threads` a host wrapper's parameter: the block folded from
    the argument at the call caller_arg reads (launch.py's site_shapes takes any call: the grid and sizes would
    come from one call and the block from another); () when it does not fold there; None for other blocks."""
    from porter.analysis.launch import fold_dim3
    b = _bare(block)
    while b is not None and b.kind in ("CXX_FUNCTIONAL_CAST_EXPR", "CALL_EXPR") and "dim3" in (b.type or "") \
            and len([c for c in b.children if c.kind != "TYPE_REF"]) == 1:
        b = _bare([c for c in b.children if c.kind != "TYPE_REF"][0])
    if b is None or b.kind != "DECL_REF_EXPR" or b.ref is None or sym.caller_arg(b.ref) is None:
        return None
    dims = fold_dim3(model, _through_wrappers(sym, b), sym.env)
    if dims is None:
        x = _fold_first(sym, b)
        dims = (x, 1, 1) if x is not None else None
    return dims if dims is not None and dims[0] * dims[1] * dims[2] > 0 else ()


# an `if` is not looked at: ss picks StringSearchNaive for one pattern length and another kernel for the others,
# and the kernel is still one to verify at any length
_COND_LOOPS = ("WHILE_STMT", "FOR_STMT")


def _unreached(sym, grid: str, block: str, sizes: dict) -> list[tuple[str, str]]:
    """(what, message) when the derived sizes do not make the launch the program makes: the condition of a loop
    the launch sits in (`while (current_position < max_searchable_length)`) false at those sizes, or an empty
    grid or block (ga's `length` is 0 when the two run-time sizes its bound subtracts are both 1000). The sizes
    the program needs then are not known: a spec says them."""
    from porter.verify.notation import eval_int, parse_expr, parse_launch
    if sym.site is None:
        return []
    shown = lambda: ", ".join(f"{k}={v}" for k, v in sizes.items()) or "none"   # noqa: E731
    line = sym.model.source.position(sym.site.node.start)[0]
    saved = (dict(sym.names), dict(sym.sizes), list(sym.notes))
    try:
        for a in sym.site.node.ancestors():
            if a.kind == "LAMBDA_EXPR":
                break
            if a.kind not in _COND_LOOPS or not a.children:
                continue
            cond = a.children[0] if a.kind != "FOR_STMT" else (a.children[1] if len(a.children) == 4 else None)
            c = cond.strip if cond is not None else None
            if c is None or c.kind != "BINARY_OPERATOR" or len(c.children) != 2 or \
                    c.op not in ("<", "<=", ">", ">=", "==", "!=") or not c.spelled_here:
                continue
            try:
                left, right = (sym.expr(x) for x in c.children)
                lv, rv = (parse_expr(t).eval(sizes) for t in (left, right))
            except Exception:           # not a condition over sizes (a flag, a pointer, a loop counter)
                continue
            if not {"<": lv < rv, "<=": lv <= rv, ">": lv > rv, ">=": lv >= rv, "==": lv == rv,
                    "!=": lv != rv}[c.op]:
                return [("launch", f"the launch at line {line} runs only while `{' '.join(c.text.split())}`, "
                                   f"false at the derived sizes ({_tidy(left)} = {lv}, {_tidy(right)} = {rv}; "
                                   f"sizes {shown()}): the sizes it needs are not derived")]
    finally:
        sym.names, sym.sizes, sym.notes = saved
    for what, text in (("grid", grid), ("block", block)):
        try:
            dims = [eval_int(e, sizes, what) for e in parse_launch(text)]
        except Exception:
            continue
        if min(dims) < 1:
            return [(what, f"the {what} `{text}` of the launch at line {line} is empty at the derived sizes "
                           f"({shown()}): the sizes it needs are not derived")]
    return []

"""User-written struct constructors in device code (`Position(int x, int y) : x(x), y(y) {}`): a call becomes the
target's struct constructor with each field's member initialiser evaluated on the call's arguments. With an empty
body the call is the struct's constructor expression (member initialisers or default member initialisers; a field
read inside another's initialiser is refused there); a body with statements makes a function `T T_ctor(args)`
(body_prologue, calls.user_call). Base classes and delegating constructors are refused."""
from __future__ import annotations

from porter.translate.kernel.target import PREC_PRIMARY, E
from porter.translate.kernel.ctype import NON_EXPR

_COPY_MARK = ("&&", "&")


def struct_node(em, name):
    fields = em.u.structs.get(name)
    return fields[0][1].parent if fields else None


def user_ctors(em, name) -> list:
    """The struct's own constructors, copy and move constructors left out (those copy, as C does)."""
    s = struct_node(em, name)
    if s is None:
        return []
    out = []
    for c in s.children:
        if c.kind != "CONSTRUCTOR":
            continue
        ps = [p for p in c.children if p.kind == "PARM_DECL"]
        if len(ps) == 1 and s.spelling in ps[0].type and ps[0].type.rstrip().endswith(_COPY_MARK):
            continue
        out.append(c)
    return out


def construct(em, n, t, args) -> E | None:
    """`T(args)` / `T v(args)` for a struct T with user constructors; None when T has none (aggregate rules)."""
    ctors = user_ctors(em, t.name)
    if not ctors:
        return None
    r = n.ref
    if r is None or r.kind != "CONSTRUCTOR":
        same = [c for c in ctors if len([p for p in c.children if p.kind == "PARM_DECL"]) == len(args)]
        dev = [c for c in same if any(a.kind == "CUDADEVICE_ATTR" for a in c.children)]
        same = dev or same          # a `__host__` constructor is not the one device code calls
        if len(same) != 1:
            em.fail(n, f"the constructor call `{n.text}` (which constructor of `{t.name}` is meant)")
        r = same[0]
    params = [p for p in r.children if p.kind == "PARM_DECL"]
    if len(args) != len(params):
        em.fail(n, f"the constructor call `{n.text}` (default arguments)")
    body = next((c for c in r.children if c.kind == "COMPOUND_STMT"), None)
    if body is None:
        em.fail(n, f"the constructor `{n.text}` (no body in this file)")
    inits = member_inits(em, n, r)
    if body.children:
        # statements: a function `T T_ctor(args)` that builds the object on a local (body_prologue)
        fn = em.u.fn_by_node.get(id(r))
        if fn is None or not fn.is_device_code:
            em.fail(n, f"the constructor `{n.text}` (not a device function)")
        return em.user_call(fn, n, args=args, ctor=t)
    pids = {id(p): p for p in params}
    uses = {id(p): 0 for p in params}
    order = []
    for e in inits.values():
        for x in e.walk():
            if x.kind == "CXX_THIS_EXPR" or (x.kind == "MEMBER_REF_EXPR" and not x.children):
                em.fail(n, f"the constructor `{n.text}` (a member read inside a member initialiser)")
            if x.kind == "DECL_REF_EXPR" and x.ref is not None and id(x.ref) in pids:
                uses[id(x.ref)] += 1
                order.append(id(x.ref))
    fr = em.frame
    bound = []
    for p, a in zip(params, args):
        pt = em.parse_type(p.type)
        if pt.kind in ("pointer", "array"):
            em.fail(n, f"the constructor `{n.text}` (a pointer parameter)")
        pt = pt.unqualified()
        v = em.conv(em.x(a), pt)
        # an argument with side effects must be evaluated exactly once, in the order C++ does
        if not em._pure(a) and (uses[id(p)] != 1 or order != [id(q) for q in params]):
            em.fail(a, f"the constructor argument `{a.text}` (side effects, evaluated {uses[id(p)]} times here)")
        bound.append(id(p))
        fr.consts[id(p)] = E(v.paren(PREC_PRIMARY), pt, PREC_PRIMARY, None, v.lit)
    try:
        em.use_struct(t.name, n)
        parts = []
        for fname, fnode in em.u.structs[t.name]:
            ft = em.decl_type(fnode)
            init = _field_init(fnode, inits.get(fname))
            parts.append(em.zero(ft).text if init is None else _value(em, init, ft).text)
    finally:
        for k in bound:
            fr.consts.pop(k, None)
    return E(em.t.struct_constructor(em, t, parts), t)


def member_inits(em, n, r) -> dict:
    """{field: initialiser} of constructor r's member initialiser list."""
    inits: dict[str, object] = {}
    kids = [c for c in r.children if c.kind not in ("PARM_DECL", "COMPOUND_STMT") and not c.kind.endswith("_ATTR")]
    i = 0
    while i < len(kids):
        c = kids[i]
        if c.kind != "MEMBER_REF" or i + 1 >= len(kids):
            em.fail(n, f"the constructor `{n.text}` (a base class or delegating initialiser)")
        inits[c.spelling] = kids[i + 1]
        i += 2
    return inits


def _field_init(fnode, init):
    """The member initialiser, else the default member initialiser, else None (indeterminate in C++)."""
    if init is None:
        d = [c for c in fnode.children if c.kind not in NON_EXPR and not c.kind.endswith("_ATTR")]
        init = d[-1] if d else None
    return init


def _value(em, init, ft) -> E:
    if init.kind == "INIT_LIST_EXPR" or ft.kind == "struct" and init.kind == "CALL_EXPR":
        return em.aggregate(init, ft)
    return em.conv(em.x(init), ft)


def body_prologue(em, fn, fr, t) -> None:
    """The start of `T T_ctor(args)`: `self` zeroed (C++ leaves members without an initialiser indeterminate),
    then each member initialised in declaration order, as C++ does, before the body runs on it."""
    from porter.translate.kernel.methods import self_decl
    d = self_decl(em, fn)
    fr.self_decl, fr.self_type, fr.ctor = d, t, True
    em.use_struct(t.name, fn.node)
    name = em.name_of(d)
    em.emit(f"{em.t.type_name(t, em)} {name} = {em.zero(t).text};")
    inits = member_inits(em, fn.node, fn.node)
    for fname, fnode in em.u.structs[t.name]:
        init = _field_init(fnode, inits.get(fname))
        if init is not None:
            em.emit(f"{name}.{em.t.ident(fname)} = {_value(em, init, em.decl_type(fnode)).text};")

"""Traits classes as template arguments (issue 14, item 4; the CUTLASS / FlashAttention style): a kernel
`template <typename Ktraits> __global__ void k(...)` instantiated with `kernel_traits<128, 10, float>`, a struct
(template) of `static constexpr int kNThreads = kNThreads_;` and `using input_t = input_t_;` members. clang leaves
`Ktraits::kNThreads` and `typename Ktraits::input_t` unresolved in the kernel's pattern; here the traits instance
is evaluated once and its members enter the template substitution under their qualified names
(`Ktraits::kNThreads` -> 128, `Ktraits::input_t` -> f32), where the existing lookups of template arguments find
them (ctype.parse for types and array bounds, DECL_REF_EXPR for values).

A member folds only when its initializer is an integer constant expression over the traits' template arguments
and earlier members (arithmetic, comparisons, `?:`, sizeof of a type, std::min / std::max, casts, calls of
constexpr functions whose body is one `return`); one that does not fold is left out, so its use keeps the
existing refusal (CP907 at that use). Floating-point members are left out the same way."""
from __future__ import annotations

import re

from porter.translate.kernel import ctype as ct


class Member(int):
    """An integer member's value with its declared type (`static constexpr bool kIsEven` is a bool)."""

    def __new__(cls, v: int, ctype):
        o = super().__new__(cls, int(v))
        o.ctype = ctype
        return o


_MAX_DEPTH = 64


def _classes(model) -> dict:
    """{name: [CLASS_TEMPLATE / STRUCT_DECL nodes]} of the file's structs with static or alias members."""
    cache = getattr(model, "_cuport_traits_classes", None)
    if cache is not None:
        return cache
    out: dict = {}
    for n in model.of_kind("CLASS_TEMPLATE", "STRUCT_DECL", "CLASS_DECL"):
        if n.spelling and any(c.kind in ("VAR_DECL", "TYPE_ALIAS_DECL", "TYPEDEF_DECL") for c in n.children):
            out.setdefault(n.spelling, []).append(n)
    try:
        model._cuport_traits_classes = out
    except AttributeError:
        pass
    return out


def expand(unit, subst: dict) -> dict:
    """`subst` with the members of each traits-class argument added as `Param::member` (values: Member ints,
    CTypes for member types); unchanged when no argument names a traits class."""
    classes = _classes(unit.model)
    if not classes:
        return subst
    out = dict(subst)
    for p, v in subst.items():
        if isinstance(v, int) or "::" in p:
            continue
        spelling = v.name if isinstance(v, ct.CType) and v.kind in ("unknown", "struct") else \
            (v if isinstance(v, str) else None)
        if not spelling:
            continue
        members = instance_members(unit, spelling)
        for m, mv in (members or {}).items():
            out[f"{p}::{m}"] = mv
    return out


def instance_members(unit, spelling: str, depth: int = 0) -> dict | None:
    """{member: Member | CType} of the traits class `spelling` names (`kernel_traits<128, 10, float>`,
    `Cfg`), None when it names none."""
    cache = unit.__dict__.setdefault("_traits_cache", {})
    key = re.sub(r"\s+", "", spelling)
    if key in cache:
        return cache[key]
    cache[key] = None                       # a traits class naming itself
    m = re.fullmatch(r"\s*(?:struct\s+|class\s+)?(?:::)?(?:\w+::)*(\w+)\s*(?:<(.*)>)?\s*", spelling, re.S)
    classes = _classes(unit.model)
    if not m or m.group(1) not in classes or depth > 8:
        return None
    from porter.frontend.lexer import split_top_level
    raw = [a.strip() for a in split_top_level(m.group(2))] if m.group(2) is not None else None
    node = _pick(classes[m.group(1)], raw, unit, depth)
    if node is None:
        return None
    node, env = node
    members = {}
    unknown = [v.name for v in env.values() if isinstance(v, ct.CType) and v.kind == "unknown"]
    why = unit.__dict__.setdefault("_traits_why", {}).setdefault(key, {})
    for c in node.children:
        if c.kind == "VAR_DECL" and re.search(r"\b(static|constexpr)\b", c.text or ""):
            init = [k for k in c.children if k.kind not in ("TYPE_REF", "TEMPLATE_REF", "NAMESPACE_REF")]
            t = ct.parse(c.type or "", env, unit.struct_names)
            if not init or t.kind != "scalar" or not (t.is_int or t.name == "bool"):
                continue
            v = _eval(unit, init[-1], env, depth)
            if v is not None:
                env[c.spelling] = members[c.spelling] = Member(v, t.unqualified())
            else:
                why[c.spelling] = (f"its type argument `{unknown[0]}` is unknown here" if unknown else
                                   "its initializer is no integer constant expression cuport evaluates")
        elif c.kind in ("TYPE_ALIAS_DECL", "TYPEDEF_DECL"):
            t = _alias(unit, c, env, depth)
            if t is not None:
                env[c.spelling] = members[c.spelling] = t
    cache[key] = members
    unit.__dict__.setdefault("_traits_envs", {})[key] = (node, env)     # its static member functions
    return members


def _pick(nodes, raw, unit, depth):
    """The class (template) `raw` arguments instantiate, with its parameters bound: an explicit specialization
    (`template<> struct BytesToType<16>`) when one matches, else the primary template."""
    if raw is None:
        plain = [n for n in nodes if n.kind != "CLASS_TEMPLATE" and "<" not in (n.type or "")]
        return (plain[0], {}) if plain else None
    vals = [_arg(unit, a, depth) for a in raw]
    if any(v is None for v in vals):
        return None
    for n in nodes:
        if n.kind == "CLASS_TEMPLATE":
            continue
        sm = re.fullmatch(r"[\w:]*?\w+\s*<(.*)>", (n.type or "").strip(), re.S)
        if sm:
            from porter.frontend.lexer import split_top_level
            spec = [_arg(unit, a.strip(), depth) for a in split_top_level(sm.group(1))]
            if [str(s) for s in spec] == [str(v) for v in vals]:
                return n, {}
    for n in nodes:
        if n.kind != "CLASS_TEMPLATE":
            continue
        params = [(c.spelling, c.kind) for c in n.children
                  if c.kind in ("TEMPLATE_TYPE_PARAMETER", "TEMPLATE_NON_TYPE_PARAMETER")]
        if len(params) != len(vals) or any(not p for p, _k in params):
            continue
        if any((k == "TEMPLATE_TYPE_PARAMETER") == isinstance(v, int) for (_p, k), v in zip(params, vals)):
            continue
        return n, {p: v for (p, _k), v in zip(params, vals)}
    return None


def _arg(unit, a: str, depth: int):
    """A template argument's value: an int, or a CType (a traits class stays an unknown CType by name)."""
    s = a.strip()
    if s in ("true", "false"):
        return int(s == "true")
    try:
        return int(s.rstrip("uUlL"), 0)
    except ValueError:
        pass
    from porter.translate.templates import _int_expr
    v = _int_expr(unit.model, s)
    if isinstance(v, int):
        return v
    t = ct.parse(s, None, unit.struct_names)
    if t.kind == "unknown":
        from porter.translate.templates import canonical_type
        canon = canonical_type(unit.model, unit.model.kernels[0], s) if unit.model.kernels else s
        t2 = ct.parse(canon, None, unit.struct_names)
        return t2 if t2.kind != "unknown" else t
    return t


def _alias(unit, c, env, depth):
    """The type a member alias names in this instance: `using input_t = input_t_;`, `using vec_t = typename
    BytesToType<kNBytes * kNElts>::Type;` (a member of another traits class)."""
    text = c.text or ""
    if c.kind == "TYPE_ALIAS_DECL":
        m = re.search(r"=\s*(.*)$", text, re.S)
    else:
        m = re.fullmatch(r"\s*typedef\s+(.*?)\s*\b" + re.escape(c.spelling) + r"\s*", text, re.S)
    if not m:
        return None
    body = re.sub(r"\btypename\s+", "", m.group(1)).strip()
    q = re.fullmatch(r"(\w+)\s*<(.*)>\s*::\s*(\w+)", body, re.S)
    if q:
        from porter.frontend.lexer import split_top_level
        args = []
        for a in split_top_level(q.group(2)):
            v = _eval_text(unit, a.strip(), env)
            args.append(str(v) if v is not None else a.strip())
        inner = instance_members(unit, f"{q.group(1)}<{', '.join(args)}>", depth + 1)
        t = (inner or {}).get(q.group(3))
        return t if isinstance(t, ct.CType) else None
    t = ct.parse(body, env, unit.struct_names)
    return t if t.kind in ("scalar", "vector", "struct") else None


def _eval_text(unit, text: str, env: dict):
    """An argument's text over the environment's integer names (`kNBytes * kNElts`)."""
    if text in env and isinstance(env[text], int):
        return int(env[text])
    ints = {k: int(v) for k, v in env.items() if isinstance(v, int)}
    t = re.sub(r"\b[A-Za-z_]\w*\b", lambda w: str(ints[w.group(0)]) if w.group(0) in ints else w.group(0), text)
    from porter.translate.templates import _int_expr
    return _int_expr(unit.model, t)


def _c_div(a, b, op):
    q = abs(a) // abs(b) * (1 if (a >= 0) == (b >= 0) else -1)      # C truncates toward zero
    return q if op == "/" else a - q * b


def _eval(unit, n, env: dict, depth: int):
    """An integer constant expression node of a traits class (or a constexpr function's return) in `env`."""
    if n is None or depth > _MAX_DEPTH:
        return None
    k = n.kind
    if k in ("PAREN_EXPR", "UNEXPOSED_EXPR") and len(n.children) == 1:
        return _eval(unit, n.children[0], env, depth + 1)
    if k == "INTEGER_LITERAL":
        v = n.value
        return v if isinstance(v, int) else None
    if k == "CXX_BOOL_LITERAL_EXPR":
        return int(n.text.strip() == "true")
    if k == "DECL_REF_EXPR":
        name = n.spelling
        if name in env and isinstance(env[name], int):
            return int(env[name])
        r = n.ref
        if r is not None and r.kind == "ENUM_CONSTANT_DECL" or (r is not None and r.kind == "VAR_DECL" and
                                                                re.search(r"\bconstexpr\b", r.text or "")):
            v = n.value
            return v if isinstance(v, int) and not isinstance(v, bool) else None
        return None
    if k in ("CSTYLE_CAST_EXPR", "CXX_STATIC_CAST_EXPR", "CXX_FUNCTIONAL_CAST_EXPR"):
        t = ct.parse(n.type or "", env, unit.struct_names)
        kids = [c for c in n.children if c.kind not in ("TYPE_REF",)]
        if t.kind == "scalar" and (t.is_int or t.name == "bool") and len(kids) == 1:
            v = _eval(unit, kids[0], env, depth + 1)
            return None if v is None else (int(bool(v)) if t.name == "bool" else v)
        return None
    if k == "CXX_UNARY_EXPR":
        m = re.fullmatch(r"\s*sizeof\s*\((.*)\)\s*", n.text or "", re.S)
        if not m:
            return None
        t = ct.parse(re.sub(r"\btypename\s+", "", m.group(1)), env, unit.struct_names)
        return ct.c_size(t)
    if k == "UNARY_OPERATOR" and len(n.children) == 1:
        v = _eval(unit, n.children[0], env, depth + 1)
        op = (n.text or "").strip()[:1]
        if v is None or op not in "-+!~":
            return None
        return {"-": -v, "+": v, "!": int(not v), "~": ~v}[op]
    if k == "BINARY_OPERATOR" and len(n.children) == 2:
        op = n.op
        a = _eval(unit, n.children[0], env, depth + 1)
        if op in ("&&", "||") and a is not None and (bool(a) == (op == "||")):
            return int(op == "||")             # short circuit, as C evaluates it
        b = _eval(unit, n.children[1], env, depth + 1)
        if a is None or b is None:
            return None
        if op in ("/", "%"):
            return None if b == 0 else _c_div(a, b, op)
        if op in ("<<", ">>") and not 0 <= b < 63:
            return None
        ops = {"+": lambda: a + b, "-": lambda: a - b, "*": lambda: a * b, "<<": lambda: a << b,
               ">>": lambda: a >> b, "&": lambda: a & b, "|": lambda: a | b, "^": lambda: a ^ b,
               "<": lambda: int(a < b), ">": lambda: int(a > b), "<=": lambda: int(a <= b),
               ">=": lambda: int(a >= b), "==": lambda: int(a == b), "!=": lambda: int(a != b),
               "&&": lambda: int(bool(a and b)), "||": lambda: int(bool(a or b))}
        return ops[op]() if op in ops else None
    if k == "CONDITIONAL_OPERATOR" and len(n.children) == 3:
        c = _eval(unit, n.children[0], env, depth + 1)
        return None if c is None else _eval(unit, n.children[1 if c else 2], env, depth + 1)
    if k == "CALL_EXPR":
        return _call(unit, n, env, depth)
    return None


def _call(unit, n, env, depth):
    """std::min / std::max, or a constexpr function whose body is one `return` (cilog2's recursion too)."""
    args = [c for c in n.children[1:]] if n.children else []
    name = re.match(r"\s*((?:\w+::)*\w+)\s*\(", n.text or "")
    name = name.group(1) if name else ""
    short = name.split("::")[-1]
    if short in ("min", "max") and len(args) == 2 and name in ("min", "max", "std::min", "std::max"):
        vals = [_eval(unit, a, env, depth + 1) for a in args]
        if None in vals:
            return None
        return min(vals) if short == "min" else max(vals)
    fns = [f for f in unit.model.of_kind("FUNCTION_DECL", "CXX_METHOD") if f.spelling == short and
           re.search(r"\bconstexpr\b", unit.model.source.slice(f.start, f.end)[:200])]
    if len(fns) != 1:
        return None
    f = fns[0]
    params = [c for c in f.children if c.kind == "PARM_DECL"]
    body = [c for c in f.children if c.kind == "COMPOUND_STMT"]
    if len(params) != len(args) or len(body) != 1 or len(body[0].children) != 1 or \
            body[0].children[0].kind != "RETURN_STMT" or not body[0].children[0].children:
        return None
    vals = [_eval(unit, a, env, depth + 1) for a in args]
    if None in vals:
        return None
    inner = dict(env)
    inner.update({p.spelling: v for p, v in zip(params, vals)})
    return _eval(unit, body[0].children[0].children[0], inner, depth + 1)


def why_not(unit, subst: dict, n) -> str:
    """Why `Ktraits::kN` has no value here: ' (a member of the traits class `X<...>` ...)', else ''."""
    m = re.fullmatch(r"\s*(?:typename\s+)?(\w+)\s*::\s*(\w+)\s*", n.text or "")
    v = subst.get(m.group(1)) if m and subst else None
    spelling = v.name if isinstance(v, ct.CType) else None
    if not spelling or instance_members(unit, spelling) is None:
        return ""
    why = getattr(unit, "_traits_why", {}).get(re.sub(r"\s+", "", spelling), {}).get(m.group(2))
    if why is None:
        return f" (the traits class `{spelling}` has no static constexpr integer member `{m.group(2)}`)"
    return f" (a member of the traits class `{spelling}` not folded: {why})"


def member_value(subst: dict, n):
    """The value a dependent member reference (`Ktraits::kNThreads`, DECL_REF_EXPR clang leaves unnamed) has
    in this instance's substitution, else None."""
    key = re.sub(r"\s+", "", n.text or "")
    key = re.sub(r"^typename", "", key)
    v = subst.get(key) if subst else None
    return v if isinstance(v, int) else None


def fold_call(em, fn, n):
    """`cilog2(Ktraits::kNElts)`: a call of a constexpr function (body: one `return`) whose arguments are
    constants here folds to its value, as the compiler folds it (so its recursion is no call at run time);
    None otherwise."""
    node = fn.node
    if not re.search(r"\bconstexpr\b", em.model.source.slice(node.start, fn.body.start if fn.body else node.end)):
        return None
    params = [c for c in node.children if c.kind == "PARM_DECL"]
    body = fn.body
    if body is None or len(body.children) != 1 or body.children[0].kind != "RETURN_STMT" or \
            not body.children[0].children:
        return None
    args = em.call_args(n)
    if len(args) != len(params):
        return None
    vals = [em.const_int(a) for a in args]
    if None in vals:
        return None
    env = {p.spelling: v for p, v in zip(params, vals)}
    return _eval(em.u, body.children[0].children[0], env, 0)


def local_aliases(em, fn) -> None:
    """`using vec_t = typename Ktraits::vec_t;` in a template body: clang leaves the alias dependent, so its
    name enters the frame's substitution with the type it has here (`sizeof(vec_t)`, `vec_t *p`), before any
    declaration's type is taken. A name aliased twice to different types is left out (its uses refuse)."""
    if fn.body is None:
        return
    found: dict = {}
    for c in fn.body.walk():
        if c.kind not in ("TYPE_ALIAS_DECL", "TYPEDEF_DECL") or not c.spelling or c.spelling in em.frame.subst:
            continue
        try:
            under = c._cursor.underlying_typedef_type
            spelling, canon = under.spelling, under.get_canonical().spelling
        except Exception:
            continue
        if "type-parameter" not in canon and "dependent" not in canon:
            continue                        # clang resolved it
        t = em.parse_type(re.sub(r"\btypename\s+", "", spelling))
        found.setdefault(c.spelling, []).append(t if t.kind in ("scalar", "vector", "struct") else None)
    for name, ts in found.items():
        if ts[0] is not None and all(t is not None and t.same(ts[0]) for t in ts):
            em.frame.subst[name] = ts[0]


def fold_static_call(em, n):
    """`Ktraits::twice(3)`: a static constexpr member function of the traits class (body: one `return`) called
    with constants folds to its value; None when `n` is no such call. A call that does not fold is refused."""
    m = re.match(r"\s*(\w+)\s*::\s*(\w+)\s*\(", n.text or "")
    subst = em.frame.subst if em.frame else {}
    if not m or m.group(1) not in subst or n.spelling:
        return None
    v = subst[m.group(1)]
    spelling = v.name if isinstance(v, ct.CType) else (v if isinstance(v, str) else None)
    if not spelling or instance_members(em.u, spelling) is None:
        return None
    node, env = em.u._traits_envs[re.sub(r"\s+", "", spelling)]
    fns = [c for c in node.children if c.kind in ("CXX_METHOD", "FUNCTION_TEMPLATE") and c.spelling == m.group(2)]
    body = [c for c in fns[0].children if c.kind == "COMPOUND_STMT"] if len(fns) == 1 else []
    params = [c for c in fns[0].children if c.kind == "PARM_DECL"] if len(fns) == 1 else []
    args = [c for c in n.children[1:]]
    what = f"`{n.text}` (a member function of the traits class `{spelling}`"
    if len(fns) != 1 or fns[0].kind != "CXX_METHOD" or not re.search(r"\bstatic\b", fns[0].text or "") or \
            len(body) != 1 or len(body[0].children) != 1 or body[0].children[0].kind != "RETURN_STMT" or \
            not body[0].children[0].children or len(args) != len(params):
        em.fail(n, what + ": only a static one whose body is one `return` folds)")
    vals = [em.const_int(a) for a in args]
    inner = dict(env)
    inner.update({p.spelling: v for p, v in zip(params, vals)})
    r = None if None in vals else _eval(em.u, body[0].children[0].children[0], inner, 0)
    if r is None:
        em.fail(n, what + " with arguments that are not constants here)")
    return r


def local_constant(em, name: str):
    """The value of `name` used as a template argument (`load_input<kNChunks>(...)` with `constexpr int kNChunks =
    Ktraits::kNChunks;` in the caller): a const local of the calling function whose initializer folds here."""
    if not re.fullmatch(r"[A-Za-z_]\w*", name) or em.frame is None or em.frame.fn.body is None:
        return None
    decls = [d for d in em.frame.fn.body.walk() if d.kind == "VAR_DECL" and d.spelling == name]
    if len(decls) != 1 or not re.search(r"\b(const|constexpr)\b", em.model.source.slice(decls[0].start, decls[0].end)):
        return None
    return em.const_int(em.init_of(decls[0]))

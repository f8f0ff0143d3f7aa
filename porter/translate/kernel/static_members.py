"""Static member functions of class templates called qualified: `IndexToOffset<T, I, -1>::get(i, info)`.

clang leaves such a call unresolved in a template (no reference to follow), and a lookup by name alone finds
every `get` of the template and of its partial specialisations. The class's template arguments are read from
the qualifier; the definition is C++'s choice: the partial specialisation those arguments match, else the
primary template (two matching specialisations: refused, cuport does not order them). The function then runs
with the class's arguments (not its caller's). A specialisation pattern cuport cannot match (`S<T *>`,
`S<Foo<T>>`) is refused rather than guessed."""
from __future__ import annotations

import re

from porter.frontend.lexer import split_top_level
from porter.translate.kernel.ctype import CType

_QUALIFIED = re.compile(r"\s*(?:\w+\s*::\s*)*(\w+)\s*<(.*)>\s*::\s*(?:template\s+)?(\w+)\s*", re.S)
_PARAMS = {"TEMPLATE_TYPE_PARAMETER": "type", "TEMPLATE_NON_TYPE_PARAMETER": "value"}


def _qualifier(em, n):
    """(class template name, [argument texts], member name) of a call `C<args>::f(...)`, else None."""
    if n.kind != "CALL_EXPR" or not n.children or n.children[0].kind != "DECL_REF_EXPR":
        return None
    c = n.children[0]
    if not any(x.kind == "TEMPLATE_REF" for x in c.children):
        return None
    m = _QUALIFIED.fullmatch(em.model.source.slice(c.start, c.end) or "")
    if not m or (c.spelling and m.group(3) != c.spelling):
        return None
    return m.group(1), [a.strip() for a in split_top_level(m.group(2))], m.group(3)


def member_name(em, n) -> str | None:
    """`f` of a qualified call `C<args>::f(...)` (clang leaves the reference unnamed in a template)."""
    q = _qualifier(em, n)
    return q[2] if q is not None else None


def _value(em, text: str):
    """The value of a template argument: a type (CType) or an integer, None when neither is known."""
    from porter.translate.templates import _int_expr
    subst = em.frame.subst if em.frame is not None else {}
    if text in subst:
        return subst[text]
    v = {"true": 1, "false": 0}.get(text)
    if v is None:
        v = _int_expr(em.model, text)
    if v is None:
        from porter.translate.kernel import traits
        v = traits.local_constant(em, text) if em.frame is not None else None
    if isinstance(v, int):
        return v
    t = em.parse_type(text)
    return t if t.kind in ("scalar", "vector", "struct") else None


def _same(a, b) -> bool:
    if isinstance(a, CType) and isinstance(b, CType):
        return a.unqualified() == b.unqualified()
    return type(a) is type(b) and a == b


def _params(node) -> list:
    return [(c.spelling, _PARAMS[c.kind]) for c in node.children if c.kind in _PARAMS]


def _pattern(em, cls) -> list[str] | None:
    """The argument pattern of a partial specialisation (`T, IndexType, -1`), from its head."""
    text = cls.text or ""
    m = re.search(r"\b(?:struct|class)\s+" + re.escape(cls.spelling) + r"\s*<", text)
    if not m:
        return None
    depth, i = 1, m.end()
    while i < len(text) and depth:
        depth += {"<": 1, ">": -1}.get(text[i], 0)
        i += 1
    return [a.strip() for a in split_top_level(text[m.end():i - 1])] if not depth else None


def _match(em, n, cls, args) -> dict | None:
    """The parameters of partial specialisation cls bound by matching `args` (values), None when it does not
    match; refused where its pattern is beyond a parameter or a constant."""
    pat = _pattern(em, cls)
    if pat is None or len(pat) != len(args):
        em.fail(n, f"the call `{n.text}` (cuport cannot read the specialisation pattern of `{cls.spelling}`)")
    params = dict(_params(cls))
    bound: dict = {}
    for p, a in zip(pat, args):
        if p in params:
            if p in bound and not _same(bound[p], a):
                return None
            bound[p] = a
            continue
        if re.search(r"[<>*&\[]", p) or any(re.search(rf"\b{re.escape(q)}\b", p) for q in params):
            em.fail(n, f"the call `{n.text}` (the specialisation `{cls.spelling}<{', '.join(pat)}>` matches by a "
                       "pattern cuport does not decide)")
        v = _value(em, p)
        if v is None:
            em.fail(n, f"the call `{n.text}` (the argument `{p}` of a specialisation of `{cls.spelling}`)")
        if not _same(v, a):
            return None
    return bound if set(bound) == set(params) else None


def resolve(em, n):
    """(model Function, class template arguments) of a qualified call `C<args>::f(...)` of a static member
    function of class template C, else None."""
    q = _qualifier(em, n)
    if q is None:
        return None
    cname, arg_texts, fname = q
    cands = [f for f in em.u.fns_by_name.get(fname, []) if f.body is not None and f.is_device_code and
             f.node.parent is not None and f.node.parent.spelling == cname and
             f.node.parent.kind in ("CLASS_TEMPLATE", "CLASS_TEMPLATE_PARTIAL_SPECIALIZATION")]
    if not cands:
        return None
    cache = em.__dict__.setdefault("_static_calls", {})
    key = (id(n), tuple(sorted((k, str(v)) for k, v in (em.frame.subst if em.frame else {}).items())))
    if key in cache:
        return cache[key]
    classes = []
    for f in cands:
        if all(c is not f.node.parent for c in classes):
            classes.append(f.node.parent)
    partial = any(c.kind == "CLASS_TEMPLATE_PARTIAL_SPECIALIZATION" for c in classes)
    args = [_value(em, a) for a in arg_texts]
    if any(a is None for a in args):
        if not partial:
            return None         # one definition: found by name, run with its caller's arguments, as before
        em.fail(n, f"the call `{n.text}` (a template argument of `{cname}` cuport cannot evaluate, so not which "
                   "specialisation it names)")
    spec = [(c, b) for c in classes if c.kind == "CLASS_TEMPLATE_PARTIAL_SPECIALIZATION"
            for b in [_match(em, n, c, args)] if b is not None]
    if len(spec) > 1:
        em.fail(n, f"the call `{n.text}` (several partial specialisations of `{cname}` match)")
    if spec:
        cls, subst = spec[0]
    else:
        cls = next((c for c in classes if c.kind == "CLASS_TEMPLATE"), None)
        params = _params(cls) if cls is not None else []
        if (cls is None or len(params) != len(args)) and not partial:
            return None         # (default arguments) found by name, as before
        if cls is None or len(params) != len(args):
            em.fail(n, f"the call `{n.text}` (which definition of `{cname}` it names)")
        subst = {p: a for (p, _k), a in zip(params, args)}
    mine = [f for f in cands if f.node.parent is cls]
    nargs = len(em.call_args(n))
    mine = [f for f in mine if len(f.params) >= nargs]
    if len(mine) != 1:
        em.fail(n, f"the call `{n.text}` (which overload of `{fname}` in `{cname}`)")
    cache[key] = (mine[0], subst)
    return cache[key]


def deduce_from_instance(em, param_type: str, at) -> dict:
    """{name: value} that a parameter spelled `const C<A, B> &` deduces from an argument of C's instance type
    `at` (each of A, B that is a bare name takes the instance's argument at its place)."""
    m = re.fullmatch(r"(?:const\s+)?(\w+)\s*<(.*)>\s*(?:const\s*)?&?", param_type.strip(), re.S)
    inst = getattr(em.u, "class_instances", {}).get(at.name) if at is not None and at.kind == "struct" else None
    temp = (getattr(em.u, "class_templates", None) or {}).get(m.group(1)) if m else None
    if not m or inst is None or not isinstance(temp, tuple) or not at.name.startswith(m.group(1) + "_"):
        return {}
    out = {}
    for (cp, _k), a in zip(temp[0], split_top_level(m.group(2))):
        if re.fullmatch(r"\w+", a.strip()) and cp in inst:
            out[a.strip()] = inst[cp]
    return out

"""Launches of template kernels inside the member functions of a class template (issue 14, item 4; HeCBench's bmf:
`template <typename factor_t> class cuBool { void run() { initFactor<<<g, b>>>(handler.d_A, height_, ...); } }`
used as `using my_cuBool = cuBool<uint32_t>;`). clang leaves such a launch dependent: no kernel name, and the
arguments that reach the class's parameters have no type (`handler.d_A` through a member struct). Here each
argument's type is read from the declarations (a field of a member struct: its declared type) with the class's
parameters named, and the class's instantiations are found in the program's text (`cuBool<uint32_t>`, `cuBool<>`
with its defaults); translate/templates.py deduces the kernel's arguments from those types."""
from __future__ import annotations

import re

from porter.frontend.lexer import split_top_level

_TPARAM = re.compile(r"\btype-parameter-(\d+)-(\d+)\b")
_PARAM_KINDS = {"TEMPLATE_TYPE_PARAMETER": "type", "TEMPLATE_NON_TYPE_PARAMETER": "value"}


def class_template_of(fn) -> object | None:
    """The CLASS_TEMPLATE cursor whose member function `fn` (a host Function) is, defined inside it or out of
    line (`template <typename T> void C<T>::run()`); None when it is not one, or when the class template is
    itself nested in another template (its parameters would not be the outermost ones)."""
    try:
        cur = fn.node._cursor
        parent = cur.semantic_parent
    except Exception:
        return None
    if parent is None or parent.kind.name not in ("CLASS_TEMPLATE", "CLASS_TEMPLATE_PARTIAL_SPECIALIZATION"):
        return None
    if parent.kind.name != "CLASS_TEMPLATE":
        return None                     # a partial specialization's parameters are not the class's
    outer = parent.semantic_parent
    while outer is not None and outer.kind.name not in ("TRANSLATION_UNIT",):
        if outer.kind.name in ("CLASS_TEMPLATE", "FUNCTION_TEMPLATE", "CLASS_TEMPLATE_PARTIAL_SPECIALIZATION"):
            return None
        outer = outer.semantic_parent
    return parent


def class_params(cls) -> list[tuple[str, str, object]]:
    """[(name, 'type' | 'value', default cursor or None)] of a CLASS_TEMPLATE cursor."""
    out = []
    for c in cls.get_children():
        kind = _PARAM_KINDS.get(c.kind.name)
        if kind is None:
            continue
        kids = list(c.get_children())
        default = None
        if kind == "type":
            refs = [k for k in kids if k.kind.name == "TYPE_REF"]
            default = refs[-1] if refs else None
            if default is None and "=" in _tokens_text(c):
                default = c                  # `typename T = unsigned int`: a builtin default (no TYPE_REF)
        else:
            exprs = [k for k in kids if k.kind.name not in ("TYPE_REF", "NAMESPACE_REF")]
            default = exprs[-1] if exprs else None
        out.append((c.spelling, kind, default))
    return out


def _tokens_text(c) -> str:
    try:
        return " ".join(t.spelling for t in c.get_tokens())
    except Exception:
        return ""


def default_value(kind: str, default, value_of):
    """The value of a class template parameter's default: a type spelling or an int; None if unknown."""
    if default is None:
        return None
    try:
        if kind == "type" and default.kind.name == "TYPE_REF":
            return default.type.get_canonical().spelling
        text = _tokens_text(default if kind == "type" else default.semantic_parent or default)
        if "=" not in text:
            text = "= " + _tokens_text(default)
        v = text.split("=", 1)[1].strip()
        return v if kind == "type" else value_of(v)
    except Exception:
        return None


def _spell(t, names: list[str]) -> str | None:
    """A type's canonical spelling with the class's parameters by name (`type-parameter-0-0 *` -> `factor_t *`);
    None for a parameter of a deeper template (a member template's) or a dependent type."""
    s = t.get_canonical().spelling
    if not s or "dependent" in s:
        return None
    bad = False

    def name(m):
        nonlocal bad
        depth, idx = int(m.group(1)), int(m.group(2))
        if depth != 0 or idx >= len(names):
            bad = True
            return m.group(0)
        return names[idx]
    s = _TPARAM.sub(name, s)
    return None if bad else s


_RECORDS = ("STRUCT_DECL", "CLASS_DECL", "UNION_DECL", "CLASS_TEMPLATE")
# standard containers whose `operator[]` gives a reference to their first template argument
_STD_CONTAINERS = ("vector", "array", "deque")


def _record_decl(t):
    """The record declaration of a type, through references and one pointer level (`x.f`, `p->f`); None when
    it has none (a builtin, a dependent or `auto` type)."""
    for _ in range(3):
        if t.kind.name in ("LVALUEREFERENCE", "RVALUEREFERENCE", "POINTER"):
            t = t.get_pointee()
            continue
        break
    for d in (t.get_declaration(), t.get_canonical().get_declaration()):
        if d is not None and d.kind.name in _RECORDS:
            return d
    return None


def _element_record(t):
    """The record of `x[i]` for `x` of type `t`: a pointer's or array's element, a std::vector's (array's,
    deque's) first template argument."""
    for _ in range(2):
        if t.kind.name in ("LVALUEREFERENCE", "RVALUEREFERENCE"):
            t = t.get_pointee()
    if t.kind.name == "POINTER":
        return _record_decl(t.get_pointee())
    if t.kind.name in ("CONSTANTARRAY", "INCOMPLETEARRAY"):
        return _record_decl(t.element_type)
    d = t.get_declaration()
    if d is not None and d.kind.name == "CLASS_TEMPLATE" and d.spelling in _STD_CONTAINERS and \
            d.semantic_parent is not None and d.semantic_parent.spelling == "std" and \
            t.get_num_template_arguments() >= 1:
        return _record_decl(t.get_template_argument_type(0))
    return None


def _unwrap(c):
    while c.kind.name in ("UNEXPOSED_EXPR", "PAREN_EXPR"):
        kids = list(c.get_children())
        if len(kids) != 1:
            break
        c = kids[0]
    return c


def _field(cursor):
    """The FIELD_DECL a dependent member access (`h.d_a`, `v[i].d_a`, `p->d_a`) names, found in the record of
    its base; None when the base's record is not known."""
    kids = list(cursor.get_children())
    toks = [t.spelling for t in cursor.get_tokens()]
    if len(kids) != 1 or len(toks) < 3 or toks[-2] not in (".", "->") or not re.fullmatch(r"\w+", toks[-1]):
        return None
    rec = _expr_record(kids[0])
    if rec is None:
        return None
    return next((f for f in rec.get_children() if f.kind.name == "FIELD_DECL" and f.spelling == toks[-1]), None)


def _expr_record(c, depth: int = 0):
    """The record (struct / class declaration) an expression's value is, read through the declarations when
    clang left its type dependent or `auto`: a variable's initializer, a subscript's container, a field."""
    if depth > 6:
        return None
    c = _unwrap(c)
    rec = _record_decl(c.type)
    if rec is not None:
        return rec
    k = c.kind.name
    if k == "DECL_REF_EXPR" and c.referenced is not None and c.referenced.kind.name == "VAR_DECL":
        v = c.referenced
        if _record_decl(v.type) is not None:
            return _record_decl(v.type)
        kids = [x for x in v.get_children() if x.kind.name not in ("TYPE_REF", "NAMESPACE_REF", "TEMPLATE_REF")]
        return _expr_record(kids[-1], depth + 1) if kids and "auto" in v.type.spelling else None
    if k == "ARRAY_SUBSCRIPT_EXPR":
        kids = list(c.get_children())
        if len(kids) == 2:
            base = _unwrap(kids[0])
            t = base.referenced.type if base.kind.name in ("MEMBER_REF_EXPR", "DECL_REF_EXPR") and \
                base.referenced is not None else base.type
            return _element_record(t)
        return None
    if k == "MEMBER_REF_EXPR":
        f = c.referenced if c.referenced is not None and c.referenced.kind.name == "FIELD_DECL" else _field(c)
        return _record_decl(f.type) if f is not None else None
    return None


def arg_type(cursor, names: list[str]) -> str:
    """The type of a launch argument inside a class template's member function, spelled with the class's
    parameters; `<dependent type>` when it cannot be read (the deduction then needs the other arguments)."""
    s = _spell(cursor.type, names)
    if s is not None:
        return s
    c = _unwrap(cursor)
    if c.kind.name == "MEMBER_REF_EXPR" and c.referenced is None:
        # `h.d_a`, `v[i].d_a` with `h` of a member struct of the class: the field's declared type
        f = _field(c)
        if f is not None:
            s = _spell(f.type, names)
            if s is not None:
                return s
    return "<dependent type>"


def class_instantiations(model, cls, text: str, value_of, canonical) -> list[dict]:
    """[{class parameter: value}] for each instantiation of class template `cls` written in the program's text
    (`C<uint32_t>`, `C<float, 4>`, `C<>`), parameters left out taking their defaults; a use inside the class
    itself or inside another template (`C<T>`) names no instantiation. `value_of(text)` evaluates a non-type
    argument, `canonical(spelling)` resolves a type's typedefs."""
    params = class_params(cls)
    if not params:
        return []
    ext = cls.extent
    lo, hi = ext.start.offset, ext.end.offset
    fname = str(ext.start.file) if ext.start.file is not None else None
    pat = re.compile(r"(?<![\w:.>])(?:::)?" + re.escape(cls.spelling) + r"\s*<([^;{}()]*?)>(?!\s*::\s*\w+\s*\()")
    spans = _template_spans(model)
    out: list[dict] = []
    for m in pat.finditer(text):
        if fname is None or fname == model.path or fname.endswith(model.path):
            if lo <= m.start() < hi:
                continue                    # the class's own uses of itself (`C<T>` in its methods)
        if any(s <= m.start() < e for s, e in spans):
            continue                        # inside another template: spelled with its parameters
        raw = [a.strip() for a in split_top_level(m.group(1))] if m.group(1).strip() else []
        if len(raw) > len(params):
            continue
        env: dict = {}
        for i, (name, kind, default) in enumerate(params):
            if i < len(raw):
                v = canonical(raw[i]) if kind == "type" else value_of(raw[i])
            else:
                v = default_value(kind, default, value_of)
                if kind == "type" and isinstance(v, str):
                    v = canonical(v)
            if v is None or v == "":
                env = None
                break
            env[name] = v
        if env and env not in out:
            out.append(env)
    return out


def _template_spans(model) -> list[tuple[int, int]]:
    """[(start, end)] of the file's templates (function templates, class templates and their out-of-line
    members), where a `C<T>` names the enclosing template's parameter, not an instantiation."""
    cached = getattr(model, "_cuport_template_spans", None)
    if cached is not None:
        return cached
    spans = [(f.node.start, f.node.end) for f in model.functions if f.is_template and f.node is not None]
    spans += [(n.start, n.end) for n in model.of_kind("CLASS_TEMPLATE", "CLASS_TEMPLATE_PARTIAL_SPECIALIZATION",
                                                       "FUNCTION_TEMPLATE")]
    try:
        model._cuport_template_spans = spans
    except AttributeError:
        pass
    return spans

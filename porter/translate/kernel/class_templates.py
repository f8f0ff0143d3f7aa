"""Class templates used in device code (issue 14, item 4): a small struct template of plain data
(`template <typename index_t> struct TensorDims { index_t sizes[2]; };`) used as `TensorDims<index_t>` in a
kernel instantiated with index_t = int64_t becomes the plain struct `TensorDims_i64` of the target, its fields'
types substituted. Only plain data: a template with constructors, methods, base classes or static members is
left to the existing refusals (its name stays unknown: CP907 at its use); a pointer field is refused by
use_struct like any struct's, except in a kernel parameter (flattened: struct_params.py)."""
from __future__ import annotations

import re

from porter.translate.kernel import ctype as ct

_PLAIN_CHILDREN = {"TEMPLATE_TYPE_PARAMETER", "TEMPLATE_NON_TYPE_PARAMETER", "FIELD_DECL", "TYPE_REF",
                   "INTEGER_LITERAL", "DECL_REF_EXPR", "UNEXPOSED_EXPR", "PAREN_EXPR", "BINARY_OPERATOR",
                   # translated per instance by ctors.py / methods.py like a plain struct's
                   "CONSTRUCTOR", "CXX_METHOD", "CXX_ACCESS_SPEC_DECL",
                   "FUNCTION_TEMPLATE"}      # a member function template (methods.is_method)


class FieldView:
    """A FIELD_DECL of a class template seen in one instantiation: its type is parsed with that
    instantiation's arguments (typeinfo.decl_type); everything else is the field's node."""

    def __init__(self, node, subst: dict):
        self._node = node
        self.subst = subst

    def __getattr__(self, name):
        return getattr(self._node, name)


def collect(model) -> dict:
    """{name: (parameters [(name, kind)], [(field, FIELD_DECL)])} of the file's plain-data class templates;
    {name: why} (a string) for the others, for the refusal's message."""
    out = {}
    for n in model.of_kind("CLASS_TEMPLATE"):
        if not n.spelling or n.spelling in out:
            continue
        kids = n.children
        fields = [(c.spelling, c) for c in kids if c.kind == "FIELD_DECL"]
        params = [(c.spelling, "type" if c.kind == "TEMPLATE_TYPE_PARAMETER" else "value") for c in kids
                  if c.kind in ("TEMPLATE_TYPE_PARAMETER", "TEMPLATE_NON_TYPE_PARAMETER")]
        # a pointer field is plain data here: a kernel parameter of it is flattened (struct_params.py), any
        # other use refused by use_struct; a reference field is not
        ptr = next((f for f, c in fields if "&" in (c.type or "")), None)
        other = next((c for c in kids if c.kind == "CXX_BASE_SPECIFIER"), None) or \
            next((c for c in kids if c.kind not in _PLAIN_CHILDREN), None)
        if not fields and not any(c.kind == "CXX_BASE_SPECIFIER" for c in kids):
            continue                        # a tag or trait (`struct RestrictPtrTraits { typedef T* P; }`)
        if ptr is not None:
            out[n.spelling] = f"struct template `{n.spelling}` holds a reference (`{ptr}`)"
        elif other is not None:
            what = {"CONSTRUCTOR": "a constructor", "CXX_METHOD": "member functions",
                    "CXX_BASE_SPECIFIER": "a base class", "TEMPLATE_TEMPLATE_PARAMETER": "a template template "
                    "parameter"}.get(other.kind, f"a `{other.kind.lower()}` member")
            out[n.spelling] = f"struct template `{n.spelling}` has {what}, not only plain data fields"
        elif not params or any(not p for p, _k in params):
            out[n.spelling] = f"struct template `{n.spelling}` has unnamed template parameters"
        else:
            out[n.spelling] = (params, fields)
    # `template <...> using PackedTensorAccessor64 = GenericPackedTensorAccessor<T, N, P, int64_t>;`: why the
    # template it names is not plain data (an alias of a plain one is not instantiated: refused as unknown)
    for n in model.of_kind("TYPE_ALIAS_TEMPLATE_DECL"):
        m = re.search(r"\busing\s+\w+\s*=\s*(?:typename\s+)?(?:\w+::)*(\w+)\s*<", n.text or "")
        if m and n.spelling and n.spelling not in out and isinstance(out.get(m.group(1)), str):
            out[n.spelling] = out[m.group(1)]
    return out


def rewrite(unit, spelling: str, subst) -> str:
    """`spelling` with each use of a plain class template (`TensorDims<index_t>`, `const S<long, 4> *`)
    replaced by the name of its instantiation, registered in the unit's structs; unchanged otherwise."""
    temps = getattr(unit, "class_templates", None)
    if not temps or "<" not in spelling:
        return spelling
    plain = [k for k, v in temps.items() if isinstance(v, tuple)]
    pat = re.compile(r"\b(" + "|".join(re.escape(k) for k in plain) + r")\s*<([^<>]*)>") if plain else None
    if pat is None:
        return spelling

    def one(m):
        name = instance(unit, m.group(1), m.group(2), subst)
        return name or m.group(0)
    return pat.sub(one, spelling)


def instance(unit, name: str, args_text: str, subst) -> str | None:
    params, fields = unit.class_templates[name]
    from porter.frontend.lexer import split_top_level
    raw = [a.strip() for a in split_top_level(args_text)]
    if len(raw) != len(params):
        return None
    inst: dict = {}
    suffix = []
    for (p, kind), a in zip(params, raw):
        if kind == "type":
            t = ct.parse(a, subst, unit.struct_names)
            if t.kind not in ("scalar", "struct", "vector"):
                return None                 # only value types name an instance (no pointers, no unknowns)
            inst[p] = t
            suffix.append(t.name if t.kind != "vector" else f"{t.elem.name}x{t.n}")
        else:
            v = subst.get(a) if subst and a in subst else None
            if not isinstance(v, int):
                from porter.translate.templates import _int_expr
                v = _int_expr(unit.model, a)
            if not isinstance(v, int):
                return None
            inst[p] = v
            suffix.append(str(v).replace("-", "m"))
    iname = f"{name}_{'_'.join(suffix)}"
    if iname not in unit.structs:
        unit.__dict__.setdefault("class_instances", {})[iname] = inst    # methods' template arguments
        unit.structs[iname] = [(f, FieldView(n, inst)) for f, n in fields]
        unit.struct_order.append(iname)
        unit.struct_names.add(iname)
    return iname


def member_name(model, n) -> str:
    """The member a MEMBER_REF_EXPR names; clang leaves it unnamed when its base is dependent (`dims.sizes`
    with `TensorDims<index_t> dims` in a template): the identifier after the last `.` / `->` of its text."""
    if n.spelling or not n.children:
        return n.spelling
    m = re.search(r"(?:\.|->)\s*(?:template\s+)?([A-Za-z_]\w*)\s*$", model.source.slice(n.children[0].end, n.end))
    return m.group(1) if m else n.spelling


def why_not(unit, spelling: str) -> str:
    """`: struct template `X` holds a pointer (`data`)` when `spelling` uses a class template that is not plain
    data, else ''."""
    for name, v in (getattr(unit, "class_templates", None) or {}).items():
        if isinstance(v, str) and re.search(r"\b" + re.escape(name) + r"\s*<", spelling or ""):
            return f" ({v})"
    return ""


_BINARY = {"+", "-", "*", "/", "%", "<", ">", "<=", ">=", "==", "!=", "&", "|", "^", "<<", ">>", "&&", "||", "="}
_UNARY = {"-", "+", "!", "~"}
_COMPOUND = {"+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<<=", ">>="}


class OperatorView:
    """A CALL_EXPR of an unresolved operator seen as the BINARY_OPERATOR / UNARY_OPERATOR it is in this
    instance (the emitter's operator code runs on it); kept alive per node by the emitter, since types are
    cached by id."""

    def __init__(self, node, kind: str, op: str, children: list):
        self._node = node
        self.kind = kind
        self.op = op
        self.children = children

    @property
    def strip(self):
        return self

    def __getattr__(self, name):
        return getattr(self._node, name)


def dependent_operator(em, n):
    """`a + b`, `-a` in a template that clang keeps as a call of an unresolved `operator+` (overloads of it are
    visible, e.g. cuda_fp16.h's for __half2: CALL_EXPR(lhs, DECL_REF '', rhs)) as an OperatorView, when every
    operand is a scalar in this instance: C's built-in operator is the one that applies. None otherwise (a
    struct or vector operand may have an overload: left to the call path, which refuses it)."""
    if n.kind != "CALL_EXPR" or n.spelling or len(n.children) not in (2, 3):
        return None
    cache = em.__dict__.setdefault("_operator_views", {})
    if id(n) in cache:
        return cache[id(n)][1]
    view = None
    callee = [c for c in n.children if c.kind in ("DECL_REF_EXPR", "UNEXPOSED_EXPR", "OVERLOADED_DECL_REF")
              and not c.spelling]
    if len(callee) > 1:         # an operand unnamed too (`Ktraits::kN / 2`, traits.py): the operator is the symbol
        callee = [c for c in callee if not re.search(r"\w", c.text or "")]
    if len(callee) == 1:
        mid = callee[0]
        operands = [c for c in n.children if c is not mid]
        try:        # the operator's own token (inside a macro's expansion the extents are the macro call's)
            op = next(iter(mid._cursor.get_tokens())).spelling
        except Exception:
            op = None
        if len(operands) == 2 and op in _BINARY and n.children[1] is mid:
            view = OperatorView(n, "BINARY_OPERATOR", op, operands)
        elif len(operands) == 2 and op in _COMPOUND and n.children[1] is mid:
            view = OperatorView(n, "COMPOUND_ASSIGNMENT_OPERATOR", op, operands)
        elif len(operands) == 1 and op in _UNARY and mid.start <= operands[0].start:
            view = OperatorView(n, "UNARY_OPERATOR", op, operands)
        kinds = [em.ty(c).kind for c in operands] if view is not None else []
        # `p += k` on a `T*` moves the pointer (built-in pointer arithmetic, no overload takes a pointer)
        moved = view is not None and view.op in ("+=", "-=") and kinds == ["pointer", "scalar"] and \
            em.ty(operands[1]).is_int
        # `(T *)p + k` with T dependent: built-in pointer arithmetic too (an overload needs a class or enum)
        moved = moved or view is not None and view.kind == "BINARY_OPERATOR" and (
            (view.op in ("+", "-") and kinds == ["pointer", "scalar"] and em.ty(operands[1]).is_int) or
            (view.op == "+" and kinds == ["scalar", "pointer"] and em.ty(operands[0]).is_int))
        if view is not None and not moved and any(k != "scalar" for k in kinds):
            view = None
        if view is not None and _enum_overload(em.u.fns_by_name.get("operator" + op, ())):
            view = None             # the file overloads it for an enum: not decided here, the call path refuses
    cache[id(n)] = (n, view)
    return view


def _enum_overload(fns) -> bool:
    """Whether an overload of an operator takes an enum: only then can it apply to arithmetic operands (C++
    looks overloads up for class and enum operands only; cuda_fp16.h's take __half). Unknown counts as yes."""
    for f in fns:
        for p in getattr(f, "params", None) or ():
            try:
                t = p.node._cursor.type.get_canonical()
                if t.kind.name in ("LVALUEREFERENCE", "RVALUEREFERENCE"):
                    t = t.get_pointee().get_canonical()
                if t.kind.name not in ("RECORD", "ELABORATED"):
                    return True
            except Exception:
                return True
    return False

"""Member functions and member operators in device code (issue 14 item 3) for the GLSL and OpenCL emitters.

A method becomes a free function that takes the object first: `a.add(x)` -> `Acc_add(a, x)`, `a + b` through a
member `operator+` -> `Acc_op_add(a, b)`. The object is a reference parameter `self` and goes through refs.py like
any `T&`: GLSL `inout` when the method writes a member (copy-in/copy-out, with refs' aliasing and barrier checks),
a plain copy when it only reads; OpenCL a pointer `(*self)`. Members named without an object (`sum`,
`this->sum`, `*this`) are `self`'s. A constructor whose body has statements is a function `T T_ctor(args)`
(ctors.py) whose `self` is a local built as C++ builds it.

Refused (CP907): a method called through a pointer (`p->f()`), `this` as a pointer value, virtual methods, a
method that returns a reference."""
from __future__ import annotations

import re

from porter.translate.kernel import ctype as ct
from porter.translate.kernel import refs
from porter.translate.kernel.target import PREC_PRIMARY, PREC_UNARY, E


class SelfDecl:
    """The object of a method (or the object a constructor builds) seen as a declaration named `self`; the
    method's own node answers everything else (its location for diagnostics)."""
    kind = "PARM_DECL"
    spelling = "self"

    def __init__(self, fn):
        self._node = fn.node
        self.children = []

    def __getattr__(self, name):
        return getattr(self._node, name)


class SelfParam:
    """The `self` parameter as user_call's binds see a model Param."""

    def __init__(self, decl, type_text):
        self.name = "self"
        self.node = decl
        self.type = type_text


class Named:
    """A device function under another name (`Acc_add` for the method `add` of `Acc`), for Target.function_name."""

    def __init__(self, fn, name):
        self._fn = fn
        self.name = name

    def __getattr__(self, name):
        return getattr(self._fn, name)


def self_decl(em, fn) -> SelfDecl:
    cache = em.u.__dict__.setdefault("_self_decls", {})
    if id(fn.node) not in cache:
        cache[id(fn.node)] = SelfDecl(fn)
    return cache[id(fn.node)]


_CLASSES = ("STRUCT_DECL", "CLASS_DECL", "CLASS_TEMPLATE", "CLASS_TEMPLATE_PARTIAL_SPECIALIZATION")


def is_method(fn) -> bool:
    """A non-static member function, or member function template (the constructors are ctors.py's)."""
    if fn.node.kind == "FUNCTION_TEMPLATE":
        if fn.node.parent is None or fn.node.parent.kind not in _CLASSES or \
                re.search(r"\bstatic\b", (fn.node.text or "").split("(")[0]):
            return False
    elif fn.node.kind != "CXX_METHOD":
        return False
    try:
        return not fn.node._cursor.is_static_method()
    except Exception:
        return True


def is_const(fn) -> bool:
    try:
        return bool(fn.node._cursor.is_const_method())
    except Exception:
        return False


def _is_operator_call(n) -> bool:
    if n.kind in ("BINARY_OPERATOR", "UNARY_OPERATOR", "COMPOUND_ASSIGNMENT_OPERATOR"):
        return True                 # on struct operands in a template instance (operator_fn)
    return n.kind == "CALL_EXPR" and n.spelling.startswith("operator") and \
        not (n.children and n.children[0].kind == "MEMBER_REF_EXPR")


def param_args(em, fn, n, args) -> list:
    """The arguments that go to fn's declared parameters (a member operator's first operand is its object)."""
    if is_method(fn) and _is_operator_call(n) and len(args) == len(fn.params) + 1:
        return args[1:]
    return args


def _object(em, fn, n, args):
    """(object node or None for this method's own object, the remaining arguments)."""
    if _is_operator_call(n):
        if len(args) != len(fn.params) + 1:
            em.fail(n, f"the operator call `{n.text}` (operands)")
        return args[0], args[1:]
    callee = n.children[0] if n.children else None
    while callee is not None and callee.kind in ("UNEXPOSED_EXPR", "PAREN_EXPR") and callee.children:
        callee = callee.children[0]
    if callee is None or callee.kind != "MEMBER_REF_EXPR":
        em.fail(n, f"the method call `{n.text}`")
    if not callee.children or callee.children[0].strip.kind == "CXX_THIS_EXPR":
        return None, args
    obj = callee.children[0]
    if "->" in em.model.source.slice(obj.end, callee.end):
        em.fail(n, f"the method call `{n.text}` through a pointer (call it on the object: `(*p).{fn.name}(...)`)")
    return obj, args


def self_arg(em, fn, n, args):
    """(key part, bind, remaining args) for the object of method call n."""
    try:
        virtual = fn.node._cursor.is_virtual_method()
    except Exception:
        virtual = False
    if virtual:
        em.fail(n, f"a call of the virtual method `{fn.name}`")
    obj, rest = _object(em, fn, n, args)
    d = self_decl(em, fn)
    const = is_const(fn)
    refs.seed_self_writes(em, fn, d, const)
    if obj is not None:
        t = em.ty(obj).unqualified()
        if t.kind != "struct":
            em.fail(obj, f"the method call `{n.text}` on a `{t}`")
        pt = _ref_type(t, const)
        p = SelfParam(d, ("const " if const else "") + t.name + " &")
        kp, bind = refs.ref_arg(em, fn, p, pt, obj)
        return kp, bind, rest
    # this method's own object, passed on
    fr = em.frame
    sd = getattr(fr, "self_decl", None)
    if sd is None:
        em.fail(n, f"the method call `{n.text}` without an object")
    t = fr.self_type
    pt = _ref_type(t, const)
    p = SelfParam(d, ("const " if const else "") + t.name + " &")
    pl = refs.self_place(em)
    written = not const and refs.writes(em, fn, d)
    lv = self_value(em, n, "rw" if written else "r")
    if em.t.native_pointers:
        return ("ref", pl.space, written), ("ref", p, E(f"&{lv.paren(PREC_UNARY)}", ct.pointer(pt)), pl, pt, n), rest
    return ("ref", written), ("ref", p, lv, pl, pt, n), rest


def _ref_type(t, const):
    import dataclasses
    return dataclasses.replace(t, const=const, ref=True)


def class_subst(em, fn, t, subst: dict) -> dict:
    """The template arguments a method or constructor of a struct template's instance `t` runs with (its
    own; a caller's parameter of the same name is another thing)."""
    inst = getattr(em.u, "class_instances", {}).get(t.name) if t is not None else None
    parent = fn.node.parent
    if inst is None or parent is None or parent.kind != "CLASS_TEMPLATE":
        return subst
    # a member function template: its own arguments (deduced at the call) beside the class's
    return {**inst, **subst} if fn.is_template else dict(inst)


def object_type(em, fn, n):
    """The struct type of the object of method call n (None when it cannot be told)."""
    if n.kind in ("BINARY_OPERATOR", "UNARY_OPERATOR", "COMPOUND_ASSIGNMENT_OPERATOR"):
        return em.ty(n.children[0]).unqualified() if n.children else None
    if _is_operator_call(n):
        args = em.call_args(n)
        return em.ty(args[0]).unqualified() if args else None
    callee = n.children[0] if n.children else None
    while callee is not None and callee.kind in ("UNEXPOSED_EXPR", "PAREN_EXPR") and callee.children:
        callee = callee.children[0]
    if callee is None or callee.kind != "MEMBER_REF_EXPR":
        return None
    if not callee.children or callee.children[0].strip.kind == "CXX_THIS_EXPR":
        return getattr(em.frame, "self_type", None)
    return em.ty(callee.children[0]).unqualified()


def enter(em, fn, fr, binds):
    """A method's frame: its object is the `self` parameter (the first bind)."""
    if binds and isinstance(binds[0][1], SelfParam):
        fr.self_decl = binds[0][1].node
        fr.self_type = binds[0][4].unqualified()


def name(fn, fr, ctor=None):
    """`Acc_add`, `Acc_op_add`, `Acc_ctor`: methods of different structs never meet under one name."""
    if ctor is not None:
        return Named(fn, f"{ctor.name}_ctor")
    t = getattr(fr, "self_type", None)
    if t is None:
        return fn
    return Named(fn, f"{t.name}_{em_ident_free(fn.name)}")


def em_ident_free(nm: str) -> str:
    from porter.translate.kernel.target import OPERATOR_NAMES
    if nm.startswith("operator") and not nm[8:9].isalnum() and nm[8:9] != "_":
        return "op_" + "".join(OPERATOR_NAMES.get(c, "x") for c in nm[8:].strip())
    return nm


def self_value(em, n, mode="r") -> E:
    """The object of the method (or constructor) being emitted."""
    fr = em.frame
    d = getattr(fr, "self_decl", None)
    if d is None:
        em.fail(n, f"`{n.text}` outside a method")
    if refs.bound(em, d):
        e = refs.use(em, n, d, mode)
        return E(e.text, fr.self_type, PREC_PRIMARY)
    return E(em.name_of(d), fr.self_type)


def is_self_member(n) -> bool:
    """`sum` or `this->sum` inside a method: a member of the method's own object."""
    return n.kind == "MEMBER_REF_EXPR" and (not n.children or n.children[0].strip.kind == "CXX_THIS_EXPR")


def self_member(em, n, mode="r") -> E:
    if n.ref_kind not in ("FIELD_DECL", None):
        em.fail(n, f"the member `{n.spelling}` used as a value")
    base = self_value(em, n, mode)
    from porter.translate.kernel.class_templates import member_name
    nm = member_name(em.model, n) or n.spelling
    if not nm:
        em.fail(n, f"member access `{n.text}`")
    t = em.ty(n)
    return E(f"{base.paren(PREC_PRIMARY)}.{em.t.ident(nm)}", t.unqualified() if t.kind != "array" else t)


def is_deref_this(n) -> bool:
    return n.kind == "UNARY_OPERATOR" and n.op == "*" and bool(n.children) and \
        n.children[0].strip.kind == "CXX_THIS_EXPR"


def _members(em, t, name: str, nargs: int) -> list:
    """The device methods `name` of struct (instance) t taking nargs arguments, as model Functions."""
    fields = em.u.structs.get(t.name) if t is not None and t.kind == "struct" else None
    if not fields:
        return []
    s = fields[0][1].parent
    out = []
    for c in s.children:
        f = em.u.fn_by_node.get(id(c)) if c.kind in ("CXX_METHOD", "FUNCTION_TEMPLATE") and c.spelling == name \
            else None
        if f is not None and f.body is not None and f.is_device_code and len(f.params) == nargs:
            out.append(f)
    return out


def dependent_method(em, n):
    """The method a call `obj.f(args)` names in a template, where clang leaves it unresolved (CALL_EXPR ''
    over MEMBER_REF_EXPR ''): looked up in the struct template's instance by name and argument count."""
    if em.frame is None or n.kind != "CALL_EXPR" or n.spelling or not n.children:
        return None
    callee = n.children[0]
    if callee.kind != "MEMBER_REF_EXPR" or callee.spelling:
        return None
    from porter.translate.kernel.class_templates import member_name
    name = member_name(em.model, callee)
    if not name:
        return None
    t = object_type(em, None, n)
    found = _members(em, t, name, len(n.children) - 1)
    if len(found) > 1:
        em.fail(n, f"the call `{n.text}` (which overload of `{name}` is meant)")
    return found[0] if found else None


def operator_fn(em, n, op: str, operands: list):
    """The member `operator<op>` of a struct operand's type (a template keeps `p + q` as a BINARY_OPERATOR)."""
    t = em.ty(operands[0]).unqualified()
    if t.kind != "struct":
        return None
    found = _members(em, t, "operator" + op, len(operands) - 1)
    if len(found) != 1:
        em.fail(n, f"the operator `{op}` on `{t.name}` (no device member `operator{op}` taking "
                f"{len(operands) - 1} operand(s))")
    return found[0]


def result_type(em, fn, t):
    """What method fn returns when called on an object of type t."""
    from porter.frontend.model import result_type_spelling
    subst = class_subst(em, fn, t, dict(em.frame.subst) if em.frame is not None else {})
    rs = result_type_spelling(fn.node, canonical=False) or "void"
    cs = result_type_spelling(fn.node) or rs
    return em.parse_type(cs if "type-parameter" not in cs else rs, subst)


def struct_operands(em, n) -> bool:
    """`p + q` whose left operand is a struct (a template instance's operator, C has none)."""
    return n.kind == "BINARY_OPERATOR" and n.op not in ("=", ",") and len(n.children) == 2 and \
        em.ty(n.children[0]).kind == "struct"


def operator_call(em, n) -> E:
    fn = operator_fn(em, n, n.op, list(n.children))
    return em.user_call(fn, n, args=list(n.children), ret=result_type(em, fn, em.ty(n.children[0]).unqualified()))


def address_refusal(em, n) -> str:
    """Why `&x` (n) has no translation here: an argument of a call cuport resolved to no device function (a
    member function of a class template that is not plain data, BlockLoad's `Load(&(d[i]), ...)`), or an
    address outside a pointer context."""
    p, c = n.parent, n
    while p is not None and p.kind in ("UNEXPOSED_EXPR", "PAREN_EXPR"):
        p, c = p.parent, p
    if p is None or p.kind != "CALL_EXPR" or not p.children or p.children[0] is c:
        return "taking an address outside a pointer context"
    callee = p.children[0]
    while callee.kind in ("UNEXPOSED_EXPR", "PAREN_EXPR") and callee.children:
        callee = callee.children[0]
    from porter.translate.kernel.class_templates import member_name
    name = (member_name(em.model, callee) if callee.kind == "MEMBER_REF_EXPR" else None) or em.callee_name(p) or "?"
    what = f"the address `{n.text}` passed to `{name}`, which is no device function cuport translates"
    if callee.kind == "MEMBER_REF_EXPR" and callee.children:
        obj = callee.children[0]
        canon = getattr(getattr(obj, "canonical_type", None), "spelling", "") or obj.type or ""
        if em.ty(obj).kind != "struct" and canon:
            from porter.translate.kernel.class_templates import why_not
            what += f" (a member function of `{canon}`{why_not(em.u, canon)})"
    return what

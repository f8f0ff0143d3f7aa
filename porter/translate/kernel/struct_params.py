"""By-value kernel parameters of a struct holding pointers (issue 14 item 2): neither OpenCL C 1.2 kernel
arguments nor GLSL blocks can carry a pointer, so the parameter is flattened. Each field becomes its own kernel
parameter, in field order, named `<param>_<field>`: a pointer field a buffer (binding / `__global` argument)
whose element type is the pointee's, or for `void *` the type of the first `(T *)` cast applied to it (other
casts are views of the same buffer, as for any buffer); a one-dimensional array field of numbers a read-only
buffer of its elements (TensorInfo's `sizes[25]`); every other field a by-value parameter. The manifest
marks each with `field_of` (the parameter, the field, and an array field's element count) so a host (and `cuport verify`, whose spec lists `<param>_<field>` arguments) can
fill them from the struct. The struct itself is never used whole: a copy, a member function, the address of a
field or a write to one is refused at its line (the fields no longer live together). One exception: the struct
passed whole to a device function (`IndexToOffset::get(i, info)`, by value or by reference) whose parameter is
used the same way (fields only, never written): the fields travel as separate arguments, the parameter is flat
in that function too (its buffers the caller's, bound like any pointer argument)."""
from __future__ import annotations

from dataclasses import replace

from porter.translate.kernel import ctype as ct
from porter.translate.kernel.pointers import Root
from porter.translate.kernel.typeinfo import CASTS, element

_WRAPS = ("UNEXPOSED_EXPR", "PAREN_EXPR")


def holds_pointer(em, name: str) -> bool:
    """The struct `name` (defined in this file) has a pointer field of its own."""
    return name in em.u.structs and any(em.decl_type(f).kind == "pointer" for _n, f in em.u.structs[name])


def _up(n):
    """The first ancestor of n that is not a parenthesis or an implicit conversion, and the child below it."""
    c, p = n, n.parent
    while p is not None and p.kind in _WRAPS:
        c, p = p, p.parent
    return p, c


def _member_uses(em, fn, decl):
    """[(DECL_REF_EXPR, MEMBER_REF_EXPR or None)] of every use of the parameter in the function's body; a use
    as a whole argument of a call (checked by whole_arg where the call is emitted) is left out."""
    out = []
    for n in fn.body.walk() if fn.body is not None else ():
        if n.kind == "DECL_REF_EXPR" and n.ref is decl:
            if _call_of_arg(em, n) is not None:
                continue
            p, _c = _up(n)
            ok = p is not None and p.kind == "MEMBER_REF_EXPR" and p.children and p.children[0].strip is not None \
                and "->" not in em.model.source.slice(n.end, p.end)
            out.append((n, p if ok else None))
    return out


def _call_of_arg(em, d):
    """The call of which the struct `d` (a DECL_REF_EXPR) is an argument, passed whole by reference or through
    a copy (clang's `T(d)` construction of a by-value parameter), else None."""
    p, c = _up(d)
    if p is not None and p.kind == "CALL_EXPR" and len(p.children) == 1 and p.spelling and \
            em.ty(p).unqualified().name == em.ty(d).unqualified().name:
        p, c = _up(p)        # the copy constructing a by-value parameter
    if p is not None and p.kind == "CALL_EXPR" and p.children and p.children[0] is not c:
        return p
    return None


def _arg_decl(em, a):
    """The DECL_REF_EXPR a call argument is (through parentheses and a copy of the same type), else None."""
    s = a
    while s.kind in _WRAPS and len(s.children) == 1:
        s = s.children[0]
    if s.kind == "CALL_EXPR" and len(s.children) == 1 and s.spelling:
        c = s.children[0]
        while c.kind in _WRAPS and len(c.children) == 1:
            c = c.children[0]
        if em.ty(s).unqualified().name == em.ty(c).unqualified().name:
            s = c
    return s if s.kind == "DECL_REF_EXPR" and s.ref is not None else None


def _fields(em) -> dict:
    """id(parameter) -> fields of the flat struct parameters of the function being emitted."""
    return em.flat_params if em.frame.is_kernel else em.frame.__dict__.get("flat_params", {})


def whole_arg(em, fn, p, pt, a):
    """(key part, bind) for argument `a` of parameter p of device function fn when `a` is a flat struct
    parameter passed whole, else None. The callee must use the parameter as the kernel does (its fields only,
    never written): checked here, at the call (the first specialisation checks it once)."""
    if not em.flat_params:
        return None
    d = _arg_decl(em, a)
    fields = _fields(em).get(id(d.ref)) if d is not None else None
    if fields is None:
        return None
    at = em.ty(d).unqualified()
    if pt.kind != "struct" or pt.unqualified().name != at.name:
        em.fail(a, f"the struct parameter `{d.spelling}` passed whole as `{p.name}` of `{fn.name}` (of type "
                   f"`{ct.spell(pt)}`; it holds pointers, which become separate buffers: only a parameter of its "
                   "own type can take its fields)")
    _field_uses(em, fn, p.node, p.name, at)
    key = tuple(em.t.pointer_param_key(em, em.t.binding_value(em, v[1])[0]) if v[0] == "buffer" else ("val",)
                for v in fields.values())
    return ("flat", key), ("flat", p, fields, None, pt, a)


def flat_args(em, fields, a) -> list[str]:
    """The arguments that carry the fields of a flat struct parameter to a device function (whole_arg)."""
    out = []
    for v in fields.values():
        if v[0] == "scalar":
            out.append(em.t.scalar_param(em, None, v[1], v[2]).text)
            continue
        root, off = em.t.binding_value(em, v[1])
        if em.t.native_pointers:
            if off is not None:
                em.fail(a, f"`{a.text}`: a field of it re-pointed")
            out.append(root.name)
        else:
            out += em.t.pointer_arg(em, root, off, a)
    return out


class _FieldParam:
    """A field of a flat struct parameter of a device function, as a pointer parameter's declaration."""
    kind = "PARM_DECL"
    children = ()

    def __init__(self, fnode, name):
        self._node = fnode
        self.spelling = name

    def __getattr__(self, name):
        return getattr(self._node, name)


def flat_params(em, fr, p, pname, fields) -> list[str]:
    """The parameters of a device function that take a flat struct parameter's fields (flat_args), and the
    parameter made flat in its frame."""
    out, mine = [], {}
    for fname, v in fields.items():
        name = em.fresh(f"{pname}_{em.t.ident(fname)}")
        if v[0] == "scalar":
            out.append(f"{em.t.type_name(v[2], em)} {name}")
            mine[fname] = ("scalar", name, v[2])
            continue
        root = em.t.binding_value(em, v[1])[0]
        fp = _FieldParam(root.decl, name)
        # a read-only buffer (an array field, a pointer to const) stays const in the callee (OpenCL's qualifiers)
        origin = getattr(em, "root_origin", {}).get(id(root), root)
        info = em.buffers.get(origin.name)
        elem = replace(root.elem, const=True) if info is not None and info["const"] else root.elem
        out += em.t.pointer_param(em, fr, fp, name, root, ct.pointer(elem))
        mine[fname] = ("buffer", fr.ptrs[id(fp)])
    fr.__dict__.setdefault("flat_params", {})[id(p.node)] = mine
    return out


def _field_of(em, m, names):
    """The field name `m` (`p.f`) reads, None for a member function. By name: in a struct template's instance
    clang's declaration is the specialisation's field (or none, where the base is dependent), not the pattern's."""
    from porter.translate.kernel.class_templates import member_name
    r = m.ref
    if r is not None and r.kind != "FIELD_DECL":
        return None
    name = member_name(em.model, m)
    return name if name in names else None


def _writes(m, array=False) -> bool:
    """The member expression is written or its address taken (`p.f = x`, `p.f++`, `&p.f`; for an array field
    also an element of it, `p.f[i] = x`)."""
    p, c = _up(m)
    while array and p is not None and p.kind == "ARRAY_SUBSCRIPT_EXPR" and p.children[0] is c:
        p, c = _up(p)
    if p is None:
        return False
    if p.kind in ("BINARY_OPERATOR", "COMPOUND_ASSIGNMENT_OPERATOR") and p.op in \
            ("=", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<<=", ">>=") and p.children[0] is c:
        return True
    return p.kind == "UNARY_OPERATOR" and p.op in ("++", "--", "post++", "post--", "&")


def _void_elem(em, fnode, uses):
    """The element type of a `void *` field: that of the first `(T *)` cast of it, in source order."""
    for _d, m in sorted(uses, key=lambda u: u[1].start):
        p, _c = _up(m)
        if p is not None and p.kind in CASTS:
            t = em.ty(p)
            if t.kind == "pointer" and t.elem.kind != "void":
                return t.elem
    em.fail(fnode, f"the `void *` field `{fnode.spelling}` never cast to a typed pointer (its element type "
                   "is unknown)")


def _field_uses(em, fn, decl, pname, t) -> dict:
    """{field: [(DECL_REF_EXPR, MEMBER_REF_EXPR)]} of the struct parameter `decl` in fn's body; any other use
    refused (whole, a member function, a write)."""
    names = {f for f, _n in em.u.structs[t.name]}
    by_field: dict[str, list] = {}
    for d, m in _member_uses(em, fn, decl):
        if m is None:
            em.fail(d, f"the struct parameter `{pname}` used whole (it holds pointers, which become separate "
                       "buffers: only its fields can be used, or it passed whole to a device function that reads only "
                       "its fields)")
        f = _field_of(em, m, names)
        if f is None:
            em.fail(m, f"`{m.text}`: a member function of the pointer-holding struct parameter `{pname}` (its "
                       "fields become separate parameters)")
        if _writes(m, em.decl_type(dict(em.u.structs[t.name])[f]).kind == "array"):
            em.fail(m, f"a write to or the address of `{m.text}` (a field of the pointer-holding struct parameter "
                       f"`{pname}`, flattened into separate parameters)")
        by_field.setdefault(f, []).append((d, m))
    return by_field


def flatten(em, fn, p, t) -> None:
    """Registers the fields of the struct parameter `p` (of struct type t) as kernel parameters."""
    by_field = _field_uses(em, fn, p.node, p.name, t)
    fields = {}
    for fname, fnode in em.u.structs[t.name]:
        ft = em.decl_type(fnode)
        cuda_name = f"{p.name}_{fname}"
        name = em.fresh(em.t.ident(cuda_name))
        if ft.kind == "pointer":
            elem = element(ft)
            if elem.kind == "pointer":
                em.fail(fnode, f"the pointer-to-pointer field `{fname}` of struct `{t.name}`")
            if elem.kind == "void":
                elem = _void_elem(em, fnode, by_field.get(fname, []))
            if elem.kind == "struct":
                em.use_struct(elem.name, fnode)
            root = Root(name, "buffer", elem, "global", fnode)
            info = {"name": name, "cuda_name": cuda_name, "elem": elem, "const": elem.const or ft.elem.const,
                    "restrict": ft.restrict, "root": root, "node": fnode, "field_of": [p.name, fname]}
            em.buffers[name] = info
            em.params.append({"name": cuda_name, "kind": "buffer", "info": info})
            fields[fname] = ("buffer", em.t.bind_param_pointer(em, root, fnode))
        elif ft.kind == "array" and len(ft.dims) == 1 and ft.dims[0] and ft.elem.kind in ("scalar", "vector"):
            # an array field: a read-only buffer of its elements (no kernel argument of OpenCL C carries one)
            elem = ft.elem.unqualified()
            root = Root(name, "buffer", elem, "global", fnode)
            info = {"name": name, "cuda_name": cuda_name, "elem": elem, "const": True, "restrict": False,
                    "root": root, "node": fnode, "field_of": [p.name, fname, ft.dims[0]]}
            em.buffers[name] = info
            em.params.append({"name": cuda_name, "kind": "buffer", "info": info})
            fields[fname] = ("buffer", em.t.bind_param_pointer(em, root, fnode))
        elif ft.kind in ("scalar", "vector", "struct"):
            if ft.kind == "struct":
                em.use_struct(ft.name, fnode)     # a struct of structs holding pointers: refused there
            info = {"name": name, "cuda_name": cuda_name, "type": ft, "node": fnode, "assigned": False,
                    "field_of": [p.name, fname]}
            em.scalars.append(info)
            em.params.append({"name": cuda_name, "kind": "scalar", "info": info})
            fields[fname] = ("scalar", name, ft)
        else:
            em.fail(fnode, f"field `{fname}` of `{ct.spell(ft)}` in the struct parameter `{p.name}` (a struct "
                           "holding pointers is flattened into separate parameters: numbers, vectors, plain structs, "
                           "pointers and one-dimensional arrays of numbers only)")
    em.flat_params[id(p.node)] = fields


def lookup(em, n):
    """("buffer", PtrBinding) or ("scalar", name, type) for `p.f` of a flattened kernel parameter, else None."""
    if not em.flat_params or n.kind != "MEMBER_REF_EXPR" or not n.children:
        return None
    b = n.children[0]
    while b.kind in _WRAPS and len(b.children) == 1:
        b = b.children[0]
    if b.kind != "DECL_REF_EXPR" or b.ref is None:
        return None
    fields = _fields(em).get(id(b.ref))
    if fields is None:
        return None
    f = _field_of(em, n, fields)
    return fields.get(f) if f is not None else None

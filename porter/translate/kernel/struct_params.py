"""By-value kernel parameters of a struct holding pointers (issue 14 item 2): neither OpenCL C 1.2 kernel
arguments nor GLSL blocks can carry a pointer, so the parameter is flattened. Each field becomes its own kernel
parameter, in field order, named `<param>_<field>`: a pointer field a buffer (binding / `__global` argument)
whose element type is the pointee's, or for `void *` the type of the first `(T *)` cast applied to it (other
casts are views of the same buffer, as for any buffer); a one-dimensional array field of numbers a read-only
buffer of its elements (TensorInfo's `sizes[25]`); every other field a by-value parameter. The manifest
marks each with `field_of` (the parameter, the field, and an array field's element count) so a host (and `cuport verify`, whose spec lists `<param>_<field>` arguments) can
fill them from the struct. The struct itself is never used whole: a copy, a call argument, a member function,
the address of a field or a write to one is refused at its line (the fields no longer live together)."""
from __future__ import annotations

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
    """[(DECL_REF_EXPR, MEMBER_REF_EXPR or None)] of every use of the parameter in the kernel's body."""
    out = []
    for n in fn.body.walk() if fn.body is not None else ():
        if n.kind == "DECL_REF_EXPR" and n.ref is decl:
            p, _c = _up(n)
            ok = p is not None and p.kind == "MEMBER_REF_EXPR" and p.children and p.children[0].strip is not None \
                and "->" not in em.model.source.slice(n.end, p.end)
            out.append((n, p if ok else None))
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


def flatten(em, fn, p, t) -> None:
    """Registers the fields of the struct parameter `p` (of struct type t) as kernel parameters."""
    uses = _member_uses(em, fn, p.node)
    names = {f for f, _n in em.u.structs[t.name]}
    by_field: dict[str, list] = {}
    for d, m in uses:
        if m is None:
            em.fail(d, f"the struct parameter `{p.name}` used whole (it holds pointers, which become separate "
                       "buffers: only its fields can be used)")
        f = _field_of(em, m, names)
        if f is None:
            em.fail(m, f"`{m.text}`: a member function of the pointer-holding struct parameter `{p.name}` (its "
                       "fields become separate parameters)")
        if _writes(m, em.decl_type(dict(em.u.structs[t.name])[f]).kind == "array"):
            em.fail(m, f"a write to or the address of `{m.text}` (a field of the pointer-holding struct parameter "
                       f"`{p.name}`, flattened into separate parameters)")
        by_field.setdefault(f, []).append((d, m))
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
    if not em.flat_params or n.kind != "MEMBER_REF_EXPR" or not n.children or not em.frame.is_kernel:
        return None
    b = n.children[0]
    while b.kind in _WRAPS and len(b.children) == 1:
        b = b.children[0]
    if b.kind != "DECL_REF_EXPR" or b.ref is None:
        return None
    fields = em.flat_params.get(id(b.ref))
    if fields is None:
        return None
    f = _field_of(em, n, fields)
    return fields.get(f) if f is not None else None

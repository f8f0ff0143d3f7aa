"""A struct that crosses to the host (a buffer's element, a by-value parameter, a device variable, or a struct
inside one) must have, in the translation's C model (manifest.c_layout over the translated field types), the
bytes clang gives it in CUDA: the hosts copy it as C lays it out. `__attribute__((packed))` with padding,
`alignas`, a vtable and bit-fields change C's layout in ways the field types do not show, so such a struct is
refused (CP907) at its definition rather than read at the wrong offsets. Structs local to the kernel are free."""
from __future__ import annotations

from porter.translate.kernel import struct_bases
from porter.translate.kernel.ctype import CType
from porter.translate.kernel.manifest import c_layout, struct_offsets


def check_boundary(em) -> None:
    """Every struct the host copies: buffer elements (device variables included) and by-value parameters."""
    roots = [info["elem"].unqualified() for info in em.buffers.values()] + \
        [s["type"].unqualified() for s in em.scalars]
    seen: set = set()
    for t in roots:
        while t is not None and t.kind == "array":
            t = t.elem
        if t is not None and t.kind == "struct":
            _tree(em, t.name, seen)


def _nested(em, name: str) -> list[str]:
    out = []
    for _f, fnode in em.u.structs.get(name, []):
        ft = em.decl_type(fnode)
        while ft is not None and ft.kind == "array":
            ft = ft.elem
        if ft is not None and ft.kind == "struct":
            out.append(ft.name)
    return out


def _tree(em, name: str, seen: set) -> None:
    if name in seen or name not in em.u.structs:
        return
    seen.add(name)
    base = struct_bases.base_name(em, name)
    for inner in _nested(em, name) + ([base] if base else []):
        _tree(em, inner, seen)       # a base's own layout too: its fields lead this one's (struct_bases.py)
    check(em, name)


def check(em, name: str) -> None:
    decl = em.u.struct_decls.get(name)
    cursor = getattr(decl, "_cursor", None)
    if cursor is None:                  # a struct template's instance (class_templates.py): no record of its own
        return
    for _fname, fnode in em.u.structs[name]:
        fc = getattr(fnode, "_cursor", None)
        if fc is not None and fc.is_bitfield():
            em.fail(fnode, f"a bit-field in struct `{name}` (its bytes are not a field's)")
    t = cursor.type
    size = t.get_size()
    if size < 0:                        # incomplete or dependent: nothing to compare with
        return
    names, todo = set(), [name]
    while todo:                         # the structs whose layouts make up this one's
        n = todo.pop()
        if n not in names and n in em.u.structs:
            names.add(n)
            todo += _nested(em, n)
    structs = {k: em.struct_fields(k) for k in names}
    try:
        mine = struct_offsets(name, structs, "c")
        own = c_layout(CType("struct", name), structs)[0]
    except (KeyError, ValueError):      # a member type without a C layout here: the translators refuse it
        return
    for (fname, _fnode), (_n, _t, off, _s) in zip(em.u.structs[name], mine):
        real = t.get_offset(fname)
        if real >= 0 and real // 8 != off:
            em.fail(decl, f"struct `{name}`: field `{fname}` is at byte {real // 8} in CUDA, at {off} in the "
                          "translation (packed or aligned struct, or a vtable)")
    if own != size:
        em.fail(decl, f"struct `{name}` is {size} bytes in CUDA, {own} in the translation (packed or aligned "
                      "struct, or a vtable)")

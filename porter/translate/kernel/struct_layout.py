"""A struct a kernel uses must have, in the translation's C model (manifest.c_layout over the translated field
types), the bytes clang gives it in CUDA: the hosts copy structs (buffers, by-value parameters) as C lays them
out. `__attribute__((packed))`, `alignas` and bit-fields change C's layout in ways the field types do not show,
so such a struct is refused (CP907) at its definition rather than read at the wrong offsets."""
from __future__ import annotations

from porter.translate.kernel.manifest import c_layout, struct_offsets


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
    structs = {k: em.struct_fields(k) for k in [*em.struct_used, name]}
    mine = struct_offsets(name, structs, "c")
    from porter.translate.kernel.ctype import CType
    own = c_layout(CType("struct", name), structs)[0]
    for (fname, fnode), (_n, _t, off, _s) in zip(em.u.structs[name], mine):
        real = t.get_offset(fname)
        if real >= 0 and real // 8 != off:
            em.fail(decl, f"struct `{name}`: field `{fname}` is at byte {real // 8} in CUDA, at {off} in the "
                          "translation (packed or aligned struct)")
    if own != size:
        em.fail(decl, f"struct `{name}` is {size} bytes in CUDA, {own} in the translation (packed or aligned "
                      "struct)")

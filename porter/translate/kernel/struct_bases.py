"""Structs with a base class (issue 14 item 2: `struct Derived : Base { int stride; };`): C has no inheritance, so
the translation's struct lists the base's fields first, then its own, as C++ lays out a class with one non-virtual
base (the base subobject at offset 0, the class's fields after it). Only that case: several bases, a virtual base,
a base defined elsewhere (a template instance, another file) or a field named like one of the base's leave the
struct with its own fields, which the layout check (struct_layout.py) then refuses where the host would copy it
(its size is not theirs). Where the C++ layout is not C's after all (the class's fields in the base's tail padding,
a vtable), the same check refuses it at its definition: check_base compares the base's own layout too."""
from __future__ import annotations

import re


def base_of(unit, n) -> str | None:
    """The name of the one non-virtual base of the struct n whose fields are known here, else None."""
    bases = [c for c in n.children if c.kind == "CXX_BASE_SPECIFIER"]
    if len(bases) != 1:
        return None
    head = (n.text or "").split("{", 1)[0]          # `struct D : public virtual B`
    if re.search(r"\bvirtual\b", head):
        return None
    name = re.sub(r"^(?:struct|class)\s+", "", (bases[0].spelling or "").strip())
    return name if re.fullmatch(r"\w+", name) and name in unit.structs else None


def inherited(unit, n, own: list) -> list | None:
    """The base's fields (its own base's first) for the struct n with fields `own`, else None."""
    base = base_of(unit, n)
    if base is None:
        return None
    fields = unit.structs[base]
    if {f for f, _c in fields} & {f for f, _c in own}:
        return None                     # a field hiding the base's: two members of one name
    unit.__dict__.setdefault("struct_bases", {})[n.spelling] = base
    return list(fields)


def base_name(em, name: str) -> str | None:
    return getattr(em.u, "struct_bases", {}).get(name)

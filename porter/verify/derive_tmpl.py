"""Structs of a class template read through one instance (quicksort's `block_record<T>` of gqsort_kernel<uint>):
in a template kernel clang leaves `block_record<T>` dependent (no layout, its `pivot` of type `T`), so the spec
struct is built from the template's own fields with the instance's arguments put in. Only plain records are
built: fields of scalar types or the template's type parameters (and constant arrays of them), no base class,
no packing or alignment attribute, no non-type parameter; anything else is refused with the reason."""
from __future__ import annotations

import re

from porter.verify.derive_types import _FIELD_LEAVES, _dtype, named_type

_LAYOUT_ATTRS = ("PACKED_ATTR", "ALIGNED_ATTR")


def _split_args(text: str) -> list[str]:
    out, depth, cur = [], 0, ""
    for ch in text:
        if ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
            continue
        depth += ch in "<(" and 1 or (-1 if ch in ">)" else 0)
        cur += ch
    return out + ([cur.strip()] if cur.strip() else [])


def _scalar(model, spelled: str) -> str | None:
    """The spec dtype of a scalar type spelling (`unsigned int`, a typedef `uint`), or None."""
    dt = _dtype(spelled)
    if dt is None:
        t = named_type(model, spelled)
        dt = _FIELD_LEAVES.get(t.kind.name) if t is not None else None
    return dt


_INSTANCE = re.compile(r"\s*(?:(?:const|volatile|struct|class)\s+)*([A-Za-z_]\w*)\s*<(.*)>\s*(?:const\s*)?")


def is_instance(spelled: str) -> bool:
    """`block_record<unsigned int>`, not a member type of one (`typename tile_traits<32, int>::input_t`)."""
    return _INSTANCE.fullmatch(spelled or "") is not None


def template_record(model, spelled: str, out: dict):
    """The spec name of the class-template instance spelled `Name<arg, ...>` (the instance's arguments already
    put in), its definition added to `out` {name: fields}; or a str saying why it is not built."""
    m = _INSTANCE.fullmatch(spelled or "")
    if m is None:
        return f"`{spelled}` is not a class template's instance"
    tname, args = m.group(1), _split_args(m.group(2))
    try:
        temps = [n._cursor for n in model.of_kind("CLASS_TEMPLATE") if n.spelling == tname]
    except Exception:                   # no clang tree behind the model
        return f"`{spelled}`: its template is not known here"
    temps = [c for c in temps if any(ch.kind.name == "FIELD_DECL" for ch in c.get_children())] or temps
    if len(temps) != 1:
        return f"`{spelled}`: {'no' if not temps else 'more than one'} definition of the template `{tname}`"
    children = list(temps[0].get_children())
    params = [c for c in children if c.kind.name.startswith("TEMPLATE_")
              and c.kind.name.endswith("PARAMETER")]
    if any(c.kind.name != "TEMPLATE_TYPE_PARAMETER" for c in params) or len(params) != len(args):
        return f"`{spelled}`: only templates of type parameters, all given, are built"
    bound = {}
    for i, a in enumerate(args):
        dt = _scalar(model, a)
        if dt is None:
            return f"`{spelled}`: its argument `{a}` is not a scalar type"
        bound[f"type-parameter-0-{i}"] = dt
        bound[params[i].spelling] = dt
    if any(c.kind.name == "CXX_BASE_SPECIFIER" for c in children):
        return f"`{spelled}` has a base class"
    if any(c.kind.name in _LAYOUT_ATTRS for c in children):
        return f"`{spelled}` sets its own layout (packed or aligned)"
    fields = []
    for f in (c for c in children if c.kind.name == "FIELD_DECL"):
        if any(c.kind.name in _LAYOUT_ATTRS for c in f.get_children()):
            return f"`{spelled}`: its member `{f.spelling}` sets its own alignment"
        if f.is_bitfield():
            return f"`{spelled}` has a bit-field `{f.spelling}`"
        ft, dims = f.type.get_canonical(), []
        while ft.kind.name == "CONSTANTARRAY":
            dims.append(ft.element_count)
            ft = ft.element_type.get_canonical()
        if ft.kind.name in _FIELD_LEAVES:
            dt = _FIELD_LEAVES[ft.kind.name]
        else:
            dt = bound.get(re.sub(r"\b(const|volatile)\b", "", ft.spelling).strip())
        if dt is None:
            return f"`{spelled}` has a member `{f.spelling}` of type `{f.type.spelling}`"
        fields.append(f"{f.spelling}: {dt}" + (f"[{', '.join(map(str, dims))}]" if dims else ""))
    if not fields:
        return f"`{spelled}` has no fields"
    name = re.sub(r"\W+", "_", f"{tname}<{', '.join(args)}>").strip("_")
    from porter.verify.notation import SpecError, parse_records
    try:
        parse_records({**out, name: ", ".join(fields)})
    except SpecError as e:
        return f"`{spelled}`: {e}"
    out[name] = ", ".join(fields)       # C's natural layout: no attribute says otherwise
    return name


def template_record_size(model, spelled: str) -> int | None:
    """sizeof(`Name<args>`) of a class template's instance built as above, or None."""
    from porter.verify.notation import parse_records
    out: dict = {}
    name = template_record(model, spelled, out)
    return parse_records(out)[name].dtype.itemsize if name in out else None

"""Kernel parameter types as verify spec dtypes (derive.py): scalars, half / char / short, template
parameters of an instance, and structs of one scalar type read as flat buffers."""
from __future__ import annotations

import re


_DTYPES = {"float": "f32", "double": "f64", "int": "i32", "unsigned int": "u32", "long": "i64", "long long": "i64",
           "unsigned long": "u64", "unsigned long long": "u64",
           # buffers of half, short and char (hadamard's and vadd's __half, ldpc's char counts)
           "half": "f16", "__half": "f16", "short": "i16", "unsigned short": "u16", "char": "i8", "unsigned char": "u8",
           "int8_t": "i8", "uint8_t": "u8", "int16_t": "i16", "uint16_t": "u16", "int32_t": "i32", "uint32_t": "u32",
           "int64_t": "i64", "uint64_t": "u64", "size_t": "u64"}
_BYTES = {"f32": 4, "f64": 8, "i32": 4, "u32": 4, "i64": 8, "u64": 8, "f16": 2, "i16": 2, "u16": 2, "i8": 1, "u8": 1}


def _dtype(ctype: str | None) -> str | None:
    t = re.sub(r"\b(const|volatile|__restrict__|__restrict|restrict|signed)\b", " ", ctype or "")
    t = " ".join(t.replace("*", " ").split())
    return _DTYPES.get(t)


_LEAVES = {"FLOAT": "f32", "DOUBLE": "f64", "INT": "i32", "UINT": "u32", "LONG": "i64", "ULONG": "u64",
           "LONGLONG": "i64", "ULONGLONG": "u64", "SHORT": "i16", "USHORT": "u16", "CHAR_S": "i8", "SCHAR": "i8",
           "UCHAR": "u8", "CHAR_U": "u8"}


def _flat_pointee(p):
    """(dtype, scalars per element) of a pointer parameter to a struct made of one scalar type only and laid out
    without padding (cfd's Float3, linearprobing's KeyValue, sph's doubles and double3s); None otherwise."""
    try:
        t = p.node._cursor.type.get_canonical()
        return _flat_record(t.get_pointee() if t.kind.name == "POINTER" else t.element_type)
    except Exception:                   # no clang type behind the node (a shallow tree): not flattened
        return None


def _flat_record(t, depth: int = 0):
    t = t.get_canonical()
    k = t.kind.name
    if k in _LEAVES:
        return _LEAVES[k], 1
    if _is_half(t):                     # cuda_fp16.h's __half: one f16 (its `unsigned short __x` is the bits)
        return "f16", 1
    if k == "CONSTANTARRAY" and depth < 6:
        inner = _flat_record(t.element_type, depth + 1)
        return (inner[0], inner[1] * t.element_count) if inner else None
    if k != "RECORD" or depth >= 6:
        return None
    leaves = []
    for f in t.get_fields():
        r = _flat_record(f.type, depth + 1)
        if r is None:
            return None
        leaves.append(r)
    if not leaves or len({dt for dt, _ in leaves}) != 1:
        return None
    dt, n = leaves[0][0], sum(c for _, c in leaves)
    return (dt, n) if n * _BYTES[dt] == t.get_size() else None      # padding or an alignment attribute: no


def _is_half(t) -> bool:
    """The shim's (or CUDA's) `struct __half`: the f16 type, whatever its members say."""
    return t.kind.name in ("HALF", "FLOAT16") or t.kind.name == "RECORD" and \
        re.sub(r"\b(const|volatile|struct)\b|\s", "", t.spelling).split("::")[-1] == "__half"


def named_type(model, name: str):
    """The canonical clang type a type name stands for where the kernel is read (a typedef: quicksort's `uint`,
    cuda_fp16.h's `half2`; a struct), or None: how a template argument, kept as its spelling, is resolved."""
    name = " ".join(re.sub(r"\b(const|volatile|struct|class)\b", " ", name or "").split())
    if not re.fullmatch(r"[A-Za-z_]\w*", name):
        return None
    kinds = ("TYPEDEF_DECL", "TYPE_ALIAS_DECL", "STRUCT_DECL", "CLASS_DECL")
    try:
        cursors = [n._cursor for k in kinds for n in model.of_kind(k) if n.spelling == name]
        if not cursors:                 # declared in a header the model does not keep (the CUDA shim)
            cursors = [c for c in model.tu.cursor.get_children() if c.kind.name in kinds and c.spelling == name]
        for c in cursors:
            t = c.underlying_typedef_type if c.kind.name in kinds[:2] else c.type
            t = t.get_canonical()
            if t.kind.name != "RECORD" or t.get_size() > 0:
                return t
    except Exception:                   # no clang tree behind the model: not resolved
        return None
    return None


def resolved_arg(model, value):
    """A template argument's spelling with a typedef of a scalar resolved (`uint` -> `unsigned int`), so that
    the instance's `T *` reads as a dtype; other arguments as they are."""
    if not isinstance(value, str) or _dtype(value) is not None:
        return value
    t = named_type(model, value)
    if t is None or t.kind.name not in _LEAVES:
        return value
    return t.spelling


def _subst(ctype: str, env: dict) -> str:
    """A type spelled with template parameters, with the instance's types in (`const T *` -> `const float *`)."""
    return re.sub(r"\b\w+\b", lambda m: str(env[m.group(0)]) if isinstance(env.get(m.group(0)), str)
                  else m.group(0), ctype or "")


def _canon(p, sym=None) -> str:
    t = p.node.canonical_type.spelling
    if sym is not None and sym.types and "type-parameter" in t:
        return _subst(p.type, sym.types)
    return t


# ---------------------------------------------------------------------------------------------------------------
# structs of mixed scalar types: spec structs (notation.parse_record) with clang's layout

_FIELD_LEAVES = {**_LEAVES, "BOOL": "bool", "HALF": "f16", "FLOAT16": "f16"}


def _clang_type(node, pointee: bool):
    """The canonical clang type of a parameter's or an argument's node (the pointee's when `pointee`)."""
    t = node._cursor.type.get_canonical()
    if pointee:
        t = t.get_pointee() if t.kind.name == "POINTER" else t.element_type
    return t.get_canonical()


def record_name(t) -> str:
    """A spec name for a record type: `TensorDims<long>` -> TensorDims_long, `__cuport_shim::float3` -> float3."""
    s = re.sub(r"\b(const|volatile|struct|class)\b", " ", t.spelling.replace("__cuport_shim::", ""))
    return re.sub(r"\W+", "_", s.strip()).strip("_")


def record_spec(t, out: dict, depth: int = 0):
    """The spec name of record type `t`, its definition (and those of the records inside it, first) added to
    `out` {name: fields text}; or a str saying why it is not generated (a union, a pointer member, a bit-field)."""
    t = t.get_canonical()
    decl = t.get_declaration()
    if t.kind.name != "RECORD":
        return f"`{t.spelling}` is not a struct"
    if decl.kind.name == "UNION_DECL":
        return f"`{t.spelling}` is a union"
    name = record_name(t)
    if name in out:
        return name
    if t.get_size() < 0:                # a template specialization never instantiated where it is read
        return f"`{t.spelling}`: its layout is not known here"
    if depth > 6:
        return f"`{t.spelling}` nests structs too deep"
    fields, natural = [], []
    for f in t.get_fields():
        if f.is_bitfield():
            return f"`{t.spelling}` has a bit-field `{f.spelling}`"
        if not f.spelling:
            return f"`{t.spelling}` has an anonymous member"
        ft, dims = f.type.get_canonical(), []
        while ft.kind.name == "CONSTANTARRAY":
            dims.append(ft.element_count)
            ft = ft.element_type.get_canonical()
        if ft.kind.name == "ENUM":
            ft = ft.get_declaration().enum_type.get_canonical()
        if ft.kind.name in _FIELD_LEAVES:
            tname = _FIELD_LEAVES[ft.kind.name]
        elif _is_half(ft):              # a `__half` member: f16, not the struct of its bits
            tname = "f16"
        elif ft.kind.name == "RECORD":
            tname = record_spec(ft, out, depth + 1)
            if tname not in out:
                return tname
        elif ft.kind.name in ("POINTER", "MEMBERPOINTER"):
            return f"`{t.spelling}` has a pointer member `{f.spelling}`"
        else:
            return f"`{t.spelling}` has a member `{f.spelling}` of type `{f.type.spelling}`"
        text = f"{f.spelling}: {tname}" + (f"[{', '.join(map(str, dims))}]" if dims else "")
        natural.append(text)
        fields.append(f"{text} @ {t.get_offset(f.spelling) // 8}")
    if not fields:
        return f"`{t.spelling}` has no fields"
    from porter.verify.notation import SpecError, parse_records
    size = t.get_size()
    try:
        plain = parse_records({**out, name: ", ".join(natural)})[name].dtype
        exact = f"{', '.join(fields)}; size = {size}"
        laid = parse_records({**out, name: exact})[name].dtype
    except SpecError as e:
        return f"`{t.spelling}`: {e}"
    # C's natural layout written plainly; a packed or aligned one with its offsets and size
    out[name] = ", ".join(natural) if plain == laid else exact
    return name

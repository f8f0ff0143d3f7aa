"""CUDA's 3-vectors in memory that OpenCL shares with the host, in CUDA's layout. OpenCL's `float3` is 16 bytes
(aligned as a float4), CUDA's 12: a buffer of `float3`, or of structs with 3-vector members, would put every
element and member at other offsets. Such memory is typed with a packed struct of three scalars
(`cuport_packed_float3`: CUDA's size and alignment). Places of that type (an element of a global buffer, any
struct member) are lvalues whose `.x/.y/.z` work as they are; their values are converted to OpenCL vectors where
read (`cuport_ld_float3`) and back where stored (`cuport_st_float3`). Structs with 3-vector members use the
packed type everywhere (buffers, private copies, shared memory, by-value arguments), so one layout is CUDA's.
Private and shared 3-vectors stay OpenCL vectors (no one else sees their layout).

OpenCL C cannot point into the packed layout with a `uchar3*`, so a `const uchar3&` bound to a buffer element
(HeCBench dpid: `const uchar3& pixel = input[i]`, `add(sum, patches[j], w)`) is bound to a copy of the element.
That is exact when nothing writes the element while the reference lives; distinct buffers do not overlap (as
everywhere in these translations, refs.py), so it suffices that the kernel never writes that buffer, which is
checked once the whole kernel is emitted (check_copies: a written one refuses the kernel at the reference)."""
from __future__ import annotations

from porter.translate.kernel import ctype as ct
from porter.translate.kernel.ctype import CType
from porter.translate.kernel.manifest import cl_type_name

PREFIX = "cuport_packed_"


def is_vec3(t: CType | None) -> bool:
    return t is not None and t.kind == "vector" and t.n == 3


def is_packed(t: CType | None) -> bool:
    return t is not None and t.kind == "struct" and t.name.startswith(PREFIX)


def packed(em, v: CType) -> CType:
    """The packed struct type of the 3-vector type v (registered for the output)."""
    v = v.unqualified()
    name = cl_type_name(v)
    em.t.type_name(v.elem, em)          # the element's extension (cl_khr_fp64 for double3)
    if name not in em.cl_packed:
        s = cl_type_name(v.elem)
        p = PREFIX + name
        em.cl_packed[name] = (
            f"// CUDA's {name}: {ct.c_size(v, {})} bytes in memory (OpenCL's {name} is aligned as a {s}4)\n"
            f"typedef struct {{ {s} x, y, z; }} {p};\n"
            f"{name} cuport_ld_{name}({p} p) {{ return ({name})(p.x, p.y, p.z); }}\n"
            f"{p} cuport_st_{name}({name} v) {{ {p} p = {{v.x, v.y, v.z}}; return p; }}")
    return CType("struct", PREFIX + name)


def memory_type(em, t: CType) -> CType:
    """The type of `t` in memory shared with the host (a 3-vector packed, arrays of them too)."""
    if is_vec3(t):
        return packed(em, t)
    if t.kind == "array" and is_vec3(t.elem):
        return ct.array(packed(em, t.elem), t.dims)
    return t


def load(em, e, src: CType):
    """The OpenCL vector value of a packed place."""
    from porter.translate.kernel.target import E
    name = src.name[len(PREFIX):]
    return E(f"cuport_ld_{name}({e.text})", e.ct)


def store(em, e, dst: CType):
    """A 3-vector value as the packed type (to assign to a packed place)."""
    from porter.translate.kernel.target import E
    name = dst.name[len(PREFIX):]
    return E(f"cuport_st_{name}({e.text})", e.ct, tt=dst)


def place(em, n, e):
    """e (an lvalue expression of node n) with its target type packed when it is a 3-vector in shared layout."""
    if not is_vec3(e.ct) or is_packed(e.tt):
        return e
    if not _packed_place(em, n):
        return e
    from porter.translate.kernel.target import E
    return E(e.text, e.ct, e.prec, packed(em, e.ct), e.lit)


def _packed_place(em, n) -> bool:
    k = n.kind
    if k == "MEMBER_REF_EXPR":
        return n.builtin() is None and bool(n.children)     # a struct's member: structs are packed everywhere
    if k == "ARRAY_SUBSCRIPT_EXPR":
        base_n = n.children[0]
        bt = em.ty(base_n)
        if bt.kind == "pointer" or (bt.kind == "array" and em._decays_to_root(base_n)):
            root, _off = em.ptr(base_n)
            return root.space == "global"
        return bt.kind == "array" and base_n.strip.kind == "MEMBER_REF_EXPR"     # a struct's array member
    if k == "UNARY_OPERATOR" and n.op == "*":
        root, _off = em.ptr(n.children[0])
        return root.space == "global"
    return False


def struct_field_type(em, t: CType) -> CType:
    """A struct member's type in OpenCL: 3-vectors (and arrays of them) packed."""
    return memory_type(em, t)


def pack_parts(em, t: CType, parts: list[str]) -> list[str]:
    """Field texts of a struct value: the 3-vector members stored as the packed type."""
    fields = em.struct_fields(t.name) if t.name in em.u.structs else []
    out = list(parts)
    for i, (_f, ft) in enumerate(fields[:len(parts)]):
        if is_vec3(ft):
            name = cl_type_name(ft.unqualified())
            packed(em, ft)
            out[i] = f"cuport_st_{name}({parts[i]})"
        elif ft.kind == "array" and is_vec3(ft.elem):
            em.fail(None, f"a value of struct `{t.name}` with the 3-vector array member `{_f}` built in the "
                          "kernel (its members are packed in OpenCL)")
    return out


def bound_to(em, param_root, root) -> None:
    """A device function's pointer parameter points where `root` does: remember the kernel buffer behind it."""
    origins = em.__dict__.setdefault("root_origin", {})
    origins[id(param_root)] = origins.get(id(root), root)
    em.__dict__.setdefault("_roots_kept", []).append(param_root)     # ids stay unique while the kernel is emitted


def _buffer_of(em, n):
    """The kernel buffer the element `p[i]` / `*p` lies in, else None."""
    s = n.strip
    while s.kind == "PAREN_EXPR" and s.children:
        s = s.children[-1].strip
    if s.kind == "ARRAY_SUBSCRIPT_EXPR" and len(s.children) == 2 and em.ty(s.children[0]).kind == "pointer":
        root, _off = em.ptr(s.children[0])
    elif s.kind == "UNARY_OPERATOR" and s.op == "*" and s.children:
        root, _off = em.ptr(s.children[0])
    else:
        return None
    root = getattr(em, "root_origin", {}).get(id(root), root)
    return root if root.kind == "buffer" else None


def copy_instead(em, n, place) -> bool:
    """A const reference to a 3-vector element of a kernel buffer: bound to a copy (see the module doc)."""
    if not is_vec3(em.ty(n)) or place is None or place.space != "global" or place.vector_part:
        return False
    buf = _buffer_of(em, n)
    if buf is None:
        return False
    em.__dict__.setdefault("vec3_copies", {}).setdefault(buf.key, n)
    return True


def check_copies(em) -> None:
    """Refuse the kernel when a buffer whose 3-vector elements were bound to copies is written in it."""
    for key, n in getattr(em, "vec3_copies", {}).items():
        if "w" in em.roots_rw.get(key, ()):
            em.fail(n, f"a `const {em.ty(n)}&` to an element of the buffer `{key[1]}`, which the kernel also "
                       "writes (OpenCL C cannot point into CUDA's 12-byte layout, and a copy would not see the "
                       "writes)")

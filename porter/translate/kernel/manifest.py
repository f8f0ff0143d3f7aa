"""Host manifests (docs/translate-api.md): everything a host program needs to dispatch a translated kernel
without reading its source: bindings, push-constant layout, local size and specialization constants,
extensions and device features, and the dispatch formula. Layouts are computed here once and both the
shader text and the manifest are written from them, so they cannot disagree."""
from __future__ import annotations

from dataclasses import dataclass, field

from porter.translate.kernel import ctype as ct
from porter.translate.kernel.ctype import CType

PUSH_LIMIT = 128          # bytes every Vulkan device supports (maxPushConstantsSize minimum)
DEFAULT_LOCAL_SIZE = [256, 1, 1]

_GLSL_NAMES = {"bool": "bool", "i8": "int8_t", "u8": "uint8_t", "i16": "int16_t", "u16": "uint16_t",
               "i32": "int", "u32": "uint", "i64": "int64_t", "u64": "uint64_t", "f16": "float16_t",
               "f32": "float", "f64": "double"}
_VEC_NAMES = {"f32": "vec", "f64": "dvec", "i32": "ivec", "u32": "uvec", "i64": "i64vec", "u64": "u64vec",
              "i16": "i16vec", "u16": "u16vec", "i8": "i8vec", "u8": "u8vec", "f16": "f16vec", "bool": "bvec"}
_CL_NAMES = {"bool": "bool", "i8": "char", "u8": "uchar", "i16": "short", "u16": "ushort", "i32": "int",
             "u32": "uint", "i64": "long", "u64": "ulong", "f16": "half", "f32": "float", "f64": "double"}


def type_name(t: CType) -> str:
    """Manifest type names: float, int, uint, double, int64_t, uint64_t (as in the contract), vecN, struct S."""
    if t.kind == "scalar":
        return _GLSL_NAMES[t.name]
    if t.kind == "vector":
        return f"{_VEC_NAMES[t.elem.name]}{t.n}"
    if t.kind == "struct":
        return f"struct {t.name}"
    if t.kind == "array":
        return type_name(t.elem) + "".join(f"[{d}]" for d in t.dims)
    return ct.spell(t)


def c_layout(t: CType, structs: dict) -> tuple[int, int]:
    """(sizeof, alignof) in CUDA C."""
    if t.kind == "scalar":
        s = ct.SCALARS[t.name][0] // 8 if t.name != "bool" else 1
        return s, s
    if t.kind == "vector":
        es = ct.SCALARS[t.elem.name][0] // 8
        size = es * t.n
        align = es * (t.n if t.n in (2, 4) else 1) if t.n != 3 else es
        return size, min(align, 16)
    if t.kind == "struct":
        off, al = 0, 1
        for _n, ft in structs[t.name]:
            s, a = c_layout(ft, structs)
            off = (off + a - 1) // a * a + s
            al = max(al, a)
        return (off + al - 1) // al * al, al
    if t.kind == "array":
        s, a = c_layout(t.elem, structs)
        n = 1
        for d in t.dims:
            n *= d
        return s * n, a
    raise ValueError(t)


def struct_offsets(name: str, structs: dict, layout: str) -> list[tuple[str, CType, int, int]]:
    """[(field, type, offset, size)] of a struct in C ("c") or a Vulkan block layout ("std430" / "std140")."""
    out, off = [], 0
    for fname, ft in structs[name]:
        s, a = c_layout(ft, structs) if layout == "c" else ct.size_align(ft, layout, structs)
        off = (off + a - 1) // a * a
        out.append((fname, ft, off, s))
        off += s
    return out


def layout_matches_c(t: CType, structs: dict, layout: str) -> bool:
    """A value of type t has the same bytes in CUDA C and in the block layout (so the host can copy it)."""
    if t.kind == "scalar":
        return t.name != "bool"
    if t.kind == "vector":
        return t.n != 3 or layout == "scalar"
    if t.kind == "struct":
        a = struct_offsets(t.name, structs, "c")
        b = struct_offsets(t.name, structs, layout)
        if [(x[2], x[3]) for x in a] != [(x[2], x[3]) for x in b]:
            return False
        if c_layout(t, structs)[0] != ct.size_align(t, layout, structs)[0]:
            return False
        return all(layout_matches_c(ft, structs, layout) for _n, ft, _o, _s in a)
    if t.kind == "array":               # nonzero's `index_t sizes[2]`: the same stride (std140 rounds it to 16)
        try:
            same = c_layout(t, structs)[0] == ct.size_align(t, layout, structs)[0]
        except ValueError:              # an unsized dimension
            return False
        return same and layout_matches_c(t.elem, structs, layout)
    return False


@dataclass
class ScalarSlot:
    name: str
    cuda_name: str
    type: CType
    offset: int
    size: int


@dataclass
class ParamLayout:
    """Where the by-value parameters go: a push-constant block, or a uniform block beyond 128 bytes."""
    slots: list = field(default_factory=list)
    size: int = 0
    uniform: bool = False
    binding: int | None = None
    layout: str = "std430"    # of the block: std430 push constants / std140 uniform, or scalar for both


def param_layout(scalars: list[dict], structs: dict, first_free_binding: int, scalar: bool = False) -> ParamLayout:
    """scalar: GL_EXT_scalar_block_layout (float3 parameters, structs with float3 members), CUDA's offsets."""
    def place(layout):
        slots, off = [], 0
        for s in scalars:
            size, align = ct.size_align(s["type"], layout, structs)
            off = (off + align - 1) // align * align
            slots.append(ScalarSlot(s["name"], s["cuda_name"], s["type"], off, size))
            off += size
        return slots, off
    slots, size = place("scalar" if scalar else "std430")
    if size <= PUSH_LIMIT:
        return ParamLayout(slots, (size + 3) // 4 * 4, False, None, "scalar" if scalar else "std430")
    slots, size = place("scalar" if scalar else "std140")
    return ParamLayout(slots, (size + 15) // 16 * 16, True, first_free_binding, "scalar" if scalar else "std140")


def field_of(f) -> dict:
    """Manifest entry of a parameter that is a field of a flattened struct parameter (struct_params.py)."""
    out = {"param": f[0], "field": f[1]}
    if len(f) > 2:
        out["elements"] = f[2]      # an array field: its elements, copied into a buffer of their own
    return out


def access_of(info: dict, rw: set) -> str:
    if info["const"] or rw == {"r"} or not rw:
        return "readonly"
    if rw == {"w"}:
        return "writeonly"
    return "readwrite"


def glsl_manifest(label, em, shape, local_size, local_known, buffers, playout: ParamLayout, spec_constants,
                  structs) -> dict:
    params = []
    buf_by_name = {b["name"]: b for b in buffers}
    slot_by_name = {s.name: s for s in playout.slots}
    for p in em.params:
        info = p["info"]
        if p["kind"] == "buffer":
            b = buf_by_name[info["cuda_name"]]
            params.append({"name": p["name"], "kind": "buffer", "binding": b["binding"], "type": b["type"]})
        else:
            s = slot_by_name[info["name"]]
            params.append({"name": p["name"], "kind": "uniform" if playout.uniform else "push",
                           "offset": s.offset, "type": type_name(s.type), "size": s.size})
        if info.get("field_of"):     # a field of a struct parameter holding pointers (struct_params.py)
            params[-1]["field_of"] = field_of(info["field_of"])
    same = {flag: [a["cuda_name"], b["cuda_name"]] for flag, (a, b) in em.same_memory.items()}
    for flag, pair in same.items():
        # not a CUDA parameter: the host sets it to 1 when it binds one buffer to both (`pair[0] == pair[1]`)
        s = slot_by_name[flag]
        params.append({"name": flag, "kind": "uniform" if playout.uniform else "push", "offset": s.offset,
                       "type": type_name(s.type), "size": s.size, "same_memory": pair})
    members = []
    for s in playout.slots:
        m = {"name": s.cuda_name, "offset": s.offset, "type": type_name(s.type), "size": s.size}
        if s.name in same:
            m["same_memory"] = same[s.name]
        if s.type.kind == "struct":
            m["fields"] = [{"name": f, "offset": s.offset + o, "type": type_name(t), "size": sz}
                           for f, t, o, sz in struct_offsets(s.type.name, structs,
                                                             playout.layout)]
        members.append(m)
    grid = shape.grid if shape is not None else ["?", "?", "?"]
    man = {
        "kernel": label,
        "cuda_kernel": em.fn.name,
        "target": "glsl",
        "entry_point": "main",
        "params": params,
        "buffers": [{k: v for k, v in b.items() if not k.startswith("_")} for b in buffers],
        "push_constants": [] if playout.uniform else members,
        "push_constant_size": 0 if playout.uniform else playout.size,
        "uniform_block": ({"set": 0, "binding": playout.binding, "layout": playout.layout, "size": playout.size,
                           "members": members} if playout.uniform else None),
        "local_size": list(local_size),
        "local_size_known": local_known,
        "local_size_spec_ids": [0, 1, 2],
        "spec_constants": spec_constants,
        "shared_bytes": em.shared_bytes(),
        "extensions": list(em.extensions),
        "features": list(em.features),
        "subgroup_operations": list(em.subgroup_ops),
        "min_subgroup_size": em.min_subgroup,
        "per_warp_arrays": em.warp_plan.report if getattr(em, "warp_plan", None) is not None else [],
        "dispatch": "workgroups = CUDA grid (x, y, z); local size = CUDA block via spec ids 0,1,2",
        "launch": {"grid": grid, "block": shape.block if shape is not None else [None, None, None],
                   "dynamic_shared_bytes": shape.shmem if shape is not None else 0},
    }
    dev = [b["_device_global"] for b in buffers if "_device_global" in b]
    if dev:
        # one buffer per program for each: bound at its binding in every kernel that lists it, initialised once
        man["device_globals"] = dev
    if getattr(em, "glsl_assert_binding", None) is not None:
        # device asserts: a hidden buffer the host zeroes, binds and reads after the dispatch (asserts.py)
        from porter.translate.kernel import asserts
        man["assert"] = asserts.manifest_entry(em, binding=em.glsl_assert_binding)
    if em.contracts:
        # launch contracts: a byte offset (pitch) converted to an element offset is exact only for these values;
        # the host must refuse a launch that breaks one (the CUDA access would be misaligned there)
        man["requires"] = [{"param": name, "multiple_of": k} for name, (k, _n) in sorted(em.contracts.items())]
    if em.not_null:
        # a null test on a pointer into one of these (GLSL binds a buffer to each; nothing tells a null one)
        man.setdefault("requires", []).extend({"param": name, "not_null": True} for name in sorted(em.not_null))
    if em.block_contract:
        # warp code in a block of the host's choosing: subgroups are runs of linear ids only with whole rows
        man.setdefault("requires", []).append({"block_x_multiple_of": em.block_contract,
                                               "when": "the block has more than one row (y or z > 1)"})
    if same:
        # pointer parameters compared in the kernel: either may be bound to the other's buffer
        man["same_memory"] = [{"params": pair, "flag": flag} for flag, pair in same.items()]
    if em.instance is not None:
        man["template_args"] = {k: (v if isinstance(v, int) else str(v)) for k, v in em.instance.args.items()}
    return man


def opencl_manifest(label, em, shape, local_size, local_known, params, local_args) -> dict:
    grid = shape.grid if shape is not None else ["?", "?", "?"]
    man = {
        "kernel": label,
        "cuda_kernel": em.fn.name,
        "target": "opencl",
        "entry_point": em.cl_name,
        "params": params,
        "local_args": local_args,
        "local_size": list(local_size),
        "local_size_known": local_known,
        "shared_bytes": em.shared_bytes(),
        "extensions": list(em.extensions),
        "warp_size": em.cl_warp_size,
        "per_warp_arrays": em.warp_plan.report if getattr(em, "warp_plan", None) is not None else [],
        "dispatch": "global size = CUDA grid * block per dimension; local size = CUDA block",
        "launch": {"grid": grid, "block": shape.block if shape is not None else [None, None, None],
                   "dynamic_shared_bytes": shape.shmem if shape is not None else 0},
    }
    if em.block_contract:
        # warp code in a block of the host's choosing: subgroups are runs of linear ids only with whole rows
        man.setdefault("requires", []).append({"block_x_multiple_of": em.block_contract,
                                               "when": "the block has more than one row (y or z > 1)"})
    if em.contracts:
        # launch contracts (half2_atomics: a half2 pair is one 32-bit word only for these values)
        man.setdefault("requires", []).extend({"param": name, "multiple_of": k}
                                              for name, (k, _n) in sorted(em.contracts.items()))
    if em.same_memory:
        # pointer parameters compared in the kernel (as C pointers, never `restrict`): either may be passed the
        # other's buffer
        man["same_memory"] = [{"params": [a["cuda_name"], b["cuda_name"]]} for a, b in em.same_memory.values()]
    if em.cl.get("device_globals"):
        # one buffer per program for each: passed at its index to every kernel that lists it, initialised once
        man["device_globals"] = em.cl["device_globals"]
    if getattr(em, "cl_assert", None) is not None:
        # device asserts: a hidden argument the host zeroes, passes and reads after the launch (asserts.py)
        man["assert"] = em.cl_assert
    if em.instance is not None:
        man["template_args"] = {k: (v if isinstance(v, int) else str(v)) for k, v in em.instance.args.items()}
    return man


def cl_type_name(t: CType) -> str:
    if t.kind == "scalar":
        return _CL_NAMES[t.name]
    if t.kind == "vector":
        return f"{_CL_NAMES[t.elem.name]}{t.n}"
    if t.kind == "struct":
        return f"struct {t.name}"
    return ct.spell(t)

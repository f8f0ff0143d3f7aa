"""GLSL 450 compute shaders for Vulkan (one shader per kernel): the GLSL spelling of everything the emitter
walks. Pointers become std430 storage buffers indexed at base + offset; by-value parameters a push-constant
block (a uniform block beyond 128 bytes); the block shape comes from specialization constants 0, 1, 2 so
the host dispatches exactly the CUDA grid; warp intrinsics become GL_KHR_shader_subgroup_* operations."""
from __future__ import annotations

import math
import re

from porter.translate import warp_sizing
from porter.translate.kernel import ctype as ct
from porter.translate.kernel import device_globals
from porter.translate.kernel import halfprec
from porter.translate.kernel import intrinsics
from porter.translate.kernel import struct_views
from porter.translate.kernel.ctype import BOOL, I32, U32, CType
from porter.translate.kernel.glsl_builtins import SHUFFLES, GlslBuiltins
from porter.translate.kernel.manifest import (DEFAULT_LOCAL_SIZE, access_of, glsl_manifest, layout_matches_c,
                                              param_layout)
from porter.translate.kernel.manifest import type_name as mtype
from porter.translate.kernel.pointers import PtrBinding, Root
from porter.translate.kernel.target import (MergeViews, PREC_ADD, PREC_PRIMARY, PREC_REL, PREC_UNARY, E, Target,
                                            literal_int_text, wrap)

RESERVED = frozenset("""
attribute const uniform varying buffer shared coherent volatile restrict readonly writeonly atomic_uint layout
centroid flat smooth noperspective patch sample break continue do for while switch case default if else
subroutine in out inout float double int void bool true false invariant precise discard return mat2 mat3 mat4
dmat2 dmat3 dmat4 vec2 vec3 vec4 ivec2 ivec3 ivec4 bvec2 bvec3 bvec4 dvec2 dvec3 dvec4 uint uvec2 uvec3 uvec4
lowp mediump highp precision sampler1D sampler2D sampler3D samplerCube struct common partition active asm class
union enum typedef template this resource goto inline noinline public static extern external interface long
short half fixed unsigned superp input output hvec2 hvec3 hvec4 fvec2 fvec3 fvec4 filter sizeof cast namespace
using image1D image2D image3D texture main pc
abs sign floor ceil trunc round fract mod min max clamp mix step smoothstep sqrt inversesqrt exp exp2 log log2
pow sin cos tan asin acos atan sinh cosh tanh asinh acosh atanh length distance dot cross normalize reflect
refract fma frexp ldexp isnan isinf bitCount findLSB findMSB bitfieldReverse bitfieldExtract bitfieldInsert
barrier memoryBarrier any all not equal radians degrees roundEven modf uaddCarry usubBorrow umulExtended
imulExtended packHalf2x16 unpackHalf2x16 floatBitsToInt intBitsToFloat floatBitsToUint uintBitsToFloat
determinant inverse transpose outerProduct matrixCompMult lessThan greaterThan
""".split())

_SCALAR = {"bool": "bool", "i8": "int8_t", "u8": "uint8_t", "i16": "int16_t", "u16": "uint16_t", "i32": "int",
           "u32": "uint", "i64": "int64_t", "u64": "uint64_t", "f16": "float16_t", "f32": "float", "f64": "double"}
_VEC = {"bool": "bvec", "i8": "i8vec", "u8": "u8vec", "i16": "i16vec", "u16": "u16vec", "i32": "ivec",
        "u32": "uvec", "i64": "i64vec", "u64": "u64vec", "f16": "f16vec", "f32": "vec", "f64": "dvec"}
_TYPE_NEEDS = {
    "i8": ("GL_EXT_shader_explicit_arithmetic_types_int8", "shaderInt8"),
    "u8": ("GL_EXT_shader_explicit_arithmetic_types_int8", "shaderInt8"),
    "i16": ("GL_EXT_shader_explicit_arithmetic_types_int16", "shaderInt16"),
    "u16": ("GL_EXT_shader_explicit_arithmetic_types_int16", "shaderInt16"),
    "i64": ("GL_EXT_shader_explicit_arithmetic_types_int64", "shaderInt64"),
    "u64": ("GL_EXT_shader_explicit_arithmetic_types_int64", "shaderInt64"),
    "f16": ("GL_EXT_shader_explicit_arithmetic_types_float16", "shaderFloat16"),
    "f64": (None, "shaderFloat64"),
}
# conversions GLSL 4.50 performs implicitly with the same result C gets
_IMPLICIT = {("i32", "u32"), ("i32", "f32"), ("u32", "f32"), ("i32", "f64"), ("u32", "f64"), ("f32", "f64")}

BALLOT = CType("vector", elem=U32, n=4)

_ATOMICS = {"atomicAdd", "atomicSub", "atomicExch", "atomicMin", "atomicMax", "atomicAnd", "atomicOr",
            "atomicXor", "atomicCAS", "atomicInc", "atomicDec"}


# the subgroup size as a specialization constant (0 = not set by the host: gl_SubgroupSize) and its spelling
SUBGROUP_SIZE_ID = 4
SUBGROUP_SIZE_SPEC = "CUPORT_SUBGROUP_SIZE"
SUBGROUP_SIZE = "cuport_subgroup_size"


def unparen(text: str) -> str:
    """`(a + b)` -> `a + b` when the outer parentheses enclose the whole text (a function argument needs none)."""
    if not (text.startswith("(") and text.endswith(")")):
        return text
    depth = 0
    for i, ch in enumerate(text):
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0 and i != len(text) - 1:
                return text
    return unparen(text[1:-1])


def _ext_order(name: str):
    order = ["GL_KHR_shader_subgroup_basic", "GL_KHR_shader_subgroup_vote", "GL_KHR_shader_subgroup_ballot",
             "GL_KHR_shader_subgroup_shuffle", "GL_KHR_shader_subgroup_shuffle_relative",
             "GL_KHR_shader_subgroup_arithmetic"]
    return (order.index(name) if name in order else len(order), name)


_SPEC_NAMES = {"gl_WorkGroupSize", "SHARED_BYTES"}


def _spec_constant(text: str) -> bool:
    """The expression is made of specialization constants (and literals) only: glslang folds it into one."""
    names = set(re.findall(r"\b[A-Za-z_]\w*", text)) - {"x", "y", "z", "int", "uint"}
    return bool(names) and names <= _SPEC_NAMES


def _float_text(v: float, t: CType) -> str:
    if math.isinf(v) or math.isnan(v):
        bits = {True: 0x7f800000, False: 0xff800000}[v > 0] if math.isinf(v) else 0x7fc00000
        if t.name == "f64":
            return f"double(uintBitsToFloat({bits}u))"
        return f"uintBitsToFloat({bits}u)"
    if t.name == "f32":
        import numpy as np
        s = str(np.float32(v))
    else:
        s = repr(float(v))
    if "e" not in s and "." not in s and "inf" not in s:
        s += ".0"
    if s.startswith("."):
        s = "0" + s
    if t.name == "f64":
        return s + "lf"
    if t.name == "f16":
        return f"float16_t({s})"
    return s


def _suffixed(name: str, suffix: str) -> str:
    """`name_suffix` without a `__` (reserved in GLSL) when name ends with `_` (`out_` -> `out_buf`)."""
    return f"{name.rstrip('_') or 'v'}_{suffix}"


class GlslTarget(GlslBuiltins, Target):
    name = "glsl"
    display_name = "GLSL (Vulkan)"
    reserved = RESERVED
    keep_comments = True
    lower_warp_sync = True
    # NVIDIA's Vulkan compiler keeps both predicated stores of an if/else to one element: one select and one store
    # ran bad_branch at CUDA's speed (1.07x the two-store form, docs/performance.md)
    if_convert_stores = True
    named_constants = True
    named_template_params = True
    size_t_64 = True
    ballot_type = BALLOT
    file_extension = ".comp"

    def __init__(self, **options):
        super().__init__(**options)
        self.float_atomics = options.get("float_atomics", "ext")
        self.fast_math = bool(options.get("fast_math", False))

    # ------------------------------------------------------------------ kernel frame
    def begin_kernel(self, em):
        em.prologue = []
        em.subgroup_size_used = False

    def assert_record(self, em, buf: str, line: int) -> list[str]:
        return [f"atomicAdd({buf}[0], 1u);", f"atomicCompSwap({buf}[1], 0u, {line}u);"]

    def end_kernel(self, em):
        """Layouts (buffers, parameter block, shared memory, spec constants) decided once; a parameter or
        buffer whose bytes differ between CUDA and std430 fails here, with its location."""
        structs = {k: em.struct_fields(k) for k in em.struct_used}
        device_globals.in_order(em)
        buffers = []
        for i, (name, info) in enumerate(em.buffers.items()):
            elem = info["elem"].unqualified()
            node = info["node"]
            if elem.kind == "struct" and elem.name not in structs:
                em.use_struct(elem.name, node)
                structs = {k: em.struct_fields(k) for k in em.struct_used}
            blayout = "std430"
            if elem.kind == "unknown" or (elem.kind == "scalar" and elem.is_bool) or \
                    not layout_matches_c(elem, structs, "std430"):
                if elem.kind in ("vector", "struct") and layout_matches_c(elem, structs, "scalar"):
                    # float3 / double3 members: the scalar block layout has CUDA's offsets and stride
                    blayout = "scalar"
                    em.need("GL_EXT_scalar_block_layout", "scalarBlockLayout")
                else:
                    em.fail(node, f"buffer `{info['cuda_name']}` of `{elem}` (its std430 array stride differs "
                            "from CUDA's element size)")
            bits = elem.bits if elem.kind == "scalar" else (elem.elem.bits if elem.kind == "vector" else 32)
            if bits in (8, 16):
                em.need(f"GL_EXT_shader_{bits}bit_storage", f"storageBuffer{bits}BitAccess")
            rw = set(em.roots_rw.get(("buffer", name), set()))
            views = [(v, t) for (b, _k), (v, t, _n) in getattr(em, "buffer_views", {}).items()
                     if b == name and ("buffer", v) in em.roots_rw]
            for v, _t in views:
                rw |= em.roots_rw[("buffer", v)]
            if views:
                self._check_views(em, name, info, views, rw)
            carrier = None
            if name in em.merged_views and elem.kind == "scalar":
                # every access went through the vector view: it is the binding's only variable
                carrier = next(v for v, t in views if t == em.merged_views[name])
                views = [(v, t) for v, t in views if v != carrier]
            access = access_of(info, rw)
            # compared with another parameter (`d_out == d_in`): the host may bind one buffer to both, so the
            # block is neither restrict nor readonly / writeonly, and coherent where the pair is written
            pair = [q for f in em.same_memory.values() if info in f for q in f]
            pair_rw = set().union(*(em.roots_rw.get(("buffer", q["name"]), set()) for q in pair)) if pair else rw
            quals = []
            if access == "readonly" and not pair:
                quals.append("readonly")
            elif access == "writeonly" and not pair:
                quals.append("writeonly")
            if info["restrict"] and not views and not pair:      # the typed views alias this block
                quals.append("restrict")
            if (access == "readwrite" or pair_rw == {"r", "w"} and pair) and em.has_barrier:
                quals.append("coherent")
            q = " ".join(quals) + " " if quals else ""
            if carrier is not None:
                vt = em.merged_views[name]
                decl = (f"layout(std430, set = 0, binding = {i}) {q}buffer {em.fresh(_suffixed(carrier, 'buf'))} "
                        f"{{ {self.type_name(vt, em)} {carrier}[]; }};  // `{info['cuda_name']}`, element i at "
                        f"[i / {vt.n}][i % {vt.n}]")
            else:
                block = em.fresh(_suffixed(name, "buf"))
                decl = (f"layout({blayout}, set = 0, binding = {i}) {q}buffer {block} "
                        f"{{ {self.type_name(elem, em)} {name}[]; }};")
            size = ct.size_align(elem, blayout, structs)[0]
            entry = {"name": info["cuda_name"], "set": 0, "binding": i, "type": mtype(elem), "elem_size": size,
                     "access": access, "restrict": bool(info["restrict"]), "_decl": decl}
            if info.get("assert"):    # the hidden assert buffer (asserts.py): the host zeroes it and reads it after
                entry["hidden"] = "assert"
                em.glsl_assert_binding = i
            if "count" in info:       # a file-scope device variable: the host makes it once per program
                entry["device_global"] = True
                entry["_device_global"] = device_globals.manifest_entry(info, structs, binding=i)
            if info.get("alias_bits"):
                b = info["alias_bits"]
                ut = "uint" if b == 32 else "uint64_t"
                entry["_alias"] = (f"layout(std430, set = 0, binding = {i}) buffer {em.fresh(_suffixed(name, 'u' + str(b) + '_buf'))} "
                                   f"{{ {ut} {name}_u{b}[]; }};  // the same buffer, for compare-and-swap")
            for v, t in views:      # reinterpreting casts: the same binding seen with another element type
                vb = t.bits if t.kind == "scalar" else t.elem.bits if t.kind == "vector" else \
                    struct_views.scalar_bits(em, t)       # a struct of the buffer's scalars
                if vb in (8, 16):
                    em.need(f"GL_EXT_shader_{vb}bit_storage", f"storageBuffer{vb}BitAccess")
                entry.setdefault("_views", []).append(
                    f"layout(std430, set = 0, binding = {i}) {q}buffer {em.fresh(_suffixed(v, 'buf'))} "
                    f"{{ {self.type_name(t, em)} {v}[]; }};  // `{info['cuda_name']}` as {ct.spell(t)}")
            buffers.append(entry)
        # by-value parameters: 32-bit slots for bool / 8 / 16-bit scalars (the manifest says so)
        slots, scalar_params = [], False
        for s in em.scalars:
            t = s["type"].unqualified()
            halfprec.check_param(em, t, s["node"], s["cuda_name"])
            widened = None
            if t.kind == "scalar" and (t.is_bool or t.bits < 32):
                widened = U32 if (t.is_bool or not t.is_signed) else I32
            if (t.kind == "struct" and not layout_matches_c(t, structs, "std430")) or (t.kind == "vector" and t.n == 3):
                if not layout_matches_c(t, structs, "scalar"):
                    em.fail(s["node"], f"struct parameter `{s['cuda_name']}` (its std430 layout differs from CUDA's)")
                scalar_params = True      # float3 (members): the scalar block layout has CUDA's offsets
            slots.append(dict(s, type=widened or t, orig=t))
        for flag, (a, b) in em.same_memory.items():   # set by the host: 1 when it bound one buffer to both
            slots.append({"name": flag, "cuda_name": flag, "type": U32, "orig": BOOL, "assigned": False,
                          "node": None, "same_memory": [a["cuda_name"], b["cuda_name"]]})
        if scalar_params:
            em.need("GL_EXT_scalar_block_layout", "scalarBlockLayout")
        playout = param_layout(slots, structs, len(buffers), scalar=scalar_params)
        block_lines = []
        if slots:
            if playout.uniform:
                head = f"layout({playout.layout}, set = 0, binding = {playout.binding}) uniform cuport_params"
            else:
                head = f"layout(push_constant, {playout.layout}) uniform cuport_params"
            block_lines = [head, "{"]
            for slot, s in zip(playout.slots, slots):
                block_lines.append(f"    layout(offset = {slot.offset}) {self.type_name(slot.type, em)} {slot.name};")
            block_lines.append("} pc;")
            for s in slots:
                t, orig, name = s["type"], s["orig"], s["name"]
                const = "" if s["assigned"] else "const "
                if orig.kind == "scalar" and orig.is_bool:
                    value = f"pc.{name} != 0u"
                elif t != orig:
                    value = f"{self.type_name(orig, em)}(pc.{name})"
                else:
                    value = f"pc.{name}"
                em.prologue.append(f"{const}{self.type_name(orig, em)} {name} = {value};")
        # the block shape and dynamic shared memory
        shape = em.launch
        block = list(shape.block) if shape is not None else [None, None, None]
        known = all(isinstance(v, int) for v in block)
        local = [v if isinstance(v, int) else d for v, d in zip(block, DEFAULT_LOCAL_SIZE)]
        spec = []
        shared_decls = []
        for info in em.shared.values():
            if info["extern"]:
                sname = em.fresh("SHARED_BYTES")
                default = shape.shmem if shape is not None and shape.shmem else 1024
                esz = ct.size_align(info["elem"], "std430", structs)[0]
                spec.append({"id": 3, "name": sname, "type": "uint", "default": default,
                             "launch_expr": shape.shmem_text if shape is not None else None})
                size = f"{sname} / {esz}u"
                need = warp_sizing.extern_slots(em, info["node"])
                if need:      # per-warp slots: at least one per narrowest subgroup, whatever the host asked for
                    size = f"({size} > {need}u ? {size} : {need}u)"
                shared_decls.append(f"shared {self.type_name(info['elem'], em)} {info['name']}[{size}];")
                em.extern_shared = info
            else:
                t = info["type"]
                dims = "".join(f"[{d}]" for d in info["dims"])
                elem = info["elem"] if t.kind != "array" else t.elem
                shared_decls.append(f"shared {self.type_name(elem, em)} {info['name']}{dims};")
        spec_defines = []
        if em.subgroup_size_used:
            # the host sets it to the device's subgroup size (manifest: "value": "subgroup_size"), so loops over
            # it unroll when the pipeline is made; left at 0, the shader reads gl_SubgroupSize at run time
            spec.append({"id": SUBGROUP_SIZE_ID, "name": SUBGROUP_SIZE_SPEC, "type": "uint", "default": 0,
                         "value": "subgroup_size"})
            spec_defines = [f"#define {SUBGROUP_SIZE} ({SUBGROUP_SIZE_SPEC} != 0u ? {SUBGROUP_SIZE_SPEC} : "
                            "gl_SubgroupSize)"]
        for pname, (k, node) in em.contracts.items():
            em.note("CP907", node, f"translated for `{pname}` a multiple of {k} only (a byte offset becomes an element "
                    f"offset): the manifest's \"requires\" makes the host refuse other values")
        for pname, node in em.not_null.items():
            em.note("CP907", node, f"translated for `{pname}` not null (GLSL binds a buffer to every pointer "
                    f"parameter, which a null test cannot tell from null): the manifest's \"requires\" makes the host "
                    "refuse a null one")
        em.glsl = {"buffers": buffers, "playout": playout, "params_block": "\n".join(block_lines),
                   "local_size": local, "local_known": known, "spec": spec, "shared": shared_decls,
                   "structs": structs, "spec_defines": spec_defines}

    def assemble(self, result, outputs, unit):
        import os

        from porter.translate.render import render
        for label, em, shape in outputs:
            g = em.glsl
            structs = [self.struct_text(em, name, fields) for name, fields in g["structs"].items()]
            constants = [f"const {self.type_name(t, em)} {name} = {text};" for name, (text, t, _v) in em.consts.items()]
            constants += [v for v in em.const_arrays.values() if v]
            buffers = []
            for b in g["buffers"]:
                buffers.append(b["_decl"])
                if b.get("_alias"):
                    buffers.append(b["_alias"])
                buffers.extend(b.get("_views", ()))
            binds = ", ".join(f"{b['name']}={b['binding']}" for b in g["buffers"]) or "none"
            where = "uniform block" if g["playout"].uniform else "push constants"
            params = f"{where} ({g['playout'].size} bytes)" if g["playout"].slots else "none"
            header = [f"cuport translate --to glsl: kernel `{label}` of {os.path.basename(result.path)}",
                      f"bindings: {binds}; by-value parameters: {params}"]
            reqs = [f"{p} % {k} == 0" for p, (k, _n) in sorted(em.contracts.items())]
            reqs += [f"{p} != nullptr" for p in sorted(em.not_null)]
            if em.block_contract:
                reqs.append(f"blockDim.x % {em.block_contract} == 0 unless the block is one row")
            if reqs:
                header.append("requires (the host refuses other launches): " + ", ".join(reqs))
            spec = [dict(s, default=f"{s['default']}u") for s in g["spec"]]
            text = render("glsl/kernel.comp.j2", extensions=sorted(em.extensions, key=_ext_order), header=header,
                          local_size=g["local_size"], spec_constants=spec, spec_defines=g["spec_defines"],
                          structs=structs,
                          buffers=buffers, params_block=g["params_block"], constants=constants,
                          shared=g["shared"], helpers=list(em.helpers.values()),
                          functions=[t for _n, t in em.functions.values()], prologue=em.prologue,
                          body="\n".join(em.lines))
            result.shaders[label] = text
            result.manifests[label] = glsl_manifest(label, em, shape, g["local_size"], g["local_known"],
                                                    g["buffers"], g["playout"], g["spec"], g["structs"])

    def _check_views(self, em, name, info, views, rw):
        """Typed views of one binding are separate SPIR-V variables, which drivers may assume do not alias
        (GLSL cannot decorate them Aliased): a written buffer must be accessed through one element type only."""
        types = [t for _v, t in views] + ([info["elem"].unqualified()] if ("buffer", name) in em.roots_rw else [])
        if len(types) > 1 and "w" in rw:
            vec = next((t for t in types if t.kind == "vector"), None)
            if len(types) == 2 and vec is not None and vec.n in (2, 4) and vec.elem in types and \
                    not info.get("alias_bits") and name not in em.merged_views:
                # `T` and `vecN<T>` (a vector body and a scalar tail): element i is component i % N of vector
                # i / N, so one vector view carries both and nothing aliases
                raise MergeViews({name: vec})
            node = next(n for (b, _k), (v, _t, n) in em.buffer_views.items() if b == name and v == views[0][0])
            em.fail(node, f"a pointer cast `{node.text}` (buffer `{info['cuda_name']}` is written and accessed as "
                          f"{' and '.join(f'`{ct.spell(t)}`' for t in types)}: the typed views of one binding may "
                          "not alias in SPIR-V)")
        if info.get("alias_bits"):
            em.fail(info["node"], f"buffer `{info['cuda_name']}` both viewed as another type and updated by a "
                                  "compare-and-swap loop")

    def struct_text(self, em, name, fields) -> str:
        body = "\n".join(f"    {self.type_name(t, em)} {f};" for f, t in fields)
        return f"struct {self.ident(name)}\n{{\n{body}\n}};"

    # ------------------------------------------------------------------ types / literals / conversions
    def scalar_type_name(self, t: CType, em=None) -> str:
        if em is not None and t.name in _TYPE_NEEDS:
            em.need(*_TYPE_NEEDS[t.name])
        return _SCALAR[t.name]

    def vector_type_name(self, t: CType, em=None) -> str:
        if em is not None and t.elem.name in _TYPE_NEEDS:
            em.need(*_TYPE_NEEDS[t.elem.name])
        return f"{_VEC[t.elem.name]}{t.n}"

    def literal(self, value, t: CType, em=None) -> str:
        if t.kind != "scalar":
            raise ValueError(t)
        if t.name == "bool":
            return "true" if value else "false"
        if t.is_float:
            if em is not None and t.name in _TYPE_NEEDS:
                ext, feat = _TYPE_NEEDS[t.name]
                em.need(ext, feat)
            return _float_text(float(value), t)
        v = wrap(int(value), t)
        body = literal_int_text(v, t)
        suffix = {"i32": "", "u32": "u", "i64": "l", "u64": "ul"}.get(t.name)
        if suffix is None:
            if em is not None:
                self.type_name(t, em)
            return f"{_SCALAR[t.name]}({body})"
        if em is not None and t.name in _TYPE_NEEDS:
            ext, feat = _TYPE_NEEDS[t.name]
            em.need(ext, feat)
        return body + suffix

    def convert(self, e: E, dst: CType, em=None, explicit=False, implicit_ok=False) -> E:
        src = e.tt.unqualified() if e.tt is not None else e.ct
        dst = dst.unqualified()
        if dst.kind in ("unknown", "void") or src.kind in ("unknown",):
            return E(e.text, dst if dst.kind not in ("unknown", "void") else e.ct, e.prec, src, e.lit)
        if src == BALLOT and dst != BALLOT:
            if dst.is_bool:
                em.need("GL_KHR_shader_subgroup_ballot", subgroup="ballot")
                return E(f"subgroupBallotBitCount({e.text}) != 0u", BOOL, 7)
            em.fail(None, "a subgroup ballot used as a 32-bit integer (subgroups may be wider than 32 lanes; "
                    "use __popc / __ffs on it or test single bits)")
        if src == dst:
            return E(e.text, dst, e.prec, dst, e.lit)
        if e.lit is not None and dst.kind == "scalar" and src.kind == "scalar":
            v = e.lit
            if dst.is_bool:
                v = bool(v)
            elif dst.is_int:
                v = wrap(int(v), dst)   # float -> int truncates toward zero
            else:
                v = float(v)
            text = self.literal(v, dst, em)
            return E(text, dst, PREC_UNARY if text.startswith("-") else PREC_PRIMARY, lit=v)
        if src.kind == "scalar" and dst.kind == "scalar":
            if implicit_ok and not explicit and (src.name, dst.name) in _IMPLICIT:
                return E(e.text, dst, e.prec, src)
            if dst.is_bool and (src.is_int or src.is_float):
                return E(f"{e.paren(PREC_REL)} != {self.literal(0, src, em)}", BOOL, 7)
            if em is not None and src.is_int and dst.is_int and src.bits != dst.bits and _spec_constant(e.text):
                # a width change of a spec constant would be a spec-constant UConvert/SConvert, which SPIR-V
                # before 1.4 allows only in kernels: convert at run time through a function call instead
                st, dn = self.type_name(src, em), self.type_name(dst, em)
                hname = em.helper(f"cuport_{dn}_of_{st}", f"{dn} cuport_{dn}_of_{st}({st} v) {{ return {dn}(v); }}")
                return E(f"{hname}({unparen(e.text)})", dst, PREC_PRIMARY)
            return E(f"{self.type_name(dst, em)}({unparen(e.text)})", dst, PREC_PRIMARY)
        if src.kind == "vector" and dst.kind == "vector" and src.n == dst.n:
            return E(f"{self.type_name(dst, em)}({e.text})", dst, PREC_PRIMARY)
        if src.kind == "scalar" and dst.kind == "vector" and explicit:
            return E(f"{self.type_name(dst, em)}({e.text})", dst, PREC_PRIMARY)
        if src.kind == "struct" and dst.kind == "struct" and src.name == dst.name:
            return E(e.text, dst, e.prec)
        if em is not None:
            em.fail(None, f"a conversion from `{src}` to `{dst}`")
        raise ValueError((src, dst))

    def unsigned_negate(self, em, e: E) -> E:
        return E(f"{self.literal(0, e.ct, em)} - {e.paren(PREC_ADD - 1)}", e.ct, PREC_ADD)

    def signed_remainder(self, em, a: E, b: E, t: CType) -> E:
        # GLSL's % on negative operands is undefined (glslang emits OpSMod): C truncates toward zero
        tn = self.type_name(t, em)
        name = em.helper(f"cuport_rem_{tn}", f"{tn} cuport_rem_{tn}({tn} a, {tn} b) {{ return a - b * (a / b); }}")
        return E(f"{name}({unparen(a.text)}, {unparen(b.text)})", t, PREC_PRIMARY)

    def array_constructor(self, em, t: CType, parts) -> str:
        return f"{self.type_name(t, em)}({', '.join(parts)})"

    def vector_constructor(self, em, t: CType, parts) -> str:
        return f"{self.type_name(t, em)}({', '.join(parts)})"

    def struct_constructor(self, em, t: CType, parts) -> str:
        return f"{self.type_name(t, em)}({', '.join(parts)})"

    # a loop over the subgroup size: `for (int o = int(cuport_subgroup_size) / 2; o > 0; o /= 2)`
    _SG_LOOP_NAMES = {"int", "uint", SUBGROUP_SIZE}
    _SG_LOOP_STEP = re.compile(r"^\s*(\w+)\s*(?:/=\s*2|>>=\s*1|\*=\s*2|<<=\s*1)\s*$")

    def implicit_unroll(self, init: str, cond: str, inc: str) -> str | None:
        """[[unroll]] for a loop whose start is the subgroup size (a spec constant) and that halves or doubles its
        counter: NVRTC unrolls the constant-32 original into straight SHFLs, while the NVIDIA Vulkan driver kept
        it a loop (a back branch and a counter per step, SASS in docs/performance.md) unless told to."""
        m = re.match(r"^\s*(?:int|uint)\s+(\w+)\s*=\s*(.+)$", init)
        step = self._SG_LOOP_STEP.match(inc)
        if not m or not step or step.group(1) != m.group(1) or SUBGROUP_SIZE not in m.group(2):
            return None
        if not set(re.findall(r"[A-Za-z_]\w*", m.group(2))) <= self._SG_LOOP_NAMES:
            return None
        bound = re.match(rf"^\s*{m.group(1)}\s*(?:>|>=|<|<=)\s*(.+)$", cond)
        if not bound or not set(re.findall(r"[A-Za-z_]\w*", bound.group(1))) <= self._SG_LOOP_NAMES:
            return None
        return "unroll"

    def loop_attribute(self, em, hint: str) -> str:
        if hint == "unroll":
            em.need("GL_EXT_control_flow_attributes")
            return "[[unroll]] "
        if hint == "nounroll":
            em.need("GL_EXT_control_flow_attributes")
            return "[[dont_unroll]] "
        return ""

    # ------------------------------------------------------------------ execution model
    def thread_builtin(self, var, comp, em) -> E:
        base = {"threadIdx": "gl_LocalInvocationID", "blockIdx": "gl_WorkGroupID", "blockDim": "gl_WorkGroupSize",
                "gridDim": "gl_NumWorkGroups"}[var]
        return E(f"{base}.{comp}", U32)

    def warp_size(self, em) -> E:
        return E(self.subgroup_size(em), I32, tt=U32)

    def subgroup_size(self, em) -> str:
        """The subgroup size as the shader spells it: a specialization constant the host sets (see end_kernel)."""
        em.need("GL_KHR_shader_subgroup_basic", subgroup="basic")
        em.subgroup_size_used = True
        return SUBGROUP_SIZE

    def lane_id(self, em, t=U32) -> E:
        em.need("GL_KHR_shader_subgroup_basic", subgroup="basic")
        return E("gl_SubgroupInvocationID", t, tt=U32)

    def warp_id(self, em, t=U32) -> E:
        em.need("GL_KHR_shader_subgroup_basic", subgroup="basic")
        return E("gl_SubgroupID", t, tt=U32)

    def block_barrier(self, em, global_memory: bool) -> list[str]:
        if global_memory:
            return ["groupMemoryBarrier();", "barrier();"]
        # in a Vulkan compute shader barrier() is OpControlBarrier(Workgroup, Workgroup, AcquireRelease |
        # WorkgroupMemory): it already orders shared memory, an extra memoryBarrierShared() is a second fence
        return ["barrier();"]

    def warp_barrier(self, em) -> list[str]:
        em.need("GL_KHR_shader_subgroup_basic", subgroup="basic")
        return ["subgroupBarrier();"]

    def fence(self, em, name) -> str:
        return "groupMemoryBarrier()" if name == "__threadfence_block" else "memoryBarrier()"

    # ------------------------------------------------------------------ parameters and memory
    def bind_param_pointer(self, em, root: Root, node) -> PtrBinding:
        if id(node) in em.an.assigned:
            var = em.fresh(root.name + "_off")
            em.prologue.append(f"int {var} = 0;")
            return PtrBinding(root, E(var, I32))
        return PtrBinding(root, None)

    def scalar_param(self, em, decl, name, t) -> E:
        return E(name, t.unqualified())

    def shared_declared(self, em, info):
        pass

    def binding_value(self, em, b: PtrBinding):
        return b.root, b.off

    def pointer_value(self, em, n, ptr):
        em.fail(n, f"the pointer value `{n.text}` (GLSL has no pointers: only indexing through one)")

    def same_memory(self, em, n, op, flag, a_n, b_n) -> E:
        # GLSL has no pointer values: the host sets the flag (a push constant) when it binds one buffer to both
        return E(flag if op == "==" else f"!{flag}", BOOL, PREC_UNARY if op == "!=" else PREC_PRIMARY)

    def pointer_decl(self, em, d, t, name, init) -> list[str]:
        if init is not None and em.is_null(init):
            # `T *p = nullptr;`: an offset at the null offset until an assignment binds it to its array
            if id(d) not in em.an.assigned:
                em.fail(d, f"the pointer `{d.spelling}` that is always null")
            var = em.fresh(name + "_off")
            em.pending_pointer(d, "", E(var, I32))
            return [f"int {var} = {em.null_offset().text};  // {d.spelling} = nullptr"]
        if init is None:
            # an element offset into the array its first assignment points into (every later one: the same)
            var = em.fresh(name + "_off")
            em.pending_pointer(d, "", E(var, I32))
            return [f"int {var} = 0;  // {d.spelling}: bound by its first assignment"]
        root, off = em.ptr(init)
        assigned = id(d) in em.an.assigned
        if root.kind in ("scalar", "shared_scalar"):
            if assigned or (off is not None and off.lit != 0):
                em.fail(d, f"pointer arithmetic on the address of a scalar (`{d.spelling}`)")
            em.frame.ptrs[id(d)] = PtrBinding(root, None)
            return []
        if not assigned and (off is None or (off.lit is not None and off.lit == 0)):
            em.frame.ptrs[id(d)] = PtrBinding(root, None)
            return [f"// {d.spelling} -> {root.name}"] if self.keep_comments else []
        var = em.fresh(name + "_off")
        em.frame.ptrs[id(d)] = PtrBinding(root, E(var, I32))
        ov = em.conv(off, I32) if off is not None else E("0", I32, lit=0)
        return [f"int {var} = {ov.text};  // {d.spelling} = {root.name} + {var}"]

    def _var_binding(self, em, n):
        s = n.strip
        b = em.frame.ptrs.get(id(s.ref)) if s.kind == "DECL_REF_EXPR" and s.ref is not None else None
        if b is None or b.off is None or b.off.lit is not None or not b.off.text.isidentifier():
            em.fail(n, f"changing the pointer `{n.text}`")
        return b

    def pointer_step(self, em, n, c, op) -> E:
        b = self._var_binding(em, c)
        if op.startswith("post"):
            return E(f"{b.off.text}{op[4:]}", I32)
        return E(f"{op}{b.off.text}", I32, PREC_UNARY)

    def pointer_step_value(self, em, s):
        b = self._var_binding(em, s.children[0])
        op = s.op
        text = f"{b.off.text}{op[4:]}" if op.startswith("post") else f"{op}{b.off.text}"
        return b.root, E(text, I32, PREC_PRIMARY if op.startswith("post") else PREC_UNARY)

    def pointer_assign(self, em, n, a_n, b_n, op) -> E:
        if op == "=" and em.is_null(b_n):
            b = self._var_binding(em, a_n)
            return E(f"{b.off.text} = {em.null_offset().text}", I32, 14)
        if op == "=":
            root, off = em.ptr(b_n)
            if root.kind in ("buffer", "shared", "local", "constant", "param_array") and root.of is None:
                em.bind_pending(a_n, root)     # a pointer declared without a value: bound here
        b = self._var_binding(em, a_n)
        if op == "=":
            if b.root is None:
                em.fail(n, f"the pointer `{a_n.text}` declared without a value and assigned `{b_n.text}` (GLSL "
                           "keeps a pointer as an offset into one array)")
            if root.key != b.root.key:
                em.fail(n, f"the pointer `{a_n.text}` re-pointed to another array (`{b_n.text}`)")
            ov = em.conv(off, I32) if off is not None else E("0", I32, lit=0)
            return E(f"{b.off.text} = {ov.text}", I32, 14)
        if op in ("+=", "-="):
            d = em.x(b_n)
            if not ct.promote(d.ct).is_int:
                em.fail(n, f"pointer arithmetic `{n.text}`")
            return E(f"{b.off.text} {op} {em.conv(d, I32).text}", I32, 14)
        em.fail(n, f"`{n.text}` on a pointer")

    def deref(self, em, root: Root, off, i, mode, node) -> str:
        if i is not None and off is not None and i.lit == 0:
            i = None
        idx = off if i is None else (i if off is None else em.binary_value("+", off, i, None))
        if root.kind in ("scalar", "shared_scalar", "buffer_field"):
            if idx is not None and idx.lit != 0:
                em.fail(node, f"indexing past the scalar behind `{node.text}`")
            return root.name
        if idx is None:
            idx = E("0", I32, lit=0)
        carrier = self._carrier(em, root, node)
        if carrier is not None:
            # one element of a buffer whose accesses all go through its vecN view: component i % N of i / N
            em.access(carrier, mode)
            idx = em.index(idx, node)
            n = E(self.literal(carrier.elem.n, idx.ct, em), idx.ct, lit=carrier.elem.n)
            q, r = em.binary_value("/", idx, n, None), em.binary_value("%", idx, n, None)
            return f"{carrier.name}[{q.text}][{r.text}]"
        if root.kind == "buffer" or root.kind == "shared":
            em.access(root, mode)
        idx = em.index(idx, node)
        if root.flat:
            return self._flat_index(em, root, idx)
        return f"{root.name}[{idx.text}]"

    def _flat_index(self, em, root: Root, idx) -> str:
        """Element `idx` of the flattened multi-dimensional array `root` (a row pointer's offset): one subscript
        per dimension, `a[idx / n1][idx % n1]` (idx >= 0: C allows no element before the array's first)."""
        out, dims = [], root.dims
        for k in range(len(dims)):
            inner = math.prod(dims[k + 1:])
            e = idx
            if inner != 1:
                e = em.binary_value("/", e, E(self.literal(inner, idx.ct, em), idx.ct, lit=inner), None)
            if k > 0:
                e = em.binary_value("%", e, E(self.literal(dims[k], idx.ct, em), idx.ct, lit=dims[k]), None)
            out.append(f"[{e.text}]")
        return root.name + "".join(out)

    def _carrier(self, em, root: Root, node) -> Root | None:
        """The vector view that carries the scalar buffer (or scalar view) `root`, when its views were merged."""
        if root.kind != "buffer" or root.elem.kind != "scalar":
            return None
        base = root.of or root.name
        vec = em.merged_views.get(base)
        if vec is None or vec.elem.unqualified() != root.elem.unqualified():
            return None
        info = em.buffers[base]
        if info["elem"].unqualified() == vec:
            return info["root"]
        return em.typed_view(base, vec, node, info["root"].decl)

    # device function pointer parameters: specialise on where they point
    def pointer_param_key(self, em, root: Root):
        if root.kind in ("buffer", "shared", "constant", "shared_scalar"):
            return ("global", root.key, root.flat)
        if root.kind in ("local", "param_array"):
            return ("array", str(root.elem), root.dims, root.flat)
        if root.kind == "scalar":
            return ("scalar", str(root.elem))
        em.fail(None, f"a pointer into `{root.name}` passed to a function")

    def pointer_param(self, em, fr, pnode, pname, root: Root, pt) -> list[str]:
        if root.kind in ("buffer", "shared", "constant"):
            var = pname + "_off"
            fr.ptrs[id(pnode)] = PtrBinding(root, E(var, I32))
            return [f"int {var}"]
        if root.kind == "shared_scalar":
            fr.ptrs[id(pnode)] = PtrBinding(root, None)
            return []
        if root.kind in ("local", "param_array"):
            r = Root(pname, "param_array", root.elem, "private", pnode, root.dims, flat=root.flat)
            var = pname + "_off"
            fr.ptrs[id(pnode)] = PtrBinding(r, E(var, I32))
            dims = "".join(f"[{d}]" for d in root.dims)
            return [f"inout {self.type_name(ct.array(root.elem, (1,)).elem, em)} {pname}{dims}", f"int {var}"]
        if root.kind == "scalar":
            fr.ptrs[id(pnode)] = PtrBinding(Root(pname, "scalar", root.elem, "private", pnode), None)
            return [f"inout {self.type_name(root.elem, em)} {pname}"]
        em.fail(pnode, f"pointer parameter `{pnode.spelling}`")

    def pointer_arg(self, em, root: Root, off, node) -> list[str]:  # noqa: C901
        ov = em.conv(off, I32).text if off is not None else "0"
        if root.kind in ("buffer", "shared", "constant"):
            return [ov]
        if root.kind == "shared_scalar":
            return []
        if root.kind in ("local", "param_array"):
            return [root.name, ov]
        if root.kind == "scalar":
            return [root.name]
        em.fail(node, f"the pointer argument `{node.text}`")

    def function_name(self, em, fn, key, subst, binds) -> str:
        base = self.ident(fn.name)
        same = [v for v in em.functions.values() if v[0] and (v[0] == base or v[0].startswith(base + "_v"))]
        fname = base if not same else f"{base}_v{len(same) + 1}"
        return em.fresh(fname) if fname in em.idents else fname

    def ref_param(self, em, t, name, written, space, const, volatile) -> str:
        # copy-in/copy-out: `inout` only when the callee writes it (refs.check_call refuses aliasing calls)
        return f"{'inout ' if written else ''}{self.type_name(t, em)} {name}"

    def function_head(self, em, ret, name, params) -> str:
        return f"{self.type_name(ret, em)} {name}({', '.join(params)})"

    # ------------------------------------------------------------------ ballots kept in variables
    def ballot_var(self, em, d, init) -> bool:
        s = init.strip
        if s.kind != "CALL_EXPR" or em.callee_name(s) not in ("__ballot_sync", "__ballot", "__activemask"):
            return False
        return True

    def ballot_decl(self, em, d, name, init) -> list[str]:
        if id(d) in em.an.assigned:
            em.fail(d, f"the ballot mask `{d.spelling}` modified after it is taken")
        e = em.x(init)
        em.frame.ballots.add(id(d))
        return [f"uvec4 {name} = {e.text};"]

    # ------------------------------------------------------------------ calls
    def builtin_type(self, em, name, n):
        return None

    def math_name(self, em, base, t) -> str:
        row = intrinsics.table().get(base)
        return row.glsl if row is not None and row.glsl not in ("", "helper") else base

    def call(self, em, name, n, args) -> E | None:
        if name in SHUFFLES:
            return self.shuffle(em, name, n, args)
        if name in ("__ballot_sync", "__ballot", "__activemask"):
            em.need("GL_KHR_shader_subgroup_ballot", subgroup="ballot")
            if name == "__activemask":
                return E("subgroupBallot(true)", U32, tt=BALLOT)
            if name == "__ballot_sync":
                em.check_mask(n, args[0])
            p = em.cond(args[-1])
            return E(f"subgroupBallot({p.text})", U32, tt=BALLOT)
        if name in ("__any_sync", "__all_sync", "__any", "__all", "__uni_sync"):
            if name.endswith("_sync"):
                em.check_mask(n, args[0])
            em.need("GL_KHR_shader_subgroup_vote", subgroup="vote")
            p = em.cond(args[-1])
            fn = {"__any": "subgroupAny", "__all": "subgroupAll", "__uni": "subgroupAllEqual"}[name.replace("_sync", "")]
            return E(f"{fn}({p.text})", I32, tt=BOOL)
        if name in ("__reduce_add_sync", "__reduce_min_sync", "__reduce_max_sync", "__reduce_and_sync",
                    "__reduce_or_sync", "__reduce_xor_sync"):
            em.check_mask(n, args[0])
            em.need("GL_KHR_shader_subgroup_arithmetic", subgroup="arithmetic")
            v = em.x(args[1])
            t = ct.promote(v.ct)
            v = em.conv(v, t)
            op = name[len("__reduce_"):-len("_sync")]
            fn = {"add": "subgroupAdd", "min": "subgroupMin", "max": "subgroupMax", "and": "subgroupAnd",
                  "or": "subgroupOr", "xor": "subgroupXor"}[op]
            return E(f"{fn}({v.text})", t)
        if name in ("__syncthreads", "__syncwarp"):
            em.fail(n, f"`{name}()` inside an expression")
        if name in ("__syncthreads_count", "__syncthreads_and", "__syncthreads_or"):
            return self.sync_reduce(em, name, n, args)
        if name in ("__popc", "__popcll", "__ffs", "__ffsll") and args:
            a = em.x(args[0])
            if a.tt == BALLOT:
                em.need("GL_KHR_shader_subgroup_ballot", subgroup="ballot")
                if name.startswith("__popc"):
                    return E(f"int(subgroupBallotBitCount({a.text}))", I32)
                return E(f"(subgroupBallotBitCount({a.text}) == 0u ? 0 : int(subgroupBallotFindLSB({a.text})) + 1)",
                         I32)
        if name.split("_")[0] in ("atomicAdd", "atomicSub", "atomicExch", "atomicMin", "atomicMax",
                                  "atomicAnd", "atomicOr", "atomicXor", "atomicCAS", "atomicInc", "atomicDec"):
            base = name.split("_")[0]
            return self.atomic(em, base, n, args)
        r = self.math(em, name, n, args)
        if r is not None:
            return r
        return None


def translate(path: str, text: str | None = None, **options):
    """GLSL compute shaders for every kernel of a CUDA file (porter.translate.api target)."""
    from porter.translate.kernel.driver import translate_path
    return translate_path(path, "glsl", GlslTarget(**options), text=text, **options)

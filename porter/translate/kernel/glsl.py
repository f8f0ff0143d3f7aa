"""GLSL 450 compute shaders for Vulkan (one shader per kernel): the GLSL spelling of everything the emitter
walks. Pointers become std430 storage buffers indexed at base + offset; by-value parameters a push-constant
block (a uniform block beyond 128 bytes); the block shape comes from specialization constants 0, 1, 2 so
the host dispatches exactly the CUDA grid; warp intrinsics become GL_KHR_shader_subgroup_* operations."""
from __future__ import annotations

import math

from porter.translate.kernel import ctype as ct
from porter.translate import warp_sizing
from porter.translate.kernel.ctype import BOOL, F32, F64, I32, U32, CType
from porter.translate.kernel.pointers import PtrBinding, Root
from porter.translate.kernel.manifest import (DEFAULT_LOCAL_SIZE, access_of, glsl_manifest, layout_matches_c,
                                      param_layout)
from porter.translate.kernel.manifest import type_name as mtype
from porter.translate.kernel.target import (PREC_ADD, PREC_PRIMARY, PREC_REL, PREC_UNARY, E, Target,
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

# CUDA math -> GLSL builtin (float and double overloads). None: a helper below.
_MATH = {
    "sqrt": "sqrt", "rsqrt": "inversesqrt", "exp": "exp", "exp2": "exp2", "log": "log", "log2": "log2",
    "sin": "sin", "cos": "cos", "tan": "tan", "asin": "asin", "acos": "acos", "atan": "atan", "sinh": "sinh",
    "cosh": "cosh", "tanh": "tanh", "asinh": "asinh", "acosh": "acosh", "atanh": "atanh", "fabs": "abs",
    "floor": "floor", "ceil": "ceil", "trunc": "trunc", "rint": "roundEven", "nearbyint": "roundEven",
    "pow": "pow", "fmin": "min", "fmax": "max", "fma": "fma", "atan2": "atan",
    "round": None, "fmod": None, "copysign": None, "exp10": None, "log10": None, "cbrt": None, "hypot": None,
    "fdim": None, "expm1": None, "log1p": None, "rcbrt": None,
}
# functions GLSL only has for 32-bit floats
_FLOAT_ONLY = {"exp", "exp2", "log", "log2", "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh",
               "asinh", "acosh", "atanh", "pow", "atan2", "exp10", "log10", "cbrt", "hypot", "expm1", "log1p",
               "rcbrt"}
_FAST = {"__expf": "exp", "__logf": "log", "__log2f": "log2", "__log10f": "log10", "__sinf": "sin",
         "__cosf": "cos", "__tanf": "tan", "__powf": "pow", "__exp10f": "exp10", "__fsqrt_rn": "sqrt",
         "__fsqrt_rz": "sqrt", "__fmaf_rn": "fma", "__fmaf_rz": "fma", "__fma_rn": "fma", "__dsqrt_rn": "sqrt"}
_UNSUPPORTED_MATH = {"erf", "erfc", "erfinv", "erfcinv", "lgamma", "tgamma", "j0", "j1", "y0", "y1", "jn", "yn",
                     "normcdf", "normcdfinv", "remainder", "remquo", "frexp", "ldexp", "modf", "nextafter",
                     "ilogb", "logb", "scalbn", "cyl_bessel_i0", "cyl_bessel_i1", "sinpi", "cospi"}
_SHUFFLES = {"__shfl_sync": "idx", "__shfl_up_sync": "up", "__shfl_down_sync": "down", "__shfl_xor_sync": "xor",
             "__shfl": "idx", "__shfl_up": "up", "__shfl_down": "down", "__shfl_xor": "xor"}
_ATOMICS = {"atomicAdd", "atomicSub", "atomicExch", "atomicMin", "atomicMax", "atomicAnd", "atomicOr",
            "atomicXor", "atomicCAS", "atomicInc", "atomicDec"}


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


class GlslTarget(Target):
    name = "glsl"
    display_name = "GLSL (Vulkan)"
    reserved = RESERVED
    keep_comments = True
    lower_warp_sync = True
    named_constants = True
    named_template_params = True
    size_t_64 = True
    ballot_type = BALLOT
    file_extension = ".comp"

    def __init__(self, **options):
        super().__init__(**options)
        self.float_atomics = options.get("float_atomics", "ext")

    # ------------------------------------------------------------------ kernel frame
    def begin_kernel(self, em):
        em.prologue = []

    def end_kernel(self, em):
        """Layouts (buffers, parameter block, shared memory, spec constants) decided once; a parameter or
        buffer whose bytes differ between CUDA and std430 fails here, with its location."""
        structs = {k: em.struct_fields(k) for k in em.struct_used}
        buffers = []
        for i, (name, info) in enumerate(em.buffers.items()):
            elem = info["elem"].unqualified()
            node = info["node"]
            if elem.kind == "struct" and elem.name not in structs:
                em.use_struct(elem.name, node)
                structs = {k: em.struct_fields(k) for k in em.struct_used}
            if elem.kind == "unknown" or (elem.kind == "scalar" and elem.is_bool) or \
                    not layout_matches_c(elem, structs, "std430"):
                em.fail(node, f"buffer `{info['cuda_name']}` of `{elem}` (its std430 array stride differs from "
                        "CUDA's element size)")
            bits = elem.bits if elem.kind == "scalar" else (elem.elem.bits if elem.kind == "vector" else 32)
            if bits in (8, 16):
                em.need(f"GL_EXT_shader_{bits}bit_storage", f"storageBuffer{bits}BitAccess")
            rw = em.roots_rw.get(("buffer", name), set())
            access = access_of(info, rw)
            quals = []
            if access == "readonly":
                quals.append("readonly")
            elif access == "writeonly":
                quals.append("writeonly")
            if info["restrict"]:
                quals.append("restrict")
            if access == "readwrite" and em.has_barrier:
                quals.append("coherent")
            block = em.fresh(_suffixed(name, "buf"))
            q = " ".join(quals) + " " if quals else ""
            decl = (f"layout(std430, set = 0, binding = {i}) {q}buffer {block} "
                    f"{{ {self.type_name(elem, em)} {name}[]; }};")
            size = ct.size_align(elem, "std430", structs)[0]
            entry = {"name": info["cuda_name"], "set": 0, "binding": i, "type": mtype(elem), "elem_size": size,
                     "access": access, "restrict": bool(info["restrict"]), "_decl": decl}
            if info.get("alias_bits"):
                b = info["alias_bits"]
                ut = "uint" if b == 32 else "uint64_t"
                entry["_alias"] = (f"layout(std430, set = 0, binding = {i}) buffer {em.fresh(_suffixed(name, 'u' + str(b) + '_buf'))} "
                                   f"{{ {ut} {name}_u{b}[]; }};  // the same buffer, for compare-and-swap")
            buffers.append(entry)
        # by-value parameters: 32-bit slots for bool / 8 / 16-bit scalars (the manifest says so)
        slots = []
        for s in em.scalars:
            t = s["type"].unqualified()
            widened = None
            if t.kind == "scalar" and (t.is_bool or t.bits < 32):
                widened = U32 if (t.is_bool or not t.is_signed) else I32
            if t.kind == "struct" and not layout_matches_c(t, structs, "std430"):
                em.fail(s["node"], f"struct parameter `{s['cuda_name']}` (its std430 layout differs from CUDA's)")
            if t.kind == "vector" and t.n == 3:
                em.fail(s["node"], f"parameter `{s['cuda_name']}` of `{t}` (vec3 alignment differs from CUDA's)")
            slots.append(dict(s, type=widened or t, orig=t))
        playout = param_layout(slots, structs, len(buffers))
        block_lines = []
        if slots:
            if playout.uniform:
                head = f"layout(std140, set = 0, binding = {playout.binding}) uniform cuport_params"
            else:
                head = "layout(push_constant, std430) uniform cuport_params"
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
        em.glsl = {"buffers": buffers, "playout": playout, "params_block": "\n".join(block_lines),
                   "local_size": local, "local_known": known, "spec": spec, "shared": shared_decls,
                   "structs": structs}

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
            binds = ", ".join(f"{b['name']}={b['binding']}" for b in g["buffers"]) or "none"
            where = "uniform block" if g["playout"].uniform else "push constants"
            params = f"{where} ({g['playout'].size} bytes)" if g["playout"].slots else "none"
            header = [f"cuport translate --to glsl: kernel `{label}` of {os.path.basename(result.path)}",
                      f"bindings: {binds}; by-value parameters: {params}"]
            spec = [dict(s, default=f"{s['default']}u") for s in g["spec"]]
            text = render("glsl/kernel.comp.j2", extensions=sorted(em.extensions, key=_ext_order), header=header,
                          local_size=g["local_size"], spec_constants=spec, structs=structs,
                          buffers=buffers, params_block=g["params_block"], constants=constants,
                          shared=g["shared"], helpers=list(em.helpers.values()),
                          functions=[t for _n, t in em.functions.values()], prologue=em.prologue,
                          body="\n".join(em.lines))
            result.shaders[label] = text
            result.manifests[label] = glsl_manifest(label, em, shape, g["local_size"], g["local_known"],
                                                    g["buffers"], g["playout"], g["spec"], g["structs"])

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
        em.need("GL_KHR_shader_subgroup_basic", subgroup="basic")
        return E("gl_SubgroupSize", I32, tt=U32)

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

    def pointer_decl(self, em, d, t, name, init) -> list[str]:
        if init is None:
            em.fail(d, f"the uninitialised pointer `{d.spelling}`")
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
        b = self._var_binding(em, a_n)
        if op == "=":
            root, off = em.ptr(b_n)
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
        if root.kind == "buffer" or root.kind == "shared":
            em.access(root, mode)
        if idx is None:
            idx = E("0", I32, lit=0)
        idx = em.index(idx, node)
        return f"{root.name}[{idx.text}]"

    # device function pointer parameters: specialise on where they point
    def pointer_param_key(self, em, root: Root):
        if root.kind in ("buffer", "shared", "constant", "shared_scalar"):
            return ("global", root.key)
        if root.kind in ("local", "param_array"):
            return ("array", str(root.elem), root.dims)
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
            r = Root(pname, "param_array", root.elem, "private", pnode, root.dims)
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
        return _MATH.get(base) or base

    def call(self, em, name, n, args) -> E | None:
        if name in _SHUFFLES:
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

    # --- subgroup shuffles: CUDA returns the caller's own value where the source lane is out of range ---
    def shuffle(self, em, name, n, args) -> E:
        kind = _SHUFFLES[name]
        if name.endswith("_sync"):
            em.check_mask(n, args[0])
            args = args[1:]
        v = em.x(args[0])
        t = v.ct.unqualified()
        if t.kind == "scalar" and t.bits < 32 and not t.is_float:
            t = ct.promote(t)
            v = em.conv(v, t)
        tn = self.type_name(t, em)
        if t.kind == "scalar" and t.name in ("i64", "u64", "f16", "i16", "u16", "i8", "u8"):
            em.need("GL_EXT_shader_subgroup_extended_types_" + {"i64": "int64", "u64": "int64", "f16": "float16",
                                                                 "i16": "int16", "u16": "int16", "i8": "int8",
                                                                 "u8": "int8"}[t.name])
        lane = em.conv(em.x(args[1]), U32)
        width = None
        if len(args) > 2:
            wn = args[2]
            if not wn.is_warp_size():
                width = em.conv(em.x(wn), U32)
                wv = wn.value
                if isinstance(wv, int):
                    if wv & (wv - 1):
                        em.fail(wn, f"shuffle width {wv} (not a power of two)")
                    if wv > 4:
                        em.note("CP907", wn, f"shuffle width {wv} needs subgroups of at least {wv} lanes "
                                f"(Vulkan subgroups can be 4..128 wide)")
                        em.min_subgroup = max(em.min_subgroup or 0, wv)
        em.need("GL_KHR_shader_subgroup_basic", subgroup="basic")
        c = args[1].value
        if width is None and isinstance(c, int) and c >= 4:
            need = 1 << int(c).bit_length()
            em.note("CP907", args[1], f"`{n.text}` reaches lane {c} away: it needs subgroups of at least {need} "
                    "lanes (Vulkan subgroups can be 4..128 wide)")
            em.min_subgroup = max(em.min_subgroup or 0, need)
        if width is None:
            if kind == "idx":
                em.need("GL_KHR_shader_subgroup_shuffle", subgroup="shuffle")
                return E(f"subgroupShuffle({v.text}, {lane.paren(7)} & (gl_SubgroupSize - 1u))", t)
            ops = {"up": ("subgroupShuffleUp", "gl_SubgroupInvocationID >= d"),
                   "down": ("subgroupShuffleDown", "gl_SubgroupInvocationID + d < gl_SubgroupSize"),
                   "xor": ("subgroupShuffleXor", "(gl_SubgroupInvocationID ^ d) < gl_SubgroupSize")}
            fn, ok = ops[kind]
            em.need("GL_KHR_shader_subgroup_shuffle" if kind == "xor" else "GL_KHR_shader_subgroup_shuffle_relative",
                    subgroup="shuffle" if kind == "xor" else "shuffle_relative")
            hname = f"cuport_shfl_{kind}_{tn}"
            em.helper(hname, f"{tn} {hname}({tn} v, uint d)\n{{\n    {tn} r = {fn}(v, d);  "
                      f"// every invocation takes part\n    return ({ok}) ? r : v;\n}}")
            return E(f"{hname}({v.text}, {lane.text})", t)
        em.need("GL_KHR_shader_subgroup_shuffle", subgroup="shuffle")
        hname = f"cuport_shfl_{kind}_w_{tn}"
        src = {"idx": "(l & ~(w - 1u)) + (s & (w - 1u))",
               "up": "l - s", "down": "l + s", "xor": "l ^ s"}[kind]
        ok = {"idx": "true", "up": "(l & (w - 1u)) >= s", "down": "(l & (w - 1u)) + s < w",
              "xor": "(l ^ s) < (l & ~(w - 1u)) + w"}[kind]
        st = "uint"
        em.helper(hname, f"{tn} {hname}({tn} v, {st} s, uint w)\n{{\n    uint l = gl_SubgroupInvocationID;\n"
                  f"    bool ok = {ok};\n    {tn} r = subgroupShuffle(v, ok ? min({src}, gl_SubgroupSize - 1u) : l);\n"
                  f"    return ok ? r : v;\n}}")
        return E(f"{hname}({v.text}, {lane.text}, {width.text})", t)

    def sync_reduce(self, em, name, n, args) -> E:
        em.has_barrier = True
        p = em.cond(args[0])
        em.shared.setdefault("cuport_sync_count", {"name": "cuport_sync_count", "type": I32, "elem": I32,
                                                   "extern": False, "node": None, "dims": ()})
        op = name[len("__syncthreads_"):]
        em.helper("cuport_syncthreads_count",
                  "int cuport_syncthreads_count(bool p)\n{\n    barrier();\n"
                  "    if (gl_LocalInvocationIndex == 0u) cuport_sync_count = 0;\n    barrier();\n"
                  "    if (p) atomicAdd(cuport_sync_count, 1);\n    barrier();\n    int r = cuport_sync_count;\n"
                  "    barrier();\n    return r;\n}")
        call = f"cuport_syncthreads_count({p.text})"
        if op == "count":
            return E(call, I32)
        if op == "and":
            return E(f"int({call} == int(gl_WorkGroupSize.x * gl_WorkGroupSize.y * gl_WorkGroupSize.z))", I32)
        return E(f"int({call} != 0)", I32)

    # --- atomics ---
    def atomic(self, em, base, n, args) -> E:
        root, off = em.ptr(args[0])
        if root.kind not in ("buffer", "shared", "shared_scalar", "buffer_field"):
            em.fail(n, f"`{base}` on {root.kind} memory (GLSL atomics work on buffers and shared memory)")
        et = root.elem.unqualified()
        lv = self.deref(em, root, off, None, "rw", args[0])
        vals = [em.x(a) for a in args[1:]]
        where = "Buffer" if root.kind in ("buffer", "buffer_field") else "Shared"
        if et.kind != "scalar":
            em.fail(n, f"`{base}` on `{et}`")
        if et.name in ("i64", "u64"):
            em.need("GL_EXT_shader_atomic_int64", f"shader{where}Int64Atomics")
            self.type_name(et, em)
        if et.is_float:
            return self.float_atomic(em, base, n, root, off, lv, et, vals, where)
        if not et.is_int or et.bits < 32:
            em.fail(n, f"`{base}` on `{et}`")
        v = [em.conv(x, et) for x in vals]
        simple = {"atomicAdd": "atomicAdd", "atomicExch": "atomicExchange", "atomicMin": "atomicMin",
                  "atomicMax": "atomicMax", "atomicAnd": "atomicAnd", "atomicOr": "atomicOr", "atomicXor": "atomicXor"}
        if base in simple:
            return E(f"{simple[base]}({lv}, {v[0].text})", et)
        if base == "atomicSub":
            neg = f"-{v[0].paren(PREC_UNARY)}" if et.is_signed else f"{self.literal(0, et, em)} - {v[0].paren(3)}"
            return E(f"atomicAdd({lv}, {neg})", et)
        if base == "atomicCAS":
            return E(f"atomicCompSwap({lv}, {v[0].text}, {v[1].text})", et)
        if base in ("atomicInc", "atomicDec"):
            if et.name != "u32":
                em.fail(n, f"`{base}` on `{et}`")
            hname = f"cuport_{base}_{root.name}"
            idx = "[i]" if root.kind != "shared_scalar" else ""
            new = "(old >= limit) ? 0u : old + 1u" if base == "atomicInc" else \
                "(old == 0u || old > limit) ? limit : old - 1u"
            em.helper(hname, f"uint {hname}(int i, uint limit)\n{{\n    uint old = {root.name}{idx};\n"
                      f"    for (;;) {{\n        uint prev = atomicCompSwap({root.name}{idx}, old, {new});\n"
                      f"        if (prev == old) return old;\n        old = prev;\n    }}\n}}")
            iv = em.index(off, n).text if off is not None else "0"
            return E(f"{hname}({iv}, {v[0].text})", et)
        em.fail(n, f"`{base}`")

    def float_atomic(self, em, base, n, root, off, lv, et, vals, where) -> E:
        bits = et.bits
        v = [em.conv(x, et) for x in vals]
        if base == "atomicAdd" and self.float_atomics == "ext":
            em.need("GL_EXT_shader_atomic_float", f"shader{where}Float{bits}AtomicAdd")
            em.note("CP907", n, f"float atomicAdd needs the Vulkan feature shader{where}Float{bits}AtomicAdd "
                    "(VK_EXT_shader_atomic_float); translate with float_atomics='cas' for a compare-and-swap loop",
                    "info")
            return E(f"atomicAdd({lv}, {v[0].text})", et)
        if base == "atomicExch" and self.float_atomics == "ext":
            em.need("GL_EXT_shader_atomic_float", f"shader{where}Float{bits}Atomics")
            return E(f"atomicExchange({lv}, {v[0].text})", et)
        if base not in ("atomicAdd", "atomicExch", "atomicMin", "atomicMax", "atomicCAS") or root.kind != "buffer":
            em.fail(n, f"`{base}` on `{et}` in {root.kind} memory")
        # compare-and-swap loop on an integer view of the same buffer (an aliased block at the same binding)
        ut = ct.U32 if bits == 32 else ct.U64
        un = self.type_name(ut, em)
        if bits == 64:
            em.need("GL_EXT_shader_atomic_int64", "shaderBufferInt64Atomics")
        info = em.buffers[root.name]
        info["alias_bits"] = bits
        alias = f"{root.name}_u{bits}"
        to_u = "floatBitsToUint" if bits == 32 else "doubleBitsToUint64"
        to_f = "uintBitsToFloat" if bits == 32 else "uint64BitsToDouble"
        tn = self.type_name(et, em)
        if base == "atomicCAS":
            hname = f"cuport_atomicCAS_{root.name}"
            em.helper(hname, f"{tn} {hname}(int i, {tn} cmp, {tn} val)\n{{\n    return {to_f}(atomicCompSwap("
                      f"{alias}[i], {to_u}(cmp), {to_u}(val)));\n}}")
        else:
            op = {"atomicAdd": "f + v", "atomicExch": "v", "atomicMin": "min(f, v)", "atomicMax": "max(f, v)"}[base]
            hname = f"cuport_{base}_{root.name}"
            em.helper(hname, f"{tn} {hname}(int i, {tn} v)\n{{\n    {un} old = {alias}[i];\n    for (;;) {{\n"
                      f"        {tn} f = {to_f}(old);\n        {un} prev = atomicCompSwap({alias}[i], old, "
                      f"{to_u}({op}));\n        if (prev == old) return f;\n        old = prev;\n    }}\n}}")
        iv = em.index(off, n).text if off is not None else "0"
        return E(f"{hname}({iv}, {', '.join(x.text for x in v)})", et)

    # --- math ---
    def math(self, em, name, n, args) -> E | None:
        sig = em.signature(n)
        fast = _FAST.get(name)
        base = None
        if fast:
            base = fast
        elif name in _MATH:
            base = name
        elif name.endswith("f") and name[:-1] in _MATH:
            base = name[:-1]
        if base is not None:
            ft = F32 if (name.endswith("f") and name[:-1] in _MATH) or fast else \
                (sig[0] if sig and sig[0].is_float else F32)
            if not em.uses_double:
                ft = F32
            if ft == F64 and base in _FLOAT_ONLY:
                em.fail(n, f"double-precision `{name}` (GLSL has it for 32-bit floats only)")
            xs = [em.conv(em.x(a), ft) for a in args]
            g = _MATH.get(base)
            if g is not None:
                return E(f"{g}({', '.join(x.text for x in xs)})", ft)
            return self.math_helper(em, base, ft, xs, n)
        if name in _UNSUPPORTED_MATH or (name.endswith("f") and name[:-1] in _UNSUPPORTED_MATH):
            em.fail(n, f"`{name}` (no GLSL builtin with CUDA's accuracy)")
        xs = [em.x(a) for a in args]
        if name in ("min", "max", "umin", "umax", "llmin", "llmax", "ullmin", "ullmax") and len(xs) == 2:
            t = ct.common(xs[0].ct, xs[1].ct)
            if name.startswith("u"):
                t = ct.U64 if "ll" in name else U32
            a, b = em.conv(xs[0], t), em.conv(xs[1], t)
            return E(f"{name.lstrip('ul')[:3]}({a.text}, {b.text})", t)
        if name in ("abs", "llabs", "labs") and len(xs) == 1:
            t = ct.promote(xs[0].ct)
            return E(f"abs({em.conv(xs[0], t).text})", t)
        if name in ("__fdividef", "__fdiv_rn", "__fdiv_rz", "fdividef"):
            a, b = em.conv(xs[0], F32), em.conv(xs[1], F32)
            return E(f"{a.paren(3)} / {b.paren(2)}", F32, 3)
        if name in ("__fadd_rn", "__fadd_rz", "__fsub_rn", "__fmul_rn", "__fmul_rz", "__dadd_rn", "__dmul_rn"):
            ft = F64 if name.startswith("__d") and em.uses_double else F32
            a, b = em.conv(xs[0], ft), em.conv(xs[1], ft)
            op = {"add": "+", "sub": "-", "mul": "*"}[name[3:6]]
            return E(f"{a.paren(4)} {op} {b.paren(3)}", ft, 4 if op != "*" else 3)
        if name in ("__frcp_rn", "__frcp_rz", "__drcp_rn"):
            a = em.conv(xs[0], F32)
            return E(f"1.0 / {a.paren(2)}", F32, 3)
        if name in ("__saturatef", "saturate"):
            a = em.conv(xs[0], F32)
            return E(f"clamp({a.text}, 0.0, 1.0)", F32)
        bitcast = {"__float_as_int": ("floatBitsToInt", F32, I32), "__int_as_float": ("intBitsToFloat", I32, F32),
                   "__float_as_uint": ("floatBitsToUint", F32, U32),
                   "__uint_as_float": ("uintBitsToFloat", U32, F32)}
        if name in bitcast:
            fn, at, rt = bitcast[name]
            return E(f"{fn}({em.conv(xs[0], at).text})", rt)
        if name in ("__double_as_longlong", "__longlong_as_double"):
            self.type_name(ct.I64, em)
            if name == "__double_as_longlong":
                return E(f"doubleBitsToInt64({em.conv(xs[0], F64).text})", ct.I64)
            return E(f"int64BitsToDouble({em.conv(xs[0], ct.I64).text})", F64)
        rounding = {"rn": "roundEven", "rz": "trunc", "rd": "floor", "ru": "ceil"}
        if name.startswith(("__float2int_", "__float2uint_", "__double2int_", "__float2ll_")) and \
                name[-2:] in rounding:
            rt = U32 if "uint" in name else (ct.I64 if "ll" in name else I32)
            ft = F64 if name.startswith("__double") and em.uses_double else F32
            a = em.conv(xs[0], ft)
            inner = a.text if name.endswith("rz") else f"{rounding[name[-2:]]}({a.text})"
            return E(f"{self.type_name(rt, em)}({inner})", rt)
        if name.startswith(("__int2float_", "__uint2float_")):
            return E(f"float({xs[0].text})", F32)
        if name in ("isnan", "isinf", "__isnanf", "__isinff", "isnanf", "isinff", "__isnan", "__isinf"):
            fn = "isnan" if "nan" in name else "isinf"
            a = xs[0] if xs[0].ct.is_float else em.conv(xs[0], F32)
            return E(f"{fn}({a.text})", I32, tt=BOOL)
        if name in ("isfinite", "__finitef", "__isfinited"):
            a = xs[0] if xs[0].ct.is_float else em.conv(xs[0], F32)
            return E(f"!(isnan({a.text}) || isinf({a.text}))", I32, PREC_UNARY, tt=BOOL)
        if name in ("signbit", "__signbitf"):
            a = em.conv(xs[0], F32)
            return E(f"int(floatBitsToUint({a.text}) >> 31)", I32)
        if name == "__popc":
            return E(f"bitCount({em.conv(xs[0], U32).text})", I32)
        if name == "__popcll":
            a = em.conv(xs[0], ct.U64)
            return E(f"(bitCount(uint({a.paren(1)} & 0xffffffffu)) + bitCount(uint({a.paren(5)} >> 32)))", I32)
        if name == "__clz":
            return E(f"(31 - findMSB({em.conv(xs[0], U32).text}))", I32)
        if name == "__clzll":
            a = em.conv(xs[0], ct.U64)
            hname = em.helper("cuport_clzll", "int cuport_clzll(uint64_t x)\n{\n    uint hi = uint(x >> 32);\n"
                              "    return hi != 0u ? 31 - findMSB(hi) : 63 - findMSB(uint(x));\n}")
            return E(f"{hname}({a.text})", I32)
        if name == "__ffs":
            return E(f"(findLSB({em.conv(xs[0], I32).text}) + 1)", I32)
        if name == "__ffsll":
            a = em.conv(xs[0], ct.I64)
            hname = em.helper("cuport_ffsll", "int cuport_ffsll(int64_t x)\n{\n    uint lo = uint(x);\n"
                              "    return lo != 0u ? findLSB(lo) + 1 : (uint(x >> 32) != 0u ? findLSB(uint(x >> 32)) + 33 : 0);\n}")
            return E(f"{hname}({a.text})", I32)
        if name == "__brev":
            return E(f"bitfieldReverse({em.conv(xs[0], U32).text})", U32)
        if name in ("__mul24", "__umul24"):
            t = I32 if name == "__mul24" else U32
            a, b = em.conv(xs[0], t), em.conv(xs[1], t)
            return E(f"{a.paren(3)} * {b.paren(2)}", t, 3)
        if name in ("__mulhi", "__umulhi"):
            t = I32 if name == "__mulhi" else U32
            tn = self.type_name(t, em)
            fn = "imulExtended" if t == I32 else "umulExtended"
            hname = em.helper(f"cuport{name}", f"{tn} cuport{name}({tn} a, {tn} b)\n{{\n    {tn} hi, lo;\n"
                              f"    {fn}(a, b, hi, lo);\n    return hi;\n}}")
            return E(f"{hname}({em.conv(xs[0], t).text}, {em.conv(xs[1], t).text})", t)
        if name in ("__ldg", "__ldcg", "__ldca", "__ldcs", "__ldlu", "__ldcv"):
            return E(em.ptr_lvalue(args[0], "r"), em.ty(n).unqualified())
        if name.startswith("make_"):
            t = em.parse_type(name[5:])
            if t.kind == "vector":
                parts = [em.conv(x, t.elem).text for x in xs]
                return E(self.vector_constructor(em, t, parts), t)
            if t.kind == "scalar":
                return em.conv(xs[0], t)
        if name in ("clock", "clock64", "__nanosleep", "__trap", "__brkpt", "__prof_trigger", "globaltimer"):
            em.fail(n, f"`{name}`", "CP907")
        return None

    def math_helper(self, em, base, ft, xs, n) -> E:
        """CUDA math functions GLSL has no builtin for, with C's definitions (round: halfway away from zero,
        fmod: truncated quotient, copysign: the sign bit)."""
        tn = self.type_name(ft, em)
        bodies = {
            "round": "return trunc(x + (x < 0.0 ? -0.5 : 0.5));",
            "fmod": "return x - y * trunc(x / y);",
            "copysign": "return (floatBitsToUint(y) >> 31) != 0u ? -abs(x) : abs(x);",
            "exp10": "return exp2(x * 3.3219280948873623);",
            "log10": "return log2(x) * 0.30102999566398120;",
            "cbrt": "return sign(x) * pow(abs(x), 1.0 / 3.0);",
            "rcbrt": "return sign(x) / pow(abs(x), 1.0 / 3.0);",
            "hypot": "float m = max(abs(x), abs(y));\n    if (m == 0.0) return 0.0;\n"
                     "    float a = x / m, b = y / m;\n    return m * sqrt(a * a + b * b);",
            "fdim": "return x > y ? x - y : 0.0;",
            "expm1": "return abs(x) < 1e-5 ? x + 0.5 * x * x : exp(x) - 1.0;",
            "log1p": "float u = 1.0 + x;\n    return u == 1.0 ? x : log(u) * x / (u - 1.0);",
        }
        body = bodies[base]
        if ft == F64:
            body = body.replace("float ", "double ").replace("floatBitsToUint(y) >> 31", "doubleBitsToUint64(y) >> 63")
            if "doubleBitsToUint64" in body:
                self.type_name(ct.U64, em)
        params = f"{tn} x" + (f", {tn} y" if base in ("fmod", "copysign", "hypot", "fdim") else "")
        hname = em.helper(f"cuport_{base}_{tn}", f"{tn} cuport_{base}_{tn}({params})\n{{\n    {body}\n}}")
        return E(f"{hname}({', '.join(x.text for x in xs)})", ft)


def translate(path: str, text: str | None = None, **options):
    """GLSL compute shaders for every kernel of a CUDA file (porter.translate.api target)."""
    from porter.translate.kernel.driver import translate_path
    return translate_path(path, "glsl", GlslTarget(**options), text=text, **options)

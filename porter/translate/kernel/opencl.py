"""OpenCL C 1.2 from the same walk as GLSL; only the differences are here. C keeps its pointers (with address
spaces inferred from where they point), C's implicit conversions and most math names. OpenCL 1.2 has no
sub-groups: by default a warp is one work-item (warpSize 1, shuffles return the caller's value, ballots are
the caller's bit), which is exact for code written against warpSize and reported as a diagnostic;
`subgroups="khr"` emits cl_khr_subgroups / cl_khr_subgroup_shuffle* calls instead."""
from __future__ import annotations

import math
import re

from porter.translate import warp_sizing
from porter.translate.kernel import struct_params
from porter.translate.kernel import ctype as ct
from porter.translate.kernel import asserts
from porter.translate.kernel import device_globals
from porter.translate.kernel import halfprec
from porter.translate.kernel import opencl_local
from porter.translate.kernel import opencl_vec3 as v3
from porter.translate.kernel.ctype import BOOL, I32, U32, CType
from porter.translate.kernel.manifest import DEFAULT_LOCAL_SIZE, cl_type_name, field_of, opencl_manifest
from porter.translate.kernel.opencl_builtins import ATOMIC_CL, SHUFFLES, SPACE, OpenclBuiltins
from porter.translate.kernel.pointers import PtrBinding, Root
from porter.translate.kernel.target import (BINARY_PREC, PREC_EQ, PREC_PRIMARY, PREC_UNARY, E, Target,
                                            literal_int_text, wrap)

RESERVED = frozenset("""
kernel __kernel global __global local __local constant __constant private __private read_only write_only
read_write __read_only __write_only __read_write image1d_t image2d_t image3d_t sampler_t event_t half
bool2 bool3 bool4 char2 char4 uchar2 uchar4 short2 short4 ushort2 ushort4 int2 int3 int4 uint2 uint3 uint4
long2 long4 ulong2 ulong4 float2 float3 float4 double2 double3 double4 uchar ushort uint ulong complex imaginary
auto break case char const continue default do double else enum extern float for goto if inline int long
register restrict return short signed sizeof static struct switch typedef union unsigned void volatile while
get_global_id get_local_id get_group_id get_local_size get_num_groups get_global_size barrier mem_fence
""".split())

# OpenCL C built-in functions: a kernel or function of that name is not callable (PoCL: "no kernel 'step'")
BUILTINS = frozenset("""
clamp degrees max min mix radians sign smoothstep step cross dot distance length normalize fast_distance
fast_length fast_normalize abs abs_diff add_sat hadd rhadd clz mad_hi mad_sat mul_hi rotate sub_sat upsample
popcount mad24 mul24 isequal isnotequal isgreater isgreaterequal isless islessequal islessgreater isfinite isinf
isnan isnormal isordered isunordered signbit any all bitselect select read_mem_fence write_mem_fence
async_work_group_copy async_work_group_strided_copy wait_group_events prefetch printf shuffle shuffle2 vec_step
nan get_work_dim get_global_offset acos acosh acospi asin asinh asinpi atan atan2 atanh atanpi atan2pi cbrt
ceil copysign cos cosh cospi erfc erf exp exp2 exp10 expm1 fabs fdim floor fma fmax fmin fmod fract frexp hypot
ilogb ldexp lgamma lgamma_r log log2 log10 log1p logb mad maxmag minmag modf nextafter pow pown powr remainder
remquo rint rootn round rsqrt sin sincos sinh sinpi sqrt tan tanh tanpi tgamma trunc
""".split()) | frozenset(f"{p}_{f}" for p in ("native", "half") for f in
                         "cos divide exp exp2 exp10 log log2 log10 powr recip rsqrt sin sqrt tan".split())



class OpenclTarget(OpenclBuiltins, Target):
    const_qualifier = "__constant"
    name = "opencl"
    display_name = "OpenCL C 1.2"
    native_pointers = True
    c_conversions = True
    reserved = RESERVED
    keep_comments = True
    lower_warp_sync = True
    named_constants = True
    named_template_params = False     # one file for every instantiation: substitute the values
    size_t_64 = True
    ballot_type = U32
    file_extension = ".cl"

    def __init__(self, **options):
        super().__init__(**options)
        self.subgroups = options.get("subgroups", "none")
        if self.subgroups not in ("none", "khr"):
            raise ValueError("subgroups must be 'none' or 'khr'")

    # ------------------------------------------------------------------ kernel frame
    def begin_kernel(self, em):
        em.prologue = []
        em.local_decls = []
        em.cl_warp_size = 1 if self.subgroups == "none" else None
        em.cl_packed = {}         # 3-vector type -> its packed definition (opencl_vec3)
        em.cl_fn_locals = {}      # device function specialisation -> the __local arrays it takes (opencl_local)
        em.cl_name = re.sub(r"\W+", "_", em.label).strip("_")
        if em.cl_name in BUILTINS or em.cl_name in RESERVED or "__" in em.cl_name or \
                em.cl_name.startswith(("atomic_", "atom_", "convert_", "as_", "vload", "vstore", "get_")):
            # a built-in's name: the program would have no kernel of that name; the manifest's entry_point
            # and cuda_kernel keep both names
            taken = {f.name for f in em.model.functions}
            base = em.cl_name.replace("__", "_").strip("_") + "_kernel"
            em.cl_name, i = base, 2
            while em.cl_name in taken:
                em.cl_name, i = f"{base}{i}", i + 1
            em.note("CP907", None, f"kernel `{em.label}` is named `{em.cl_name}` in the OpenCL program (`{em.label}` "
                                   f"is an OpenCL C built-in or reserved name); the manifest's entry_point says so",
                    "info")
        em.warp_emulated = None

    def end_kernel(self, em):
        device_globals.in_order(em)
        v3.check_copies(em)
        for p in em.params:     # a buffer of structs needs the struct's definition in the program
            elem = p["info"].get("elem") if p["kind"] == "buffer" else None
            if elem is not None and elem.kind == "struct":
                em.use_struct(elem.name, p["info"]["node"])
        structs = {k: em.struct_fields(k) for k in em.struct_used}
        params, local_args, manifest_params = [], [], []
        for i, p in enumerate(em.params):
            info = p["info"]
            if p["kind"] == "buffer":
                elem = info["elem"]
                if elem.kind == "scalar" and elem.is_bool:
                    em.fail(info["node"], f"buffer `{info['cuda_name']}` of `bool`")
                rw = em.roots_rw.get(("buffer", info["name"]), set())
                const = "const " if elem.const or rw == {"r"} else ""
                # compared with another parameter (`d_out == d_in`): the host may pass one buffer for both
                paired = any(info in f for f in em.same_memory.values())
                rest = " restrict" if info["restrict"] and not paired else ""
                # halves stored as `half` (vload_half / vstore_half); a 3-vector in CUDA's 12-byte layout (opencl_vec3)
                storage = self._elem_storage(elem.unqualified(), em) if halfprec.is_half(elem) else \
                    self.type_name(v3.memory_type(em, elem.unqualified()), em)
                params.append(f"__global {const}{storage}*{rest} {info['name']}")
                access = "readonly" if const else ("writeonly" if rw == {"w"} else "readwrite")
                manifest_params.append({"name": info["cuda_name"], "kind": "buffer", "index": len(params) - 1,
                                        "type": cl_type_name(elem.unqualified()),
                                        "elem_size": ct.c_size(elem.unqualified(), structs) or 0, "access": access})
            else:
                t = info["type"]
                name = info["name"]
                halfprec.check_param(em, t, info["node"], info["cuda_name"])
                if t.kind == "scalar" and t.is_bool:
                    # bool is not a valid kernel argument type in OpenCL C
                    params.append(f"uint {name}_arg")
                    em.prologue.insert(0, f"bool {name} = {name}_arg != 0u;")
                    mt = "uint"
                else:
                    params.append(f"{self.type_name(t, em)} {name}")
                    mt = cl_type_name(t)
                manifest_params.append({"name": info["cuda_name"], "kind": "scalar", "index": len(params) - 1,
                                        "type": mt, "size": ct.c_size(t, structs) or 4})
        for mp, p in zip([m for m in manifest_params], em.params):
            if p["info"].get("field_of"):     # a field of a struct parameter holding pointers (struct_params.py)
                mp["field_of"] = field_of(p["info"]["field_of"])
        device_vars = []
        for info in em.device_globals.values():    # after the CUDA parameters, before dynamic __local ones
            params.append(self._device_global_decl(em, info))
            device_vars.append(device_globals.manifest_entry(info, structs, index=len(params) - 1))
            manifest_params.append({"name": info["cuda_name"], "kind": "device_global", "index": len(params) - 1,
                                    "type": cl_type_name(info["elem"]), "count": info["count"]})
        assert_info = getattr(em, "assert_buffer", None)
        if assert_info is not None:       # the hidden assert buffer (asserts.py), after the device variables
            params.append(f"__global uint* {assert_info['name']}")
            manifest_params.append({"name": asserts.BUFFER, "kind": "assert", "index": len(params) - 1,
                                    "type": "uint", "count": asserts.WORDS})
            em.cl_assert = asserts.manifest_entry(em, index=len(params) - 1)
        for info in em.shared.values():
            need = warp_sizing.extern_slots(em, info["node"]) if info["extern"] else None
            if need:
                # per-warp slots: the host sized them for warps of 32 lanes, these warps may be one lane wide;
                # the kernel keeps the host's argument (same arguments) and uses an array that always suffices
                params.append(f"__local {self.type_name(info['elem'], em)}* {em.fresh(info['name'] + '_host')}")
                em.local_decls.append(f"__local {self.type_name(info['elem'], em)} {info['name']}[{need}];")
            elif info["extern"]:
                params.append(f"__local {self.type_name(info['elem'], em)}* {info['name']}")
            if info["extern"]:
                shape = em.launch
                local_args.append({"name": info["name"], "index": len(params) - 1,
                                   "elem_size": ct.c_size(info["elem"], structs) or 0,
                                   "bytes": shape.shmem if shape is not None else None,
                                   "launch_expr": shape.shmem_text if shape is not None else None})
                manifest_params.append({"name": info["name"], "kind": "local", "index": len(params) - 1,
                                        "type": cl_type_name(info["elem"])})
            else:
                t = info["type"]
                dims = "".join(f"[{d}]" for d in info["dims"])
                elem = t.elem if t.kind == "array" else t
                em.local_decls.append(f"__local {self.type_name(elem, em)} {info['name']}{dims};")
        shape = em.launch
        block = list(shape.block) if shape is not None else [None, None, None]
        known = all(isinstance(v, int) for v in block)
        local = [v if isinstance(v, int) else d for v, d in zip(block, DEFAULT_LOCAL_SIZE)]
        em.cl = {"params": params, "manifest_params": manifest_params, "local_args": local_args,
                 "device_globals": device_vars,
                 "local_size": local, "local_known": known, "structs": structs}
        if em.warp_emulated is not None:
            em.note("CP907", em.warp_emulated, "OpenCL 1.2 has no sub-groups: warp operations run on one-lane "
                    "warps (warpSize = 1), exact for code written against warpSize; translate with "
                    "subgroups='khr' for cl_khr_subgroups", "warning")

    def assemble(self, result, outputs, unit):
        import os

        from porter.translate.render import render
        if not outputs:
            result.text = ""
            return
        exts, structs, consts, helpers, functions, kernels = [], {}, {}, {}, {}, []
        packed = {}
        for label, em, shape in outputs:
            # everything shares one file: a kernel whose definitions clash with an earlier one is not emitted
            clash = [n for n, (text, _t, _v) in em.consts.items() if consts.get(n, text) != text]
            clash += [f for f, text in em.functions.values() if functions.get(f, text) != text]
            # a struct local to a kernel template has the fields of each instance (`struct U { T data[N]; }`)
            clash += [n for n, fields in em.cl["structs"].items()
                      if structs.get(n, self.struct_text(em, n, fields)) != self.struct_text(em, n, fields)]
            if clash:
                from porter.lint.registry import diagnostic
                msg = f"kernel `{label}` not translated: `{clash[0]}` is defined differently by another kernel"
                result.failed_kernels[label] = "CP907: " + msg[msg.index(":") + 2:]
                src = unit.model.source
                result.diagnostics.append(diagnostic("CP907", msg, src.path, em.fn.node.start, em.fn.node.start,
                                                     source=src, kernel=label))
                continue
            for e in em.extensions:
                if e not in exts:
                    exts.append(e)
            for name, text in em.cl_packed.items():
                packed.setdefault(name, text)
            for name, fields in em.cl["structs"].items():
                structs.setdefault(name, self.struct_text(em, name, fields))
            for name, (text, _t, _v) in em.consts.items():
                consts[name] = text
            for name, text in em.const_arrays.items():
                if text:
                    functions.setdefault("const:" + name, text)
            for name, text in em.helpers.items():
                helpers.setdefault(name, text)
            for fname, text in em.functions.values():
                functions[fname] = text
            kernels.append({"name": em.cl_name, "params": ",\n    ".join(em.cl["params"]) or "void",
                            "prologue": em.local_decls + em.prologue, "body": "\n".join(em.lines),
                            "comment": f"CUDA kernel `{label}`"})
            result.manifests[label] = opencl_manifest(label, em, shape, em.cl["local_size"], em.cl["local_known"],
                                                      em.cl["manifest_params"], em.cl["local_args"])
        if not kernels:
            result.text = ""
            return
        emulated = any(em.warp_emulated is not None for label, em, _s in outputs if label in result.manifests)
        header = [f"cuport translate --to opencl: {os.path.basename(result.path)} (OpenCL C 1.2)",
                  "host: global size = CUDA grid * block per dimension, local size = CUDA block"]
        result.text = render("opencl/kernel.cl.j2", header=header, extensions=exts,
                             warp_size=1 if emulated else None, structs=list(packed.values()) + list(structs.values()),
                             constants=[f"#define {n} {t}" for n, t in consts.items()],
                             helpers=list(helpers.values()), functions=list(functions.values()), kernels=kernels)

    def struct_text(self, em, name, fields) -> str:
        fields = [(f, v3.struct_field_type(em, t)) for f, t in fields]     # 3-vector members in CUDA's layout
        body = "\n".join(f"    {self.array_decl(em, t, f) if t.kind == 'array' else self.type_name(t, em) + ' ' + f};"
                         for f, t in fields)
        return f"typedef struct {self.ident(name)}\n{{\n{body}\n}} {self.ident(name)};"

    # ------------------------------------------------------------------ types / literals / conversions
    def scalar_type_name(self, t: CType, em=None) -> str:
        if t.name == "f16":
            return "float"        # half is a storage format here (halfprec): values are floats
        if em is not None and t.name == "f64":
            em.need("cl_khr_fp64")
        return cl_type_name(t)

    def vector_type_name(self, t: CType, em=None) -> str:
        if t.elem.name == "f16":
            return f"float{t.n}"
        return cl_type_name(t)

    def _elem_storage(self, elem: CType, em=None) -> str:
        """The element type of a buffer (or of a pointer into one): `half` for halves and pairs of halves."""
        return "half" if halfprec.is_half(elem) else self.type_name(elem, em)

    def half_address(self, em, n):
        """(pointer, index) of a half lvalue in a buffer, for vstore_half(value, index, pointer)."""
        s = n.strip
        base_n, idx_n = (s.children[0], s.children[1]) if s.kind == "ARRAY_SUBSCRIPT_EXPR" else (s.children[0], None)
        root, _off = em.ptr(base_n)
        self._check_half_base(em, root, base_n)
        if root.kind in ("buffer",):
            em.access(root, "w")
        idx = em.index(em.x(idx_n), idx_n).text if idx_n is not None else "0"
        return self.native(em, base_n).text, idx

    def _check_half_base(self, em, root, base_n):
        # a half2 buffer is a `half *` read in pairs: only the parameter itself indexes it in pairs
        if root.elem.kind == "vector" and not (base_n.strip.kind == "DECL_REF_EXPR" and root.kind == "buffer"):
            em.fail(base_n, f"a pointer into the half2 buffer `{root.name}` other than the parameter (OpenCL "
                            "stores half2 as pairs of halves)")

    def literal(self, value, t: CType, em=None) -> str:
        if t.name == "bool":
            return "true" if value else "false"
        if t.name == "f16":
            import numpy as np
            value, t = float(np.float16(value)), ct.F32      # a half value, held in a float
        if t.is_float:
            v = float(value)
            if math.isinf(v) or math.isnan(v):
                return ("INFINITY" if v > 0 else "(-INFINITY)") if math.isinf(v) else "NAN"
            if t.name == "f32":
                import numpy as np
                s = str(np.float32(v))
            else:
                s = repr(v)
                if em is not None:
                    em.need("cl_khr_fp64")
            if "e" not in s and "." not in s:
                s += ".0"
            return s + ("f" if t.name == "f32" else "")
        v = wrap(int(value), t)
        body = literal_int_text(v, t)
        if t.name == "i64" and v == -(1 << 63):
            return "(-9223372036854775807L - 1)"
        if t.name == "i32" and v == -(1 << 31):
            return "(-2147483647 - 1)"
        suffix = {"i32": "", "u32": "u", "i64": "L", "u64": "UL"}.get(t.name)
        if suffix is None:
            return f"({cl_type_name(t)}){body}"
        return body + suffix

    def convert(self, e: E, dst: CType, em=None, explicit=False, implicit_ok=False) -> E:
        src = e.tt.unqualified() if e.tt is not None else e.ct
        dst = dst.unqualified()
        if v3.is_packed(src) and not v3.is_packed(dst):
            e = v3.load(em, e, src)      # a 3-vector in CUDA's layout read as an OpenCL vector
            src = e.ct.unqualified()
        elif v3.is_packed(dst):
            return v3.store(em, self.convert(e, e.ct if v3.is_vec3(e.ct) else dst, em), dst) \
                if not v3.is_packed(src) else e
        if dst.kind in ("unknown", "void") or src.kind == "unknown":
            return e
        if src == dst:
            return E(e.text, dst, e.prec, dst, e.lit)
        if halfprec.is_half(src) or halfprec.is_half(dst):
            h = self._half_convert(e, src, dst, em, explicit)
            if h is not None:
                return h
        if e.lit is not None and dst.kind == "scalar" and src.kind == "scalar" and not dst.is_bool:
            v = wrap(int(e.lit), dst) if dst.is_int else float(e.lit)
            text = self.literal(v, dst, em)
            return E(text, dst, PREC_UNARY if text.startswith(("-", "(")) else PREC_PRIMARY, lit=v)
        if dst.is_bool and src.kind == "scalar" and src.is_float:
            # OpenCL C refuses a floating condition of `?:` (C and CUDA allow it): compare with zero
            return E(f"{e.paren(PREC_EQ - 1)} != 0", dst, PREC_EQ)
        if src.kind == "vector" or dst.kind == "vector":
            if src.kind == "vector" and dst.kind == "vector" and src.n == dst.n:
                return E(f"convert_{self.type_name(dst, em)}({e.text})", dst)
            if explicit and dst.kind == "vector":
                return E(f"({self.type_name(dst, em)})({e.text})", dst, PREC_UNARY)
            if em is not None:
                em.fail(None, f"a conversion from `{src}` to `{dst}`")
        if explicit or (src.kind == "scalar" and dst.kind == "scalar" and not dst.is_bool and
                        (src.bits > dst.bits or (src.is_float and not dst.is_float))):
            # narrowing conversions are written out (they are implicit in C, explicit here for the reader)
            return E(f"({self.type_name(dst, em)}){e.paren(PREC_UNARY)}", dst, PREC_UNARY)
        return E(e.text, dst, e.prec, src, e.lit)

    def _half_convert(self, e: E, src: CType, dst: CType, em, explicit) -> E | None:
        """Half values are floats here: to half, round (cuport_rh); from half, convert the float."""
        if halfprec.is_half(dst) and not dst.is_bool:
            if src.kind == dst.kind and (src.kind == "scalar" or src.n == dst.n) and halfprec.is_half(src):
                return E(e.text, dst, e.prec)
            if e.lit is not None and dst.kind == "scalar" and src.kind == "scalar":
                return E(self.literal(e.lit, dst, em), dst, PREC_PRIMARY, lit=e.lit)
            if src.kind == "scalar" and dst.kind == "scalar":
                f = e if src == ct.F32 else E(f"(float){e.paren(PREC_UNARY)}", ct.F32, PREC_UNARY)
                return halfprec.round_to_half(em, self, f, dst)
            if src.kind == "vector" and dst.kind == "vector" and src.n == dst.n:
                f = e if src.elem == ct.F32 else E(f"convert_float{dst.n}({e.text})", src)
                return halfprec.round_to_half(em, self, f, dst)
            return None
        # from half: the float it is held in, converted as a float would be
        f = ct.F32 if src.kind == "scalar" else ct.vector("f32", src.n)
        return self.convert(E(e.text, f, e.prec, f), dst, em, explicit)

    def unsigned_negate(self, em, e: E) -> E:
        return E(f"-{e.paren(PREC_UNARY)}", e.ct, PREC_UNARY)

    def signed_remainder(self, em, a: E, b: E, t: CType) -> E:
        return E(f"{a.paren(3)} % {b.paren(2)}", t, 3)     # C99 semantics: truncation, like CUDA

    def array_constructor(self, em, t: CType, parts) -> str:
        return "{" + ", ".join(parts) + "}"

    def vector_constructor(self, em, t: CType, parts) -> str:
        return f"({self.type_name(t, em)})({', '.join(parts)})"

    def struct_constructor(self, em, t: CType, parts) -> str:
        return f"({self.type_name(t, em)}){{{', '.join(v3.pack_parts(em, t, parts))}}}"

    def place(self, em, n, e: E) -> E:
        return v3.place(em, n, e)

    def loop_attribute(self, em, hint: str) -> str:
        if hint == "unroll":
            return "#pragma unroll"
        if hint == "nounroll":
            return "#pragma unroll 1"
        if hint.startswith("unroll "):
            return f"#pragma {hint}"
        return ""

    # ------------------------------------------------------------------ execution model
    def thread_builtin(self, var, comp, em) -> E:
        fn = {"threadIdx": "get_local_id", "blockIdx": "get_group_id", "blockDim": "get_local_size",
              "gridDim": "get_num_groups"}[var]
        return E(f"(uint){fn}({'xyz'.index(comp)})", U32, PREC_UNARY)

    def _emulate(self, em, node=None):
        if em.warp_emulated is None:
            em.warp_emulated = node if node is not None else em.fn.node

    def warp_size(self, em) -> E:
        if self.subgroups == "none":
            self._emulate(em)
            return E("CUPORT_WARP_SIZE", I32)
        em.need("cl_khr_subgroups")
        return E("(int)get_sub_group_size()", I32, PREC_UNARY)

    def lane_id(self, em, t=U32) -> E | None:
        if self.subgroups == "none":
            return None
        em.need("cl_khr_subgroups")
        return E("get_sub_group_local_id()", t, tt=U32)

    def warp_id(self, em, t=U32) -> E | None:
        if self.subgroups == "none":
            return None
        em.need("cl_khr_subgroups")
        return E("get_sub_group_id()", t, tt=U32)

    def block_barrier(self, em, global_memory: bool) -> list[str]:
        if global_memory:
            return ["barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);"]
        return ["barrier(CLK_LOCAL_MEM_FENCE);"]

    def warp_barrier(self, em) -> list[str]:
        if self.subgroups == "none":
            self._emulate(em)
            return ["mem_fence(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);  // __syncwarp(): one-lane warp"]
        em.need("cl_khr_subgroups")
        return ["sub_group_barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);"]

    def fence(self, em, name) -> str:
        return "mem_fence(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE)"

    # ------------------------------------------------------------------ pointers: C keeps them
    def bind_param_pointer(self, em, root: Root, node) -> PtrBinding:
        return PtrBinding(root, None)

    def scalar_param(self, em, decl, name, t) -> E:
        return E(name, t.unqualified())

    def shared_declared(self, em, info):
        opencl_local.declared(em, info)     # hoisted to the kernel, passed down as a parameter

    def call_extra_args(self, em, key) -> list[str]:
        return opencl_local.call_args(em, key)

    def use_local(self, em, name):
        opencl_local.use(em, name)

    def binding_value(self, em, b: PtrBinding):
        return b.root, b.off

    def same_memory(self, em, n, op, flag, a_n, b_n) -> E:
        # C compares two `__global` pointers for equality whatever they point to: the host passing one buffer
        # for both makes them equal, as in CUDA (end_kernel leaves the pair without `restrict`)
        a, b = self.native(em, a_n), self.native(em, b_n)
        p = BINARY_PREC[op]
        return E(f"{a.paren(p)} {op} {b.paren(p - 1)}", BOOL, p)

    def native(self, em, n) -> E:
        """A pointer expression spelled as C (the emitter has already checked where it points)."""
        if em.is_null(n):
            return E("0", em.ty(n))     # a null pointer constant of any address space
        if n.kind == "CALL_EXPR":
            from porter.translate.kernel.class_templates import dependent_operator
            view = dependent_operator(em, n)        # `(T *)p + k` with T dependent (em.ptr resolved it so too)
            n = view if view is not None and view.kind == "BINARY_OPERATOR" else n
        k = n.kind
        if k == "PAREN_EXPR":
            e = self.native(em, n.children[-1])
            return E(f"({e.text})", e.ct)
        if k in ("CSTYLE_CAST_EXPR", "CXX_STATIC_CAST_EXPR", "CXX_CONST_CAST_EXPR", "CXX_REINTERPRET_CAST_EXPR",
                 "UNEXPOSED_EXPR"):
            inner = [c for c in n.children if c.kind not in ("TYPE_REF", "NAMESPACE_REF")]
            e = self.native(em, inner[-1])
            t = em.ty(n)
            if k != "UNEXPOSED_EXPR" and t.kind == "pointer" and t.elem.kind != "void":
                root, _off = em.ptr(n)      # a reinterpreting cast (em.ptr has checked it): C casts the pointer
                it = em.ty(inner[-1])
                pe = ct.array(it.elem, it.dims[1:]) if it.kind == "array" and len(it.dims) > 1 else it.elem
                if it.kind in ("pointer", "array") and pe.unqualified() != t.elem.unqualified():
                    if halfprec.is_half(t.elem) and t.elem.kind == "vector" and root.space in ("global", "constant"):
                        # lut-gemm's `atomicAdd((half2*)&output[m], v)`: refused here, at the cast
                        em.fail(n, f"the cast `{n.text}` to a half2 pointer into the half buffer `{root.name}` "
                                   "(OpenCL stores half2 as pairs of halves)")
                    if root.space != "global" and (v3.is_vec3(pe) or v3.is_vec3(t.elem)):
                        em.fail(n, f"the cast `{n.text}` to or from 3-vectors in {root.space} memory (OpenCL's "
                                   "3-vectors are 4 elements apart, CUDA's 3)")
                    return E(f"({self._pointer_type(em, root, t)}){e.paren(PREC_UNARY)}", t, PREC_UNARY)
            return e
        t = em.ty(n)
        if k == "MEMBER_REF_EXPR" and struct_params.lookup(em, n) is not None:
            root, off = em.ptr(n)           # a pointer field of a flattened struct parameter: its own argument
            return E(root.name, t) if off is None else E(f"{root.name} + {off.paren(3)}", t, 4)
        if k == "DECL_REF_EXPR":
            r = n.ref
            b = em.frame.ptrs.get(id(r))
            if b is not None or r.kind in ("PARM_DECL", "VAR_DECL"):
                if b is None and any(c.kind == "CUDASHARED_ATTR" for c in r.children) and \
                        em.name_of(r) not in em.shared:
                    em.shared_decl(r)
                if em.model.function_of(r) is None:
                    return E(em.global_var_ref(r, n), t)
                return E(em.name_of(r), t)
        if k == "BINARY_OPERATOR" and n.op in ("+", "-"):
            a_n, b_n = n.children
            if em.ty(a_n).kind in ("pointer", "array"):
                a, b = self.native(em, a_n), em.x(b_n)
                return E(f"{a.paren(4)} {n.op} {b.paren(3)}", t, 4)
            a, b = em.x(a_n), self.native(em, b_n)
            return E(f"{a.paren(4)} + {b.paren(3)}", t, 4)
        if k == "UNARY_OPERATOR" and n.op == "&":
            c = n.children[0]
            if c.strip.kind == "UNARY_OPERATOR" and c.strip.op == "*":
                return self.native(em, c.strip.children[0])
            s = c.strip
            if s.kind == "ARRAY_SUBSCRIPT_EXPR" and em.ty(s.children[0]).kind == "pointer" and \
                    halfprec.half_storage_root(em, s) is not None:
                # `&p[i]` into a half buffer: halves there are read by vload_half, so the address is `p + i`
                a, i = self.native(em, s.children[0]), em.x(s.children[1])
                return E(f"{a.paren(4)} + {i.paren(3)}", t, 4)
            e = em.x(c, "rw")
            return E(f"&{e.paren(PREC_UNARY)}", t, PREC_UNARY)
        if k == "UNARY_OPERATOR" and n.op in ("++", "--", "post++", "post--"):
            e = self.native(em, n.children[0])
            if n.op.startswith("post"):
                return E(f"{e.paren(1)}{n.op[4:]}", t)
            return E(f"{n.op}{e.paren(2)}", t, PREC_UNARY)
        if k in ("ARRAY_SUBSCRIPT_EXPR", "MEMBER_REF_EXPR") and t.kind == "array":
            return em.x(n)     # a row `a[i]` of a multi-dimensional array, an array field: decay in C too
        if k == "CONDITIONAL_OPERATOR":
            c = em.cond(n.children[0])
            a, b = self.native(em, n.children[1]), self.native(em, n.children[2])
            return E(f"{c.paren(12)} ? {a.paren(14)} : {b.paren(13)}", t, 13)
        if k == "CALL_EXPR":
            fn = em._callee_fn(n)
            if fn is not None and fn.body is not None and not fn.is_kernel and fn.node.kind != "CXX_METHOD":
                # a device function returning a pointer into an argument: the argument moved by the offset it
                # returns (returned_pointers.py)
                from porter.translate.kernel import returned_pointers
                idx, off = returned_pointers.offset(em, fn, n)
                a = self.native(em, em.call_args(n)[idx])
                return E(f"{a.paren(4)} + {off.paren(3)}", t, 4)
        em.fail(n, f"the pointer expression `{n.text}`")

    def pointer_value(self, em, n, ptr) -> E:
        return self.native(em, n)

    def _pointer_type(self, em, root: Root, t: CType) -> str:
        elem = t.elem if t.kind == "pointer" else root.elem
        quals = ("const " if elem.const else "") + ("volatile " if elem.volatile else "")
        space = SPACE[root.space]
        if halfprec.is_half(elem) and root.space in ("global", "constant"):
            if elem.kind == "vector":
                em.fail(root.decl, f"a pointer into the half2 buffer `{root.name}` (OpenCL stores half2 as pairs "
                                   "of halves)")
            return f"{space + ' ' if space else ''}{quals}half*"
        mem = v3.memory_type(em, elem.unqualified()) if root.space == "global" else elem.unqualified()
        return f"{space + ' ' if space else ''}{quals}{self.type_name(mem, em)}*"

    def pointer_decl(self, em, d, t, name, init) -> list[str]:
        if init is not None and em.is_null(init):
            # `T *p = nullptr;`: its address space is where its first assignment points
            if id(d) not in em.an.assigned:
                em.fail(d, f"the pointer `{d.spelling}` that is always null")
            placeholder = f"/*cuport:pointer type of {name}*/"
            em.pending_pointer(d, placeholder)
            return [f"{placeholder} {name} = 0;"]
        if init is None:
            # its address space (part of its type) is where its first assignment points
            placeholder = f"/*cuport:pointer type of {name}*/"
            em.pending_pointer(d, placeholder)
            return [f"{placeholder} {name};"]
        root, _off = em.ptr(init)
        em.frame.ptrs[id(d)] = PtrBinding(root, None)
        return [f"{self._pointer_type(em, root, t)} {name} = {self.native(em, init).text};"]

    def shared_pointer_decl(self, em, d, t, name) -> list[str]:
        """A `__local` pointer variable at kernel scope (OpenCL allows `__local` variables there only), bound and
        typed by its first assignment like a pointer declared without a value."""
        if not em.frame.is_kernel:
            em.fail(d, f"the `__shared__` pointer `{d.spelling}` in a device function (OpenCL declares `__local` "
                       "variables at kernel scope only)")
        placeholder = f"/*cuport:pointer type of {name}*/"
        em.pending_pointer(d, placeholder)
        em.local_decls.append(f"{placeholder} __local {name};")
        return []

    def pointer_step(self, em, n, c, op) -> E:
        return self.native(em, n)

    def pointer_step_value(self, em, s):
        root, _ = em.ptr(s.children[0])
        return root, None

    def pointer_assign(self, em, n, a_n, b_n, op) -> E:
        if op == "=" and em.is_null(b_n):
            lhs = self.native(em, a_n)
            return E(f"{lhs.text} = 0", lhs.ct, 14)
        if op == "=":
            root_b, _ = em.ptr(b_n)
            if em.bind_pending(a_n, root_b, self._pointer_type(em, root_b, em.ty(a_n))):
                return E(f"{self.native(em, a_n).text} = {self.native(em, b_n).text}", em.ty(a_n), 14)
        root_a, _ = em.ptr(a_n)
        lhs = self.native(em, a_n)
        if op == "=":
            root_b, _ = em.ptr(b_n)
            if root_a.space != root_b.space:
                em.fail(n, f"the pointer `{a_n.text}` re-pointed to another address space")
            em.alias_root(root_a, root_b)   # writes through it may now reach root_b (its `const`, its access)
            return E(f"{lhs.text} = {self.native(em, b_n).text}", lhs.ct, 14)
        return E(f"{lhs.text} {op} {em.x(b_n).text}", lhs.ct, 14)

    def deref(self, em, root: Root, off, i, mode, node) -> str:
        if root.kind in ("buffer",):
            em.access(root, mode)
        base = self.native(em, node)
        if halfprec.is_half(root.elem.unqualified()) and root.space in ("global", "constant"):
            # halves in memory: read with vload_half(n); written only by assignment (halfprec.assign)
            if mode != "r":
                em.fail(node, "a half in an OpenCL buffer changed other than by assignment")
            self._check_half_base(em, root, node)
            fn = "vload_half" if root.elem.kind == "scalar" else f"vload_half{root.elem.n}"
            return f"{fn}({em.index(i, node).text if i is not None else '0'}, {base.text})"
        if i is None:
            return f"*{base.paren(PREC_UNARY)}"
        return f"{base.paren(PREC_PRIMARY)}[{em.index(i, node).text}]"

    def pointer_param_key(self, em, root: Root):
        return ("space", root.space)

    def pointer_param(self, em, fr, pnode, pname, root: Root, pt) -> list[str]:
        mine = Root(pname, "param", root.elem, root.space, pnode)
        v3.bound_to(em, mine, root)
        fr.ptrs[id(pnode)] = PtrBinding(mine, None)
        return [f"{self._pointer_type(em, root, pt)} {pname}"]

    def pointer_arg(self, em, root: Root, off, node) -> list[str]:
        return [self.native(em, node).text]

    def device_global_params(self, em, info) -> list[str]:
        return [self._device_global_decl(em, info)]

    def assert_record(self, em, buf: str, line: int) -> list[str]:
        return [f"atomic_inc(&{buf}[0]);", f"atomic_cmpxchg(&{buf}[1], 0u, {line}u);"]

    def device_global_args(self, em, info) -> list[str]:
        return [info["name"]]

    def _device_global_decl(self, em, info) -> str:
        const = "const " if info["const"] or em.roots_rw.get(("buffer", info["name"])) == {"r"} else ""
        return f"__global {const}{self.type_name(info['elem'], em)}* {info['name']}"

    def function_name(self, em, fn, key, subst, binds) -> str:
        base = self.ident(fn.name)
        if base in BUILTINS:
            base += "_fn"        # a device function may not take a built-in's name (tridiagonal's native_divide)
        # OpenCL C has no overloading and the kernels share one file: an overload after the first of its name
        # is named by its place among them (dpid's two `add`s, each used by another kernel)
        over = [f for f in em.model.functions if f.name == fn.name and f.body is not None and f.is_device_code
                and f.node.kind == "FUNCTION_DECL"]
        k = next((i for i, f in enumerate(over) if f.node.start == fn.node.start), 0)
        if k:
            base += f"_o{k}"
        spaces = "".join(v.space[0] if kind == "ptr" else off.space[0] for kind, _p, v, off, *_r in binds
                         if kind == "ptr" or (kind == "ref" and off is not None))
        if spaces.strip("g"):
            base += "_" + spaces
        if subst:
            base += "_" + "_".join(re.sub(r"\W+", "", ct.spell(v) if isinstance(v, CType) else str(v))
                                   for v in subst.values())
        # specialisations that differ otherwise (a const reference bound to a value or to an object)
        taken = {v[0] for v in em.functions.values() if v[0]}
        if base in taken:
            i = 2
            while f"{base}_v{i}" in taken:
                i += 1
            base = f"{base}_v{i}"
        return base

    def ref_param(self, em, t, name, written, space, const, volatile) -> str:
        return f"{self.ref_pointer_type(em, t, space, const, volatile)} {name}"

    def ref_copy(self, em, n, place) -> bool:
        return v3.copy_instead(em, n, place)

    def ref_pointer_type(self, em, t, space, const, volatile) -> str:
        """A C++ reference as an OpenCL pointer in the referent's address space."""
        sp = SPACE[space]
        if v3.is_vec3(t) and space == "global":
            em.fail(None, f"a reference to a `{t}` in a buffer (kept in CUDA's 12-byte layout; pass it by value)")
        quals = ("const " if const or space == "constant" else "") + ("volatile " if volatile else "")
        return f"{sp + ' ' if sp else ''}{quals}{self.type_name(t, em)}*"

    def function_head(self, em, ret, name, params) -> str:
        params = list(params) + opencl_local.params(em)
        return f"{self.type_name(ret, em)} {name}({', '.join(params) or 'void'})"

    def ballot_var(self, em, d, init) -> bool:
        return False

    def ballot_decl(self, em, d, name, init):
        return []

    # ------------------------------------------------------------------ calls
    def builtin_type(self, em, name, n):
        return None

    def math_name(self, em, base, t) -> str:
        return base

    def call(self, em, name, n, args) -> E | None:
        if name in SHUFFLES:
            return self.shuffle(em, name, n, args)
        if name in ("__ballot_sync", "__ballot", "__activemask", "__any_sync", "__all_sync", "__any", "__all"):
            if name.endswith("_sync"):
                em.check_mask(n, args[0])
            if self.subgroups == "none":
                self._emulate(em, n)
                if name == "__activemask":
                    return E("1u", U32, lit=1)
                p = em.cond(args[-1])
                if name.startswith("__ballot"):
                    return E(f"({p.paren(12)} ? 1u : 0u)", U32)
                return E(f"({p.paren(12)} ? 1 : 0)", I32)
            if name.startswith("__ballot") or name == "__activemask":
                em.fail(n, f"`{name}` (cl_khr_subgroup_ballot returns a uint4 mask; not supported yet)")
            em.need("cl_khr_subgroups")
            p = em.cond(args[-1])
            fn = "sub_group_any" if "any" in name else "sub_group_all"
            return E(f"{fn}({p.text} ? 1 : 0)", I32)
        if name.startswith("__reduce_") and name.endswith("_sync"):
            em.check_mask(n, args[0])
            v = em.x(args[1])
            if self.subgroups == "none":
                self._emulate(em, n)
                return v
            op = name[len("__reduce_"):-len("_sync")]
            if op not in ("add", "min", "max"):
                em.fail(n, f"`{name}`")
            em.need("cl_khr_subgroups")
            return E(f"sub_group_reduce_{op}({v.text})", v.ct)
        if name in ("__syncthreads_count", "__syncthreads_and", "__syncthreads_or"):
            em.fail(n, f"`{name}` (needs a work-group reduction; OpenCL 1.2 has none)")
        base = name.split("_")[0]
        if base in ATOMIC_CL or base in ("atomicCAS", "atomicInc", "atomicDec"):
            return self.atomic(em, base, n, args)
        return self.math(em, name, n, args)


def translate(path: str, text: str | None = None, **options):
    """One OpenCL C 1.2 file with every kernel of a CUDA file (porter.translate.api target)."""
    from porter.translate.kernel.driver import translate_path
    return translate_path(path, "opencl", OpenclTarget(**options), text=text, **options)


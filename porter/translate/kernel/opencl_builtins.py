"""OpenCL C's device builtins: subgroup shuffles (cl_khr_subgroups, or a single work-item per warp), atomics
(atomic_* of OpenCL 1.2, compare-and-swap loops for floats), math (the spellings from
rules/kernel/intrinsics.csv) and bit intrinsics. Mixed into OpenclTarget (opencl.py)."""
from __future__ import annotations

from porter.translate.kernel import ctype as ct
from porter.translate.kernel import half2_atomics, intrinsics
from porter.translate.kernel.ctype import F32, F64, I32, U32
from porter.translate.kernel.manifest import cl_type_name
from porter.translate.kernel.shuffle_reach import reach, reads_warp_size, rewritten
from porter.translate.kernel.target import E, PREC_UNARY


SHUFFLES = {"__shfl_sync": "idx", "__shfl_up_sync": "up", "__shfl_down_sync": "down", "__shfl_xor_sync": "xor",
             "__shfl": "idx", "__shfl_up": "up", "__shfl_down": "down", "__shfl_xor": "xor"}
ATOMIC_CL = {"atomicAdd": "atomic_add", "atomicSub": "atomic_sub", "atomicExch": "atomic_xchg",
              "atomicMin": "atomic_min", "atomicMax": "atomic_max", "atomicAnd": "atomic_and",
              "atomicOr": "atomic_or", "atomicXor": "atomic_xor"}


SPACE = {"global": "__global", "local": "__local", "private": "", "constant": "__constant"}


class OpenclBuiltins:
    def last_lane(self, em, text: str, t) -> str:
        """The value `text` (a 32-bit scalar) of the sub-group's last lane, in every lane (a chunked scan's carry):
        the caller's own on one-lane warps."""
        if self.subgroups == "none":
            self._emulate(em)
            return text
        em.need("cl_khr_subgroups")
        return f"sub_group_broadcast({text}, get_sub_group_size() - 1u)"

    def shuffle(self, em, name, n, args) -> E:
        kind = SHUFFLES[name]
        if name.endswith("_sync"):
            em.check_mask(n, args[0])
            args = args[1:]
        v = em.x(args[0])
        lane = em.x(args[1])
        if self.subgroups == "none":
            # a one-lane warp: every source lane is the caller itself or out of range -> the caller's value
            if len(args) > 2 and not args[2].is_warp_size() and args[2].value != 1:
                em.fail(args[2], f"a shuffle of width `{args[2].text}` on one-lane warps (OpenCL 1.2 has no "
                        "sub-groups; translate with subgroups='khr')")
            self._emulate(em, n)
            c = reach(args[1], rewritten(em))
            if isinstance(c, int) and c >= 1 and not reads_warp_size(em.model, em.fn):
                # nothing in the kernel adapts to the warp's width: it needs lanes 0..c, one-lane warps have one
                em.fail(args[1], f"`{' '.join(n.text.split())}` reaches lane {c} away in a kernel that never reads "
                        f"warpSize: it needs warps of at least {1 << int(c).bit_length()} lanes, and OpenCL 1.2's "
                        "warps are one lane (no sub-groups; translate with subgroups='khr')")
            if isinstance(c, int) and c >= 1:
                em.note("CP907", args[1], f"`{n.text}` reaches lane {c} away, which assumes warps wider than one "
                        "lane: here it returns the caller's own value")
            return E(v.text, v.ct, v.prec, v.tt)
        if len(args) > 2 and not args[2].is_warp_size():
            em.fail(args[2], "a shuffle width other than warpSize with cl_khr_subgroup_shuffle")
        t = v.ct.unqualified()
        tn = self.type_name(t, em)
        if kind == "idx":
            em.need("cl_khr_subgroups")
            em.need("cl_khr_subgroup_shuffle")
            return E(f"sub_group_shuffle({v.text}, (uint)({lane.text}) & (get_sub_group_size() - 1u))", t)
        em.need("cl_khr_subgroups")
        em.need("cl_khr_subgroup_shuffle" if kind == "xor" else "cl_khr_subgroup_shuffle_relative")
        fn = {"up": "sub_group_shuffle_up", "down": "sub_group_shuffle_down", "xor": "sub_group_shuffle_xor"}[kind]
        ok = {"up": "get_sub_group_local_id() >= d", "down": "get_sub_group_local_id() + d < get_sub_group_size()",
              "xor": "(get_sub_group_local_id() ^ d) < get_sub_group_size()"}[kind]
        hname = f"cuport_shfl_{kind}_{tn}"
        em.helper(hname, f"{tn} {hname}({tn} v, uint d)\n{{\n    {tn} r = {fn}(v, d);\n    return ({ok}) ? r : v;\n}}")
        return E(f"{hname}({v.text}, {lane.text})", t)

    def atomic(self, em, base, n, args) -> E:
        h2 = half2_atomics.opencl(em, self, base, n, args)      # `atomicAdd((half2 *)&out[m], v)` into halves
        if h2 is not None:
            return h2
        root, _off = em.ptr(args[0])
        if root.space not in ("global", "local"):
            em.fail(n, f"`{base}` on {root.space} memory")
        em.access(root, "rw") if root.kind == "buffer" else None
        et = root.elem.unqualified()
        p = self.native(em, args[0])
        vals = [em.conv(em.x(a), et) for a in args[1:]]
        space = SPACE[root.space]
        if et.kind != "scalar":
            em.fail(n, f"`{base}` on `{et}`")
        if et.is_int and et.bits == 32:
            if base in ATOMIC_CL:
                return E(f"{ATOMIC_CL[base]}({p.text}, {vals[0].text})", et)
            if base == "atomicCAS":
                return E(f"atomic_cmpxchg({p.text}, {vals[0].text}, {vals[1].text})", et)
            if base in ("atomicInc", "atomicDec") and et.name == "u32":
                sp = root.space
                hname = f"cuport_{base}_{sp}"
                new = "(old >= limit) ? 0u : old + 1u" if base == "atomicInc" else \
                    "(old == 0u || old > limit) ? limit : old - 1u"
                em.helper(hname, f"uint {hname}(volatile {space} uint* p, uint limit)\n{{\n    uint old = *p;\n"
                          f"    for (;;) {{\n        uint prev = atomic_cmpxchg(p, old, {new});\n"
                          f"        if (prev == old) return old;\n        old = prev;\n    }}\n}}")
                return E(f"{hname}({p.text}, {vals[0].text})", et)
        if et.is_int and et.bits == 64:
            em.need("cl_khr_int64_base_atomics")
            ops64 = {"atomicAdd": "atom_add", "atomicSub": "atom_sub", "atomicExch": "atom_xchg"}
            if base in ops64:
                return E(f"{ops64[base]}({p.text}, {vals[0].text})", et)
            if base == "atomicCAS":
                return E(f"atom_cmpxchg({p.text}, {vals[0].text}, {vals[1].text})", et)
            if base in ("atomicMin", "atomicMax", "atomicAnd", "atomicOr", "atomicXor"):
                em.need("cl_khr_int64_extended_atomics")
                return E(f"atom_{base[6:].lower()}({p.text}, {vals[0].text})", et)
        if et.is_float and et.bits in (32, 64):
            if base == "atomicExch" and et.bits == 32:
                return E(f"atomic_xchg({p.text}, {vals[0].text})", et)
            if base in ("atomicAdd", "atomicMin", "atomicMax", "atomicExch"):
                tn = self.type_name(et, em)
                ut = "uint" if et.bits == 32 else "ulong"
                cas = "atomic_cmpxchg" if et.bits == 32 else "atom_cmpxchg"
                if et.bits == 64:
                    em.need("cl_khr_int64_base_atomics")
                op = {"atomicAdd": "f + v", "atomicMin": "fmin(f, v)", "atomicMax": "fmax(f, v)",
                      "atomicExch": "v"}[base]
                hname = f"cuport_{base}_{tn}_{root.space}"
                em.helper(hname, f"{tn} {hname}(volatile {space} {tn}* p, {tn} v)\n{{\n"
                          f"    volatile {space} {ut}* u = (volatile {space} {ut}*)p;\n    {ut} old = *u;\n"
                          f"    for (;;) {{\n        {tn} f = as_{tn}(old);\n"
                          f"        {ut} prev = {cas}(u, old, as_{ut}(({tn})({op})));\n"
                          f"        if (prev == old) return f;\n        old = prev;\n    }}\n}}")
                return E(f"{hname}({p.text}, {vals[0].text})", et)
        em.fail(n, f"`{base}` on `{et}`")

    def math(self, em, name, n, args) -> E | None:
        sig = em.signature(n)
        e = intrinsics.integer(em, self, name, n, args)   # the `int` rows
        if e is not None:
            return e
        hit = intrinsics.resolve(name, "opencl")      # rules/kernel/intrinsics.csv
        if hit is not None and hit.row.opencl:
            ft = F32 if hit.single else (sig[0] if sig and sig[0].is_float else F32)
            if not em.uses_double:
                ft = F32
            xs = [em.conv(em.x(a), ft) for a in args]
            return E(intrinsics.spell(hit.row.opencl, [x.text for x in xs]), ft)
        # before the arguments are emitted as values: `__ldg(&p[i])` in a template is a dependent call
        if name in ("__ldg", "__ldcg", "__ldca", "__ldcs", "__ldlu", "__ldcv"):
            return E(em.ptr_lvalue(args[0], "r"), em.ty(n).unqualified(), PREC_UNARY)
        xs = [em.x(a) for a in args]
        if name in ("min", "max", "umin", "umax", "llmin", "llmax", "ullmin", "ullmax") and len(xs) == 2:
            t = ct.common(xs[0].ct, xs[1].ct)
            if name.startswith("u"):
                t = ct.U64 if "ll" in name else U32
            a, b = em.conv(xs[0], t), em.conv(xs[1], t)
            return E(f"{name.lstrip('ul')[:3]}({a.text}, {b.text})", t)
        if name in ("abs", "llabs", "labs"):
            t = ct.promote(xs[0].ct)
            if t.is_float:                       # CUDA's (and std::) abs(double): OpenCL's abs is integer-only
                return E(f"fabs({xs[0].text})", t)
            # OpenCL's abs returns the unsigned type; CUDA's keeps the signed one
            return E(f"({self.type_name(t, em)})abs({em.conv(xs[0], t).text})", t, PREC_UNARY)
        arith = intrinsics.arithmetic(em, name, xs, "1.0f")
        if arith is not None:
            return arith
        if name in ("__saturatef", "saturate"):
            return E(f"clamp({em.conv(xs[0], F32).text}, 0.0f, 1.0f)", F32)
        bitcast = {"__float_as_int": ("as_int", F32, I32), "__int_as_float": ("as_float", I32, F32),
                   "__float_as_uint": ("as_uint", F32, U32), "__uint_as_float": ("as_float", U32, F32),
                   "__double_as_longlong": ("as_long", F64, ct.I64), "__longlong_as_double": ("as_double", ct.I64, F64)}
        if name in bitcast:
            fn, at, rt = bitcast[name]
            if F64 in (at, rt):
                em.need("cl_khr_fp64")
            return E(f"{fn}({em.conv(xs[0], at).text})", rt)
        rounding = {"rn": "rte", "rz": "rtz", "rd": "rtn", "ru": "rtp"}
        if name.startswith(("__float2int_", "__float2uint_", "__double2int_", "__float2ll_")) and \
                name[-2:] in rounding:
            rt = U32 if "uint" in name else (ct.I64 if "ll" in name else I32)
            return E(f"convert_{cl_type_name(rt)}_{rounding[name[-2:]]}({xs[0].text})", rt)
        if name.startswith(("__int2float_", "__uint2float_")) and name[-2:] in rounding:
            return E(f"convert_float_{rounding[name[-2:]]}({xs[0].text})", F32)
        if name in ("isnan", "isinf", "isfinite", "signbit", "__isnanf", "__isinff", "__finitef", "__signbitf"):
            fn = {"__isnanf": "isnan", "__isinff": "isinf", "__finitef": "isfinite", "__signbitf": "signbit"}.get(
                name, name)
            return E(f"{fn}({xs[0].text})", I32)
        if name in ("__popc", "__popcll"):
            t = U32 if name == "__popc" else ct.U64
            return E(f"(int)popcount({em.conv(xs[0], t).text})", I32, PREC_UNARY)
        if name in ("__clz", "__clzll"):
            t = I32 if name == "__clz" else ct.I64
            return E(f"(int)clz({em.conv(xs[0], t).text})", I32, PREC_UNARY)
        if name in ("__ffs", "__ffsll"):
            t = I32 if name == "__ffs" else ct.I64
            tn = self.type_name(t, em)
            bits = 32 if name == "__ffs" else 64
            hname = em.helper(f"cuport{name}", f"int cuport{name}({tn} x)\n{{\n    return x == 0 ? 0 : "
                              f"{bits} - (int)clz(x & -x);\n}}")
            return E(f"{hname}({em.conv(xs[0], t).text})", I32)
        if name in ("__brev", "__brevll"):
            hname = em.helper("cuport_brev", "uint cuport_brev(uint x)\n{\n"
                              "    x = ((x >> 1) & 0x55555555u) | ((x & 0x55555555u) << 1);\n"
                              "    x = ((x >> 2) & 0x33333333u) | ((x & 0x33333333u) << 2);\n"
                              "    x = ((x >> 4) & 0x0f0f0f0fu) | ((x & 0x0f0f0f0fu) << 4);\n"
                              "    x = ((x >> 8) & 0x00ff00ffu) | ((x & 0x00ff00ffu) << 8);\n"
                              "    return (x >> 16) | (x << 16);\n}")
            if name == "__brevll":
                hname = em.helper("cuport_brevll", "ulong cuport_brevll(ulong x)\n{\n"
                                  "    return ((ulong)cuport_brev((uint)x) << 32) | cuport_brev((uint)(x >> 32));\n}")
                return E(f"{hname}({em.conv(xs[0], ct.U64).text})", ct.U64)
            return E(f"{hname}({em.conv(xs[0], U32).text})", U32)
        if name in ("__mul24", "__umul24"):
            t = I32 if name == "__mul24" else U32
            return E(f"mul24({em.conv(xs[0], t).text}, {em.conv(xs[1], t).text})", t)
        if name in ("__mulhi", "__umulhi"):
            t = I32 if name == "__mulhi" else U32
            return E(f"mul_hi({em.conv(xs[0], t).text}, {em.conv(xs[1], t).text})", t)
        if name.startswith("make_"):
            t = em.parse_type(name[5:])
            if t.kind == "vector":
                return E(self.vector_constructor(em, t, [em.conv(x, t.elem).text for x in xs]), t, PREC_UNARY)
            if t.kind == "scalar":
                return em.conv(xs[0], t)
        if name in ("clock", "clock64", "__nanosleep", "__trap", "__brkpt", "__prof_trigger", "globaltimer"):
            em.fail(n, f"`{name}`")
        return None

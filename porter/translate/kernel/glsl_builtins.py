"""GLSL's device builtins: subgroup shuffles (the caller's own value where CUDA's source lane is out of range),
work-group reductions, atomics (float atomics through GL_EXT_shader_atomic_float or a compare-and-swap loop),
math (the spellings from rules/kernel/intrinsics.csv, helpers for what GLSL lacks) and bit intrinsics. Mixed into
GlslTarget (glsl.py)."""
from __future__ import annotations

from porter.translate.kernel import ctype as ct
from porter.translate.kernel import glsl_accurate, half2_atomics, intrinsics
from porter.translate.kernel.ctype import BOOL, F32, F64, I32, U32
from porter.translate.kernel.shuffle_reach import reach, rewritten
from porter.translate.kernel.target import E, PREC_UNARY

# math functions GLSL has as builtins that cuport replaces by accurate helpers (glsl_accurate.py): the builtin
# is what CUDA's fast intrinsics and --fast-math get
FAST_BUILTINS = frozenset("exp log log2 asin acos atan sinh cosh tanh asinh acosh atanh".split())


SHUFFLES = {"__shfl_sync": "idx", "__shfl_up_sync": "up", "__shfl_down_sync": "down", "__shfl_xor_sync": "xor",
             "__shfl": "idx", "__shfl_up": "up", "__shfl_down": "down", "__shfl_xor": "xor"}


# subgroup operations on these scalars need GL_EXT_shader_subgroup_extended_types_<suffix>
_EXTENDED_TYPES = {"i64": "int64", "u64": "int64", "f16": "float16", "i16": "int16", "u16": "int16", "i8": "int8",
                   "u8": "int8"}


class GlslBuiltins:
    def shuffle_operand(self, em, n) -> E:
        """The value a subgroup shuffle moves: a narrow integer promoted (CUDA's shuffles take int), the
        extended-types extension for 64-, 16- and 8-bit scalars."""
        v = em.x(n)
        t = v.ct.unqualified()
        if t.kind == "scalar" and t.bits < 32 and not t.is_float:
            v = em.conv(v, ct.promote(t))
            t = v.ct.unqualified()
        if t.kind == "scalar" and t.name in _EXTENDED_TYPES:
            em.need("GL_EXT_shader_subgroup_extended_types_" + _EXTENDED_TYPES[t.name])
        return v

    def last_lane(self, em, text: str, t) -> str:
        """The value `text` (a 32-bit scalar) of the subgroup's last lane, in every lane (a chunked scan's carry)."""
        em.need("GL_KHR_shader_subgroup_shuffle", subgroup="shuffle")
        return f"subgroupShuffle({text}, uint({self.subgroup_size(em)}) - 1u)"

    # --- subgroup shuffles: CUDA returns the caller's own value where the source lane is out of range ---
    def shuffle(self, em, name, n, args) -> E:
        kind = SHUFFLES[name]
        if name.endswith("_sync"):
            em.check_mask(n, args[0])
            args = args[1:]
        v = self.shuffle_operand(em, args[0])
        t = v.ct.unqualified()
        tn = self.type_name(t, em)
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
        c = reach(args[1], rewritten(em))
        if width is None and isinstance(c, int) and c >= 4:
            need = 1 << int(c).bit_length()
            em.note("CP907", args[1], f"`{n.text}` reaches lane {c} away: it needs subgroups of at least {need} "
                    "lanes (Vulkan subgroups can be 4..128 wide)")
            em.min_subgroup = max(em.min_subgroup or 0, need)
        sg = self.subgroup_size(em) if kind != "up" or width is not None else None
        if width is None:
            if kind == "idx":
                em.need("GL_KHR_shader_subgroup_shuffle", subgroup="shuffle")
                return E(f"subgroupShuffle({v.text}, {lane.paren(7)} & ({sg} - 1u))", t)
            ops = {"up": ("subgroupShuffleUp", "gl_SubgroupInvocationID >= d"),
                   "down": ("subgroupShuffleDown", f"gl_SubgroupInvocationID + d < {sg}"),
                   "xor": ("subgroupShuffleXor", f"(gl_SubgroupInvocationID ^ d) < {sg}")}
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
                  f"    bool ok = {ok};\n    {tn} r = subgroupShuffle(v, ok ? min({src}, {sg} - 1u) : l);\n"
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
        h2 = half2_atomics.glsl(em, self, base, n, args)      # `atomicAdd((half2 *)&out[m], v)` into halves
        if h2 is not None:
            return h2
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
        e = intrinsics.integer(em, self, name, n, args)   # the `int` rows
        if e is not None:
            return e
        hit = intrinsics.resolve(name, "glsl")        # rules/kernel/intrinsics.csv
        if hit is not None and hit.row.glsl:
            ft = F32 if hit.single else (sig[0] if sig and sig[0].is_float else F32)
            if not em.uses_double:
                ft = F32
            if ft == F64 and hit.base == "pow" and len(args) == 2:
                k = self.constant_exponent(em, args[1])
                if k is not None:
                    return self.int_power(em, em.conv(em.x(args[0]), F64), k)
            if ft == F64 and hit.row.f64_helper:
                return self.double_helper(em, hit.base, [em.conv(em.x(a), F64) for a in args])
            if ft == F64 and not hit.row.glsl_f64:
                em.fail(n, f"double-precision `{name}` (GLSL has it for 32-bit floats only)")
            xs = [em.conv(em.x(a), ft) for a in args]
            if hit.row.glsl == "helper" and ft == F32 and hit.base in FAST_BUILTINS and (
                    self.fast_math or intrinsics.is_fast(name)):
                # CUDA's __expf & co. (or --fast-math) trade accuracy for speed: GLSL's builtin is that trade
                return E(intrinsics.spell(hit.base, [x.text for x in xs]), ft)
            if hit.row.glsl != "helper":
                return E(intrinsics.spell(hit.row.glsl, [x.text for x in xs]), ft)
            return self.math_helper(em, hit.base, ft, xs, n)
        if hit is not None:
            em.fail(n, f"`{name}` (no GLSL builtin with CUDA's accuracy)")
        # before the arguments are emitted as values: `__ldg(&p[i])` in a template is a dependent call
        if name in ("__ldg", "__ldcg", "__ldca", "__ldcs", "__ldlu", "__ldcv"):
            return E(em.ptr_lvalue(args[0], "r"), em.ty(n).unqualified())
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
        arith = intrinsics.arithmetic(em, name, xs, "1.0")
        if arith is not None:
            return arith
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
        if name == "__brevll":
            a = em.conv(xs[0], ct.U64)
            hname = em.helper("cuport_brevll", "uint64_t cuport_brevll(uint64_t x)\n{\n"
                              "    return (uint64_t(bitfieldReverse(uint(x))) << 32) | "
                              "uint64_t(bitfieldReverse(uint(x >> 32)));\n}")
            return E(f"{hname}({a.text})", ct.U64)
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

    @staticmethod
    def constant_exponent(em, node) -> int | None:
        """A small whole exponent: a constant, or a local initialised with one and never written (`double gam =
        7.0; pow(x, gam)`)."""
        from porter.translate.kernel import refs
        v = node.value
        s = node.strip
        if not isinstance(v, (int, float)) and s.kind == "DECL_REF_EXPR" and s.ref is not None and \
                s.ref.kind == "VAR_DECL" and em.model.function_of(s.ref) is not None:
            init = em.init_of(s.ref)
            fn = em.frame.fn
            if init is not None and not refs.writes(em, fn, s.ref) and fn.node.start <= s.ref.start < fn.node.end:
                v = init.value
        if isinstance(v, bool) or not isinstance(v, (int, float)) or v != int(v) or not -8 <= v <= 8:
            return None
        return int(v)

    def int_power(self, em, x: E, k: int) -> E:
        """pow(x, k) in double for a whole k in -8..8 (GLSL has no double pow): square and multiply, at most four
        roundings (CUDA's pow: within 2 ulp; these within a few ulp); x^0 = 1 as C's pow, NaN included."""
        if k == 0:
            return E("1.0lf", F64)
        n = abs(k)
        lines, have = [], {1: "x"}
        e = 1
        while e * 2 <= n:
            lines.append(f"    double x{e * 2} = x{e if e > 1 else ''} * x{e if e > 1 else ''};")
            have[e * 2] = f"x{e * 2}"
            e *= 2
        terms, rest = [], n
        for p in sorted(have, reverse=True):
            if p <= rest:
                terms.append(have[p])
                rest -= p
        prod = " * ".join(terms)
        body = "\n".join(lines + [f"    return {'1.0lf / (' + prod + ')' if k < 0 else prod};"])
        hname = f"cuport_pow{'m' if k < 0 else ''}{n}_double"
        em.helper(hname, f"double {hname}(double x)\n{{\n{body}\n}}")
        return E(f"{hname}({x.text})", F64)

    def double_helper(self, em, base, xs) -> E:
        """Double-precision math GLSL has for floats only (rows with glsl_f64 = helper in intrinsics.csv)."""
        self.type_name(ct.U64, em)      # uint64BitsToDouble: the 64-bit integer extension
        bodies = {
            # x = m * 2^e with m in [sqrt(1/2), sqrt(2)); log(m) = 2 atanh(s), s = (m - 1) / (m + 1) (m - 1 is
            # exact), |s| < 0.1716: the series to s^23 leaves < 1e-18; ln 2 in two parts keeps e * ln 2 exact
            "log": "if (!(x > 0.0LF) || isinf(x))\n"
                   "        return x == 0.0LF ? -uint64BitsToDouble(0x7ff0000000000000UL)\n"
                   "                          : (x > 0.0LF ? x : uint64BitsToDouble(0x7ff8000000000000UL));\n"
                   "    int e, k = 0;\n"
                   "    if (x < 2.2250738585072014e-308LF) { x *= 18014398509481984.0LF; k = 54; }  // subnormal: 2^54\n"
                   "    double m = frexp(x, e);\n    e -= k;\n"
                   "    if (m < 0.70710678118654752440LF) { m *= 2.0LF; e -= 1; }\n"
                   "    double s = (m - 1.0LF) / (m + 1.0LF), z = s * s, p = 1.0LF / 23.0LF;\n"
                   + "".join(f"    p = p * z + 1.0LF / {k}.0LF;\n" for k in range(21, 0, -2)) +
                   "    return double(e) * 6.93147180369123816490e-01LF + "
                   "(2.0LF * s * p + double(e) * 1.90821492927058770002e-10LF);",
        }
        hname = em.helper(f"cuport_{base}_double", f"double cuport_{base}_double(double x)\n{{\n    {bodies[base]}\n}}")
        return E(f"{hname}({xs[0].text})", F64)

    def math_helper(self, em, base, ft, xs, n) -> E:
        """CUDA math functions GLSL has no builtin for, with C's definitions (round: halfway away from zero,
        fmod: truncated quotient, copysign: the sign bit)."""
        if base in glsl_accurate.BODIES:
            return glsl_accurate.helper(self, em, base, ft, xs)
        tn = self.type_name(ft, em)
        bodies = {
            "round": "return trunc(x + (x < 0.0 ? -0.5 : 0.5));",
            "copysign": "return (floatBitsToUint(y) >> 31) != 0u ? -abs(x) : abs(x);",
            "exp10": "return exp2(x * 3.3219280948873623);",
            "hypot": "float m = max(abs(x), abs(y));\n    if (m == 0.0) return 0.0;\n"
                     "    float a = x / m, b = y / m;\n    return m * sqrt(a * a + b * b);",
            "fdim": "return x > y ? x - y : 0.0;",
        }
        body = bodies[base]
        if ft == F64:
            body = body.replace("float ", "double ").replace("floatBitsToUint(y) >> 31", "doubleBitsToUint64(y) >> 63")
            if "doubleBitsToUint64" in body:
                self.type_name(ct.U64, em)
        params = f"{tn} x" + (f", {tn} y" if base in ("fmod", "copysign", "hypot", "fdim") else "")
        hname = em.helper(f"cuport_{base}_{tn}", f"{tn} cuport_{base}_{tn}({params})\n{{\n    {body}\n}}")
        return E(f"{hname}({', '.join(x.text for x in xs)})", ft)

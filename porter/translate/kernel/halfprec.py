"""Half precision (cuda_fp16.h: `__half`, `__half2`) and fp8 conversions (cuda_fp8.h) for the kernel targets.

The spellings are the `half` and `fp8` rows of rules/kernel/intrinsics.csv (intrinsics.half_table()); this module
gives them their CUDA prototypes (HALF_SIGNATURES), maps the operators and constructors of the half types onto
those rows, and writes the fp8 conversion helpers.

GLSL computes in `float16_t` / `f16vec2` (the 16-bit extensions; the manifest lists `shaderFloat16` and
`storageBuffer16BitAccess`). OpenCL C 1.2 has `half` as a storage format only (without cl_khr_fp16, which PoCL
lacks): buffers of half are read with `vload_half` and written with `vstore_half_rte`, every other half value is a
`float` holding a value that half represents (each operation's result rounded by `cuport_rh`, in the CSV's
OpenCL column). Both give CUDA's results for + - * and the conversions (a float result rounded to half once is
the correctly rounded half result for these: float has more than twice half's precision)."""
from __future__ import annotations

import re

from porter.translate.kernel import ctype as ct
from porter.translate.kernel import intrinsics
from porter.translate.kernel import private_views
from porter.translate.kernel.ctype import CType
from porter.translate.kernel.target import PREC_COND, PREC_PRIMARY, E

F16 = ct.scalar("f16")
H2 = ct.vector("f16", 2)
F2 = ct.vector("f32", 2)
_CODES = {"h": F16, "h2": H2, "f": ct.F32, "f2": F2, "i": ct.I32, "b": ct.BOOL}


def _sig(text: str):
    ret, _, params = text.partition(":")
    return _CODES[ret], tuple(_CODES[p] for p in params.split(",") if p)


# CUDA's prototypes of the `half` rows, "result:parameters" in the codes of _CODES
HALF_SIGNATURES = {name: _sig(s) for name, s in {
    "__float2half": "h:f", "__float2half_rn": "h:f", "__int2half_rn": "h:i", "__half2float": "f:h",
    "__half2int_rz": "i:h", "__half2int_rn": "i:h",
    "__hadd": "h:h,h", "__hsub": "h:h,h", "__hmul": "h:h,h", "__hdiv": "h:h,h", "__hfma": "h:h,h,h",
    "__hneg": "h:h", "__habs": "h:h", "__hmax": "h:h,h", "__hmin": "h:h,h",
    "__heq": "b:h,h", "__hneu": "b:h,h", "__hne": "b:h,h", "__hlt": "b:h,h", "__hle": "b:h,h", "__hgt": "b:h,h",
    "__hge": "b:h,h", "__hisnan": "b:h", "__hisinf": "i:h",
    "hsqrt": "h:h", "hrsqrt": "h:h", "hrcp": "h:h", "hexp": "h:h", "hexp2": "h:h", "hlog": "h:h", "hlog2": "h:h",
    "hsin": "h:h", "hcos": "h:h", "htanh": "h:h", "hfloor": "h:h", "hceil": "h:h", "htrunc": "h:h", "hrint": "h:h",
    "__float2half2_rn": "h2:f", "__floats2half2_rn": "h2:f,f", "__float22half2_rn": "h2:f2",
    "__half22float2": "f2:h2", "__low2float": "f:h2", "__high2float": "f:h2", "__low2half": "h:h2",
    "__high2half": "h:h2", "__halves2half2": "h2:h,h", "__half2half2": "h2:h", "__lows2half2": "h2:h2,h2",
    "__highs2half2": "h2:h2,h2", "__lowhigh2highlow": "h2:h2", "__low2half2": "h2:h2", "__high2half2": "h2:h2",
    "__hadd2": "h2:h2,h2", "__hsub2": "h2:h2,h2", "__hmul2": "h2:h2,h2", "__h2div": "h2:h2,h2",
    "__hfma2": "h2:h2,h2,h2", "__hneg2": "h2:h2", "__habs2": "h2:h2", "__hmax2": "h2:h2,h2", "__hmin2": "h2:h2,h2",
    "h2sqrt": "h2:h2", "h2exp": "h2:h2", "h2log": "h2:h2", "h2floor": "h2:h2",
}.items()}

# the operators of cuda_fp16.hpp, by the intrinsic they call: (operator, lanes) -> row
OPERATORS = {("+", 1): "__hadd", ("-", 1): "__hsub", ("*", 1): "__hmul", ("/", 1): "__hdiv",
             ("==", 1): "__heq", ("!=", 1): "__hneu", ("<", 1): "__hlt", ("<=", 1): "__hle", (">", 1): "__hgt",
             (">=", 1): "__hge", ("neg", 1): "__hneg",
             ("+", 2): "__hadd2", ("-", 2): "__hsub2", ("*", 2): "__hmul2", ("/", 2): "__h2div", ("neg", 2): "__hneg2"}

_HALF_NAMES = ("__half", "half", "__half2", "half2")


def is_half(t: CType | None) -> bool:
    if t is None:
        return False
    return (t.kind == "scalar" and t.name == "f16") or (t.kind == "vector" and t.elem.name == "f16")


def storage_only(target) -> bool:
    """OpenCL: half is a storage format; values are floats."""
    return target.name == "opencl"


# --- OpenCL: the rounding helpers the CSV's OpenCL column calls --------------------------------------------------

_CL_HELPERS = {
    "cuport_rh": "float cuport_rh(float x)\n{\n    /* x rounded to the nearest half (ties to even): through the half storage"
                 " format */\n    ushort u;\n    vstore_half_rte(x, 0, (__private half *)&u);\n"
                 "    return vload_half(0, (__private const half *)&u);\n}",
    "cuport_rh2": "float2 cuport_rh2(float2 x)\n{\n    return (float2)(cuport_rh(x.x), cuport_rh(x.y));\n}",
}


def _cl_helpers(em, text: str):
    if "cuport_rh" in text:
        em.helper("cuport_rh", _CL_HELPERS["cuport_rh"])
    if "cuport_rh2" in text:
        em.helper("cuport_rh2", _CL_HELPERS["cuport_rh2"])


def value_type(target, t: CType, em=None) -> str:
    """The target's spelling of a half value (not of buffer storage)."""
    if storage_only(target):
        return "float" if t.kind == "scalar" else "float2"
    return target.type_name(t, em)


def round_to_half(em, target, e: E, dst: CType) -> E:
    """A float (float2) value as the half (half2) CUDA's conversion gives: round to nearest even."""
    if storage_only(target):
        fn = "cuport_rh" if dst.kind == "scalar" else "cuport_rh2"
        _cl_helpers(em, fn)
        return E(f"{fn}({e.text})", dst)
    return E(f"{target.type_name(dst, em)}({e.text})", dst)


# --- rows ----------------------------------------------------------------------------------------------------------

def row_call(em, target, name: str, n, xs: list[E]) -> E:
    """A `half` row applied to emitted arguments (converted to its parameters): the spelling inline when each
    argument appears once in it, else a helper function `cuport_<name>` so each is evaluated once."""
    r = intrinsics.half_table()[name]
    rt, pts = HALF_SIGNATURES[name]
    if len(xs) != len(pts):
        em.fail(n, f"`{name}` with {len(xs)} arguments")
    spelling = r.spelling(target.name)
    if not spelling:
        em.fail(n, f"`{name}` (no {target.display_name} spelling)")
    xs = [em.conv(x, t) for x, t in zip(xs, pts)]
    if storage_only(target):
        _cl_helpers(em, spelling)
    else:
        for t in (rt,) + pts:
            target.type_name(t, em)          # the extensions the types need
    if "{" not in spelling:
        return E(f"{spelling}({', '.join(x.text for x in xs)})", rt)
    if spelling == "{0}":
        return E(xs[0].text, rt, xs[0].prec)
    if all(spelling.count("{%d}" % i) <= 1 for i in range(len(xs))):
        # each argument once: inline, the arguments and the whole parenthesised as needed
        whole = PREC_PRIMARY if re.fullmatch(r"\{0\}\.\w+", spelling) or re.fullmatch(r"[\w.]+\((?:[^()]|\((?:[^()]|\([^()]*\))*\))*\)", spelling) else PREC_COND
        return E(spelling.format(*[x.paren(PREC_PRIMARY) for x in xs]), rt, whole)
    names = "abc"[:len(xs)]
    hname = "cuport_" + name.strip("_")
    tn = (lambda t: value_type(target, t, em) if is_half(t) else target.type_name(t, em))
    params = ", ".join(f"{tn(t)} {v}" for t, v in zip(pts, names))
    em.helper(hname, f"{tn(rt)} {hname}({params})\n{{\n    return {spelling.format(*names)};\n}}")
    return E(f"{hname}({', '.join(x.text for x in xs)})", rt)


# --- fp8 ------------------------------------------------------------------------------------------------------------

# cuda_fp8.hpp's __nv_cvt_double_to_fp8 on the bits of a float (exact: a float widens to double exactly). Per
# format: exponent bias, significand bits, mantissa mask, half the smallest denormal, the overflow threshold (as
# `absx > t`), the largest finite code, the smallest normal: the last four as float bits.
_FP8 = {"E4M3": (7, 4, 0x7, 0x3A800000, 0x43E80000, 0x7E, 0x3C800000),
        "E5M2": (15, 3, 0x3, 0x37000000, 0x476FFFFF, 0x7B, 0x38800000)}
FP8_FORMATS = {"__NV_E4M3": "E4M3", "__NV_E5M2": "E5M2"}
FP8_SATURATION = {"__NV_NOSAT": False, "__NV_SATFINITE": True}


def fp8_helper(em, target, fmt: str, sat: bool) -> str:
    bias, sb, mmask, tiny, over, maxnorm, minnorm = _FP8[fmt]
    half_ulp = 1 << (24 - sb - 1)
    if sat:
        overflow = f"0x{maxnorm:X}u"
    else:
        overflow = "0x7Fu" if fmt == "E4M3" else "0x7Cu"
    nan = "0x7Fu" if fmt == "E4M3" else "(0x7Eu | mantissa)"
    bits = "floatBitsToUint(f)" if target.name == "glsl" else "as_uint(f)"
    name = f"cuport_f32_to_{fmt.lower()}_{'satfinite' if sat else 'nosat'}"
    body = f"""uint {name}(float f)
{{
    /* cuda_fp8.hpp's conversion: round to nearest even */
    uint xbits = BITS;
    uint sign = (xbits >> 31) << 7;
    int e = int((xbits >> 23) & 0xFFu) - 127 + {bias};
    uint mantissa = (xbits >> {24 - sb}) & 0x{mmask:X}u;
    uint absx = xbits & 0x7FFFFFFFu;
    uint res;
    if (absx <= 0x{tiny:X}u) {{
        res = 0u;
    }} else if (absx > 0x7F800000u) {{
        res = {nan};
    }} else if (absx > 0x{over:X}u) {{
        res = {overflow};
    }} else if (absx >= 0x{minnorm:X}u) {{
        res = (uint(e) << {sb - 1}) | mantissa;
        uint rbits = xbits & 0x{(half_ulp << 1) - 1:X}u;
        if (rbits > 0x{half_ulp:X}u || (rbits == 0x{half_ulp:X}u && (mantissa & 1u) != 0u)) res = res + 1u;
    }} else {{
        uint shift = uint(1 - e);
        mantissa = mantissa | {1 << (sb - 1)}u;
        res = mantissa >> shift;
        uint rbits = (xbits | 0x800000u) & ((0x{half_ulp:X}u << (shift + 1u)) - 1u);
        uint mid = 0x{half_ulp:X}u << shift;
        if (rbits > mid || (rbits == mid && (res & 1u) != 0u)) res = res + 1u;
    }}
    return res | sign;
}}"""
    if target.name != "glsl":
        body = re.sub(r"\b(u?int)\(", r"(\1)(", body)
    return em.helper(name, body.replace("BITS", bits))


def fp8_call(em, target, name: str, n, args) -> E:
    if name != "__nv_cvt_float_to_fp8" or len(args) != 3:
        em.fail(n, f"`{name}` (cuport translates __nv_cvt_float_to_fp8 only)")
    sat, fmt = (em.model.source.slice(a.start, a.end).strip().split("::")[-1] for a in args[1:])
    if sat not in FP8_SATURATION or fmt not in FP8_FORMATS:
        em.fail(n, f"`{name}` with a saturation / format that is not a constant __NV_* name")
    x = em.conv(em.x(args[0]), ct.F32)
    h = fp8_helper(em, target, FP8_FORMATS[fmt], FP8_SATURATION[sat])
    return E(f"{h}({x.text})", ct.U32)


# --- the hook from the emitter's calls -----------------------------------------------------------------------------

def _operands(em, n) -> list:
    from porter.translate.kernel.typeinfo import NON_EXPR
    ch = n.children
    if len(ch) == 1 and ch[0].kind == "MEMBER_REF_EXPR" and ch[0].spelling == n.spelling and ch[0].children:
        return [ch[0].children[0]]                # `h.operator float()`: the object
    return [c for c in n.children if c.kind not in NON_EXPR and
            not (c.kind in ("DECL_REF_EXPR", "UNEXPOSED_EXPR") and c.spelling == n.spelling)]


def call(em, n) -> E | None:
    """A constructor, operator or intrinsic of the half types (or an fp8 conversion), or None for other calls."""
    name = em.callee_name(n)
    t = em.t
    if name and n.kind == "CALL_EXPR" and em._callee_fn(n) is not None:
        return None                               # the program's own function of that name
    if name in intrinsics.table() and not any(is_half(em.ty(a)) for a in em.call_args(n)):
        return None                               # `__hadd` of two ints: the integer intrinsic
    if name == "__nv_cvt_float_to_fp8" or (name in intrinsics.half_table() and
                                            intrinsics.half_table()[name].kind == "fp8"):
        return fp8_call(em, t, name, n, em.call_args(n))
    if name in HALF_SIGNATURES:
        return row_call(em, t, name, n, [em.x(a) for a in em.call_args(n)])
    if name in _HALF_NAMES and n.kind in ("CALL_EXPR", "CXX_CONSTRUCT_EXPR", "CXX_TEMPORARY_OBJECT_EXPR",
                                          "CXX_FUNCTIONAL_CAST_EXPR"):
        return construct(em, n, em.ty(n).unqualified(), _operands(em, n))
    if name.startswith("operator") and n.kind == "CALL_EXPR":
        ops = _operands(em, n)
        types = [em.ty(o) for o in ops]
        if not any(is_half(x) for x in types):
            return None
        return operator(em, n, name[len("operator"):].strip(), ops, types)
    return None


def construct(em, n, t: CType, ops) -> E:
    if not ops:
        return em.zero(t)
    if t.kind == "scalar":
        if len(ops) != 1:
            em.fail(n, f"the constructor `{n.text}`")
        return em.conv(em.x(ops[0]), t)
    if len(ops) == 1 and em.ty(ops[0]).same(t):
        return em.x(ops[0])
    if len(ops) == 2:
        return row_call(em, em.t, "__halves2half2", n, [em.x(o) for o in ops])
    em.fail(n, f"the constructor `{n.text}`")


def operator(em, n, op: str, ops, types) -> E:
    target = em.t
    if op == "=" and len(ops) == 2:
        return assign(em, n, ops[0], em.conv(em.x(ops[1]), types[0].unqualified()))
    if op in ("+=", "-=", "*=", "/=") and len(ops) == 2:
        if not em._pure(ops[0]):
            em.fail(n, f"`{n.text}` (a compound assignment to a half lvalue with side effects)")
        lt = types[0].unqualified()
        val = operator(em, n, op[0], ops, [lt, types[1]])
        return assign(em, n, ops[0], em.conv(val, lt))
    if op in ("++", "--"):
        em.fail(n, f"`{op}` on a half value")
    if op == "float" and len(ops) == 1:          # the conversion operator: exact
        return em.conv(em.x(ops[0]), ct.F32)
    if len(ops) == 1 and op in ("-", "+"):
        x = em.x(ops[0])
        if op == "+":
            return x
        return row_call(em, target, OPERATORS[("neg", x.ct.n if x.ct.kind == "vector" else 1)], n, [x])
    if len(ops) != 2:
        em.fail(n, f"the half operator `{op}`")
    a, b = em.x(ops[0]), em.x(ops[1])
    lanes = 2 if any(x.ct.kind == "vector" for x in (a, b)) else 1
    row = OPERATORS.get((op, lanes))
    if row is None:
        em.fail(n, f"the half operator `{op}` on {'__half2' if lanes == 2 else '__half'}")
    return row_call(em, target, row, n, [a, b])


def assign(em, n, lhs_n, value: E) -> E:
    """`lhs = value` for a half lvalue; OpenCL stores into a half buffer with vstore_half_rte."""
    target = em.t
    pv = private_views.target_of(em, lhs_n)      # `*(__half2 *)&f4.x = h2`: the float's bits
    if pv is not None:
        return private_views.store(em, n, pv[0], em.x(pv[1]) if pv[1] is not None else None, lhs_n, value)
    if storage_only(target) and half_storage_root(em, lhs_n) is not None:
        ptr, idx = target.half_address(em, lhs_n)
        fn = "vstore_half_rte" if value.ct.kind == "scalar" else "vstore_half2_rte"
        return E(f"{fn}({value.text}, {idx}, {ptr})", ct.VOID)
    lv = em.x(lhs_n, "w")
    return E(f"{lv.text} = {value.text}", value.ct, 14)


def half_storage_root(em, lhs_n):
    """The buffer root of an lvalue whose memory holds halves (OpenCL global / constant), else None."""
    s = lhs_n.strip
    if s.kind == "ARRAY_SUBSCRIPT_EXPR":
        base = s.children[0]
    elif s.kind == "UNARY_OPERATOR" and s.op == "*":
        base = s.children[0]
    else:
        return None
    bt = em.ty(base)
    if bt.kind not in ("pointer", "array"):
        return None
    root, _off = em.ptr(base)
    return root if is_half(root.elem.unqualified()) and root.space in ("global", "constant") else None


def check_param(em, t: CType, node, name: str):
    """A half passed by value to a kernel: its 16 bits would arrive in a 32-bit slot the host fills with a number."""
    if is_half(t):
        em.fail(node, f"the half parameter `{name}` passed by value (pass a float, or a pointer to the half)")

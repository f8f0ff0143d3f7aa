"""GLSL helpers for CUDA float math whose GLSL builtin (or former helper) is far less accurate than CUDA's function.

Vulkan requires atan / atan2 within 4096 ulp, asin / acos only through them, exp within 3 + 2|x| ulp, sinh / cosh /
tanh only through exp and log / log2 within 2^-21 absolute near 1 ("Precision and Operation of SPIR-V
Instructions"). lavapipe measured (bench/results/math_accuracy.json) 341-4204 ulp for the inverse trigonometry,
62 ulp for exp in [-87, 88], 1.3e8 ulp for sinh / tanh near 0 and 6e6 ulp for log near 1, where CUDA promises 1-3
(HeCBench inversek2j's acosf near 1 differed from PoCL in the third decimal of a degree). These helpers use their own
polynomials (Cephes' single-precision minimax coefficients; fdlibm's logf and expf; pi / 2, pi / 4, pi and ln 2 in
two parts), so they need only correctly rounded +, *, /, sqrt and ldexp from the driver. fmod: the former
`x - y * trunc(x / y)` was wrong by up to |x| when the quotient rounds (near an integer) or exceeds 2^24; this one
subtracts |y| * 2^k, each step exact. Measured within CUDA's bounds on lavapipe (log2f and log1pf: 2 ulp, CUDA 1):
tests/test_glsl_accurate_math.py.
"""
from __future__ import annotations

from porter.translate.kernel import ctype as ct

# asin(s) for |s| <= 1/2: s + s^3 P(s^2)
_ASIN_POLY = ("((((4.2163199048e-2 * z + 2.4181311049e-2) * z + 4.5470025998e-2) * z + 7.4953002686e-2) * z "
              "+ 1.6666752422e-1) * z * s + s")
# atan(t) for |t| <= tan(pi/8), after the reduction: t + t^3 P(t^2)
_ATAN_CORE = ("    float y0 = 0.0, lo = 0.0;\n"
              "    if (t > 2.414213562373095) { y0 = 1.5707963705062866; lo = -4.371139e-8; t = -1.0 / t; }\n"
              "    else if (t > 0.41421356237309503) { y0 = 0.7853981852531433; lo = -2.1855695e-8; "
              "t = (t - 1.0) / (t + 1.0); }\n"
              "    float z = t * t;\n"
              "    float p = (((8.05374449538e-2 * z - 1.38776856032e-1) * z + 1.99777106478e-1) * z "
              "- 3.33329491539e-1) * z * t;\n"
              "    float r = y0 + (t + (p + lo));\n")
_NEG = "(floatBitsToUint({0}) >> 31) != 0u"        # the sign bit: -0.0 included
# fdlibm's logf: x = m * 2^e, m in [sqrt(1/2), sqrt(2)), f = m - 1 (exact), s = f / (2 + f),
# log(m) = f - (f^2 / 2 - s (f^2 / 2 + R(s^2))); Vulkan allows GLSL's log 2^-21 absolute error near 1 (lavapipe:
# 6e6 ulp at 1 - 2^-24), CUDA's logf is within 1 ulp
_LOG_CORE = ("if (!(x > 0.0) || isinf(x))\n"
             "        return x == 0.0 ? -uintBitsToFloat(0x7f800000u) : (x > 0.0 ? x : NAN);\n"
             "    int e, k = 0;\n"
             "    if (x < 1.17549435e-38) { x *= 16777216.0; k = 24; }   // subnormal: 2^24\n"
             "    float m = frexp(x, e);\n    e -= k;\n"
             "    if (m < 0.70710678) { m *= 2.0; e -= 1; }\n"
             "    float f = m - 1.0, s = f / (2.0 + f), z = s * s, h = 0.5 * f * f, dk = float(e);\n"
             "    float r = z * (6.6666668653e-01 + z * (4.0000000596e-01 + z * (2.8571429849e-01 + z * (2.2222198546e-01"
             "\n        + z * (1.8183572590e-01 + z * (1.5313838422e-01 + z * 1.4798198640e-01))))));\n")

BODIES = {
    "asin": ("float x",
             "float a = abs(x), s = a;\n"
             "    if (a > 0.5) s = sqrt(0.5 * (1.0 - a));\n"
             f"    float z = s * s;\n    float p = {_ASIN_POLY};\n"
             "    if (a > 0.5) p = 1.5707963705062866 - (2.0 * p + 4.371139e-8);\n"
             f"    return {_NEG.format('x')} ? -p : p;"),
    "acos": ("float x",
             "float s = x > 0.5 ? sqrt(0.5 * (1.0 - x)) : (x < -0.5 ? sqrt(0.5 * (1.0 + x)) : x);\n"
             f"    float z = s * s;\n    float p = {_ASIN_POLY};\n"
             "    if (x > 0.5) return 2.0 * p;\n"
             "    if (x < -0.5) return 3.1415927410125732 - (2.0 * p + 8.742278e-8);\n"
             "    return 1.5707963705062866 - (p + 4.371139e-8);"),
    "atan": ("float x",
             "float t = abs(x);\n" + _ATAN_CORE + f"    return {_NEG.format('x')} ? -r : r;"),
    "atan2": ("float y, float x",
              "if (isnan(x) || isnan(y)) return x + y;\n"
              "    float ax = abs(x), ay = abs(y), mn = min(ax, ay), mx = max(ax, ay);\n"
              "    float t = mx == 0.0 ? 0.0 : (isinf(mx) ? (isinf(mn) ? 1.0 : 0.0) : mn / mx);\n"
              + _ATAN_CORE +
              "    if (ay > ax) r = 1.5707963705062866 - (r + 4.371139e-8);\n"
              f"    if ({_NEG.format('x')}) r = 3.1415927410125732 - (r + 8.742278e-8);\n"
              f"    return {_NEG.format('y')} ? -r : r;"),
    # C's fmod exactly: r - t with t = |y| * 2^k in (r / 2, r] is exact; at most (exponent of x - exponent of y + 1)
    # steps (278 for float, 2099 for double)
    "fmod": ("float x, float y",
             "float r = abs(x), b = abs(y);\n"
             "    if (isnan(x) || isnan(y) || isinf(x) || b == 0.0) return NAN;\n"
             "    if (r < b) return x;\n"
             "    int eb, er;\n"
             "    float mb = frexp(b, eb);\n"
             "    while (r >= b) {\n"
             "        float mr = frexp(r, er);\n"
             "        r -= ldexp(mb <= mr ? mb : 0.5 * mb, er);\n"
             "    }\n"
             "    return x < 0.0 ? -r : r;"),
    # log(m) + e ln 2, ln 2 in two parts
    "log": ("float x", _LOG_CORE + "    return dk * 6.9313812256e-01 - ((h - (s * (h + r) + dk * 9.0580006145e-06)) - f);"),
    # the same log(m), then e + log(m) / ln 2 (exact at powers of 2) and fdlibm's log10f sum
    "log2": ("float x", _LOG_CORE + "    return dk + (f - (h - s * (h + r))) * 1.4426950408889634;"),
    "log10": ("float x", _LOG_CORE + "    return dk * 3.0102920532e-01 + (dk * 7.9034151668e-07 + (f - (h - s * (h + r)))"
              " * 4.3429449201e-01);"),
    # the classic correction of 1 + x's rounding, on the log above (GLSL's log near 1 made it 1.4e7 ulp near 0)
    "log1p": ("float x",
              "precise float u = 1.0 + x, d = u - 1.0;      // precise: the compiler may fold (1 + x) - 1 to x\n"
              "    return d == 0.0 || (isinf(x) && x > 0.0) ? x : cuport_log_float(u) * (x / d);"),
    # fdlibm's expf: x = k ln 2 + r (ln 2 in two parts), exp(r) = 1 + 2r / (2 - c), c = r - r^2 P(r^2), scaled by
    # 2^k in two steps (neither overflows alone); GLSL's exp: 62 ulp on lavapipe in [-87, 88] (Vulkan: 3 + 2|x|)
    "exp": ("float x",
            "if (isnan(x) || x > 89.0) return x + x;            // NaN, or infinity\n"
            "    if (x < -104.0) return 0.0;\n"
            "    float k = roundEven(x * 1.4426950216), hi = x - k * 6.9314575195e-01, lo = k * 1.4286067653e-06;\n"
            "    float r = hi - lo, t = r * r;\n"
            "    float c = r - t * (1.6666625440e-1 + t * (-2.7667332906e-3 + t * (6.6137559770e-05"
            "\n        + t * (-1.6533901999e-06 + t * 4.1381369442e-08))));\n"
            "    float y = 1.0 - ((lo - (r * c) / (2.0 - c)) - hi);\n"
            "    int n = int(k), n1 = n / 2;\n"
            "    return ldexp(ldexp(y, n1), n - n1);"),
    # Cephes' sinhf / tanhf polynomials near 0 (GLSL's, from exp, were 1.3e8 ulp there on lavapipe), the exp
    # helper beyond; exp(|x|) / 2 as exp(|x| - ln 2) where exp(|x|) alone would overflow
    "sinh": ("float x",
             "float a = abs(x), r;\n"
             "    if (a <= 1.0) {\n        float z = a * a;\n"
             "        r = ((2.03721912945e-4 * z + 8.33028376239e-3) * z + 1.66667160211e-1) * z * a + a;\n"
             "    } else if (a > 88.7) r = cuport_exp_float(a - 0.693145751953125) * 0.9999985713942;\n"
             "    else { float e = cuport_exp_float(a); r = 0.5 * e - 0.5 / e; }\n"
             f"    return {_NEG.format('x')} ? -r : r;"),
    "cosh": ("float x",
             "float a = abs(x);\n"
             "    if (a > 88.7) return cuport_exp_float(a - 0.693145751953125) * 0.9999985713942;\n"
             "    float e = cuport_exp_float(a);\n"
             "    return 0.5 * e + 0.5 / e;"),
    "tanh": ("float x",
             "float a = abs(x), r;\n"
             "    if (a < 0.625) {\n        float z = a * a;\n"
             "        r = ((((-5.70498872745e-3 * z + 2.06390887954e-2) * z - 5.37397155531e-2) * z + 1.33314422036e-1)"
             " * z\n            - 3.33332819422e-1) * z * a + a;\n"
             "    } else if (a > 9.0) r = 1.0;\n"
             "    else r = 1.0 - 2.0 / (cuport_exp_float(2.0 * a) + 1.0);\n"
             f"    return {_NEG.format('x')} ? -r : r;"),
    # Kahan's expm1: (u - 1) x / log(u), u = exp(x), on the helpers above (GLSL's exp(x) - 1: 1.1e5 ulp near 0)
    "expm1": ("float x",
              "precise float u = cuport_exp_float(x), d = u - 1.0;   // precise: not folded\n"
              "    if (d == 0.0) return x;\n"
              "    if (d == -1.0 || isinf(u)) return d;\n"
              "    return d * (x / cuport_log_float(u));"),
    # one Newton step y - (y - x / y^2) / 3 from GLSL's pow (45 ulp on lavapipe): within 1 ulp
    "cbrt": ("float x",
             "float a = abs(x);\n"
             "    if (a == 0.0 || isinf(a) || isnan(a)) return x;\n"
             "    float sc = 1.0;\n"
             "    if (a < 1.17549435e-38) { a *= 16777216.0; sc = 0.00390625; }   // subnormal: 2^24, cbrt 2^-8\n"
             "    float y = pow(a, 1.0 / 3.0);\n"
             "    y = (y - (y - a / (y * y)) / 3.0) * sc;\n"
             f"    return {_NEG.format('x')} ? -y : y;"),
    "rcbrt": ("float x",
              "return 1.0 / cuport_cbrt_float(x);"),
    # fdlibm's formulas on the log and log1p helpers (GLSL's, from log and sqrt: 1e4 ulp near 0 on lavapipe, and
    # x * x overflowing from 1.8e19)
    "asinh": ("float x",
              "float a = abs(x), r;\n"
              "    if (isinf(a) || isnan(a)) return x;\n"
              "    if (a > 268435456.0) r = cuport_log_float(a) + 6.9314718055994531e-01;\n"
              "    else if (a > 2.0) r = cuport_log_float(2.0 * a + 1.0 / (sqrt(a * a + 1.0) + a));\n"
              "    else { float t = a * a; r = cuport_log1p_float(a + t / (1.0 + sqrt(1.0 + t))); }\n"
              f"    return {_NEG.format('x')} ? -r : r;"),
    "acosh": ("float x",
              "if (x < 1.0 || isnan(x)) return NAN;\n"
              "    if (isinf(x)) return x;\n"
              "    if (x > 268435456.0) return cuport_log_float(x) + 6.9314718055994531e-01;\n"
              "    if (x > 2.0) return cuport_log_float(2.0 * x - 1.0 / (x + sqrt(x * x - 1.0)));\n"
              "    float t = x - 1.0;\n"
              "    return cuport_log1p_float(t + sqrt(2.0 * t + t * t));"),
    "atanh": ("float x",
              "float a = abs(x), r;\n"
              "    if (!(a <= 1.0)) return NAN;\n"
              "    if (a < 0.5) { float t = a + a; r = 0.5 * cuport_log1p_float(t + t * a / (1.0 - a)); }\n"
              "    else r = 0.5 * cuport_log1p_float((a + a) / (1.0 - a));\n"
              f"    return {_NEG.format('x')} ? -r : r;"),
}
# a helper that calls others: those are written first
DEPENDS = {"log1p": ("log",), "sinh": ("exp",), "cosh": ("exp",), "tanh": ("exp",), "expm1": ("exp", "log"),
           "rcbrt": ("cbrt",), "asinh": ("log", "log1p"), "acosh": ("log", "log1p"), "atanh": ("log", "log1p")}
# float only: their double rows stay refused (glsl_f64 = no) or are glsl_builtins.double_helper (log)
FLOAT_ONLY = ("asin", "acos", "atan", "atan2", "log", "log2", "log10", "log1p", "exp", "expm1", "sinh", "cosh", "tanh",
              "cbrt", "rcbrt", "asinh", "acosh", "atanh")


def helper(target, em, base: str, ft, xs):
    """A call of the helper for `base` (a key of BODIES) on the converted arguments `xs`, the helper written once."""
    from porter.translate.kernel.target import E
    for dep in DEPENDS.get(base, ()):
        helper(target, em, dep, ft, xs[:0])
    params, body = BODIES[base]
    tn = target.type_name(ft, em)
    if ft == ct.F64:
        target.type_name(ct.U64, em)        # uint64BitsToDouble: the 64-bit integer extension
        body = body.replace("float ", "double ").replace("NAN", "uint64BitsToDouble(0x7ff8000000000000UL)")
        params = params.replace("float ", "double ")
    else:
        body = body.replace("NAN", "uintBitsToFloat(0x7fc00000u)")
    hname = em.helper(f"cuport_{base}_{tn}", f"{tn} cuport_{base}_{tn}({params})\n{{\n    {body}\n}}")
    return E(f"{hname}({', '.join(x.text for x in xs)})", ft)

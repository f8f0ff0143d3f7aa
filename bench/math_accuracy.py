"""Measured accuracy of the device math mappings (rules/kernel/intrinsics.csv): every math row with a float (and
double) variant, translated by cuport from a one-line CUDA kernel (`y[i] = acosf(x[i])`) and run on lavapipe
(GLSL) and PoCL (OpenCL) over a few hundred thousand arguments per function: uniform over the useful range plus
edge regions (near 1 for acos / asin, large arguments for sin / cos, subnormals...).

The error is CUDA's measure (Programming Guide, "Mathematical Functions"): the distance in ulps between the
returned value and the correctly rounded result. The exact result comes from NumPy in long double (x87, 64-bit
significand: 40 bits beyond float, 11 beyond double), from Python's math module (double) for erf / erfc / lgamma /
tgamma (float only), or exactly (fmod, remainder, rounding, min / max...).

    PYTHONPATH=$PWD .venv/bin/python bench/math_accuracy.py [--points 32768] [--only acos,sin] \
        [--json bench/results/math_accuracy.json] [--update-csv]

--update-csv rewrites the `measured:` part of each measured row's precision note in rules/kernel/intrinsics.csv;
then regenerate docs/intrinsics.md (`python -m porter.translate.kernel.intrinsics`), whose accuracy table reads
the JSON.
"""
from __future__ import annotations

import argparse
import csv
import io
import json
import math
import os
import sys
import tempfile
from fractions import Fraction

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CSV = os.path.join(ROOT, "rules", "kernel", "intrinsics.csv")
DEFAULT_JSON = os.path.join(ROOT, "bench", "results", "math_accuracy.json")
LAVAPIPE_ICD = "/usr/share/vulkan/icd.d/lvp_icd.x86_64.json"
LD = np.longdouble
PI = LD("3.14159265358979323846264338327950288")


# --- ulps ------------------------------------------------------------------------------------------------------

def _ordered(a: np.ndarray) -> np.ndarray:
    """Float bit patterns as integers in the order of the values (-0 and +0 both 0): adjacent floats differ by 1."""
    bits = {np.float32: np.int32, np.float64: np.int64}[a.dtype.type]
    i = a.view(bits).astype(np.int64)
    if a.dtype == np.float32:
        return np.where(i < 0, -(i & 0x7FFFFFFF), i)
    lo = np.int64(0x7FFFFFFFFFFFFFFF)
    return np.where(i < 0, -(i & lo), i)


def ulp_distance(got: np.ndarray, exact: np.ndarray) -> np.ndarray:
    """|got - round(exact)| in ulps of got's type (CUDA's measure): `exact` is the exact result, in a wider type
    (long double, double for float results), rounded to got's type here (overflow to infinity included). Where
    `exact` lies exactly halfway between two of got's values (a reference rounded to its own precision first can
    land there: double rounding), either neighbour counts as correctly rounded. Both NaN: 0; one NaN: inf."""
    got = np.asarray(got)
    exact = np.asarray(exact)
    with np.errstate(over="ignore", invalid="ignore"):
        want = exact.astype(got.dtype)
        d = np.abs(_ordered(got) - _ordered(want)).astype(np.float64)
        if exact.dtype.itemsize > got.dtype.itemsize:
            fin = np.isfinite(want)
            wide = exact.astype(LD)
            resid = wide - want.astype(LD)
            up = np.nextafter(want, np.where(resid > 0, np.inf, -np.inf).astype(got.dtype))
            tie = fin & (resid != 0) & np.isfinite(up) & (np.abs(resid) * 2 == np.abs(up.astype(LD) - want.astype(LD)))
            if tie.any():
                d2 = np.abs(_ordered(got) - _ordered(up)).astype(np.float64)
                d = np.where(tie, np.minimum(d, d2), d)
    gn, wn = np.isnan(got), np.isnan(want)
    d[gn != wn] = np.inf
    d[gn & wn] = 0.0
    return d


# --- arguments -------------------------------------------------------------------------------------------------

def _bits(dtype):
    return np.int32 if dtype == np.float32 else np.int64


def mag(lo: float, hi: float, signs: str = "+"):
    """Uniform over the bit patterns of [lo, hi] (0 <= lo < hi): every binade alike. signs: '+', '-' or '+-'."""
    def gen(rng, n, dtype):
        b = _bits(dtype)
        a = np.array([lo, hi], dtype).view(b)
        x = rng.integers(int(a[0]), int(a[1]), n, endpoint=True).astype(b).view(dtype)
        if signs == "-":
            x = -x
        elif signs == "+-":
            x = np.where(rng.random(n) < 0.5, -x, x)
        return x
    return gen


def lin(lo: float, hi: float):
    """Uniform over the values of [lo, hi]."""
    def gen(rng, n, dtype):
        return np.clip(rng.uniform(lo, hi, n), lo, hi).astype(dtype)
    return gen


def near(c: float, lo: float, hi: float, side: str = "-"):
    """c - d (side '-') or c + d, d uniform over the bit patterns of [lo, hi]: the arguments just below or above c."""
    def gen(rng, n, dtype):
        d = mag(lo, hi)(rng, n, dtype).astype(np.float64)
        return (c - d if side == "-" else c + d).astype(dtype)
    return gen


def halves(lo: int, hi: int):
    """k + 0.5 and k, k - tiny: where rounding to an integer decides."""
    def gen(rng, n, dtype):
        k = rng.integers(lo, hi, n).astype(np.float64)
        f = rng.choice(np.array([0.0, 0.5, -0.5, 0.25, 0.75]), n)
        x = (k + f).astype(dtype)
        return np.where(rng.random(n) < 0.2, np.nextafter(x, np.array(0, dtype)), x)
    return gen


def both(gx, gz):
    return lambda rng, n, dtype: (gx(rng, n, dtype), gz(rng, n, dtype))


def triple(g):
    return lambda rng, n, dtype: (g(rng, n, dtype), g(rng, n, dtype), g(rng, n, dtype))


# --- references ------------------------------------------------------------------------------------------------

def _ld(f):
    """A NumPy ufunc on long double arguments."""
    return lambda *xs: f(*[x.astype(LD) for x in xs])


def _py(f):
    """Python's math function per element, in double (float results only: 29 bits to spare)."""
    v = np.vectorize(lambda t: f(t) if math.isfinite(t) else float("nan"), otypes=[np.float64])

    def ref(x):
        with np.errstate(all="ignore"):
            out = np.full(x.shape, np.nan)
            for i, t in enumerate(x.astype(np.float64)):
                try:
                    out[i] = f(t)
                except (ValueError, OverflowError):
                    out[i] = math.inf if f is math.gamma and t > 0 else math.nan
            return out
    return ref if f in (math.gamma, math.lgamma) else (lambda x: v(x.astype(np.float64)))


def _rsqrt(x):
    return LD(1) / np.sqrt(x.astype(LD))


def _rcbrt(x):
    return LD(1) / np.cbrt(x.astype(LD))


def _exp10(x):
    return np.power(LD(10), x.astype(LD))


def _round_away(x):
    x = x.astype(LD)
    return np.trunc(x + np.copysign(LD(0.5), x))


def _remainder(x, z):
    return np.vectorize(math.remainder, otypes=[np.float64])(x.astype(np.float64), z.astype(np.float64))


def _fdim(x, z):
    x, z = x.astype(LD), z.astype(LD)
    return np.where(x > z, x - z, LD(0))


def _fma(a, b, c):
    if a.dtype == np.float32:          # a * b is exact in 64 bits; one rounding of the sum, then float's
        return a.astype(LD) * b.astype(LD) + c.astype(LD)
    out = np.empty(a.shape, np.float64)   # double: exactly, with fractions
    for i, (p, q, r) in enumerate(zip(a.tolist(), b.tolist(), c.tolist())):
        out[i] = float(Fraction(p) * Fraction(q) + Fraction(r)) if all(map(math.isfinite, (p, q, r))) \
            else p * q + r
    return out


def _pi_reduced(x):
    """x - 2k in [-1, 1] (exact), and whether x is an integer / half an odd integer (exact zeros of sinpi, cospi)."""
    x = x.astype(np.float64) if x.dtype == np.float32 else x
    r = x - 2.0 * np.round(x / 2.0)
    return r, (r == np.round(r)), (2.0 * r == np.round(2.0 * r)) & (r != np.round(r))


def _sinpi(x):
    r, whole, _ = _pi_reduced(x)
    with np.errstate(invalid="ignore"):
        return np.where(whole, np.copysign(LD(0), x.astype(LD)), np.sin(PI * r.astype(LD)))


def _cospi(x):
    r, _, half = _pi_reduced(x)
    with np.errstate(invalid="ignore"):
        return np.where(half, LD(0), np.cos(PI * r.astype(LD)))


def _logb(x):
    x = x.astype(np.float64) if x.dtype == np.float32 else x
    with np.errstate(divide="ignore"):
        return np.where(x == 0, -np.inf, (np.frexp(x)[1] - 1).astype(np.float64))


# --- the functions ---------------------------------------------------------------------------------------------

F32_MAX, F32_TINY, F32_DEN = 3.4028235e38, 1.1754944e-38, 1.4e-45
F64_MAX, F64_TINY, F64_DEN = 1.7976931348623157e308, 2.2250738585072014e-308, 5e-324
SUB32, SUB64 = (F32_DEN, F32_TINY), (F64_DEN, F64_TINY)

# Documented bounds, ulps (CUDA C++ Programming Guide, "Mathematical Functions" appendix, the single- and
# double-precision tables; default flags: -prec-div=true -prec-sqrt=true, no -use_fast_math, no -ftz) and what
# Vulkan requires of GLSL.std.450 (Vulkan spec, "Precision and Operation of SPIR-V Instructions").
VK_EXACT = "correctly rounded"


def F(name, arity, regions, ref, cuda32, cuda64, vulkan, regions64=None, f64=True, ref64=None):
    return {"name": name, "arity": arity, "regions": regions, "regions64": regions64 or regions, "ref": ref,
            "ref64": ref64 or ref, "cuda32": cuda32, "cuda64": cuda64, "vulkan": vulkan, "f64": f64}


def _t(*pairs):
    return list(pairs)


FUNCS = [
    F("sqrt", 1, _t(("normal", mag(F32_TINY, F32_MAX)), ("subnormal", mag(*SUB32))), _ld(np.sqrt), 0, 0,
      "inherited from 1 / inversesqrt (about 3 ulp)",
      regions64=_t(("normal", mag(F64_TINY, F64_MAX)), ("subnormal", mag(*SUB64)))),
    F("rsqrt", 1, _t(("normal", mag(F32_TINY, F32_MAX)), ("subnormal", mag(*SUB32))), _rsqrt, 2, 1, "2 ulp",
      regions64=_t(("normal", mag(F64_TINY, F64_MAX)), ("subnormal", mag(*SUB64)))),
    F("exp", 1, _t(("[-1, 1]", lin(-1, 1)), ("[-87, 88]", lin(-87, 88.7)), ("subnormal results", lin(-103, -87.4))),
      _ld(np.exp), 2, 1, "builtin: 3 + 2|x| ulp; cuport helper: from +, *, /, ldexp",
      regions64=_t(("[-1, 1]", lin(-1, 1)), ("[-708, 709]", lin(-708, 709.7)))),
    F("exp2", 1, _t(("[-1, 1]", lin(-1, 1)), ("[-126, 128]", lin(-126, 127.99)), ("subnormal results", lin(-149, -126))),
      _ld(np.exp2), 2, 1, "3 + 2|x| ulp",
      regions64=_t(("[-1, 1]", lin(-1, 1)), ("[-1022, 1024]", lin(-1022, 1023.99)))),
    F("exp10", 1, _t(("[-1, 1]", lin(-1, 1)), ("[-37, 38.5]", lin(-37.9, 38.5))), _exp10, 2, 1,
      "GLSL helper exp2(x * log2(10)): inherited from exp2",
      regions64=_t(("[-1, 1]", lin(-1, 1)), ("[-307, 308]", lin(-307, 308)))),
    F("expm1", 1, _t(("near 0", mag(2.0 ** -40, 0.5, "+-")), ("[-20, 88]", lin(-20, 88.7))), _ld(np.expm1), 1, 1,
      "cuport helper: from the exp and log helpers, +, *, /",
      regions64=_t(("near 0", mag(2.0 ** -60, 0.5, "+-")), ("[-40, 709]", lin(-40, 709.7)))),
    F("log", 1, _t(("normal", mag(F32_TINY, F32_MAX)), ("near 1", near(1, 2.0 ** -24, 0.5, "-")),
                   ("near 1 (above)", near(1, 2.0 ** -23, 1.0, "+")), ("subnormal", mag(*SUB32))),
      _ld(np.log), 1, 1, "builtin: 3 ulp outside [0.5, 2], absolute 2^-21 inside; cuport helper: from +, *, /",
      regions64=_t(("normal", mag(F64_TINY, F64_MAX)), ("near 1", near(1, 2.0 ** -53, 0.5, "-")),
                   ("near 1 (above)", near(1, 2.0 ** -52, 1.0, "+")), ("subnormal", mag(*SUB64)))),
    F("log2", 1, _t(("normal", mag(F32_TINY, F32_MAX)), ("near 1", near(1, 2.0 ** -24, 0.5, "-")),
                    ("near 1 (above)", near(1, 2.0 ** -23, 1.0, "+")), ("subnormal", mag(*SUB32))),
      _ld(np.log2), 1, 1, "builtin: 3 ulp outside [0.5, 2], absolute 2^-21 inside; cuport helper: from +, *, /",
      regions64=_t(("normal", mag(F64_TINY, F64_MAX)), ("near 1", near(1, 2.0 ** -53, 0.5, "-")))),
    F("log10", 1, _t(("normal", mag(F32_TINY, F32_MAX)), ("near 1", near(1, 2.0 ** -24, 0.5, "-"))),
      _ld(np.log10), 2, 1, "cuport helper: from +, *, /",
      regions64=_t(("normal", mag(F64_TINY, F64_MAX)), ("near 1", near(1, 2.0 ** -53, 0.5, "-")))),
    F("log1p", 1, _t(("near 0", mag(2.0 ** -40, 0.5, "+-")), ("(-1, -0.5]", near(-1, 2.0 ** -24, 0.5, "+")),
                     ("large", mag(0.5, F32_MAX))),
      _ld(np.log1p), 1, 1, "cuport helper: from the log helper, +, *, /",
      regions64=_t(("near 0", mag(2.0 ** -60, 0.5, "+-")), ("large", mag(0.5, F64_MAX)))),
    F("sin", 1, _t(("[-pi, pi]", lin(-math.pi, math.pi)), ("|x| in [pi, 1e4]", mag(math.pi, 1e4, "+-")),
                   ("|x| in [1e4, 1e38]", mag(1e4, 1e38, "+-")), ("near 0", mag(2.0 ** -40, 0.01, "+-"))),
      _ld(np.sin), 2, 2, "absolute 2^-11 inside [-pi, pi]"),
    F("cos", 1, _t(("[-pi, pi]", lin(-math.pi, math.pi)), ("|x| in [pi, 1e4]", mag(math.pi, 1e4, "+-")),
                   ("|x| in [1e4, 1e38]", mag(1e4, 1e38, "+-")), ("near pi/2", near(math.pi / 2, 2.0 ** -22, 1e-3, "+"))),
      _ld(np.cos), 2, 2, "absolute 2^-11 inside [-pi, pi]"),
    F("tan", 1, _t(("[-pi/2, pi/2]", lin(-math.pi / 2, math.pi / 2)), ("|x| in [pi, 1e4]", mag(math.pi, 1e4, "+-")),
                   ("near 0", mag(2.0 ** -40, 0.01, "+-"))),
      _ld(np.tan), 4, 2, "inherited from sin / cos"),
    F("asin", 1, _t(("[-1, 1]", lin(-1, 1)), ("near 1", near(1, 2.0 ** -24, 2.0 ** -4)),
                    ("near 0", mag(2.0 ** -40, 0.01, "+-"))),
      _ld(np.arcsin), 2, 2, "builtin: inherited from atan2(x, sqrt(1 - x * x)); cuport helper: from +, *, sqrt",
      regions64=_t(("[-1, 1]", lin(-1, 1)), ("near 1", near(1, 2.0 ** -53, 2.0 ** -4)))),
    F("acos", 1, _t(("[-1, 1]", lin(-1, 1)), ("near 1", near(1, 2.0 ** -24, 2.0 ** -4)),
                    ("near -1", near(-1, 2.0 ** -24, 2.0 ** -4, "+"))),
      _ld(np.arccos), 2, 2, "builtin: inherited from atan2(sqrt(1 - x * x), x); cuport helper: from +, *, sqrt",
      regions64=_t(("[-1, 1]", lin(-1, 1)), ("near 1", near(1, 2.0 ** -53, 2.0 ** -4)))),
    F("atan", 1, _t(("[-4, 4]", lin(-4, 4)), ("all magnitudes", mag(2.0 ** -40, 1e38, "+-"))),
      _ld(np.arctan), 2, 2, "builtin: 4096 ulp; cuport helper: from +, *, / (2.5 ulp)"),
    F("sinh", 1, _t(("[-1, 1]", lin(-1, 1)), ("[-89, 89]", lin(-89, 89)), ("near 0", mag(2.0 ** -40, 0.01, "+-"))),
      _ld(np.sinh), 3, 2, "builtin: inherited from (exp(x) - exp(-x)) / 2; cuport helper: from the exp helper, +, *, /",
      regions64=_t(("[-1, 1]", lin(-1, 1)), ("[-709, 709]", lin(-709, 709)))),
    F("cosh", 1, _t(("[-1, 1]", lin(-1, 1)), ("[-89, 89]", lin(-89, 89))),
      _ld(np.cosh), 2, 1, "builtin: inherited from (exp(x) + exp(-x)) / 2; cuport helper: from the exp helper, +, *, /",
      regions64=_t(("[-1, 1]", lin(-1, 1)), ("[-709, 709]", lin(-709, 709)))),
    F("tanh", 1, _t(("[-10, 10]", lin(-10, 10)), ("near 0", mag(2.0 ** -40, 0.5, "+-"))),
      _ld(np.tanh), 2, 1, "builtin: inherited from sinh / cosh; cuport helper: from the exp helper, +, *, /"),
    F("asinh", 1, _t(("[-4, 4]", lin(-4, 4)), ("all magnitudes", mag(2.0 ** -40, 1e38, "+-"))),
      _ld(np.arcsinh), 3, 3, "builtin: inherited from log(x + sqrt(x * x + 1)); cuport helper: from the log / log1p helpers, sqrt"),
    F("acosh", 1, _t(("near 1", near(1, 2.0 ** -23, 1.0, "+")), ("[1, 1e38]", mag(1.0, 1e38))),
      _ld(np.arccosh), 4, 3, "builtin: inherited from log(x + sqrt(x * x - 1)); cuport helper: from the log / log1p helpers, sqrt",
      regions64=_t(("near 1", near(1, 2.0 ** -52, 1.0, "+")), ("[1, 1e300]", mag(1.0, 1e300)))),
    F("atanh", 1, _t(("[-1, 1]", lin(-0.999999, 0.999999)), ("near 1", near(1, 2.0 ** -24, 2.0 ** -4)),
                     ("near 0", mag(2.0 ** -40, 0.01, "+-"))),
      _ld(np.arctanh), 3, 2, "builtin: inherited from log((1 + x) / (1 - x)) / 2; cuport helper: from the log1p helper",
      regions64=_t(("[-1, 1]", lin(-0.999999, 0.999999)), ("near 1", near(1, 2.0 ** -53, 2.0 ** -4)))),
    F("pow", 2, _t(("x in [2^-10, 2^10], y in [-10, 10]", both(mag(2.0 ** -10, 2.0 ** 10), lin(-10, 10))),
                   ("x near 1, y in [-1e4, 1e4]", both(near(1, 2.0 ** -24, 2.0 ** -6, "-"), lin(-1e4, 1e4))),
                   ("x in [0, 1e38], y in [-2, 2]", both(mag(1e-38, 1e38), lin(-2, 2)))),
      _ld(np.power), 4, 2, "inherited from exp2(y * log2(x))"),
    F("atan2", 2, _t(("any signs and magnitudes", both(mag(1e-30, 1e30, "+-"), mag(1e-30, 1e30, "+-"))),
                     ("[-1, 1]^2", both(lin(-1, 1), lin(-1, 1)))),
      _ld(np.arctan2), 3, 2, "builtin: 4096 ulp; cuport helper: from +, *, / (2.5 ulp)"),
    F("hypot", 2, _t(("any magnitudes", both(mag(1e-30, 1e30, "+-"), mag(1e-30, 1e30, "+-"))),
                     ("[-1e3, 1e3]^2", both(lin(-1e3, 1e3), lin(-1e3, 1e3)))),
      _ld(np.hypot), 3, 2, "GLSL helper: inherited from sqrt, division"),
    F("cbrt", 1, _t(("normal", mag(F32_TINY, F32_MAX, "+-")), ("[-8, 8]", lin(-8, 8))),
      _ld(np.cbrt), 1, 1, "cuport helper: from pow, +, *, / (a Newton step)",
      regions64=_t(("normal", mag(F64_TINY, F64_MAX, "+-")), ("[-8, 8]", lin(-8, 8)))),
    F("rcbrt", 1, _t(("normal", mag(F32_TINY, F32_MAX, "+-")), ("[-8, 8]", lin(-8, 8))),
      _rcbrt, 1, 1, "cuport helper: from the cbrt helper, /",
      regions64=_t(("normal", mag(F64_TINY, F64_MAX, "+-")), ("[-8, 8]", lin(-8, 8)))),
    F("fma", 3, _t(("[-1, 1]^3", triple(lin(-1, 1))), ("any magnitudes", triple(mag(1e-12, 1e12, "+-")))),
      _fma, 0, 0, "inherited from x * y + z (may round twice)"),
    F("fmod", 2, _t(("any magnitudes", both(mag(1e-30, 1e30, "+-"), mag(1e-30, 1e30, "+-"))),
                    ("[-100, 100] by [-10, 10]", both(lin(-100, 100), lin(-10, 10)))),
      _ld(np.fmod), 0, 0, "cuport helper: exact (subtractions of y * 2^k)"),
    F("remainder", 2, _t(("any magnitudes", both(mag(1e-30, 1e30, "+-"), mag(1e-30, 1e30, "+-"))),
                         ("[-100, 100] by [-10, 10]", both(lin(-100, 100), lin(-10, 10)))),
      _remainder, 0, 0, "none (no GLSL mapping)"),
    F("fdim", 2, _t(("any", both(mag(1e-30, 1e30, "+-"), mag(1e-30, 1e30, "+-"))),), _fdim, 0, 0,
      "GLSL helper: a subtraction, correctly rounded"),
    F("copysign", 2, _t(("any", both(mag(1e-30, 1e30, "+-"), mag(1e-30, 1e30, "+-"))),),
      _ld(np.copysign), 0, 0, "GLSL helper: exact"),
    F("fmin", 2, _t(("any", both(mag(1e-30, 1e30, "+-"), mag(1e-30, 1e30, "+-"))),), _ld(np.fmin), 0, 0, VK_EXACT),
    F("fmax", 2, _t(("any", both(mag(1e-30, 1e30, "+-"), mag(1e-30, 1e30, "+-"))),), _ld(np.fmax), 0, 0, VK_EXACT),
    F("fabs", 1, _t(("any", mag(F32_DEN, F32_MAX, "+-")),), _ld(np.abs), 0, 0, VK_EXACT,
      regions64=_t(("any", mag(F64_DEN, F64_MAX, "+-")),)),
    F("floor", 1, _t(("halves", halves(-10 ** 6, 10 ** 6)), ("large", lin(-2.0 ** 25, 2.0 ** 25))),
      _ld(np.floor), 0, 0, VK_EXACT),
    F("ceil", 1, _t(("halves", halves(-10 ** 6, 10 ** 6)), ("large", lin(-2.0 ** 25, 2.0 ** 25))),
      _ld(np.ceil), 0, 0, VK_EXACT),
    F("trunc", 1, _t(("halves", halves(-10 ** 6, 10 ** 6)), ("large", lin(-2.0 ** 25, 2.0 ** 25))),
      _ld(np.trunc), 0, 0, VK_EXACT),
    F("rint", 1, _t(("halves", halves(-10 ** 6, 10 ** 6)), ("large", lin(-2.0 ** 25, 2.0 ** 25))),
      _ld(np.rint), 0, 0, VK_EXACT),
    F("nearbyint", 1, _t(("halves", halves(-10 ** 6, 10 ** 6)),), _ld(np.rint), 0, 0, VK_EXACT),
    F("round", 1, _t(("halves", halves(-10 ** 6, 10 ** 6)), ("large", lin(-2.0 ** 25, 2.0 ** 25))),
      _round_away, 0, 0, "GLSL helper (halfway away from zero): exact"),
    F("erf", 1, _t(("[-4, 4]", lin(-4, 4)), ("near 0", mag(2.0 ** -40, 0.01, "+-"))), _py(math.erf), 2, 2,
      "none (no GLSL mapping)", f64=False),
    F("erfc", 1, _t(("[-4, 10]", lin(-4, 10)),), _py(math.erfc), 4, 5, "none (no GLSL mapping)", f64=False),
    F("lgamma", 1, _t(("(0, 50]", lin(1e-3, 50)), ("[-10, 0) between the poles", lin(-9.99, -0.01))),
      _py(math.lgamma), 6, 4, "none (no GLSL mapping)", f64=False),
    F("tgamma", 1, _t(("(0, 35]", lin(1e-3, 35)), ("[-10, 0) between the poles", lin(-9.99, -0.01))),
      _py(math.gamma), 5, 10, "none (no GLSL mapping)", f64=False),
    F("sinpi", 1, _t(("[-2, 2]", lin(-2, 2)), ("|x| in [2, 2^24]", mag(2.0, 2.0 ** 24, "+-"))), _sinpi, 1, 2,
      "none (no GLSL mapping)"),
    F("cospi", 1, _t(("[-2, 2]", lin(-2, 2)), ("|x| in [2, 2^24]", mag(2.0, 2.0 ** 24, "+-"))), _cospi, 1, 2,
      "none (no GLSL mapping)"),
    F("logb", 1, _t(("any", mag(F32_DEN, F32_MAX, "+-")),), _logb, 0, 0, "none (no GLSL mapping)",
      regions64=_t(("any", mag(F64_DEN, F64_MAX, "+-")),)),
]
REGION_SEED = 20261128


# --- kernels ---------------------------------------------------------------------------------------------------

def _kernel_name(fn: str, dtype) -> str:
    return f"acc_{fn}_{'f32' if dtype == np.float32 else 'f64'}"


def _cuda_source(funcs, dtype) -> str:
    ctype = "float" if dtype == np.float32 else "double"
    suffix = "f" if dtype == np.float32 else ""
    out = ["// generated by bench/math_accuracy.py: one math call per thread"]
    for f in funcs:
        args = ["x", "z", "w"][:f["arity"]]
        params = ", ".join(f"const {ctype} *{a}" for a in args)
        call = f"{f['name']}{suffix}({', '.join(f'{a}[i]' for a in args)})"
        out.append(f"__global__ void {_kernel_name(f['name'], dtype)}({params}, {ctype} *y, int n)\n{{\n"
                   f"  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i < n) y[i] = {call};\n}}\n")
    return "\n".join(out)


def _signature(arity: int, dtype) -> str:
    t = "f32" if dtype == np.float32 else "f64"
    return ", ".join(f"{a}: {t}[n] in" for a in ["x", "z", "w"][:arity]) + f", y: {t}[n] out, n: i32"


def _inputs(f, dtype, points: int):
    """The arguments of every region, concatenated, and each region's (label, start, stop)."""
    regions = f["regions"] if dtype == np.float32 else f["regions64"]
    cols, spans, start = [[] for _ in range(f["arity"])], [], 0
    for k, (label, gen) in enumerate(regions):
        rng = np.random.default_rng([REGION_SEED, k, len(f["name"]), sum(map(ord, f["name"]))])
        xs = gen(rng, points, dtype)
        xs = xs if isinstance(xs, tuple) else (xs,)
        for c, x in zip(cols, xs):
            c.append(np.ascontiguousarray(x, dtype))
        spans.append((label, start, start + points))
        start += points
    return [np.concatenate(c) for c in cols], spans


class Runner:
    """The translated kernels of one CUDA file run on one backend ('vulkan': lavapipe, 'opencl': PoCL)."""

    def __init__(self, backend: str, funcs, dtype, workdir: str):
        from porter.translate.api import translate_file
        self.backend = backend
        self.dtype = dtype
        path = os.path.join(workdir, f"math_{'f32' if dtype == np.float32 else 'f64'}.cu")
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(_cuda_source(funcs, dtype))
        target = "glsl" if backend == "vulkan" else "opencl"
        self.res = translate_file(path, target, validate=False)
        self.mod = __import__(f"porter.verify.backends.{backend}", fromlist=["run"])

    def refused(self, fn: str) -> str | None:
        k = _kernel_name(fn, self.dtype)
        if k in self.res.failed_kernels:
            return str(self.res.failed_kernels[k])
        return None if k in self.res.manifests else "not translated"

    def run(self, fn: str, arity: int, xs: list[np.ndarray]) -> np.ndarray:
        from porter.verify.spec import Case
        k = _kernel_name(fn, self.dtype)
        n = len(xs[0])
        case = Case(kernel=k, source="math.cu", signature=_signature(arity, self.dtype), grid="ceil(n / 256)",
                    block="256", reference=None, sizes=[{"n": n}])
        arrays = {a: x for a, x in zip(["x", "z", "w"], xs)}
        arrays["y"] = np.zeros(n, self.dtype)
        arrays["n"] = np.int32(n)
        text = self.res.shaders[k] if self.backend == "vulkan" else self.res.text
        return self.mod.run(case, text, self.res.manifests[k], {"n": n}, arrays).outputs["y"]


def _fmt(v) -> str:
    v = float(v)
    return repr(v) if v == v else "nan"


def measure(f, dtype, runners: dict, points: int) -> dict:
    xs, spans = _inputs(f, dtype, points)
    with np.errstate(all="ignore"):
        exact = (f["ref"] if dtype == np.float32 else f["ref64"])(*xs)
    tiny = np.finfo(dtype).tiny
    out = {"points": len(xs[0]), "regions": [label for label, _, _ in spans]}
    for backend, runner in runners.items():
        why = runner.refused(f["name"])
        if why:
            out[backend] = {"refused": why}
            continue
        got = runner.run(f["name"], f["arity"], xs)
        d = ulp_distance(got, exact)
        with np.errstate(all="ignore"):
            absd = np.abs(got.astype(LD) - exact.astype(LD)).astype(np.float64)
            # subnormal arguments or results (CUDA keeps them without -ftz; Vulkan may flush them to zero)
            sub = np.zeros(len(d), bool)
            for x in xs + [np.asarray(exact).astype(dtype)]:
                sub |= (x != 0) & (np.abs(x) < tiny)
        regions = []
        for label, a, b in spans:
            r = {"region": label}
            for key, mask in (("", np.ones(b - a, bool)), ("normal_", ~sub[a:b])):
                dd = np.where(mask, d[a:b], -1.0)
                i = int(np.argmax(dd))
                if dd[i] < 0:
                    continue
                r[key + "max_ulp"] = float(dd[i])
                if not key:
                    r["at"] = [_fmt(x[a + i]) for x in xs]
                    r["got"], r["want"] = _fmt(got[a + i]), _fmt(np.asarray(exact[a + i]).astype(dtype))
                    r["over_4_ulp"] = int((d[a:b] > 4).sum())
                    fin = np.isfinite(absd[a:b])
                    r["max_abs"] = float(absd[a:b][fin].max()) if fin.any() else None
            r["subnormal_points"] = int(sub[a:b].sum())
            regions.append(r)
        out[backend] = {"max_ulp": max(r["max_ulp"] for r in regions),
                        "normal_max_ulp": max(r.get("normal_max_ulp", 0.0) for r in regions),
                        "regions": regions}
    return out


def device_names(runners) -> dict:
    out = {}
    for backend, r in runners.items():
        try:
            out[backend] = r.mod.prepare(None).get("device")
        except Exception as e:          # noqa: BLE001 (reported, not fatal)
            out[backend] = f"? ({e})"
    return out


# --- precision notes -------------------------------------------------------------------------------------------

MARK = "measured: "


def _ulps(v) -> str:
    if v is None:
        return "?"
    if v == float("inf"):
        return "inf"
    return f"{int(v)}" if v == int(v) else f"{v:g}"


def _side(entry: dict | None, name: str, bound) -> str | None:
    """'lavapipe 4204 (near 1)': the worst ulps, with its region where beyond CUDA's bound."""
    if not entry:
        return None
    if "refused" in entry:      # a refusal other than GLSL's documented one (no builtin, no double) is news
        code = entry["refused"].split(":")[0]
        return None if code == "CP907" else f"{name} refused ({code}: {entry['refused'].split('(')[1].split(')')[0]})"
    s = f"{name} {_ulps(entry['max_ulp'])}"
    extra = []
    if entry["max_ulp"] > bound:
        extra.append(max(entry["regions"], key=lambda r: r["max_ulp"])["region"])
    if entry["normal_max_ulp"] != entry["max_ulp"]:
        extra.append(f"{_ulps(entry['normal_max_ulp'])} without subnormals")
    return s + (f" ({', '.join(extra)})" if extra else "")


def note(fn: str, results: dict) -> str | None:
    """The `measured:` sentence of a row: lavapipe's and PoCL's worst ulps beside CUDA's bound, float then double,
    and Vulkan's requirement."""
    r32, r64 = results.get("f32", {}).get(fn), results.get("f64", {}).get(fn)
    if r32 is None:
        return None
    parts = []
    for label, r in (("float", r32), ("double", r64)):
        if not r:
            continue
        sides = [s for s in (_side(r.get("vulkan"), "lavapipe", r["cuda"]), _side(r.get("opencl"), "PoCL", r["cuda"]))
                 if s]
        if sides:
            parts.append(f"{label} {', '.join(sides)}, CUDA {r['cuda']}")
    vk = r32["vulkan_bound"]
    tail = "" if vk.startswith("none") else f"; Vulkan requires {vk}"
    return f"{MARK}ulps {'; '.join(parts)}{tail} (docs/intrinsics.md)"


def update_csv(results: dict, path: str = CSV) -> int:
    """Rewrite the `measured:` part of the precision note of every measured math row; the rest of the note, every
    other cell and every other line stay as they are (the table has one row per line). Returns the rows changed."""
    with open(path, newline="", encoding="utf-8") as fh:
        lines = fh.read().split("\n")
    head = next(csv.reader([lines[0]]))
    ci, ki, pi = head.index("cuda"), head.index("kind"), head.index("precision")
    changed = 0
    for k, line in enumerate(lines[1:], 1):
        if not line:
            continue
        row = next(csv.reader([line]))
        n = note(row[ci], results) if row[ki] == "math" else None
        if n is None:
            continue
        base = row[pi].split(MARK)[0].rstrip("; ").strip()
        new = f"{base}; {n}" if base else n
        if new != row[pi]:
            row[pi] = new
            buf = io.StringIO()
            csv.writer(buf, lineterminator="").writerow(row)
            lines[k], changed = buf.getvalue(), changed + 1
    with open(path, "w", encoding="utf-8", newline="") as fh:
        fh.write("\n".join(lines))
    return changed


# --- main ------------------------------------------------------------------------------------------------------

def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--points", type=int, default=1 << 15, help="arguments per region (default 32768)")
    ap.add_argument("--only", default="", help="comma-separated function names")
    ap.add_argument("--json", default=DEFAULT_JSON)
    ap.add_argument("--no-f64", action="store_true")
    ap.add_argument("--update-csv", action="store_true")
    args = ap.parse_args(argv)
    os.environ.setdefault("VK_ICD_FILENAMES", LAVAPIPE_ICD)
    funcs = [f for f in FUNCS if not args.only or f["name"] in args.only.split(",")]
    results: dict = {"command": " ".join(["PYTHONPATH=$PWD .venv/bin/python bench/math_accuracy.py"] + [
        a for a in (argv if argv is not None else sys.argv[1:]) if a != "--update-csv"]),
        "points_per_region": args.points, "measure": "ulps between the returned value and the correctly rounded "
        "result (CUDA's measure); max over the region", "f32": {}, "f64": {}}
    with tempfile.TemporaryDirectory() as tmp:
        for dtype in (np.float32,) + (() if args.no_f64 else (np.float64,)):
            key = "f32" if dtype == np.float32 else "f64"
            fs = [f for f in funcs if dtype == np.float32 or f["f64"]]
            runners = {b: Runner(b, fs, dtype, tmp) for b in ("vulkan", "opencl")}
            results.setdefault("devices", device_names(runners))
            for f in fs:
                r = measure(f, dtype, runners, args.points)
                r["cuda"] = f["cuda32"] if dtype == np.float32 else f["cuda64"]
                r["vulkan_bound"] = f["vulkan"]
                results[key][f["name"]] = r
                print(f"{key} {f['name']:10s} CUDA {r['cuda']:>2}  " + "  ".join(
                    f"{b}: {v.get('refused', '')[:40] if 'refused' in v else _ulps(v['max_ulp'])}"
                    for b, v in ((b, r[b]) for b in runners)), flush=True)
    os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
    with open(args.json, "w", encoding="utf-8") as fh:
        json.dump(results, fh, indent=1)
        fh.write("\n")
    if args.update_csv:
        print(f"{update_csv(results)} precision notes updated in {CSV}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

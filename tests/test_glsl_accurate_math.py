"""GLSL helpers for CUDA float math whose GLSL builtin is far less accurate (porter/translate/kernel/glsl_accurate.py):
asinf, acosf, atanf, atan2f (own polynomials: Vulkan lets the builtins be 4096 ulp off, lavapipe measured up to
4204 ulp where CUDA promises 2), expf (GLSL's exp: 62 ulp in [-87, 88]), sinhf / coshf / tanhf on it (GLSL's:
1.3e8 ulp near 0, overflow from 88.7), logf, log2f, log10f, log1pf (fdlibm's logf: GLSL's log was 6e6 ulp off at
1 - 2^-24, Vulkan allows 2^-21 absolute there), expm1f (Kahan's, on them), cbrtf / rcbrtf (pow and a Newton step:
pow alone was 45 ulp), asinhf / acoshf / atanhf (fdlibm's, on log / log1p) and fmod (exact; the former x - y * trunc(x / y) was off by up to |x|). Run on lavapipe against
NumPy in long double, within CUDA's bounds (log2f, log1pf, expm1f, rcbrtf: 2 ulp, CUDA 1); special values as C;
double asin / acos / atan / atan2 stay refused."""
import math
import os
import sys

import numpy as np
import pytest

from kernel_helpers import LAVAPIPE_ICD, refusal, translate_text
from porter.translate.kernel.validate import tool

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import math_accuracy as ma  # noqa: E402

needs_lavapipe = pytest.mark.skipif(not os.path.exists(LAVAPIPE_ICD) or tool("glslangValidator") is None,
                                    reason="lavapipe / glslangValidator not available")
LD = np.longdouble
F = {f["name"]: f for f in ma.FUNCS}


def test_the_helpers_replace_the_builtins(tmp_path):
    res = translate_text(tmp_path, "glsl", "__global__ void k(float *a) {\n"
                         "  a[0] = acosf(a[1]) + asinf(a[2]) + atanf(a[3]) + atan2f(a[4], a[5]) + fmodf(a[6], a[7]);\n}\n")
    s = res.shaders["k"]
    for call in ("cuport_acos_float(a[1])", "cuport_asin_float(a[2])", "cuport_atan_float(a[3])",
                 "cuport_atan2_float(a[4], a[5])", "cuport_fmod_float(a[6], a[7])"):
        assert call in s, call
    assert "float cuport_atan2_float(float y, float x)" in s and "acos(" not in s.replace("cuport_acos", "")
    assert " atan(" not in s and "trunc(x / y)" not in s


def test_fast_intrinsics_and_fast_math_take_the_builtins(tmp_path):
    # CUDA's __expf / __logf trade accuracy for speed, as --fast-math (nvcc's -use_fast_math) does for expf:
    # GLSL's one-instruction builtins; without either, the accurate helpers. A function GLSL has no builtin for
    # (log10, atan2 is GLSL's two-argument atan) keeps its helper either way
    code = ("__global__ void k(float *a) {\n"
            "  a[0] = __expf(a[1]) + __logf(a[2]) + expf(a[3]) + acosf(a[4]) + log10f(a[5]) + atan2f(a[6], a[7]);\n}\n")
    s = translate_text(tmp_path, "glsl", code).shaders["k"]
    assert "exp(a[1])" in s and "log(a[2])" in s
    assert "cuport_exp_float(a[3])" in s and "cuport_acos_float(a[4])" in s and "cuport_log10_float(a[5])" in s
    s = translate_text(tmp_path, "glsl", code, fast_math=True).shaders["k"]
    assert "exp(a[3])" in s and "acos(a[4])" in s and "cuport_exp_float" not in s and "cuport_acos" not in s
    assert "cuport_log10_float(a[5])" in s and "cuport_atan2_float(a[6], a[7])" in s


def test_double_inverse_trigonometry_stays_refused_and_double_fmod_is_the_helper(tmp_path):
    res = translate_text(tmp_path, "glsl", "__global__ void k(double *a) {\n  a[0] = fmod(a[1], a[2]);\n"
                         "  a[3] = acos(a[4]);\n}\n")
    d = refusal(res)
    assert "k" not in res.shaders and d.row == 3 and "double-precision `acos`" in d.message
    res = translate_text(tmp_path, "glsl", "__global__ void k(double *a) {\n  a[0] = fmod(a[1], a[2]);\n}\n", name="d.cu")
    s = res.shaders["k"]
    assert "double cuport_fmod_double(double x, double y)" in s and "uint64BitsToDouble(0x7ff8000000000000UL)" in s


@pytest.fixture(scope="module")
def runners(tmp_path_factory):
    if not os.path.exists(LAVAPIPE_ICD) or tool("glslangValidator") is None:
        pytest.skip("lavapipe / glslangValidator not available")
    os.environ["VK_ICD_FILENAMES"] = LAVAPIPE_ICD
    tmp = str(tmp_path_factory.mktemp("acc"))
    funcs = [F[n] for n in ("asin", "acos", "atan", "atan2", "fmod", "log", "log2", "log10", "log1p", "exp", "sinh",
                            "cosh", "tanh", "expm1", "cbrt", "rcbrt", "asinh", "acosh", "atanh")]
    return {np.float32: ma.Runner("vulkan", funcs, np.float32, tmp),
            np.float64: ma.Runner("vulkan", [F["fmod"]], np.float64, tmp)}


@needs_lavapipe
@pytest.mark.parametrize("name,bound", [("asin", 2), ("acos", 2), ("atan", 2), ("atan2", 3), ("fmod", 0), ("log", 1),
                                        ("log2", 2), ("log10", 2), ("log1p", 2), ("exp", 1), ("sinh", 3), ("cosh", 2),
                                        ("tanh", 2), ("expm1", 2), ("cbrt", 1), ("rcbrt", 2),
                                        ("asinh", 3), ("acosh", 4), ("atanh", 3)])
def test_within_cudas_bound_on_lavapipe(runners, name, bound):
    r = ma.measure(F[name], np.float32, {"vulkan": runners[np.float32]}, 1 << 13)["vulkan"]
    assert r["max_ulp"] <= bound, r["regions"]
    assert len(r["regions"]) >= 2 and all(g["max_ulp"] <= bound for g in r["regions"])


@needs_lavapipe
def test_double_fmod_is_exact_on_lavapipe(runners):
    r = ma.measure(F["fmod"], np.float64, {"vulkan": runners[np.float64]}, 1 << 12)["vulkan"]
    assert r["max_ulp"] == 0, r["regions"]


def run(runners, name, *args, dtype=np.float32):
    xs = [np.array(a, dtype) for a in args]
    return runners[dtype].run(name, len(xs), xs)


@needs_lavapipe
def test_special_values_as_c(runners):
    inf, nan = math.inf, math.nan
    got = run(runners, "acos", [1, -1, 0, nan, 1.5, 0.99999994])
    assert got[:2].tolist() == [0, np.float32(math.pi)] and got[2] == np.float32(math.pi / 2)
    assert np.isnan(got[3:5]).all() and got[5] == np.float32(np.arccos(LD(np.float32(0.99999994))))
    got = run(runners, "asin", [-0.0, 1, -1, 2])
    assert np.signbit(got[0]) and got[0] == 0 and got[1:3].tolist() == [np.float32(math.pi / 2), -np.float32(math.pi / 2)]
    assert np.isnan(got[3])
    got = run(runners, "atan", [-0.0, inf, -inf, nan])
    assert np.signbit(got[0]) and got[1:3].tolist() == [np.float32(math.pi / 2), -np.float32(math.pi / 2)]
    assert np.isnan(got[3])
    y = [0.0, -0.0, 0.0, -0.0, inf, -inf, 1.0, nan]
    x = [0.0, 0.0, -0.0, -0.0, inf, -inf, 0.0, 1.0]
    got = run(runners, "atan2", y, x)
    want = np.arctan2(np.array(y, np.float32), np.array(x, np.float32))
    assert np.array_equal(got, want, equal_nan=True) and np.array_equal(np.signbit(got), np.signbit(want))
    # fmod: the sign of x, NaN for y = 0 or x infinite, x for y infinite; a quotient that rounds to an integer
    got = run(runners, "fmod", [-4, 5, inf, 5, -72.26213836669922, 1e30], [2, 0, 1, inf, 4.014561653137207, 3])
    with np.errstate(invalid="ignore"):
        want = np.fmod(np.array([-4, 5, inf, 5, -72.26213836669922, 1e30], np.float32),
                       np.array([2, 0, 1, inf, 4.014561653137207, 3], np.float32))
    assert np.array_equal(got, want, equal_nan=True) and np.signbit(got[0])


@needs_lavapipe
def test_log_special_values_as_c(runners):
    inf, nan = math.inf, math.nan
    x = [0.0, -0.0, -1.0, inf, nan, 1.0, 1e-45, 0.99999994, -inf]
    got = run(runners, "log", x)
    with np.errstate(all="ignore"):
        want = np.log(np.array(x, np.float32).astype(LD)).astype(np.float32)
    assert np.array_equal(got, want, equal_nan=True), (got, want)
    x = [-1.0, -0.0, inf, -inf, nan, -2.981825630854473e-08, 3e38, -2.0]
    got = run(runners, "log1p", x)
    with np.errstate(all="ignore"):
        want = np.log1p(np.array(x, np.float32).astype(LD)).astype(np.float32)
    assert np.array_equal(got, want, equal_nan=True) and np.signbit(got[1]), (got, want)


@needs_lavapipe
def test_exp_special_values_and_range_ends(runners):
    x = [0.0, -0.0, 1.0, -np.inf, np.inf, np.nan, 88.72283172607422, 88.72283935546875, -104.0, -103.9,
         -87.5, 1e-30]
    got = run(runners, "exp", x)
    with np.errstate(all="ignore"):
        want = np.exp(np.array(x, np.float32).astype(LD)).astype(np.float32)
    assert np.isfinite(got[6]) and got[7] == np.inf and got[8] == 0
    assert np.array_equal(got, want, equal_nan=True), (got, want)


@needs_lavapipe
def test_hyperbolic_special_values_and_overflow_ends(runners):
    x = [0.0, -0.0, np.inf, -np.inf, np.nan, 89.41, -89.41, 89.5, 1e-30, -20.0]
    with np.errstate(all="ignore"):
        for name, ref in (("sinh", np.sinh), ("cosh", np.cosh), ("tanh", np.tanh)):
            got = run(runners, name, x)
            want = ref(np.array(x, np.float32).astype(LD)).astype(np.float32)
            assert np.array_equal(got, want, equal_nan=True), (name, got, want)
            assert np.array_equal(np.signbit(got[:2]), np.signbit(want[:2])), name
    assert np.isfinite(run(runners, "cosh", [89.41])).all()              # exp(89.41) alone would overflow


@needs_lavapipe
def test_log2_is_exact_at_powers_of_two(runners):
    k = np.arange(-149, 128)
    got = run(runners, "log2", np.ldexp(np.float32(1), k))
    assert got.tolist() == k.astype(np.float32).tolist()


@needs_lavapipe
def test_expm1_and_cube_roots_special_values(runners):
    with np.errstate(all="ignore"):
        for name, x, ref in (("expm1", [-0.0, np.inf, -np.inf, np.nan, 1e-30, -30.0, 88.7], np.expm1),
                             ("cbrt", [-0.0, np.inf, -np.inf, np.nan, -8.0, 27.0, 1e-45], np.cbrt),
                             ("rcbrt", [0.0, -0.0, np.inf, 8.0, -0.125], lambda v: 1 / np.cbrt(v))):
            got = run(runners, name, x)
            want = ref(np.array(x, np.float32).astype(LD)).astype(np.float32)
            assert np.array_equal(got, want, equal_nan=True), (name, got, want)
            assert np.array_equal(np.signbit(got), np.signbit(want)), name


@needs_lavapipe
def test_inverse_hyperbolic_special_values(runners):
    with np.errstate(all="ignore"):
        for name, x, ref in (("asinh", [-0.0, np.inf, -np.inf, np.nan, 1e30, -3e-8], np.arcsinh),
                             ("acosh", [1.0, 0.5, np.inf, np.nan, 1e30, 1.0000001], np.arccosh),
                             ("atanh", [-0.0, 1.0, -1.0, 1.5, np.nan, 3e-8], np.arctanh)):
            got = run(runners, name, x)
            exact = ref(np.array(x, np.float32).astype(LD))
            d = ma.ulp_distance(got, exact)          # 0 at the special values (NaN, infinities, zeros)
            assert (d <= {"asinh": 3, "acosh": 4, "atanh": 3}[name]).all(), (name, got, d)
            num = ~np.isnan(got)
            assert np.array_equal(np.signbit(got[num]), np.signbit(exact.astype(np.float32)[num])), name

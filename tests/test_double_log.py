"""Double-precision log in GLSL (which has log for floats only): a helper cuport writes
(glsl_builtins.double_helper, intrinsics.csv `log` row, glsl_f64 = helper). Before, every kernel calling log on a
double was refused for GLSL (HeCBench kalman). Verified against NumPy on lavapipe 4/8/16 and PoCL."""
import os

from porter.translate.api import translate_file
from kernel_helpers import expected_runs, failures, ran_keys, run_spec, translate_text

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIX = os.path.join(ROOT, "tests", "fixtures", "double_math")
KERNELS = ("dlog", "dlog_binades", "sum_logs")


def test_double_log_translates_with_a_helper():
    res = translate_file(os.path.join(FIX, "dlog.cu"), "glsl", validate=True)
    assert set(res.shaders) == set(KERNELS), res.failed_kernels
    s = res.shaders["sum_logs"]
    assert "double cuport_log_double(double x)" in s and "s += cuport_log_double(x[i * per + k]);" in s
    assert "frexp(x, e)" in s and "uint64BitsToDouble(0x7ff8000000000000UL)" in s


def test_float_log_keeps_the_float_helper_and_other_double_math_is_still_refused(tmp_path):
    res = translate_text(tmp_path, "glsl", "__global__ void k(float *f, double *d) {\n  f[0] = logf(f[0]) + log(f[1]);\n"
                         "  d[0] = log2(d[0]);\n}\n")
    assert "k" in res.failed_kernels
    d = [d for d in res.diagnostics if d.code == "CP907" and d.severity == "error"]
    assert d and d[0].row == 3 and "double-precision `log2`" in d[0].message
    res = translate_text(tmp_path, "glsl", "__global__ void k(float *f) {\n  f[0] = logf(f[0]) + log(f[1]);\n}\n",
                         name="f.cu")
    # float log: the float helper (glsl_accurate.py, tests/test_glsl_accurate_math.py), not the double one
    assert "cuport_log_double" not in res.shaders["k"] and "cuport_log_float(f[0])" in res.shaders["k"]


def test_double_log_matches_numpy_on_lavapipe_and_pocl(monkeypatch):
    results = run_spec(monkeypatch, os.path.join(FIX, "verify_spec.py"))
    assert not failures(results), failures(results)
    assert ran_keys(results) == expected_runs(KERNELS)

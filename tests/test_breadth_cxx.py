"""Issue 14 items 3, 5, 6: C++ and math in device code (constructors, namespace aliases, INFINITY macros, integer
intrinsics, sizeof of values, bool template arguments, constexpr array sizes, double pow with whole exponents,
64-bit conversions of spec constants). Fixture: tests/fixtures/breadth/cxx/ (verify_spec.py checks it against
NumPy on lavapipe at subgroups 4/8/16 and on PoCL)."""
import os

import pytest

from porter.translate.api import translate_file
from porter.translate.kernel import intrinsics
from kernel_helpers import (can_validate, expected_runs, failures, outputs, ran_keys, refusal, run_spec,
                            translate_text)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIX = os.path.join(ROOT, "tests", "fixtures", "breadth", "cxx")
KERNELS = {"ctor_index", "row_max", "int_ops", "small_matmul", "dpow", "wide_stride", "wide_block_base", "atomics64"}
INSTANCES = {"same_kind<float>", "same_kind<int>"}      # std::is_same folded per instantiation


@pytest.mark.parametrize("target", ["glsl", "opencl"])
def test_fixture_translates_every_kernel_to_valid_output(target):
    res = translate_file(os.path.join(FIX, "cxx.cu"), target, validate=can_validate(target))
    assert outputs(res) == KERNELS | INSTANCES, [d.message for d in res.diagnostics]
    assert not res.failed_kernels
    if res.extra.get("validation"):
        assert all(v["ok"] for v in res.extra["validation"].values()), res.extra["validation"]


def test_fixture_spellings(tmp_path):
    g = translate_file(os.path.join(FIX, "cxx.cu"), "glsl", validate=False)
    # the constructor's initialisers, not the arguments in field order; the default member initialiser
    assert "Cell q = Cell(row - 1, col * 2, 7);" in g.shaders["ctor_index"]
    # -INFINITY inline (a GLSL const global cannot be initialised with uintBitsToFloat)
    assert "float m = uintBitsToFloat(4286578688u);" in g.shaders["row_max"]
    assert "const float NEG_INF" not in g.shaders["row_max"]
    # the constexpr size folded; sizeof of values from their types
    assert "float tile[9];" in g.shaders["small_matmul"]
    # blockDim.x widened to 64 bits through a call (a spec-constant UConvert needs SPIR-V 1.4)
    assert "cuport_uint64_t_of_uint(gl_WorkGroupSize.x)" in g.shaders["wide_stride"]
    # `(long long)blockIdx.x * d`: the cast widens the builtin, the product is 64-bit (it was 32-bit uint)
    assert "int64_t base = int64_t(gl_WorkGroupID.x) * int64_t(d);" in g.shaders["wide_block_base"]
    assert "cuport_pow7_double(v)" in g.shaders["dpow"] and "cuport_powm2_double(v)" in g.shaders["dpow"]
    o = translate_file(os.path.join(FIX, "cxx.cu"), "opencl", validate=False)
    assert "long base = (long)(uint)get_group_id(0) * d;" in o.text
    assert "abs_diff(a, b) + c" in o.text and "hadd(" in o.text
    assert "#define INFINITY" not in o.text and "(-INFINITY)" in o.text
    assert "out_[i] = true ? " in g.shaders["same_kind<float>"] and "out_[i] = false ? " in g.shaders["same_kind<int>"]


def test_int_rows_are_data():
    rows = {r.cuda: r for r in intrinsics.table().values() if r.kind == "int"}
    assert set(rows) == set(intrinsics.INT_SIGNATURES)
    assert rows["__rhadd"].opencl == "rhadd"
    assert intrinsics.resolve("__hadd", "glsl") is None      # not a math row
    import subprocess
    import sys
    r = subprocess.run([sys.executable, "-m", "porter.translate.kernel.intrinsics", "--check"], cwd=ROOT,
                       env=dict(os.environ, PYTHONPATH=ROOT), capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def test_fixture_matches_numpy_on_lavapipe_and_pocl(monkeypatch):
    results = run_spec(monkeypatch, os.path.join(FIX, "verify_spec.py"))
    assert not failures(results), failures(results)
    want = expected_runs(KERNELS) | expected_runs({f"same_kind<{t}>@vulkan" for t in ("float", "int")}, ("vulkan",))
    want |= expected_runs({f"same_kind_{t}@opencl" for t in ("float", "int")}, ("opencl",))
    assert want <= ran_keys(results)


def test_user_default_constructor_is_not_zero(tmp_path):
    code = ("struct S { __device__ S() : a(3), b(-1) {} int a; int b; };\n"
            "__global__ void k(int *o) { S s; o[threadIdx.x] = s.a + s.b; }\n")
    res = translate_text(tmp_path, "opencl", code)
    assert "S s = (S){3, -1};" in res.text


# ---------------------------------------------------------------- what must still be refused
@pytest.mark.parametrize("target", ["glsl", "opencl"])
def test_delegating_constructor_is_refused(tmp_path, target):
    # (a constructor body with statements is translated now: tests/test_breadth_methods.py)
    code = ("struct P { __device__ P(int x, int y) : v(x + y) {} __device__ P(int x) : P(x, 1) {} int v; };\n"
            "__global__ void k(int *o) {\n  o[threadIdx.x] = P(1).v;\n}\n")
    d = refusal(translate_text(tmp_path, target, code))
    assert (d.row, d.column) == (3, 20) and "a base class or delegating initialiser" in d.message


def test_constructor_argument_with_side_effects_used_twice_is_refused(tmp_path):
    code = ("struct P { __device__ P(int x) : a(x), b(x) {} int a; int b; };\n"
            "__global__ void k(int *o) {\n  int i = 0;\n  P p(i++);\n  o[threadIdx.x] = p.a + p.b + i;\n}\n")
    d = refusal(translate_text(tmp_path, "opencl", code))
    assert d.row == 4 and "side effects" in d.message


def test_constructor_reading_a_member_is_refused(tmp_path):
    code = ("struct P { __device__ P(int x) : a(x), b(a + 1) {} int a; int b; };\n"
            "__global__ void k(int *o) {\n  o[threadIdx.x] = P(2).b;\n}\n")
    d = refusal(translate_text(tmp_path, "glsl", code))
    assert d.row == 3 and "a member read inside a member initialiser" in d.message


@pytest.mark.parametrize("exponent", ["0.5", "e", "9.0"])
def test_double_pow_without_small_whole_exponent_is_refused_for_glsl(tmp_path, exponent):
    code = ("__global__ void k(double *o, double e) {\n  double x = o[threadIdx.x];\n"
            f"  o[threadIdx.x] = pow(x, {exponent});\n}}\n")
    d = refusal(translate_text(tmp_path, "glsl", code))
    assert (d.row, d.column) == (3, 20) and "double-precision `pow`" in d.message


def test_double_pow_exponent_local_that_changes_is_refused(tmp_path):
    code = ("__global__ void k(double *o, int n) {\n  double g = 2.0;\n  if (n > 3) g = 3.0;\n"
            "  o[threadIdx.x] = pow(o[threadIdx.x], g);\n}\n")
    d = refusal(translate_text(tmp_path, "glsl", code))
    assert d.row == 4 and "double-precision `pow`" in d.message


@pytest.mark.parametrize("target", ["glsl", "opencl"])
def test_sizeof_of_a_double_computed_in_float_is_refused(tmp_path, target):
    code = ("template <typename T> __device__ unsigned sz(T v) { return sizeof(v); }\n"
            "__global__ void k(unsigned *o) {\n  o[threadIdx.x] = sz(1.0);\n}\n")
    d = refusal(translate_text(tmp_path, target, code))
    assert (d.row, d.column) == (1, 60) and "`sizeof(v)`" in d.message


def test_is_same_with_a_type_cuport_cannot_read_is_refused(tmp_path):
    code = ("#include <type_traits>\nstruct Unknown; template <typename T> __global__ void k(T *o) {\n"
            "  o[threadIdx.x] = std::is_same<T, Unknown>::value ? 1 : 2;\n}\n"
            "int main() { int *p = 0; k<int><<<1, 32>>>(p); return 0; }\n")
    d = refusal(translate_text(tmp_path, "opencl", code))
    assert d.row == 3 and "is_same" in d.message

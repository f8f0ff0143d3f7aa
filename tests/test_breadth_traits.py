"""Issue 14 item 4: traits classes as template arguments (`template <typename Ktraits> __global__ void k(...)` with
`Ktraits::kNThreads`, `typename Ktraits::input_t`; HeCBench hadamard). Fixture: tests/fixtures/breadth/traits/
(verify_spec.py checks it against NumPy on lavapipe at subgroups 4/8/16 and on PoCL); a member that does not fold
is refused at its use."""
import os

import pytest

from porter.translate.api import translate_file
from kernel_helpers import (assert_refused_at, can_validate, expected_runs, failures, outputs, ran_keys, refusal, run_spec,
                            translate_text)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIX = os.path.join(ROOT, "tests", "fixtures", "breadth", "traits")
KERNELS = {"tile_reverse<tile_traits<64, 4, float>>", "tile_reverse<tile_traits<32, 2, int>>",
           "tile_reverse<small_traits>"}


@pytest.mark.parametrize("target", ["glsl", "opencl"])
def test_fixture_translates_every_kernel_to_valid_output(target):
    res = translate_file(os.path.join(FIX, "traits.cu"), target, validate=can_validate(target))
    assert outputs(res) == KERNELS, [d.message for d in res.diagnostics]
    assert not res.failed_kernels
    if res.extra.get("validation"):
        assert all(v["ok"] for v in res.extra["validation"].values()), res.extra["validation"]


def test_members_fold_per_instance():
    res = translate_file(os.path.join(FIX, "traits.cu"), "glsl", validate=False)
    wide = res.shaders["tile_reverse<tile_traits<64, 4, float>>"]
    # kSmemBytes / sizeof(float) = cmin(256 * 4, 48K) / 4; kNItems; kTile - 1; cilog2(kNItems); kIsWide
    assert "shared float s[256];" in wide and "i < 4;" in wide and "s[255 - t]" in wide
    assert "const int kLogItems = 2;" in wide and "true ? tile_total(0)" in wide
    assert "in_buf { float in_[]; }" in wide
    narrow = res.shaders["tile_reverse<tile_traits<32, 2, int>>"]
    assert "shared float s[64];" in narrow and "s[63 - t]" in narrow and "* 3.0" in narrow
    assert "in_buf { int in_[]; }" in narrow and "false ? tile_total(0)" in narrow
    small = res.shaders["tile_reverse<small_traits>"]
    assert "* 5.0" in small and "in_buf { int in_[]; }" in small and "const int kLogItems = 1;" in small
    # the device function template gets the traits too: its loop bound is the tile
    assert "k < 256;" in wide and "k < 64;" in narrow


def test_fixture_matches_numpy_on_lavapipe_and_pocl(monkeypatch):
    results = run_spec(monkeypatch, os.path.join(FIX, "verify_spec.py"))
    assert not failures(results), failures(results)
    want = expected_runs(KERNELS)
    assert want <= ran_keys(results), sorted(want - ran_keys(results))


TR = """template <int N_, typename T_>
struct tr {
    using T = T_;
    static constexpr int N = N_;
    static constexpr float kAlpha = 0.5f;
    static constexpr int twice(int x) { return 2 * x + N - N_; }
    static __device__ int odd(int x) { int y = x; return y + 1; }
    __device__ int inst(int x) const { return x; }
};
struct pair_t { float a, b; };
"""


@pytest.mark.parametrize("target", ["glsl", "opencl"])
def test_static_member_function_and_dependent_alias(tmp_path, target):
    code = TR + ("template <typename K>\n__global__ void k(int *o) {\n  using V = typename K::T;\n"
                 "  V v = V(K::twice(K::N));\n  o[threadIdx.x] = v + K::N / 2;\n}\n"
                 "int main() { int *o; k<tr<4, float>><<<1, 4>>>(o); }\n")
    res = translate_text(tmp_path, target, code)
    assert outputs(res) == {"k"}, [d.message for d in res.diagnostics]
    text = res.shaders["k"] if target == "glsl" else res.text
    assert "float v = " in text and "8" in text.split("float v = ")[1].split(";")[0]


REFUSED = [
    # a floating-point member does not fold: refused at its use
    (TR + "template <typename K>\n__global__ void k(float *o) {\n  o[threadIdx.x] = K::kAlpha;\n}\n"
     "int main() { float *o; k<tr<4, float>><<<1, 4>>>(o); }\n", 13, "`K::kAlpha` (the traits class `tr<4, float>` has no static constexpr integer member `kAlpha`)"),
    # no such member; a member over an unknown type argument
    (TR + "template <typename K>\n__global__ void k(int *o) {\n  o[threadIdx.x] = K::kNope;\n}\n"
     "int main() { int *o; k<tr<4, float>><<<1, 4>>>(o); }\n", 13, "has no static constexpr integer member `kNope`"),
    # (cuda_bf16.h not found: hadamard's __nv_bfloat16 instance)
    ("#include <cuda_bf16.h>\n" + TR.replace("float kAlpha = 0.5f", "int kW = sizeof(T_) * N_") +
     "template <typename K>\n__global__ void k(int *o) {\n  o[threadIdx.x] = K::kW;\n}\n"
     "template <typename T>\nvoid go(int *o) { k<tr<4, T>><<<1, 4>>>(o); }\n"
     "int main() { int *o; go<__nv_bfloat16>(o); }\n", 14, "its type argument `__nv_bfloat16` is unknown"),
    # a static member function with a non-constant argument; one whose body is more than a `return`
    (TR + "template <typename K>\n__global__ void k(int *o) {\n  o[threadIdx.x] = K::twice(threadIdx.x);\n}\n"
     "int main() { int *o; k<tr<4, float>><<<1, 4>>>(o); }\n", 13, "not constants here"),
    (TR + "template <typename K>\n__global__ void k(int *o) {\n  o[threadIdx.x] = K::odd(3);\n}\n"
     "int main() { int *o; k<tr<4, float>><<<1, 4>>>(o); }\n", 13, "only a static one"),
    # a member alias naming a struct: sizeof of it is not folded here, so the member depending on it is refused
    ("template <typename T_>\nstruct sz {\n  using T = T_;\n  static constexpr int kB = sizeof(T) * 2;\n};\n"
     "struct pair_t { float a, b; };\n"
     "template <typename K>\n__global__ void k(int *o) {\n  o[threadIdx.x] = K::kB;\n}\n"
     "int main() { int *o; k<sz<pair_t>><<<1, 4>>>(o); }\n", 9, "`K::kB` (a member of the traits class `sz<pair_t>` not folded: its initializer"),
]


@pytest.mark.parametrize("target", ["glsl", "opencl"])
@pytest.mark.parametrize("code,line,what", REFUSED)
def test_refused_at_the_line(tmp_path, target, code, line, what):
    assert_refused_at(tmp_path, target, code, line, what)


@pytest.mark.parametrize("target", ["glsl", "opencl"])
def test_scalar_operator_beside_class_overloads(tmp_path, target):
    """cuda_fp16.h overloads `/` for __half: `Ktraits::kN / x` of ints is still C's built-in division; an
    overload taking an enum keeps the operator undecided (refused)."""
    base = ("template <int N_> struct tr { static constexpr int kN = N_; };\n"
            "template <typename K>\n__global__ void k(int *o, int x) {\n  o[threadIdx.x] = K::kN / x;\n}\n"
            "int main() { int *o; k<tr<12>><<<1, 4>>>(o, 3); }\n")
    res = translate_text(tmp_path, target, "#include <cuda_fp16.h>\n" + base)
    assert outputs(res) == {"k"}, [d.message for d in res.diagnostics]
    text = res.shaders["k"] if target == "glsl" else res.text
    assert "12 / x" in text
    enum = "enum E { A, B };\n__device__ int operator/(E a, int b) { return 0; }\n"
    res = translate_text(tmp_path, target, enum + base, name="e.cu")
    assert "k" not in outputs(res)
    assert refusal(res).row == 6


@pytest.mark.parametrize("target", ["glsl", "opencl"])
def test_dependent_pointer_arithmetic(tmp_path, target):
    """`reinterpret_cast<T *>(p.x) + K::kOff` with T a traits alias: clang keeps the `+` as an unresolved
    operator call; a pointer plus an integer is C's pointer arithmetic (hadamard's `x + batch_id * stride`)."""
    code = ("struct P { void *x; int n; };\n"
            "template <typename T_> struct tr { using T = T_; static constexpr int kOff = 2; };\n"
            "template <typename K>\n__global__ void k(P p, float *o) {\n  using T = typename K::T;\n"
            "  T *q = reinterpret_cast<T *>(p.x) + K::kOff;\n  o[threadIdx.x] = q[threadIdx.x];\n}\n"
            "int main() { P p; float *o; k<tr<float>><<<1, 4>>>(p, o); }\n")
    res = translate_text(tmp_path, target, code)
    assert outputs(res) == {"k"}, [d.message for d in res.diagnostics]
    if target == "glsl":
        assert "int q_off = 2;" in res.shaders["k"] and "p_x[q_off + gl_LocalInvocationID.x]" in res.shaders["k"]
    else:
        assert "__global float* q = (__global float*)p_x + 2;" in res.text
    # a pointer minus a pointer is not pointer-plus-integer: refused at its line
    bad = code.replace("+ K::kOff;", "+ K::kOff;\n  long d = q - reinterpret_cast<T *>(p.x);")
    res = translate_text(tmp_path, target, bad, name="b.cu")
    assert "k" not in outputs(res)
    d = refusal(res)
    assert d.row == 7 and "a pointer difference" in d.message, (d.row, d.message)

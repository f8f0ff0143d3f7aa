"""The light stubs (porter/frontend/shim/): each addition is a construct a real program (HeCBench, issue 14) used
that was a clang error (CP000, the kernel refused) and now parses; a name the stubs still lack stays an error.
Each case is a small file parsed in the light mode, as `cuport translate` parses it."""
import pytest

from porter.frontend.build import build_model
from porter.frontend.parse import ParseOptions
from porter.source import read_source
from porter.translate.api import translate_file

CASES = {
    # attentionMultiHead, softmax-online: std::common_type in device code
    "common_type": """#include <cmath>
template <class T, class U> __device__ typename std::common_type<T, U>::type larger(T a, U b) {
  return a > b ? a : b;
}
template <class T> __device__ std::common_type_t<T, double> wide(T a) { return a; }
__global__ void k(float *p) { p[threadIdx.x] = larger(p[threadIdx.x], 2.f) + (float)wide(1); }""",
    # logprob: std::is_same<...>::value with only <random>/<math.h> included (libstdc++ brings <type_traits>)
    "is_same_enable_if": """#include <random>
#include <math.h>
template <class T> __device__ typename std::enable_if<std::is_floating_point<T>::value, T>::type twice(T a) {
  if (std::is_same<T, double>::value) return a + a; return a * (T)2;
}
__global__ void k(float *p) { p[0] = twice(p[0]); }""",
    # blockAccess: std::conditional, std::size_t from <type_traits>/<iterator>
    "conditional_size_t": """#include <iterator>
#include <type_traits>
template <int N> struct Pick { typedef typename std::conditional<(N > 4), double, float>::type type;
  static constexpr std::size_t n = N; };
__global__ void k(float *p) { Pick<2>::type x = p[0]; p[1] = x * (float)Pick<2>::n; }""",
    # meanshift, tensorAccessor: std::array, std::begin/std::end, std::int32_t and <cstdint> names
    "array_cstdint": """#include <array>
#include <cstdint>
#include <algorithm>
struct Dims { std::array<std::int64_t, 2> sizes; };
__global__ void k(std::int32_t *p, std::uint64_t n) { p[0] = (std::int32_t)n; }
int main() { std::array<int, 3> a = {1, 2, 3}; Dims d; std::copy(std::begin(a), std::end(a), d.sizes.begin());
  return (int)a.size(); }""",
    # zeropoint: nearbyint; CUDA's rounding-mode arithmetic and integer intrinsics
    "math_intrinsics": """#include <math.h>
__global__ void k(float *p, unsigned *u, double *d) {
  p[0] = nearbyintf(p[1]) + (float)nearbyint((double)p[2]) + __fdiv_rn(p[3], p[4]) + __fsub_rn(p[5], p[6]);
  d[0] = __dadd_rn(d[1], d[2]) + __ddiv_rn(d[3], d[4]) + __fmul_rn(p[7] + p[8], p[9]);
  u[0] = __umulhi(u[1], u[2]) + __funnelshift_l(u[3], u[4], 5u) + __usad(u[5], u[6], 0u) + __uhadd(u[7], u[8]);
}""",
    # bmf: UINT32_MAX (device code) from <stdint.h>/<cstdint>; the values are C's (a wrong one fails the asserts)
    "stdint_limits": """#include <cstdint>
#include <stdint.h>
static_assert(UINT32_MAX == 0xffffffffu && UINT16_MAX == 0xffff && UINT8_MAX == 0xff, "");
static_assert(UINT64_MAX == ~0ull && SIZE_MAX == ~(unsigned long long)0, "");
static_assert(INT32_MAX == 0x7fffffff && INT32_MIN == -INT32_MAX - 1 && INT64_MAX == 0x7fffffffffffffffLL, "");
static_assert(INT8_MIN == -128 && INT16_MIN == -32768 && INT64_MIN < 0, "");
__global__ void k(unsigned *u, int n) { u[0] = UINT32_MAX >> (32 - n); }""",
    # bsearch: chrono's time_point_cast in host code beside the kernels
    "chrono_time_point_cast": """#include <chrono>
__global__ void k(float *p) { p[0] = 1.f; }
int main() { auto t = std::chrono::time_point_cast<std::chrono::microseconds>(std::chrono::steady_clock::now());
  return (int)t.time_since_epoch().count(); }""",
}


def _errors(tmp_path, name, text):
    path = tmp_path / f"{name}.cu"
    path.write_text(text)
    model = build_model(read_source(str(path)), ParseOptions(header_fallback=False))     # the stubs alone
    return [e.message for e in model.errors if e.severity >= 3]


@pytest.mark.parametrize("name", sorted(CASES))
def test_stub_construct_parses(tmp_path, name):
    assert _errors(tmp_path, name, CASES[name]) == []


def test_a_name_the_stubs_lack_is_still_an_error(tmp_path):
    errs = _errors(tmp_path, "missing", """#include <type_traits>
__device__ int f(int a) { return std::is_nothrow_swappable<int>::value ? a : -a; }""")
    assert any("is_nothrow_swappable" in e for e in errs)


@pytest.mark.parametrize("target", ("glsl", "opencl"))
def test_a_kernel_using_the_stubs_translates(tmp_path, target):
    """CP000 before the stubs had these names: the kernel now translates (not validated here: test_breadth_*)."""
    path = tmp_path / "traits.cu"
    path.write_text("""__global__ void k(float *p, unsigned *u, double *d) {
  p[0] = nearbyintf(p[1]) + __fdiv_rn(p[3], p[4]) + __fsub_rn(p[5], p[6]) + __fmul_rn(p[7] + p[8], p[9]);
  u[0] = __umulhi(u[1], u[2]);
}""")
    res = translate_file(str(path), target, validate=False)
    assert res.failed_kernels == {}
    out = res.shaders["k"] if target == "glsl" else res.text
    assert "__fdiv_rn(" not in out and "= __umulhi(" not in out
    assert "(p[7] + p[8]) * p[9]" in out                     # the rounding-mode product keeps its operands


def test_rounding_mode_arithmetic_is_one_mapping_for_both_targets(tmp_path):
    """__fmul_rn / __frcp_rn and their double forms come from one place (intrinsics.arithmetic): GLSL kept a
    double `__drcp_rn` in double (it was computed in float), OpenCL gains `__drcp_rn`."""
    from porter.translate.api import translate_file
    p = tmp_path / "r.cu"
    p.write_text("__global__ void k(double *d, float *f) {\n"
                 "  d[0] = __drcp_rn(d[1]) + __dmul_rn(d[2], d[3]);\n  f[0] = __frcp_rz(f[1]) * __fadd_rz(f[2], f[3]);\n}\n")
    g = translate_file(str(p), "glsl").shaders["k"]
    assert "1.0 / d[1]" in g and "d[2] * d[3]" in g and "1.0 / f[1]" in g and "(f[2] + f[3])" in g
    assert "float(d[1])" not in g
    o = translate_file(str(p), "opencl").text
    assert "1.0 / d[1]" in o and "1.0f / f[1]" in o and "(f[2] + f[3])" in o and "__drcp_rn" not in o

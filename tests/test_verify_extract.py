"""Device-code extraction for NVRTC: host code goes, kernels stay, line numbers are kept."""
from porter.verify.extract import device_code

SOURCE = '''#include <cstdio>
#include "local.h"
#define N 256
struct Pair { float a, b; };
typedef unsigned long long u64;
__constant__ float coeffs[4];
const int kBlock = 256;
static const char* name = "{not a brace";
void launch(float* x);   // prototype
template <typename T>
__global__ void scale(T* x, T a) { if (threadIdx.x < N) { x[threadIdx.x] *= a; } }
__device__ __host__ inline float sq(float v) { return v * v; }
extern "C" __global__ void k2(float* x) { x[0] = sq(x[0]); /* } */ }
template <class T> __device__ inline T shfl(T v, int d, int width = warpSize) {
  return v;
}
__device__ float table[2] = {1.0f, 2.0f};
namespace detail {
__device__ int helper() { return 1; }
int host_helper() { return 2; }
}
void launch(float* x) { scale<<<1, N>>>(x, 2.0f); }
int main() {
    printf("}{\\n");
    return 0;
}
'''


def test_keeps_device_side_and_drops_host_side():
    out = device_code(SOURCE)
    assert out.count("\n") == SOURCE.count("\n")
    for kept in ("#define N 256", "struct Pair", "typedef unsigned long long u64", "__constant__ float coeffs",
                 "const int kBlock", "__global__ void scale", "__device__ __host__ inline float sq",
                 'extern "C" __global__ void k2', "namespace detail {", "__device__ int helper",
                 "int width = warpSize) {\n  return v;\n}", "table[2] = {1.0f, 2.0f};"):
        assert kept in out, kept
    for dropped in ("#include", "int main", "printf", "host_helper", "void launch", "<<<"):
        assert dropped not in out, dropped


def test_line_numbers_match():
    out = device_code(SOURCE).splitlines()
    src = SOURCE.splitlines()
    line = next(i for i, s in enumerate(src) if "__global__ void scale" in s)
    assert out[line] == src[line]

"""Issue 14, HeCBench logprob (warpReduceSum's `__shfl_xor_sync(m, v, mask, 32)`): shuffles the target's own warps
cannot run (a width wider than Vulkan's 4-lane subgroups, any width or a constant reach on OpenCL 1.2's one-lane
warps) run on CUDA's 32-lane warps emulated in shared memory (porter/translate/kernel/warp32.py) when every shuffle
is at uniform control flow; anything else keeps the target's own warps and their refusals.
Fixtures: tests/fixtures/breadth/warp32/."""
import os

import pytest

from porter.translate.api import translate_file
from kernel_helpers import (assert_refused_at, can_validate, expected_runs, failures, outputs, ran_keys, run_spec,
                            translate_text)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIX = os.path.join(ROOT, "tests", "fixtures", "breadth", "warp32")
KERNELS = ("block_sums", "segments", "wide_values")


@pytest.mark.parametrize("target", ["glsl", "opencl"])
def test_kernels_run_on_emulated_warps_and_build(target):
    res = translate_file(os.path.join(FIX, "warp32.cu"), target, validate=can_validate(target))
    assert not res.failed_kernels, res.failed_kernels
    assert outputs(res) == set(KERNELS)
    # the per-warp array's findings hold on 32-lane warps: information, not a refusal
    cp104 = [d for d in res.diagnostics if d.code == "CP104"]
    assert sorted(d.row for d in cp104) == [14, 21]
    assert all(d.severity == "info" and "32-lane warps emulated in shared memory" in d.message for d in cp104)
    if target == "glsl":
        for k, text in res.shaders.items():
            assert "GL_KHR_shader_subgroup" not in text and "gl_Subgroup" not in text, k
            assert res.manifests[k]["min_subgroup_size"] is None and not res.manifests[k]["subgroup_operations"]
        s = res.shaders["block_sums"]
        assert "shared int cuport_w32_int[1024];" in s
        helper = s[s.index("int cuport_w32_shfl_xor_int("):s.index("int warp_sum32")]
        assert helper.count("barrier();") == 2 and "gl_LocalInvocationIndex" in helper
        assert "val" not in helper and "v += cuport_w32_shfl_xor_int(v, uint(m), 32u, 1024u);" in s
        # lane and warp ids stay the source's arithmetic on 32 lanes
        assert "int(t) & 31" in s or "t & 31" in s
        assert "shared int64_t cuport_w32_long_long[1024];" in res.shaders["wide_values"]
    else:
        for k in KERNELS:
            assert res.manifests[k]["warp_size"] == 32, k
        t = res.text
        assert "int warp_sum32_int(int v, __local int* cuport_w32_int)" in t
        assert "__local int cuport_w32_int[1024];" in t and "__local long cuport_w32_long_long[1024];" in t
        assert "CUPORT_WARP_SIZE" not in t
    if res.extra.get("validation"):
        assert all(v["ok"] for v in res.extra["validation"].values()), res.extra["validation"]


def test_fixture_matches_numpy_on_lavapipe_and_pocl(monkeypatch):
    results = run_spec(monkeypatch, os.path.join(FIX, "verify_spec.py"))
    assert not failures(results), failures(results)
    assert ran_keys(results) == expected_runs(KERNELS) | {("row_max", "opencl", "-")}


def test_a_reach_glsl_subgroups_can_run_keeps_them():
    # reach 4 on GLSL: subgroups of 8 (a launch contract), no emulation; OpenCL emulates (tested above by values)
    res = translate_file(os.path.join(FIX, "reach.cu"), "glsl", validate=False)
    assert res.manifests["row_max"]["min_subgroup_size"] == 8
    assert "cuport_w32" not in res.shaders["row_max"] and "subgroupShuffleDown" in res.shaders["row_max"]


WIDTH4 = """
__global__ void k(const float *in, float *out) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  out[i] = __shfl_xor_sync(0xffffffffu, in[i], 1, 4);
}
"""


def test_a_width_vulkan_subgroups_always_have_stays_native_in_glsl(tmp_path):
    g = translate_text(tmp_path, "glsl", WIDTH4)
    assert "cuport_shfl_xor_w_float" in g.shaders["k"] and "cuport_w32" not in g.shaders["k"]
    o = translate_text(tmp_path, "opencl", WIDTH4)
    assert "cuport_w32_shfl_xor_float(cuport_w32_float, in[i], 1u, 4u, 1024u)" in o.text


# each keeps the target's warps: OpenCL refuses the 32-wide shuffle on one-lane warps at its line
NOT_EMULATED = {
    "divergent": ("""
__global__ void k(float *x) {
  float v = x[threadIdx.x];
  if (threadIdx.x < 16)
    v = __shfl_xor_sync(0xffffffffu, v, 1, 32);
  x[threadIdx.x] = v;
}
""", 5),
    "device_parameter": ("""
__device__ float f(float v, int n) {
  if (n > 0) v += __shfl_xor_sync(0xffffffffu, v, 1, 32);
  return v;
}
__global__ void k(float *x) { x[threadIdx.x] = f(x[threadIdx.x], threadIdx.x); }
""", 3),
    "early_return": ("""
__global__ void k(float *x, int n) {
  if (threadIdx.x >= n) return;
  x[threadIdx.x] = __shfl_down_sync(0xffffffffu, x[threadIdx.x], 1, 32);
}
""", 4),
    "vote_too": ("""
__global__ void k(float *x, int *b) {
  float v = __shfl_xor_sync(0xffffffffu, x[threadIdx.x], 1, 32);
  b[threadIdx.x] = __any_sync(0xffffffffu, v > 0.f);
  x[threadIdx.x] = v;
}
""", 3),
    "bound_written_divergently": ("""
__global__ void k(float *x) {
  float v = x[threadIdx.x];
  int steps = 0;
  if (threadIdx.x == 0) steps = 2;
  for (int i = 0; i < steps; i++) v += __shfl_xor_sync(0xffffffffu, v, 1, 32);
  x[threadIdx.x] = v;
}
""", 6),
    "parameter_written_per_thread": ("""
__global__ void k(float *x, int n) {
  n = threadIdx.x;
  float v = x[threadIdx.x];
  if (n > 3) v = __shfl_xor_sync(0xffffffffu, v, 1, 32);
  x[threadIdx.x] = v;
}
""", 5),
    "call_under_divergence": ("""
__device__ float g(float v) { return __shfl_xor_sync(0xffffffffu, v, 1, 32); }
__global__ void k(float *x) {
  float v = x[threadIdx.x];
  if (v > 0.f) v = g(v);
  x[threadIdx.x] = v;
}
""", 2),
}


@pytest.mark.parametrize("case", sorted(NOT_EMULATED))
def test_shuffles_not_at_uniform_control_flow_keep_the_targets_warps(tmp_path, case):
    code, line = NOT_EMULATED[case]
    assert_refused_at(tmp_path, "opencl", code, line, "a shuffle of width `32` on one-lane warps")
    g = translate_text(tmp_path, "glsl", code)
    assert "k" in g.shaders and "cuport_w32" not in g.shaders["k"]
    assert g.manifests["k"]["min_subgroup_size"] == 32


def test_a_partial_mask_is_not_emulated(tmp_path):
    code = """
__global__ void k(float *x) {
  x[threadIdx.x] = __shfl_xor_sync(0x0000ffffu, x[threadIdx.x], 1, 32);
}
"""
    assert_refused_at(tmp_path, "opencl", code, 3, "a partial or non-constant lane mask")
    assert_refused_at(tmp_path, "glsl", code, 3, "a partial or non-constant lane mask")


def test_a_width_that_is_not_a_power_of_two_is_refused_at_it(tmp_path):
    code = """
__global__ void k(float *x) {
  x[threadIdx.x] = __shfl_xor_sync(0xffffffffu, x[threadIdx.x], 1, 12);
}
"""
    for target in ("glsl", "opencl"):
        assert_refused_at(tmp_path, target, code, 3, "shuffle width 12 (CUDA's is a power of two up to 32)")


def test_opencl_sub_groups_are_not_emulated(tmp_path):
    code = """
__global__ void k(float *x) {
  x[threadIdx.x] = __shfl_xor_sync(0xffffffffu, x[threadIdx.x], 1, 32);
}
"""
    res = translate_text(tmp_path, "opencl", code, subgroups="khr")
    assert "k" not in outputs(res) and "cuport_w32" not in (res.text or "")
    assert any("a shuffle width other than warpSize with cl_khr_subgroup_shuffle" in d.message
               for d in res.diagnostics if d.severity == "error")


def test_a_shared_function_keeps_a_native_kernels_findings(tmp_path):
    # `emulated` runs warp_sum on 32-lane warps; `native` calls it under divergence: it keeps the target's warps,
    # and the per-warp array finding in the shared function still refuses it where it is not fixed
    code = """
__device__ int warp_sum(int v) {
  for (int m = 16; m > 0; m >>= 1) v += __shfl_xor_sync(0xffffffffu, v, m, 32);
  return v;
}
__global__ void emulated(int *x) { x[threadIdx.x] = warp_sum(x[threadIdx.x]); }
__global__ void native(int *x) { if (x[threadIdx.x] > 0) x[threadIdx.x] = warp_sum(x[threadIdx.x]); }
"""
    res = translate_text(tmp_path, "opencl", code)
    assert outputs(res) == {"emulated"} and set(res.failed_kernels) == {"native"}
    assert "one-lane warps" in res.failed_kernels["native"]


def test_a_struct_member_written_per_thread_is_not_uniform(tmp_path):
    code = """
struct S { int n; };
__global__ void k(float *x) {
  S s;
  s.n = 0;
  if (threadIdx.x == 0) s.n = 2;
  float v = x[threadIdx.x];
  for (int i = 0; i < s.n; i++) v += __shfl_xor_sync(0xffffffffu, v, 1, 32);
  x[threadIdx.x] = v;
}
"""
    assert_refused_at(tmp_path, "opencl", code, 8, "a shuffle of width `32` on one-lane warps")
    # the same member written by every thread alike keeps the kernel on emulated warps
    res = translate_text(tmp_path, "opencl", code.replace("if (threadIdx.x == 0) s.n = 2;", "s.n = 2;"))
    assert "k" in outputs(res) and "cuport_w32_shfl_xor_float" in res.text

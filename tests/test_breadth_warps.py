"""Issue 14 (warps): per-warp shared arrays whose second stage reads one slot per lane under a guard on the THREAD
id (`threadIdx.x < blockDim.x / 32.f ? part[lane] : 0`, HeCBench logprob / metropolis) are sized for the narrowest
subgroup, folded in the first subgroup and translated when the reduced value reaches thread 0 only; anything else
stays refused with CP104 at the read. Fixture: tests/fixtures/breadth/warps/ (verify spec: lavapipe 4/8/16)."""
import os

import pytest

from porter.translate.api import translate_file
from porter.translate.kernel.validate import tool
from kernel_helpers import expected_runs, failures, ran_keys, run_spec

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WARPS = os.path.join(ROOT, "tests", "fixtures", "breadth", "warps")
STATS = os.path.join(WARPS, "block_stats.cu")
NW = "((int(gl_WorkGroupSize.x) * int(gl_WorkGroupSize.y) * int(gl_WorkGroupSize.z) + int(cuport_subgroup_size) - 1)" \
     " / int(cuport_subgroup_size))"


def test_thread_guarded_second_stage_is_sized_and_folded_in_the_first_subgroup():
    res = translate_file(STATS, "glsl", validate=tool("glslangValidator") is not None)
    assert set(res.shaders) == {"row_logsumexp", "cube_energy"}, res.failed_kernels
    s = res.shaders["row_logsumexp"]
    # up to 1024 threads (launch not constant) / 4; block_max's and block_sum's arrays stay two arrays
    assert "shared float part[256];" in s and "shared float part2[256];" in s
    # the lane is gl_SubgroupInvocationID: the first subgroup is gl_SubgroupID 0, up to the real warp count
    assert f"v = ((int(gl_SubgroupID) == 0 && lane < {NW})) ? part2[lane] : (0.0);" in s
    assert f"int(gl_SubgroupID) == 0 && cuport_w2 < {NW}; cuport_w2 += int(cuport_subgroup_size)" in s
    assert "v = max(v, part[cuport_w1]);" in s and "v += part2[cuport_w2];" in s
    c = res.shaders["cube_energy"]
    assert "shared float shared_[64];" in c                     # block (16, 4, 4) from the launch
    # a flat 3-D thread id: its lane is `tid % subgroup size`, so the first subgroup is tid < subgroup size
    assert f"val = ((tid < int(cuport_subgroup_size) && lane < {NW})) ? shared_[lane] : 0.0;" in c
    man = res.manifests["row_logsumexp"]
    assert man["min_subgroup_size"] == 4 and [a["size"] for a in man["per_warp_arrays"]] == [256, 256]
    # the lint's CP104 findings on these arrays are taken care of
    assert not [d for d in res.diagnostics if d.code == "CP104" and d.severity == "error"]
    if res.extra.get("validation"):
        assert all(v["ok"] for v in res.extra["validation"].values())


def test_fixture_matches_numpy_on_lavapipe_4_8_16(monkeypatch):
    results = run_spec(monkeypatch, os.path.join(WARPS, "verify_spec.py"), targets=("vulkan",))
    assert not failures(results), failures(results)
    assert ran_keys(results) == expected_runs(("row_logsumexp", "cube_energy"), ("vulkan",))


BASE = """
__device__ float warp_sum(float v) {
  for (int m = 16; m > 0; m >>= 1) v += __shfl_xor_sync(0xffffffff, v, m);
  return v;
}
__device__ float block_sum(float v) {
  static __shared__ float part[32];
  int lane = threadIdx.x & 0x1f;
  int wid = threadIdx.x >> 5;
  v = warp_sum(v);
  if (lane == 0) part[wid] = v;
  __syncthreads();
  v = (threadIdx.x < (blockDim.x / 32.f)) ? part[lane] : 0.0f;
  v = warp_sum(v);
  return v;
}
"""


@pytest.mark.parametrize("target", ["glsl", "opencl"])
def test_result_used_by_every_thread_is_refused_at_the_read(target):
    # in CUDA only warp 0 gets the total; on narrower subgroups the other threads would get other values
    src = BASE + """__global__ void everyone(const float *in, float *out) {
  float t = block_sum(in[blockIdx.x * blockDim.x + threadIdx.x]);
  out[blockIdx.x * blockDim.x + threadIdx.x] = t;
}
void host(const float *a, float *b) { everyone<<<4, 256>>>(a, b); }
"""
    res = translate_file("everyone.cu", target, text=src, validate=False)
    reason = res.failed_kernels["everyone"]
    assert "CP104" in reason and "reaches other threads" in reason and "(`t`, line 19)" in reason, reason
    d = next(d for d in res.diagnostics if d.code == "CP104" and "`everyone` not translated" in d.message)
    assert d.severity == "error" and (d.row, d.column) == (13, 45)


def test_a_bound_that_is_not_the_32_lane_warp_count_is_refused():
    src = BASE.replace("(blockDim.x / 32.f)", "(blockDim.x / 16)") + """__global__ void half(const float *in, float *o) {
  float t = block_sum(in[threadIdx.x]);
  if (threadIdx.x == 0) o[blockIdx.x] = t;
}
void host(const float *a, float *b) { half<<<4, 256>>>(a, b); }
"""
    res = translate_file("half.cu", "glsl", text=src, validate=False)
    reason = res.failed_kernels["half"]
    assert "CP104" in reason and "no bound on the number of warps" in reason


def test_thread0_use_translates_and_a_loop_around_the_reduction_is_refused():
    ok = BASE + """__global__ void first(const float *in, float *o) {
  float t = block_sum(in[blockIdx.x * blockDim.x + threadIdx.x]);
  if (threadIdx.x == 0) o[blockIdx.x] = t;
}
void host(const float *a, float *b) { first<<<4, 256>>>(a, b); }
"""
    assert set(translate_file("first.cu", "glsl", text=ok, validate=False).shaders) == {"first"}
    looped = BASE.replace("  v = (threadIdx.x", "  for (int r = 0; r < 2; ++r) {\n  v = (threadIdx.x").replace(
        "  v = warp_sum(v);\n  return v;", "  v = warp_sum(v);\n  }\n  return v;") + """
__global__ void twice(const float *in, float *o) {
  float t = block_sum(in[threadIdx.x]);
  if (threadIdx.x == 0) o[blockIdx.x] = t;
}
void host(const float *a, float *b) { twice<<<4, 256>>>(a, b); }
"""
    res = translate_file("twice.cu", "glsl", text=looped, validate=False)
    assert "CP104" in res.failed_kernels["twice"]


def test_marching_cubes_style_scan_stage_is_chunked():
    # a prefix sum over the warps' slots (marchingCubes compactLv1): run over chunks of subgroup-size totals
    # (tests/test_breadth_scans.py has the fixture run and the refusals)
    src = """
__global__ void scan(const unsigned *in, unsigned *out) {
  __shared__ unsigned sums[32];
  unsigned tid = threadIdx.x, lane = tid % 32, warpid = tid >> 5;
  unsigned s = in[blockIdx.x * 256 + tid];
  for (int c = 1; c < 32; c *= 2) { unsigned t = __shfl_up_sync(0xffffffffu, s, c); if (lane >= c) s += t; }
  if (lane == 31) sums[warpid] = s;
  __syncthreads();
  if (warpid == 0) {
    unsigned w = sums[lane];
    for (int c = 1; c < 8; c *= 2) { unsigned t = __shfl_up_sync(0xffffffffu, w, c); if (lane >= c) w += t; }
    sums[lane] = w;
  }
  __syncthreads();
  if (warpid != 0) s += sums[warpid - 1];
  out[blockIdx.x * 256 + tid] = s;
}
void host(const unsigned *a, unsigned *b) { scan<<<4, 256>>>(a, b); }
"""
    for target in ("glsl", "opencl"):
        res = translate_file("scan.cu", target, text=src, validate=False)
        assert "scan" not in res.failed_kernels, (target, res.failed_kernels)
        man = res.manifests["scan"]
        assert [a.get("second_stage") for a in man["per_warp_arrays"]] == ["chunked scan"]


def test_same_named_shared_arrays_of_two_device_functions_stay_two_arrays():
    # merged into one GLSL array, b's writes raced with a's reads (no barrier between them: distinct in CUDA)
    src = """
__device__ float a(float v) { static __shared__ float buf[64]; buf[threadIdx.x] = v; __syncthreads();
  return buf[63 - threadIdx.x]; }
__device__ float b(float v) { static __shared__ float buf[64]; buf[threadIdx.x] = v * 2.0f; __syncthreads();
  return buf[threadIdx.x ^ 1]; }
__global__ void k(float *o) { float x = a(o[threadIdx.x]); o[threadIdx.x] = x + b(x); }
void host(float *o) { k<<<1, 64>>>(o); }
"""
    s = translate_file("two.cu", "glsl", text=src, validate=False).shaders["k"]
    assert "shared float buf[64];" in s and "shared float buf2[64];" in s
    assert "buf2[gl_LocalInvocationID.x] = v * 2.0;" in s and "return buf2[gl_LocalInvocationID.x ^ 1u];" in s


def test_reassigned_local_read_before_the_call_is_not_a_use_of_the_result():
    # metropolis: `sum = block_reduce(sum); if (tid == 0) atomicAdd(out, sum);`
    src = BASE + """__global__ void again(const float *in, float *o) {
  float s = in[blockIdx.x * blockDim.x + threadIdx.x];
  s = block_sum(s);
  if (threadIdx.x == 0) o[blockIdx.x] = s;
}
void host(const float *a, float *b) { again<<<4, 256>>>(a, b); }
"""
    assert set(translate_file("again.cu", "glsl", text=src, validate=False).shaders) == {"again"}
    looped = src.replace("  s = block_sum(s);", "  for (int r = 0; r < 2; ++r) s = block_sum(s);")
    res = translate_file("again.cu", "glsl", text=looped, validate=False)
    assert "CP104" in res.failed_kernels["again"]


UNROLLED = os.path.join(ROOT, "tests", "fixtures", "breadth", "unrolled")


def test_unrolled_reductions_are_fixed_into_subgroup_loops():
    # before CP103's fix for unrolled steps the kernel was refused ("CP103 ... is not fixed")
    res = translate_file(os.path.join(UNROLLED, "unrolled_reduce.cu"), "glsl",
                         validate=tool("glslangValidator") is not None)
    assert set(res.shaders) == {"sum_and_max"}, res.failed_kernels
    s = res.shaders["sum_and_max"]
    assert "for (int cuport_o = int(cuport_subgroup_size) / 2; cuport_o > 0; cuport_o /= 2)" in s
    assert "for (int cuport_o = 1; cuport_o < int(cuport_subgroup_size); cuport_o *= 2)" in s
    assert "(v, 16)" not in s and "(m, 16)" not in s              # no unrolled step is left
    assert not [d for d in res.diagnostics if d.code == "CP103"]
    if res.extra.get("validation"):
        assert all(v["ok"] for v in res.extra["validation"].values())


def test_unrolled_reductions_match_numpy_on_lavapipe_4_8_16(monkeypatch):
    results = run_spec(monkeypatch, os.path.join(UNROLLED, "verify_spec.py"), targets=("vulkan",))
    assert not failures(results), failures(results)
    ran = [r for r in results if r.status != "skipped"]
    assert {r.variant for r in ran} == {"sg4", "sg8", "sg16"} and len(ran) == 6

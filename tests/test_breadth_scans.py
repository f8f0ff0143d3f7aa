"""Issue 14 (warps, HeCBench marchingCubes compactLv1 / compactLv2 / generatingTriangles): a block scan whose
second stage is one warp scanning the warp totals (`if (warpid == 0) { v = sums[laneid]; shfl_up scan over
c0 < warpNum; sums[laneid] = v; }`) holds every total only while a block has no more warps than a warp has lanes.
The GLSL and OpenCL translations run that stage over chunks of subgroup-size totals with a carry, size the
arrays for the narrowest subgroup (chunks padded to the subgroup size, CUDA's scratch slot `sums[31]` moved past
them), and write the warp total from the subgroup's last lane. What does not match the pattern stays refused
(CP104 at the read). Fixture: tests/fixtures/breadth/scans/ (verify spec: lavapipe 4/8/16, PoCL)."""
import os

import pytest

from porter.translate.api import translate_file
from kernel_helpers import expected_runs, failures, outputs, ran_keys, run_spec, translate_text

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCANS = os.path.join(ROOT, "tests", "fixtures", "breadth", "scans")
SRC = os.path.join(SCANS, "block_scans.cu")
KERNELS = ("scan128", "scan1024x2", "packed_runs", "minmax256", "minmax1024")


@pytest.mark.parametrize("target", ["glsl", "opencl"])
def test_one_warp_scan_of_warp_totals_is_chunked(target):
    res = translate_file(SRC, target, validate=False)
    assert outputs(res) == set(KERNELS), [d.message for d in res.diagnostics if d.severity == "error"]
    assert not [d for d in res.diagnostics if d.code == "CP104" and d.severity == "error"]
    man = res.manifests["scan128"]
    arr = {a["array"]: a for a in man["per_warp_arrays"]}
    # block 128: chunks reach 128 slots (one chunk of a 128-lane subgroup); CUDA's 28 slots past its 4 warps follow
    assert arr["sums"]["size"] == 156 and arr["sums"]["second_stage"] == "chunked scan"
    big = {a["array"]: a["size"] for a in res.manifests["scan1024x2"]["per_warp_arrays"]}
    # block 1024: 256 warps of 4 lanes (GLSL), 1024 one-lane warps (OpenCL 1.2); sumsA's scratch slot 31 follows
    assert big == ({"sumsA": 257, "sumsB": 256} if target == "glsl" else {"sumsA": 1025, "sumsB": 1024})
    if target == "glsl":
        assert man["min_subgroup_size"] == 4
        s = res.shaders["scan128"]
        assert "sums[155] = atomicAdd(total[0], testSum);" in s and "testSum + sums[155]" in s
        assert "if (laneid == int(cuport_subgroup_size) - 1)" in s    # the lint fix: `laneid == warpSize - 1`
        assert "uint warpSum = sums[(cuport_chunk1 + int(laneid))];" in s
        assert "cuport_carry2 = subgroupShuffle(warpSum, uint(cuport_subgroup_size) - 1u);" in s
    # the second run of packed slots starts after the narrowest subgroup's warp count (256 or 1024), not 32
    packed = res.manifests["packed_runs"]["per_warp_arrays"]
    assert [a["size"] for a in packed] == ([512] if target == "glsl" else [2048])
    text = res.shaders["packed_runs"] if target == "glsl" else res.text
    assert ("part[wid + 256] = b;" if target == "glsl" else "part[wid + 1024] = b;") in text


PACKED = """
__global__ void k(const float* in, float* out) {
  __shared__ float part[64];
  int tid = threadIdx.x, lane = tid % 32, wid = tid / 32;
  float a = in[tid], b = -in[tid];
  for (int o = 16; o > 0; o >>= 1) { a += __shfl_xor_sync(0xffffffff, a, o); b += __shfl_xor_sync(0xffffffff, b, o); }
  if (lane == 0) { part[wid] = a; part[wid + OFF] = b; }
  __syncthreads();
  float v = (tid < (blockDim.x / 32.f)) ? part[READ] : 0.0f;
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffff, v, o);
  if (tid == 0) out[blockIdx.x] = v;
}
void run(const float* i, float* o) { k<<<4, 1024>>>(i, o); }
"""


@pytest.mark.parametrize("target", ["glsl", "opencl"])
@pytest.mark.parametrize("off, read, row", [("33", "lane", 7), ("32", "lane + 32", 9), ("lane", "lane", 7)])
def test_offset_runs_cuport_cannot_resize_are_refused(tmp_path, target, off, read, row):
    # an offset that is not CUDA's warp count (33, a lane id) or a lane read of the second run: before this the
    # offset was ignored and the second run overwrote the first on narrow subgroups
    res = translate_text(tmp_path, target, PACKED.replace("OFF", off).replace("READ", read))
    assert not outputs(res) and _refused_at(res) == [row]


def test_fixture_matches_numpy_on_lavapipe_and_pocl(monkeypatch):
    results = run_spec(monkeypatch, os.path.join(SCANS, "verify_spec.py"))
    assert not failures(results), failures(results)
    assert ran_keys(results) == expected_runs(KERNELS)


def _refused_at(res):
    """Rows of the kernel refusals (CP104 `kernel ... not translated` at the offending read)."""
    return [d.row for d in res.diagnostics
            if d.code == "CP104" and d.severity == "error" and "not translated" in d.message]


HEAD = """
__global__ void k(const unsigned* in, unsigned* out) {
  __shared__ unsigned sums[32];
  unsigned tid = threadIdx.x, laneid = tid % 32, warpid = tid >> 5;
  unsigned s = in[tid];
  for (int c0 = 1; c0 < 32; c0 *= 2) { unsigned tp = __shfl_up_sync(0xffffffffu, s, c0); if (laneid >= c0) s += tp; }
  if (laneid == 31) sums[warpid] = s;
  __syncthreads();
  if (warpid == 0) {
    unsigned w = sums[laneid];
    for (int c0 = 1; c0 < 32; c0 *= 2) {
      unsigned tp = __shfl_up_sync(0xffffffffu, w, c0);
      if (laneid >= c0) w STEP;
    }
    sums[laneid] = w;
  }
  __syncthreads();
  if (warpid != 0) s += sums[warpid - 1];
  out[tid] = s;
}
"""


@pytest.mark.parametrize("target", ["glsl", "opencl"])
@pytest.mark.parametrize("step", ["+= tp", "= max(w, tp)", "*= tp"])
def test_scan_pattern_matches_only_sum_scans(tmp_path, target, step):
    res = translate_text(tmp_path, target, HEAD.replace("STEP", step))
    if step == "+= tp":
        assert outputs(res) == {"k"} and not _refused_at(res)
        return
    # a max / product scan is not the recognised sum scan: refused at the read, line 10
    assert not outputs(res)
    assert _refused_at(res) == [10]


@pytest.mark.parametrize("target", ["glsl", "opencl"])
@pytest.mark.parametrize("tail, ok", [("if (tid == 1023) sums[31] = s; __syncthreads(); out[tid] = s + sums[31];", True),
                                      ("out[tid] = s + sums[31];", False),
                                      ("for (int j = 0; j < 2; j++) { sums[31] = s; out[tid] = sums[31]; }", False)])
def test_slot_31_with_32_warps_is_scratch_only_when_stored_first_after_the_scan(tmp_path, target, tail, ok):
    code = HEAD.replace("STEP", "+= tp").replace("  out[tid] = s;\n", "  " + tail + "\n")
    code += "void run(const unsigned* i, unsigned* o) { k<<<1, 1024>>>(i, o); }\n"
    res = translate_text(tmp_path, target, code)
    if ok:
        assert outputs(res) == {"k"} and not _refused_at(res)
    else:
        # the last warp's total read by number (or stored in a loop): refused at that subscript, line 19
        assert not outputs(res) and _refused_at(res) == [19]


@pytest.mark.parametrize("target", ["glsl", "opencl"])
def test_scan_outside_warp0_guard_stays_refused(tmp_path, target):
    code = HEAD.replace("STEP", "+= tp").replace("if (warpid == 0) {", "if (tid < 32) {")
    res = translate_text(tmp_path, target, code)
    assert not outputs(res) and _refused_at(res) == [10]


MINMAX = """
__global__ void k(const float* in, float* out) {
  __shared__ float s[64];
  constexpr unsigned warpNum = 1024 / 32;
  unsigned tid = threadIdx.x, laneid = tid % 32, warpid = tid >> 5;
  float lo = in[tid], hi = lo;
  for (int c0 = 16; c0 > 0; c0 /= 2) {
    float t0 = __shfl_down_sync(0xffffffffu, lo, c0), t1 = __shfl_down_sync(0xffffffffu, hi, c0);
    if (t0 < lo) lo = t0;
    if (t1 > hi) hi = t1;
  }
  if (laneid == 0) { s[warpid] = lo; s[warpid + warpNum] = hi; }
  __syncthreads();
  if (warpid == 0) {
    lo = s[laneid];
    hi = s[laneid + warpNum];
    for (int c0 = warpNum / 2; c0 > 0; c0 /= 2) {
      float t0 = __shfl_down_sync(0xffffffffu, lo, c0), t1 = __shfl_down_sync(0xffffffffu, hi, c0);
      STEP
      if (t1 > hi) hi = t1;
    }
    if (laneid == 0) { out[0] = lo; out[1] = hi; }
  }
  TAIL
}
void run(const float* i, float* o) { k<<<1, 1024>>>(i, o); }
"""


@pytest.mark.parametrize("target", ["glsl", "opencl"])
def test_one_warp_min_max_tree_folds_the_extra_slots(tmp_path, target):
    res = translate_text(tmp_path, target, MINMAX.replace("STEP", "if (t0 < lo) lo = t0;").replace("TAIL", ""))
    assert outputs(res) == {"k"} and not _refused_at(res)
    cap = 256 if target == "glsl" else 1024          # warps of the narrowest subgroup (4 lanes / OpenCL's 1)
    assert [a["size"] for a in res.manifests["k"]["per_warp_arrays"]] == [2 * cap]
    text = res.shaders["k"] if target == "glsl" else res.text
    assert f"if (s[cuport_w1 + {cap}] > hi) {{ hi = s[cuport_w1 + {cap}]; }}" in text
    assert "if (s[cuport_w1] < lo) { lo = s[cuport_w1]; }" in text


@pytest.mark.parametrize("target", ["glsl", "opencl"])
@pytest.mark.parametrize("step, tail", [("lo += t0;", ""),                      # a sum: no identity for padding
                                        ("if (t0 > lo) lo = t0; if (t0 < lo) lo = t0;", ""),   # mixed min / max
                                        ("if (t0 < lo) lo = t0;", "out[2 + tid] = lo;")])   # other lanes' lo
def test_min_max_trees_it_cannot_prove_stay_refused(tmp_path, target, step, tail):
    res = translate_text(tmp_path, target, MINMAX.replace("STEP", step).replace("TAIL", tail))
    assert not outputs(res) and _refused_at(res) == [15]

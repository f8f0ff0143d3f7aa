"""Issue 14, HeCBench dpid (one 32-thread warp per pixel, `if (PX >= w || PY >= h) return;` before a float4 warp
reduction through a `__shfl_down(v, lane, width = 32)` wrapper): whole warps that return early while the others
shuffle on CUDA's 32-lane warps emulated in shared memory. The kernel is predicated (porter/translate/kernel/
warp32_exit.py): the warps that left still join the shuffles' barriers, writing nothing. Anything that predication
cannot make exact keeps the target's own warps and their refusals. Fixtures: tests/fixtures/breadth/warp32_exit/."""
import os

import pytest

from porter.translate.api import translate_file
from kernel_helpers import (assert_refused_at, can_validate, expected_runs, failures, outputs, ran_keys, run_spec,
                            translate_text)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIX = os.path.join(ROOT, "tests", "fixtures", "breadth", "warp32_exit")
KERNELS = ("item_means", "row_sums")


@pytest.mark.parametrize("target", ["glsl", "opencl"])
def test_warps_returning_early_are_predicated_and_build(target):
    res = translate_file(os.path.join(FIX, "exits.cu"), target, validate=can_validate(target))
    assert not res.failed_kernels, res.failed_kernels
    assert outputs(res) == set(KERNELS)
    texts = res.shaders if target == "glsl" else {k: res.text for k in KERNELS}
    for k in KERNELS:
        t = texts[k]
        body = t[t.index("void main()") if target == "glsl" else t.index(f"__kernel void {k}("):]
        # no thread leaves: the flag is cleared where CUDA returns, every thread reaches the shuffles
        assert "return;" not in body and "cuport_w32_live = false;" in body, k
    im = texts["item_means"]
    im = im[im.index("void main()") if target == "glsl" else im.index("__kernel void item_means("):]
    # declarations after the return stay in the kernel's scope, their values under the flag
    assert "if (cuport_w32_live) {\n        first = item * stride;\n    }" in im
    # the reduction runs in every thread, the loads and the stores only in live warps
    call = "warp_sum4(acc);" if target == "glsl" else "warp_sum4_p(&acc, cuport_w32_float);"
    assert f"    }}\n    {call}\n    if (cuport_w32_live) {{" in im
    rs = texts["row_sums"]
    rs = rs[rs.index("void main()") if target == "glsl" else rs.index("__kernel void row_sums("):]
    barrier = "barrier();" if target == "glsl" else "barrier(CLK_LOCAL_MEM_FENCE);"
    assert f"    }}\n    {barrier}\n    if (cuport_w32_live) {{" in rs
    # the block-uniform return clears the flag too (PoCL corrupted memory with a return before the barriers)
    assert "if (cuport_w32_live && (cols == 0)) {" in rs
    if res.extra.get("validation"):
        assert all(v["ok"] for v in res.extra["validation"].values()), res.extra["validation"]


def test_fixture_matches_numpy_on_lavapipe_and_pocl(monkeypatch):
    results = run_spec(monkeypatch, os.path.join(FIX, "verify_spec.py"))
    assert not failures(results), failures(results)
    assert ran_keys(results) == expected_runs(KERNELS)


HEAD = """#define FULL 0xffffffffu
__device__ float wsum(float v, int width = 32) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(FULL, v, o, width);
  return v;
}
"""
LAUNCH = "void run(const float *x, float *y, int n) { k<<<(n + 3) / 4, 128>>>(x, y, n); }\n"
BASE = """__global__ void k(const float *x, float *y, int n) {
  const int w = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
  if (w >= n) return;
  float v = x[w * 32 + threadIdx.x % 32];
  v = wsum(v);
  if (threadIdx.x % 32 == 0) y[w] = v;
}
"""


def test_the_base_case_is_predicated(tmp_path):
    for target in ("glsl", "opencl"):
        res = translate_text(tmp_path, target, HEAD + BASE + LAUNCH)
        assert outputs(res) == {"k"}, res.failed_kernels
        text = res.shaders["k"] if target == "glsl" else res.text
        assert "cuport_w32_live" in text and "cuport_w32_shfl_xor_float" in text


# each keeps the target's warps: OpenCL refuses the shuffle of a run-time width on one-lane warps at its line
NOT_PREDICATED = {
    "lane_dependent_return": BASE.replace("if (w >= n) return;", "if (threadIdx.x % 32 > 20) return;"),
    "shuffle_reads_memory": BASE.replace("float v = x[w * 32 + threadIdx.x % 32];\n  v = wsum(v);",
                                         "float v = wsum(x[w * 32 + threadIdx.x % 32]);"),
    "bound_written_under_the_flag": BASE.replace("  v = wsum(v);\n",
                                                 "  const int steps = n - w;\n"
                                                 "  for (int s = 0; s < steps; s++) v = wsum(v);\n"),
    "return_after_the_exit": BASE.replace("  v = wsum(v);\n", "  if (threadIdx.x % 32 == 5) return;\n"
                                                              "  v = wsum(v);\n"),
    "exit_with_work": BASE.replace("if (w >= n) return;", "if (w >= n) { y[0] = 1.f; return; }"),
    "pointer_after_the_exit": BASE.replace("float v = x[w * 32 + threadIdx.x % 32];",
                                           "const float *row = x + w * 32;\n  float v = row[threadIdx.x % 32];"),
    # a warp that left divides by a value it never set (PoCL traps on an integer division by zero)
    "integer_division_by_a_flagged_value": BASE.replace("  v = wsum(v);\n", "  const int k = w + 1;\n"
                                                                          "  v = wsum(v) + (float)(n / k);\n"),
}
# a device function that shuffles and loops on its parameter: a warp that left would loop on a value it never set
LOOPING = HEAD.replace("  return v;\n}\n", "  for (int r = 0; r < width; r++) v *= 0.5f;\n  return v;\n}\n", 1)


@pytest.mark.parametrize("case", sorted(NOT_PREDICATED) + ["loop_on_a_parameter"])
def test_what_predication_cannot_make_exact_keeps_the_targets_warps(tmp_path, case):
    code = (LOOPING + BASE if case == "loop_on_a_parameter" else HEAD + NOT_PREDICATED[case]) + LAUNCH
    assert_refused_at(tmp_path, "opencl", code, 3, "a shuffle of width `width` on one-lane warps")
    g = translate_text(tmp_path, "glsl", code)
    assert "cuport_w32_live" not in g.shaders.get("k", "")


def test_a_warp_split_across_rows_or_an_unknown_block_is_not_taken(tmp_path):
    rows = BASE.replace("blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32", "blockIdx.x * blockDim.y + threadIdx.y")
    # 16 x 8: a warp of 32 linear ids spans two rows, so threadIdx.y is not one value in a warp
    code = HEAD + rows + LAUNCH.replace("128>>>", "dim3(16, 8)>>>")
    assert_refused_at(tmp_path, "opencl", code, 3, "a shuffle of width `width` on one-lane warps")
    # 32 x 4: each warp is one row
    res = translate_text(tmp_path, "opencl", HEAD + rows + LAUNCH.replace("128>>>", "dim3(32, 4)>>>"))
    assert outputs(res) == {"k"} and "cuport_w32_live" in res.text
    # no launch in the file: the block, hence which threads form a warp, is unknown
    assert_refused_at(tmp_path, "opencl", HEAD + BASE, 3, "a shuffle of width `width` on one-lane warps")

"""A shuffle whose distance is a loop counter with a constant start (`for (int c = 8; c > 0; c /= 2)`, HeCBench
marchingCubes' computeMinMaxLv2 reducing rows of 16 lanes) reaches that far: GLSL requires subgroups of 16 lanes
(the launch contract); OpenCL 1.2's one-lane warps cannot run it, so the kernel runs CUDA's 32-lane warps emulated in
local memory (warp32.py). Both were translated with exit 0 and computed the row minimum of fewer lanes (found by
bench/breadth.py --verify)."""
import os

from porter.translate.api import translate_file
from porter.translate.kernel.validate import tool

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ROW_MIN = os.path.join(ROOT, "tests", "fixtures", "breadth", "subwarp", "row_min.cu")


def test_a_loop_counted_shuffle_distance_sets_the_glsl_subgroup_contract():
    res = translate_file(ROW_MIN, "glsl", validate=tool("glslangValidator") is not None)
    assert set(res.shaders) == {"row_min", "row_min_ws"}, res.failed_kernels
    assert res.manifests["row_min"]["min_subgroup_size"] == 16
    notes = [d for d in res.diagnostics if d.code == "CP907" and "reaches lane 8 away" in d.message]
    assert [(d.row, d.severity) for d in notes] == [(8, "warning")]
    # written against warpSize: no fixed distance, no contract from the shuffle
    assert not (res.manifests["row_min_ws"]["min_subgroup_size"] or 0) > 4


def test_one_lane_opencl_emulates_32_lane_warps_for_a_fixed_reach_and_keeps_one_written_against_warpsize():
    # the fixed reach cannot run on one-lane warps: the kernel runs CUDA's 32-lane warps in local memory
    # (warp32.py; tests/test_warp32.py checks the values); the warpSize form stays on one-lane warps
    res = translate_file(ROW_MIN, "opencl", validate=False)
    assert not res.failed_kernels, res.failed_kernels
    body = res.text.split("__kernel void row_min(")[1].split("__kernel")[0]
    assert "cuport_w32_shfl_down_float(cuport_w32_float, v, c, 32u, 1024u)" in body
    assert res.manifests["row_min"]["warp_size"] == 32 and res.manifests["row_min_ws"]["warp_size"] == 1
    ws = res.text.split("__kernel void row_min_ws(")[1]
    assert "cuport_w32" not in ws and "CUPORT_WARP_SIZE" in ws
    assert not [d for d in res.diagnostics if d.severity == "error"]

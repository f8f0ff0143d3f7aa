"""A shuffle whose distance is a loop counter with a constant start (`for (int c = 8; c > 0; c /= 2)`, HeCBench
marchingCubes' computeMinMaxLv2 reducing rows of 16 lanes) reaches that far: GLSL requires subgroups of 16 lanes
(the launch contract), OpenCL 1.2's one-lane warps refuse it with CP907 at the distance. Both were translated
with exit 0 and computed the row minimum of fewer lanes (found by bench/breadth.py --verify)."""
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


def test_one_lane_opencl_refuses_a_fixed_width_reduction_and_keeps_one_written_against_warpsize():
    res = translate_file(ROW_MIN, "opencl", validate=False)
    assert "row_min_ws" in res.text and "__kernel void row_min(" not in res.text
    errs = [d for d in res.diagnostics if d.severity == "error" and "row_min" in d.message]
    assert len(errs) == 1 and errs[0].code == "CP907" and errs[0].row == 8
    assert "reaches lane 8 away in a kernel that never reads warpSize" in errs[0].message
    assert "at least 16 lanes" in errs[0].message

"""Issue 14, HeCBench graphExecution reduceFinal: a final-warp stage `if (rank < 32) { ...; shuffle loop }` over a
32-thread tile is lowered to shared memory and work-group barriers (porter/translate/kernel/final_warp.py), CUDA's
value in every lane at any subgroup size; the stages it cannot lower exactly stay refused with CP104 at the guard.
Fixtures: tests/fixtures/breadth/finalwarp/."""
import os
import re

import pytest

from porter.translate.api import translate_file
from porter.translate.kernel.validate import tool
from kernel_helpers import expected_runs, failures, ran_keys, run_spec

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIX = os.path.join(ROOT, "tests", "fixtures", "breadth", "finalwarp")
SRC = os.path.join(FIX, "finalwarp.cu")
STAGES = {"reduce_final_d": 49, "reduce_final_f": 75, "max_final_i": 96}      # kernel -> row of its guard


def _stage_findings(res):
    return {d.row: d for d in res.diagnostics if d.code == "CP104"}


@pytest.mark.parametrize("target", ["glsl", "opencl"])
def test_stages_lowered_with_barriers(target):
    res = translate_file(SRC, target, validate=target == "glsl" and tool("glslangValidator") is not None)
    assert not res.failed_kernels, res.failed_kernels
    found = _stage_findings(res)
    # the linter's finding stays, as information: the stage was translated exactly
    assert sorted(found) == sorted(STAGES.values())
    for row in STAGES.values():
        assert found[row].severity == "info" and "exact for any subgroup size" in found[row].message
    texts = res.shaders if target == "glsl" else {k: res.text for k in STAGES}
    assert set(texts) >= set(STAGES)
    decl = "shared" if target == "glsl" else "__local"
    assert f"{decl} double cuport_fw_slots[32];" in texts["reduce_final_d"]
    assert f"{decl} float cuport_fw_slots" in texts["reduce_final_f"] and f"{decl} int cuport_fw_slots" in \
        texts["max_final_i"]
    if target == "glsl":
        for k, t in texts.items():
            body = t.split("void main")[1]
            # no subgroup operation is left (the stage was the kernels' only warp code)
            assert "GL_KHR_shader_subgroup" not in t and "gl_Subgroup" not in body and "subgroup" not in \
                body.replace("any subgroup size", ""), k
            # five steps, two barriers each, after the tree's own barriers
            stage = body[body.index("final-warp stage"):]
            assert stage.count("barrier();") == 10, k
        d = texts["reduce_final_d"]
        # CUDA's shfl_down: a lane whose source is past the 32 reads its own slot
        assert "cuport_fw_slots[(cuport_fw_lane + offset2) < 32 ? (cuport_fw_lane + offset2) : cuport_fw_lane]" in d
        # the loop's variable keeps its name, made fresh in the stage's block (the block declares it)
        assert re.search(r"other\d* = cuport_fw_slots\[\(cuport_fw_lane \^ (o\d*)\) < 32 \? \(cuport_fw_lane \^ \1\) : "
                         r"cuport_fw_lane\];", texts["max_final_i"])
        assert [ln.strip() for ln in d.splitlines() if ln.strip().startswith("offset2 = ")] == \
            ["offset2 = 16;", "offset2 = 8;", "offset2 = 4;", "offset2 = 2;", "offset2 = 1;"]
    if res.extra.get("validation"):
        assert all(v["ok"] for v in res.extra["validation"].values())


REFUSED = {"early_return": 9, "shared_write": 21, "x_only_guard": 32, "launch_offsets": 43, "warpsize_inside": 54,
           "divergent": 66, "loop_exit": 80}


@pytest.mark.parametrize("target", ["glsl", "opencl"])
def test_stages_not_lowered_stay_refused(target):
    res = translate_file(os.path.join(FIX, "refused.cu"), target, validate=False)
    assert set(res.failed_kernels) == set(REFUSED)
    found = _stage_findings(res)
    for k, row in REFUSED.items():
        assert found[row].severity == "error" and "final-warp stage" in found[row].message, k
        d = next(d for d in res.diagnostics if d.code == "CP104" and f"kernel `{k}` not translated" in d.message)
        assert f"CP104 at line {row} is not fixed" in d.message, (k, d.message)
    assert not res.shaders and "void" not in (res.text or "")


def test_fixture_matches_numpy_on_lavapipe_and_pocl(monkeypatch):
    results = run_spec(monkeypatch, os.path.join(FIX, "verify_spec.py"))
    assert not failures(results), failures(results)
    assert ran_keys(results) == expected_runs(tuple(STAGES))

"""Issue 14, item 4: template kernels launched only from the member functions of a class template
(porter/translate/class_launches.py), instantiated from the class's instantiations; and the per-warp layouts
written for warps of 32 lanes that such kernels brought in (HeCBench bmf), refused with CP104.
Fixtures: tests/fixtures/breadth/class_templates/, tests/fixtures/breadth/warp_pointer/ (verify_spec.py files run
on lavapipe 4/8/16 and PoCL)."""
import os
import re
import subprocess
import sys

import pytest

from porter.translate.api import translate_file
from porter.translate.kernel.validate import opencl_context, tool

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CT = os.path.join(ROOT, "tests", "fixtures", "breadth", "class_templates")
WP = os.path.join(ROOT, "tests", "fixtures", "breadth", "warp_pointer")
TARGETS = ("glsl", "opencl")
INSTANCES = {"scale<int, unsigned int, float>", "scale<unsigned int, unsigned int, float>", "shift_add<int, 3>",
             "shift_add<unsigned int, 3>"}
LAVAPIPE = "/usr/share/vulkan/icd.d/lvp_icd.x86_64.json"


def cuport(*args):
    env = dict(os.environ, PYTHONPATH=ROOT)
    env.pop("CUPORT_TEST_REJECT", None)
    return subprocess.run([sys.executable, "-m", "porter", *args], env=env, capture_output=True, text=True,
                          timeout=300)


def can_validate(target):
    return tool("glslangValidator") is not None if target == "glsl" else opencl_context() is not None


@pytest.mark.parametrize("target", TARGETS)
def test_launches_in_class_template_methods_instantiate(target):
    res = translate_file(os.path.join(CT, "main.cu"), target, validate=can_validate(target))
    assert set(res.manifests) == INSTANCES
    if can_validate(target):
        assert all(v["ok"] for v in res.extra["validation"].values()), res.extra["validation"]
    args = {k: m.get("template_args") for k, m in res.manifests.items()}
    # deduced through `auto &h = hs[0]` (a std::vector of a member struct) and the class's aliases
    assert args["scale<int, unsigned int, float>"] == {"F": "int", "I": "unsigned int", "E": "float"}
    # `Runner<>`: the class's default argument
    assert args["scale<unsigned int, unsigned int, float>"] == {"F": "unsigned int", "I": "unsigned int",
                                                                "E": "float"}
    # written `shift_add<factor_t, 3>` inside a lambda of a member function
    assert args["shift_add<int, 3>"] == {"T": "int", "K": 3}
    # `orphan` is launched only in a class template nothing instantiates: refused at its name, never guessed;
    # `Runner<T>` inside the never-called template `never` names no instance
    errors = [(d.code, d.row) for d in res.diagnostics if d.severity == "error"]
    assert errors == [("CP907", 19)], errors
    assert "never instantiated" in res.failed_kernels["orphan"]
    assert not any("T" in str(v) for m in args.values() for v in (m or {}).values() if v != "float")


@pytest.mark.parametrize("target", TARGETS)
def test_class_template_directory_run(target, tmp_path):
    r = cuport("translate", "--to", target, "--no-validate", CT, "-o", str(tmp_path))
    assert r.returncode == 1, r.stderr            # orphan stays refused
    assert "kernels.cuh:19:17: CP907 [error] template kernel `orphan` is never instantiated" in r.stderr
    if target == "glsl":
        assert sorted(os.listdir(tmp_path)) == sorted(re.sub(r"[<>, ]+", "_", k).strip("_") + ".comp"
                                                      for k in INSTANCES)
    else:
        text = (tmp_path / "main.cl").read_text()
        assert len(re.findall(r"__kernel void (\w+)\(", text)) == 4


def test_without_a_class_instantiation_nothing_is_instantiated(tmp_path):
    src = open(os.path.join(CT, "main.cu")).read()
    body = src[:src.index("int main()")] + "int main() { return 0; }\n"
    (tmp_path / "main.cu").write_text(body)
    (tmp_path / "kernels.cuh").write_text(open(os.path.join(CT, "kernels.cuh")).read())
    res = translate_file(str(tmp_path / "main.cu"), "opencl", validate=False)
    assert not res.manifests
    assert set(res.failed_kernels) == {"scale", "shift_add", "orphan"}
    assert all("never instantiated" in v for v in res.failed_kernels.values())


def _cpu_targets():
    if not os.path.exists(LAVAPIPE) or opencl_context() is None or tool("glslangValidator") is None:
        pytest.skip("lavapipe / PoCL / glslang not available")


@pytest.mark.parametrize("spec,cases", [
    (os.path.join(CT, "verify_spec.py"), {"scale<int, unsigned int, float>", "scale<unsigned int, unsigned int, float>",
                                          "shift_add<int, 3>"}),
    (os.path.join(WP, "verify_spec.py"), {"staged", "rows_per_warp"}),
])
def test_fixtures_match_numpy_on_lavapipe_and_pocl(monkeypatch, spec, cases):
    _cpu_targets()
    monkeypatch.setenv("VK_ICD_FILENAMES", LAVAPIPE)
    from porter.verify.runner import Runner
    from porter.verify.spec import load_spec
    results = Runner(["vulkan", "opencl"], subgroups=[4, 8, 16], jobs=1).run(load_spec(spec))
    ran = {(r.case, r.target, r.variant): r.status for r in results}
    assert set(ran.values()) == {"pass"}, [(r.case, r.target, r.variant, r.message) for r in results]
    assert {c for c, _t, _v in ran} == cases
    for c in cases:
        assert {(c, "vulkan", "sg4"), (c, "vulkan", "sg8"), (c, "vulkan", "sg16"), (c, "opencl", "-")} <= set(ran)


@pytest.mark.parametrize("target", TARGETS)
def test_per_warp_layouts_for_32_lanes_are_refused(target):
    res = translate_file(os.path.join(WP, "refused.cu"), target, validate=False)
    errors = {(d.code, d.row, d.column) for d in res.diagnostics if d.severity == "error"}
    # at the call that hands the slots over, and at the warp id
    assert errors == {("CP104", 25, 13), ("CP104", 31, 19)}, errors
    assert set(res.failed_kernels) == {"through_pointer", "rows_per_warp"}
    assert "`block_sum` indexes it through its parameter `slots` by a warp id" in res.failed_kernels["through_pointer"]
    assert "counts 16 warps of 32 lanes per block" in res.failed_kernels["rows_per_warp"]
    assert not res.manifests


@pytest.mark.parametrize("target", TARGETS)
def test_warp_layouts_that_follow_the_subgroup_are_kept(target):
    res = translate_file(os.path.join(WP, "kept.cu"), target, validate=can_validate(target))
    assert not res.failed_kernels, res.failed_kernels
    assert set(res.manifests) == {"staged", "rows_per_warp"}
    assert not [d for d in res.diagnostics if d.code == "CP104"]

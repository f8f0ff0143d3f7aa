"""Device functions returning a pointer into one of their pointer parameters (HeCBench debayer's
`image_pixel_at_`), translated as functions returning the element offset from that parameter
(porter/translate/kernel/returned_pointers.py); what they cannot follow stays refused at the return.
Fixture: tests/fixtures/breadth/returned_pointers/ (verify_spec.py runs on lavapipe 4/8/16 and PoCL)."""
import os
import re

import pytest

from porter.translate.api import translate_file
from porter.translate.kernel.validate import opencl_context, tool

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIX = os.path.join(ROOT, "tests", "fixtures", "breadth", "returned_pointers")
TARGETS = ("glsl", "opencl")
LAVAPIPE = "/usr/share/vulkan/icd.d/lvp_icd.x86_64.json"


def can_validate(target):
    return tool("glslangValidator") is not None if target == "glsl" else opencl_context() is not None


@pytest.mark.parametrize("target", TARGETS)
def test_returned_pointers_become_offsets(target):
    res = translate_file(os.path.join(FIX, "main.cu"), target, validate=can_validate(target))
    assert not res.failed_kernels, res.failed_kernels
    assert set(res.manifests) == {"transpose2", "bytes_plus"}
    if can_validate(target):
        assert all(v["ok"] for v in res.extra["validation"].values()), res.extra["validation"]
    text = res.shaders["transpose2"] if target == "glsl" else res.text
    # the helpers return the offset from their parameter; the nested one adds to the other's
    assert re.search(r"int pixel_at\([^)]*\) \{\s*return row_at\([^)]*\) \+ c;", text), text
    assert re.search(r"int row_at\([^)]*\) \{\s*return r \* pitch;", text), text
    if target == "glsl":
        assert "out_[pixel_at(0, h, c, r)]" in text
    else:
        assert "*(out + pixel_at(out, h, c, r))" in text


@pytest.mark.parametrize("target", TARGETS)
def test_pointers_it_cannot_follow_are_refused_at_the_return(target):
    res = translate_file(os.path.join(FIX, "refused.cu"), target, validate=False)
    errors = {(d.code, d.row, d.column) for d in res.diagnostics if d.severity == "error"}
    assert errors == {("CP907", 5, 10), ("CP907", 10, 10)}, errors
    assert "`pick` returns pointers into different parameters" in res.failed_kernels["picks"]
    assert "through the local pointer `q`" in res.failed_kernels["locals"]
    assert not res.manifests


def test_returned_pointers_match_numpy_on_lavapipe_and_pocl(monkeypatch):
    if not os.path.exists(LAVAPIPE) or opencl_context() is None or tool("glslangValidator") is None:
        pytest.skip("lavapipe / PoCL / glslang not available")
    monkeypatch.setenv("VK_ICD_FILENAMES", LAVAPIPE)
    from porter.verify.runner import Runner
    from porter.verify.spec import load_spec
    results = Runner(["vulkan", "opencl"], subgroups=[4, 8, 16], jobs=1).run(load_spec(os.path.join(FIX,
                                                                                                "verify_spec.py")))
    ran = {(r.case, r.target, r.variant): r.status for r in results}
    assert set(ran.values()) == {"pass"}, [(r.case, r.target, r.variant, r.message) for r in results]
    assert len(ran) == 8 and {c for c, _t, _v in ran} == {"transpose2", "bytes_plus"}


V3 = os.path.join(ROOT, "tests", "fixtures", "breadth", "vec3_views")


def test_vec3_views_of_scalar_buffers_in_opencl():
    res = translate_file(os.path.join(V3, "main.cu"), "opencl", validate=can_validate("opencl"))
    assert not res.failed_kernels, res.failed_kernels
    if can_validate("opencl"):
        assert all(v["ok"] for v in res.extra["validation"].values()), res.extra["validation"]
    # CUDA's 3-element layout through the packed struct; the buffers written in parentheses are not const
    assert "(*((__global cuport_packed_uchar3*)((out) + px((out), pitch, r, c, 3u)))) = cuport_st_uchar3(v);" \
        in res.text
    assert "(*(out + i)) = 2.0f * in[i];" in res.text
    assert len(re.findall(r"__global (?:uchar|float)\* out,", res.text)) == 3
    assert "__global const uchar* in," in res.text


def test_vec3_views_stay_refused_in_glsl():
    res = translate_file(os.path.join(V3, "main.cu"), "glsl", validate=False)
    errors = {(d.code, d.row, d.column) for d in res.diagnostics if d.severity == "error"}
    assert errors == {("CP907", 17, 8), ("CP907", 23, 17)}, errors
    assert all("a 3-vector whose size differs" in res.failed_kernels[k] for k in ("to_rgb", "spread3"))
    assert set(res.shaders) == {"doubled"}                  # the parenthesised write alone translates


def test_vec3_views_match_numpy_on_pocl():
    if opencl_context() is None:
        pytest.skip("PoCL not available")
    from porter.verify.runner import Runner
    from porter.verify.spec import load_spec
    results = Runner(["opencl"], jobs=1).run(load_spec(os.path.join(V3, "verify_spec.py")))
    ran = {r.case: r.status for r in results}
    assert ran == {"to_rgb": "pass", "spread3": "pass", "doubled": "pass"}, \
        [(r.case, r.message) for r in results]

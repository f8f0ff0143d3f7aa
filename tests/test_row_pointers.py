"""Issue 14 item 2: pointers to rows of multi-dimensional arrays (tests/fixtures/breadth/pointers/rows.cu).
OpenCL keeps the C pointer (`__local int *d = dist[row]`); GLSL flattens: the row is an element offset into the
array, spelled back as one subscript per dimension."""
import os

import pytest

from porter.translate.api import translate_file
from porter.translate.kernel.validate import opencl_context, tool

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIX = os.path.join(ROOT, "tests", "fixtures", "breadth", "pointers")
ROWS = os.path.join(FIX, "rows.cu")


def can_validate(target):
    return tool("glslangValidator") is not None if target == "glsl" else opencl_context() is not None


@pytest.mark.parametrize("target", ["glsl", "opencl"])
def test_rows_translate_to_valid_output(target):
    res = translate_file(ROWS, target, validate=can_validate(target))
    got = set(res.shaders) if target == "glsl" else set(res.manifests)
    want = {"shared_rows", "private_rows"} | ({"stepped_row"} if target == "opencl" else set())
    assert got == want, res.failed_kernels
    if res.extra.get("validation"):
        assert all(v["ok"] for v in res.extra["validation"].values()), res.extra["validation"]


def test_glsl_row_is_an_offset_into_the_flattened_array():
    res = translate_file(ROWS, "glsl", validate=False)
    s = res.shaders["shared_rows"]
    assert "shared int dist[4][32];" in s
    assert "bump(row * 32, lane, in_[g]);" in s            # the row passed as its element offset
    assert "int d_off = row * 32;" in s
    assert "dist[(d_off + lane) / 32][cuport_rem_int(d_off + lane, 32)]" in s
    p = res.shaders["private_rows"]
    assert "int p_off = 4;" in p                            # &m[1][1]
    assert "dot3(m, 0, m, 3) + dot3(m, 6, m, 0)" in p


def test_opencl_row_keeps_the_c_pointer():
    res = translate_file(ROWS, "opencl", validate=False)
    src = res.text
    assert "__local int* d = dist[row];" in src and "bump_l(dist[row], lane, in[g]);" in src
    assert "dot3_pp(m[0], m[1]) + dot3_pp(m[2], &m[0][0])" in src


def test_glsl_side_effect_index_through_a_row_is_refused_at_its_line():
    res = translate_file(ROWS, "glsl", validate=False)
    d = [d for d in res.diagnostics if d.code == "CP907" and d.severity == "error"]
    assert [(x.row, x.column) for x in d] == [(45, 21)]
    assert "`j++` (an index with side effects through a pointer into a multi-dimensional array)" in d[0].message
    assert "stepped_row" in d[0].message


def test_rows_match_numpy_on_lavapipe_and_pocl(monkeypatch):
    icd = "/usr/share/vulkan/icd.d/lvp_icd.x86_64.json"
    if not os.path.exists(icd) or opencl_context() is None or tool("glslangValidator") is None:
        pytest.skip("lavapipe / PoCL / glslang not available")
    monkeypatch.setenv("VK_ICD_FILENAMES", icd)
    from porter.verify.runner import Runner
    from porter.verify.spec import load_spec
    results = Runner(["vulkan", "opencl"], subgroups=[4, 8, 16], jobs=1).run(load_spec(os.path.join(FIX, "rows_spec.py")))
    ran = {(r.case, r.target, r.variant): r.status for r in results if r.status != "skipped"}
    assert set(ran.values()) == {"pass"}, [(r.case, r.target, r.variant, r.message) for r in results]
    for k in ("shared_rows", "private_rows"):
        assert {(k, "opencl", "-"), (k, "vulkan", "sg4"), (k, "vulkan", "sg8"), (k, "vulkan", "sg16")} <= set(ran)

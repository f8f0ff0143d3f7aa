"""Issue 14 item 2: pointers to rows of multi-dimensional arrays (tests/fixtures/breadth/pointers/rows.cu).
OpenCL keeps the C pointer (`__local int *d = dist[row]`); GLSL flattens: the row is an element offset into the
array, spelled back as one subscript per dimension."""
import os

import pytest
from kernel_helpers import can_validate, expected_runs, failures, outputs, ran_keys, run_spec, translate_text

from porter.translate.api import translate_file

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIX = os.path.join(ROOT, "tests", "fixtures", "breadth", "pointers")
ROWS = os.path.join(FIX, "rows.cu")


@pytest.mark.parametrize("target", ["glsl", "opencl"])
def test_rows_translate_to_valid_output(target):
    res = translate_file(ROWS, target, validate=can_validate(target))
    want = {"shared_rows", "private_rows", "swap_through_row"}
    want |= {"stepped_row", "alias_through_row"} if target == "opencl" else set()
    assert outputs(res) == want, res.failed_kernels
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
    assert "swap2(m[1][1], m[4 / 4][cuport_rem_int(4, 4)]);" in res.shaders["swap_through_row"]


def test_opencl_row_keeps_the_c_pointer():
    res = translate_file(ROWS, "opencl", validate=False)
    src = res.text
    assert "__local int* d = dist[row];" in src and "bump_l(dist[row], lane, in[g]);" in src
    assert "dot3_pp(m[0], m[1]) + dot3_pp(m[2], &m[0][0])" in src


def test_glsl_refusals_are_at_their_lines():
    res = translate_file(ROWS, "glsl", validate=False)
    d = [d for d in res.diagnostics if d.code == "CP907" and d.severity == "error"]
    assert [(x.row, x.column) for x in d] == [(45, 21), (72, 5)]
    assert "`j++` (an index with side effects through a pointer into a multi-dimensional array)" in d[0].message
    assert "stepped_row" in d[0].message
    # m[1][1] and the row pointer m[0] + 5 are one element: copy-in/copy-out would lose a write
    assert "`m[1][1]` and `*(m[0] + 5)` may be the same storage" in d[1].message
    assert "alias_through_row" in d[1].message


ALIAS = """
__device__ void swap2(float &a, float &b) { float t = a; a = b; b = t; }
__global__ void k(float *out) {
    float m[3][4] = {};
    swap2(%s, %s);
    out[0] = m[1][0];
}
"""


@pytest.mark.parametrize("a, b, same", [
    ("m[1][0]", "*(m[0] + 4)", True),         # flat offset 4 = row 1, column 0
    ("*(m[2] + 1)", "m[2][1]", True),
    ("*(m[2] + 1)", "m[2][2]", False),
    ("*(m[1] + 1)", "*(m[0] + 5)", True),     # two row pointers: flat offsets
    ("m[1][0]", "*(m[0] + 3)", False),
])
def test_glsl_row_pointer_alias_is_compared_as_flat_offsets(tmp_path, a, b, same):
    res = translate_text(tmp_path, "glsl", ALIAS % (a, b))
    errs = [d for d in res.diagnostics if d.code == "CP907" and d.severity == "error"]
    if same:
        assert [(d.row, d.column) for d in errs] == [(5, 5)], [d.message for d in errs]
        assert f"`{a}` and `{b}` may be the same storage" in errs[0].message
    else:
        assert not errs and outputs(res) == {"k"}, [d.message for d in errs]


def test_rows_match_numpy_on_lavapipe_and_pocl(monkeypatch):
    results = run_spec(monkeypatch, os.path.join(FIX, "rows_spec.py"))
    assert not failures(results), failures(results)
    assert ran_keys(results) == expected_runs(["shared_rows", "private_rows", "swap_through_row"])

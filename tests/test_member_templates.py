"""Member function templates of a plain class template (`template <typename It> void Load(It block, T
(&items)[N], int valid)`) called on a temporary with the buffer + offset pattern `&(in[base])` (HeCBench
blockAccess's BlockLoad call, minus its reference member): `It` deduced from the argument beside the class's
arguments, the array reference bound like a pointer to the caller's array. Fixture: tests/fixtures/breadth/
member_templates/ (verify_spec.py checks it against NumPy on lavapipe and PoCL)."""
import os

import pytest

from porter.translate.api import translate_file
from kernel_helpers import (assert_refused_at, can_validate, expected_runs, failures, outputs, ran_keys, run_spec,
                            translate_text)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIX = os.path.join(ROOT, "tests", "fixtures", "breadth", "member_templates")
SRC = os.path.join(FIX, "member_templates.cu")


@pytest.mark.parametrize("target", ["glsl", "opencl"])
def test_fixture_translates_to_valid_output(target):
    res = translate_file(SRC, target, validate=can_validate(target))
    assert outputs(res) == {"scale_blocked"}, [d.message for d in res.diagnostics]
    if res.extra.get("validation"):
        assert all(v["ok"] for v in res.extra["validation"].values()), res.extra["validation"]


def test_spellings():
    o = translate_file(SRC, "opencl", validate=False).text
    assert "void Blocked_f32_4_Load_gp_float_4_float(Blocked_f32_4 self, __global const float* block, float* items, " \
           "int valid)" in o
    assert "Blocked_f32_4_Load_gp_float_4_float((Blocked_f32_4){((uint)get_local_id(0))}, &(in[base]), vals, valid);" in o
    g = translate_file(SRC, "glsl", validate=False).shaders["scale_blocked"]
    # the buffer + offset: the offset travels, the buffer is the binding
    assert "void Blocked_f32_4_Load(Blocked_f32_4 self, int block_off, inout float items[4], int items_off, " \
           "int valid)" in g
    assert "items[items_off + k] = in_[block_off + (self.tid * 4 + k)];" in g
    assert "Blocked_f32_4_Load(Blocked_f32_4(int(gl_LocalInvocationID.x)), base, vals, 0, valid);" in g


def test_fixture_matches_numpy_on_lavapipe_and_pocl(monkeypatch):
    results = run_spec(monkeypatch, os.path.join(FIX, "verify_spec.py"))
    assert not failures(results), failures(results)
    want = expected_runs({"scale_blocked"})
    assert want <= ran_keys(results), sorted(want - ran_keys(results))


ARRAY_REF = """__device__ void fill(int (&items)[4], int v) { for (int k = 0; k < 4; k++) items[k] = v + k; }
__global__ void k(int *o) {
  int vals[4];
  fill(vals, threadIdx.x);
  for (int k = 0; k < 4; k++) o[threadIdx.x * 4 + k] = vals[k];
}
"""


@pytest.mark.parametrize("target", ["glsl", "opencl"])
def test_an_array_reference_parameter_is_the_callers_array(tmp_path, target):
    res = translate_text(tmp_path, target, ARRAY_REF)
    text = res.text if target == "opencl" else res.shaders["k"]
    want = "void fill_p(int* items, int v)" if target == "opencl" else "void fill(inout int items[4], int items_off, int v)"
    assert want in text, text


@pytest.mark.parametrize("target", ["glsl", "opencl"])
def test_a_local_reference_to_an_array_stays_refused(tmp_path, target):
    # not a copy: `r` is `vals` itself (refs.py refuses a reference of an array type)
    code = ("__global__ void k(int *o) {\n  int vals[4] = {1, 2, 3, 4};\n  int (&r)[4] = vals;\n  r[0] = 9;\n"
            "  o[0] = vals[0];\n}\n")
    assert_refused_at(tmp_path, target, code, 3, "the reference `r`")

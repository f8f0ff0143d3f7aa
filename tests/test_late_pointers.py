"""Issue 14 item 2: pointers declared without a value, bound by their first assignment
(tests/fixtures/breadth/pointers/late_bound.cu, after quicksort-cuda's gqsort_kernel), and OpenCL pointers
re-pointed to another buffer (writes through them reach it: not `const`, not read-only in the manifest)."""
import os

import pytest
from kernel_helpers import can_validate, expected_runs, failures, outputs, ran_keys, run_spec, translate_text

from porter.translate.api import translate_file

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIX = os.path.join(ROOT, "tests", "fixtures", "breadth", "pointers")
LATE = os.path.join(FIX, "late_bound.cu")


@pytest.mark.parametrize("target", ["glsl", "opencl"])
def test_late_bound_translate_to_valid_output(target):
    res = translate_file(LATE, target, validate=can_validate(target))
    cl_only = {"late_select", "repoint", "late_field", "shared_select"}
    want = {"late_offset"} | (cl_only if target == "opencl" else set())
    assert outputs(res) == want, res.failed_kernels
    if res.extra.get("validation"):
        assert all(v["ok"] for v in res.extra["validation"].values()), res.extra["validation"]


def test_glsl_late_pointer_is_an_offset_bound_by_its_first_assignment():
    s = translate_file(LATE, "glsl", validate=False).shaders["late_offset"]
    assert "int p_off = 0;" in s and "p_off = i;" in s and "p_off = (n - 1 - i);" in s
    assert "out_[q_off] = in_[p_off] * 2.0;" in s
    assert "atomicAdd(counts[pc__off], 1u);" in s


def test_opencl_late_pointer_takes_the_space_of_its_first_assignment():
    src = translate_file(LATE, "opencl", validate=False).text
    assert "__global const float* p;" in src and "__global float* q;" in src
    assert "__global float* src;" in src and "__global float* dst;" in src
    assert src.count("__global uint* pc;") == 2
    assert "__local float* __local s;" in src               # a `__shared__` pointer: kernel scope
    assert "cuport:pointer type" not in src


def test_opencl_buffer_reached_through_a_repointed_pointer_is_written():
    res = translate_file(LATE, "opencl", validate=False)
    src = res.text
    assert "__global float* b,\n    __global float* c," in src      # b was `const` (only read by name)
    access = {p["name"]: p["access"] for p in res.manifests["repoint"]["params"] if p["kind"] == "buffer"}
    assert access == {"b": "readwrite", "c": "writeonly"}
    access = {p["name"]: p["access"] for p in res.manifests["late_select"]["params"] if p["kind"] == "buffer"}
    assert access == {"a": "readwrite", "b": "readwrite"}


@pytest.mark.parametrize("target", ["glsl", "opencl"])
def test_late_pointer_refusals_are_at_their_lines(target):
    res = translate_file(LATE, target, validate=False)
    got = {d.extra.get("kernel") if d.extra else None: (d.row, d.column, d.message)
           for d in res.diagnostics if d.code == "CP907" and d.severity == "error"}
    assert got["used_first"][:2] == (59, 20)
    assert "the pointer `p` used before a value is assigned to it" in got["used_first"][2]
    if target == "opencl":
        assert set(got) == {"used_first"}
        return
    assert set(got) == {"used_first", "late_select", "repoint", "late_field", "shared_select"}
    assert got["shared_select"][:2] == (67, 5) and "the `__shared__` pointer `s`" in got["shared_select"][2]
    assert got["late_select"][:2] == (28, 9) and "the pointer `src` re-pointed to another array (`b`)" in \
        got["late_select"][2]
    assert got["repoint"][:2] == (40, 15)
    assert got["late_field"][:2] == (51, 5) and "the pointer `pc` declared without a value and assigned " \
        "`&recs[which[i]].count`" in got["late_field"][2]


def test_never_assigned_pointer_is_refused_at_its_declaration(tmp_path):
    code = "__global__ void k(float *out) {\n    float *p;\n    out[0] = 1.0f;\n}\n"
    for target in ("glsl", "opencl"):
        res = translate_text(tmp_path, target, code)
        d = [d for d in res.diagnostics if d.code == "CP907" and d.severity == "error"]
        assert [(x.row, x.column) for x in d] == [(2, 5)] and "the uninitialised pointer `p`" in d[0].message


def test_late_bound_match_numpy(monkeypatch):
    results = run_spec(monkeypatch, os.path.join(FIX, "late_bound_spec.py"))
    assert not failures([r for r in results if not (r.target == "vulkan" and r.case != "late_offset")]), \
        failures(results)
    want = expected_runs(["late_offset"]) | expected_runs(["late_select", "repoint", "shared_select"],
                                                          targets=("opencl",))
    assert {k for k in ran_keys(results) if k[1] == "opencl" or k[0] == "late_offset"} == want


def test_opencl_shared_pointer_in_a_device_function_is_refused(tmp_path):
    code = ("__device__ float pick(float *a, int i) {\n    __shared__ float *s;\n    s = a;\n    return s[i];\n}\n"
            "__global__ void k(float *out) {\n    out[threadIdx.x] = pick(out, 0);\n}\n")
    res = translate_text(tmp_path, "opencl", code)
    d = [d for d in res.diagnostics if d.code == "CP907" and d.severity == "error"]
    assert [(x.row, x.column) for x in d] == [(2, 5)]
    assert "the `__shared__` pointer `s` in a device function" in d[0].message

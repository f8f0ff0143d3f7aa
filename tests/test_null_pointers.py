"""Issue 14 item 2: pointers that may be null (tests/fixtures/breadth/nullptr/nullable.cu, after HeCBench kalman's
`b_fc = fc_steps ? d_fc + bid * fc_steps : nullptr`). OpenCL keeps C's null pointer; GLSL keeps an element offset
at NULL_OFFSET, and a null test on a pointer into a kernel buffer parameter makes the manifest require that
parameter not null (the host binds a buffer to every one)."""
import os

import numpy as np
import pytest
from kernel_helpers import (assert_refused_at, can_validate, expected_runs, failures, outputs, ran_keys, run_spec,
                            translate_text)

from porter.translate.api import translate_file
from porter.translate.kernel.pointers import NULL_OFFSET
from porter.verify.backends import CompileError, check_launch_contract

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIX = os.path.join(ROOT, "tests", "fixtures", "breadth", "nullptr")
SRC = os.path.join(FIX, "nullable.cu")


@pytest.mark.parametrize("target", ["glsl", "opencl"])
def test_nullable_pointers_translate_to_valid_output(target):
    res = translate_file(SRC, target, validate=can_validate(target))
    assert outputs(res) == {"forecast", "null_tests"}, res.failed_kernels
    if res.extra.get("validation"):
        assert all(v["ok"] for v in res.extra["validation"].values()), res.extra["validation"]


def test_nullable_pointers_match_numpy(monkeypatch):
    results = run_spec(monkeypatch, os.path.join(FIX, "nullable_spec.py"))
    assert not failures(results), failures(results)
    assert ran_keys(results) == expected_runs(["forecast", "null_tests"])


def test_glsl_null_pointer_is_the_null_offset():
    res = translate_file(SRC, "glsl", validate=False)
    s = res.shaders["forecast"]
    assert f"int b_fc_off = steps != 0 ? i * steps : {NULL_OFFSET};" in s
    assert "fc[b_fc_off + it] = a;" in s
    s = res.shaders["null_tests"]
    assert f"int q_off = {NULL_OFFSET};" in s and f"q_off = {NULL_OFFSET};" in s
    assert f"if (p_off != {NULL_OFFSET} && q_off != {NULL_OFFSET})" in s
    assert f"return p_off != {NULL_OFFSET} ? in_[p_off] : d;" in s
    # no null test in forecast: nothing asked of the host; null_tests tests pointers into `in`
    assert "requires" not in res.manifests["forecast"]
    assert res.manifests["null_tests"]["requires"] == [{"param": "in", "not_null": True}]
    notes = [d for d in res.diagnostics if d.code == "CP907" and d.severity == "warning" and "not null" in d.message]
    assert [(d.row, d.column) for d in notes] == [(33, 9)] and "`in`" in notes[0].message


def test_opencl_null_pointer_is_c_null():
    src = translate_file(SRC, "opencl", validate=False).text
    assert "__global float* b_fc = steps ? fc + i * steps : 0;" in src
    assert "__global const float* q = 0;" in src and "q = 0;" in src
    assert "if (p != 0 && q != 0)" in src and "return p != 0 ? *p : d;" in src


def test_vulkan_host_refuses_a_null_parameter_the_translation_requires():
    man = {"requires": [{"param": "in", "not_null": True}]}
    check_launch_contract(man, (64, 1, 1), {"in": np.zeros(4, np.float32)})
    with pytest.raises(CompileError, match="requires `in` not null"):
        check_launch_contract(man, (64, 1, 1), {"out": np.zeros(4, np.float32)})


def test_glsl_null_test_of_a_parameter_itself_is_constant_under_the_contract(tmp_path):
    code = ("__global__ void k(float *out, const float *bias, int n) {\n    int i = threadIdx.x;\n"
            "    out[i] = bias ? bias[i] : 0.0f;\n}\n")
    res = translate_text(tmp_path, "glsl", code)
    assert "out_[i] = true ? bias[i] : 0.0;" in res.shaders["k"]
    assert res.manifests["k"]["requires"] == [{"param": "bias", "not_null": True}]
    src = translate_text(tmp_path, "opencl", code).text
    assert "out[i] = bias != 0 ? bias[i] : 0.0f;" in src


NULL_ARG = ("__device__ float f(const float *p) { return p ? *p : 0.0f; }\n"
            "__global__ void k(float *out) {\n    out[0] = f(nullptr);\n}\n")


def test_glsl_refuses_a_null_pointer_passed_to_a_device_function(tmp_path):
    # nothing tells which array it stands for (GLSL binds an array to every pointer)
    assert_refused_at(tmp_path, "glsl", NULL_ARG, 3, "a null pointer", column=16)


def test_opencl_passes_a_null_pointer_to_a_device_function(tmp_path):
    # C has null pointers: the callee's own test sees it (values: tests/test_breadth_nullarg.py)
    src = translate_text(tmp_path, "opencl", NULL_ARG).text
    assert "out[0] = f_p(0);" in src and "return p != 0 ? *p : 0.0f;" in src


REFUSED = [
    # a pointer that is only ever null
    ("__global__ void k(float *out) {\n    float *p = nullptr;\n    out[0] = p ? 1.0f : 0.0f;\n}\n", (2, 5),
     "the pointer `p` that is always null"),
]


@pytest.mark.parametrize("target", ["glsl", "opencl"])
@pytest.mark.parametrize("code,at,what", REFUSED)
def test_null_pointers_that_stay_refused(tmp_path, target, code, at, what):
    assert_refused_at(tmp_path, target, code, at[0], what, column=at[1])


@pytest.mark.parametrize("target", ["glsl", "opencl"])
def test_null_choice_between_arrays_stays_refused(tmp_path, target):
    code = ("__global__ void k(float *a, float *b, int f) {\n    float *p = f ? a : (f > 1 ? b : nullptr);\n"
            "    p[0] = 1.0f;\n}\n")
    assert_refused_at(tmp_path, target, code, 2, "selects between pointers into different arrays", column=16)


def test_opencl_kernel_sees_a_null_parameter_the_host_passes(tmp_path):
    """OpenCL: clSetKernelArg with no buffer gives the kernel a null pointer, which its null tests see."""
    from porter.translate.kernel.validate import opencl_context
    ctx = opencl_context()
    if ctx is None:
        pytest.skip("no OpenCL platform")
    import pyopencl as cl
    code = ("__global__ void k(float *out, const float *bias = nullptr, int n = 0) {\n    int i = threadIdx.x;\n"
            "    const float *b = bias ? bias + i : nullptr;\n    out[i] = b != nullptr ? *b : -1.0f;\n}\n")
    src = translate_text(tmp_path, "opencl", code).text
    k = cl.Program(ctx, src).build().k
    q = cl.CommandQueue(ctx)
    mf = cl.mem_flags
    bias = np.arange(8, dtype=np.float32) + 1
    for given, want in ((None, np.full(8, -1, np.float32)), (bias, bias)):
        out = np.zeros(8, np.float32)
        ob = cl.Buffer(ctx, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=out)
        bb = None if given is None else cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=given)
        k.set_args(ob, bb, np.int32(8))
        cl.enqueue_nd_range_kernel(q, k, (8,), (8,))
        cl.enqueue_copy(q, out, ob)
        q.finish()
        assert np.array_equal(out, want), (given, out)

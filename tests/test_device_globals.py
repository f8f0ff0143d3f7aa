"""File-scope `__device__` variables and host-set `__constant__` data as buffers (issue 14 item 3, HeCBench rsmt's
work-list counters): GLSL storage buffers after the kernel's bindings, OpenCL `__global` parameters after the
kernel's own (device functions take them as extra parameters), listed in the manifest's "device_globals" with
type, count, initial value and binding / index; verified on lavapipe (subgroups 4/8/16) and PoCL."""
import os

import pytest

from porter.translate.api import translate_file
from porter.translate.kernel.validate import tool
from kernel_helpers import expected_runs, failures, ran_keys, run_spec

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIX = os.path.join(ROOT, "tests", "fixtures", "breadth", "globals")
SRC = os.path.join(FIX, "globals.cu")


def test_glsl_buffers_and_manifest():
    res = translate_file(SRC, "glsl", validate=tool("glslangValidator") is not None)
    assert set(res.shaders) == {"collect", "process"}, res.failed_kernels
    c = res.shaders["collect"]
    assert "layout(std430, set = 0, binding = 2) buffer wlsize_buf { int wlsize[]; };" in c
    assert "atomicAdd(wlsize[0], 1)" in c          # in the device function: the buffer is global in GLSL
    p = res.shaders["process"]
    assert "if (j >= wlsize[0])" in p and "coef[3]" in p and "+ bias[0];" in p
    assert "readonly buffer coef_buf { float coef[]; };" in p
    man = res.manifests["process"]
    dev = {g["name"]: g for g in man["device_globals"]}
    # declaration order, after the kernel's three buffers
    assert [g["name"] for g in man["device_globals"]] == ["wlsize", "hist", "bias", "coef"]
    assert dev["wlsize"] == {"name": "wlsize", "type": "int", "count": 1, "array": False, "init": [0],
                             "constant": False, "host_sets": False, "bytes": 4, "binding": 3}
    assert dev["hist"]["count"] == 8 and dev["hist"]["init"] == [0] * 8 and dev["hist"]["binding"] == 4
    assert dev["bias"]["init"] == [0.5]
    assert dev["coef"]["constant"] and dev["coef"]["host_sets"] and dev["coef"]["binding"] == 6
    bufs = {b["name"]: b for b in man["buffers"]}
    assert bufs["hist"]["device_global"] and bufs["hist"]["access"] == "readwrite" and "device_global" not in bufs["in"]
    assert {p["name"] for p in man["params"]} == {"in", "wl", "out"}      # not kernel parameters


def test_opencl_parameters_and_manifest():
    res = translate_file(SRC, "opencl", validate=False)
    assert not res.failed_kernels, res.failed_kernels
    t = res.text
    assert "void push(__global int* wl, int i, __global int* wlsize) {" in t
    assert "push(wl, i, wlsize);" in t and "    __global int* wlsize)\n{" in t
    assert "__global const int* wlsize,\n    __global int* hist,\n    __global const float* bias,\n" \
           "    __global const float* coef)" in t
    assert "if (j >= *wlsize)" in t and "atomic_add(&hist[i % 8], 1);" in t
    man = res.manifests["process"]
    assert [(g["name"], g["index"]) for g in man["device_globals"]] == [("wlsize", 3), ("hist", 4), ("bias", 5),
                                                                        ("coef", 6)]
    assert [p["kind"] for p in man["params"]][3:] == ["device_global"] * 4


@pytest.mark.parametrize("target", ["glsl", "opencl"])
def test_refusals(tmp_path, target):
    src = tmp_path / "r.cu"
    src.write_text("__device__ float grid2[4][4];\n"                                       # 1
                   "__device__ bool flag;\n"                                               # 2
                   "__device__ int start = 3;\n"                                           # 3
                   "__global__ void two_d(float *o) { o[0] = grid2[1][2]; }\n"             # 4
                   "__global__ void boolean(float *o) { if (flag) o[0] = 1.0f; }\n"        # 5
                   "__global__ void fine(int *o) { o[threadIdx.x] = start + atomicAdd(&start, 1); }\n")  # 6
    res = translate_file(str(src), target, validate=False)
    assert set(res.failed_kernels) == {"two_d", "boolean"}, res.failed_kernels
    by = {k: next(d for d in res.diagnostics if d.code == "CP907" and f"`{k}`" in d.message)
          for k in ("two_d", "boolean")}
    assert by["two_d"].row == 4 and "multi-dimensional or unsized device array `grid2`" in by["two_d"].message
    assert by["boolean"].row == 5 and "device variable `flag` of `bool`" in by["boolean"].message
    man = res.manifests["fine"]
    assert man["device_globals"][0]["init"] == [3] and man["device_globals"][0]["name"] == "start"


def test_constants_still_fold(tmp_path):
    # an initialised __constant__ array the host never writes stays a constant of the program, no buffer
    src = tmp_path / "c.cu"
    src.write_text("__constant__ float w[3] = {1.0f, 2.0f, 3.0f};\n__constant__ float h[2] = {1.0f, 2.0f};\n"
                   "__global__ void k(float *o) { o[threadIdx.x] = w[threadIdx.x % 3] + h[0]; }\n"
                   "int main() { float v[2] = {5, 6}; cudaMemcpyToSymbol(h, v, sizeof(v)); }\n")
    res = translate_file(str(src), "glsl", validate=False)
    man = res.manifests["k"]
    # `h` is written by the host: a buffer, not its initialiser folded into the shader
    assert [g["name"] for g in man["device_globals"]] == ["h"] and man["device_globals"][0]["host_sets"]
    assert "const float w[3]" in res.shaders["k"] and "h[0]" in res.shaders["k"]


def test_fixture_matches_numpy_on_lavapipe_and_pocl(monkeypatch):
    results = run_spec(monkeypatch, os.path.join(FIX, "verify_spec.py"))
    assert not failures(results), failures(results)
    assert ran_keys(results) == expected_runs(("collect", "process"))


def test_host_refuses_a_spec_without_the_variable(monkeypatch):
    """A spec that leaves a device variable out, or puts it at another argument than the manifest's, is an error."""
    results = run_spec(monkeypatch, os.path.join(FIX, "wrong_signature_spec.py"))
    by = {(r.case, r.target): r for r in results if r.variant in ("sg4", "-")}
    for key in [("missing", "vulkan"), ("missing", "opencl"), ("moved", "opencl")]:
        assert by[key].status != "pass" and "device variable 'wlsize'" in by[key].message, (key, by[key].message)

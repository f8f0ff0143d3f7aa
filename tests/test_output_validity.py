"""Issue 10 item 4: every GLSL / OpenCL output is valid for its target or refused. Work-group sizes of 0 or past
the limits, zero-length arrays and shared memory past the limit are CP907 refusals; `translate` validates what
it writes whenever glslangValidator / an OpenCL platform is installed, and a rejection is exit 1 with the
validator's message and no file written."""
import glob
import os
import subprocess
import sys

import pytest

from porter.translate.api import translate_file
from porter.translate.kernel.validate import TEST_REJECT_ENV, opencl_context, tool

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TARGETS = ("glsl", "opencl")
HAVE_GLSLANG = tool("glslangValidator") is not None
HAVE_CL = opencl_context() is not None
needs_validators = pytest.mark.skipif(not (HAVE_GLSLANG and HAVE_CL),
                                      reason="glslangValidator (glslang-tools) and PoCL (pyopencl) needed")

SHAPES = """\
__global__ void zero(float *a) { a[threadIdx.x] = 0.0f; }
__global__ void wide(float *a) { a[threadIdx.x] = 1.0f; }
__global__ void square(float *a) { a[threadIdx.y * 64 + threadIdx.x] = 2.0f; }
__global__ void deep(float *a) { a[threadIdx.z] = 3.0f; }
__global__ void fine(float *a) { a[threadIdx.x] = 4.0f; }
void host(float *d) {
    zero<<<1, 0>>>(d);
    wide<<<1, 2048>>>(d);
    square<<<1, dim3(64, 32)>>>(d);
    deep<<<1, dim3(1, 1, 128)>>>(d);
    fine<<<1, 1024>>>(d);
}
"""

ARRAYS = """\
__global__ void zero_shared(float *a) {
    __shared__ float s[0];
    a[threadIdx.x] = 1.0f;
}
__global__ void zero_local(float *a) {
    float tmp[0];
    a[threadIdx.x] = 2.0f;
}
__global__ void too_much_shared(float *a) {
    __shared__ float big[16384];
    big[threadIdx.x] = a[threadIdx.x];
    __syncthreads();
    a[threadIdx.x] = big[255 - threadIdx.x];
}
__global__ void some_shared(float *a) {
    __shared__ float mid[5120];
    mid[threadIdx.x] = a[threadIdx.x];
    __syncthreads();
    a[threadIdx.x] = mid[255 - threadIdx.x];
}
__global__ void dynamic_shared(float *a) {
    extern __shared__ float dyn[];
    dyn[threadIdx.x] = a[threadIdx.x];
    __syncthreads();
    a[threadIdx.x] = dyn[255 - threadIdx.x];
}
void host(float *d) {
    too_much_shared<<<1, 256>>>(d);
    some_shared<<<1, 256>>>(d);
    dynamic_shared<<<1, 256, 60000>>>(d);
}
"""


def cuport(*args, env_extra=None):
    env = dict(os.environ, PYTHONPATH=ROOT)
    env.pop(TEST_REJECT_ENV, None)
    env.update(env_extra or {})
    return subprocess.run([sys.executable, "-m", "porter", *args], env=env, capture_output=True, text=True,
                          timeout=300)


def refusals(res):
    return {d.extra.get("kernel"): (d.row, d.message) for d in res.diagnostics if d.code == "CP907"
            and "not translated" in d.message}


def written(res):
    return set(res.shaders) if res.target == "glsl" else set(res.manifests)


@pytest.mark.parametrize("target", TARGETS)
def test_work_group_sizes_outside_the_limits_are_refused(target, tmp_path):
    api = {"glsl": "Vulkan", "opencl": "OpenCL"}[target]
    res = translate_file("shapes.cu", target, text=SHAPES, validate=True)
    got = refusals(res)
    assert set(got) == {"zero", "wide", "square", "deep"} and written(res) == {"fine"}
    assert got["zero"] == (1, "kernel `zero` not translated: work-group size 0 x 1 x 1 (launch at line 7): "
                              "every dimension must be at least 1")
    assert got["wide"] == (2, f"kernel `wide` not translated: work-group size 2048 x 1 x 1 (launch at line 8) "
                              f"is past the {api} limits (x = 2048 > 1024)")
    assert got["square"][0] == 3 and "(2048 invocations > 1024)" in got["square"][1]
    assert got["deep"][0] == 4 and "(z = 128 > 64)" in got["deep"][1]
    assert all(res.failed_kernels[k].startswith("CP907: ") for k in got)
    src = tmp_path / "shapes.cu"
    src.write_text(SHAPES)
    r = cuport("translate", "--to", target, str(src), "-o", str(tmp_path / "out"))
    assert r.returncode == 1 and "Traceback" not in r.stderr
    assert f"shapes.cu:1:17: CP907 [error] kernel `zero` not translated" in r.stderr
    files = sorted(os.listdir(tmp_path / "out"))
    assert files == (["fine.comp"] if target == "glsl" else ["shapes.cl"])
    if target == "opencl":
        text = (tmp_path / "out" / "shapes.cl").read_text()
        assert "void fine" in text and "void zero" not in text and "void wide" not in text


@pytest.mark.parametrize("target", TARGETS)
def test_zero_length_and_oversized_arrays(target):
    api = {"glsl": "Vulkan", "opencl": "OpenCL"}[target]
    res = translate_file("arrays.cu", target, text=ARRAYS, validate=True)
    got = refusals(res)
    assert set(got) == {"zero_shared", "zero_local", "too_much_shared", "dynamic_shared"}
    assert got["zero_shared"] == (2, f"kernel `zero_shared` not translated: zero-length shared array `s`: "
                                     f"{api} has no arrays of length 0")
    assert got["zero_local"] == (6, f"kernel `zero_local` not translated: zero-length array `tmp`: {api} has no "
                                    f"arrays of length 0")
    assert got["too_much_shared"][0] == 9 and "65536 bytes of shared memory (65536 static + 0 dynamic) are past " \
        f"the {api} limit of 49152" in got["too_much_shared"][1]
    assert "60000 bytes of shared memory (0 static + 60000 dynamic)" in got["dynamic_shared"][1]
    assert written(res) == {"some_shared"}
    # 20 KiB: past Vulkan's guaranteed 16 KiB (a warning naming the limit), within OpenCL's guaranteed 32 KiB
    warn = [d for d in res.diagnostics if d.code == "CP907" and d.severity == "warning" and "20480 bytes" in d.message]
    if target == "glsl":
        assert len(warn) == 1 and "maxComputeSharedMemorySize >= 20480" in warn[0].message
    else:
        assert not warn
    if HAVE_GLSLANG and HAVE_CL:
        assert all(v["ok"] for v in res.extra["validation"].values())


@needs_validators
@pytest.mark.parametrize("target", TARGETS)
def test_validator_rejection_is_an_error_and_nothing_is_written(target, tmp_path):
    src = tmp_path / "k.cu"
    src.write_text("__global__ void good(float *a) { a[threadIdx.x] = 1.0f; }\n"
                   "__global__ void other(float *a) { a[threadIdx.x] = 2.0f; }\n")
    out = tmp_path / "out"
    # validation is on by default: no --validate flag
    r = cuport("translate", "--to", target, str(src), "-o", str(out), env_extra={TEST_REJECT_ENV: "good"})
    assert r.returncode == 1 and "Traceback" not in r.stderr
    line = [ln for ln in r.stderr.splitlines() if "CP907" in ln]
    assert line and line[0].startswith(f"{src}:1:17: CP907 [error] kernel `good` not translated: its "
                                       f"{target.upper()} output was rejected: ")
    if target == "glsl":
        assert "glslangValidator failed: ERROR: good.comp:" in line[0]
        assert sorted(os.listdir(out)) == ["other.comp"]
    else:
        assert "OpenCL build failed" in line[0]
        assert not out.exists() or not os.listdir(out)          # one file for all kernels: none written
    # --no-validate skips the check (the hook acts only inside validation): written, exit 0
    r = cuport("translate", "--to", target, str(src), "-o", str(tmp_path / "nv"), "--no-validate",
               env_extra={TEST_REJECT_ENV: "good"})
    assert r.returncode == 0, r.stderr
    assert os.listdir(tmp_path / "nv")


@needs_validators
@pytest.mark.parametrize("target", TARGETS)
def test_examples_translate_validated_exit_zero(target, tmp_path):
    """Negative case: every example translates, is checked by the validator (on by default), exits 0."""
    for path in sorted(glob.glob(os.path.join(ROOT, "examples", "*", "*.cu"))):
        res = translate_file(path, target, validate=True)
        # (a kernel refused for a warp-size hazard, CP1xx, is another rule's business)
        assert not [k for k, why in res.failed_kernels.items() if not why.startswith("CP1")], path
        assert not res.extra["rejected_kernels"] and all(v["ok"] for v in res.extra["validation"].values()), path
        assert res.extra["validation"] or not written(res), path
        assert not [d for d in res.diagnostics if d.code == "CP000"], path
    saxpy = os.path.join(ROOT, "examples", "saxpy", "saxpy.cu")
    r = cuport("translate", "--to", target, saxpy, "--validate", "-o", str(tmp_path / "o"))
    assert r.returncode == 0, r.stderr
    assert "validation ok" in r.stderr


PER_WARP = """\
#define WARPS 8
__global__ void per_warp(float *a) {
    __shared__ float rows[WARPS][1024];
    int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    for (int j = lane; j < 1024; j += 32) rows[warp][j] = a[j];
    __syncwarp();
    a[blockIdx.x * blockDim.x + threadIdx.x] = rows[warp][1023 - lane];
}
void launch(float *a) { per_warp<<<4, WARPS * 32>>>(a); }
"""


@pytest.mark.parametrize("target, lanes, warps", [("glsl", 4, 64), ("opencl", 1, 256)])
def test_shared_limit_names_the_per_warp_arrays_sized_for_narrow_subgroups(target, lanes, warps):
    # 32 KiB in CUDA; one row per warp of the narrowest subgroup is past the limit: the refusal says why
    api = {"glsl": "Vulkan", "opencl": "OpenCL"}[target]
    res = translate_file("per_warp.cu", target, text=PER_WARP, validate=True)
    row, msg = refusals(res)["per_warp"]
    assert row == 2
    assert f"{warps * 4096} bytes of shared memory ({warps * 4096} static + 0 dynamic) are past the {api} limit" in msg
    assert f"(`rows` [8][1024] -> [{warps}][1024]) have a slot for each warp of the narrowest subgroup {api} " \
        f"allows ({lanes} lane(s)); at 32-lane warps the kernel needs 32768 bytes" in msg


def test_shared_limit_without_per_warp_arrays_has_no_warp_note():
    res = translate_file("arrays.cu", "opencl", text=ARRAYS, validate=True)
    assert "per-warp" not in refusals(res)["too_much_shared"][1]

"""Vulkan on lavapipe at subgroup sizes 4, 8 and 16 (LP_NATIVE_VECTOR_WIDTH per worker process)."""
import os

import pytest

from porter.verify.backends import vulkan
from verify_fixtures.helpers import LAVAPIPE_ICD, by_key, run

ok, why = vulkan.available()
pytestmark = pytest.mark.skipif(not ok or not os.path.exists(LAVAPIPE_ICD), reason=why or "no lavapipe")


@pytest.fixture(autouse=True)
def lavapipe(monkeypatch):
    monkeypatch.setenv("VK_ICD_FILENAMES", LAVAPIPE_ICD)


@pytest.fixture(scope="module")
def results():
    os.environ.setdefault("VK_ICD_FILENAMES", LAVAPIPE_ICD)
    return by_key(run(["saxpy", "reduce_offset16", "reduce_subgroup_half", "reduce_spec_sg", "reduce_spec_unset",
                       "reduce_spec_32"], ["vulkan"], subgroups=[4, 8, 16]))


@pytest.mark.parametrize("sg", [4, 8, 16])
def test_queried_subgroup_size_is_the_requested_one(results, sg):
    r = results[("saxpy", "vulkan", f"sg{sg}", 1000)]
    assert r.subgroup_size == sg and "llvmpipe" in r.device
    assert r.status == "pass", r.message
    assert r.kernel_ms is not None and r.kernel_ms > 0


@pytest.mark.parametrize("sg", [4, 8, 16])
def test_shuffle_offsets_from_16_fail_below_32_lanes(results, sg):
    r = results[("reduce_offset16", "vulkan", f"sg{sg}", 1000)]
    assert r.status == "FAIL"
    assert "out: 4 of 4 elements differ" in r.message and "first at [0]" in r.message


@pytest.mark.parametrize("sg", [4, 8, 16])
def test_shuffle_offsets_from_subgroup_size_pass(results, sg):
    r = results[("reduce_subgroup_half", "vulkan", f"sg{sg}", 1000)]
    assert r.status == "pass", r.message


def test_default_subgroup_sizes_on_lavapipe_are_4_8_16():
    assert [v.subgroup for v in vulkan.variants(None)] == [4, 8, 16]


@pytest.mark.parametrize("sg", [4, 8, 16])
def test_subgroup_size_spec_constant_is_set_from_the_device_and_pinned(results, sg):
    """The translated reduction with spec constant 4 = subgroup size: the host sets it to the device's size
    (and requires that size for the pipeline); a host that leaves it at 0 gets gl_SubgroupSize, still right."""
    r = results[("reduce_spec_sg", "vulkan", f"sg{sg}", 1000)]
    assert r.status == "pass", r.message
    # lavapipe allows 32 subgroups a group when one is required: 256 threads at 4 lanes are 64, not pinned
    assert r.info["subgroup_pinned"] is (sg >= 8) and r.subgroup_size == sg
    r = results[("reduce_spec_unset", "vulkan", f"sg{sg}", 1000)]
    assert r.status == "pass", r.message


@pytest.mark.parametrize("sg", [4, 8, 16])
def test_subgroup_size_spec_constant_set_wrong_fails(results, sg):
    # the same shader with the constant left at 32 by a manifest without "value": the loops follow the constant
    r = results[("reduce_spec_32", "vulkan", f"sg{sg}", 1000)]
    assert r.status == "FAIL" and "out: 4 of 4 elements differ" in r.message, r.message


def test_a_grid_beyond_the_device_limit_is_skipped_with_the_reason():
    """lavapipe allows 65535 work groups per dimension (NVIDIA 2^31-1 in x): an H100-sized bench launch cannot run
    there whatever the shader, so that size is skipped with the reason instead of failing the translation."""
    from porter.verify.backends import Skip
    from porter.verify.backends.vulkan import _check_launch

    class Ctx:
        max_invocations, max_group_size, max_group_count = 256, [256, 256, 64], [65535, 65535, 65535]
    _check_launch(Ctx, (65535, 1, 1), (256, 1, 1))
    with pytest.raises(Skip, match=r"maxComputeWorkGroupCount"):
        _check_launch(Ctx, (5242880, 1, 1), (256, 1, 1))
    with pytest.raises(Exception, match=r"workgroup limits") as e:
        _check_launch(Ctx, (4, 1, 1), (512, 1, 1))          # a block too big is the translation's problem: FAIL
    assert not isinstance(e.value, Skip)


def test_a_failure_on_lavapipe_with_loops_names_its_loop_limit():
    # lavapipe silently ends a shader invocation's loops after 65,535 iterations in all (HeCBench kmeans): a failing
    # shader with loops says the failure may be the device's; other devices and loop-free shaders say nothing
    from porter.verify.worker import lavapipe_hint
    loops = "void main() {\n    for (int k = 0; k < n; ++k) { s += x[k]; }\n}\n"
    hint = lavapipe_hint({"lavapipe": True}, loops)
    assert "65,535 iterations" in hint and "another device" in hint
    assert lavapipe_hint({"lavapipe": False}, loops) == ""
    assert lavapipe_hint({"lavapipe": True}, "void main() {\n    y[0] = x[0];\n}\n") == ""


REV = """__global__ void rev(const float *x, float *y, int n) {
  extern __shared__ float s[];
  for (int i = threadIdx.x; i < n; i += blockDim.x) s[i] = x[i];
  __syncthreads();
  for (int i = threadIdx.x; i < n; i += blockDim.x) y[i] = s[n - 1 - i];
}
"""


def _verify_rev(tmp_path, case_args: str, targets: str):
    """`cuport verify` of a spec running REV (dynamic shared memory) with `case_args` added to its Case."""
    import json
    import subprocess
    import sys
    (tmp_path / "rev.cu").write_text(REV)
    (tmp_path / "verify_spec.py").write_text(f"""from porter.verify.spec import Case
KERNELS = [Case(source="rev.cu", kernel="rev", signature="x: f32[n] in, y: f32[n] out, n: i32",
                grid="1", block="64", {case_args}, reference=lambda x, n: {{"y": x[::-1].copy()}})]
""")
    p = subprocess.run([sys.executable, "-m", "porter", "verify", str(tmp_path), "--targets", targets,
                        "--subgroup-sizes", "8", "--timeout", "60", "-j", "1", "--output-format", "json"],
                       capture_output=True, text=True, env={**os.environ, "VK_ICD_FILENAMES": LAVAPIPE_ICD})
    return p, json.loads(p.stdout)["results"]


def test_dynamic_shared_memory_sized_at_run_time_gets_the_launch_bytes(tmp_path):
    # the SHARED_BYTES specialization constant defaulted to 1024 bytes when the launch's bytes were not a constant:
    # tridiagonal's `(system_size + 1) * 5 * sizeof(float)` read past its shared array (zeros on NVIDIA, a hang on
    # lavapipe). The host now sets it from the case's shared_mem at each size.
    p, results = _verify_rev(tmp_path, 'shared_mem="n * 4", sizes=[{"n": 100}, {"n": 2000}]', "vulkan")
    rows = {r["sizes"]["n"]: r["status"] for r in results}
    assert rows == {100: "pass", 2000: "pass"}, p.stdout[-2000:] + p.stderr[-2000:]


@pytest.mark.skipif(not __import__("porter.verify.backends.opencl", fromlist=["x"]).available()[0],
                    reason="needs OpenCL (PoCL)")
def test_dynamic_shared_memory_without_shared_mem_in_the_case_is_refused(tmp_path):
    # CUDA launches such a case with 0 bytes of dynamic shared memory; the translations used to get a default
    # (Vulkan's SHARED_BYTES 1024, OpenCL's local argument of one element) and could pass where CUDA cannot run
    p, results = _verify_rev(tmp_path, 'sizes=[{"n": 100}]', "vulkan,opencl")
    rows = {r["target"]: (r["status"], r["message"]) for r in results}
    want = ("FAIL", "spec: rev declares `extern __shared__` memory, but the case gives no shared_mem (CUDA would "
                    "launch it with 0 bytes): give shared_mem= the launch's third argument")
    assert rows == {"vulkan": want, "opencl": want} and p.returncode == 1, p.stdout[-2000:] + p.stderr[-2000:]

"""CUDA and HIP-on-NVIDIA through NVRTC: only on a machine with an NVIDIA GPU and CuPy."""
import pytest

from porter.verify.runner import Runner
from porter.verify.spec import find_specs
from verify_fixtures.helpers import by_key, run

pytestmark = pytest.mark.gpu


def test_cuda_and_hip_nvidia_run_saxpy():
    res = by_key(run(["saxpy"], ["cuda", "hip-nvidia"]))
    for target in ("cuda", "hip-nvidia"):
        for n in (1000, 4096):
            r = res[("saxpy", target, "-", n)]
            assert r.status == "pass", r.message
            assert r.subgroup_size == 32


def test_seed_sgemm_is_an_expected_failure_and_the_fixed_one_passes():
    cases = [c for _, cs in find_specs(["examples/sgemm"]) for c in cs]
    results = Runner(["cuda"], timeout=120).run(cases)
    status = {(r.case, (r.sizes or {}).get("M")): r.status for r in results}
    assert status[("sgemm_optimized", 128)] == "xfail"
    assert all(s == "pass" for (case, _), s in status.items() if case == "sgemm_fixed"), results


def test_cuda_original_binds_file_scope_device_variables():
    # the spec lists the fixture's __device__ counters / __constant__ table after the kernel's parameters (as the
    # translations' manifests do); the CUDA original must read and write the module's own variables, not run
    # without them (it returned the spec's zeros and FAILED before)
    cases = [c for _, cs in find_specs(["tests/fixtures/breadth/globals"]) for c in cs]
    results = Runner(["cuda", "hip-nvidia"], timeout=120).run(cases)
    ran = [(r.case, r.target, r.status, r.message) for r in results if r.status != "skipped"]
    assert ran and all(s == "pass" for _c, _t, s, _m in ran), ran


def test_cuda_original_gets_math_h_constants():
    # device_code() blanks #include lines and NVRTC has no <math.h>: INFINITY / NAN come as defines (the cxx
    # fixture's `-INFINITY` failed to compile on the cuda target before)
    cases = [c for _, cs in find_specs(["tests/fixtures/breadth/cxx"]) for c in cs]
    results = Runner(["cuda"], timeout=120).run(cases)
    ran = [(r.case, r.status, r.message) for r in results if r.status != "skipped"]
    assert ran and all(s == "pass" for _c, s, _m in ran), ran

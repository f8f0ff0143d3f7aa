"""HIP for AMD, compile-only with Debian's hipcc (gfx90a wave64 by default here)."""
import pytest

from porter.verify.backends import hip_amd
from verify_fixtures.helpers import run

ok, why = hip_amd.available()
pytestmark = pytest.mark.skipif(not ok, reason=why)


@pytest.fixture(autouse=True)
def only_gfx90a(monkeypatch):
    monkeypatch.setenv("CUPORT_HIP_ARCHS", "gfx90a")


def test_tiny_kernel_compiles_for_gfx90a_with_resource_usage():
    (r,) = run(["saxpy"], ["hip-amd"])
    assert (r.status, r.variant, r.sizes) == ("pass", "gfx90a/w64", None), r.message
    assert r.info["wave_size"] == 64 and r.info["vgprs"] > 0 and "lds_bytes" in r.info


def test_compile_error_fails_its_case_with_the_compiler_message():
    (r,) = run(["saxpy_broken"], ["hip-amd"])
    assert r.status == "FAIL"
    assert r.message.startswith("compile error: hipcc --offload-arch=gfx90a: kernel.hip:5:12: error:")
    assert "undefined_function" in r.message

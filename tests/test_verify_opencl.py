"""OpenCL on PoCL (CPU): a hand-written translation runs and matches NumPy; a wild write is a crash."""
import pytest

from porter.verify.backends import opencl
from verify_fixtures.helpers import by_key, run

ok, why = opencl.available()
pytestmark = pytest.mark.skipif(not ok, reason=why)


def test_saxpy_on_pocl_and_segfault_is_a_crashed_case():
    res = by_key(run(["saxpy", "saxpy_segv"], ["opencl"]))
    for n in (1000, 4096):
        r = res[("saxpy", "opencl", "-", n)]
        assert r.status == "pass", r.message
        assert "Portable Computing Language" in r.device or r.device
    crashed = res[("saxpy_segv", "opencl", "-", 1000)]
    assert crashed.status == "crash" and "SIGSEGV" in crashed.message
    # the worker died on the first size; a fresh one ran the second
    assert res[("saxpy_segv", "opencl", "-", 4096)].status == "crash"

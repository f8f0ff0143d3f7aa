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
    return by_key(run(["saxpy", "reduce_offset16", "reduce_subgroup_half"], ["vulkan"], subgroups=[4, 8, 16]))


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

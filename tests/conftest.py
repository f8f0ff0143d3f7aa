import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURES = os.path.join(ROOT, "tests", "fixtures")

# rule bugs must fail tests instead of being printed and skipped
sys._cuport_raise = True


def pytest_collection_modifyitems(config, items):
    try:
        import cupy  # noqa: F401
        has_gpu = cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:
        has_gpu = False
    if has_gpu:
        return
    skip = pytest.mark.skip(reason="needs an NVIDIA GPU with CuPy")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)

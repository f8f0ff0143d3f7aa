"""Every example and fixture keeps its lint findings, --fix result and hip/glsl/opencl translations
(tests/goldens/make.py writes them; a change meant to alter one regenerates it and says why in the commit)."""
import importlib.util
import os

import pytest

_spec = importlib.util.spec_from_file_location(
    "goldens_make", os.path.join(os.path.dirname(__file__), "goldens", "make.py"))
goldens = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(goldens)

INPUTS = goldens.inputs()


def test_every_input_has_a_golden():
    assert len(INPUTS) > 100
    missing = [r for r in INPUTS if goldens.load(r) is None]
    assert not missing, f"no golden for {missing}: run tests/goldens/make.py"


@pytest.mark.parametrize("rel", INPUTS)
def test_outputs_match_golden(rel):
    want = goldens.load(rel)
    if want is None:
        pytest.fail(f"no golden for {rel}: run tests/goldens/make.py")
    got = goldens.compute(rel)
    for key in ("lint", "fix", "hip", "glsl", "opencl"):
        assert got[key] == want[key], f"{rel}: {key} differs from tests/goldens/out/{rel}.json"

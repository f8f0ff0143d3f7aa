"""Shared by the GLSL / OpenCL translator tests (test_breadth_*, test_half, test_device_globals, test_opencl_scope,
test_subgroup_layout): translate a text, find its refusal, and run a fixture's verify spec on the CPU backends
(lavapipe at subgroups 4/8/16 and PoCL), skipping where a backend is missing."""
import os

import pytest

from porter.translate.api import translate_file
from porter.translate.kernel.validate import opencl_context, tool

LAVAPIPE_ICD = "/usr/share/vulkan/icd.d/lvp_icd.x86_64.json"
SUBGROUPS = (4, 8, 16)


def can_validate(target):
    return tool("glslangValidator") is not None if target == "glsl" else opencl_context() is not None


def outputs(res):
    """The kernels a translation wrote."""
    return set(res.shaders) if res.target == "glsl" else set(res.manifests)


def translate_text(tmp_path, target, code, name="k.cu", **options):
    src = tmp_path / name
    src.write_text(code)
    return translate_file(str(src), target, validate=False, **options)


def refusal(res, code="CP907"):
    """The first error of `code` (a kernel refused at its construct)."""
    d = [d for d in res.diagnostics if d.code == code and d.severity == "error"]
    assert d, [x.message for x in res.diagnostics]
    return d[0]


def assert_refused_at(tmp_path, target, code, line, what, kernel="k", column=None):
    """`code` translated for `target`: kernel `kernel` is left out and refused (CP907) at `line` (and `column`, when
    given), saying `what`."""
    res = translate_text(tmp_path, target, code)
    assert kernel not in outputs(res)
    d = refusal(res)
    assert what in d.message and d.row == line and column in (None, d.column), (d.row, d.column, d.message)


def run_spec(monkeypatch, spec_path, targets=("vulkan", "opencl"), subgroups=SUBGROUPS):
    """Every case of a verify spec on lavapipe (each subgroup size) and / or PoCL: the runner's results."""
    missing = [what for what, gone in (("lavapipe", "vulkan" in targets and not os.path.exists(LAVAPIPE_ICD)),
                                       ("glslang", "vulkan" in targets and tool("glslangValidator") is None),
                                       ("PoCL", "opencl" in targets and opencl_context() is None)) if gone]
    if missing:
        pytest.skip(" / ".join(missing) + " not available")
    if "vulkan" in targets:
        monkeypatch.setenv("VK_ICD_FILENAMES", LAVAPIPE_ICD)
    from porter.verify.runner import Runner
    from porter.verify.spec import load_spec
    return Runner(list(targets), subgroups=list(subgroups), jobs=1).run(load_spec(str(spec_path)))


def ran_keys(results):
    """(case, target, variant) of the cases that ran (every size of a case under one key)."""
    return {(r.case, r.target, r.variant) for r in results if r.status != "skipped"}


def expected_runs(kernels, targets=("vulkan", "opencl"), subgroups=SUBGROUPS):
    """The (case, target, variant) keys a full run of `kernels` has."""
    keys = set()
    for k in kernels:
        if "vulkan" in targets:
            keys |= {(k, "vulkan", f"sg{s}") for s in subgroups}
        if "opencl" in targets:
            keys.add((k, "opencl", "-"))
    return keys


def failures(results):
    """Every run that neither passed nor was skipped, each size on its own."""
    return [(r.case, r.target, r.variant, r.message) for r in results if r.status not in ("pass", "skipped")]


def assert_fixture_valid(path, target, kernels):
    """Every kernel of the fixture translated (and validated where the validator is installed), none refused."""
    res = translate_file(path, target, validate=can_validate(target))
    assert outputs(res) == set(kernels), [d.message for d in res.diagnostics]
    assert not res.failed_kernels
    if res.extra.get("validation"):
        assert all(v["ok"] for v in res.extra["validation"].values()), res.extra["validation"]


def assert_spec_passes(monkeypatch, spec_path, kernels):
    """The fixture's spec passes on lavapipe (every subgroup size) and PoCL for every kernel named."""
    results = run_spec(monkeypatch, spec_path)
    assert not failures(results), failures(results)
    want = expected_runs(kernels)
    assert want <= ran_keys(results), sorted(want - ran_keys(results))

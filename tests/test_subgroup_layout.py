"""Warp code in multi-dimensional blocks (validate._subgroup_layout): CUDA's warps run across rows; Vulkan
implementations may form subgroups per row (lavapipe does), so such kernels are translated only when each row
fills whole subgroups of any width (blockDim.x a multiple of 16). Before, the 8 x 8 kernel was written with exit 0
and summed the wrong lanes at subgroup 16."""
import os

from porter.translate.api import translate_file
from kernel_helpers import expected_runs, failures, ran_keys, run_spec, translate_text

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIX = os.path.join(ROOT, "tests", "fixtures", "subgroup_layout")


def test_row_of_8_is_refused_in_glsl():
    for target, opts in (("glsl", {}),):
        res = translate_file(os.path.join(FIX, "rows.cu"), target, validate=False, **opts)
        assert "sum_rows8" in res.failed_kernels, (target, res.failed_kernels)
        d = next(d for d in res.diagnostics if d.code == "CP907" and "sum_rows8" in d.message)
        assert d.severity == "error" and d.row == 27
        assert "8 x 8 x 1 block (launch at line 54)" in d.message and "multiple of 16" in d.message
        # the row of 64 fills whole subgroups: translated
        assert "sum_rows64" not in res.failed_kernels


def test_one_lane_opencl_warps_are_not_refused():
    res = translate_file(os.path.join(FIX, "rows.cu"), "opencl", validate=False)
    assert not res.failed_kernels, res.failed_kernels


def test_one_dimensional_warp_code_is_not_refused(tmp_path):
    res = translate_text(tmp_path, "glsl", "__global__ void k(float *o) {\n  float v = o[threadIdx.x];\n"
                         "  v += __shfl_down_sync(0xffffffff, v, 1);\n  o[threadIdx.x] = v;\n}\n"
                         "int main() { float *o; k<<<1, 128>>>(o); }\n")
    assert set(res.shaders) == {"k"}, res.failed_kernels


def test_unknown_shape_reading_y_gets_a_launch_contract(tmp_path):
    res = translate_text(tmp_path, "glsl", "__global__ void k(float *o) {\n  int t = threadIdx.y * blockDim.x + "
                         "threadIdx.x;\n  float v = o[t];\n  v += __shfl_down_sync(0xffffffff, v, 1);\n  o[t] = v;\n}\n")
    assert set(res.shaders) == {"k"}, res.failed_kernels
    assert res.manifests["k"]["requires"] == [{"block_x_multiple_of": 16,
                                               "when": "the block has more than one row (y or z > 1)"}]
    assert "blockDim.x % 16 == 0 unless the block is one row" in res.shaders["k"]
    w = [d for d in res.diagnostics if d.code == "CP907" and d.severity == "warning" and "? x ? x ? block" in d.message]
    assert w and "requires" in w[0].message


def test_rows_of_64_match_numpy_on_lavapipe(monkeypatch):
    results = run_spec(monkeypatch, os.path.join(FIX, "verify_spec.py"))
    rows64 = [r for r in results if r.case == "sum_rows64"]
    assert not failures(rows64), failures(rows64)
    assert ran_keys(rows64) == expected_runs(("sum_rows64",))


def test_host_refuses_a_launch_breaking_the_contract(monkeypatch):
    results = run_spec(monkeypatch, os.path.join(FIX, "verify_spec.py"), targets=("vulkan",), subgroups=(16,))
    by = {r.case: r for r in results}
    assert by["sum_any 32x2"].status == "pass", by["sum_any 32x2"].message
    assert by["sum_any 8x8"].status != "pass", by["sum_any 8x8"].message
    assert "launch refused" in by["sum_any 8x8"].message, by["sum_any 8x8"].message


def test_host_refuses_a_device_narrower_than_min_subgroup_size(tmp_path, monkeypatch):
    # a width-32 shuffle is right only on subgroups of 32+ lanes (manifest min_subgroup_size): lavapipe's 16-lane
    # subgroups must not run it (they computed wrong sums with exit 0 before, found on HeCBench logprob). Under a
    # thread-dependent branch (all inputs take it) it keeps the subgroups: no emulated 32-lane warps (warp32.py)
    res = translate_text(tmp_path, "glsl", "__global__ void k(float *o) {\n  float v = o[threadIdx.x];\n"
                         "  if (v >= 0.f) v += __shfl_xor_sync(0xffffffff, v, 16, 32);\n  o[threadIdx.x] = v;\n}\n"
                         "int main() { float *o; k<<<1, 64>>>(o); }\n")
    assert res.manifests["k"]["min_subgroup_size"] == 32
    (tmp_path / "verify_spec.py").write_text(
        "import numpy as np\nfrom porter.verify.spec import Case, Tol, uniform\n"
        "def ref(n, **b):\n    x = b['o'].reshape(-1, 32)\n    return {'o': (x + np.roll(x, 16, axis=1)).reshape(-1)}\n"
        "KERNELS = [Case(source='k.cu', kernel='k', signature='o: f32[n] inout', init={'o': uniform(0, 1)},\n"
        "                grid='1', block='64', reference=ref, sizes=[{'n': 64}], tol=Tol(1e-6, 1e-6))]\n")
    rs = [r for r in run_spec(monkeypatch, tmp_path / "verify_spec.py", targets=("vulkan",), subgroups=(16,))
          if r.status != "skipped"]
    assert rs and all(r.status != "pass" and "at least 32 lanes" in r.message for r in rs), \
        [(r.status, r.message) for r in rs]


def test_opencl_host_refuses_a_launch_breaking_the_contract():
    # OpenCL with cl_khr_subgroups has the same contract in its manifest; its host used not to read "requires",
    # so an 8 x 8 launch of the khr translation would have run on per-row sub-groups
    import pytest
    from porter.verify.backends import CompileError, check_launch_contract
    from porter.verify.spec import load_spec
    res = translate_file(os.path.join(FIX, "rows.cu"), "opencl", validate=False, subgroups="khr")
    assert set(res.failed_kernels) == {"sum_rows8"}, res.failed_kernels     # as in GLSL (it was translated)
    man = res.manifests["sum_any"]
    assert {"block_x_multiple_of": 16, "when": "the block has more than one row (y or z > 1)"} in man["requires"]
    cases = {c.name: c for c in load_spec(os.path.join(FIX, "verify_spec.py"))}
    check_launch_contract(man, cases["sum_any 32x2"].launch({"n": 1024})[1], {})
    with pytest.raises(CompileError, match=r"launch refused: .* multiple of 16 .* got 8 x 8 x 1"):
        check_launch_contract(man, cases["sum_any 8x8"].launch({"n": 1024})[1], {})
    try:
        from porter.verify.backends import opencl
    except ImportError:
        return
    if not opencl.available()[0]:
        return
    with pytest.raises(CompileError, match="launch refused"):   # before anything is built or run
        opencl.open_session(cases["sum_any 8x8"], "not built", man, {"n": 1024}, {"in": None, "out": None})

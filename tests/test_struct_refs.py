"""References and structs in device functions (issue 10 item 5): GLSL `in`/`inout` with copy-in/copy-out only
where it equals C++ references, OpenCL C pointers in the referent's address space; the aliasing calls GLSL
cannot express refused with CP907 at the call; outputs validated (glslang + spirv-val, PoCL) and run against
NumPy (lavapipe subgroups 4 and 8, PoCL) through tests/fixtures/struct_refs/verify_spec.py and the example."""
import os
import re
import shutil
import subprocess
import sys

import pytest

from porter.translate.api import translate_file
from porter.translate.kernel.validate import opencl_context, validate_opencl

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIX = os.path.join(ROOT, "tests", "fixtures", "struct_refs")
REFS = os.path.join(FIX, "refs.cu")
REFUSED = os.path.join(FIX, "refused.cu")
EXAMPLE = os.path.join(ROOT, "examples", "struct_refs")
LAVAPIPE_ICD = "/usr/share/vulkan/icd.d/lvp_icd.x86_64.json"

HAVE_GLSLANG = shutil.which("glslangValidator") is not None and shutil.which("spirv-val") is not None
try:
    HAVE_CL = opencl_context() is not None
except Exception:
    HAVE_CL = False
HAVE_VK = os.path.exists(LAVAPIPE_ICD)
needs_glslang = pytest.mark.skipif(not HAVE_GLSLANG, reason="glslangValidator / spirv-val not installed")
needs_cl = pytest.mark.skipif(not HAVE_CL, reason="no OpenCL platform")

_cache = {}


def tr(path, target):
    if (path, target) not in _cache:
        _cache[(path, target)] = translate_file(path, target)
    return _cache[(path, target)]


def glsl_ok(text, tmp_path, name):
    src = tmp_path / f"{name}.comp"
    src.write_text(text)
    spv = tmp_path / f"{name}.spv"
    r = subprocess.run(["glslangValidator", "-V", "--target-env", "vulkan1.1", str(src), "-o", str(spv)],
                       capture_output=True, text=True)
    assert r.returncode == 0, f"{name}: {r.stdout}{r.stderr}\n{text}"
    r = subprocess.run(["spirv-val", "--target-env", "vulkan1.1", str(spv)], capture_output=True, text=True)
    assert r.returncode == 0, f"{name}: {r.stdout}{r.stderr}"


def refusal(res, kernel):
    return [d for d in res.diagnostics if d.code == "CP907" and f"`{kernel}`" in d.message]


def line_of(path, needle):
    with open(path) as fh:
        return next(i for i, ln in enumerate(fh, 1) if needle in ln)


# ------------------------------------------------------------------ translation, both targets
KERNELS = ["scalar_refs", "struct_refs", "shared_structs", "modified_params", "member_params"]


@needs_glslang
@pytest.mark.parametrize("kernel", KERNELS)
def test_glsl_outputs_validate(kernel, tmp_path):
    res = tr(REFS, "glsl")
    assert not res.failed_kernels, res.failed_kernels
    glsl_ok(res.shaders[kernel], tmp_path, kernel)


@needs_cl
def test_opencl_output_builds():
    res = tr(REFS, "opencl")
    assert not res.failed_kernels, res.failed_kernels
    v = validate_opencl(res.text)
    assert v.ok, f"{v.reason}\n{v.log}\n{res.text}"


def test_glsl_in_for_read_references_inout_for_written():
    s = tr(REFS, "glsl").shaders
    assert "void bump(inout float x, float d)" in s["scalar_refs"]
    assert "void swap2(inout float a, inout float b)" in s["scalar_refs"]
    assert "float twice(float x)" in s["scalar_refs"]
    # a const reference bound to an object and to a temporary: one `in` specialisation
    assert "twice_v2" not in s["scalar_refs"]
    assert "float total(Acc a)" in s["struct_refs"]
    assert "void scale(inout Pair p, float s)" in s["struct_refs"]
    assert "void add3(inout vec3 v, vec3 d)" in s["struct_refs"]
    assert "Acc push(Acc a, float v)" in s["struct_refs"]


def test_glsl_reference_local_is_an_alias_with_indices_evaluated_once():
    s = tr(REFS, "glsl").shaders
    assert "int cuport_r_i = i;" in s["scalar_refs"]
    assert "out_[cuport_r_i] += " in s["scalar_refs"]
    assert "int cuport_mine_i = (t + 1) & 63;" in s["shared_structs"]
    assert "total(tile[cuport_mine_i])" in s["shared_structs"]


def test_glsl_modified_by_value_params_are_not_const():
    s = tr(REFS, "glsl").shaders
    for line in ("int n = pc.n;", "int lo = pc.lo;", "float s = pc.s;"):
        assert re.search(rf"^    {re.escape(line)}$", s["modified_params"], re.M), s["modified_params"]
    assert re.search(r"^    vec2 shift = pc.shift;$", s["member_params"], re.M)
    # negative: a parameter nothing writes stays const
    assert "const int n = pc.n;" in s["scalar_refs"]


def test_opencl_references_are_pointers_in_the_referents_space():
    t = tr(REFS, "opencl").text
    assert "void bump_p(float* x, float d)" in t               # a private local
    assert "void bump(__global float* x, float d)" in t        # a buffer element
    assert "bump(&out[i], x);" in t and "bump_p(&x, 1.0f);" in t
    assert "(*x) += d;" in t
    assert "float total_l(__local const Acc* a)" in t          # an element of a __local struct array
    assert "float twice_p(const float* x)" in t and "float twice(float x)" in t   # object / temporary
    assert "__global float* r = &out[i];" in t and "(*r) += " in t
    assert "__local const Acc* mine = &tile[(t + 1) & 63];" in t
    assert "(*p).acc.sum[k] *= s;" in t
    assert "float sum[4];" in t                                # array members in C declarator order


# ------------------------------------------------------------------ refusals (GLSL) and what OpenCL keeps
GLSL_REFUSED = {
    "alias_index": ("accumulate(a[i & 3], a[j]);", "`a[i & 3]` and `a[j]` may be the same storage"),
    "alias_same": ("accumulate(x, x);", "`x` and `x` may be the same storage"),
    "alias_pointer": ("add_to(a, a[0]);", "`a` and `a[0]` may be the same storage"),
    "shared_sync": ("publish(s[threadIdx.x]", "synchronises (`__syncthreads`)"),
    "returns_ref": ("__device__ float& pick", "returning a reference"),
}


@pytest.mark.parametrize("kernel", sorted(GLSL_REFUSED))
def test_glsl_refuses_aliasing_with_code_and_line(kernel):
    res = tr(REFUSED, "glsl")
    needle, message = GLSL_REFUSED[kernel]
    assert kernel in res.failed_kernels and kernel not in res.shaders
    (d,) = refusal(res, kernel)
    assert d.severity == "error"
    assert message in d.message
    assert d.row == line_of(REFUSED, needle)


def test_glsl_keeps_calls_without_aliasing():
    res = tr(REFUSED, "glsl")
    assert set(res.shaders) == {"no_alias", "vector_component"}
    assert "swap2(a[k], a[k + 2]);" in res.shaders["no_alias"]          # provably distinct elements
    assert "read2(x, x)" in res.shaders["no_alias"]                      # aliases only read
    assert "swap2(p.a, p.b);" in res.shaders["no_alias"]                 # sibling members
    assert "swap2(v.x, v.y);" in res.shaders["vector_component"]


def test_opencl_refuses_only_what_it_cannot_express():
    res = tr(REFUSED, "opencl")
    assert set(res.failed_kernels) == {"vector_component", "returns_ref"}
    (d,) = refusal(res, "vector_component")
    assert "vector component `v.x`" in d.message and d.row == line_of(REFUSED, "swap2(v.x, v.y);")
    assert "accumulate_pp(&a[i & 3], &a[j]);" in res.text


@needs_cl
def test_opencl_aliasing_output_builds():
    v = validate_opencl(tr(REFUSED, "opencl").text)
    assert v.ok, v.log


def test_cli_exit_1_on_refusal(tmp_path):
    r = subprocess.run([sys.executable, "-m", "porter", "translate", "--to", "glsl", REFUSED, "-o", str(tmp_path)],
                       capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 1
    assert "refused.cu:21:5: CP907" in r.stderr and "Traceback" not in r.stderr


# ------------------------------------------------------------------ existing outputs unchanged
def test_pointer_fixture_golden_unchanged():
    """Pointers to scalars stay inout parameters; the aliasing check passes distinct scalars."""
    path = os.path.join(ROOT, "tests", "fixtures", "glsl", "pointers.cu")
    with open(os.path.join(ROOT, "tests", "fixtures", "glsl", "expected", "pointers.cl")) as fh:
        assert tr(path, "opencl").text == fh.read()


# ------------------------------------------------------------------ numbers
def _run(spec, targets):
    from porter.verify.runner import Runner
    from porter.verify.spec import load_spec
    return Runner(targets, subgroups=[4, 8], jobs=2).run(load_spec(spec))


@pytest.fixture
def lavapipe(monkeypatch):
    if not HAVE_VK:
        pytest.skip("lavapipe not installed")
    monkeypatch.setenv("VK_ICD_FILENAMES", LAVAPIPE_ICD)


def _assert_all_pass(results, expect_skips=()):
    ran = [r for r in results if r.status != "skipped"]
    assert ran
    bad = [(r.case, r.target, r.variant, r.status, r.message) for r in ran if r.status != "pass"]
    assert not bad, bad
    return ran


@needs_cl
def test_fixtures_match_numpy_on_lavapipe_and_pocl(lavapipe):
    ran = _assert_all_pass(_run(os.path.join(FIX, "verify_spec.py"), ["vulkan", "opencl"]))
    seen = {(r.case, r.target, r.variant) for r in ran}
    for k in ("scalar_refs", "struct_refs", "shared_structs", "modified_params", "no_alias"):
        assert {(k, "vulkan", "sg4"), (k, "vulkan", "sg8"), (k, "opencl", "-")} <= seen, k
    for k in ("alias_index", "alias_same", "alias_pointer", "shared_sync"):   # GLSL refuses these
        assert (k, "opencl", "-") in seen


@needs_cl
def test_example_matches_numpy_on_lavapipe_and_pocl(lavapipe):
    ran = _assert_all_pass(_run(os.path.join(EXAMPLE, "verify_spec.py"), ["vulkan", "opencl"]))
    assert {r.variant for r in ran if r.target == "vulkan"} == {"sg4", "sg8"}

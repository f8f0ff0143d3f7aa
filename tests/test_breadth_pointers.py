"""Issue 14 item 2: pointer casts that view memory as another element type (tests/fixtures/breadth/pointers/).
OpenCL C casts the pointer in its address space; GLSL declares a typed view of the same buffer binding and
converts element offsets only when the conversion is provably exact; everything else stays a CP907 at its line."""
import os
import re

import pytest

from porter.translate.api import translate_file
from porter.translate.kernel.validate import opencl_context, tool

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIX = os.path.join(ROOT, "tests", "fixtures", "breadth", "pointers")
VIEWS = os.path.join(FIX, "views.cu")
REFUSED = os.path.join(FIX, "refused.cu")
KERNELS = {"scale4", "row_sum4", "unpack", "negate_bits", "pack_bytes", "shift4", "hash_ids", "pitched_scale",
           "vector_and_tail", "last_by_lanes", "scale_columns", "scale_rows",
           "fold_words"}
OPENCL_ONLY = {"fold_words"}


def outputs(res):
    return set(res.shaders) if res.target == "glsl" else set(res.manifests)


def can_validate(target):
    return tool("glslangValidator") is not None if target == "glsl" else opencl_context() is not None


@pytest.mark.parametrize("target", ["glsl", "opencl"])
def test_views_translate_to_valid_output(target):
    res = translate_file(VIEWS, target, validate=can_validate(target))
    want = KERNELS - (OPENCL_ONLY if target == "glsl" else set())
    assert outputs(res) == want, res.failed_kernels
    if res.extra.get("validation"):
        assert all(v["ok"] for v in res.extra["validation"].values()), res.extra["validation"]


def test_glsl_pointer_comparison_is_refused_at_its_line():
    res = translate_file(VIEWS, "glsl", validate=False)
    d = [d for d in res.diagnostics if d.code == "CP907" and d.severity == "error"]
    assert [(x.row, x.column) for x in d] == [(110, 12)]
    assert "a pointer comparison `w != end`" in d[0].message


def test_glsl_typed_view_shares_the_binding():
    res = translate_file(VIEWS, "glsl", validate=False)
    s = res.shaders["scale4"]
    assert "layout(std430, set = 0, binding = 1) readonly buffer x_buf { float x[]; };" in s
    assert "layout(std430, set = 0, binding = 1) readonly buffer x_vec4_buf { vec4 x_vec4[]; };  // `x` as float4" in s
    assert "vec4 v = x_vec4[i];" in s and "out_vec4[i] = v;" in s
    # the host binds each buffer once: views add no binding
    m = res.manifests["scale4"]
    assert [(b["name"], b["binding"], b["type"]) for b in m["buffers"]] == [("out", 0, "float"), ("x", 1, "float")]
    assert "bindings: out=0, x=1;" in s


def test_glsl_offsets_are_converted_exactly():
    res = translate_file(VIEWS, "glsl", validate=False)
    # float offset 4 * k -> float4 offset k: the multiple of 4 is proven from the expression
    assert "int row_off = r * (4 * quads) / 4;  // row = m_vec4 + row_off" in res.shaders["row_sum4"]
    # float4 offset 1 -> float offset 4
    assert "int f_off = 4;  // f = in_float + f_off" in res.shaders["unpack"]
    assert "x_uint[i] ^= 2147483648u;" in res.shaders["negate_bits"]
    assert "GL_EXT_shader_8bit_storage" in res.shaders["pack_bytes"]
    assert "out_u8vec4[i] = o;" in res.shaders["pack_bytes"]
    assert not any("__" in re.sub(r"__\w+__", "", t) for t in res.shaders.values())   # reserved in GLSL
    # a view passed to a device function: the function reads the view
    assert "vec4 a = x_vec4[p_off + i];" in res.shaders["shift4"]


def test_glsl_restrict_dropped_when_a_buffer_has_views(tmp_path):
    src = tmp_path / "r.cu"
    src.write_text("__global__ void k(float *__restrict__ out, const float *__restrict__ in) {\n"
                   "  reinterpret_cast<float4 *>(out)[threadIdx.x] = reinterpret_cast<const float4 *>(in)[threadIdx.x];\n"
                   "}\n")
    s = translate_file(str(src), "glsl", validate=False).shaders["k"]
    assert "restrict" not in s.split("void main")[0].replace("__restrict__", "")
    assert "readonly buffer in_vec4_buf { vec4 in_vec4[]; }" in s


def test_opencl_casts_keep_the_address_space():
    text = translate_file(VIEWS, "opencl", validate=False).text
    assert "float4 v = ((__global const float4*)x)[i];" in text
    assert "((__global float4*)out)[i] = v;" in text
    assert "__global const float4* row = (__global const float4*)(m + r * (4 * quads));" in text
    assert "__global float* line = (__global float*)((__global uchar*)image + y * pitch);" in text
    assert "const ulong* k = (const ulong*)key;" in text      # a private `const void *` handed back
    assert "while (w != end) {" in text and "const uchar* tail = (const uchar*)end;" in text


def test_opencl_flattening_cast_of_a_local_array(tmp_path):
    src = tmp_path / "t.cu"
    src.write_text("__global__ void k(float *out) {\n  __shared__ float tile[8][9];\n"
                   "  ((float *)tile)[threadIdx.x] = 1.0f;\n  __syncthreads();\n"
                   "  out[threadIdx.x] = tile[0][threadIdx.x % 9];\n}\n")
    res = translate_file(str(src), "opencl", validate=can_validate("opencl"))
    assert "((__local float*)tile)[(uint)get_local_id(0)] = 1.0f;" in res.text
    if res.extra.get("validation"):
        assert all(v["ok"] for v in res.extra["validation"].values())


def _expectations(path, target):
    out = []
    for row, line in enumerate(open(path).read().splitlines(), 1):
        m = re.search(r'//\s*(expect|glsl):\s*(CP\d{3})\s*"([^"]*)"', line)
        if m and (m.group(1) == "expect" or target == "glsl"):
            out.append((row, m.group(2), m.group(3)))
    return out


@pytest.mark.parametrize("target", ["glsl", "opencl"])
def test_refused_casts_name_their_line(target):
    res = translate_file(REFUSED, target, validate=can_validate(target))
    exp = _expectations(REFUSED, target)
    for row, code, frag in exp:
        hits = [d for d in res.diagnostics if d.row == row and d.code == code and frag in d.message]
        assert hits and hits[0].severity == "error", (row, code, frag, [(d.row, d.message) for d in res.diagnostics])
    assert len(res.failed_kernels) == len(exp)
    if target == "opencl":     # OpenCL C casts these itself
        assert outputs(res) == {"unaligned_offset", "vector_and_bits", "three_widths", "odd_stride", "three_vector"}
        assert "((__global float2*)out)[i] = (float2)(5.0f, 6.0f);" in res.text
        if res.extra.get("validation"):
            assert all(v["ok"] for v in res.extra["validation"].values())
    else:
        assert outputs(res) == set()


def test_views_match_numpy_on_lavapipe_and_pocl(monkeypatch):
    icd = "/usr/share/vulkan/icd.d/lvp_icd.x86_64.json"
    if not os.path.exists(icd) or opencl_context() is None or tool("glslangValidator") is None:
        pytest.skip("lavapipe / PoCL / glslang not available")
    monkeypatch.setenv("VK_ICD_FILENAMES", icd)
    from porter.verify.runner import Runner
    from porter.verify.spec import load_spec
    results = Runner(["vulkan", "opencl"], subgroups=[4, 8, 16], jobs=1).run(load_spec(os.path.join(FIX, "verify_spec.py")))
    ran = {(r.case, r.target, r.variant): r.status for r in results if r.status != "skipped"}
    assert set(ran.values()) == {"pass"}, [(r.case, r.target, r.variant, r.message) for r in results]
    for k in KERNELS:
        assert (k, "opencl", "-") in ran
        if k not in OPENCL_ONLY:
            assert {(k, "vulkan", "sg4"), (k, "vulkan", "sg8"), (k, "vulkan", "sg16")} <= set(ran)
    assert ("fold_words", "vulkan", "sg4") not in ran


def test_breadth_bench_attributes_instances_to_the_longest_kernel_name(tmp_path):
    # moe-sum: `moe_sum_kernel_vec4_2` is an instance of `moe_sum_kernel_vec4`, not of `moe_sum_kernel`
    import importlib.util
    spec = importlib.util.spec_from_file_location("breadth", os.path.join(ROOT, "bench", "breadth.py"))
    breadth = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(breadth)
    found = {"moe_sum_kernel": "kernels.h", "moe_sum_kernel_vec4": "kernels.h"}
    (tmp_path / "main.cl").write_text("__kernel void moe_sum_kernel_float_2(int a) {}\n"
                                      "__kernel void moe_sum_kernel_vec4_2(int a) {}\n")
    assert breadth.outputs(str(tmp_path), "opencl", found) == set(found)
    (tmp_path / "moe_sum_kernel_vec4_3.comp").write_text("")
    assert breadth.outputs(str(tmp_path), "glsl", found) == {"moe_sum_kernel_vec4"}


def test_glsl_view_cast_back_to_the_buffer_type_is_the_buffer(tmp_path):
    src = tmp_path / "b.cu"
    src.write_text("__global__ void k(float *x, int n) {\n  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                   "  float *f = (float *)((float4 *)x + 1);\n  if (i < n) f[i] = 2.0f * f[i];\n}\n")
    s = translate_file(str(src), "glsl", validate=can_validate("glsl")).shaders["k"]
    assert "int f_off = 4;  // f = x + f_off" in s and "x[f_off + i] = 2.0 * x[f_off + i];" in s
    assert "vec4" not in s      # no view declared: the float4 pointer was never dereferenced


def test_glsl_literal_offsets_convert_or_are_refused(tmp_path):
    src = tmp_path / "o.cu"
    src.write_text("__global__ void ok(float *o, const float *x) {\n"
                   "  float4 v = ((const float4 *)(x + 8))[threadIdx.x];\n  o[threadIdx.x] = v.x;\n}\n"
                   "__global__ void odd(float *o, const float *x) {\n"
                   "  float4 v = ((const float4 *)(x + 6))[threadIdx.x];\n  o[threadIdx.x] = v.y;\n}\n")
    res = translate_file(str(src), "glsl", validate=can_validate("glsl"))
    assert set(res.shaders) == {"ok"}
    assert "vec4 v = x_vec4[2u + gl_LocalInvocationID.x];" in res.shaders["ok"]     # 8 floats = 2 float4s
    d = [d for d in res.diagnostics if d.severity == "error"]
    assert [(x.row, x.code) for x in d] == [(6, "CP907")] and "not provably a multiple" in d[0].message


def test_glsl_vector_body_and_scalar_tail_share_one_vector_view():
    # HeCBench silu: `out` written as float4 and as float: every float goes through the float4 view (component
    # i % 4 of i / 4), so the binding has one variable and `restrict` stays
    res = translate_file(VIEWS, "glsl", validate=False)
    s = res.shaders["vector_and_tail"]
    decls = [ln for ln in s.splitlines() if "binding = 0)" in ln]
    assert decls == ["layout(std430, set = 0, binding = 0) writeonly buffer out_vec4_buf { vec4 out_vec4[]; };  "
                     "// `out`, element i at [i / 4][i % 4]"]
    assert "out_vec4[i] = x_vec4[i];" in s
    assert "out_vec4[j / 4][cuport_rem_int(j, 4)] = x[j] + 1.0;" in s
    # the buffer declared float4: the float view's elements are its components
    t = res.shaders["last_by_lanes"]
    assert [ln for ln in t.splitlines() if "binding = 0)" in ln] == \
        ["layout(std430, set = 0, binding = 0) buffer v_buf { vec4 v[]; };"]
    assert "v[(4 * (n4 - 1) + i) / 4][cuport_rem_int(4 * (n4 - 1) + i, 4)] = -v[(4 * (n4 - 1) + i) / 4]" in t
    assert "float" not in t.split("void main")[0].split("binding = 0)")[1].split("\n")[0]
    m = res.manifests["vector_and_tail"]
    assert [(b["name"], b["binding"], b["type"]) for b in m["buffers"]] == [("out", 0, "float"), ("x", 1, "float")]


def test_glsl_restrict_kept_on_a_merged_view(tmp_path):
    src = tmp_path / "m.cu"
    src.write_text("__global__ void k(float *__restrict__ out, int n) {\n"
                   "  int i = threadIdx.x;\n  if (i < n / 2) reinterpret_cast<float2 *>(out)[i] = make_float2(1.0f, 2.0f);\n"
                   "  if (i == 0 && n % 2) out[n - 1] = 3.0f;\n}\n")
    s = translate_file(str(src), "glsl", validate=can_validate("glsl")).shaders["k"]
    assert "writeonly restrict buffer out_vec2_buf { vec2 out_vec2[]; };" in s
    assert "out_vec2[(n - 1) / 2][cuport_rem_int(n - 1, 2)] = 3.0;" in s
    assert "float out_[]" not in s and "float out[]" not in s


def test_glsl_pitched_rows_become_element_offsets_under_a_launch_contract():
    # HeCBench cbsfil: `(float *)((uchar *)image + y * pitch)` is the element offset y * pitch / 4 when pitch is a
    # multiple of 4: the manifest requires it, the shader header says so, and a warning names the line
    res = translate_file(VIEWS, "glsl", validate=False)
    s = res.shaders["pitched_scale"]
    assert "int line_off = int(y * pitch / 4u);  // line = image + line_off" in s
    assert "// requires (the host refuses other launches): pitch % 4 == 0" in s
    assert res.manifests["pitched_scale"]["requires"] == [{"param": "pitch", "multiple_of": 4}]
    w = [(d.row, d.code) for d in res.diagnostics if d.severity == "warning" and "`pitch` a multiple of 4" in d.message]
    assert w == [(89, "CP907"), (147, "CP907"), (152, "CP907")]
    # a stride passed to a device function: the function divides, each call's argument is checked
    c = res.shaders["scale_columns"]
    assert "p_off = (p_off * 4 + step_) / 4;" in c and "scale_strided(x, height, int(pitch), a);" in c
    assert res.manifests["scale_columns"]["requires"] == [{"param": "pitch", "multiple_of": 4}]
    # the row start needs the contract, the stride sizeof(float) passed to the function none
    assert res.manifests["scale_rows"]["requires"] == [{"param": "pitch", "multiple_of": 4}]
    assert "requires" not in res.manifests["scale4"]
    # OpenCL casts the pointer: no contract there
    cl = translate_file(VIEWS, "opencl", validate=False)
    assert all("requires" not in m for m in cl.manifests.values())


def test_vulkan_host_refuses_a_launch_that_breaks_the_contract(monkeypatch, tmp_path):
    icd = "/usr/share/vulkan/icd.d/lvp_icd.x86_64.json"
    if not os.path.exists(icd) or tool("glslangValidator") is None:
        pytest.skip("lavapipe / glslang not available")
    monkeypatch.setenv("VK_ICD_FILENAMES", icd)
    from porter.verify.runner import Runner
    from porter.verify.spec import load_spec
    sp = tmp_path / "bad_pitch_spec.py"
    sp.write_text(f"import sys\nsys.path.insert(0, {FIX!r})\nfrom verify_spec import pitched_scale\n"
                  "from porter.verify.spec import Case, Tol\n"
                  f"KERNELS = [Case(source={VIEWS!r}, kernel='pitched_scale', signature='image: f32[height * stride] "
                  "inout, pitch: u32 = 4 * stride + 2, width: i32, height: i32, a: f32 = 1.5', "
                  "grid='ceil(height / 32)', block='32', reference=pitched_scale, "
                  "sizes=[{'width': 100, 'height': 50, 'stride': 112}], tol=Tol(1e-6, 1e-6))]\n")
    rs = [r for r in Runner(["vulkan"], subgroups=[4], jobs=1).run(load_spec(str(sp))) if r.status != "skipped"]
    assert rs and all(r.status != "pass" for r in rs)
    assert all("launch refused" in r.message and "`pitch` to be a multiple of 4" in r.message for r in rs), \
        [(r.status, r.message) for r in rs]

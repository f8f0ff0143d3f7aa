"""Issue 14 item 6: half precision (cuda_fp16.h) and fp8 conversions (cuda_fp8.h) in GLSL and OpenCL. Fixture:
tests/fixtures/half/ (verify_spec.py checks it against NumPy float16 and a Python transcription of cuda_fp8.hpp's
conversion, on lavapipe at subgroups 4/8/16 and on PoCL)."""
import json
import os
import subprocess
import sys

import pytest

from porter.translate.api import translate_file
from porter.translate.kernel import halfprec, intrinsics
import kernel_helpers as helpers
from kernel_helpers import can_validate, expected_runs, failures, outputs, ran_keys, refusal, run_spec

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIX = os.path.join(ROOT, "tests", "fixtures", "half")
KERNELS = {"to_half", "half_ops", "half2_dot", "gelu_bias", "to_fp8"}
LUT_KERNELS = {"lut_sum<32>", "lut_sum<64>"}                 # lut.cu


def translate_text(tmp_path, target, code):
    return helpers.translate_text(tmp_path, target, "#include <cuda_fp16.h>\n#include <cuda_fp8.h>\n" + code)


@pytest.mark.parametrize("target", ["glsl", "opencl"])
def test_fixture_translates_every_kernel_to_valid_output(target):
    res = translate_file(os.path.join(FIX, "half.cu"), target, validate=can_validate(target))
    assert outputs(res) == KERNELS, [d.message for d in res.diagnostics]
    assert not res.failed_kernels
    if res.extra.get("validation"):
        assert all(v["ok"] for v in res.extra["validation"].values()), res.extra["validation"]


def test_glsl_computes_in_float16_with_the_16bit_extensions():
    g = translate_file(os.path.join(FIX, "half.cu"), "glsl", validate=False)
    s = g.shaders["half2_dot"]
    assert "#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require" in s
    assert "#extension GL_EXT_shader_16bit_storage : require" in s
    assert "buffer a_buf { f16vec2 a[]; }" in s and "shared f16vec2 sh[64];" in s
    assert "lanes[2 * i] = p + q;" in s                       # __hadd2: the f16vec2 sum
    feats = set(g.manifests["half2_dot"]["features"])
    assert {"shaderFloat16", "storageBuffer16BitAccess"} <= feats
    assert "float16_t(v)" in g.shaders["to_half"]             # __float2half
    assert "cuport_f32_to_e4m3_satfinite(v)" in g.shaders["to_fp8"]
    assert "cuport_f32_to_e5m2_nosat(w)" in g.shaders["to_fp8"]


def test_opencl_keeps_half_as_storage_only():
    o = translate_file(os.path.join(FIX, "half.cu"), "opencl", validate=False)
    assert "cl_khr_fp16" not in o.text                       # PoCL has no cl_khr_fp16: any OpenCL 1.2 device
    assert "__global const half* a," in o.text
    assert "float x = vload_half(i, a);" in o.text
    assert "vstore_half_rte(cuport_rh(x + y), 6 * i + 0, out);" in o.text
    assert "float2 p = vload_half2(i, a);" in o.text and "__local float2 sh[64];" in o.text
    assert "vstore_half_rte(x, 0, (__private half *)&u);" in o.text     # the rounding helper


def test_fixture_matches_numpy_on_lavapipe_and_pocl(monkeypatch):
    results = run_spec(monkeypatch, os.path.join(FIX, "verify_spec.py"))
    assert not failures(results), failures(results)
    assert expected_runs(KERNELS | LUT_KERNELS) <= ran_keys(results)


def test_fp8_reference_matches_cuda_documented_codes():
    """The spec's Python transcription of cuda_fp8.hpp against the codes HeCBench f8cast's comments give."""
    import importlib.util
    # loaded under its own name: a bare `import verify_spec` would shadow other fixtures' specs in sys.modules
    spec = importlib.util.spec_from_file_location("half_verify_spec", os.path.join(FIX, "verify_spec.py"))
    vs = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(vs)
    assert vs.fp8(2.0 ** -6, "e4m3", True) == 0x08 and vs.fp8(0.875 * 2.0 ** -6, "e4m3", True) == 0x07
    assert vs.fp8(2.0 ** -9, "e4m3", True) == 0x01 and vs.fp8(448, "e4m3", True) == 0x7E
    assert vs.fp8(449, "e4m3", True) == 0x7E and vs.fp8(1e9, "e4m3", False) == 0x7F
    assert vs.fp8(2.0 ** -14, "e5m2", True) == 0x04 and vs.fp8(57344, "e5m2", True) == 0x7B
    assert vs.fp8(float("inf"), "e5m2", False) == 0x7C and vs.fp8(-1.0, "e4m3", True) == 0xB8
    assert vs.fp8(1.0625, "e4m3", True) == 0x38          # a tie rounds to the even code (1.0)
    assert vs.fp8(1.1875, "e4m3", True) == 0x3A          # and up to the even one (1.25)


def test_half_rows_are_data():
    rows = intrinsics.half_table()
    assert {r for r, v in rows.items() if v.kind == "half"} == set(halfprec.HALF_SIGNATURES)
    assert set(halfprec.OPERATORS.values()) <= set(rows)
    assert intrinsics.table()["__hadd"].kind == "int"         # the integer __hadd keeps its row
    r = subprocess.run([sys.executable, "-m", "porter.translate.kernel.intrinsics", "--check"], cwd=ROOT,
                       env=dict(os.environ, PYTHONPATH=ROOT), capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def test_integer_hadd_is_still_the_integer_intrinsic(tmp_path):
    res = translate_text(tmp_path, "glsl", "__global__ void k(int *o) { o[threadIdx.x] = __hadd(7, 4); }\n")
    assert "k" in res.shaders and "float16_t" not in res.shaders["k"]


@pytest.mark.parametrize("target", ["glsl", "opencl"])
def test_half_by_value_parameter_is_refused(tmp_path, target):
    res = translate_text(tmp_path, target, "__global__ void k(__half s, __half *o) { o[threadIdx.x] = s; }\n")
    d = refusal(res)
    assert "half parameter `s` passed by value" in d.message and d.row == 3


@pytest.mark.parametrize("target", ["glsl", "opencl"])
def test_half_conversion_without_a_row_is_refused(tmp_path, target):
    res = translate_text(tmp_path, target, "__global__ void k(const float *x, __half *o) {\n"
                         "  o[threadIdx.x] = __float2half_rz(x[threadIdx.x]);\n}\n")
    d = refusal(res)
    assert "__float2half_rz" in d.message and d.row == 4


@pytest.mark.parametrize("target", ["glsl", "opencl"])
def test_fp8_with_a_variable_format_is_refused(tmp_path, target):
    res = translate_text(tmp_path, target, "__global__ void k(const float *x, unsigned char *o, int f) {\n"
                         "  o[threadIdx.x] = __nv_cvt_float_to_fp8(x[threadIdx.x], __NV_SATFINITE,\n"
                         "                                         (__nv_fp8_interpretation_t)f);\n}\n")
    d = refusal(res)
    assert "constant __NV_" in d.message and d.row == 4


def test_opencl_half2_pointer_arithmetic_is_refused(tmp_path):
    res = translate_text(tmp_path, "opencl", "__global__ void k(half2 *p, half2 *o) {\n"
                         "  half2 *q = p + 1;\n  o[threadIdx.x] = q[threadIdx.x];\n}\n")
    d = refusal(res)
    assert "half2 buffer" in d.message


@pytest.mark.parametrize("target", ["glsl", "opencl"])
def test_increment_of_a_half_is_refused(tmp_path, target):
    res = translate_text(tmp_path, target, "__global__ void k(__half *o) {\n  __half h = o[0];\n  h++;\n"
                         "  o[threadIdx.x] = h;\n}\n")
    d = refusal(res)
    assert "on a half value" in d.message and d.row == 5


def test_opencl_private_reinterpretation_as_half2_is_a_bit_cast(tmp_path):
    # HeCBench vadd: `*reinterpret_cast<__half2*>(&a8.x)` of a float4 register. OpenCL computes half2 as float2: a
    # pointer cast would read 8 bytes of a 4-byte float; the float's 32 bits become the half2's values instead
    # (private_views.py; values checked by tests/test_private_views.py)
    res = translate_text(tmp_path, "opencl", "__global__ void k(const float *in, __half2 *o) {\n  float v = in[threadIdx.x];\n"
                         "  __half2 h = *reinterpret_cast<__half2*>(&v);\n  o[threadIdx.x] = h;\n}\n")
    assert "k" in res.manifests, res.failed_kernels
    assert "float2 h = cuport_h2_from_bits(as_uint(v));" in res.text
    # a private array of halves seen as a float4 stays refused
    res = translate_text(tmp_path, "opencl", "__global__ void k(const float4 *in, float *o) {\n  __half h[8];\n"
                         "  *reinterpret_cast<float4*>(h) = in[0];\n  o[0] = h[1];\n}\n")
    d = refusal(res)
    assert d.row == 5 and "reinterpreting private memory as or from halves" in d.message   # (2 include lines)
    # a buffer of halves read as float4 (raw bytes of 8 halves) stays a native cast
    ok = translate_text(tmp_path, "opencl", "__global__ void k(const __half *in, float4 *o) {\n"
                        "  o[threadIdx.x] = *reinterpret_cast<const float4*>(in + 8 * threadIdx.x);\n}\n")
    assert "k" in ok.manifests, ok.failed_kernels


@pytest.mark.parametrize("target", ["glsl", "opencl"])
def test_template_half_table_with_a_dependent_bound(target):
    # lut-gemm's `__shared__ __half lut[K_TILE_SIZE/8][256]` (was "subscript of `unknown`"), `acc += lut[k][j]` and
    # `out[i] = acc + ...` on halves in a template (OpenCL: was "a half in an OpenCL buffer changed other than by
    # assignment")
    res = translate_file(os.path.join(FIX, "lut.cu"), target, validate=can_validate(target))
    assert not res.failed_kernels and set(res.manifests) == LUT_KERNELS, [d.message for d in res.diagnostics]
    if target == "glsl":
        s = res.shaders["lut_sum<64>"]
        assert "shared float16_t lut[8][16];" in s and "acc = acc + lut[k][idx[i * (K / 8) + k]];" in s
    else:
        assert "__local float lut[4][16];" in res.text and "__local float lut[8][16];" in res.text
        assert "acc = cuport_rh(acc + lut[k][idx[i * (32 / 8) + k]]);" in res.text
        assert "vstore_half_rte(cuport_rh(acc + lut[0][0]), i, out);" in res.text
    if res.extra.get("validation"):
        assert all(v["ok"] for v in res.extra["validation"].values()), res.extra["validation"]


def test_dependent_array_bounds_are_folded():
    from porter.translate.kernel.ctype import parse
    assert parse("__half[K / 8][256]", {"K": 64}).dims == (8, 256)
    assert parse("float[(N + 1) * 2]", {"N": 3}).dims == (8,)
    assert parse("float[-7 / 2 + 5]", {}).dims == (2,)            # C truncates toward zero: -3 + 5
    assert parse("float[K / 8]", {"K": 4}).dims == (None,)        # a zero bound is no bound
    assert parse("float[K / 8]", {}).dims == (None,)              # K unknown here
    assert parse("float[sizeof(T)]", {"T": "float"}).dims == (None,)


def test_opencl_address_of_a_half_in_a_buffer_is_pointer_arithmetic(tmp_path):
    # lut-gemm's `__half *_inp = &input[...]` (was "a half in an OpenCL buffer changed other than by assignment")
    res = translate_text(tmp_path, "opencl", "__global__ void k(__half *in, __half *out) {\n"
                         "  __half *p = &in[blockIdx.x * 8];\n  out[threadIdx.x] = p[0] + p[1];\n}\n")
    assert "k" in res.manifests, [d.message for d in res.diagnostics]
    assert "__global half* p = in + (uint)get_group_id(0) * 8u;" in res.text
    assert "vstore_half_rte(cuport_rh(vload_half(0, p) + vload_half(1, p)), (uint)get_local_id(0), out);" in res.text


@pytest.mark.parametrize("target", ["glsl", "opencl"])
def test_half2_atomic_through_a_cast_of_a_half_buffer(tmp_path, target):
    # lut-gemm's `atomicAdd((half2*)&output[m], ...)` with `m = blockIdx.x * M_TILE_SIZE + threadIdx.x * 2`: m is
    # even under the launch contract that `tile` is, so the pair is one 32-bit word, updated by a compare-and-swap
    # loop (half2_atomics.py; tests/test_half2_atomics.py checks the values). Without `* 2`: refused at the cast
    res = translate_text(tmp_path, target, "__global__ void k(__half *output, int tile) {\n"
                         "  int m = blockIdx.x * tile + threadIdx.x * 2;\n"
                         "  atomicAdd((half2*)&output[m], __halves2half2(output[0], output[1]));\n}\n")
    assert "k" in outputs(res), [d.message for d in res.diagnostics]
    man = res.manifests["k"]
    man = json.loads(man) if isinstance(man, str) else man
    assert man["requires"] == [{"param": "tile", "multiple_of": 2}]
    res = translate_text(tmp_path, target, "__global__ void k(__half *output, int tile) {\n"
                         "  int m = blockIdx.x * tile + threadIdx.x;\n"
                         "  atomicAdd((half2*)&output[m], __halves2half2(output[0], output[1]));\n}\n")
    d = refusal(res)
    assert (d.row, d.column) == (5, 13) and "its offset into the half buffer is not provably even" in d.message, \
        (d.row, d.column, d.message)

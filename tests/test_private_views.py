"""Issue 14 item 2: a private array read and written as vectors of its element type straight through a pointer
cast (tests/fixtures/breadth/pointers/private_views.cu; porter/translate/kernel/private_views.py). OpenCL reads
with vloadN / writes with vstoreN (the array is aligned for its element only); GLSL calls helpers that read the
lanes into a vector / store them. What is not a whole read or a whole store stays refused at its line."""
import os

import pytest
from kernel_helpers import assert_refused_at, can_validate, expected_runs, failures, outputs, ran_keys, run_spec

from porter.translate.api import translate_file

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIX = os.path.join(ROOT, "tests", "fixtures", "breadth", "pointers")
VIEWS = os.path.join(FIX, "private_views.cu")
KERNELS = {"int4_roundtrip", "float2_lanes", "rows_and_params", "half2_bits"}


@pytest.mark.parametrize("target", ["glsl", "opencl"])
def test_private_views_translate_to_valid_output(target):
    res = translate_file(VIEWS, target, validate=can_validate(target))
    assert outputs(res) == KERNELS, res.failed_kernels
    if res.extra.get("validation"):
        assert all(v["ok"] for v in res.extra["validation"].values()), res.extra["validation"]


def test_opencl_reads_and_writes_with_vload_vstore():
    src = translate_file(VIEWS, "opencl", validate=False).text
    assert "vstore4(((__global const int4*)in)[2 * i + 1], 1, d);" in src
    assert "int4 lo = vload4(0, &d[0]);" in src
    assert "float2 v = vload2(k, a);" in src and "vstore2((float2)(v.y, v.x), 2 - k, a);" in src
    assert "float s = vload2(0, a + 2).y;" in src
    assert "vstore4(v, 1, p);" in src                      # through a device function's pointer parameter
    assert "int4*)d" not in src and "float4*)m" not in src  # no cast of a private pointer is left


def test_glsl_helpers_read_and_store_the_lanes():
    res = translate_file(VIEWS, "glsl", validate=False)
    s = res.shaders["int4_roundtrip"]
    assert "ivec4 cuport_vst_ivec4_8(ivec4 v, inout int a[8], int o)" in s
    assert "cuport_vst_ivec4_8(in_ivec4[2 * idx + 1], d, 4);".replace("idx", "i") in s
    assert "ivec4 hi = cuport_vld_ivec4_8(d, 4);" in s and "ivec4 lo = cuport_vld_ivec4_8(d, 0);" in s
    f = res.shaders["float2_lanes"]
    assert "vec2 v = cuport_vld_vec2_6(a, k * 2);" in f and "cuport_vst_vec2_6(vec2(v.y, v.x), a, (2 - k) * 2);" in f
    r = res.shaders["rows_and_params"]
    assert "a[(o + 3) / 4][(o + 3) % 4] = v.w;" in r          # a row of m[2][4]: the array flattened
    assert "cuport_vst_vec4_2x4(vec4(x[i], 2.0 * x[i], 3.0, 4.0), m, 4);" in r
    assert "cuport_vst_vec4_8(v, p, p_off + 4);" in r         # the array parameter of put4


def test_bits_of_a_private_float_seen_as_half2():
    g = translate_file(VIEWS, "glsl", validate=False).shaders["half2_bits"]
    assert "f16vec2 p = unpackFloat2x16(floatBitsToUint(a8.y));" in g
    assert "c8.y = uintBitsToFloat(packFloat2x16(p * unpackFloat2x16(floatBitsToUint(b8.y))));" in g
    assert "uint w = floatBitsToUint(b8.w);" in g and "c8.w = uintBitsToFloat(w ^ 2147516416u);" in g
    cl = translate_file(VIEWS, "opencl", validate=False).text
    # OpenCL holds a half2 as the float2 of its values: converted from / to the 32 bits exactly
    assert "float2 p = cuport_h2_from_bits(as_uint(a8.y));" in cl
    assert "c8.z = as_float(cuport_h2_bits(cuport_h2_from_bits(as_uint(a8.z)).yx));" in cl
    assert "uint w = as_uint(b8.w);" in cl          # a vector lane has no address in OpenCL C: no pointer cast
    assert "&a8" not in cl and "&c8" not in cl


def test_private_views_match_numpy_on_lavapipe_and_pocl(monkeypatch):
    results = run_spec(monkeypatch, os.path.join(FIX, "private_views_spec.py"))
    assert not failures(results), failures(results)
    assert ran_keys(results) == expected_runs(sorted(KERNELS))


USED = """
__global__ void k(int *out, const int *in) {
    int d[4] = {};
    int4 v = (reinterpret_cast<int4 *>(d)[0] = reinterpret_cast<const int4 *>(in)[0]);
    out[0] = v.w + d[3];
}
"""


def test_glsl_store_value_is_the_vector_opencl_refuses_it(tmp_path):
    src = tmp_path / "used.cu"
    src.write_text(USED)
    res = translate_file(str(src), "glsl", validate=can_validate("glsl"))
    assert outputs(res) == {"k"}, [d.message for d in res.diagnostics]
    assert "ivec4 v = (cuport_vst_ivec4_4(in_ivec4[0], d, 0));" in res.shaders["k"]
    if res.extra.get("validation"):
        assert all(v["ok"] for v in res.extra["validation"].values()), res.extra["validation"]
    assert_refused_at(tmp_path, "opencl", USED, 4, "the value of a vector store into private memory", column=15)


SNIPPET = """
__global__ void k(int *out, const int *in, int i) {
    %s
    out[0] = d[0];
}
"""


@pytest.mark.parametrize("target", ["glsl", "opencl"])
@pytest.mark.parametrize("body, column, what", [
    # 6 elements: a vector at a run-time index may run past the end
    ("int d[6] = {}; int4 v = reinterpret_cast<int4 *>(d)[i]; out[1] = v.x;", 29,
     "of 6 elements, not a multiple of 4"),
    ("int d[6] = {}; int4 v = reinterpret_cast<int4 *>(d)[1]; out[1] = v.x;", 29,
     "the int4 at element 4 runs past the end of the 6-element private array"),
    ("int d[8] = {}; reinterpret_cast<int4 *>(d + 6)[0] = make_int4(1, 2, 3, 4);", 20,
     "the int4 at element 6 runs past the end of the 8-element private array"),
    # a compound assignment to a lane, a lane stored: only whole reads and whole stores
    ("int d[4] = {}; reinterpret_cast<int4 *>(d)[1 - 1].x += 1;", 20,
     "only read whole or assigned whole"),
    ("int d[4] = {}; reinterpret_cast<int4 *>(d)[0].y = 7;", 20, "only read whole or assigned whole"),
    ("int d[4] = {}; reinterpret_cast<int4 *>(d)->y = 7;", 20, "only read whole or assigned whole"),
])
def test_what_stays_refused(tmp_path, target, body, column, what):
    assert_refused_at(tmp_path, target, SNIPPET % body, 3, what, column=column)


@pytest.mark.parametrize("target, what", [
    ("glsl", "reinterpreting private memory: GLSL can give another element type only to a storage buffer"),
    ("opencl", "the array is declared of `int` and aligned for it only"),
])
def test_cast_pointer_kept_in_a_variable_stays_refused(tmp_path, target, what):
    code = SNIPPET % "int d[4] = {}; int4 *p = reinterpret_cast<int4 *>(d); p[0] = make_int4(1, 2, 3, 4);"
    assert_refused_at(tmp_path, target, code, 3, what, column=30)


@pytest.mark.parametrize("target, what", [
    ("glsl", "GLSL can give another element type only to a storage buffer"),
    ("opencl", "the array is declared of `short` and aligned for it only"),
])
def test_vector_of_another_element_type_stays_refused(tmp_path, target, what):
    # int2 over shorts reinterprets the bytes: not lanes of the array's own type
    code = SNIPPET % "short d[8] = {}; int2 v = reinterpret_cast<int2 *>(d)[0]; out[1] = v.x;"
    assert_refused_at(tmp_path, target, code, 3, what, column=31)


HALVES = """#include <cuda_fp16.h>
__global__ void k(const float4 *in, float4 *out) {
    %s
}
"""


@pytest.mark.parametrize("target", ["glsl", "opencl"])
@pytest.mark.parametrize("body, line, column, what", [
    # a private array of halves as float4 (HeCBench vadd's tv kernel): OpenCL holds those halves as floats
    ("__half h[8]; *reinterpret_cast<float4 *>(h) = in[0]; out[0] = make_float4(h[0], h[1], h[2], h[3]);", 3, 19,
     {"glsl": "GLSL can give another element type only to a storage buffer",
      "opencl": "reinterpreting private memory as or from halves"}),
    # past the float whose bits the cast reads
    ("float4 v = in[0]; __half2 h = reinterpret_cast<__half2 *>(&v.x)[1]; out[0].x = __low2float(h);", 3, 35,
     "past the variable `v.x` whose bits the cast reinterprets"),
    # a store of the bits whose value is used
    ("float4 v = in[0]; unsigned u = (*reinterpret_cast<unsigned *>(&v.y) = 7u); out[0].x = v.y + u;", 3, 37,
     "the value of a store that reinterprets the bits of `v.y`"),
])
def test_bit_casts_that_stay_refused(tmp_path, target, body, line, column, what):
    what = what[target] if isinstance(what, dict) else what
    assert_refused_at(tmp_path, target, HALVES % body, line, what, column=column)


BODIES = """
__global__ void k(const int4 *in, int *out, int n) {
    int d[8] = {};
    int i = threadIdx.x;
    if (i < n) reinterpret_cast<int4 *>(d)[1] = in[i];
    else (reinterpret_cast<int4 *>(d)[0] = in[0]);
    for (int j = 0; j < 2; j++) reinterpret_cast<int2 *>(d)[j] = make_int2(j, i);
    out[i] = d[0] + d[3] + d[5];
}
"""


@pytest.mark.parametrize("target, want", [
    ("glsl", ["cuport_vst_ivec4_8(in_[i], d, 4);", "(cuport_vst_ivec4_8(in_[0], d, 0));",
              "cuport_vst_ivec2_8(ivec2(j, i), d, j * 2);"]),
    ("opencl", ["vstore4(in[i], 1, d);", "(vstore4(in[0], 0, d));", "vstore2((int2)(j, i), j, d);"]),
])
def test_stores_as_bodies_of_if_else_and_for(tmp_path, target, want):
    # a store is a statement there too (its value unused): OpenCL's vstore needs no value
    src = tmp_path / "bodies.cu"
    src.write_text(BODIES)
    res = translate_file(str(src), target, validate=can_validate(target))
    assert outputs(res) == {"k"}, res.failed_kernels
    text = res.shaders["k"] if target == "glsl" else res.text
    assert all(w in text for w in want), text
    if res.extra.get("validation"):
        assert all(v["ok"] for v in res.extra["validation"].values()), res.extra["validation"]

"""Issue 14 item 2: a buffer of scalars read and written as a struct made of them only
(tests/fixtures/breadth/pointers/struct_views.cu; porter/translate/kernel/struct_views.py): HeCBench geglu's
`struct alignas(sizeof(scalar_t) * VEC_ELEMS) U { scalar_t data[VEC_ELEMS]; }` over a float buffer. OpenCL casts
the pointer, GLSL declares a typed view; an alignment that pads the struct, or one not evaluated, is refused."""
import os

import pytest
from kernel_helpers import assert_refused_at, can_validate, expected_runs, failures, outputs, ran_keys, run_spec

from porter.translate.api import translate_file

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIX = os.path.join(ROOT, "tests", "fixtures", "breadth", "pointers")
VIEWS = os.path.join(FIX, "struct_views.cu")
KERNELS = {"chunk_scale", "pair_swap"}      # one instance: named as the template


@pytest.mark.parametrize("target", ["glsl", "opencl"])
def test_struct_views_translate_to_valid_output(target):
    res = translate_file(VIEWS, target, validate=can_validate(target))
    assert outputs(res) == KERNELS, res.failed_kernels
    if res.extra.get("validation"):
        assert all(v["ok"] for v in res.extra["validation"].values()), res.extra["validation"]


def test_glsl_views_the_binding_as_the_struct():
    res = translate_file(VIEWS, "glsl", validate=False)
    s = res.shaders["chunk_scale"]
    assert "struct U\n{\n    float[8] data;\n};" in s
    assert "readonly buffer in_U_buf { U in_U[]; };  // `in` as U" in s
    assert "u[1] = in_U[(2 * c + 1) * VEC / 8];" in s and "out_U[c * VEC / 8] = u[0];" in s
    p = res.shaders["pair_swap"]
    assert "Pair q = v_Pair[i];" in p and "v_Pair[i].lo = q.hi;" in p


def test_opencl_casts_the_pointer():
    src = translate_file(VIEWS, "opencl", validate=False).text
    assert "typedef struct U\n{\n    float data[8];\n} U;" in src      # `U u[2]`: an array of it defines it too
    assert "u[0] = *(__global const U*)&in[(2 * c) * 8];" in src and "*(__global U*)&out[c * 8] = u[0];" in src
    assert "__global Pair* p = (__global Pair*)v;" in src


def test_struct_views_match_numpy_on_lavapipe_and_pocl(monkeypatch):
    results = run_spec(monkeypatch, os.path.join(FIX, "struct_views_spec.py"))
    assert not failures(results), failures(results)
    assert ran_keys(results) == expected_runs(["chunk_scale<float, 8>", "pair_swap"])


SNIPPET = """%s
__global__ void k(const float *in, float *out) {
    int c = threadIdx.x;
    W w = *reinterpret_cast<const W *>(&in[%s]);
    out[c] = w.a[0];
}
"""


@pytest.mark.parametrize("target", ["glsl", "opencl"])
@pytest.mark.parametrize("decl, index, what", [
    # 32 bytes of floats aligned to 64: the struct's stride is not the floats it holds
    ("struct alignas(64) W { float a[8]; };", "8 * c", "its alignment 64 pads its 32 bytes of `float`"),
    ("struct alignas(alignof(double2)) W { float a[4]; };", "4 * c", "whose alignment cuport cannot evaluate"),
    # a field of another type: not a struct of the buffer's scalars
    ("struct W { float a[2]; int b; };", "3 * c", "reinterpreting memory of `W`"),
])
def test_struct_views_that_stay_refused(tmp_path, target, decl, index, what):
    assert_refused_at(tmp_path, target, SNIPPET % (decl, index), 4, what, column=12)


def test_glsl_refuses_an_offset_not_a_multiple_of_the_struct(tmp_path):
    code = SNIPPET % ("struct W { float a[4]; };", "c")
    assert_refused_at(tmp_path, "glsl", code, 4, "an offset not provably a multiple of `W`'s 16 bytes", column=12)
    src = tmp_path / "any.cu"
    src.write_text(code)
    res = translate_file(str(src), "opencl", validate=can_validate("opencl"))
    assert outputs(res) == {"k"}, res.failed_kernels       # OpenCL's W is aligned for a float only


def test_opencl_refuses_a_template_struct_defined_differently_by_another_instance(tmp_path):
    # one OpenCL file holds every instance: `U` of <float, 4> and of <int, 2> cannot both be `U`
    code = """template <typename T, int N>
__global__ void k(T *out, const T *in) {
    struct U { T data[N]; };
    U u;
    for (int i = 0; i < N; i++) u.data[i] = in[threadIdx.x * N + i];
    out[threadIdx.x] = u.data[0] + u.data[N - 1];
}
template __global__ void k<float, 4>(float *, const float *);
template __global__ void k<int, 2>(int *, const int *);
"""
    src = tmp_path / "two.cu"
    src.write_text(code)
    res = translate_file(str(src), "opencl", validate=False)
    assert outputs(res) == {"k<float, 4>"}, res.failed_kernels
    assert "`U` is defined differently by another kernel" in res.failed_kernels["k<int, 2>"]
    glsl = translate_file(str(src), "glsl", validate=False)       # one shader per instance: each has its own U
    assert outputs(glsl) == {"k<float, 4>", "k<int, 2>"}
    assert "int[2] data;" in glsl.shaders["k<int, 2>"]

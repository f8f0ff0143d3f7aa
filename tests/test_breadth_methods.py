"""Issue 14 item 3: constructors with statements, member functions and member operators in GLSL and OpenCL
(methods.py, ctors.py, class_templates.py). Fixture: tests/fixtures/breadth/methods/ (verify_spec.py checks it
against NumPy on lavapipe at subgroups 4/8/16 and on PoCL)."""
import os

import pytest

from porter.translate.api import translate_file
from kernel_helpers import (assert_refused_at, can_validate, expected_runs, failures, outputs, ran_keys, refusal,
                            run_spec, translate_text)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIX = os.path.join(ROOT, "tests", "fixtures", "breadth", "methods")
KERNELS = {"acc_mean", "box_sum"}
INSTANCES = {"records<float>", "records<int>"}


@pytest.mark.parametrize("target", ["glsl", "opencl"])
def test_fixture_translates_every_kernel_to_valid_output(target):
    res = translate_file(os.path.join(FIX, "methods.cu"), target, validate=can_validate(target))
    assert outputs(res) == KERNELS | INSTANCES, [d.message for d in res.diagnostics]
    assert not res.failed_kernels
    if res.extra.get("validation"):
        assert all(v["ok"] for v in res.extra["validation"].values()), res.extra["validation"]


def test_fixture_spellings():
    g = translate_file(os.path.join(FIX, "methods.cu"), "glsl", validate=False)
    k = g.shaders["acc_mean"]
    # a constructor with statements: a function building `self` (default member initialiser first)
    assert "Acc Acc_ctor(float s, int skip) {\n    Acc self = Acc(0.0, 0, 0);\n    self.seen = 5;" in k
    assert "        return self;" in k and "Acc a = Acc_ctor(in_[i], i & 3);" in k
    # a method that writes its object takes it inout; a const one by value; a member operator is a function
    assert "void Acc_add(inout Acc self, float x) {" in k and "float Acc_mean(Acc self) {" in k
    assert "Acc b = Acc_op_add(a, Acc_ctor(1.0, 0));" in k and "Acc_add(self, self.sum);" in k
    assert "Tally_bump(tile[i & 1], 0.5);" in k
    # the struct template's device constructor, not the fields in order (start/end swapped, pivot truncated)
    r = g.shaders["records<float>"]
    assert "Rec_f32 r = Rec_f32(uint(2 * i + 1), uint(i), float(uint(a[i])));" in r
    assert "Rec_f32_width(Rec_f32_op_add(r, q))" in r.replace("(Rec_f32_op_add(r, q))", "Rec_f32_op_add(r, q)")
    o = translate_file(os.path.join(FIX, "methods.cu"), "opencl", validate=False)
    assert "void Acc_add_p(Acc* self, float x) {" in o.text and "(*self).sum += x;" in o.text
    assert "float Acc_mean_p(const Acc* self) {" in o.text and "Acc_add_p(&a, 2.0f);" in o.text


def test_fixture_matches_numpy_on_lavapipe_and_pocl(monkeypatch):
    results = run_spec(monkeypatch, os.path.join(FIX, "verify_spec.py"))
    assert not failures(results), failures(results)
    want = expected_runs(KERNELS | INSTANCES)
    assert want <= ran_keys(results), sorted(want - ran_keys(results))


# ---------------------------------------------------------------- what must still be refused
S = ("struct A;\n__device__ float read(const A *p);\nstruct A {\n  float v;\n  __device__ A(float x) { v = x; }\n  __device__ void bump(float d) { v += d; }\n"
     "  __device__ float get() const { return v; }\n  __device__ A &operator+=(float d) { v += d; return *this; }\n"
     "  __device__ virtual float vget() const { return v; }\n  __device__ float *where() { return &v; }\n  __device__ float peek() const { return read(this); }\n};\n"
     "__device__ float read(const A *p) { return p->v; }\n")


@pytest.mark.parametrize("target", ["glsl", "opencl"])
@pytest.mark.parametrize("body, row, col, what", [
    ("A a(1.f);\n  A *p = &a;\n  p->bump(2.f);", 17, 3, "through a pointer"),
    ("A(1.f).bump(2.f);", 15, 3, "a temporary bound to the reference parameter `self`"),
    ("A a(1.f);\n  a += 2.f;", 8, 3, "device function `operator+=` returning a reference"),
    ("A a(1.f);\n  o[0] = a.vget();", 16, 10, "virtual method"),
    ("A a(1.f);\n  o[0] = *a.where();", 16, 11, "a pointer returned by `where`"),
    ("A a(1.f);\n  o[0] = a.peek();", 11, 47, "the pointer expression `this`"),
])
def test_method_refusals(tmp_path, target, body, row, col, what):
    code = S + "__global__ void k(float *o) {\n  " + body + "\n}\n"
    d = refusal(translate_text(tmp_path, target, code))
    assert what in d.message and (d.row, d.column) == (row, col), (d.row, d.column, d.message)


@pytest.mark.parametrize("target", ["glsl", "opencl"])
def test_template_struct_operator_without_member_is_refused(tmp_path, target):
    code = ("template <typename T> struct P {\n  T a;\n  __device__ P(T x) : a(x) {}\n};\n"
            "template <typename T> __global__ void k(T *o) {\n  P<T> p(o[0]), q(o[1]);\n"
            "  o[2] = (p * q).a;\n}\n"
            "template <typename T> void run(T *o) { k<T><<<1, 1>>>(o); }\n"
            "int main() { float *f; run(f); }\n")
    d = refusal(translate_text(tmp_path, target, code))
    assert "no device member `operator*`" in d.message and d.row == 7, (d.row, d.message)


def test_const_method_on_a_readonly_buffer_element_is_a_copy(tmp_path):
    # the method only reads: `in` (GLSL) / a const pointer (OpenCL); the buffer stays readonly. A without its
    # virtual method: a polymorphic A holds a vtable pointer in CUDA, so a buffer of them is refused (below)
    plain = S.replace("__device__ virtual float vget() const { return v; }\n  ", "")
    code = plain + "__global__ void k(float *o, const A *in) {\n  o[threadIdx.x] = in[threadIdx.x].get();\n}\n"
    g = translate_text(tmp_path, "glsl", code)
    assert "float A_get(A self) {" in g.shaders["k"] and "readonly buffer in_buf" in g.shaders["k"]
    o = translate_text(tmp_path, "opencl", code)
    assert "float A_get(__global const A* self) {" in o.text
    assert "A_get(&in[(uint)get_local_id(0)])" in o.text


@pytest.mark.parametrize("target", ["glsl", "opencl"])
def test_a_buffer_of_a_polymorphic_struct_is_refused(tmp_path, target):
    # CUDA's A starts with a vtable pointer (v at byte 8, 16 bytes): the translation's {float v} has other bytes
    code = S + "__global__ void k(float *o, const A *in) {\n  o[threadIdx.x] = in[threadIdx.x].get();\n}\n"
    assert_refused_at(tmp_path, target, code, 3, "struct `A`: field `v` is at byte 8 in CUDA, at 0 in the "
                      "translation")

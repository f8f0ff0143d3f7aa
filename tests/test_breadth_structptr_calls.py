"""Issue 14 item 2, continued: a struct parameter holding pointers passed whole to device functions (scatter's
`IndexToOffset<int64_t, int64_t, -1>::get(i, index_info)`): its fields travel as separate arguments
(struct_params.whole_arg). A qualified call `C<args>::f(...)` of a class template's static member function runs
the partial specialisation the arguments match, with the class's arguments (static_members.py). Fixture:
tests/fixtures/breadth/structptr_calls/ (verify_spec.py checks it against NumPy on lavapipe and PoCL)."""
import os
import re

import pytest

from porter.translate.api import translate_file
from kernel_helpers import (assert_refused_at, can_validate, expected_runs, failures, outputs, ran_keys, run_spec,
                            translate_text)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIX = os.path.join(ROOT, "tests", "fixtures", "breadth", "structptr_calls")
SRC = os.path.join(FIX, "structptr_calls.cu")


@pytest.mark.parametrize("target", ["glsl", "opencl"])
def test_fixture_translates_to_valid_output(target):
    res = translate_file(SRC, target, validate=can_validate(target))
    assert outputs(res) == {"gather_strided"}, [d.message for d in res.diagnostics]
    if res.extra.get("validation"):
        assert all(v["ok"] for v in res.extra["validation"].values()), res.extra["validation"]


def test_fields_travel_as_arguments_and_the_specialisation_is_picked():
    o = translate_file(SRC, "opencl", validate=False).text
    # every field, in field order, where the struct was passed; the array fields read-only
    assert "get_longlong_longlong(i, info_data, info_sizes, info_strides, info_dims)" in o
    head = re.search(r"long get_longlong_longlong\(([^)]*)\)", o).group(1)
    assert head == ("long linear, __global long* info_data2, __global const long* info_sizes2, "
                    "__global const long* info_strides2, int info_dims2")
    # the partial specialisation (Dims = -1) loops over the struct's own dims, through a second whole pass
    body = o[o.index("long get_longlong_longlong("):]
    assert "for (int i = info_dims2 - 1; i > 0; --i)" in body
    assert "innermost_longlong_longlong(info_data2, info_sizes2, info_strides2, info_dims2, i)" in body
    # by value: the same fields
    assert "first_plus_dims(info_data, info_sizes, info_strides, info_dims)" in o
    g = translate_file(SRC, "glsl", validate=False).shaders["gather_strided"]
    assert "int64_t off = get(int64_t(i), 0, 0, 0, info_dims);" in g
    assert "for (int i = info_dims2 - 1; i > 0; --i)" in g


def test_fixture_matches_numpy_on_lavapipe_and_pocl(monkeypatch):
    results = run_spec(monkeypatch, os.path.join(FIX, "verify_spec.py"))
    assert not failures(results), failures(results)
    want = expected_runs({"gather_strided"})
    assert want <= ran_keys(results), sorted(want - ran_keys(results))


G = "struct G { const int *idx; float *data; int n; };\n"
REFUSED = [
    # the callee writes a field of it, copies it whole, or passes its address on (line of the use in the callee)
    (G + "__device__ void bump(G &g) {\n  g.n += 1;\n}\n"
     "__global__ void k(G g, float *out) {\n  bump(g);\n  out[0] = g.n;\n}\n", 3, "a write to"),
    (G + "__device__ float first(G g) {\n  G h = g;\n  return h.data[0];\n}\n"
     "__global__ void k(G g, float *out) {\n  out[0] = first(g);\n}\n", 3, "used whole"),
    (G + "__device__ float at(const G *g) { return g->data[0]; }\n__device__ float first(const G &g) {\n"
     "  return at(&g);\n}\n__global__ void k(G g, float *out) {\n  out[0] = first(g);\n}\n", 4, "used whole"),
    # copied into a local in the kernel itself (not a call argument)
    (G + "__global__ void k(G g, float *out) {\n  G h = g;\n  out[0] = h.data[0];\n}\n", 3, "used whole"),
]


@pytest.mark.parametrize("target", ["glsl", "opencl"])
@pytest.mark.parametrize("code,line,what", REFUSED)
def test_refused_at_the_line(tmp_path, target, code, line, what):
    assert_refused_at(tmp_path, target, code, line, what)


SPEC = """template <typename T, int N> struct S {
  static __device__ T get(T v) { return v * N; }
};
template <typename T> struct S<T *, 1> {
  static __device__ int get(int v) { return v; }
};
__global__ void k(float *out) {
  out[0] = S<float, 2>::get(out[1]);
}
"""


@pytest.mark.parametrize("target", ["glsl", "opencl"])
def test_a_specialisation_pattern_cuport_does_not_match_is_refused(tmp_path, target):
    # `S<T *, 1>` cannot be matched by parameter and constant: refused rather than guessed
    assert_refused_at(tmp_path, target, SPEC, 8, "a pattern cuport does not decide")


@pytest.mark.parametrize("target", ["glsl", "opencl"])
def test_the_primary_template_runs_with_its_class_arguments(tmp_path, target):
    code = SPEC.replace("template <typename T> struct S<T *, 1> {\n  static __device__ int get(int v) { return v; }"
                        "\n};\n", "template <typename T> struct S<T, 1> {\n  static __device__ T get(T v) "
                        "{ return v + 100; }\n};\n")
    res = translate_text(tmp_path, target, code)
    text = res.text if target == "opencl" else res.shaders["k"]
    # N = 2 from the qualifier (the primary: S<float, 1> would be the specialisation's `v + 100`)
    assert re.search(r"return v \* 2(\.0f?)?;", text), text
    assert "+ 100" not in text

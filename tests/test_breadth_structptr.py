"""Issue 14 item 2: by-value kernel parameters of structs holding pointers, flattened into one parameter per
field (struct_params.py). Fixture: tests/fixtures/breadth/structptr/ (verify_spec.py checks it against NumPy on
lavapipe at subgroups 4/8/16 and on PoCL); what stays ambiguous is refused at its line."""
import json
import os

import pytest

from porter.translate.api import translate_file
from kernel_helpers import (assert_refused_at, can_validate, expected_runs, failures, outputs, ran_keys, run_spec)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIX = os.path.join(ROOT, "tests", "fixtures", "breadth", "structptr")
KERNELS = {"scale_rows<float>", "scale_rows<int>", "gather", "strided"}


@pytest.mark.parametrize("target", ["glsl", "opencl"])
def test_fixture_translates_every_kernel_to_valid_output(target):
    res = translate_file(os.path.join(FIX, "structptr.cu"), target, validate=can_validate(target))
    assert outputs(res) == KERNELS, [d.message for d in res.diagnostics]
    assert not res.failed_kernels
    if res.extra.get("validation"):
        assert all(v["ok"] for v in res.extra["validation"].values()), res.extra["validation"]


def _man(res, kernel):
    m = res.manifests[kernel]
    return json.loads(m) if isinstance(m, str) else m


@pytest.mark.parametrize("target", ["glsl", "opencl"])
def test_manifest_names_each_field(target):
    res = translate_file(os.path.join(FIX, "structptr.cu"), target, validate=False)
    params = _man(res, "scale_rows<float>")["params"]
    assert [p["name"] for p in params] == ["params_batch", "params_dim", "params_x_batch_stride",
                                           "params_out_batch_stride", "params_scale", "params_x_ptr",
                                           "params_out_ptr"]
    assert [p.get("field_of") for p in params][5] == {"param": "params", "field": "x_ptr"}
    kinds = [p["kind"] for p in params]
    assert kinds[5:] == ["buffer", "buffer"] and "buffer" not in kinds[:5]
    # the `void *` field takes the element type of its cast: float in one instance, int in the other
    assert params[5]["type"] == "float"
    assert _man(res, "scale_rows<int>")["params"][6]["type"] == "int"
    s = _man(res, "strided")["params"]
    assert [(p["name"], p["kind"]) for p in s] == [("info_data", "buffer"), ("info_strides", "buffer"),
                                                   ("info_n", "push" if target == "glsl" else "scalar"),
                                                   ("out", "buffer")]
    assert s[1]["field_of"] == {"param": "info", "field": "strides", "elements": 3}
    g = _man(res, "gather")["params"]
    assert [p["name"] for p in g] == ["g_idx", "g_data", "g_n", "out"] and "field_of" not in g[3]


def test_spellings():
    o = translate_file(os.path.join(FIX, "structptr.cu"), "opencl", validate=False).text
    assert "__global const float* restrict params_x_ptr," in o and "long params_x_batch_stride," in o
    assert "out[i] = g_data[g_idx[i]] + *(g_data + i);" in o
    k = translate_file(os.path.join(FIX, "structptr.cu"), "glsl", validate=False).shaders["gather"]
    assert "out_[i] = g_data[g_idx[i]] + g_data[i];" in k.replace("g_data[0 + i]", "g_data[i]") or \
        "g_data[g_idx[i]]" in k


def test_fixture_matches_numpy_on_lavapipe_and_pocl(monkeypatch):
    results = run_spec(monkeypatch, os.path.join(FIX, "verify_spec.py"))
    assert not failures(results), failures(results)
    want = expected_runs(KERNELS)
    assert want <= ran_keys(results), sorted(want - ran_keys(results))


# ---------------------------------------------------------------- what must still be refused
G = "struct G { const int *idx; float *data; int n; };\n"
REFUSED = [
    # used whole: passed to a device function that copies it, copied into a local (line of the use); passed
    # to one that reads its fields: translated (test_breadth_structptr_calls.py)
    (G + "__device__ float first(G g) { G h = g; return h.data[0]; }\n"
     "__global__ void k(G g, float *out) {\n  out[0] = first(g);\n}\n", 2, "used whole"),
    (G + "__global__ void k(G g, float *out) {\n  G h = g;\n  out[0] = h.data[0];\n}\n", 3, "used whole"),
    # the pointer field re-pointed, its address taken, a field written
    (G + "__global__ void k(G g, float *out) {\n  g.data = out;\n  g.data[0] = 1.f;\n}\n", 3, "a write to"),
    (G + "__global__ void k(G g, float *out) {\n  float **q = &g.data;\n  out[0] = 0.f;\n}\n", 3, "a write to"),
    (G + "__global__ void k(G g, float *out) {\n  g.n += 1;\n  out[0] = g.n;\n}\n", 3, "a write to"),
    # pointer fields compared (separate buffers: no common address space to compare in)
    ("struct P { float *a; float *b; };\n__global__ void k(P p, float *out) {\n  if (p.a == p.b) out[0] = 1.f;\n}\n",
     3, "pointer comparison"),
    # a void * field never cast: its element type is unknown (refused at the field)
    ("struct U {\n  void *p;\n  int n;\n};\n__global__ void k(U u, float *out) { out[0] = u.n; }\n", 2,
     "never cast"),
    # a struct of structs holding pointers
    (G + "struct H { G inner; int m; float *w; };\n__global__ void k(H h, float *out) { out[0] = h.w[0]; }\n",
     1, "a pointer inside struct `G`"),
    # a two-dimensional array field; an element of an array field written (it is a read-only buffer)
    ("struct T {\n  long *data;\n  long sizes[4][2];\n};\n__global__ void k(T t, long *out) { out[0] = t.data[0]; }\n",
     3, "field `sizes`"),
    ("struct T {\n  long *data;\n  long sizes[4];\n};\n__global__ void k(T t, long *out) {\n  t.sizes[1] = 2;\n"
     "  out[0] = t.sizes[1];\n}\n", 6, "a write to"),
    # a member function of the struct
    ("struct M {\n  float *d;\n  __device__ float at(int i) const { return d[i]; }\n};\n"
     "__global__ void k(M m, float *out) {\n  out[0] = m.at(0);\n}\n", 6, "member function"),
]


@pytest.mark.parametrize("target", ["glsl", "opencl"])
@pytest.mark.parametrize("code,line,what", REFUSED)
def test_refused_at_the_line(tmp_path, target, code, line, what):
    assert_refused_at(tmp_path, target, code, line, what)

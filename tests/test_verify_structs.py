"""Structs in verify: the spec notation (Case(structs=...)), structured inputs and field-by-field comparison, the
hosts' bytes (Vulkan parameter block, OpenCL by-value arguments), derived cases of mixed-type struct buffers and
by-value structs / vectors, and the translators' refusal of structs whose C layout they cannot keep."""
import numpy as np
import pytest

from kernel_helpers import assert_refused_at, run_spec, translate_text
from porter.verify.backends import CompileError
from porter.verify.backends.opencl import _record_arg
from porter.verify.backends.vulkan import _push_bytes
from porter.verify.derive import case_from_dict, derive_file
from porter.verify.notation import parse_records, parse_signature
from porter.verify.spec import Case, SpecError, full, uniform

ATOM = "x: f32, y: f32, z: f32, type: i32"


# ------------------------------------------------------------------------------------------ notation

def test_struct_fields_are_laid_out_as_c_does():
    r = parse_records({"Atom": ATOM, "M": "a: f32, b: f64", "V3": "x: f32, y: f32, z: f32",
                       "N": "c: i8, v: V3[2], m: M"})
    assert r["Atom"].dtype.itemsize == 16 and [r["Atom"].dtype.fields[f][1] for f in "xyz"] == [0, 4, 8]
    # {float a; double b;}: b aligned to 8, size rounded to 16 (C's rule, and std430's)
    assert (r["M"].dtype.fields["b"][1], r["M"].dtype.itemsize, r["M"].align) == (8, 16, 8)
    # a nested struct array at its alignment (4), a nested struct with a double at 8
    n = r["N"].dtype
    assert (n.fields["v"][1], n.fields["v"][0].shape, n.fields["m"][1], n.itemsize) == (4, (2,), 32, 48)


def test_explicit_offsets_and_size_describe_a_packed_struct():
    (p,) = parse_records({"P": "c: i8, v: f32 @ 1; size = 5"}).values()
    assert (p.dtype.fields["c"][1], p.dtype.fields["v"][1], p.dtype.itemsize) == (0, 1, 5)


@pytest.mark.parametrize("text, fragment", [
    ("x: f33", "unknown type 'f33'"),
    ("x: f32, x: i32", "field 'x' appears twice"),
    ("x: f64; size = 4", "size 4 is less than its fields' end (8 bytes)"),
    ("x: f32[2.5]", "'2.5' is not a non-negative integer"),
    ("x: f32 @ 0, y: f32 @ 2", "overlap"),
])
def test_struct_errors(text, fragment):
    with pytest.raises(SpecError) as err:
        parse_records({"S": text})
    assert fragment in str(err.value)


def test_a_signature_names_structs_like_dtypes():
    recs = parse_records({"Atom": ATOM})
    a, p, n = parse_signature("a: Atom[n] in, p: Atom, n: i32", recs)
    assert (a.is_array, a.is_record, a.np_dtype.itemsize, p.is_array, p.is_record, n.is_record) == \
        (True, True, 16, False, True, False)
    with pytest.raises(SpecError) as err:
        parse_signature("a: Atom[n] in", {})
    assert err.value.column == 4 and "unknown type 'Atom'" in str(err.value)
    with pytest.raises(SpecError, match="struct 'p' cannot have a default"):
        parse_signature("p: Atom = 1", recs)


# ------------------------------------------------------------------------------------------ values

def _case(**kw):
    base = dict(kernel="k", source="k.cu", structs={"Atom": ATOM, "M": "a: f32, b: f64"},
                signature="a: Atom[n] in, o: Atom[n] out, p: M, n: i32", grid="1", block="1", reference=None,
                sizes=[{"n": 64}])
    return Case(**{**base, **kw})


def test_struct_inputs_are_random_per_field_outputs_poison_by_values_one_struct():
    args = _case(init={"p": {"a": full(2.5)}, "a": {"type": uniform(3, 3)}}).make_args({"n": 64})
    a, o, p = args["a"], args["o"], args["p"]
    assert a.dtype.names == ("x", "y", "z", "type") and a.shape == (64,)
    assert (a["x"].min() >= -1 and a["x"].max() <= 1 and len(set(a["x"])) > 32)
    assert set(a["type"]) == {3}
    assert np.isnan(o["x"]).all() and (o["type"] == np.iinfo(np.int32).max).all()
    assert isinstance(p, np.void) and p["a"] == 2.5 and -1 <= p["b"] <= 1
    # without init a struct's integers are small (0..9): often indices
    ints = _case().make_args({"n": 64})["a"]["type"]
    assert ints.min() >= 0 and ints.max() <= 9 and len(set(ints)) > 3
    with pytest.raises(SpecError, match="unknown field"):
        _case(init={"p": {"zz": full(1)}}).make_args({"n": 64})


def test_struct_outputs_are_compared_field_by_field_naming_the_field():
    case = _case(signature="m: M[n] inout, n: i32")
    want = case.make_args({"n": 8})["m"]
    got = want.copy()
    got["b"][5] += 1e-9
    c = case.compare_output(case.sig["m"], got, want)
    assert not c.ok and c.name == "m.b" and c.first_bad == (5,) and c.n_bad == 1
    got = want.copy()
    got["a"][2] += 1e-7                  # within f32's default tolerance, b untouched
    assert case.compare_output(case.sig["m"], got, want).ok
    got = want.copy()
    got.view(np.uint8)[4] ^= 0xFF        # a padding byte (between a and b): not compared
    assert case.compare_output(case.sig["m"], got, want).ok


# ------------------------------------------------------------------------------------------ hosts

def test_vulkan_packs_a_struct_by_value_and_refuses_another_layout():
    recs = parse_records({"Params": "scale: f32, shift: i32", "M": "a: f32, b: f64"})
    p = np.zeros(1, recs["Params"].dtype)[0]
    p["scale"], p["shift"] = 2.0, 7
    pc = {"name": "p", "offset": 4, "type": "struct Params", "size": 8,
          "fields": [{"name": "scale", "offset": 4, "size": 4}, {"name": "shift", "offset": 8, "size": 4}]}
    data = _push_bytes({"push_constant_size": 12, "push_constants": [pc]}, {"p": p})
    assert data == b"\0" * 4 + np.float32(2.0).tobytes() + np.int32(7).tobytes()
    m = np.zeros(1, recs["M"].dtype)[0]
    demoted = {"name": "m", "offset": 0, "type": "struct M", "size": 8,
               "fields": [{"name": "a", "offset": 0, "size": 4}, {"name": "b", "offset": 4, "size": 4}]}
    with pytest.raises(CompileError, match="the spec's struct has 16 bytes, the translation's parameter block 8"):
        _push_bytes({"push_constant_size": 8, "push_constants": [demoted]}, {"m": m})
    moved = dict(pc, fields=[{"name": "scale", "offset": 8, "size": 4}])     # the block's offsets: 4 + 4
    with pytest.raises(CompileError, match="field 'scale' is at offset 0 .* at 4"):
        _push_bytes({"push_constant_size": 12, "push_constants": [moved]}, {"p": p})


def test_opencl_pads_a_3_vector_by_value_and_refuses_another_size():
    f3 = np.zeros(1, parse_records({"float3": "x: f32, y: f32, z: f32"})["float3"].dtype)[0]
    f3["x"], f3["z"] = 1.0, 3.0
    arg = _record_arg("w", f3, {"name": "w", "type": "float3", "size": 12})
    assert arg.nbytes == 16 and arg[:12].tobytes() == f3.tobytes() and not arg[12:].any()
    m = np.zeros(1, parse_records({"M": "a: f32, b: f64"})["M"].dtype)[0]
    assert _record_arg("m", m, {"type": "struct M", "size": 16}).nbytes == 16
    with pytest.raises(CompileError, match="the spec's struct has 16 bytes, the translation's 8"):
        _record_arg("m", m, {"type": "struct M", "size": 8})


# ------------------------------------------------------------------------------------------ derive

MIXED = """#include <cuda_runtime.h>
struct Atom { float x, y, z; int type; };
struct Params { float scale; int shift; };
struct Mixed { float a; double b; };
struct __attribute__((packed)) Packed { float x, y, z; int type; };
struct Cell { Atom atoms[2]; short tag; };
__global__ void move(const Atom *atoms, Atom *out, Params p, float3 w, Mixed *m, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    Atom a = atoms[i];
    a.x = a.x * p.scale + w.x;
    a.y = a.y * p.scale + w.y;
    a.z = a.z * p.scale + w.z;
    a.type = a.type + p.shift;
    out[i] = a;
    m[i].b = m[i].b + m[i].a;
  }
}
__global__ void cells(const Cell *c, const Packed *q, float *out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = c[i].atoms[1].x + c[i].tag + q[i].y;
}
int main() {
  const int n = 1000;
  Atom *a, *o; Mixed *m; Cell *c; Packed *q; float *out;
  cudaMalloc(&a, n * sizeof(Atom));
  cudaMalloc(&o, n * sizeof(Atom));
  cudaMalloc(&m, n * sizeof(Mixed));
  cudaMalloc(&c, n * sizeof(Cell));
  cudaMalloc(&q, n * sizeof(Packed));
  cudaMalloc(&out, n * sizeof(float));
  Params p = {2.0f, 3};
  move<<<(n + 255) / 256, 256>>>(a, o, p, make_float3(1, 2, 3), m, n);
  cells<<<(n + 255) / 256, 256>>>(c, q, out, n);
  return 0;
}
"""


def _derive(tmp_path, text, name="k.cu"):
    (tmp_path / name).write_text(text)
    return {d.kernel: d for d in derive_file(str(tmp_path / name))}


def test_mixed_struct_buffers_and_by_value_structs_are_derived(tmp_path):
    ks = _derive(tmp_path, MIXED)
    mv = ks["move"]
    assert mv.problems == []
    assert mv.signature == "atoms: Atom[n] in, out: Atom[n] inout, p: Params, w: float3, m: Mixed[n] inout, n: i32"
    assert mv.structs == {"Atom": ATOM, "Params": "scale: f32, shift: i32", "float3": "x: f32, y: f32, z: f32",
                          "Mixed": "a: f32, b: f64"}
    assert "'p' is a `Params` by value: its fields are random (init={'p': {field: ...}} sets them)" in mv.notes
    assert [p.init for p in mv.params] == [None, None, None, None, None, None]   # struct fields: spec defaults
    case = case_from_dict(mv.as_dict())
    assert case.sig["m"].np_dtype.itemsize == 16 and sorted(case.tol) == ["f32", "f64"]
    cl = ks["cells"]
    # nested struct arrays; a packed struct without padding is C's natural layout, written plainly
    assert cl.problems == [] and cl.signature == "c: Cell[n] in, q: Packed[n] in, out: f32[n] out, n: i32"
    assert cl.structs == {"Atom": ATOM, "Cell": "atoms: Atom[2], tag: i16", "Packed": ATOM}
    assert case_from_dict(cl.as_dict()).sig["c"].np_dtype.itemsize == 36


def test_a_packed_struct_with_padding_is_written_with_its_offsets(tmp_path):
    text = MIXED.replace("struct __attribute__((packed)) Packed { float x, y, z; int type; };",
                         "struct __attribute__((packed)) Packed { char c; float y; };")
    cl = _derive(tmp_path, text)["cells"]
    assert cl.structs["Packed"] == "c: i8 @ 0, y: f32 @ 1; size = 5"
    assert case_from_dict(cl.as_dict()).sig["q"].np_dtype.fields["y"][1] == 1


@pytest.mark.parametrize("member, why", [
    ("float *p;", "has a pointer member `p`"),
    ("int a : 3; int b : 5;", "has a bit-field `a`"),
])
def test_structs_the_spec_cannot_describe_stay_problems(tmp_path, member, why):
    text = f"""struct S {{ float v; {member} }};
union U {{ float f; int i; }};
__global__ void k(S *s, U *u, S byval, int n) {{
  int i = threadIdx.x; if (i < n) {{ s[i].v = u[i].f + byval.v; }}
}}
int main() {{ const int n = 64; S *s; U *u; S b = {{}}; cudaMalloc(&s, n * sizeof(S)); cudaMalloc(&u, n * sizeof(U));
  k<<<1, 64>>>(s, u, b, n); return 0; }}
"""
    k = _derive(tmp_path, text)["k"]
    got = {p.what: p.message for p in k.problems}
    assert set(got) == {"s", "u", "byval"}
    assert f"'s' points to `S`: `S` {why}" in got["s"]
    assert "'u' points to `U`: `U` is a union" in got["u"]
    assert f"'byval' is a `S`: `S` {why}" in got["byval"]
    assert k.structs == {}


# ------------------------------------------------------------------------------------------ translators

@pytest.mark.parametrize("target", ["glsl", "opencl"])
@pytest.mark.parametrize("decl, line, what", [
    ("struct __attribute__((packed)) S { char c; float v; };", 1,
     "struct `S`: field `v` is at byte 1 in CUDA, at 4 in the translation"),
    ("struct alignas(16) S { float v; };", 1, "struct `S` is 16 bytes in CUDA, 4 in the translation"),
    ("struct S {\n int a : 3; float v; };", 2, "a bit-field in struct `S`"),
])
def test_a_struct_whose_c_layout_the_translation_cannot_keep_is_refused(tmp_path, target, decl, line, what):
    code = decl + "\n__global__ void k(S *s, int n) { int i = threadIdx.x; if (i < n) s[i].v += 1.0f; }\n"
    assert_refused_at(tmp_path, target, code, line, what)


@pytest.mark.parametrize("target", ["glsl", "opencl"])
def test_a_double_inside_a_struct_is_kept_even_where_the_kernel_declares_none(tmp_path, target):
    # was: the kernel "used no double", so `double b` was demoted to float and the struct shrank to 8 bytes
    res = translate_text(tmp_path, target, "struct M { float a; double b; };\n"
                         "__global__ void k(M *m, int n) { int i = threadIdx.x; if (i < n) m[i].b += m[i].a; }\n")
    text = (res.shaders or {}).get("k") if target == "glsl" else res.text
    assert "double b;" in text and "float b;" not in text
    buf = next(q for q in res.manifests["k"].get("buffers") or res.manifests["k"]["params"] if q["name"] == "m")
    assert buf["elem_size"] == 16


def test_float3_members_and_by_value_float3_keep_cudas_layout(tmp_path):
    # a float3 member: std430 would align it to 16; the buffer takes the scalar block layout (C's offsets)
    code = ("struct V { float3 p; float w; };\n"
            "__global__ void k(V *v, float3 d, int n) { int i = threadIdx.x; if (i < n) { v[i].p.x += d.x; "
            "v[i].w += d.z; } }\n")
    g = translate_text(tmp_path, "glsl", code)
    assert "layout(scalar, set = 0, binding = 0)" in g.shaders["k"]
    assert g.manifests["k"]["buffers"][0]["elem_size"] == 16
    o = translate_text(tmp_path, "opencl", code)
    assert next(q for q in o.manifests["k"]["params"] if q["name"] == "v")["elem_size"] == 16


# ------------------------------------------------------------------------------------------ end to end

SPEC = """from porter.verify.spec import Case
import numpy as np


def ref(atoms, p, w, m):
    out = atoms.copy()
    for f, c in zip("xyz", "xyz"):
        out[f] = atoms[f] * p["scale"] + w[c]
    out["type"] = atoms["type"] + p["shift"]
    mm = m.copy()
    mm["b"] = m["b"] + m["a"]
    return {"out": out, "m": mm}


KERNELS = [Case(source="k.cu", kernel="move",
    structs={"Atom": "x: f32, y: f32, z: f32, type: i32", "Params": "scale: f32, shift: i32",
             "float3": "x: f32, y: f32, z: f32", "Mixed": "a: f32, b: f64"},
    signature="atoms: Atom[n] in, out: Atom[n] out, p: Params, w: float3, m: Mixed[n] inout, n: i32",
    grid="cdiv(n, 256)", block="256", sizes=[{"n": 1000}], reference=ref)]
"""


def test_a_mixed_struct_buffer_and_by_value_structs_verify_against_a_reference(tmp_path, monkeypatch):
    (tmp_path / "k.cu").write_text(MIXED)
    (tmp_path / "verify_spec.py").write_text(SPEC)
    results = run_spec(monkeypatch, tmp_path / "verify_spec.py")
    assert sorted((r.target, r.variant) for r in results) == \
        [("opencl", "-"), ("vulkan", "sg16"), ("vulkan", "sg4"), ("vulkan", "sg8")]
    assert all(r.status == "pass" for r in results), [(r.target, r.variant, r.message) for r in results]


def test_a_reference_that_disagrees_names_the_field(tmp_path, monkeypatch):
    (tmp_path / "k.cu").write_text(MIXED)
    (tmp_path / "verify_spec.py").write_text(SPEC.replace('p["shift"]', 'p["shift"] + 1'))
    results = run_spec(monkeypatch, tmp_path / "verify_spec.py", targets=("opencl",))
    (r,) = results
    assert r.status == "FAIL" and r.message.startswith("out.type: 1000 of 1000 elements differ"), r.message


def test_a_struct_with_a_bool_member_is_refused_by_glsl(tmp_path):
    # GLSL's bool is 4 bytes in a buffer, C's 1: neither std430 nor the scalar layout keeps the struct's bytes
    code = "struct S { float v; bool on; };\n__global__ void k(S *s, int n) { int i = threadIdx.x; " \
           "if (i < n && s[i].on) s[i].v += 1.0f; }\n"
    assert_refused_at(tmp_path, "glsl", code, 2, "buffer `s` of `S` (its std430 array stride differs")


def test_a_by_value_struct_with_an_array_member_keeps_its_layout(tmp_path):
    # nonzero's TensorDims { index_t sizes[2]; } (was refused: "struct parameter `dims` (its std430 layout
    # differs from CUDA's)": arrays were never compared); a float3 array is, and gets the scalar layout
    code = ("struct D { long long sizes[2]; };\nstruct V { float3 p[2]; };\n"
            "__global__ void k(long long *o, D d, V v, int n) { int i = threadIdx.x; "
            "if (i < n) o[i] = d.sizes[1] + (long long)v.p[1].z; }\n")
    g = translate_text(tmp_path, "glsl", code)
    pcs = {p["name"]: p for p in g.manifests["k"]["push_constants"]}
    assert (pcs["d"]["offset"], pcs["d"]["size"], pcs["v"]["offset"], pcs["v"]["size"]) == (0, 16, 16, 24)
    assert "layout(push_constant, scalar)" in g.shaders["k"]

"""Issue 14 item 2 (HeCBench bitpermute): `d_out == d_in` of two kernel pointer parameters is a launch input.
GLSL takes it as a push constant the host sets when it binds one buffer to both (manifest "same_memory"); OpenCL
compares the two `__global` pointers; the pair is never `restrict` (nor readonly / writeonly in GLSL). Verify specs
bind one array to two parameters with `alias=`. Offsets, relational compares and device functions still refuse."""
import os

import numpy as np
import pytest

from porter.translate.api import translate_file
from porter.verify.spec import Case, SpecError
from tests.kernel_helpers import (can_validate, expected_runs, failures, outputs, ran_keys, refusal, run_spec,
                                  translate_text)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIX = os.path.join(ROOT, "tests", "fixtures", "breadth", "samemem")
SRC = os.path.join(FIX, "inplace.cu")
CASES = {"permute_one_block", "permute_one_block_in_place", "permute_blocks", "permute_blocks_in_place", "mark",
         "mark_in_place", "smooth", "smooth_in_place"}


def test_fixture_passes_in_and_out_of_place_on_lavapipe_and_pocl(monkeypatch):
    results = run_spec(monkeypatch, os.path.join(FIX, "verify_spec.py"))
    assert failures(results) == []
    assert ran_keys(results) == expected_runs(CASES)


@pytest.mark.parametrize("target", ["glsl", "opencl"])
def test_fixture_translates_every_kernel(target):
    res = translate_file(SRC, target, validate=can_validate(target))
    want = {"bit_rev_permutation", "mark", "smooth"}
    assert (set(res.shaders) if target == "glsl" else set(res.manifests)) == want, res.failed_kernels
    if res.extra.get("validation"):
        assert all(v["ok"] for v in res.extra["validation"].values()), res.extra["validation"]


def test_glsl_flag_is_a_push_constant_the_manifest_names():
    res = translate_file(SRC, "glsl", validate=False)
    s, m = res.shaders["mark"], res.manifests["mark"]
    # both bindings plain: no readonly / writeonly / restrict, the host may bind one buffer to both
    assert "layout(std430, set = 0, binding = 0) buffer dst_buf { float dst[]; };" in s
    assert "layout(std430, set = 0, binding = 1) buffer src_buf { float src[]; };" in s
    assert "layout(offset = 4) uint cuport_same_dst_src;" in s
    assert "const bool cuport_same_dst_src = pc.cuport_same_dst_src != 0u;" in s
    assert "dst[i] = (cuport_same_dst_src) ? src[i] * 2.0 : src[i] + 1.0;" in s
    flag = [p for p in m["params"] if p["name"] == "cuport_same_dst_src"]
    assert flag == [{"name": "cuport_same_dst_src", "kind": "push", "offset": 4, "type": "uint", "size": 4,
                     "same_memory": ["dst", "src"]}]
    assert [p["name"] for p in m["params"]] == ["dst", "src", "n", "cuport_same_dst_src"]
    assert {"name": "cuport_same_dst_src", "offset": 4, "type": "uint", "size": 4,
            "same_memory": ["dst", "src"]} in m["push_constants"]
    assert m["push_constant_size"] == 8
    assert m["same_memory"] == [{"params": ["dst", "src"], "flag": "cuport_same_dst_src"}]


def test_glsl_barrier_between_the_pair_orders_global_memory():
    res = translate_file(SRC, "glsl", validate=False)
    s = res.shaders["smooth"]
    # src read before the barrier, dst written after: one memory when in place
    assert "if (cuport_same_dst_src) {\n        groupMemoryBarrier();\n        barrier();" in s
    assert "coherent buffer dst_buf" in s and "coherent buffer src_buf" in s


def test_opencl_compares_pointers_without_restrict(tmp_path):
    code = """
__global__ void k(float *__restrict__ a, const float *__restrict__ b, float *__restrict__ c, int n)
{
    int i = threadIdx.x;
    if (i < n) { c[i] = b[i]; a[i] = (b != a) ? b[i] : 0.0f; }
}
"""
    res = translate_text(tmp_path, "opencl", code)
    text = res.text
    assert "__global float* a," in text and "__global const float* b," in text
    assert "__global float* restrict c," in text          # not compared: keeps its restrict
    assert "(b != a) ? b[i] : 0.0f" in text
    assert res.manifests["k"]["same_memory"] == [{"params": ["a", "b"]}]
    g = translate_text(tmp_path, "glsl", code)
    s = g.shaders["k"]
    assert "binding = 0) buffer a_buf" in s and "binding = 1) buffer b_buf" in s
    assert "binding = 2) writeonly restrict buffer c_buf" in s
    assert "a[i] = (!cuport_same_a_b) ? b[i] : 0.0;" in s


REFUSED = """
__device__ bool same(const float *p, const float *q) { return p == q; }
__global__ void offset(float *a, const float *b) { if (a + 1 == b) a[0] = 1.0f; }
__global__ void ordered(float *a, const float *b) { if (a < b) a[0] = 1.0f; }
__global__ void in_device_function(float *a, const float *b) { if (same(a, b)) a[0] = 1.0f; }
__global__ void repointed(float *a, const float *b, int k) { a += k; if (a == b) a[0] = 1.0f; }
"""


@pytest.mark.parametrize("target", ["glsl", "opencl"])
@pytest.mark.parametrize("kernel,row,col,text", [
    ("offset", 3, 56, "a + 1 == b"), ("ordered", 4, 57, "a < b"), ("in_device_function", 2, 63, "p == q"),
    ("repointed", 6, 74, "a == b")])
def test_other_pointer_comparisons_refuse_at_their_line(tmp_path, target, kernel, row, col, text):
    res = translate_text(tmp_path, target, REFUSED)
    d = [x for x in res.diagnostics if x.code == "CP907" and x.severity == "error" and f"`{kernel}`" in x.message]
    assert len(d) == 1, [x.message for x in res.diagnostics]
    assert (d[0].row, d[0].column) == (row, col)
    assert f"a pointer comparison `{text}`" in d[0].message
    assert kernel not in (res.shaders if target == "glsl" else res.manifests)


@pytest.mark.parametrize("target", ["glsl", "opencl"])
def test_pointer_to_array_is_named_not_unknown(tmp_path, target):
    # bitpermute's `xchg` over its own elements translates (array_pointers.py, tests/test_array_pointers.py); one
    # made from another element type stays refused, named with its type
    code = """
__global__ void k(long *out, const long *in)
{
    extern __shared__ long exchange[];
    long (*xchg)[4][4] = reinterpret_cast<long (*)[4][4]>(exchange);
    xchg[0][threadIdx.x][0] = in[threadIdx.x];
    __syncthreads();
    out[threadIdx.x] = xchg[0][0][threadIdx.x];
}
"""
    assert "k" in outputs(translate_text(tmp_path, target, code))
    d = refusal(translate_text(tmp_path, target, code.replace("long (*", "int (*")))
    assert (d.row, d.column) == (5, 25), (d.row, d.column, d.message)      # at its initialiser
    assert "a pointer to an array `xchg` (of type `int (*)[4][4]`)" in d.message
    assert "unknown" not in d.message and "function pointer" not in d.message


def test_unknown_type_spelling_names_the_type():
    from porter.translate.kernel import ctype as ct
    t = ct.parse("fr_t (*)[32][32]")
    assert t.kind == "unknown" and str(t) == "fr_t (*)[32][32]"
    assert str(ct.parse("float[4][2]")) == "float[4][2]"


# ---------------------------------------------------------------- spec alias
def _case(**kw):
    base = dict(kernel="k", source="k.cu", signature="d_out: i64[n] out, d_in: i64[n] in, n: i32", grid="1",
                block="n", reference=lambda d_in: {"d_out": d_in}, sizes=[{"n": 8}])
    return Case(**{**base, **kw})


def test_alias_binds_one_array_to_both_parameters():
    c = _case(alias={"d_out": "d_in"})
    args = c.make_args({"n": 8})
    assert list(args) == ["d_out", "d_in", "n"]
    assert args["d_out"] is args["d_in"]
    seen = {}

    def ref(d_out, d_in):
        seen["same"] = d_out is d_in
        return {"d_out": d_in * 2}
    c.reference = ref
    out = c.expected(args, {"n": 8})
    assert seen["same"] is True
    np.testing.assert_array_equal(out["d_out"], args["d_in"] * 2)
    plain = _case().make_args({"n": 8})
    assert plain["d_out"] is not plain["d_in"]
    assert (plain["d_out"] == np.iinfo(np.int64).max).all()      # out: poison, not the input


@pytest.mark.parametrize("alias,sig,why", [
    ({"d_out": "n"}, None, "two different array parameters"),
    ({"d_out": "d_out"}, None, "two different array parameters"),
    ({"d_out": "d_in", "d_in": "x"}, "d_out: i64[n] out, d_in: i64[n] in, x: i64[n] in, n: i32", "itself an alias"),
    ({"d_out": "d_in"}, "d_out: f32[n] out, d_in: i64[n] in, n: i32", "differ"),
])
def test_alias_must_name_two_arrays_of_one_type(alias, sig, why):
    with pytest.raises(SpecError, match=why):
        _case(alias=alias, **({"signature": sig} if sig else {}))


def test_alias_shapes_must_match():
    c = _case(alias={"d_out": "d_in"}, signature="d_out: i64[n] out, d_in: i64[2 * n] in, n: i32")
    with pytest.raises(SpecError, match="shapes"):
        c.make_args({"n": 8})


def test_vulkan_host_sets_the_flag_from_the_binding():
    from porter.verify.backends.vulkan import _push_bytes
    man = {"push_constant_size": 8, "push_constants": [
        {"name": "n", "offset": 0, "type": "int", "size": 4},
        {"name": "cuport_same_a_b", "offset": 4, "type": "uint", "size": 4, "same_memory": ["a", "b"]}]}
    x, y = np.zeros(4, np.float32), np.zeros(4, np.float32)
    assert _push_bytes(man, {"a": x, "b": x, "n": np.int32(3)}) == bytes([3, 0, 0, 0, 1, 0, 0, 0])
    assert _push_bytes(man, {"a": x, "b": y, "n": np.int32(3)}) == bytes([3, 0, 0, 0, 0, 0, 0, 0])

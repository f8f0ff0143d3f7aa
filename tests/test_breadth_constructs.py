"""Issue 14: constructs real programs (HeCBench) use, translated to GLSL and OpenCL. Fixtures:
tests/fixtures/breadth/. Outputs are validated (glslangValidator + spirv-val, PoCL build) where the tools exist."""
import os
import subprocess
import sys

import pytest

from porter.translate.api import translate_file
from porter.translate.kernel.validate import opencl_context, tool

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIX = os.path.join(ROOT, "tests", "fixtures", "breadth")
TARGETS = ("glsl", "opencl")


def fx(*parts):
    return os.path.join(FIX, *parts)


def cuport(*args, cwd=None):
    env = dict(os.environ, PYTHONPATH=ROOT)
    env.pop("CUPORT_TEST_REJECT", None)
    return subprocess.run([sys.executable, "-m", "porter", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=300)


def outputs(res):
    return set(res.shaders) if res.target == "glsl" else set(res.manifests)


def can_validate(target):
    return tool("glslangValidator") is not None if target == "glsl" else opencl_context() is not None


# ---------------------------------------------------------------- 1. kernels in project headers
@pytest.mark.parametrize("target", TARGETS)
def test_kernels_in_project_headers_are_translated_with_the_including_file(target):
    res = translate_file(fx("headers", "main.cu"), target, validate=can_validate(target))
    assert outputs(res) == {"scale", "add_one"}
    assert set(res.failed_kernels) == {"jumps"}
    # the nested header (util/scale.cuh, included twice) and its own include (util/common.h, relative to util/)
    assert [os.path.relpath(h, FIX) for h in res.extra["inlined_headers"]] == \
        ["headers/kernel.h", "headers/util/scale.cuh", "headers/util/common.h"]
    # the refusal points at the header's own line, not at the combined text
    d = next(d for d in res.diagnostics if d.code == "CP907" and "`jumps`" in d.message)
    assert d.severity == "error" and os.path.basename(d.filename) == "kernel.h" and (d.row, d.column) == (10, 3)
    if res.extra.get("validation"):
        assert all(v["ok"] for k, v in res.extra["validation"].items() if k in ("scale", "add_one", "main"))


def test_header_device_function_and_macro_reach_the_kernel():
    res = translate_file(fx("headers", "main.cu"), "opencl", validate=False)
    assert "float twice(float x)" in res.text and "#define TWO 2.0f" in res.text
    assert "a[i] = twice(a[i]) + 1.0f;" in res.text


def test_header_found_only_through_include_dirs_is_not_inlined(tmp_path):
    # a library header (-I) stays an include: its kernels are not this program's; the launch is reported
    lib = tmp_path / "lib"
    lib.mkdir()
    (lib / "libk.cuh").write_text("__global__ void libk(float *a) { a[threadIdx.x] = 0.0f; }\n")
    src = tmp_path / "app.cu"
    src.write_text('#include "libk.cuh"\nint main() { float *a; libk<<<1, 32>>>(a); return 0; }\n')
    res = translate_file(str(src), "glsl", include_dirs=[str(lib)], validate=False)
    assert not res.shaders and "inlined_headers" not in res.extra
    d = [d for d in res.diagnostics if d.code == "CP907"]
    assert len(d) == 1 and d[0].severity == "warning" and (d[0].row, d[0].column) == (2, 24)
    assert "kernel `libk` is launched here but not defined in this file" in d[0].message
    assert res.extra["launched_elsewhere"] == ["libk"]


@pytest.mark.parametrize("target", TARGETS)
def test_cli_header_kernels_written_and_refusal_exit_1(target, tmp_path):
    r = cuport("translate", "--to", target, "--no-validate", fx("headers", "main.cu"), "-o", str(tmp_path / "o"))
    assert r.returncode == 1, r.stderr
    assert "kernel.h:10:3: CP907 [error] kernel `jumps` not translated: `goto`" in r.stderr
    written = sorted(os.listdir(tmp_path / "o"))
    assert written == (["add_one.comp", "scale.comp"] if target == "glsl" else ["main.cl"])


@pytest.mark.parametrize("target", TARGETS)
def test_launched_kernel_defined_in_no_input_is_exit_1(target, tmp_path):
    r = cuport("translate", "--to", target, "--no-validate", fx("multi", "main.cu"), "-o", str(tmp_path / "a"))
    assert r.returncode == 1
    assert "error: kernel `fill` is launched in" in r.stderr and "but no input defines it" in r.stderr
    # a prototype is not a kernel to refuse ("without a body")
    assert "without a body" not in r.stderr
    # with the file that defines it (a multi-file program): translated, exit 0
    r = cuport("translate", "--to", target, "--no-validate", fx("multi"), "-o", str(tmp_path / "b"))
    assert r.returncode == 0, r.stderr
    assert "no input defines it" not in r.stderr
    got = sorted(os.listdir(tmp_path / "b"))
    assert got == (["kernels.fill.comp"] if target == "glsl" else ["kernels.cl"])


# ---------------------------------------------------------------- atomics on fields of buffer elements
@pytest.mark.parametrize("target", TARGETS)
def test_atomics_on_fields_of_buffer_elements(target):
    res = translate_file(fx("struct_atomics.cu"), target, validate=can_validate(target))
    assert outputs(res) == {"insert"} and not res.failed_kernels
    text = res.shaders["insert"] if target == "glsl" else res.text
    if target == "glsl":
        assert "atomicCompSwap(table[slot].key, 0xffffffffu, k)" in text
        assert "atomicAdd(table[slot].value, 1u)" in text and "atomicMax(stats[0].max_key, int(k))" in text
    else:
        assert "atomic_cmpxchg(&table[slot].key, 0xffffffffu, k)" in text
        assert "atomic_add(&(*stats).count, 1)" in text     # `p->f` through a pointer: (*p).f
    if res.extra.get("validation"):
        assert all(v["ok"] for v in res.extra["validation"].values()), res.extra["validation"]


@pytest.mark.parametrize("target", TARGETS)
def test_atomic_on_a_private_struct_field_is_refused(target):
    res = translate_file(fx("private_field_atomic.cu"), target, validate=False)
    assert not outputs(res)
    why = res.failed_kernels["local_cas"]
    assert why.startswith("CP907: `atomicCAS` on ") and ("private memory" in why or "scalar memory" in why)


def test_struct_field_atomics_run_on_pocl():
    np = pytest.importorskip("numpy")
    cl = pytest.importorskip("pyopencl")
    ctx = opencl_context()
    if ctx is None:
        pytest.skip("no OpenCL device")
    res = translate_file(fx("struct_atomics.cu"), "opencl", validate=False)
    q = cl.CommandQueue(ctx)
    prg = cl.Program(ctx, res.text).build()
    rng = np.random.default_rng(14)
    n, cap = 256, 64
    keys = rng.integers(0, 40, n).astype(np.uint32)
    kv = np.dtype([("key", np.uint32), ("value", np.uint32)])
    table = np.zeros(cap, kv)
    table["key"] = 0xFFFFFFFF
    stats = np.zeros(1, [("count", np.int32), ("max_key", np.int32)])
    mf = cl.mem_flags
    tb = cl.Buffer(ctx, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=table)
    kb = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=keys)
    sb = cl.Buffer(ctx, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=stats)
    prg.insert(q, (4 * 64,), (64,), tb, kb, np.int32(n), np.uint32(cap), sb)
    cl.enqueue_copy(q, table, tb)
    cl.enqueue_copy(q, stats, sb)
    q.finish()
    used = table[table["key"] != 0xFFFFFFFF]
    want = dict(zip(*np.unique(keys, return_counts=True)))
    assert {int(k): int(v) for k, v in zip(used["key"], used["value"])} == {int(k): int(v) for k, v in want.items()}
    assert int(stats["count"][0]) == n and int(stats["max_key"][0]) == int(keys.max())


# ---------------------------------------------------------------- templates launched from templated host code
@pytest.mark.parametrize("target", TARGETS)
def test_template_kernel_instantiated_from_templated_host_function(target):
    res = translate_file(fx("host_template.cu"), target, validate=can_validate(target))
    assert outputs(res) == {"fill<float>", "fill<double>"}
    assert set(res.failed_kernels) == {"orphan"} and "is never instantiated" in res.failed_kernels["orphan"]
    if target == "glsl":
        # the double instance keeps double (template arguments count as the kernel's use of double)
        assert "buffer a_buf { double a[]; }" in res.shaders["fill<double>"]
        assert "buffer a_buf { float a[]; }" in res.shaders["fill<float>"]
    else:
        assert "__kernel void fill_float(" in res.text and "__kernel void fill_double(" in res.text
    if res.extra.get("validation"):
        assert all(v["ok"] for v in res.extra["validation"].values()), res.extra["validation"]


@pytest.mark.parametrize("target", TARGETS)
def test_template_arguments_deduced_through_host_templates(target):
    """bsearch/moe-sum/quicksort: `k<<<g, b>>>(d_a, n)` in `run(const T *d_a)`, `run(x)` called without template
    arguments (from main, or from another host template called as `outer<int>`), an enumerator argument."""
    res = translate_file(fx("host_template_deduced.cu"), target, validate=can_validate(target))
    assert outputs(res) == {"scale<float>", "scale<int>", "combine"}
    assert set(res.failed_kernels) == {"unused"} and "is never instantiated" in res.failed_kernels["unused"]
    if target == "opencl":
        assert "__kernel void scale_float(\n    __global const float* restrict a," in res.text
        assert "__kernel void scale_int(\n    __global const int* restrict a," in res.text
        assert "a[i] = 1 == 0 ? a[i] + v : a[i] * v;" in res.text         # OP = MUL
        assert "b[i] = *&a[i] * 3;" in res.text and "__ldg" not in res.text
    if res.extra.get("validation"):
        assert all(v["ok"] for v in res.extra["validation"].values()), res.extra["validation"]


def test_host_template_instance_runs_on_pocl():
    np = pytest.importorskip("numpy")
    cl = pytest.importorskip("pyopencl")
    ctx = opencl_context()
    if ctx is None:
        pytest.skip("no OpenCL device")
    res = translate_file(fx("host_template.cu"), "opencl", validate=False)
    q = cl.CommandQueue(ctx)
    prg = cl.Program(ctx, res.text).build()
    n = 100
    out = np.zeros(128, np.float32)
    buf = cl.Buffer(ctx, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR, hostbuf=out)
    prg.fill_float(q, (128,), (64,), buf, np.int32(n))
    cl.enqueue_copy(q, out, buf)
    q.finish()
    want = np.zeros(128, np.float32)
    want[:n] = np.arange(n, dtype=np.float32) * 2 + 0.5
    assert np.array_equal(out, want)


# ---------------------------------------------------------------- vector code as helper_math.h writes it
VEC = fx("vectors", "vec_ops.cu")


@pytest.mark.parametrize("target", TARGETS)
def test_vector_operator_overloads_and_functional_casts(target):
    res = translate_file(VEC, target, validate=can_validate(target))
    if target == "glsl":
        assert outputs(res) == {"smooth", "clamp3", "pick"}
        s = res.shaders["smooth"]
        # overloads become free functions named after their operator; `float4(x)` is the copy it is
        assert "vec4 op_add(vec4 a, vec4 b)" in s and "void op_addeq(inout vec4 a, vec4 b)" in s
        assert "vec4 prev = i > 0 ? in_[i - 1] : x;" in s
        assert "op_addeq(y, op_mul_v2(x, 0.5));" in s
        # the builtin four-argument make_float4 beside the user's one-argument overload
        assert "return op_add(x, op_mul((op_sub(y, x)), make_float4(a)));" in s
        assert "vec4 make_float4(float s) {\n    return vec4(s, s, s, s);" in s
    else:
        assert outputs(res) == {"smooth", "clamp3", "pick"} and not res.failed_kernels
        assert "float4 op_add(float4 a, float4 b)" in res.text and "void op_addeq_p(float4* a, float4 b)" in res.text
        # OpenCL C has no overloads and the kernels share one file: each overload after the first of its name is
        # named by its place among them (the float4 and float3 `operator*` were one `op_mul` name, a clash)
        assert "float4 op_mul_o1(float4 a, float b)" in res.text and "float3 op_mul_o2(float3 a, float b)" in res.text
        assert "op_addeq_p(&y, op_mul_o1(x, 0.5f));" in res.text and "op_mul_o2(cuport_ld_float3(v[i]), dt)" in res.text
    if res.extra.get("validation"):
        assert all(v["ok"] for v in res.extra["validation"].values()), res.extra["validation"]


def test_overload_resolution_prefers_the_builtin_when_no_user_overload_fits():
    # `fminf(a.x, b.x)` inside the user's float3 fminf is CUDA's float fminf, not a recursive call
    res = translate_file(VEC, "glsl", validate=False)
    s = res.shaders["clamp3"]
    assert "vec3 fminf(vec3 a, vec3 b) {\n    return vec3(min(a.x, b.x), min(a.y, b.y), min(a.z, b.z));" in s
    assert "recursion" not in str(res.failed_kernels)


def test_float3_buffers_use_the_scalar_block_layout_in_glsl():
    res = translate_file(VEC, "glsl", validate=can_validate("glsl"))
    s, m = res.shaders["clamp3"], res.manifests["clamp3"]
    assert "#extension GL_EXT_scalar_block_layout : require" in s
    assert "layout(scalar, set = 0, binding = 0) buffer p_buf { vec3 p[]; };" in s
    assert [b["elem_size"] for b in m["buffers"]] == [12, 12] and "scalarBlockLayout" in m["features"]
    # kernels without 3-vectors keep std430 and ask for no feature
    assert "scalar" not in res.shaders["smooth"] and "scalarBlockLayout" not in res.manifests["smooth"]["features"]


def test_float3_parameter_and_struct_in_scalar_push_constants(tmp_path):
    src = tmp_path / "p.cu"
    src.write_text("struct Cam { float3 origin; float scale; };\n"
                   "__global__ void k(float *out, float3 shift, Cam cam, int n) {\n"
                   "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                   "  if (i < n) out[i] = shift.x + cam.origin.y * cam.scale;\n}\n")
    res = translate_file(str(src), "glsl", validate=can_validate("glsl"))
    s, m = res.shaders["k"], res.manifests["k"]
    assert "layout(push_constant, scalar) uniform cuport_params" in s
    # CUDA's parameter offsets: float3 at 0 (12 bytes), Cam (align 4) at 12, int at 28
    assert [(p["name"], p["offset"], p["size"]) for p in m["push_constants"]] == \
        [("shift", 0, 12), ("cam", 12, 16), ("n", 28, 4)]
    assert [(f["name"], f["offset"]) for f in m["push_constants"][1]["fields"]] == [("origin", 12), ("scale", 24)]
    if res.extra.get("validation"):
        assert all(v["ok"] for v in res.extra["validation"].values()), res.extra["validation"]


@pytest.mark.parametrize("target", TARGETS)
def test_struct_whose_offsets_no_layout_matches_is_refused(target, tmp_path):
    # float3 then float4: CUDA puts c at 16, the scalar layout at 12; OpenCL's float3 is 16 bytes wide
    src = tmp_path / "m.cu"
    src.write_text("struct Mixed { float3 b; float4 c; };\nstruct Ok { float3 b; float c; };\n"
                   "__global__ void bad(Mixed *v) { v[threadIdx.x].b.x = 1.0f; }\n"
                   "__global__ void ok(Ok *v) { v[threadIdx.x].c = 1.0f; }\n")
    res = translate_file(str(src), target, validate=False)
    if target == "glsl":
        assert "bad" in res.failed_kernels and "`Mixed`" in res.failed_kernels["bad"]
        assert outputs(res) == {"ok"} and "layout(scalar" in res.shaders["ok"]
    else:   # 3-vector members packed (CUDA's offsets): float4 c at 16 in both
        assert outputs(res) == {"bad", "ok"} and "    cuport_packed_float3 b;\n    float4 c;" in res.text
        assert "ok" in outputs(res) and "    cuport_packed_float3 b;\n    float c;" in res.text


def test_constant_struct_without_initialiser_is_a_buffer_not_zero(tmp_path):
    # `__constant__ S s;` is set by the host: folding clang's implicit construction to zeros was wrong; it is a
    # buffer the host fills (tests/test_device_globals.py)
    src = tmp_path / "c.cu"
    src.write_text("struct S { float a; int b; };\n__constant__ S s;\n"
                   "__global__ void k(float *out) { out[threadIdx.x] = s.a; }\n")
    for target, read in (("glsl", "= s[0].a;"), ("opencl", "= (*s).a;")):
        res = translate_file(str(src), target, validate=False)
        assert outputs(res) == {"k"}, res.failed_kernels
        assert read in (res.shaders.get("k") or res.text)
        g = res.manifests["k"]["device_globals"]
        assert [(x["name"], x["type"], x["bytes"], x["init"]) for x in g] == [("s", "struct S", 8, None)]


def test_vector_ops_run_on_pocl():
    np = pytest.importorskip("numpy")
    cl = pytest.importorskip("pyopencl")
    ctx = opencl_context()
    if ctx is None:
        pytest.skip("no OpenCL device")
    res = translate_file(VEC, "opencl", validate=False)
    assert "out[i] = in[i] != 0 ? 1.0f / in[i] : 0.0f;" in res.text or " != 0 ? " in res.text
    q = cl.CommandQueue(ctx)
    prg = cl.Program(ctx, res.text).build()
    rng = np.random.default_rng(14)
    n = 1000
    d = rng.uniform(0.5, 2.0, n).astype(np.float32)
    d[::7] = 0.0
    mf = cl.mem_flags
    ib = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=d)
    out = np.zeros(n, np.float32)
    ob = cl.Buffer(ctx, mf.WRITE_ONLY, out.nbytes)
    prg.pick(q, (1024,), (64,), ob, ib, np.int32(n))
    cl.enqueue_copy(q, out, ob)
    q.finish()
    want = np.where(d != 0, 1.0 / np.where(d != 0, d, 1.0), 0.0).astype(np.float32)
    assert np.allclose(out, want, rtol=1e-6)


def test_vector_fixture_matches_numpy_on_lavapipe_and_pocl(monkeypatch):
    icd = "/usr/share/vulkan/icd.d/lvp_icd.x86_64.json"
    if not os.path.exists(icd) or opencl_context() is None or tool("glslangValidator") is None:
        pytest.skip("lavapipe / PoCL / glslang not available")
    monkeypatch.setenv("VK_ICD_FILENAMES", icd)
    from porter.verify.runner import Runner
    from porter.verify.spec import load_spec
    results = Runner(["vulkan", "opencl"], subgroups=[4, 8, 16], jobs=1).run(load_spec(fx("vectors", "verify_spec.py")))
    ran = {(r.case, r.target, r.variant): r.status for r in results if r.status != "skipped"}
    assert set(ran.values()) == {"pass"}, [(r.case, r.target, r.variant, r.message) for r in results]
    assert {("smooth", "vulkan", "sg4"), ("smooth", "vulkan", "sg16"), ("smooth", "opencl", "-"),
            ("clamp3", "vulkan", "sg8"), ("clamp3", "vulkan", "sg16"), ("clamp3", "opencl", "-")} <= set(ran)


@pytest.mark.parametrize("headers", [("sstream", "iostream"), ("ostream", "sstream")])
def test_stream_stubs_included_together_parse(tmp_path, headers):
    # HeCBench perlin/meanshift/rsmt/gerbil: <sstream> beside <iostream> redefined std::ostream in the light stubs
    src = tmp_path / "s.cu"
    src.write_text("".join(f"#include <{h}>\n" for h in headers) +
                   "__global__ void k(float *a) { a[threadIdx.x] = 1.0f; }\n"
                   "int main() { std::stringstream ss; ss << 1; std::cout << ss.str() << std::endl; return 0; }\n")
    res = translate_file(str(src), "opencl", validate=False)
    assert outputs(res) == {"k"}
    assert not [d for d in res.diagnostics if d.code == "CP000"], res.diagnostics


def test_opencl_abs_of_a_double_is_fabs(tmp_path):
    """HeCBench zeropoint: CUDA's abs(double) (an overload of math_functions.h); OpenCL's abs takes integers
    only (PoCL: "call to '_cl_abs' is ambiguous"). abs of an int stays abs."""
    p = tmp_path / "absd.cu"
    p.write_text("__global__ void k(double *d, int *i) { d[0] = abs(d[1] / 2.0); i[0] = abs(i[1]); }\n")
    res = translate_file(str(p), "opencl", validate=can_validate("opencl"))
    assert res.failed_kernels == {}
    assert "d[0] = fabs(d[1] / 2.0);" in res.text and "i[0] = (int)abs(i[1]);" in res.text


def test_opencl_device_function_named_like_a_native_builtin_is_renamed(tmp_path):
    """HeCBench tridiagonal defines `float4 native_divide(float4, float4)`: PoCL rejected the redeclaration of
    the built-in. A user function of another name keeps it."""
    p = tmp_path / "nd.cu"
    p.write_text("__device__ float native_divide(float a, float b) { return a / b; }\n"
                 "__device__ float my_div(float a, float b) { return a / b; }\n"
                 "__global__ void k(float *x) { x[0] = native_divide(x[1], x[2]) + my_div(x[3], x[4]); }\n")
    res = translate_file(str(p), "opencl", validate=can_validate("opencl"))
    assert res.failed_kernels == {}
    assert "float native_divide_fn(float a, float b)" in res.text and "native_divide(" not in \
        res.text.replace("native_divide_fn(", "")
    assert "float my_div(float a, float b)" in res.text


VEC3REFS = fx("vec3refs", "vec3_refs.cu")


def test_opencl_const_uchar3_reference_to_a_buffer_element_is_a_copy():
    """HeCBench dpid: OpenCL C cannot point into CUDA's 12-byte uchar3 layout; a `const uchar3&` to an element of
    a buffer the kernel never writes is bound to a copy (a local, and arguments of read-only device functions,
    also through a device function's pointer parameter)."""
    res = translate_file(VEC3REFS, "opencl", validate=opencl_context() is not None)
    assert "blur" in res.manifests and set(res.failed_kernels) == {"bump"}
    t = res.text
    assert "uchar3 pixel = cuport_ld_uchar3(input[i]);" in t
    assert "add_p(&s, cuport_ld_uchar3(img[i - 1]), 0.25f);" in t       # through neighbours' pointer parameter
    assert "void add_p(float4* output, uchar3 color, float factor)" in t
    assert "__global const cuport_packed_uchar3* color" not in t and "uchar3* color" in t   # &pixel: private
    # the buffer is written in the kernel: refused at the reference, never a copy that misses the write
    d = [d for d in res.diagnostics if d.code == "CP907" and "bump" in d.message]
    assert len(d) == 1 and d[0].row == 46 and "`img`, which the kernel also writes" in d[0].message
    # GLSL passes references as it did (aliases / copies of reads): both kernels
    g = translate_file(VEC3REFS, "glsl", validate=False)
    assert set(g.shaders) == {"blur", "bump"}


def test_vec3_reference_fixture_matches_numpy_on_lavapipe_and_pocl(monkeypatch):
    from kernel_helpers import expected_runs, failures, ran_keys, run_spec
    results = run_spec(monkeypatch, fx("vec3refs", "verify_spec.py"))
    assert failures(results) == []
    assert ran_keys(results) == expected_runs(["blur", "bump"]) - {("bump", "opencl", "-")}

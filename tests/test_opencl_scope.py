"""Issue 14 (OpenCL scope): `__shared__` arrays of device functions are declared in each kernel that reaches the
function and passed down as `__local` pointers (OpenCL allows __local variables at kernel scope only); one array
per declaration and template instance, as in CUDA. Fixtures: tests/fixtures/oclscope/ (verify spec: PoCL and
lavapipe 4/8/16)."""
import os

from porter.translate.api import translate_file
from porter.translate.kernel.validate import opencl_context
from kernel_helpers import expected_runs, failures, ran_keys, run_spec

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIX = os.path.join(ROOT, "tests", "fixtures", "oclscope")


def _cl(name, **kw):
    return translate_file(os.path.join(FIX, name), "opencl", validate=opencl_context() is not None, **kw)


def _kernel(text, name):
    return text[text.index(f"__kernel void {name}("):]


def test_device_function_arrays_are_declared_by_the_kernel_and_passed_down():
    res = _cl("shared_fn.cu")
    assert set(res.manifests) == {"stats", "maxes"}, res.failed_kernels
    t = res.text
    assert "float block_sum(float v, __local float* block_sum_buf) {" in t
    # two functions' arrays named `buf`: two arrays, each named after its function
    assert "float block_max(float v, __local float* block_max_buf) {" in t
    # a caller of block_sum takes its array and passes it on (transitively)
    assert "float mean_of(float v, __local float* block_sum_buf) {" in t
    assert "return block_sum(v, block_sum_buf) / BLOCK;" in t
    # each template instance has its own array; a 2-D array is passed as a pointer to its rows
    assert "float block_first_float(float v, __local float (*block_first_first_float)[64]) {" in t
    assert "int block_first_int(int v, __local int (*block_first_first_int)[64]) {" in t
    k = _kernel(t, "stats")
    k = k[:k.index("__kernel void maxes(")]
    for decl in ("__local float block_sum_buf[64];", "__local float block_max_buf[64];",
                 "__local float block_first_first_float[2][64];", "__local int block_first_first_int[2][64];",
                 "__local int tick_count[1];"):
        assert k.count(decl) == 1, decl
    # a function called three times: one array
    assert k.count(", tick_count)") == 3
    # the other kernel declares only what it reaches; the function's text is shared
    m = _kernel(t, "maxes")
    assert "__local float block_max_buf[64];" in m and "block_sum_buf" not in m
    assert t.count("float block_max(float v") == 1
    if res.extra.get("validation"):
        assert all(v["ok"] for v in res.extra["validation"].values()), res.extra["validation"]


def test_glsl_template_instances_have_their_own_arrays():
    # CUDA: block_first<float> and block_first<int> each have an array (it was one float array for both)
    res = translate_file(os.path.join(FIX, "shared_fn.cu"), "glsl", validate=False)
    s = res.shaders["stats"]
    assert "shared float first[2][64];" in s and "shared int first2[2][64];" in s
    assert "int r = first2[1][0];" in s


def test_shared_scalar_in_a_device_function_is_refused_at_its_line(tmp_path):
    src = tmp_path / "k.cu"
    src.write_text("__device__ float f(float v) {\n  __shared__ float s;\n  if (threadIdx.x == 0) s = v;\n"
                   "  __syncthreads();\n  return s;\n}\n"
                   "__global__ void k(float *o) { o[threadIdx.x] = f(o[0]); }\n")
    res = translate_file(str(src), "opencl", validate=False)
    assert set(res.failed_kernels) == {"k"}
    d = next(d for d in res.diagnostics if d.code == "CP907" and d.severity == "error")
    assert d.row == 2 and "`__shared__` scalar `s` in device function `f`" in d.message
    # the same scalar declared in the kernel translates
    src.write_text("__global__ void k(float *o) {\n  __shared__ float s;\n  if (threadIdx.x == 0) s = o[0];\n"
                   "  __syncthreads();\n  o[threadIdx.x] = s;\n}\n")
    res = translate_file(str(src), "opencl", validate=False)
    assert not res.failed_kernels and "__local float s;" in res.text


def test_cub_block_reduce_in_a_device_function_gets_the_kernels_array(tmp_path):
    src = tmp_path / "k.cu"
    src.write_text("#include <cub/cub.cuh>\n"
                   "__device__ float total(float v) {\n"
                   "  typedef cub::BlockReduce<float, 128> BR;\n  __shared__ typename BR::TempStorage tmp;\n"
                   "  return BR(tmp).Sum(v);\n}\n"
                   "__global__ void k(const float *in, float *o) {\n"
                   "  float t = total(in[blockIdx.x * 128 + threadIdx.x]);\n"
                   "  if (threadIdx.x == 0) o[blockIdx.x] = t;\n}\n")
    res = translate_file(str(src), "opencl", validate=False)
    assert not res.failed_kernels, res.failed_kernels
    assert "float total(float v, __local float* cuport_cub_float_128) {" in res.text
    assert "__local float cuport_cub_float_128[128];" in _kernel(res.text, "k")


def test_fixture_matches_numpy_on_pocl_and_lavapipe(monkeypatch):
    results = run_spec(monkeypatch, os.path.join(FIX, "verify_spec.py"))
    assert not failures(results), failures(results)
    assert ran_keys(results) == expected_runs(("stats", "maxes", "advance", "count")) | {("step", "opencl", "-")}


def test_block_stats_now_translates_for_opencl_and_matches_numpy(monkeypatch):
    # HeCBench logprob / metropolis shapes: static per-warp arrays in block_reduce device functions
    spec = os.path.join(ROOT, "tests", "fixtures", "breadth", "warps", "verify_spec.py")
    results = run_spec(monkeypatch, spec, targets=("opencl",))
    assert {r.case for r in results} == {"row_logsumexp", "cube_energy"}
    assert {r.status for r in results} == {"pass"}, [(r.case, r.message) for r in results]


# ---------------------------------------------------------------- 3-vectors in CUDA's layout (opencl_vec3)
def test_float3_buffers_and_struct_members_keep_cudas_layout():
    res = _cl("vec3.cu")
    assert set(res.manifests) == {"advance", "step", "count"}, res.failed_kernels
    t = res.text
    assert "typedef struct { float x, y, z; } cuport_packed_float3;" in t
    assert "typedef struct { int x, y, z; } cuport_packed_int3;" in t
    # the packed types come before the structs that use them
    assert t.index("cuport_packed_float3;") < t.index("typedef struct Particle")
    assert "    float mass;\n    cuport_packed_float3 pos;\n    cuport_packed_float3 vel;\n} Particle;" in t
    a = _kernel(t, "advance")
    assert "__global cuport_packed_float3* pos," in a and "__global const cuport_packed_float3* vel," in a
    assert "float3 p = cuport_ld_float3(pos[i]);" in a and "pos[i].z += 1.0f;" in a
    # a pointer into the buffer passed to a device function keeps the packed type; the store converts
    assert "void store(__global cuport_packed_float3* p, float3 v) {\n    *p = cuport_st_float3(v);" in t
    s = _kernel(t, "step_kernel")
    assert "float3 v = cuport_ld_float3(q.vel);" in s and "q.vel.y -= 9.8f * dt;" in s
    assert "q.pos = cuport_st_float3((float3)(" in s
    assert "Particle r = (Particle){q.mass * 2.0f, cuport_st_float3(cuport_ld_float3(q.pos))," in s
    assert "cuport_atomicAdd_float_global(&sums[c.x].x, 1.0f);" in _kernel(t, "count")
    # the manifest keeps CUDA's element sizes (the host's)
    assert [p["elem_size"] for p in res.manifests["step"]["params"] if p["kind"] == "buffer"] == [28]
    assert [p["elem_size"] for p in res.manifests["advance"]["params"] if p["kind"] == "buffer"] == [12, 12]
    if res.extra.get("validation"):
        assert all(v["ok"] for v in res.extra["validation"].values()), res.extra["validation"]


def test_3_vector_casts_outside_global_memory_and_buffer_references_are_refused(tmp_path):
    src = tmp_path / "k.cu"
    src.write_text("__global__ void k(float *o) {\n  __shared__ float s[96];\n  s[threadIdx.x] = o[threadIdx.x];\n"
                   "  float3 *v = (float3 *)s;\n  o[threadIdx.x] = v[1].x;\n}\n")
    res = translate_file(str(src), "opencl", validate=False)
    assert set(res.failed_kernels) == {"k"}
    d = next(d for d in res.diagnostics if d.code == "CP907" and d.severity == "error")
    assert d.row == 4 and "a pointer cast `(float3 *)s`" in d.message
    src.write_text("__device__ void bump(float3 &p) { p.x += 1.0f; }\n"
                   "__global__ void k(float3 *o) {\n  bump(o[threadIdx.x]);\n}\n")
    res = translate_file(str(src), "opencl", validate=False)
    assert "a reference to a `float3` in a buffer" in res.failed_kernels["k"]

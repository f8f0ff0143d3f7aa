"""Device-code extraction for NVRTC: host code goes, kernels stay, line numbers are kept."""
import pytest

from porter.verify.extract import device_code

SOURCE = '''#include <cstdio>
#include "local.h"
#define N 256
struct Pair { float a, b; };
typedef unsigned long long u64;
__constant__ float coeffs[4];
const int kBlock = 256;
static const char* name = "{not a brace";
void launch(float* x);   // prototype
template <typename T>
__global__ void scale(T* x, T a) { if (threadIdx.x < N) { x[threadIdx.x] *= a; } }
__device__ __host__ inline float sq(float v) { return v * v; }
extern "C" __global__ void k2(float* x) { x[0] = sq(x[0]); /* } */ }
template <class T> __device__ inline T shfl(T v, int d, int width = warpSize) {
  return v;
}
__device__ float table[2] = {1.0f, 2.0f};
namespace detail {
__device__ int helper() { return 1; }
int host_helper() { return 2; }
}
void launch(float* x) { scale<<<1, N>>>(x, 2.0f); }
int main() {
    printf("}{\\n");
    return 0;
}
'''


def test_keeps_device_side_and_drops_host_side():
    out = device_code(SOURCE)
    assert out.count("\n") == SOURCE.count("\n")
    for kept in ("#define N 256", "struct Pair", "typedef unsigned long long u64", "__constant__ float coeffs",
                 "const int kBlock", "__global__ void scale", "__device__ __host__ inline float sq",
                 'extern "C" __global__ void k2', "namespace detail {", "__device__ int helper",
                 "int width = warpSize) {\n  return v;\n}", "table[2] = {1.0f, 2.0f};"):
        assert kept in out, kept
    for dropped in ("#include", "int main", "printf", "host_helper", "void launch", "<<<"):
        assert dropped not in out, dropped


def test_line_numbers_match():
    out = device_code(SOURCE).splitlines()
    src = SOURCE.splitlines()
    line = next(i for i, s in enumerate(src) if "__global__ void scale" in s)
    assert out[line] == src[line]


def test_constexpr_constants_initialised_with_parentheses_are_kept():
    # `constexpr unsigned int threadsLv1(128);` (HeCBench marchingCubes' style) looked like a prototype and was
    # dropped: NVRTC then failed on every kernel using it (found running the scans fixture on an H200)
    src = ("constexpr unsigned int threadsLv1(128);\nstatic constexpr float k(2.0f);\nvoid launch(float* x);\n"
           "__global__ void g(unsigned *o) { o[0] = threadsLv1; }\n")
    out = device_code(src)
    assert "constexpr unsigned int threadsLv1(128);" in out and "static constexpr float k(2.0f);" in out
    assert "void launch" not in out and out.count("\n") == src.count("\n")


def test_nvrtc_code_declares_cstdint_and_keeps_line_numbers():
    from porter.verify.backends.cuda import nvrtc_code
    src = "#include <cstdint>\n__global__ void g(int64_t *o) { o[0] = 1; }\n"
    code = nvrtc_code(src)
    head, body = code.split("#line 1\n")
    assert "typedef long int64_t;" in head and "typedef unsigned long uint64_t;" in head
    assert "typedef unsigned int uint;" in head          # <sys/types.h>: HeCBench ss and snake use uint
    assert "typedef unsigned long ulong;" in head        # and secp256k1 ulong
    assert body.splitlines()[1] == "__global__ void g(int64_t *o) { o[0] = 1; }"


def test_host_declarations_nvrtc_rejects_can_be_left_out_device_code_cannot():
    # snake's `using clock = std::chrono::steady_clock;` and page-rank's getopt table stay in device_code (a type
    # alias, a constant-like variable) and NVRTC rejects them: repaired() drops the declarations at the lines of
    # its errors; a device function's line is never dropped
    from porter.verify.extract import device_code
    src = ("using clock_t2 = std::chrono::steady_clock;\n"
           "struct option opts[] = {{\"n\", 1, 0, 'n'}};\n"
           "__device__ int twice(int v) { return 2 * v; }\n"
           "__global__ void k(int *x) { x[0] = twice(x[0]); }\n")
    kept = device_code(src)
    assert "std::chrono" in kept and "opts[]" in kept
    code = device_code(src, drop={1, 2, 3})
    assert code.count("\n") == src.count("\n")                     # line numbers kept
    assert "std::chrono" not in code and "opts" not in code and "__device__ int twice" in code
    assert "__global__ void k" in code


def test_the_original_text_holds_the_kernels_of_the_project_headers_it_includes(tmp_path):
    # pnpoly / laplace3d / backprop: the kernel is in kernel.h; the CUDA backend compiled main.cu's device part
    # with the #include blanked: "identifier `pnpoly_base` is undefined"
    from porter.verify.worker import original_text
    (tmp_path / "kernel.h").write_text("__global__ void k(float *x) { x[0] = 1.0f; }\n")
    (tmp_path / "main.cu").write_text('#include <cstdio>\n#include "kernel.h"\nint main() { return 0; }\n')
    text = original_text(tmp_path / "main.cu")
    assert "__global__ void k(float *x)" in text and "#include <cstdio>" in text


def test_repaired_retries_without_the_host_declarations_nvrtc_names(monkeypatch):
    from porter.verify.backends import CompileError, cuda
    src = ("using clock_t2 = std::chrono::steady_clock;\n"
           "__global__ void k(int *x) { x[0] = 1; }\n")
    tried = []

    def module(code, options, name):
        tried.append(code)
        if "std::chrono" in code:
            raise CompileError('NVRTC: /tmp/x.cu(1): error: namespace "std" has no member "chrono"')
        if "BROKEN" in code:
            raise CompileError("NVRTC: /tmp/x.cu(2): error: identifier \"BROKEN\" is undefined")
        return "MOD"
    monkeypatch.setattr(cuda, "_module", module)

    class Case:
        name_expression = "k"
    code, mod = cuda.repaired(Case(), src, ())
    assert mod == "MOD" and len(tried) == 2 and "std::chrono" not in code and "__global__ void k" in code
    # an error in the kernel itself: nothing to leave out, the first error is raised
    with pytest.raises(CompileError, match="BROKEN"):
        cuda.repaired(Case(), src.replace("x[0] = 1", "x[0] = BROKEN"), ())


def test_toolkit_device_headers_stay_when_asked_and_every_other_include_goes():
    from porter.verify.extract import device_code
    src = ("#include <stdio.h>\n#include <cooperative_groups.h>\n#include <cooperative_groups/reduce.h>\n"
           "#include <cub/cub.cuh>\n#include \"kernel.h\"\n#include <cuda_fp16.h>\n"
           "__global__ void k(float *x) { x[0] = 1; }\nint main() { return 0; }\n")
    kept = device_code(src, keep_includes=True).splitlines()
    assert kept[:6] == ["", "#include <cooperative_groups.h>", "#include <cooperative_groups/reduce.h>",
                        "#include <cub/cub.cuh>", "", "#include <cuda_fp16.h>"]
    assert kept[6] == "__global__ void k(float *x) { x[0] = 1; }" and kept[7].strip() == ""
    assert [ln for ln in device_code(src).splitlines()[:6] if ln.strip()] == []     # default: all blanked


def test_nvrtc_code_with_the_toolkit_includes_its_device_headers_and_keeps_line_numbers(monkeypatch):
    from porter.verify.backends import cuda
    src = ("#include <cooperative_groups.h>\n#include <cub/cub.cuh>\n#include <vector>\n"
           "__global__ void k(int64_t *x) { x[0] = 1; }\n")
    monkeypatch.setattr(cuda, "_TOOLKIT", [("-I/usr/local/cuda/include",)])
    code = cuda.nvrtc_code(src)
    head, body = code.split("#line 1\n")
    assert "#include <cuda/std/cstdint>" in head and "typedef long int64_t" not in head   # the toolkit's int64_t
    assert "#include <cub/block/block_reduce.cuh>" in head and "cub/cub.cuh" not in code  # no host dispatch
    assert "#include <cooperative_groups/reduce.h>" in head and "namespace cub { struct Max" in head
    assert body.splitlines() == ["#include <cooperative_groups.h>", "", "", src.splitlines()[3]]
    monkeypatch.setattr(cuda, "_TOOLKIT", [()])          # no toolkit: every #include blanked, STDINT's types
    head, body = cuda.nvrtc_code(src).split("#line 1\n")
    assert "typedef long int64_t" in head and body.splitlines()[:3] == ["", "", ""]


def test_std_type_traits_come_from_libcudacxx_only_where_device_code_names_std(monkeypatch):
    # logprob's std::is_same, tensorAccessor's std::enable_if, attentionMultiHead's std::common_type: NVRTC has no
    # standard library; with the toolkit, std looks into cuda::std
    from porter.verify.backends import cuda
    monkeypatch.setattr(cuda, "_TOOLKIT", [("-I/usr/local/cuda/include",)])
    src = ("template <class T> __global__ void k(T *x) { if (std::is_same<T, float>::value) x[0] = 1; }\n")
    head, body = cuda.nvrtc_code(src).split("#line 1\n")
    assert "#include <cuda/std/type_traits>" in head and "namespace std { using namespace cuda::std; }" in head
    assert body.splitlines()[0] == src.splitlines()[0]
    head, _ = cuda.nvrtc_code("__global__ void k(float *x) { x[0] = 1; }\n").split("#line 1\n")
    assert "cuda/std/type_traits" not in head and "namespace std" not in head


def test_kernels_in_namespaces_are_looked_up_by_their_qualified_name():
    # meanshift's `namespace mean_shift::gpu { __global__ void mean_shift(...) }`: NVRTC said
    # `identifier "mean_shift" is undefined` for the bare name
    from porter.verify.backends.cuda import qualified_name

    class Case:
        kernel, name_expression = "k", "k<float, 3>"
    code = ("namespace a { namespace { struct s { int v; }; }\n namespace b::c {\n"
            "template <class T, int N> __global__ void k(T *p) { { p[0] = N; } }\n} }\n")
    assert qualified_name(code, Case) == "a::b::c::k<float, 3>"
    # braces of other blocks, comments and a namespace that closed before the kernel do not count
    code = ('// namespace z {\nnamespace done { int f() { return 1; } }\nextern "C" {\n'
            "template <class T, int N> __global__ void k(T *p) { p[0] = N; }\n}\n")
    assert qualified_name(code, Case) == "k<float, 3>"
    Case.kernel = "missing"
    assert qualified_name(code, Case) == "k<float, 3>"


def test_functions_declared_with_a_macro_for_device_are_device_code():
    # kalman's `#define DI __device__` and ecdh's `#define ESS __host__ __device__`: the functions were dropped as
    # host code and NVRTC said `identifier "MM_l" is undefined`
    from porter.verify.extract import device_code
    src = ("#define DI __device__\n#define ESS __host__ __device__\n#define MAX(a, b) ((a) > (b) ? (a) : (b))\n"
           "DI int f(int a) { return a; }\nESS\nint g(int a) { return a; }\nint host(int a) { return MAX(a, 1); }\n"
           "__global__ void k(int *x) { x[0] = f(1) + g(2); }\n")
    out = device_code(src).splitlines()
    assert out[3] == "DI int f(int a) { return a; }" and out[5] == "int g(int a) { return a; }"
    assert out[6] == "" and out[7].startswith("__global__ void k")      # a host function still goes
    assert len(out) == src.count("\n")


def test_kernels_in_a_nested_namespace_definition_are_kept():
    # meanshift's `namespace mean_shift::gpu { ... }` (C++17) was taken for host code: nothing was left to compile
    from porter.verify.extract import device_code
    src = "namespace a::b {\n__global__ void k(int *x) { x[0] = 1; }\nint host() { return 0; }\n}\n"
    out = device_code(src).splitlines()
    assert out[:2] == ["namespace a::b {", "__global__ void k(int *x) { x[0] = 1; }"] and out[2:] == ["", "}"]


def test_another_kernel_nvrtc_rejects_is_left_out_the_case_kernel_error_stays(monkeypatch):
    # tensorAccessor: NVRTC rejects `tensor_packed_accessor_kernel` (its accessor class templates), so
    # `raw_accessor_kernel`, which needs none of it, could not be compiled either
    from porter.verify.backends import CompileError, cuda
    src = ("template <class T> struct Acc { T *p; };\n"
           "__global__ void other(Acc<float> a) {\n  a.p[0] = 1;\n}\n"
           "__global__ void k(float *x) {\n  x[0] = 2;\n}\n")
    tried = []

    def module(code, options, name):
        tried.append(code)
        if "__global__ void other" in code:
            raise CompileError("NVRTC: /tmp/x.cu(2): error: attribute \"__global__\" does not apply here")
        if "BROKEN" in code:
            raise CompileError("NVRTC: /tmp/x.cu(6): error: identifier \"BROKEN\" is undefined")
        return "MOD"
    monkeypatch.setattr(cuda, "_module", module)
    monkeypatch.setattr(cuda, "_TOOLKIT", [()])

    class Case:
        kernel, name_expression = "k", "k"
    code, mod = cuda.repaired(Case(), src, ())
    assert mod == "MOD" and "void other" not in code and "__global__ void k(float *x)" in code
    assert code.count("\n") == tried[0].count("\n")                  # line numbers kept
    with pytest.raises(CompileError, match="BROKEN"):               # the case's own kernel: nothing left out
        cuda.repaired(Case(), src.replace("x[0] = 2", "x[0] = BROKEN"), ())
    Case.kernel = Case.name_expression = "other"                     # the failing kernel is the case's: raised
    with pytest.raises(CompileError, match="does not apply"):
        cuda.repaired(Case(), src, ())


def test_kernel_spans_skip_declarations():
    from porter.verify.extract import kernel_spans
    src = ("__global__ void decl(float *x);\ntemplate <int N>\n__global__ void t(float *x) {\n  x[0] = N;\n}\n"
           "// __global__ void c(float *x) { }\n__global__ void u(int *y) { y[0] = 1; }\n")
    assert kernel_spans(src) == [("t", 3, 5), ("u", 7, 7)]


def test_one_scanner_reads_kernel_headers_past_launch_bounds():
    # kernel_spans named hadamard's and rsmt's `__global__ __launch_bounds__(...) void k(` kernels
    # "__launch_bounds__": cuda.repaired then left out every such kernel, the case's among them
    from porter.verify.extract import kernel_headers, kernel_spans, mask
    src = ("__global__ __launch_bounds__(Traits::kThreads)\nvoid a(float *x) {\n  x[0] = 1;\n}\n"
           "static __global__ void __launch_bounds__(f(2) * 4, 2) b(int *y) { y[0] = 2; }\n"
           "template <int N> __global__ void c(int *y);\n"
           "template __global__ void c<4>(int *);\n"
           "// __global__ void gone(int *y) { }\n"
           "__global__ void launch_bounds_user(int __launch_bounds__) { }\n")
    assert [k.group(1) for k in kernel_headers(src)] == ["a", "b", "c", "c", "gone", "launch_bounds_user"]
    assert [k.group(1) for k in kernel_headers(mask(src))] == ["a", "b", "c", "c", "launch_bounds_user"]
    assert [k.group(1) for k in kernel_headers(src, "c")] == ["c", "c"]
    assert list(kernel_headers(src, "x")) == [] and list(kernel_headers("void a(float *x) { }", "a")) == []
    k = next(kernel_headers(src, "b"))
    assert src[k.start():k.end()] == "__global__ void __launch_bounds__(f(2) * 4, 2) b("
    assert kernel_spans(src) == [("a", 1, 4), ("b", 5, 5), ("launch_bounds_user", 9, 9)]


def test_qualified_name_and_kernel_params_use_the_scanner():
    from porter.verify.backends.cuda import _kernel_params, qualified_name

    class Case:
        kernel, name_expression = "k", "k"
    code = ("namespace n {\n__global__ __launch_bounds__(256) void k(float *x, int count) { x[0] = count; }\n"
            "__global__ void k(double *y) { y[0] = 1; }\n}\n__global__ void kk(int other) { }\n")
    assert qualified_name(code, Case) == "n::k"
    assert _kernel_params(code, "k") == "float *x, int count) double *y)"
    assert _kernel_params(code, "kk") == "int other)" and _kernel_params(code, "missing") == ""
    Case.kernel = Case.name_expression = "kk"
    assert qualified_name(code, Case) == "kk"                       # after the namespace closed


def test_a_rejected_kernel_under_launch_bounds_is_left_out_the_case_kernel_kept(monkeypatch):
    from porter.verify.backends import CompileError, cuda
    src = ("__global__ __launch_bounds__(128) void other(float *a) {\n  a[0] = BAD;\n}\n"
           "__global__ __launch_bounds__(128) void k(float *x) {\n  x[0] = 2;\n}\n")

    def module(code, options, name):
        if "BAD" in code:
            raise CompileError("NVRTC: /tmp/x.cu(2): error: identifier \"BAD\" is undefined")
        return "MOD"
    monkeypatch.setattr(cuda, "_module", module)
    monkeypatch.setattr(cuda, "_TOOLKIT", [()])

    class Case:
        kernel, name_expression = "k", "k"
    code, mod = cuda.repaired(Case(), src, ())
    assert mod == "MOD" and "void other" not in code and "__launch_bounds__(128) void k(float *x)" in code
    Case.kernel = Case.name_expression = "other"
    with pytest.raises(CompileError, match="BAD"):
        cuda.repaired(Case(), src, ())


def test_the_cuda_original_inlines_the_headers_of_the_makefiles_include_dirs(tmp_path):
    # debayer's main.cu includes "util.h" from ../debayer-sycl (its Makefile's -I): NVRTC gets no include path, so
    # the original's text inlines it as it does the program's own headers; without the -I it stays an include
    from porter.verify.worker import original_text
    (tmp_path / "prog").mkdir()
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "util.h").write_text("#define INLINE __forceinline__\n")
    (tmp_path / "prog" / "k.h").write_text("INLINE __device__ int twice(int x) { return 2 * x; }\n")
    main = tmp_path / "prog" / "main.cu"
    main.write_text('#include "util.h"\n#include "k.h"\n__global__ void k(int *o) { o[0] = twice(o[0]); }\n')
    with_dirs = original_text(main, [str(tmp_path / "lib")])
    assert "#define INLINE __forceinline__" in with_dirs and "INLINE __device__ int twice" in with_dirs
    without = original_text(main)
    assert "#define INLINE" not in without and '#include "util.h"' in without
    assert "INLINE __device__ int twice" in without          # the program's own header, as before

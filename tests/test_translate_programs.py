"""Whole CUDA programs (host code, a local header, kernels: the shape of HeCBench / Rodinia / cuda-samples
programs) translated with `cuport translate --to hip --include-headers` and compiled for gfx90a.

Every program must compile, or each thing that stops it must be explained by the translator: a missing ROCm
library header named by a diagnostic (hipRAND, hipBLAS, ... are not installed everywhere), or an error on a
line the translator marked with a `// cuport:` note."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROGRAMS = os.path.join(ROOT, "tests", "fixtures", "hip_programs")
HIPCC = shutil.which("hipcc")
ARCH = "gfx90a"
NAMES = sorted(d for d in os.listdir(PROGRAMS) if os.path.isdir(os.path.join(PROGRAMS, d)))
# programs that need a ROCm library: the header the translation includes
LIBRARY_PROGRAMS = {"montecarlo_curand": "hiprand/hiprand_kernel.h", "sgemm_cublas": "hipblas/hipblas.h"}


_CUDA_CALL = re.compile(r"\bcuda(Malloc\w*|Memcpy\w*|Memset\w*|Free\w*|GetErrorString|GetLastError|DeviceSynchronize|"
                        r"Stream[A-Z]\w*|Event[A-Z]\w*|Error_t|Success)\b")


def _main_file(d):
    return next(os.path.join(d, f) for f in sorted(os.listdir(d)) if f.endswith(".cu"))


def _translate_all(out_root):
    """{name: (translated main file, diagnostics text, exit status)} via the command line."""
    res = {}
    for name in NAMES:
        src = _main_file(os.path.join(PROGRAMS, name))
        out = os.path.join(out_root, name)
        r = subprocess.run([sys.executable, "-m", "porter.translate.hip.cli", "--include-headers",
                            "--output-dir", out, src], cwd=ROOT, capture_output=True, text=True, timeout=300)
        assert r.returncode in (0, 1), r.stderr
        res[name] = (os.path.join(out, os.path.basename(src)), r.stderr, r.returncode)
    return res


@pytest.fixture(scope="module")
def translated(tmp_path_factory):
    return _translate_all(str(tmp_path_factory.mktemp("hip_programs")))


def test_programs_exist():
    assert len(NAMES) >= 8
    for name in NAMES:
        d = os.path.join(PROGRAMS, name)
        assert any(f.endswith((".h", ".cuh")) for f in os.listdir(d)), f"{name} has no local header"


@pytest.mark.parametrize("name", NAMES)
def test_headers_translated_too(translated, name):
    main, _, _ = translated[name]
    d = os.path.dirname(main)
    headers = [f for f in os.listdir(os.path.join(PROGRAMS, name)) if f.endswith((".h", ".cuh"))]
    for h in headers:
        text = open(os.path.join(d, h)).read()
        assert not _CUDA_CALL.search(text), f"{name}/{h} still calls the CUDA runtime"
        assert "cuda_runtime.h" not in text
    assert not _CUDA_CALL.search(open(main).read())


@pytest.mark.parametrize("name", sorted(LIBRARY_PROGRAMS))
def test_library_programs_name_their_library(translated, name):
    _, diags, _ = translated[name]
    header = LIBRARY_PROGRAMS[name]
    assert header in diags, diags
    lib = {"hiprand": "hipRAND", "hipblas": "hipBLAS"}[header.split("/")[0]]
    assert lib in diags


def _errors(output):
    """[(file, line, message)] of hipcc's errors."""
    return [(m.group(1), int(m.group(2)), m.group(3))
            for m in re.finditer(r"^(\S+?):(\d+):\d+: (?:fatal )?error: (.*)$", output, re.M)]


def _explained(err, diags, base):
    path, line, msg = err
    m = re.search(r"'([^']+)' file not found", msg)
    if m:
        return m.group(1) in diags and "not installed" in diags
    m = re.search(r"(?:undeclared identifier|unknown type name|no member named|no type named) '([^']+)'", msg)
    if m and f"does not declare `{m.group(1)}`" in diags:
        return True                 # an API newer than the installed HIP, named by a diagnostic
    p = path if os.path.isabs(path) else os.path.join(base, path)
    try:
        lines = open(p).read().splitlines()
    except OSError:
        return False
    return 0 < line <= len(lines) and "cuport: CP9" in lines[line - 1]


@pytest.mark.skipif(HIPCC is None, reason="hipcc not installed (Debian: apt install hipcc)")
def test_programs_compile_for_gfx90a(translated, tmp_path):
    env = dict(os.environ, HIP_PLATFORM="amd")
    expect_ok = [n for n in NAMES if n not in LIBRARY_PROGRAMS and "not installed" not in translated[n][1]
                 and "only from HIP 6.0" not in translated[n][1]]
    # one hipcc call for every program expected to compile: a wrapper per program names its object
    wrappers = []
    for n in expect_ok:
        w = tmp_path / f"{n}.hip"
        w.write_text(f'#include "{translated[n][0]}"\n')
        wrappers.append(str(w))
    r = subprocess.run([HIPCC, f"--offload-arch={ARCH}", "-c"] + wrappers, cwd=tmp_path, env=env,
                       capture_output=True, text=True, timeout=1200)
    assert r.returncode == 0, r.stderr[-8000:]
    for n in expect_ok:
        assert (tmp_path / f"{n}.o").exists(), f"no object for {n}"
    # the others: whatever stops them is explained by a diagnostic or a `// cuport:` note
    for n in NAMES:
        if n in expect_ok:
            continue
        main, diags, _ = translated[n]
        r = subprocess.run([HIPCC, f"--offload-arch={ARCH}", "-fsyntax-only", "-x", "hip", main],
                           cwd=os.path.dirname(main), env=env, capture_output=True, text=True, timeout=600)
        if r.returncode == 0:
            continue                # the library is installed here
        errs = _errors(r.stdout + r.stderr)
        assert errs, f"{n}: hipcc failed without an error line:\n{r.stderr[-4000:]}"
        unexplained = [e for e in errs if not _explained(e, diags, os.path.dirname(main))]
        assert not unexplained, f"{n}: errors no diagnostic explains: {unexplained}\ndiagnostics:\n{diags}"


# --- the translator behaviours these programs rely on -----------------------------------------------------------

def _hip(src, **kw):
    from porter.translate.hip.translator import translate
    return translate(os.path.join(PROGRAMS, "t.cu"), src, **kw)


def test_cuda_arch_in_function_bodies_becomes_hip_device_compile():
    src = ("#ifndef __CUDA_ARCH__\nint host_only();\n#endif\n"
           "__host__ __device__ float f(float x) {\n#ifdef __CUDA_ARCH__\n  return rsqrtf(x);\n#else\n"
           "  return 1 / x;\n#endif\n}\n"
           "#if __CUDA_ARCH__ < 600\n#endif\n")
    res = _hip(src, portability_fixes=False)
    assert "#ifndef __CUDA_ARCH__\nint host_only();" in res.text          # file scope: same in both passes
    assert "#ifdef __HIP_DEVICE_COMPILE__\n  return rsqrtf(x);" in res.text
    assert any("compute capability" in d.message for d in res.diagnostics)


def test_device_prop_fields():
    src = ("void f() { cudaDeviceProp prop; cudaGetDeviceProperties(&prop, 0);\n"
           "  size_t a = prop.sharedMemPerMultiprocessor; int u = prop.unifiedAddressing; }\n"
           "struct S { int sharedMemPerMultiprocessor; }; int g(S s) { return s.sharedMemPerMultiprocessor; }\n")
    res = _hip(src, portability_fixes=False)
    assert "prop.maxSharedMemoryPerMultiProcessor;" in res.text
    assert "s.sharedMemPerMultiprocessor;" in res.text                  # not a cudaDeviceProp
    assert any("unifiedAddressing" in d.message and "HIP 6.0" in d.message for d in res.diagnostics)


def test_vector_compound_assignment_compiled_out_on_amd():
    src = ("inline __host__ __device__ void operator+=(float3 &a, float3 b) { a.x += b.x; }\n"
           "inline __host__ __device__ void operator*=(float3 &a, float b) { a.x *= b; }\n")
    out = _hip(src, portability_fixes=False).text
    assert "#if !defined(__HIP_PLATFORM_AMD__)" in out and out.count("#endif") == 1
    assert out.index("#if !defined") < out.index("operator+=") < out.index("#endif") < out.index("operator*=")


def test_library_and_helper_headers_are_explained():
    res = _hip('#include <curand_kernel.h>\n#include "helper_cuda.h"\n#include <thrust/sort.h>\n'
               "__global__ void k() {}\n", portability_fixes=False)
    msgs = " ".join(d.message for d in res.diagnostics)
    assert "hipRAND" in msgs and "hiprand/hiprand_kernel.h" in msgs
    assert "CUDA samples helper" in msgs
    assert "rocThrust" in msgs
    assert res.extra["libraries"][0]["library"] == "hipRAND"


def test_inline_ptx_and_device_launch_are_reported():
    res = _hip('__device__ int lane() { int r; asm("mov.u32 %0, %%laneid;" : "=r"(r)); return r; }\n'
               "__global__ void c() {}\n__global__ void p() { c<<<1, 1>>>(); }\n")
    codes = {d.code for d in res.diagnostics}
    assert {"CP901", "CP905"} <= codes
    assert "// cuport: CP901" in res.text


def test_math_constants_fallback_for_old_hip():
    out = _hip("#include <math_constants.h>\n__global__ void k(float *x) { x[0] = CUDART_PI_F; }\n",
               portability_fixes=False).text
    assert "#include <hip/hip_math_constants.h>\n#else\n" in out
    assert "#define HIP_PI_F 3.141592654f" in out and "x[0] = HIP_PI_F;" in out


def test_api_newer_than_the_installed_hip_is_reported():
    from porter.translate.hip.includes import installed_hip_names
    known = installed_hip_names()
    if known is None:
        pytest.skip("no HIP installation to compare with")
    res = _hip("#include <cuda_runtime.h>\nvoid f(cudaStream_t s) { cudaStreamSynchronize(s); }\n",
               portability_fixes=False)
    assert not any("does not declare" in d.message for d in res.diagnostics)
    if "hipStreamGetId" not in known:
        res = _hip("void f(cudaStream_t s, unsigned long long *id) { cudaStreamGetId(s, id); }\n",
                   portability_fixes=False)
        assert any("does not declare `hipStreamGetId`" in d.message for d in res.diagnostics)


def test_reduce_and_match_sync_fallbacks():
    out = _hip("__global__ void k(unsigned *x) { x[0] = __reduce_add_sync(0xffffffff, x[1]) + "
               "__match_any_sync(0xffffffff, x[2]); }\n", portability_fixes=False).text
    assert "#define __reduce_add_sync cuport_reduce_add_sync" in out
    assert "#define __match_any_sync cuport_match_any_sync" in out


def test_atomic_add_double_redefinition_compiled_out():
    src = ("#if __CUDA_ARCH__ < 600\n__device__ double atomicAdd(double *a, double v) {\n  return v;\n}\n#endif\n"
           "__global__ void k(double *x) { atomicAdd(x, 1.0); }\n")
    out = _hip(src, portability_fixes=False).text
    assert "#if !defined(__HIP_PLATFORM_AMD__)" in out
    assert out.index("#if !defined(__HIP_PLATFORM_AMD__)") < out.index("__device__ double atomicAdd")
    assert "}\n#endif\n#endif\n__global__ void k(double *x) { atomicAdd(x, 1.0); }" in out


def test_float_atomic_max_redefinition_compiled_out():
    src = ("__device__ float atomicMax(float *address, float val) {\n  return val;\n}\n"
           "__device__ int atomicMax2(int *a, int v) { return atomicMax(a, v); }\n")
    out = _hip(src, portability_fixes=False).text
    assert out.startswith("\n#include \"hip/hip_runtime.h\"\n#if !defined(__HIP_PLATFORM_AMD__)") or \
        "#if !defined(__HIP_PLATFORM_AMD__)  // cuport: HIP defines atomicMax(float*, float)" in out
    assert out.count("#endif") == 1

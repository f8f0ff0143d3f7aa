"""CUDA: the original .cu through CuPy's RawModule (NVRTC), device code only (see extract.py)."""
from __future__ import annotations

import re

import numpy as np

from . import CompileError, RunOutput, Session, run_session

_MODULES: dict = {}
ISOLATE_AFTER_FAILURE = True     # a context that saw a wrong or crashing kernel is not reused for the next size


def available() -> tuple[bool, str]:
    try:
        import cupy
    except ImportError:
        return False, "CuPy not installed (needs an NVIDIA GPU)"
    except Exception as e:  # CuPy without a usable CUDA runtime raises at import
        return False, f"CuPy unusable: {e}"
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as e:
        return False, f"no NVIDIA GPU ({e.__class__.__name__}: {e})"
    return (True, "") if count else (False, "no NVIDIA GPU")


def prepare(variant) -> dict:
    import cupy
    props = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)
    name = props["name"].decode() if isinstance(props["name"], bytes) else props["name"]
    return {"device": name, "subgroup_size": int(props.get("warpSize", 32))}


def _module(code: str, options: tuple[str, ...], name_expression: str):
    import cupy
    key = (code, options, name_expression)
    if key not in _MODULES:
        try:
            mod = cupy.RawModule(code=code, options=options, name_expressions=[name_expression])
            mod.compile()
            _MODULES[key] = mod
        except cupy.cuda.compiler.CompileException as e:
            text = str(e).strip()       # the errors first: toolkit headers can warn for pages before them
            errors = [ln for ln in text.splitlines() if ": error" in ln or "error:" in ln]
            raise CompileError(f"NVRTC: {chr(10).join(errors + [text])[:3000]}") from None
    return _MODULES[key]


# NVRTC has no <cfloat> / <climits> / <math.h>, and device_code() blanks #include lines: the limits kernels use most,
# with the values those headers give (a source that defines one itself only gets a redefinition warning)
LIMITS = ("-DFLT_MAX=3.402823466e+38F", "-DFLT_MIN=1.175494351e-38F", "-DFLT_EPSILON=1.192092896e-07F",
          "-DDBL_MAX=1.7976931348623158e+308", "-DDBL_MIN=2.2250738585072014e-308",
          "-DDBL_EPSILON=2.2204460492503131e-16", "-DINT_MAX=2147483647", "-DINT_MIN=(-2147483647-1)",
          "-DUINT_MAX=4294967295U", "-DLLONG_MAX=9223372036854775807LL",
          "-DLLONG_MIN=(-9223372036854775807LL-1)", "-DULLONG_MAX=18446744073709551615ULL",
          # <math.h>'s INFINITY / NAN (softmax's -INFINITY): the bits CUDA's headers give them
          "-DINFINITY=__int_as_float(0x7f800000)", "-DNAN=__int_as_float(0x7fffffff)",
          # <math.h>'s POSIX constants (sph's M_PI)
          "-DM_PI=3.14159265358979323846", "-DM_PI_2=1.57079632679489661923", "-DM_PI_4=0.78539816339744830962",
          "-DM_1_PI=0.31830988618379067154", "-DM_2_PI=0.63661977236758134308", "-DM_E=2.7182818284590452354",
          "-DM_LN2=0.69314718055994530942", "-DM_LN10=2.30258509299404568402", "-DM_SQRT2=1.41421356237309504880",
          "-DM_SQRT1_2=0.70710678118654752440", "-DM_LOG2E=1.4426950408889634074")


# <cstdint>'s types as glibc (LP64) and hip_compat_nvrtc.h declare them, which NVRTC does not (int64_t in a kernel's
# signature); `#line 1` keeps the source's line numbers in NVRTC's messages
# <sys/types.h>'s, which host compilers give every CUDA file (HeCBench's ss and snake use uint)
SYS_TYPES = "typedef unsigned int uint; typedef unsigned short ushort; typedef unsigned long ulong;\n#line 1\n"
STDINT = ("typedef signed char int8_t; typedef unsigned char uint8_t; typedef short int16_t; "
          "typedef unsigned short uint16_t; typedef int int32_t; typedef unsigned int uint32_t; "
          "typedef long int64_t; typedef unsigned long uint64_t; " + SYS_TYPES)


_TOOLKIT: list = []


# the toolkit's <cuda/std/climits> defines the limits LIMITS passes as -D: warning 47 (a redefinition) hushed
TOOLKIT_QUIET = ("--diag-suppress=47",)


def toolkit_options() -> tuple[str, ...]:
    """-I options for the CUDA toolkit's headers (cooperative_groups, CUB in cccl/, cuda_fp16.h) when the
    machine has them (CuPy's CUDA path); () otherwise, and the originals' toolkit #includes are blanked."""
    if not _TOOLKIT:
        import os
        found: list[str] = []
        try:
            import cupy
            root = cupy.cuda.get_cuda_path()
        except Exception:               # no CuPy, or no toolkit it knows of
            root = None
        inc = os.path.join(root, "include") if root else None
        if inc and os.path.exists(os.path.join(inc, "cooperative_groups.h")):
            found = [f"-I{inc}"] + [f"-I{os.path.join(inc, 'cccl')}"
                                    for _ in [0] if os.path.isdir(os.path.join(inc, "cccl"))] + list(TOOLKIT_QUIET)
        _TOOLKIT.append(tuple(found))
    return _TOOLKIT[0]


# `cub/cub.cuh` drags in CUB's host dispatch, which NVRTC rejects ("__host__ ... not allowed in JIT mode"): its
# block- and warp-level headers instead, the part device code can use
CUB_DEVICE = ("block/block_adjacent_difference.cuh", "block/block_discontinuity.cuh", "block/block_exchange.cuh",
              "block/block_histogram.cuh", "block/block_load.cuh", "block/block_radix_sort.cuh",
              "block/block_reduce.cuh", "block/block_scan.cuh", "block/block_store.cuh", "warp/warp_reduce.cuh",
              "warp/warp_scan.cuh")
# cub::Max / cub::Min, which CCCL 3 removed (CuPy 14 bundles it) and CUDA 11/12 code still passes to reductions
CUB_COMPAT = ["#if defined(CCCL_MAJOR_VERSION) && CCCL_MAJOR_VERSION >= 3",
              "namespace cub { struct Max { template <class T> __host__ __device__ T operator()(const T &a, const T &b)"
              " const { return a < b ? b : a; } }; struct Min { template <class T> __host__ __device__ T operator()"
              "(const T &a, const T &b) const { return b < a ? b : a; } }; }",
              "#endif"]
_CUB_ALL = re.compile(r'^[ \t]*#[ \t]*include[ \t]*[<"]cub/cub\.cuh[>"][^\n]*', re.M)
# NVRTC has no C++ standard library: `std::is_same`, `std::enable_if`, `std::common_type`, `std::numeric_limits` in
# device code (logprob, tensorAccessor's accessors, attentionMultiHead's Max functor) come from libcu++, whose
# cuda::std the std namespace is made to look into (qualified lookup follows a using-directive)
STD_COMPAT = ["#include <cuda/std/type_traits>", "#include <cuda/std/limits>", "#include <cuda/std/utility>",
              "namespace std { using namespace cuda::std; }"]
_STD_USE = re.compile(r"\bstd::")


def nvrtc_code(source_text: str, drop=frozenset()) -> str:
    """The source as NVRTC compiles it: its device part (host code and #includes blanked, the toolkit's device
    headers kept where their directory is known), <cstdint> declared; `drop`: lines of host declarations kept
    so far that NVRTC rejected (repaired())."""
    from porter.verify.extract import device_code
    if not toolkit_options():
        return STDINT + device_code(source_text, drop)
    code = device_code(source_text, drop, keep_includes=True)
    pre = ["#include <cuda/std/cstdint>"]   # the toolkit's int64_t (long long), which STDINT's would clash with
    if re.search(r'#\s*include\s*[<"]cooperative_groups\.h', code):
        # cg::reduce / cg::inclusive_scan, which nvcc builds reach through CUB's or the toolkit's other headers
        pre += ["#include <cooperative_groups/reduce.h>", "#include <cooperative_groups/scan.h>"]
    if _CUB_ALL.search(code):
        code = _CUB_ALL.sub("", code)
        pre += [f"#include <cub/{h}>" for h in CUB_DEVICE]
        pre += CUB_COMPAT
    if _STD_USE.search(code):
        pre += STD_COMPAT
    return "\n".join(pre) + "\n" + SYS_TYPES + code


_ERROR_LINE = re.compile(r"\((\d+)\): error")


def repaired(case, source_text: str, options: tuple[str, ...], extract=None, tries: int = 6):
    """(code, module) of the source's device part; when NVRTC rejects a line of a host declaration that the
    extraction kept (snake's `using clock = std::chrono::...`, page-rank's `struct option long_options[]` for
    getopt), that declaration is left out and the compile tried again. An error in device code stays: raised."""
    extract = extract or nvrtc_code     # (text, drop) -> the code NVRTC compiles, lines kept
    drop: set = set()
    last = None
    for _ in range(tries):
        code = extract(source_text, drop)
        try:
            return code, _module(code, options, qualified_name(code, case))
        except CompileError as e:
            last = e
            lines = {int(n) for n in _ERROR_LINE.findall(str(e))} - drop
            if lines and extract(source_text, drop | lines) != code:
                drop |= lines
                continue
            # an error in another kernel (tensorAccessor's accessor kernel, whose class templates NVRTC rejects):
            # the case's kernel is compiled without it; an error in the case's kernel or what it calls stays
            from porter.verify.extract import kernel_spans
            kernel = getattr(case, "kernel", case.name_expression).split("<")[0]
            others = {name for name, a, b in kernel_spans(source_text)
                      if name != kernel and any(a <= ln <= b for ln in lines)} - drop
            if not others:
                raise                   # nothing more to leave out: the error is in device code
            drop |= others
    raise last


_NAMESPACE = re.compile(r"\bnamespace\s+([A-Za-z_][\w:]*)?\s*\{|[{}]")
_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)


def qualified_name(code: str, case) -> str:
    """The case's name expression with the namespaces its `__global__` definition sits in (meanshift's
    `mean_shift::gpu::mean_shift_tiling`): NVRTC looks kernels up by their qualified name."""
    from porter.verify.extract import kernel_headers
    text = _COMMENT.sub(lambda m: " " * len(m.group()), code)
    kernel = getattr(case, "kernel", case.name_expression).split("<")[0]
    m = next(kernel_headers(text, kernel), None)
    if m is None:
        return case.name_expression
    stack: list = []                    # per open brace: the namespace's name, "" (anonymous) or None (other)
    for b in _NAMESPACE.finditer(text, 0, m.start()):
        if b.group() == "}":
            if stack:
                stack.pop()
        else:
            stack.append(None if b.group() == "{" else b.group(1) or "")
    names = [n for n in stack if n]
    return "::".join(names + [case.name_expression]) if names else case.name_expression


def _kernel_params(code: str, kernel: str) -> str:
    """The text of the parameter lists of `__global__` functions named `kernel` (every overload)."""
    from porter.verify.extract import kernel_headers
    out = []
    for m in kernel_headers(code, kernel):
        depth, i = 1, m.end()
        while i < len(code) and depth:
            depth += {"(": 1, ")": -1}.get(code[i], 0)
            i += 1
        out.append(code[m.end():i])
    return " ".join(out)


def _device_global(mod, code: str, name: str, params: str):
    """The module's storage of a file-scope `__device__` / `__constant__` variable `name`, or None (a kernel
    parameter): declared at file scope in the text, not a parameter name of the kernel, and found in the module."""
    import re
    if re.search(r"\b" + re.escape(name) + r"\b", params):
        return None
    if not re.search(r"__(?:device|constant)__[^;{()]*\b" + re.escape(name) + r"\s*(?:\[|=|;)", code):
        return None
    try:
        return mod.get_global(name)
    except Exception:
        return None


# how CuPy reports a failed device assert (CUDA_ERROR_ASSERT, "device-side assert triggered")
ASSERT_ERROR = re.compile(r"CUDA_ERROR_ASSERT|cudaErrorAssert|device-side assert", re.I)


class NvrtcSession(Session):
    """The kernel compiled by NVRTC with its arguments on the device; launch() is timed with CUDA events."""

    def __init__(self, case, source_text: str, sizes, arrays, extract=nvrtc_code):
        import cupy
        options = ("--std=c++17", *LIMITS, *toolkit_options(), *case.define_flags())
        code, mod = repaired(case, source_text, options, extract)
        try:
            self.kernel = mod.get_function(qualified_name(code, case))
        except Exception as e:
            raise CompileError(f"kernel '{qualified_name(code, case)}' not found: {e}") from None
        self.grid, self.block = case.launch(sizes)
        self.arrays = arrays
        self.dev = {}
        args = []
        params = _kernel_params(code, case.kernel.split("<")[0])
        for k, v in arrays.items():
            ptr = _device_global(mod, code, k, params) if isinstance(v, np.ndarray) else None
            if ptr is not None:
                # a file-scope __device__ / __constant__ variable the spec lists after the kernel's parameters
                # (as the translations' manifests do): the module's own storage, set before and read after
                view = cupy.ndarray(v.shape, v.dtype, memptr=ptr)
                held = getattr(ptr.mem, "size", 0)      # CuPy may not know the symbol's size (0): then unchecked
                if held and view.nbytes > held - (ptr.ptr - ptr.mem.ptr):
                    raise CompileError(f"device variable '{k}': the spec gives {view.nbytes} bytes, the module "
                                       f"holds {held} bytes")
                view.set(np.ascontiguousarray(v))
                self.dev[k] = view
                continue
            same = next((n for n, w in arrays.items() if w is v and n in self.dev), None) \
                if isinstance(v, np.ndarray) else None
            # bound to another parameter's memory (spec alias): the same device pointer for both
            # CuPy has no structured dtypes: a buffer of structs travels as its bytes (outputs() views them back);
            # a struct by value goes as the np.void scalar, which CuPy passes as its bytes
            self.dev[k] = self.dev[same] if same is not None else \
                cupy.asarray(v.view(np.uint8) if v.dtype.names else v) if isinstance(v, np.ndarray) else v
            args.append(self.dev[k])
        self.args = tuple(args)
        self.shared = case.shared_bytes(sizes)
        self.start, self.stop = cupy.cuda.Event(), cupy.cuda.Event()
        self.info = {}
        self.assert_fired = False

    def launch(self) -> float:
        if self.assert_fired:            # the context is dead: nothing more runs in it
            return 0.0
        try:
            self.start.record()
            self.kernel(self.grid, self.block, self.args, shared_mem=self.shared)
            self.stop.record()
            self.stop.synchronize()      # an illegal address surfaces here as CUDADriverError
        except Exception as e:
            if not ASSERT_ERROR.search(f"{e.__class__.__name__}: {e}"):
                raise
            # a device assert failed: cudaErrorAssert is the launch's outcome (verify/asserts.py), not a crash;
            # the context is unusable after it (the worker starts afresh: info "assert_fired")
            self.assert_fired = True
            self.info["assert_fired"] = True
            return 0.0
        import cupy
        return cupy.cuda.get_elapsed_time(self.start, self.stop)

    def outputs(self) -> dict:
        from porter.verify import asserts
        if self.assert_fired:            # no buffer can be read back after cudaErrorAssert
            return {asserts.KEY: asserts.original(True)}
        import cupy
        out = {k: cupy.asnumpy(v) for k, v in self.dev.items() if isinstance(self.arrays[k], np.ndarray)}
        out = {k: v.view(self.arrays[k].dtype).reshape(self.arrays[k].shape) if self.arrays[k].dtype.names else v
               for k, v in out.items()}
        out[asserts.KEY] = asserts.original(False)
        return out


def run_nvrtc(case, source_text: str, sizes, arrays, repeat: int = 1, extract=nvrtc_code) -> RunOutput:
    """Compile the source's device part (`extract`) with NVRTC, launch the case's kernel once (plus repeat - 1
    timed launches)."""
    return run_session(NvrtcSession(case, source_text, sizes, arrays, extract), repeat)


def run(case, source_text, manifest, sizes, arrays, *, variant=None, repeat=1) -> RunOutput:
    return run_nvrtc(case, source_text, sizes, arrays, repeat)


def open_session(case, source_text, manifest, sizes, arrays, *, variant=None) -> NvrtcSession:
    return NvrtcSession(case, source_text, sizes, arrays)

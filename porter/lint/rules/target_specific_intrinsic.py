"""A CUDA-only intrinsic that other targets lack (`__nanosleep`, `__match_*_sync`, `clock64`, `__ldg`, textures).

## What it does
Flags, in device code, calls of CUDA-specific intrinsics and texture functions, and anywhere in the file
texture *references* (`texture<float, 1> tex;`) and their host binding (`cudaBindTexture*`). The message names
the targets that lack each one and what to use there:

- `__nanosleep`: HIP none (`__builtin_amdgcn_s_sleep(n)`, ~64*n clocks); Vulkan GLSL, OpenCL C none.
- `__match_any_sync`, `__match_all_sync`: HIP from ROCm 6.2 (64-bit masks); GLSL `subgroupPartitionNV`
  (NVIDIA only) / `subgroupAllEqual`; OpenCL C a loop over `sub_group_broadcast`.
- `clock64`, `clock`: HIP counts at another, variable rate (`wall_clock64()` for time); GLSL `clockARB()`
  (GL_ARB_shader_clock, optional `shaderDeviceClock`); OpenCL C none.
- `__ldg`: HIP a plain load; GLSL a load from a `readonly` buffer; OpenCL C a load from `const __global`.
- `__ldcg`, `__ldcs`, `__stcg`...: HIP none (`__builtin_nontemporal_load` / `_store`); GLSL, OpenCL C a plain
  load / store.
- `__trap`, `__brkpt`: HIP `__builtin_trap()` / `abort()`; GLSL, OpenCL C none.
- `__prof_trigger`: none anywhere.
- `tex1Dfetch`, `tex2D`..., `surf2Dwrite`...: HIP with texture / surface objects only; GLSL a sampled / storage
  image binding; OpenCL C `image2d_t` and `read_imagef`.
- `texture<...>` / `surface<...>` references, `cudaBindTexture*`: removed in CUDA 12 and in recent HIP (use
  texture objects).

`__activemask` is not flagged: HIP has it (with a 64-bit result, see CP201).

## Why is this bad?
hipify renames these calls or leaves them, and the AMD compiler then stops on the missing ones; `cuport
translate --to glsl` / `--to opencl` cannot emit them. Some compile but mean something else: `clock64()` on AMD
counts shader-clock cycles at a rate that changes with the clock, so timings computed from it are wrong;
`__ldg` is only a cache hint, so it costs nothing to drop. Texture references were removed in CUDA 12
and in recent HIP releases.

## Example
```cuda
long long t0 = clock64();
float v = __ldg(&in[i]);
if (v != v) __trap();
```

## Use instead
```cuda
#ifdef __HIP_PLATFORM_AMD__
long long t0 = wall_clock64();     // constant rate: hipDeviceAttributeWallClockRate
#else
long long t0 = clock64();
#endif
float v = in[i];                   // with `const float *__restrict__ in` the compiler picks the read-only path
if (v != v) __builtin_trap();
```

## Fix safety
No fix: the replacement depends on the target (and often on host code), so it is left to a per-target shim.

## References
- HIP programming guide, "CUDA to HIP API function comparison" (`__nanosleep`, `__prof_trigger`, `__ldcg`...
  unsupported; `clock64` vs `wall_clock64`); CUDA 12.0 release notes (texture references removed).
- Khronos GL_ARB_shader_clock / VK_KHR_shader_clock, GL_NV_shader_subgroup_partitioned.
"""
import bisect
import re

from porter.lint.helpers import function_at

CODE = "CP904"

_CLOCK = ("HIP has `clock()` / `clock64()` but they count shader-clock cycles at a different, variable rate (use "
          "`wall_clock64()` with hipDeviceAttributeWallClockRate for time, or `s_memtime`); Vulkan GLSL needs "
          "`clockARB()` from GL_ARB_shader_clock (optional VK_KHR_shader_clock feature `shaderDeviceClock`); "
          "OpenCL C has no clock")
_LD = ("HIP has no such cache-policy load (use a plain load or `__builtin_nontemporal_load`); Vulkan GLSL and "
       "OpenCL C: a plain load")
_ST = ("HIP has no such cache-policy store (use a plain store or `__builtin_nontemporal_store`); Vulkan GLSL and "
       "OpenCL C: a plain store")
_TEX = ("HIP supports it only with texture objects (`hipTextureObject_t`), not texture references; Vulkan GLSL "
        "needs a sampled image binding (`texelFetch` / `texture`), OpenCL C an image argument (`read_imagef`); "
        "cuport's translators do not convert textures")
_SURF = ("HIP supports it only with surface objects; Vulkan GLSL needs a storage image binding "
         "(`imageLoad` / `imageStore`), OpenCL C an image argument; cuport's translators do not convert surfaces")

_TABLE = {
    "__nanosleep": "HIP has no `__nanosleep` (`__builtin_amdgcn_s_sleep(n)` sleeps about 64*n clocks); Vulkan "
                   "GLSL and OpenCL C have no sleep (spin on a clock or drop it)",
    "__match_any_sync": "HIP has it only from ROCm 6.2, with 64-bit masks; Vulkan GLSL only as "
                        "`subgroupPartitionNV` (GL_NV_shader_subgroup_partitioned, NVIDIA devices), OpenCL C not at "
                        "all (a loop over `sub_group_broadcast` and a ballot)",
    "__match_all_sync": "HIP has it only from ROCm 6.2, with 64-bit masks; Vulkan GLSL: `subgroupAllEqual` plus a "
                        "ballot; OpenCL C: `sub_group_all(x == sub_group_broadcast(x, 0))`",
    "clock64": _CLOCK,
    "clock": _CLOCK + "; the 32-bit `clock()` also wraps within seconds",
    "__ldg": "only a read-only-cache hint: HIP compiles it as a plain load, Vulkan GLSL and OpenCL C have no "
             "equivalent (a plain load from a readonly buffer); mark the pointer `const __restrict__` instead",
    "__ldcg": _LD, "__ldca": _LD, "__ldcs": _LD, "__ldlu": _LD, "__ldcv": _LD,
    "__stcg": _ST, "__stcs": _ST, "__stwb": _ST, "__stwt": _ST,
    "__trap": "HIP: use `__builtin_trap()` or `abort()`; Vulkan GLSL and OpenCL C cannot abort a dispatch (write "
              "an error flag and return)",
    "__brkpt": "HIP, Vulkan GLSL and OpenCL C have no breakpoint intrinsic",
    "__prof_trigger": "HIP, Vulkan GLSL and OpenCL C have no profiler-trigger intrinsic (HIP: drop it, use "
                      "roctx ranges on the host)",
}
for _n in ("tex1D", "tex1Dfetch", "tex1DLod", "tex1DGrad", "tex1DLayered", "tex1DLayeredLod", "tex1DLayeredGrad",
           "tex2D", "tex2DLod", "tex2DGrad", "tex2DLayered", "tex2DLayeredLod", "tex2DLayeredGrad", "tex2Dgather",
           "tex3D", "tex3DLod", "tex3DGrad", "texCubemap", "texCubemapLod", "texCubemapLayered"):
    _TABLE[_n] = _TEX
for _n in ("surf1Dread", "surf1Dwrite", "surf2Dread", "surf2Dwrite", "surf3Dread", "surf3Dwrite",
           "surf1DLayeredread", "surf1DLayeredwrite", "surf2DLayeredread", "surf2DLayeredwrite",
           "surfCubemapread", "surfCubemapwrite"):
    _TABLE[_n] = _SURF
_REFS = {"texture": "a texture reference: removed in CUDA 12 and in recent HIP (use a `cudaTextureObject_t`); "
                    "Vulkan and OpenCL need an image binding instead",
         "surface": "a surface reference: removed in CUDA 12 and in recent HIP (use a `cudaSurfaceObject_t`); "
                    "Vulkan and OpenCL need a storage image instead"}
_BIND = re.compile(rb"\bcuda(Bind|Unbind)(Texture|Surface)\w*\b")
# a cheap over-approximation of "the file mentions one of them" (most files do not)
_ANY = re.compile(rb"__(?:nanosleep|match_a|ld|st|trap|brkpt|prof_trigger)|clock|tex[123C]|surf[123C]|texture\s*<|"
                  rb"surface\s*<|cuda(?:Bind|Unbind)")


def _message(name: str) -> str:
    return f"`{name}()` is CUDA-specific: {_TABLE[name]}"


def check(ctx):
    model = ctx.model
    data = ctx.source.data
    if _ANY.search(data) is None:
        return
    done = set()
    # calls the parser resolved (declared in the CUDA shim), also through macros
    for call in model.of_kind("CALL_EXPR"):
        name = call.spelling
        if name not in _TABLE:
            continue
        f = function_at(call)
        if f is None or not f.is_device_code:
            continue
        done.add(call.start)
        if call.ref is not None or (call.children and call.children[0].kind == "MEMBER_REF_EXPR"):
            continue      # the file's own function, or a member function of that name
        ctx.report(CODE, call, _message(name))
    # everything else from the tokens: texture functions, references and bindings are not declared for the parser
    device = None
    toks = model.tokens
    for i, t in enumerate(toks):
        if t.kind != "IDENTIFIER" or t.start in done:
            continue
        s = t.spelling
        nxt = toks[i + 1].spelling if i + 1 < len(toks) else ""
        prev = toks[i - 1].spelling if i > 0 else ""
        if prev in (".", "->", "::") and not (prev == "::" and i > 1 and toks[i - 2].kind != "IDENTIFIER"):
            continue
        if s in _TABLE:
            if nxt not in ("(", "<"):
                continue
            if device is None:
                device = sorted((f.body.start, f.body.end) for f in model.functions
                                if f.is_device_code and f.body is not None)
                starts = [d[0] for d in device]
            j = bisect.bisect_right(starts, t.start) - 1
            if j < 0 or t.start >= device[j][1]:
                continue
            ctx.report(CODE, (t.start, t.end), _message(s))
        elif s in _REFS and nxt == "<":
            ctx.report(CODE, (t.start, t.end), f"`{s}<...>` declares {_REFS[s]}")
        elif _BIND.match(s.encode()) and nxt == "(":
            ctx.report(CODE, (t.start, t.end), f"`{s}` binds a texture or surface reference: removed in CUDA 12 "
                                               f"and in recent HIP; Vulkan and OpenCL bind images instead")

"""`__launch_bounds__` whose meaning changes in HIP, or a large launch without any bounds.

## What it does
Flags:
- `__launch_bounds__(T, minBlocks)`: the second argument is "minimum resident blocks per SM" in CUDA, but HIP
  passes it to `amdgpu_waves_per_eu` ("minimum waves per SIMD"). The message gives the value that keeps the
  CUDA meaning on gfx90a: `ceil(minBlocks * ceil(T / 64) / 4)`;
- the three-argument form `__launch_bounds__(T, minBlocks, maxBlocksPerCluster)` (sm_90), which HIP's macro
  does not accept;
- a launch site with a constant block larger than the kernel's `__launch_bounds__(T)` (the launch fails on
  every target);
- a launch with more than 256 threads of a kernel that has no `__launch_bounds__`.

## Why is this bad?
HIP's `__launch_bounds__(T, N)` expands to `amdgpu_flat_work_group_size(1, T), amdgpu_waves_per_eu(N)`
(`hip/amd_detail/amd_hip_runtime.h`). A CUDA `__launch_bounds__(128, 4)` asking for 4 blocks of 4 warps per
SM becomes a request for 4 waves per SIMD on AMD, twice what 4 blocks of two wave64 need: the compiler caps
registers harder than necessary and spills. Without bounds, AMD compilers budget registers for the largest
allowed block (HIP-Clang: 1024 threads, so at most 128 VGPRs on gfx90a), and OpenCL compilers for AMD assume
256 work-items: a larger launch of the translated kernel is rejected (`CL_INVALID_WORK_GROUP_SIZE`).

## Example
```cuda
__global__ void __launch_bounds__(128, 4) k(float *x);   // 4 blocks per SM in CUDA, 4 waves per SIMD in HIP
big<<<n, 512>>>(x);                                      // no bounds on `big`
```

## Use instead
```cuda
#ifdef __HIP_PLATFORM_AMD__
__global__ void __launch_bounds__(128, 2) k(float *x);   // 4 blocks x 2 waves / 4 SIMDs on gfx90a
#else
__global__ void __launch_bounds__(128, 4) k(float *x);
#endif
__global__ void __launch_bounds__(512) big(float *x);
```

## Fix safety
No fix: the right second argument depends on the target architecture (waves per SIMD, SIMDs per CU).

## References
- ROCm/hip#1041, LeelaChessZero/lc0#2420, JuliaGPU/AMDGPU.jl#1060; HIP's `__launch_bounds__` macro in
  `hip/amd_detail/amd_hip_runtime.h` (ROCm 5.2) and the HIP porting guide ("launch bounds").
"""
from porter.analysis.launch import launch_bounds, site_kernel, site_shapes

CODE = "CP602"
_SIMDS = 4          # SIMDs (execution units) per CU on CDNA (gfx90a)
_WAVE = 64


def check(ctx):
    model = ctx.model
    bounds = {}
    for fn in model.functions:
        if not fn.is_kernel:
            continue
        lb = launch_bounds(model, fn)
        bounds.setdefault(fn.name, lb)
        if lb is None:
            continue
        if len(lb.args) >= 3:
            ctx.report(CODE, (lb.start, lb.end),
                       f"`__launch_bounds__({', '.join(lb.args)})`: the third argument (max blocks per cluster, "
                       f"sm_90) has no HIP equivalent and HIP's `__launch_bounds__` macro takes at most two")
        elif len(lb.args) == 2:
            ctx.report(CODE, (lb.start, lb.end), _two_args(lb))
    for site in model.launches:
        name = site_kernel(site)
        if name not in bounds:
            continue
        lb = bounds[name]
        for shape, env in site_shapes(model, site):
            n = shape.threads
            where = f" (with {', '.join(f'{k} = {v}' for k, v in env.items())})" if env else ""
            if lb is not None and lb.max_threads is not None and n > lb.max_threads:
                d = ctx.report(CODE, site.block,
                               f"`{name}` is launched with {n} threads{where} but declares "
                               f"`__launch_bounds__({lb.max_threads})`: the launch fails on every target "
                               f"(too many threads for the compiled kernel)")
                d.severity = "error"
                break
            if lb is None and n > 256:
                ctx.report(CODE, site.block,
                           f"`{name}` is launched with {n} threads{where} and has no `__launch_bounds__`: AMD "
                           f"compilers then budget registers for the largest allowed block (HIP-Clang: 1024 "
                           f"threads, at most 128 VGPRs on gfx90a) and OpenCL compilers for AMD assume 256 "
                           f"work-items and reject the launch; declare `__launch_bounds__({n})`")
                break


def _two_args(lb) -> str:
    t, b = lb.max_threads, lb.min_blocks
    text = f"`__launch_bounds__({', '.join(lb.args)})`"
    if t is None or b is None:
        return (f"{text}: the second argument is minimum blocks per SM in CUDA but minimum waves per SIMD "
                f"(`amdgpu_waves_per_eu`) in HIP")
    waves_per_block = -(-t // _WAVE)
    per_eu = -(-(b * waves_per_block) // _SIMDS)
    same = " (the same number here, by coincidence of these sizes)" if per_eu == b else ""
    return (f"{text}: CUDA reads {b} as minimum resident blocks per SM, HIP passes it to "
            f"`amdgpu_waves_per_eu({b})` (minimum waves per SIMD); {b} blocks of {t} threads on gfx90a are "
            f"{b * waves_per_block} wave64s over {_SIMDS} SIMDs, i.e. `__launch_bounds__({t}, {per_eu})` for "
            f"HIP{same}")

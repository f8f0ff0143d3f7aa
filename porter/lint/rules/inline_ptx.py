"""Inline PTX assembly (`asm` / `asm volatile`) in device code.

## What it does
Flags every `asm(...)` and `asm volatile(...)` statement inside a `__global__`, `__device__` or
`__host__ __device__` function. Host-side inline assembly is not flagged.

## Why is this bad?
PTX is NVIDIA's virtual instruction set. HIP on AMD GPUs, Vulkan (SPIR-V) and OpenCL C have no way to
run it: hipify leaves the string as it is and the AMD compiler rejects it, and `cuport translate --to glsl`
or `--to opencl` emits no output for a kernel that contains it. Each use has to be rewritten with a
builtin or intrinsic the target has (`__shfl_*`, `__activemask`, `__lanemask_lt`, `atomic*`,
`__threadfence`, `clock64` ...).

## Example
```cuda
__global__ void k(int *out) {
    int lane;
    asm("mov.u32 %0, %%laneid;" : "=r"(lane));
    out[threadIdx.x] = lane;
}
```

## Use instead
```cuda
__global__ void k(int *out) {
    int lane = threadIdx.x % warpSize;   // or the target's lane-id builtin
    out[threadIdx.x] = lane;
}
```

## Fix safety
No fix: what the assembly does has to be re-expressed by hand.

## References
- ROCm/HIPIFY#731 (HIPIFY does not port inline PTX assembly).
"""
from porter.lint.helpers import in_device_code

CODE = "CP901"


def check(ctx):
    for node in ctx.model.of_kind("ASM_STMT", "GCC_ASM_STMT", "MS_ASM_STMT"):
        if not in_device_code(node):
            continue
        text = node.text.split("(")[0].strip()
        ctx.report(CODE, node, f"inline PTX assembly (`{text}(...)`) in device code: HIP on AMD GPUs, Vulkan "
                               "and OpenCL cannot run PTX; rewrite it with an intrinsic or builtin")

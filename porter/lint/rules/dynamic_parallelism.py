"""A kernel launch (`<<<...>>>`) inside device code: CUDA dynamic parallelism.

## What it does
Flags `kernel<<<grid, block>>>(...)` written inside a `__global__` or `__device__` function. Launches from
host code are not flagged.

## Why is this bad?
Dynamic parallelism needs relocatable device code and the CUDA device runtime. HIP does not support
device-side launches at all, and neither Vulkan compute shaders nor OpenCL 1.2 kernels can enqueue work
from a running kernel: the translators emit no output for such a kernel.

## Example
```cuda
__global__ void child(float *a) { a[threadIdx.x] *= 2.0f; }
__global__ void parent(float *a) {
    if (threadIdx.x == 0) child<<<1, 32>>>(a);
}
```

## Use instead
```cuda
// launch the child work from the host, after the parent kernel
parent<<<1, 32>>>(a);
child<<<1, 32>>>(a);
```

## Fix safety
No fix: the launch has to move to the host, which changes the program's structure.

## References
- HIP programming guide: dynamic parallelism is not supported (ROCm/HIP "unsupported CUDA features").
"""
CODE = "CP905"


def check(ctx):
    for ls in ctx.model.launches:
        f = ls.function
        if f is None or not f.is_device_code:
            continue
        ctx.report(CODE, ls.node, f"kernel launch `{ls.kernel}<<<...>>>` inside {f.kind.replace('_', ' ')} "
                                  f"function `{f.name}` (dynamic parallelism): HIP, Vulkan and OpenCL 1.2 cannot "
                                  "launch kernels from device code")

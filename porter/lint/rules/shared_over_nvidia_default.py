"""Kernel using more than 48 KiB of shared memory per block without NVIDIA's opt-in.

## What it does
Adds up the static `__shared__` arrays of each kernel (its own, those of the device functions it calls in this
file, and file-scope arrays they use) and reports a total above 48 KiB (49152 B). For each launch in the file
whose third launch parameter folds to a constant, it also reports static + dynamic shared memory above 48 KiB
when the file has no `cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes)` (or
`hipFuncSetAttribute`) for that kernel, or when the size it opts in to is smaller than the launch needs.

## Why is this bad?
NVIDIA GPUs give a block 48 KiB of shared memory unless the kernel opts in. Static `__shared__` declarations
cannot opt in at all: above 48 KiB ptxas stops with "uses too much shared data". Dynamic shared memory above
48 KiB (static included) needs `cudaFuncSetAttribute(..., cudaFuncAttributeMaxDynamicSharedMemorySize, ...)`;
without it every launch fails with "invalid argument" and the kernel never runs. Code tuned on a machine where
it compiled with smaller tiles breaks when a tile constant grows.

## Example
```cuda
__global__ void gemm(const float *a, const float *b, float *c) {
  __shared__ float As[128][64];   // 32768 B
  __shared__ float Bs[64][128];   // 32768 B: 65536 B > 48 KiB
}
```

## Use instead
```cuda
__global__ void gemm(const float *a, const float *b, float *c) {
  extern __shared__ float smem[];
  float *As = smem, *Bs = smem + 128 * 64;
}
// host
cudaFuncSetAttribute(gemm, cudaFuncAttributeMaxDynamicSharedMemorySize, 65536);
gemm<<<grid, block, 65536>>>(a, b, c);
```

## Fix safety
No automatic fix: moving arrays to dynamic shared memory and choosing the opt-in size is a design change (and
64 KiB is already over AMD's LDS, see CP502).

## References
- ROCm legacy-rocm-build#3403 ("local memory (90000) exceeds limit (65536)"; see CP502 for the AMD side).
- punica-ai/punica#20.
- NVIDIA CUDA C++ Programming Guide, "Shared Memory" and `cudaFuncSetAttribute`. Checked on an H100 (CUDA 13):
  49156 B of static shared memory stops ptxas ("uses too much shared data (0xc004 bytes, 0xc000 max)");
  40960 B static + 8196 B dynamic fails the launch with "invalid argument" (8192 B runs); after the opt-in the
  launch runs.
"""
from porter.analysis.shared_access import kernel_static_shared
from porter.lint.helpers import int_value, launches_of, name_span

CODE = "CP501"
LIMIT = 48 * 1024
_SET_ATTR = {"cudaFuncSetAttribute", "hipFuncSetAttribute", "cuFuncSetAttribute"}


def opt_in(model, kernel: str):
    """Bytes of the MaxDynamicSharedMemorySize opt-in for `kernel` in this file: None when absent, True when
    present with a size that does not fold."""
    best = None
    for call in model.calls(_SET_ATTR):
        args = call.args()
        if len(args) < 3 or "MaxDynamicSharedMemorySize" not in args[1].text:
            continue
        if not any(n.kind in ("DECL_REF_EXPR", "OVERLOADED_DECL_REF") and n.spelling == kernel
                   for n in args[0].walk()):
            continue
        v = int_value(args[2])
        if v is None:
            return True
        best = v if best is None else max(best, v)
    return best


def breakdown(static) -> str:
    parts = [f"`{s.name}` {s.size_bytes} B" for s in static.arrays if s.size_bytes is not None]
    if len(parts) > 4:
        parts = parts[:4] + ["..."]
    return " + ".join(parts)


def check(ctx):
    model = ctx.model
    for k in model.kernels:
        if k.body is None:
            continue
        st = kernel_static_shared(model, k)
        if st.bytes > LIMIT:
            more = " at least" if st.unknown else ""
            ctx.report(CODE, name_span(k),
                       f"kernel `{k.name}` declares{more} {st.bytes} B of static shared memory ({breakdown(st)}) "
                       f"> 48 KiB ({LIMIT} B): NVIDIA allows at most 48 KiB of static `__shared__` per block "
                       f"(ptxas: 'uses too much shared data ({st.bytes:#x} bytes, 0xc000 max)'); move the large "
                       f"arrays to `extern __shared__` and opt in with `cudaFuncSetAttribute({k.name}, "
                       f"cudaFuncAttributeMaxDynamicSharedMemorySize, bytes)`")
            continue
        opted = None
        for ls in launches_of(model, k.name):
            if ls.shmem is None:
                continue
            dyn = int_value(ls.shmem)
            if not dyn or st.bytes + dyn <= LIMIT:
                continue
            if opted is None:
                opted = opt_in(model, k.name) or False
            if opted is True or (opted is not False and opted >= dyn):
                continue
            static = f" + {st.bytes} B static" if st.bytes else ""
            if opted is False:
                why = (f"without `cudaFuncSetAttribute({k.name}, cudaFuncAttributeMaxDynamicSharedMemorySize, "
                       f"{dyn})` in this file the launch fails with 'invalid argument'")
            else:
                why = f"the opt-in of {opted} B is smaller, so the launch fails with 'invalid argument'"
            ctx.report(CODE, ls.shmem,
                       f"launch of `{k.name}` asks for {dyn} B of dynamic shared memory{static} = "
                       f"{dyn + st.bytes} B > 48 KiB ({LIMIT} B) on NVIDIA: {why}")

"""Kernel needing more shared memory per block than AMD LDS (64 KiB) or the configured Vulkan limit provides.

## What it does
Adds up each kernel's static `__shared__` arrays (its own, those of the device functions it calls in this file,
and file-scope arrays they use) and the largest dynamic size among its launches in this file whose third launch
parameter folds to a constant. Reports, once per kernel and limit, a total above:
- 64 KiB (65536 B), the LDS a workgroup can have on AMD GPUs up to gfx942 (MI200/MI300, RDNA); 160 KiB when every
  configured AMD target is gfx950; skipped when `target-arch` names no AMD target;
- the Vulkan `maxComputeSharedMemorySize` configured as `vulkan-max-shared` (32768 B by default, lavapipe's
  value); skipped when `target-arch` does not name `vulkan`.

## Why is this bad?
NVIDIA lets a block opt in to up to 227 KiB of shared memory, so CUDA kernels tuned there may use more than a
CDNA workgroup can have. hipcc stops with "local memory (90000) exceeds limit (65536)" for static arrays, and a
launch asking for more dynamic LDS than the device has fails. A Vulkan compute pipeline whose shared variables
exceed `maxComputeSharedMemorySize` cannot be created on that device.

## Example
```cuda
__global__ void gemm(const float *a, const float *b, float *c) {
  __shared__ float As[128][72];   // 36864 B
  __shared__ float Bs[72][128];   // 36864 B: 73728 B > 64 KiB
}
```

## Use instead
```cuda
template <int BM, int BN, int BK>          // pick smaller tiles for AMD / Vulkan targets on the host
__global__ void gemm(const float *a, const float *b, float *c) {
  __shared__ float As[BM][BK + 1];
  __shared__ float Bs[BK][BN + 1];
}
```

## Fix safety
No automatic fix: the tiles must be re-chosen (smaller tiles, fewer stages, or split-K), which changes the
kernel's decomposition and launch geometry.

## References
- ROCm legacy-rocm-build#3403 ("local memory (90000) exceeds limit (65536)").
- punica-ai/punica#20.
"""
from porter.analysis.shared_access import kernel_static_shared
from porter.lint.helpers import int_value, launches_of, name_span

CODE = "CP502"
AMD_LDS = 64 * 1024
AMD_LDS_GFX950 = 160 * 1024
VULKAN_DEFAULT = 32 * 1024


def limits(settings):
    """[(target, bytes, limit description)] for the configured targets."""
    arch = [str(a).lower() for a in (getattr(settings, "target_arch", None) or [])] if settings is not None \
        else ["gfx90a", "vulkan"]
    out = []
    amd = [a for a in arch if a.startswith("gfx") or a in ("amd", "hip", "rocm")]
    if amd:
        lds = AMD_LDS_GFX950 if all(a == "gfx950" for a in amd) else AMD_LDS
        which = "gfx950" if lds == AMD_LDS_GFX950 else "up to gfx942"
        out.append(("amd", lds, f"the AMD LDS limit per workgroup ({which})"))
    if any(a.startswith("vulkan") for a in arch):
        v = (getattr(settings, "vulkan_max_shared", None) if settings is not None else None) or VULKAN_DEFAULT
        out.append(("vulkan", v, "the Vulkan maxComputeSharedMemorySize limit (vulkan-max-shared; 32 KiB on "
                                 "lavapipe)"))
    return out


def _consequence(target, limit, static, dyn):
    if target == "amd":
        if static > limit:
            return f"hipcc stops with 'local memory ({static}) exceeds limit ({limit})'"
        return "the launch fails on the device"
    return "the compute pipeline cannot be created on such a device"


def check(ctx):
    model = ctx.model
    lims = limits(ctx.settings)
    if not lims:
        return
    for k in model.kernels:
        if k.body is None:
            continue
        st = kernel_static_shared(model, k)
        dyn, site = 0, None
        for ls in launches_of(model, k.name):
            if ls.shmem is not None:
                v = int_value(ls.shmem)
                if v is not None and v > dyn:
                    dyn, site = v, ls
        total = st.bytes + dyn
        for target, limit, what in lims:
            if total <= limit:
                continue
            parts = []
            if st.bytes:
                parts.append(f"{st.bytes} B static")
            if dyn:
                parts.append(f"{dyn} B dynamic")
            at = site.shmem if site is not None and st.bytes <= limit else name_span(k)
            more = " at least" if st.unknown else ""
            ctx.report(CODE, at,
                       f"kernel `{k.name}` needs{more} {total} B of shared memory per block "
                       f"({' + '.join(parts)}) > {limit} B ({limit // 1024} KiB), {what}: "
                       f"{_consequence(target, limit, st.bytes, dyn)}; retile (smaller tiles or fewer stages) for "
                       f"this target")

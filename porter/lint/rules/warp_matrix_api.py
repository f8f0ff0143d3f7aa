"""Use of CUDA's warp matrix API (`nvcuda::wmma`: fragments, `load_matrix_sync`, `mma_sync`...).

## What it does
Flags each `wmma::fragment` declaration and each call of `wmma::fill_fragment`, `wmma::load_matrix_sync`,
`wmma::store_matrix_sync`, `wmma::mma_sync` and `wmma::bmma_sync` (also `nvcuda::wmma::...` and the bare names
after `using namespace nvcuda::wmma`). The file is read token by token: `<mma.h>` is not available to the
parser, so these declarations do not resolve.

## Why is this bad?
`nvcuda::wmma` exists only in CUDA. HIP has no `nvcuda::wmma` (hipify leaves it and the build fails); the AMD
equivalent is the rocWMMA library, whose fragment shapes, data types and per-lane element layout differ by
architecture (wave64 MFMA on CDNA, 16x16x16 WMMA on RDNA3), so code that reads `frag.x[i]` assuming NVIDIA's
layout is wrong there. Vulkan has cooperative matrices only through the optional `VK_KHR_cooperative_matrix`
extension (GLSL `coopmat` with `GL_KHR_cooperative_matrix`, sizes queried at run time); OpenCL C has no portable
equivalent.

## Example
```cuda
#include <mma.h>
__global__ void gemm16(const half *a, const half *b, float *c) {
  nvcuda::wmma::fragment<nvcuda::wmma::matrix_a, 16, 16, 16, half, nvcuda::wmma::row_major> fa;
  nvcuda::wmma::load_matrix_sync(fa, a, 16);
  /* ... */
}
```

## Use instead
```cuda
#include <rocwmma/rocwmma.hpp>      // HIP: rocWMMA, the same calls in namespace rocwmma
__global__ void gemm16(const rocwmma::float16_t *a, const rocwmma::float16_t *b, float *c) {
  rocwmma::fragment<rocwmma::matrix_a, 16, 16, 16, rocwmma::float16_t, rocwmma::row_major> fa;
  rocwmma::load_matrix_sync(fa, a, 16);
  /* ... */
}
// Vulkan: coopmat<float16_t, gl_ScopeSubgroup, 16, 16, gl_MatrixUseA> + coopMatLoad / coopMatMulAdd
```

## Fix safety
No fix: the port needs another library (rocWMMA) or another programming model (cooperative matrices), and
shapes that the target supports.

## References
- ROCm/rocWMMA (the HIP port of the wmma API); Khronos `VK_KHR_cooperative_matrix` / `GL_KHR_cooperative_matrix`.
- ROCm/HIPIFY#731 (HIPIFY ports neither inline PTX nor warp-level matrix code).
"""
CODE = "CP902"
# API entry -> (rocWMMA, Vulkan GLSL)
_API = {
    "fragment": ("`rocwmma::fragment`", "`coopmat<T, gl_ScopeSubgroup, M, N, use>`"),
    "fill_fragment": ("`rocwmma::fill_fragment`", "a `coopmat` constructed from a scalar"),
    "load_matrix_sync": ("`rocwmma::load_matrix_sync`", "`coopMatLoad`"),
    "store_matrix_sync": ("`rocwmma::store_matrix_sync`", "`coopMatStore`"),
    "mma_sync": ("`rocwmma::mma_sync`", "`coopMatMulAdd`"),
    "bmma_sync": ("nothing (rocWMMA has no 1-bit matrix multiply)", "nothing (no 1-bit cooperative matrices)"),
}


def check(ctx):
    data = ctx.source.data
    if b"wmma" not in data:
        return
    toks = ctx.model.tokens
    bare = False       # `using namespace nvcuda::wmma;` makes the bare names the API
    for i in range(len(toks) - 4):
        if toks[i].spelling == "using" and toks[i + 1].spelling == "namespace":
            j = i + 2
            names = []
            while j < len(toks) and toks[j].spelling != ";":
                names.append(toks[j].spelling)
                j += 1
            if names and names[-1] == "wmma":
                bare = True
    seen_lines = set()
    for i, t in enumerate(toks):
        if t.kind != "IDENTIFIER" or t.spelling not in _API:
            continue
        nxt = toks[i + 1].spelling if i + 1 < len(toks) else ""
        qualified = i >= 2 and toks[i - 1].spelling == "::" and toks[i - 2].spelling == "wmma"
        if not qualified and not (bare and (i == 0 or toks[i - 1].spelling not in (".", "->", "::"))):
            continue
        if nxt not in ("(", "<"):
            continue
        start = toks[i - 2].start if qualified else t.start
        if i >= 4 and qualified and toks[i - 3].spelling == "::" and toks[i - 4].spelling == "nvcuda":
            start = toks[i - 4].start
        row = ctx.source.position(start)[0]
        if row in seen_lines:
            continue
        seen_lines.add(row)
        roc, vk = _API[t.spelling]
        text = data[start:t.end].decode("utf-8", "replace")
        ctx.report(CODE, (start, t.end), f"`{text}` is CUDA's warp matrix API (nvcuda::wmma), which HIP, Vulkan "
                                         f"and OpenCL do not have: on AMD use {roc} from rocWMMA (other shapes "
                                         f"and per-lane layout, wave64 on CDNA); on Vulkan {vk} with the "
                                         f"optional VK_KHR_cooperative_matrix extension; OpenCL has no "
                                         f"equivalent")

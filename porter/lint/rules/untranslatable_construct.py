"""A construct the chosen translation target cannot express (reported by `cuport translate`).

## What it does
Reported by the translators, not by `cuport lint`: when a kernel uses something the target has no
equivalent for, the kernel is not emitted and this diagnostic names the construct and its location.
For Vulkan GLSL and OpenCL C this covers recursion, function pointers, pointer comparisons and
differences (OpenCL compares pointers into one array), pointers that may point into different arrays,
pointer casts the target cannot keep exact (GLSL: an offset not provably a multiple of the new element,
views of shared or private arrays; both: struct layouts, 3-vectors),
`printf`, `goto`, lambdas, partial lane masks, math functions without an accurate builtin (`erff`,
`lgammaf`), file-scope device variables set by the host, and similar. For HIP it marks CUDA APIs with no
HIP counterpart.

## Why is this bad?
A translation that silently drops or approximates such a construct produces code that compiles and gives
wrong results. cuport refuses instead: no output for that kernel, never silently wrong code.

## Example
```cuda
__device__ int fact(int n) { return n <= 1 ? 1 : n * fact(n - 1); }   // recursion: not in GLSL
__global__ void k(int *out) { out[threadIdx.x] = fact(threadIdx.x); }
```

## Use instead
```cuda
__device__ int fact(int n) { int r = 1; for (int i = 2; i <= n; ++i) r *= i; return r; }
__global__ void k(int *out) { out[threadIdx.x] = fact(threadIdx.x); }
```

## Fix safety
No fix: the kernel has to be rewritten in the subset the target supports.

## References
- Khronos GLSL 4.60 specification, 6.1 (recursion is not allowed) and 4.1 (no pointer types).
- ROCm/HIPIFY#731 (constructs hipify cannot port are left for a human).
"""
CODE = "CP907"


def check(ctx):  # emitted by the translators
    return None

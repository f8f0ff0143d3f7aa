"""clang could not parse the file.

## What it does
Reports each syntax error clang finds, with clang's message and location.

## Why is this bad?
Code that does not parse cannot be checked or translated; every other rule is blind on it. Semantic errors
that come from headers cuport does not have (a CUDA library's declarations) are not reported: only malformed
code is.

## Example
```cuda
__global__ void k(float *a) { a[threadIdx.x] = 1.0f }   // missing ';'
```

## Use instead
```cuda
__global__ void k(float *a) { a[threadIdx.x] = 1.0f; }
```

## Fix safety
No fix.

## References
- clang's diagnostics (`-fsyntax-only`).
"""
CODE = "CP000"


def check(ctx):  # reported by the checker from the parse itself
    return None

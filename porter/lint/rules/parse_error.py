"""clang could not parse the file.

## What it does
Reports each syntax error clang finds, with clang's message and location: the first 10 one by one, then one
diagnostic giving how many there are (clang runs with no error limit, so an error late in a file is never
hidden behind earlier ones).

## Why is this bad?
Code that does not parse cannot be checked or translated; every other rule is blind on it. Semantic errors
that come from headers cuport does not have (a CUDA library's declarations) are not lint findings: only
malformed code is. They still count for `--fix`: a fix that adds a clang error of any kind is not applied.

`cuport translate --to glsl|opencl` reports every clang error as CP000, names an unknown name once (with how to
supply its declaration: `-I DIR`, `-D NAME=VALUE` / `--define`, or the config's `include-dirs` / `defines`),
and refuses (exit 1, nothing written) each kernel whose own code or any declaration it uses (device functions,
structs, typedefs, globals, macros) holds an error, and the whole file when an error lies outside any
declaration; errors in host code no kernel uses are warnings. `--to hip` refuses (does not write) a file whose
kernels hold a syntax error.

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

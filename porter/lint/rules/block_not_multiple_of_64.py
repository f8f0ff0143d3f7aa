"""Constant launch block whose thread count is not a multiple of 64, or `dim3(32, k)` with warp-level code.

## What it does
At every launch site whose block folds to a constant (`<<<g, 96>>>`, `dim3 block(32, 3)`, through macros,
`constexpr`, `dim3` locals and templated launch wrappers), flags:
- a block of `x * y * z` threads that is not a multiple of 64: the last 64-wide wavefront of every block runs
  partly empty on AMD CDNA (gfx9: MI100, MI200, MI300); the message gives the idle lanes;
- a block `dim3(32, k)` (k > 1) launching a kernel that uses warp-level code (shuffles, ballots, `__syncwarp`,
  lane or warp ids computed from the thread index): written so that one row of 32 threads is one warp, it puts
  two rows in one wavefront on wave64 and the warp-level code mixes the rows.

Single-thread launches (`<<<1, 1>>>`) and blocks that do not fold to a constant are not flagged.

## Why is this bad?
A wavefront is scheduled as a whole: a block of 96 threads occupies two wave64 slots and leaves 32 of 128
lanes idle (25%) in every block. A `dim3(32, 8)` block whose rows each reduce with `__shfl_down_sync` is
correct on NVIDIA, where a row is a warp, and wrong on AMD, where lanes 32..63 of a wavefront belong to the
next row (ROCm/hip#1041).

## Example
```cuda
dim3 block(32, 3);                          // 96 threads: 1.5 wavefronts of 64
row_reduce<<<grid, dim3(32, 8)>>>(...);     // one warp per row, rows reduced with shuffles
```

## Use instead
```cuda
dim3 block(64, 2);                          // 128 threads: two full wavefronts
row_reduce<<<grid, dim3(warp_size, 8)>>>(...);  // warp_size from hipDeviceProp_t::warpSize
```

## Fix safety
No fix: the block shape is part of the kernel's indexing; changing it needs the kernel changed with it.

## References
- ROCm/hip#1041 (`dim3(32, 2)` is one wave64), LeelaChessZero/lc0#2420, JuliaGPU/AMDGPU.jl#1060.
"""
from porter.analysis.launch import site_kernel, site_shapes
from porter.lint.helpers import function_by_call, warp_evidence

CODE = "CP601"


def check(ctx):
    model = ctx.model
    for site in model.launches:
        name = site_kernel(site)
        shapes = site_shapes(model, site)
        if not shapes:
            continue
        kernel = function_by_call(model, site.node) or next(
            (f for f in model.functions if f.name == name and f.is_kernel and f.body is not None), None)
        for shape, env in shapes:
            msg, severe = _problem(ctx, shape, kernel, env)
            if msg:
                d = ctx.report(CODE, site.block, msg)
                if severe:
                    d.severity = "error"
                break


def _problem(ctx, shape, kernel, env):
    x, y, z = shape.dims
    n = x * y * z
    where = f" (with {', '.join(f'{k} = {v}' for k, v in env.items())})" if env else ""
    label = f"block {shape.text}" if shape.text.isdigit() else f"`{shape.text}` = {shape.label()}"
    if x == 32 and y * z > 1 and kernel is not None:
        ev = warp_evidence(ctx.analysis, kernel)
        if ev is not None:
            line = ctx.model.source.position(ev.start)[0]
            what = ev.spelling if ev.kind == "CALL_EXPR" else " ".join(ev.text.split())
            return (f"{label}{where} makes each row of 32 threads one warp on NVIDIA, but a 64-wide wavefront "
                    f"(AMD CDNA) holds two rows: `{what}` in `{kernel.name}` (line {line}) then exchanges data "
                    f"across rows"), True
    if n > 1 and n % 64:
        waves = -(-n // 64)
        idle = waves * 64 - n
        return (f"{label}{where} has {n} threads, not a multiple of 64: on wave64 GPUs (AMD CDNA) each block "
                f"runs as {waves} wavefront{'s' if waves > 1 else ''} with {idle} of {waves * 64} lanes idle "
                f"({100 * idle // (waves * 64)}%)"), False
    return None, False

"""cuport verify spec for block_reduce_perwarp.cu: a two-level block sum with per-warp partials `part[BLOCK / 32]`.

Translated for subgroups of 4..16 lanes (and OpenCL's one-lane warps) `part` gets one slot per warp of the
narrowest subgroup, the bound `BLOCK / 32` becomes the real warp count and the first subgroup folds in the
partials beyond its lanes before its shuffle sum. HIP keeps `part[8]` (wave64 and wave32 have fewer warps) and
bounds the read by `BLOCK / warpSize`.
"""
import numpy as np

from porter.verify.spec import Case, Tol, uniform


def block_sums(n, **args):
    x = np.zeros(-(-n // 256) * 256)
    x[:n] = args["in"]
    return {"out": x.reshape(-1, 256).sum(axis=1)}


KERNELS = [
    Case(source="block_reduce_perwarp.cu", kernel="block_reduce_perwarp",
         signature="in: f32[n] in, out: f32[ceil(n / 256)] out, n: i32",
         init={"in": uniform(0.0, 1.0)},
         grid="ceil(n / 256)", block="256",
         reference=block_sums,
         sizes=[{"n": 1000}, {"n": 4096}, {"n": 100003}],
         tol=Tol(1e-5, 1e-4),
         bytes="4 * n", flops="n", bench_sizes={"n": 3 << 28}),
]

"""cuport verify spec for the warp-shuffle block sums.

warp_reduce.cu hard-codes a warp of 32 (lane = tid & 31, offsets from 16): a translation that
keeps that is wrong on Vulkan subgroups of 4, 8 or 16 lanes and fails here; the translator is
expected to rewrite it (the HIP one derives lane and offsets from warpSize). warp_reduce_fixed.cu
derives everything from warpSize itself and must pass at every subgroup size from 4 to 64.
"""
import numpy as np

from porter.verify.spec import Case, Tol, uniform


def block_sums(n, **args):
    x = np.zeros(-(-n // 256) * 256)
    x[:n] = args["in"]
    return {"out": x.reshape(-1, 256).sum(axis=1)}


COMMON = dict(
    signature="in: f32[n] in, out: f32[ceil(n / 256)] out, n: i32",
    init={"in": uniform(0.0, 1.0)},
    grid="ceil(n / 256)",
    block="256",
    reference=block_sums,
    sizes=[{"n": 1000}, {"n": 4096}, {"n": 100003}],
    tol=Tol(1e-5, 1e-4),
    bytes="4 * n",
    flops="n",
    bench_sizes={"n": 1 << 24},
)

KERNELS = [
    Case(source="warp_reduce.cu", kernel="warp_reduce", **COMMON),
    Case(source="warp_reduce_fixed.cu", kernel="warp_reduce_fixed", **COMMON),
]

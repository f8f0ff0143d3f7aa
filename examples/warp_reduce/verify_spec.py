"""cuport verify spec for the warp-shuffle block sums.

warp_reduce.cu hard-codes a warp of 32 (lane = tid & 31, offsets from 16): a translation that
keeps that is wrong on Vulkan subgroups of 4, 8 or 16 lanes and fails here; the translator is
expected to rewrite it (the HIP one derives lane and offsets from warpSize). warp_reduce_fixed.cu
derives everything from warpSize itself and must pass at every subgroup size from 4 to 64.
"""
import numpy as np

from porter.verify.spec import Case, Tol, arange, uniform, zeros


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
    bench_sizes={"n": 3 << 28},
)


# warp_sum.cu as written (lane = tid & 31, offsets from 16) and as cuport translates it (the safe fixes make
# lane and offsets come from warpSize). Verified "as written", its GLSL/OpenCL translations are wrong on every
# subgroup narrower than 32: the hazard the linter reports, made visible.
SUM = dict(
    source="warp_sum.cu", kernel="warp_sum",
    signature="in: i32[n] in, out: i32[1] inout, n: i32",
    init={"in": arange(7), "out": zeros()},
    grid="ceil(n / 128)", block="128",
    reference=lambda **a: {"out": np.array([a["in"].astype(np.int64).sum()], dtype=np.int32)},
    sizes=[{"n": 1000}, {"n": 4096}, {"n": 77}],
    bytes="4 * n",
    bench_sizes={"n": 5 << 27},             # the int sum (values 0..6) stays below 2^31
)

KERNELS = [
    # warp_reduce keeps `partial[32]` (one slot per warp, CP104) and lets one warp reduce the partials: with
    # 256 threads that needs warps of >= 16 lanes. The GLSL / OpenCL translations give `partial` a slot per warp
    # of the narrowest subgroup and fold the partials beyond the first subgroup's lanes in before its shuffle
    # sum (porter/translate/warp_sizing.py), so subgroups of 4 and 8 and OpenCL's one-lane warps pass too.
    Case(source="warp_reduce.cu", kernel="warp_reduce", **COMMON),
    Case(source="warp_reduce_fixed.cu", kernel="warp_reduce_fixed", **COMMON),
    # refused on every subgroup narrower than 32 lanes (lavapipe 4/8/16: the GLSL launch contract); right at 32,
    # and on OpenCL, which runs CUDA's 32-lane warps emulated in local memory (warp32.py: its one-lane warps
    # cannot run a shuffle that reaches 16 lanes away)
    Case(name="warp_sum (as written)", translate={"portability_fixes": False},
         expect={"vulkan/sg4": "fail", "vulkan/sg8": "fail", "vulkan/sg16": "fail"}, **SUM),
    Case(name="warp_sum (cuport-fixed)", **SUM),
]

"""cuport verify spec for warp_histogram.cu: one private bin array per warp (`bins[WARPS * BINS]`), merged per block.

Translated for subgroups of 4..16 lanes (and OpenCL's one-lane warps) `bins` gets one bin array per warp of the
narrowest subgroup and both loops over warps run to the real warp count. Atomics make the counts exact.
"""
import numpy as np

from porter.verify.spec import Case, arange, zeros


def histogram(n, **args):
    h = np.bincount(args["in"] % 16, minlength=16)
    return {"hist": h.astype(np.uint32)}


KERNELS = [
    Case(source="warp_histogram.cu", kernel="warp_histogram",
         signature="in: i32[n] in, hist: u32[16] inout, n: i32",
         init={"in": arange(1000), "hist": zeros()},
         grid="16", block="256",
         reference=histogram,
         sizes=[{"n": 1000}, {"n": 65536}, {"n": 100003}],
         bytes="4 * n", bench_sizes={"n": 1 << 24}),
]

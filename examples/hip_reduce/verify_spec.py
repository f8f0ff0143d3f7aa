"""cuport verify spec for hip_reduce.cu: one block of 256 threads sums up to 256 values.

The warp-synchronous tail (`if (tid < 32)`, volatile, no barrier) assumes 32 threads advance in
lockstep. A translation that keeps that assumption fails on Vulkan subgroups of 4, 8 or 16 lanes
(and is wrong on wave64); verify reports it as a failure of the translation.
"""
import numpy as np

from porter.verify.spec import Case, Tol, uniform

KERNELS = [
    Case(
        source="hip_reduce.cu",
        kernel="hip_reduce",
        signature="data: f32[n] in, result: f32[1] out, n: i32",
        init={"data": uniform(0.0, 1.0)},
        grid="1",
        block="256",
        reference=lambda data: {"result": np.array([data.astype(np.float64).sum()])},
        sizes=[{"n": 256}, {"n": 200}, {"n": 37}],
        tol=Tol(1e-5, 1e-4),
    ),
]

"""cuport verify spec for the guide's kernels (docs/guide.md).

The cases verify the source as it is on disk, without the translator's own portability fixes
(translate={"portability_fixes": False}): before `cuport lint --fix` warp_total is wrong on every subgroup
narrower than 32 lanes; after it, it passes everywhere.
"""
import numpy as np

from porter.verify.spec import Case, arange, uniform, zeros

AS_IS = {"portability_fixes": False}

KERNELS = [
    Case(source="src/kernels.cuh", kernel="warp_total", translate=AS_IS,
         signature="in: i32[n] in, out: i32[1] inout, n: i32",
         init={"in": arange(7), "out": zeros()},
         grid="ceil(n / 128)", block="128",
         reference=lambda **a: {"out": np.array([a["in"].astype(np.int64).sum()], dtype=np.int32)},
         sizes=[{"n": 77}, {"n": 4096}]),
    Case(source="src/kernels.cuh", kernel="saxpy", translate=AS_IS,
         signature="n: i32, a: f32 = 2.0, x: f32[n] in, y: f32[n] inout",
         init={"x": uniform(-1.0, 1.0), "y": uniform(-1.0, 1.0)},
         grid="ceil(n / 128)", block="128",
         reference=lambda a, x, y, **_: {"y": a * x + y},
         sizes=[{"n": 1000}]),
]

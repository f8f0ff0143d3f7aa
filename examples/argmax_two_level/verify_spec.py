"""cuport verify spec for argmax_two_level.cu: block max and argmax with one (value, index) pair per warp in
`sval[32]` / `sidx[32]` and an `if (warp == 0)` second stage.

On subgroups narrower than 16 lanes a 256-thread block has more warps than the first subgroup has lanes, and the
pairs beyond its lanes would have to be folded in with the argmax comparison, which cuport does not derive:
the GLSL and OpenCL translations are refused with CP104 naming `sval` (tests/test_perwarp.py asserts it), so
verify reports them as expected failures. CUDA and HIP (wave64 / wave32: fewer warps, and the second stage
bounded by `BLOCK / warpSize`) are exact.
"""
import numpy as np

from porter.verify.spec import Case, uniform


def block_argmax(n, **args):
    x = np.full(-(-n // 256) * 256, -np.finfo(np.float32).max, dtype=np.float32)
    x[:n] = args["in"]
    blocks = x.reshape(-1, 256)
    idx = blocks.argmax(axis=1)
    val = blocks[np.arange(blocks.shape[0]), idx]
    gidx = (idx + 256 * np.arange(blocks.shape[0])).astype(np.int32)
    return {"out_val": val, "out_idx": gidx}


KERNELS = [
    Case(source="argmax_two_level.cu", kernel="argmax_two_level",
         signature="in: f32[n] in, out_val: f32[ceil(n / 256)] out, out_idx: i32[ceil(n / 256)] out, n: i32",
         init={"in": uniform(-1.0, 1.0)},
         grid="ceil(n / 256)", block="256",
         reference=block_argmax,
         sizes=[{"n": 1000}, {"n": 4096}, {"n": 100003}],
         bytes="4 * n", bench_sizes={"n": 3 << 28},
         expect={"vulkan": "fail", "opencl": "fail"}),
]

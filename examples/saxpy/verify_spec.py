"""cuport verify spec for saxpy.cu."""
from porter.verify.spec import Case

KERNELS = [
    Case(
        source="saxpy.cu",
        kernel="AddKernel",
        # As printed in the seed, AddKernel has no bounds check: n must be a multiple of the block.
        signature="a: f32[n] inout, b: f32[n] in",
        grid="n // 256",
        block="256",
        reference=lambda a, b: {"a": a + b},
        sizes=[{"n": 256}, {"n": 65536}],
        bytes="12 * n",
        flops="n",
        bench_sizes={"n": 1 << 28},
    ),
    Case(
        source="saxpy.cu",
        kernel="saxpy",
        signature="n: i32, a: f32 = 2.5, x: f32[n] in, y: f32[n] inout",
        grid="ceil(n / 256)",
        block="256",
        reference=lambda a, x, y: {"y": a * x + y},
        sizes=[{"n": 1000}, {"n": 65536}, {"n": 1000003}],
        bytes="12 * n",
        flops="2 * n",
        bench_sizes={"n": 1 << 28},
    ),
]

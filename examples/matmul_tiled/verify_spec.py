"""cuport verify spec for matmul_tiled.cu, with its default TILE_SIZE 16 and with -DTILE_SIZE=32."""
import numpy as np

from porter.verify.spec import Case, Tol

COMMON = dict(
    source="matmul_tiled.cu",
    kernel="matmul_tiled",
    signature="A: f32[M, K] in, B: f32[K, N] in, C: f32[M, N] out, M: i32, N: i32, K: i32",
    grid="(ceil(N / TILE_SIZE), ceil(M / TILE_SIZE))",
    block="(TILE_SIZE, TILE_SIZE)",
    reference=lambda A, B: {"C": A.astype(np.float64) @ B.astype(np.float64)},
    # Not multiples of the tile on purpose: the bounds checks must hold.
    sizes=[{"M": 64, "N": 64, "K": 64}, {"M": 100, "N": 75, "K": 33}, {"M": 257, "N": 129, "K": 300}],
    tol=Tol(1e-4, "max(1e-5, 3e-7 * K)"),   # float32 sums: the error grows with K
    flops="2 * M * N * K",
    bench_sizes={"M": 4096, "N": 4096, "K": 4096},
)

KERNELS = [
    Case(defines={"TILE_SIZE": 16}, **COMMON),
    Case(defines={"TILE_SIZE": 32}, **COMMON),
]

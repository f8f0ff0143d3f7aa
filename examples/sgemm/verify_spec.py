"""cuport verify spec for the register-tiled SGEMMs.

sgemm_optimized is the seed's kernel as printed: launched with 16 x 16 threads it indexes 16 rows
of 8-row shared tiles (As[tx][...], Bs[ty][...]), so it must fail (illegal address on an H100,
wrong numbers elsewhere). sgemm_fixed loads the tiles with the linear thread id and is correct for
any M, N, K; full-speed sizes are multiples of 128 (M, N) and 8 (K).
"""
import numpy as np

from porter.verify.spec import Case, Tol

COMMON = dict(
    signature="A: f32[M, K] in, B: f32[K, N] in, C: f32[M, N] out, M: i32, N: i32, K: i32",
    grid="(ceil(N / 128), ceil(M / 128))",
    block="(16, 16)",
    reference=lambda A, B: {"C": A.astype(np.float64) @ B.astype(np.float64)},
    tol=Tol(1e-4, "max(1e-5, 3e-7 * K)"),   # float32 sums: the error grows with K
    flops="2 * M * N * K",
    bytes="4 * (M * K + K * N + M * N)",
    bench_sizes={"M": 4096, "N": 4096, "K": 4096},
    bench_baseline="C = A @ B",             # --bench times cuBLAS (CuPy matmul) beside the CUDA original
)

KERNELS = [
    Case(source="sgemm_optimized.cu", kernel="sgemm_optimized", expect="fail",
         sizes=[{"M": 128, "N": 128, "K": 128}, {"M": 256, "N": 256, "K": 64}], **COMMON),
    Case(source="sgemm_fixed.cu", kernel="sgemm_fixed",
         sizes=[{"M": 128, "N": 128, "K": 128}, {"M": 256, "N": 384, "K": 64}, {"M": 200, "N": 130, "K": 37}],
         **COMMON),
]

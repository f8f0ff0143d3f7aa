"""Hand-written verify spec for HeCBench lut-gemm-cuda's `_nqmv<K_TILE_SIZE>` and `_nqmv_bias<K_TILE_SIZE>` (the
program at /tmp/hec10/src/lut-gemm-cuda, HeCBench f27000a5): breadth cannot derive a case (the host passes the
fields of an `nQWeight_fp16` object, whose sizes it cannot see), so this spec lists the arguments and checks the
translations against a NumPy float16 transcription of the kernels (each half operation rounded to half in the
kernel's order, as CUDA's __half operators do): the table of signed input sums built per block, the bit-plane
lookups, the scales, and the final `atomicAdd((half2*)&output[m], ...)` (half2_atomics.py) onto the output's
initial values.

    .venv/bin/python -m porter verify bench/specs/lutgemm_verify_spec.py --targets vulkan,opencl -j 1

Session 11 (branch s11-struct): 24 pass (6 cases x lavapipe 4/8/16 + PoCL); under Oclgrind (`--targets oclgrind`,
the OpenCL translation in a simulator that reports every out-of-bounds access) 6 pass. The spec's signature is
the kernels' own, so `--targets cuda` runs the CUDA original against the same reference on a GPU.

With one block row (K = K_TILE_SIZE) each output pair gets one atomic add, so the result is exact (Tol(0, 0)); with
two (K = 2 * K_TILE_SIZE, two groups of alpha) the two adds land in either order, which from the program's zeroed
output rounds alike: exact too (session 11: from uniform(-4, 4) with a 2e-3 tolerance, lavapipe sg8 once differed
by 8 half ulps, an intermediate near 8 rounded in the other order).
M_TILE_SIZE = 256 is even, as the translations' launch contract requires (the program passes 2048)."""
import os

import numpy as np

from porter.verify.spec import Case, Tol, full, uniform

SRC = os.path.join(os.environ.get("CUPORT_HEC_SRC", "/tmp/hec10/src"), "lut-gemm-cuda", "kernels.cu")   # breadth sets it

H = np.float16
BLOCK = 256


def _h(x):
    return np.asarray(x).astype(H)


def _table(inp, kt):
    """lut[y][x] of one block: rows of 8 inputs, x's bits choosing +-input; built as the kernel builds it."""
    rows = kt // 8
    xs = BLOCK // rows                                  # lut_x_size
    s0 = {1: 0, 2: 1, 4: 2, 8: 3, 16: 4, 32: 5, 64: 6, 128: 7}.get(xs, 8)
    lut = np.zeros((rows, 256), H)
    x = np.arange(xs)
    for y in range(rows):
        v = inp[y * 8:(y + 1) * 8]
        acc = _h(_h(2 * ((x >> 0) & 1) - 1) * v[0])
        for i in range(1, 8):
            acc = _h(acc + _h(_h(2 * ((x >> i) & 1) - 1) * v[i]))
        lut[y, :xs] = acc
        for s in range(s0, 8):
            iv = _h(H(2) * v[s])
            for i in range(1 << s, 1 << (s + 1), xs):
                lut[y, i + x] = _h(lut[y, i + x - (1 << s)] + iv)
    return lut


def _pairs(kt, bias):
    def ref(M, K, NB, NG, **b):
        W, alpha, inp = b["W"].astype(np.int64), b["alpha"], b["input"]
        out = b["output"].copy()
        gsize = K // NG
        for by in range(K // kt):
            lut = _table(inp[by * kt:(by + 1) * kt], kt)
            g = (by * kt) // gsize
            bw = (by * kt) // 32 * NB * M
            for lane in (0, 1):
                m = np.arange(0, M, 2) + lane
                acc = np.zeros(m.size, H)
                if bias:
                    a = b["q_bias"][g * M + m]
                    t = np.zeros(m.size, H)
                    for k in range(kt // 32):
                        for j in range(4):
                            t = _h(t + lut[k * 4 + j, 255])
                    acc = _h(acc + _h(a * t))
                for bit in range(NB):
                    a = alpha[g * NB * M + bit * M + m]
                    t = np.zeros(m.size, H)
                    for k in range(kt // 32):
                        w = W[bw + k * NB * M + bit * M + m]
                        for j in range(4):
                            t = _h(t + lut[k * 4 + j, (w >> (8 * j)) & 255])
                    acc = _h(acc + _h(a * t))
                out[m] = _h(out[m] + acc)
        return {"output": out}
    return ref


def case(kernel, kt, k, ng, tol):
    bias = "bias" in kernel
    sig = ("W: u32[K / 32 * NB * M] in, alpha: f16[NG * NB * M] in, " + ("q_bias: f16[NG * M] in, " if bias else "")
           + "input: f16[K] in, output: f16[M] inout, M: i32 = M, K: i32 = K, NUM_BITS: i32 = NB, "
           "M_TILE_SIZE: i32 = 256, group_size: i32 = K / NG")
    # two block rows add into each output pair in either order: from the zeros the program starts from
    # (main.cu:86, cudaMemset before matmul) the two orders round alike (0 + a = a exactly, then a + b = b + a),
    # so the check stays exact; from other values they could differ by an intermediate's rounding
    init = {"W": uniform(0, 4294967295), "alpha": uniform(-1, 1), "input": uniform(-1, 1),
            "output": full(0) if k != kt else uniform(-4, 4)}
    if bias:
        init["q_bias"] = uniform(-1, 1)
    name = f"{kernel}<{kt}>" + (f" K={k}" if k != kt else "")
    return Case(source=SRC, kernel=f"{kernel}<{kt}>", name=name, signature=sig,
                init=init,
                grid="(ceil(M / 256), K / %d)" % kt, block=str(BLOCK), reference=_pairs(kt, bias),
                sizes=[{"M": 1000, "K": k, "NB": 3, "NG": ng}], tol=tol)


KERNELS = [
    case("_nqmv", 64, 64, 1, Tol(0, 0)),          # nqmv's instance (k_tile_idx 1)
    case("_nqmv", 32, 32, 1, Tol(0, 0)),
    case("_nqmv", 64, 128, 2, Tol(0, 0)),         # two block rows: the two adds of a pair in either order
    case("_nqmv_bias", 32, 32, 1, Tol(0, 0)),     # nqmv_bias's instance (k_tile_idx 0)
    case("_nqmv_bias", 64, 64, 1, Tol(0, 0)),
    case("_nqmv_bias", 32, 64, 2, Tol(0, 0)),
]

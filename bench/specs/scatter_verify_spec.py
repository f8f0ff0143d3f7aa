"""Hand-written verify spec for HeCBench scatter-cuda's scatter_kernel (the program at /tmp/hec/src/scatter-cuda,
HeCBench f27000a5): breadth's derived cases cannot describe its `const TensorInfo<int64_t, int64_t>` parameter
(a struct holding a pointer, which cuport flattens into index_info_data / _sizes / _strides / _dims), so this
spec lists the flattened arguments and checks the instances that translate against NumPy (a 1-d index tensor,
B = K = 1: out[idx[t]] op= src[t]).

    .venv/bin/python -m porter verify bench/specs/scatter_verify_spec.py --targets vulkan,opencl -j 1

Session 10 (branch s10-address): 16 pass (4 instances x lavapipe 4/8/16 + PoCL)."""
import os

import numpy as np

from porter.verify.spec import Case, Tol, below, full, uniform

SRC = os.path.join(os.environ.get("CUPORT_HEC_SRC", "/tmp/hec10/src"), "scatter-cuda", "main.cu")   # breadth sets it
TR = ("vulkan", "opencl", "cuda", "oclgrind")      # oclgrind: breadth checks the bounds
SUM, MIN, MAX = 0, 3, 4           # ReductionType's values: the instances' labels


def ref(op, dt):
    def r(n, m, **b):
        idx, src, out = b["index_info_data"], b["src_data"], b["out_data"].copy()
        for t in range(n):
            i = int(idx[t * int(b["index_info_strides"][0])])
            out[i] = out[i] + src[t] if op == SUM else (min(out[i], src[t]) if op == MIN else max(out[i], src[t]))
        return {"out_data": out.astype(dt)}
    return r


def case(label, dt, op, tol):
    return Case(source=SRC, kernel=label,
                signature=f"src_data: {dt}[n] in, index_info_data: i64[n] in, index_info_sizes: i64[25] in, "
                          f"index_info_strides: i64[25] in, index_info_dims: i32 = 1, out_data: {dt}[m] inout, "
                          f"E: i32 = n, K: i32 = 1, N: i32 = m, numel: i32 = n",
                init={"src_data": uniform(-8, 8), "index_info_data": below("m"), "index_info_sizes": full(1),
                      "index_info_strides": full(1), "out_data": uniform(-8, 8)},
                grid="ceil(n / 256)", block="256", reference=ref(op, np.float32 if dt == "f32" else np.int32),
                sizes=[{"n": 4096, "m": 2048}], tol=tol, targets=TR)


KERNELS = [
    case("scatter_kernel<float, 0>", "f32", SUM, Tol(1e-4, 1e-4)),     # atomics add in any order
    case("scatter_kernel<int, 0>", "i32", SUM, Tol(0, 0)),
    case("scatter_kernel<int, 3>", "i32", MIN, Tol(0, 0)),
    case("scatter_kernel<int, 4>", "i32", MAX, Tol(0, 0)),
]

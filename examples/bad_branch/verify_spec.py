"""cuport verify spec for bad_branch.cu (slow on purpose, but correct everywhere)."""
import numpy as np

from porter.verify.spec import Case, uniform


def signed_sqrt(data):
    return {"data": np.where(data > 0, np.sqrt(np.abs(data)), -np.sqrt(np.abs(data)))}


def parity_sqrt(data):
    s = np.sqrt(np.abs(data))
    return {"data": np.where(np.arange(data.size) % 2 == 0, s, -s)}   # block size is even


COMMON = dict(
    source="bad_branch.cu",
    signature="data: f32[n] inout, n: i32",
    init={"data": uniform(-4.0, 4.0)},
    grid="ceil(n / 256)",
    block="256",
    sizes=[{"n": 1000}, {"n": 65536}, {"n": 100003}],
    bytes="8 * n",
    bench_sizes={"n": 3 << 27},
)

KERNELS = [
    Case(kernel="bad_branch", reference=signed_sqrt, **COMMON),
    Case(kernel="bad_branch_parity", reference=parity_sqrt, **COMMON),
]

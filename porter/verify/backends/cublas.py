"""cuBLAS through CuPy, the library baseline of `cuport verify --bench` (not a verify target).

A case's `bench_baseline = "C = A @ B"` names its arguments: `cupy.matmul(A, B, out=C)` is timed with CUDA events
beside the kernel. FP32 in and out; CuPy leaves TF32 off unless CUPY_TF32=1, so this is cuBLAS's SGEMM.
"""
from __future__ import annotations

import re

import numpy as np

from . import CompileError, Session
from .cuda import available, prepare  # noqa: F401  (same device facts as the CUDA target)

BASELINE = re.compile(r"\s*(\w+)\s*=\s*(\w+)\s*@\s*(\w+)\s*$")


def parse(expr: str | None) -> tuple[str, str, str]:
    """`out = a @ b` -> (out, a, b)."""
    m = BASELINE.match(expr or "")
    if not m:
        raise CompileError(f"bench_baseline {expr!r}: expected 'OUT = A @ B'")
    return m.group(1), m.group(2), m.group(3)


class MatmulSession(Session):
    def __init__(self, case, sizes, arrays):
        import cupy
        self.out, a, b = parse(case.bench_baseline)
        for name in (self.out, a, b):
            if not isinstance(arrays.get(name), np.ndarray) or arrays[name].ndim != 2:
                raise CompileError(f"bench_baseline: '{name}' is not a 2-d array parameter of {case.kernel}")
        self.a, self.b = cupy.asarray(arrays[a]), cupy.asarray(arrays[b])
        self.c = cupy.asarray(arrays[self.out])
        self.start, self.stop = cupy.cuda.Event(), cupy.cuda.Event()
        self.info = {"library": f"cuBLAS (CuPy {cupy.__version__} matmul, TF32 "
                                f"{'on' if _tf32() else 'off'})"}

    def launch(self) -> float:
        import cupy
        self.start.record()
        cupy.matmul(self.a, self.b, out=self.c)
        self.stop.record()
        self.stop.synchronize()
        return cupy.cuda.get_elapsed_time(self.start, self.stop)

    def outputs(self) -> dict:
        import cupy
        return {self.out: cupy.asnumpy(self.c)}


def _tf32() -> bool:
    import os
    return os.environ.get("CUPY_TF32", "0") not in ("", "0")


def open_session(case, source_text, manifest, sizes, arrays, *, variant=None) -> MatmulSession:
    return MatmulSession(case, sizes, arrays)

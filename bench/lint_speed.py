"""Lint speed benchmark (not a test). Prints the numbers the README quotes.

1. end-to-end wall time of `cuport lint one.cu` (pre-commit case, interpreter start included), median of 7;
2. throughput over >= 200 files (examples + generated kernels) on one core (--jobs 1, --no-cache);
3. warm-cache re-run of the same set (cache populated by a first run), speed-up factor.

Usage: .venv/bin/python bench/lint_speed.py [--files N]
"""
from __future__ import annotations

import argparse
import glob
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

TEMPLATE = """#define WARP_SIZE 32
#define TILE {tile}
__device__ float warp_sum_{i}(float v) {{
  for (int o = 16; o > 0; o /= 2) v += __shfl_down_sync(0xffffffff, v, o);
  return v;
}}
__global__ void reduce_{i}(const float *in, float *out, int n) {{
  __shared__ float partial[32];
  int tid = blockIdx.x * blockDim.x + threadIdx.x;
  int lane = threadIdx.x % WARP_SIZE;
  int warp = threadIdx.x / WARP_SIZE;
  float v = tid < n ? in[tid] : 0.0f;
  v = warp_sum_{i}(v);
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  if (warp == 0) {{
    v = lane < blockDim.x / WARP_SIZE ? partial[lane] : 0.0f;
    v = warp_sum_{i}(v);
    if (lane == 0) atomicAdd(out, v);
  }}
}}
__global__ void transpose_{i}(float *odata, const float *idata, int width, int height) {{
  __shared__ float tile[TILE][TILE];
  int x = blockIdx.x * TILE + threadIdx.x;
  int y = blockIdx.y * TILE + threadIdx.y;
  for (int j = 0; j < TILE; j += 8)
    if (x < width && y + j < height) tile[threadIdx.y + j][threadIdx.x] = idata[(y + j) * width + x];
  __syncthreads();
  x = blockIdx.y * TILE + threadIdx.x;
  y = blockIdx.x * TILE + threadIdx.y;
  for (int j = 0; j < TILE; j += 8)
    if (x < height && y + j < width) odata[(y + j) * height + x] = tile[threadIdx.x][threadIdx.y + j];
}}
__global__ void saxpy_{i}(int n, float a, const float *x, float *y) {{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}}
int launch_{i}(const float *in, float *out, int n) {{
  int threads = 256;
  int blocks = (n + threads - 1) / threads;
  reduce_{i}<<<blocks, threads>>>(in, out, n);
  return 0;
}}
"""


def cuport(args, cwd):
    return subprocess.run([os.path.join(ROOT, ".venv", "bin", "cuport"), *args], cwd=cwd, capture_output=True,
                          text=True)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--files", type=int, default=200)
    ap.add_argument("--kernels-per-file", type=int, default=6,
                    help="template instances per generated file: 6 gives ~290 lines, the mean file size of NVIDIA's "
                         "cuda-samples (65,908 lines in 225 files); 1 gives tiny 45-line files")
    a = ap.parse_args()
    work = tempfile.mkdtemp(prefix="cuport-bench-")
    try:
        examples = sorted(glob.glob(os.path.join(ROOT, "examples", "**", "*.cu"), recursive=True))
        for i, f in enumerate(examples):
            shutil.copy(f, os.path.join(work, f"ex{i}_{os.path.basename(f)}"))
        for i in range(max(0, a.files - len(examples))):
            with open(os.path.join(work, f"gen{i}.cu"), "w") as fh:
                fh.write(f"// generated benchmark file {i}: {a.kernels_per_file} kernel groups\n#include <cstdio>\n\n")
                for j in range(a.kernels_per_file):
                    body = TEMPLATE.format(i=f"{i}_{j}", tile=32 if (i + j) % 2 else 16)
                    if j:  # the macros are defined once per file
                        body = body.replace("#define WARP_SIZE 32\n", "").replace(
                            "#define TILE 32\n", "").replace("#define TILE 16\n", "")
                    fh.write(f"// ---- group {j}: warp reduction, tiled transpose, saxpy and a launcher ----\n")
                    fh.write(body + "\n")
        files = sorted(glob.glob(os.path.join(work, "*.cu")))
        lines = sum(open(f).read().count("\n") for f in files)
        one = files[0] if not examples else os.path.join(work, f"ex0_{os.path.basename(examples[0])}")

        times = []
        for _ in range(7):
            t = time.perf_counter()
            cuport(["lint", "--no-cache", "--exit-zero", one], work)
            times.append(time.perf_counter() - t)
        single = statistics.median(times)

        t = time.perf_counter()
        r = cuport(["lint", "--no-cache", "--jobs", "1", "--exit-zero", "--statistics", "."], work)
        cold = time.perf_counter() - t
        assert r.returncode == 0, r.stderr
        cuport(["lint", "--exit-zero", "--statistics", "."], work)  # populate the cache
        warm_times = []
        for _ in range(3):
            t = time.perf_counter()
            cuport(["lint", "--exit-zero", "--jobs", "1", "--statistics", "."], work)
            warm_times.append(time.perf_counter() - t)
        warm = statistics.median(warm_times)

        print(f"files: {len(files)}, lines: {lines} ({lines / len(files):.0f} per file)")
        print(f"single file (pre-commit case, incl. interpreter start): {single * 1000:.0f} ms median of 7 "
              f"(target < 300 ms)")
        print(f"throughput, one core, no cache: {cold:.2f} s -> {lines / cold:,.0f} lines/s (target >= 20,000)")
        print(f"warm cache re-run: {warm:.3f} s -> {cold / warm:.1f}x faster (target >= 10x)")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

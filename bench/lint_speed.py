"""Lint speed benchmark (not a test). Prints the numbers the README quotes.

1. end-to-end wall time of `cuport lint one.cu` (pre-commit case, interpreter start included), median of 7;
2. throughput over >= 200 files (examples + generated kernels) on one core (--jobs 1, --no-cache);
3. warm-cache re-run of the same set (cache populated by a first run), speed-up factor.

Usage: .venv/bin/python bench/lint_speed.py [--files N]
       .venv/bin/python bench/lint_speed.py --cuda-samples DIR [--hipify-perl PATH]
       .venv/bin/python bench/lint_speed.py --one-file FILE [--runs N] [--compare OTHER_CHECKOUT] [--hipify-perl P]

With --cuda-samples (a checkout of NVIDIA/cuda-samples, bench/corpus/sources.txt), the corpus is its 225
`.cu`/`.cuh` files instead: lines/s per core of a cold `--jobs 1 --no-cache` run over all of them, from the
CPU time (user + sys) of cuport and its workers, which other load on the machine does not inflate, and from
wall time; the one-file pre-commit run against `hipify-perl` on the same file in the same session (wall time,
median of 7 alternating runs, interpreter start included for both); and the warm-cache re-run.
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


def timed(cmd, cwd=None, reap=False):
    """(wall s, CPU s of the command and every process it waited for; with reap, also of its orphaned
    descendants once they end: needs _subreaper)."""
    import resource
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    subprocess.run(cmd, cwd=cwd, capture_output=True)
    wall = time.perf_counter() - t
    while reap:
        try:
            os.waitpid(-1, 0)
        except ChildProcessError:
            break
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)


def real_corpus(root: str, hipify: str | None) -> int:
    sys.path.insert(0, os.path.join(ROOT, "bench", "corpus"))
    import load
    c = load.corpora()["cuda-samples"]
    load.check_revision(root, c)
    files = [os.path.join(root, f) for f in load.files(root, c)]
    lines = sum(open(f, "rb").read().count(b"\n") for f in files)
    exe = os.path.join(ROOT, ".venv", "bin", "cuport")
    wall = min(timed([exe, "lint", "--no-cache", "--jobs", "1", "--exit-zero", "-q", *files])[0] for _ in range(3))
    # CPU time: the CLI's worker is forked and not counted in RUSAGE_CHILDREN, so one process does the same work
    # (read, parse with recovery, model, all rules; run.py's GC settings) and reports its own CPU time
    code = ("import gc, sys, time; sys.setrecursionlimit(10000); from porter.lint.checker import lint_source; "
            "from porter.source import read_source; gc.freeze(); gc.set_threshold(100_000, 50, 100); "
            "[lint_source(read_source(f)) for f in sys.argv[1:]]; print(time.process_time())")
    cpus = []
    for _ in range(3):
        r = subprocess.run([sys.executable, "-c", code, *files], cwd=ROOT, capture_output=True, text=True)
        cpus.append(float(r.stdout.split()[-1]))
    cpu = min(cpus)
    print(f"cuda-samples: {len(files)} files, {lines:,} lines")
    print(f"cold, --no-cache, all rules: {lines / cpu:,.0f} lines/s per core of CPU time ({cpu:.2f} s, one "
          f"process, imports included, min of 3); CLI --jobs 1: {wall:.2f} s wall -> {lines / wall:,.0f} lines/s "
          f"(min of 3; target >= 20,000)")
    # warm: populate the cache (the project's default cache directory), then re-run
    subprocess.run([exe, "lint", "--jobs", "1", "--exit-zero", "-q", *files], capture_output=True)
    warm = min(timed([exe, "lint", "--jobs", "1", "--exit-zero", "-q", *files]) for _ in range(3))
    print(f"warm cache re-run: {warm[0]:.2f} s wall -> {wall / warm[0]:.1f}x faster than cold (target >= 10x)")
    # one file: the median-sized sample file, cuport vs hipify-perl alternating
    by_size = sorted(files, key=lambda f: os.path.getsize(f))
    one = by_size[len(by_size) // 2]
    ts_c, ts_h = [], []
    for _ in range(7):
        ts_c.append(timed([exe, "lint", "--no-cache", "--exit-zero", "-q", one])[0])
        if hipify:
            ts_h.append(timed(["perl", hipify, one, "-o", os.devnull])[0])
    mc = statistics.median(ts_c)
    n_one = open(one, "rb").read().count(b"\n")
    line = f"one file ({os.path.relpath(one, root)}, {n_one} lines): cuport lint {mc * 1000:.0f} ms"
    if hipify:
        mh = statistics.median(ts_h)
        line += f", hipify-perl {mh * 1000:.0f} ms -> {mc / mh:.2f}x (target <= 1.5x)"
    print(line + " (median of 7, interpreter start included)")
    return 0


def one_file(path: str, runs: int, others: list[str], hipify: str | None) -> int:
    """The pre-commit case alone: `cuport lint --no-cache --exit-zero -q FILE` from this checkout and from each
    other checkout (an older revision, say), alternating run by run so that load on the machine hits them alike;
    each started as the installed `cuport` script starts (the same interpreter, porter imported from that tree;
    run compileall on a tree first: with PYTHONDONTWRITEBYTECODE nothing writes its .pyc)."""
    trees = [ROOT] + [os.path.abspath(o) for o in others]
    times: dict = {t: [] for t in trees}
    cpus: dict = {t: [] for t in trees}
    hip: list = []
    hip_cpu: list = []
    reaper = _subreaper()
    load0 = os.getloadavg()
    for _ in range(runs):
        for t in trees:
            code = f"import sys; sys.path.insert(0, {t!r}); from porter.cli import main; sys.exit(main())"
            wall, cpu = timed([sys.executable, "-c", code, "lint", "--no-cache", "--exit-zero", "-q", path],
                              reap=reaper)
            times[t].append(wall)
            cpus[t].append(cpu)
        if hipify:
            wall, cpu = timed(["perl", hipify, path, "-o", os.devnull], reap=reaper)
            hip.append(wall)
            hip_cpu.append(cpu)
    load1 = os.getloadavg()
    n = open(path, "rb").read().count(b"\n")
    print(f"one file ({path}, {n} lines), {runs} alternating runs, interpreter start included; load average "
          f"{load0[0]:.2f} before, {load1[0]:.2f} after ({os.cpu_count()} CPUs):")
    cpu_what = "user+sys of cuport and its worker" if reaper else "user+sys of cuport (its worker not counted)"
    for t, v in times.items():
        print(f"  {t}: wall median {statistics.median(v) * 1000:.1f} ms, min {min(v) * 1000:.1f} ms; "
              f"{cpu_what} median {statistics.median(cpus[t]) * 1000:.1f} ms, min {min(cpus[t]) * 1000:.1f} ms")
    if hip:
        print(f"  hipify-perl: wall median {statistics.median(hip) * 1000:.1f} ms, min {min(hip) * 1000:.1f} ms; "
              f"user+sys median {statistics.median(hip_cpu) * 1000:.1f} ms, min {min(hip_cpu) * 1000:.1f} ms")
        med = statistics.median(cpus[ROOT]) / statistics.median(hip_cpu)
        print(f"  cuport / hipify-perl, median CPU time: {med:.2f}x (target <= 1.5x)")
    return 0


def _subreaper() -> bool:
    """Become the child subreaper (Linux), so that the lint worker cuport kills and leaves to be reaped by init
    comes back to this process and its CPU time is counted (timed(reap=True) waits for it)."""
    try:
        import ctypes
        return ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0) == 0     # PR_SET_CHILD_SUBREAPER
    except (OSError, AttributeError):
        return False


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--files", type=int, default=200)
    ap.add_argument("--kernels-per-file", type=int, default=6,
                    help="template instances per generated file: 6 gives ~290 lines, the mean file size of NVIDIA's "
                         "cuda-samples (65,908 lines in 225 files); 1 gives tiny 45-line files")
    ap.add_argument("--cuda-samples", metavar="DIR", help="measure on a cuda-samples checkout instead")
    ap.add_argument("--hipify-perl", metavar="PATH", help="hipify-perl script for the one-file comparison")
    ap.add_argument("--one-file", metavar="FILE", help="only the one-file pre-commit run of FILE")
    ap.add_argument("--runs", type=int, default=21, help="--one-file: runs per checkout (default 21)")
    ap.add_argument("--compare", action="append", default=[], metavar="CHECKOUT",
                    help="--one-file: also time this other checkout's porter, alternating")
    a = ap.parse_args()
    if a.one_file:
        return one_file(a.one_file, a.runs, a.compare, a.hipify_perl)
    if a.cuda_samples:
        return real_corpus(a.cuda_samples, a.hipify_perl)
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

"""Derived cases that read out of bounds because their sizes are not the program's (porter/verify/derive.py): sizes
that only size buffers keep the program's value (_fixed_extents: ldpc's `memorySize_dt_gpu`), and a kernel read
through the header that includes it takes its wrapper's parameters from the file that calls the wrapper
(tridiagonal's `sweep_small_systems(..., system_size, ...)` from main.cu: 128, not 1000 past `float a[128]`)."""
import sys
from pathlib import Path

from porter.verify.derive import derive_file

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
from breadth import cap_sizes  # noqa: E402

KERNEL = """#include <cuda_runtime.h>
#include <stdlib.h>
#define ROWS 8
#define COLS 64
__global__ void k(const float *in, float *out) {{
  extern __shared__ float tile[];
  tile[threadIdx.x] = in[blockIdx.x * COLS + threadIdx.x];
  __syncthreads();
  out[blockIdx.x * COLS + threadIdx.x] = 2.0f * tile[COLS - 1 - threadIdx.x];
}}
int main(int argc, char **argv) {{
  float *d_in, *d_out;
  {host}
  return 0;
}}
"""


def derive(tmp_path, host):
    p = tmp_path / "k.cu"
    p.write_text(KERNEL.format(host=host))
    (d,) = derive_file(str(p))
    return d


def test_a_constant_that_only_sizes_buffers_keeps_the_programs_value(tmp_path):
    # the grid and block are macros: the kernel indexes all ROWS * COLS floats whatever `bytes` says
    d = derive(tmp_path, "int bytes = ROWS * COLS * sizeof(float); int shm = COLS * sizeof(float);\n"
                         "  cudaMalloc(&d_in, bytes); cudaMalloc(&d_out, bytes);\n"
                         "  k<<<ROWS, COLS, shm>>>(d_in, d_out);")
    assert (d.signature, d.grid, d.block, d.shared, d.sizes, d.problems) == \
        ("in: f32[512] in, out: f32[512] out", "8", "64", "256", {}, [])
    assert "`shm` = 256, `bytes` = 2048 only sizes buffers or shared memory (not the launch, nor a kernel " \
           "argument): the kernel's extents do not follow, so the program's value is kept" in d.notes
    # cap_sizes has nothing to halve: the buffers stay whole (halving `bytes` read past them under Oclgrind)
    assert cap_sizes(d.as_dict(True)) == ({}, None)


def test_a_size_the_launch_or_an_argument_follows_stays_a_size(tmp_path):
    # negative: the grid scales with n, so halving n halves the rows the kernel reads
    d = derive(tmp_path, "const int n = 4096; int bytes = n * COLS * sizeof(float);\n"
                         "  cudaMalloc(&d_in, bytes); cudaMalloc(&d_out, bytes);\n"
                         "  k<<<n, COLS, COLS * sizeof(float)>>>(d_in, d_out);")
    assert (d.signature, d.grid, d.sizes) == ("in: f32[n * 64] in, out: f32[n * 64] out", "n", {"n": 4096})
    assert not any("program's value is kept" in n for n in d.notes)
    sizes, why = cap_sizes(d.as_dict(True), cap=1 << 12)
    assert why is None and sizes["n"] < 4096
    # negative: a value decided at run time is a guess, not the program's value: it stays a size to set
    d = derive(tmp_path, "int rows = atoi(argv[1]);\n"
                         "  cudaMalloc(&d_in, rows * COLS * sizeof(float));\n"
                         "  cudaMalloc(&d_out, rows * COLS * sizeof(float));\n"
                         "  k<<<ROWS, COLS, COLS * sizeof(float)>>>(d_in, d_out);")
    assert d.sizes == {"rows": 1000} and d.signature == "in: f32[rows * 64] in, out: f32[rows * 64] out"


WRAPPED = {
    "k.cu": """__global__ void k(const float *in, float *out, int n) {
  float a[128];                 // the program keeps n <= 128
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) { for (int j = 0; j < n; j++) a[j] = in[j]; out[i] = a[n - 1 - i]; }
}
""",
    "wrap.h": """#include <cuda_runtime.h>
#include "k.cu"
void run_k(const float *h, int n) {
  float *d_in, *d_out;
  cudaMalloc(&d_in, n * sizeof(float));
  cudaMalloc(&d_out, n * sizeof(float));
  k<<<(n + 31) / 32, 32>>>(d_in, d_out, n);
}
""",
    "main.cu": """#include "wrap.h"
int main() {
  const int count = 96;
  float h[96] = {0};
  run_k(h, count);
  return 0;
}
""",
}


def test_a_kernel_read_through_its_including_header_takes_the_wrappers_call_in_another_file(tmp_path):
    for name, text in WRAPPED.items():
        (tmp_path / name).write_text(text)
    (d,) = derive_file(str(tmp_path / "k.cu"))
    assert (d.signature, d.grid, d.sizes, d.problems) == \
        ("in: f32[n] in, out: f32[n] out, n: i32", "cdiv(n, 32)", {"n": 96}, [])
    assert "`run_k` is called in another file of the program: its call at main.cu:5 gives its parameters" in d.notes
    # negative: two files call the wrapper: neither is the program's one call, n is decided at run time
    (tmp_path / "other.cu").write_text('#include "wrap.h"\nvoid again(const float *h) { run_k(h, 1000000); }\n')
    (d,) = derive_file(str(tmp_path / "k.cu"))
    assert d.sizes == {"n": 1000} and any(n.startswith("n is decided at run time") for n in d.notes)

"""Real-code false positives fixed in issue 15 (docs/quality.md): CP101 / CP105 on the launch of a kernel that
lives in an included header (the model holds the main file only) and has no warp-level code (HeCBench snake:
`warp_size * warps` threads for a per-thread kernel)."""
from __future__ import annotations

from porter.lint.checker import lint_source
from porter.source import read_source

MAIN = """#define warp_size 32
#include "kernel.h"
void run(int *out, int n) {
  int warps = 8;
  int threads = warp_size * warps;
  dim3 block(threads);
  dim3 grid((n + threads - 1) / threads);
  work<<<grid, block>>>(out, n);
}
"""

PLAIN = """__device__ unsigned rotl(unsigned v, int s) { return (v << s) | (v >> (32 - s)); }
__global__ void work(int *out, int n) {
  int tid = threadIdx.x + blockIdx.x * blockDim.x;
  if (tid >= n) return;
  out[tid] = rotl(out[tid], 31 - tid % 7);
}
"""

WARPY = """__global__ void work(int *out, int n) {
  int tid = threadIdx.x + blockIdx.x * blockDim.x;
  int v = out[tid];
  for (int o = 16; o > 0; o /= 2) v += __shfl_down_sync(0xffffffff, v, o);
  out[tid] = v;
}
"""

HELPER = """__device__ int lane_of(int t) { return t & 31; }
__global__ void work(int *out, int n) {
  int tid = threadIdx.x + blockIdx.x * blockDim.x;
  out[tid] = lane_of(tid);
}
"""


def _codes(tmp_path, header):
    (tmp_path / "kernel.h").write_text(header)
    (tmp_path / "main.cu").write_text(MAIN)
    res = lint_source(read_source(str(tmp_path / "main.cu")), enabled={"CP101", "CP105"})
    return sorted((d.code, d.row) for d in res.diagnostics)


def test_header_kernel_without_warp_code_gets_no_warp_size_finding(tmp_path):
    assert _codes(tmp_path, PLAIN) == []          # `32 - s`, `31 - ...` are bit math, not warp math


def test_header_kernel_with_a_shuffle_keeps_both_findings(tmp_path):
    assert _codes(tmp_path, WARPY) == [("CP101", 1), ("CP105", 5)]


def test_header_kernel_calling_a_lane_helper_keeps_both_findings(tmp_path):
    assert _codes(tmp_path, HELPER) == [("CP101", 1), ("CP105", 5)]


def test_kernel_out_of_view_still_reported_by_name(tmp_path):
    (tmp_path / "main.cu").write_text(MAIN.replace('#include "kernel.h"', "__global__ void work(int *, int);"))
    res = lint_source(read_source(str(tmp_path / "main.cu")), enabled={"CP101", "CP105"})
    assert sorted((d.code, d.row) for d in res.diagnostics) == [("CP101", 1), ("CP105", 5)]


MODULO = """__global__ void work(int *out, int n) {
  int t = threadIdx.x;
  int shift = out[0];
  out[t] = (shift + 2) % 32;
  int q = t % 32;
  out[t] += q;
}
"""


def test_header_kernel_lane_modulo_of_the_thread_index_keeps_both_findings(tmp_path):
    assert _codes(tmp_path, MODULO) == [("CP101", 1), ("CP105", 5)]
    assert _codes(tmp_path, MODULO.replace("  int q = t % 32;\n  out[t] += q;\n", "")) == []


def test_kernel_launched_through_a_function_pointer_is_not_in_view(tmp_path):
    # HeCBench moe-align: `auto align_kernel = kernel<int>; align_kernel<<<...>>>` (the local is no kernel body)
    main = MAIN.replace("  work<<<grid, block>>>(out, n);", "  auto k = work;\n  k<<<grid, block>>>(out, n);")
    (tmp_path / "kernel.h").write_text(PLAIN)
    (tmp_path / "main.cu").write_text(main)
    res = lint_source(read_source(str(tmp_path / "main.cu")), enabled={"CP101", "CP105"})
    assert sorted((d.code, d.row) for d in res.diagnostics) == [("CP101", 1), ("CP105", 5)]

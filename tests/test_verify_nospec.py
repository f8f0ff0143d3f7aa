"""`cuport verify k.cu` without a spec (porter/verify/derive.py, differential.py, nospec.py) and `--init`."""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from porter.verify import differential
from porter.verify.backends import oclgrind, opencl, vulkan
from porter.verify.derive import case_from_dict, derive_file
from porter.verify.runner import Result
from porter.verify.spec import load_spec
from verify_fixtures.helpers import LAVAPIPE_ICD

ROOT = Path(__file__).resolve().parents[1]
WARP = ROOT / "examples" / "warp_reduce"
needs_cpu_targets = pytest.mark.skipif(
    not (vulkan.available()[0] and os.path.exists(LAVAPIPE_ICD) and opencl.available()[0]),
    reason="needs Vulkan on lavapipe and OpenCL (PoCL)")


def cuport(*args, cwd=None):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    if os.path.exists(LAVAPIPE_ICD):
        env["VK_ICD_FILENAMES"] = LAVAPIPE_ICD
    return subprocess.run([sys.executable, "-m", "porter", "verify", *args], capture_output=True, text=True,
                          env=env, cwd=cwd, timeout=600)


def copy(tmp_path, *files):
    for f in files:
        shutil.copy(f, tmp_path)
    assert not (tmp_path / "verify_spec.py").exists()
    return [str(tmp_path / Path(f).name) for f in files]


def derive_text(tmp_path, text, name="k.cu"):
    p = tmp_path / name
    p.write_text(text)
    return {d.kernel: d for d in derive_file(str(p))}


# ------------------------------------------------------------------------------------------ derivation

def test_derives_buffers_sizes_and_launch_of_the_examples(tmp_path):
    (wr,) = derive_file(copy(tmp_path, WARP / "warp_reduce.cu")[0])
    assert wr.signature == "in: f32[n] in, out: f32[cdiv(n, 256)] out, n: i32"
    assert (wr.grid, wr.block, wr.sizes, wr.problems) == ("cdiv(n, 256)", "256", {"n": 1 << 20}, [])
    (ws,) = derive_file(copy(tmp_path, WARP / "warp_sum.cu")[0])
    # atomicAdd(out, v) reads and writes; cudaMalloc(&d_out, sizeof(int)) is one element
    assert ws.signature == "in: i32[n] in, out: i32[1] inout, n: i32" and ws.sizes == {"n": 1000}
    add, saxpy = derive_file(copy(tmp_path, ROOT / "examples/saxpy/saxpy.cu")[0])
    # AddKernel has no size parameter: n is the host's `const int n = 1 << 20` behind `bytes = n * sizeof(float)`
    assert add.signature == "a: f32[n] inout, b: f32[n] in" and add.sizes == {"n": 1 << 20}
    assert saxpy.signature == "n: i32, a: f32 = 2, x: f32[n] in, y: f32[n] inout"
    assert saxpy.params[2].init == ("special", (0.02,))             # elementwise: special values too
    assert wr.params[0].init == ("uniform", (-1.0, 1.0))          # a reduction: no NaN / inf swamping it
    (mm,) = derive_file(str(ROOT / "examples/matmul_tiled/matmul_tiled.cu"))
    assert mm.signature == "A: f32[M * K] in, B: f32[K * N] in, C: f32[M * N] out, M: i32, N: i32, K: i32"
    assert (mm.grid, mm.block) == ("(cdiv(N, 16), cdiv(M, 16))", "(16, 16)")


def test_histogram_indexed_by_its_input_values_takes_non_negative_inputs(tmp_path):
    # `bins[warp * BINS + in[i] % BINS]` is in bounds for any in[i] >= 0 (was refused: "indexing")
    (h,) = derive_file(str(ROOT / "examples/warp_histogram/warp_histogram.cu"))
    assert h.problems == []
    assert [(p.name, p.init) for p in h.params if p.name == "in"] == [("in", ("uniform", (0, 100)))]
    assert any("`bins[warp * BINS + in[i] % BINS]`): non-negative values" in n for n in h.notes)


def test_index_inputs_are_drawn_below_the_bound_the_indexing_or_the_host_gives(tmp_path):
    ks = derive_text(tmp_path, """#include <cstdlib>
__global__ void gather(const int *ids, const float *logits, float *out, int n) {
  int i = threadIdx.x + blockIdx.x * blockDim.x; if (i < n) out[i] = logits[ids[i]]; }
__global__ void rows(const float *X, const int *label, float *out, int N, int D) {
  int row = threadIdx.x; if (row < N) { int l = label[row]; out[row] = X[row * D + l]; } }
__global__ void walk(const int *next, float *out, int n) {
  int i = threadIdx.x; if (i < n) out[i] = (float)next[next[i] * 2 + 1]; }
int main() {
  const int n = 512, V = 100, N = 256, D = 7;
  int *h = (int *)malloc(n * sizeof(int)), *d_ids, *d_label, *d_next;
  float *d_logits, *d_out, *d_X;
  for (int i = 0; i < N; i++) h[i] = rand() % D;
  cudaMalloc(&d_ids, n * sizeof(int)); cudaMalloc(&d_logits, V * sizeof(float)); cudaMalloc(&d_out, n * 4);
  cudaMalloc(&d_X, N * D * sizeof(float)); cudaMalloc(&d_label, N * sizeof(int)); cudaMalloc(&d_next, n * 4);
  cudaMemcpy(d_label, h, N * sizeof(int), cudaMemcpyHostToDevice);
  gather<<<2, 256>>>(d_ids, d_logits, d_out, n);
  rows<<<1, 256>>>(d_X, d_label, d_out, N, D);
  walk<<<2, 256>>>(d_next, d_out, n);
}
""")
    g, r, w = ks["gather"], ks["rows"], ks["walk"]
    assert (g.problems, r.problems, w.problems) == ([], [], [])
    assert g.params[0].init == ("below", ("V",))                  # the extent of logits
    assert r.params[1].init == ("below", ("D",))                  # the host's rand() % D, and the row length
    assert any("the host's `h[i] = rand() % D`" in n for n in r.notes)
    assert w.params[0].init == ("below", ("2",))                  # arithmetic on the value: 0 and 1 assumed
    assert g.params[1].init == ("special", (0.02,))               # logits is data, not an index
    case = case_from_dict(r.as_dict())
    label = case.make_args(r.sizes)["label"]
    assert label.min() >= 0 and label.max() == 6 and len(set(label.tolist())) == 7


def test_below_takes_an_expression_of_the_sizes_and_refuses_an_empty_range():
    from porter.verify.spec import Case, SpecError, below
    c = Case(source="k.cu", kernel="k", signature="ix: i32[n] in, out: f32[n] out", grid="1", block="n",
             reference=None, init={"ix": below("m - 1")}, sizes=[{"n": 64, "m": 5}])
    ix = c.make_args({"n": 64, "m": 5})["ix"]
    assert ix.min() == 0 and ix.max() == 3
    with pytest.raises(SpecError, match="empty range"):
        c.make_args({"n": 64, "m": 1})


HOST = """
__global__ void k(const float* a, float* b, int n) {{ int i = threadIdx.x; if (i < n) b[i] = a[i]; }}
int main(int argc, char** argv) {{
    {decl}
    float *d_a, *d_b;
    cudaMalloc(&d_a, n * sizeof(float));
    cudaMalloc(&d_b, n * sizeof(float));
    k<<<(n + 127) / 128, 128>>>({args});
    return 0;
}}
"""


def test_aliasing_offset_pointers_and_run_time_sizes(tmp_path):
    # one buffer given to both: one array bound to both (a spec alias; tests/test_derive_alias_types.py)
    alias = derive_text(tmp_path, HOST.format(decl="const int n = 4096;", args="d_a, d_a, n"))["k"]
    assert (alias.signature, alias.alias, alias.problems) == ("a: f32[n] in, b: f32[n] out, n: i32", {"b": "a"}, [])
    # an offset pointer is the allocation less the offset (metropolis's `dE + k`): see
    # test_buffers_passed_from_an_offset_are_the_allocation_less_the_offset; into the same buffer at another
    # offset: aliasing no spec alias can bind
    offset = derive_text(tmp_path, HOST.format(decl="const int n = 4096;", args="d_a + 4, d_a, n"))["k"]
    assert [p.what for p in offset.problems] == ["b"] and "`d_a`" in offset.problems[0].message
    assert "aliasing at different offsets" in offset.problems[0].message and offset.alias == {}
    ok = derive_text(tmp_path, HOST.format(decl="const int n = 4096;", args="d_a, d_b, n"))["k"]
    assert (ok.signature, ok.grid, ok.sizes, ok.notes, ok.problems) == \
        ("a: f32[n] in, b: f32[n] out, n: i32", "cdiv(n, 128)", {"n": 4096}, [], [])
    runtime = derive_text(tmp_path, HOST.format(decl="int n = atoi(argv[1]);", args="d_a, d_b, n"))["k"]
    assert runtime.sizes == {"n": 1000} and runtime.problems == []
    assert runtime.notes == ["n is decided at run time (line 4): 1000 assumed (--sizes n=N)"]


WRITTEN = """#include <cstdlib>
#include <iostream>
__global__ void k(const float* a, float* b, int n) {{ int i = threadIdx.x; if (i < n) b[i] = a[i]; }}
int main(int argc, char** argv) {{
    {decl}
    float *d_a, *d_b;
    cudaMalloc(&d_a, n * sizeof(float));
    cudaMalloc(&d_b, n * sizeof(float));
    k<<<(n + 127) / 128, 128>>>(d_a, d_b, n);
    {after}
    return 0;
}}
"""


def written(tmp_path, decl, after=""):
    return derive_text(tmp_path, WRITTEN.format(decl=decl, after=after))["k"]


def test_a_variable_written_after_its_declaration_takes_the_value_reaching_the_launch(tmp_path):
    # cfd: `int nelr; ... nelr = block_length * (...)`: the assignment before the launch, not 1000 of its own
    d = written(tmp_path, "int m = atoi(argv[1]); int n; n = 192 * ((m / 192) + 1);")
    assert (d.signature, d.sizes, d.problems) == \
        ("a: f32[192 * ((m // 192) + 1)] in, b: f32[192 * ((m // 192) + 1)] out, n: i32 = 192 * ((m // 192) + 1)",
         {"m": 1000}, [])
    # tridiagonal: `int iterations = log2(system_size / 2)`: the math call, converted as C converts it
    d = written(tmp_path, "int m = atoi(argv[1]); int n = log2(m / 2);")
    assert d.signature.endswith("n: i32 = trunc(log2(m // 2))") and d.sizes == {"m": 1000}
    # ga: `end = cur + 1024; if (end >= max) end = max;` is min(cur + 1024, max)
    d = written(tmp_path, "int lim = atoi(argv[1]); int n = 1024; if (n >= lim) n = lim;")
    assert d.signature.startswith("a: f32[min(1024, lim)] in") and d.sizes == {"lim": 1000}
    # metropolis: `int L = 32;` changed only by a command-line option: the program's default
    d = written(tmp_path, "int n = 4096; if (argc > 1) n = atoi(argv[1]);")
    assert d.sizes == {"n": 4096} and d.notes == ["`n` may be set from the command line (line 5): its default "
                                                  "`4096` taken"]
    # ga's `current_position = 0`, advanced after each launch: the first launch's value
    d = written(tmp_path, "int n = 4096;", after="n = 2 * n;")
    assert d.sizes == {"n": 4096} and "changed after the launch" in d.notes[0]
    # inversek2j: `int data_size = 0; file >> data_size;` is read at run time, not the initial 0
    d = written(tmp_path, "int n = 0; std::cin >> n;")
    assert d.sizes == {"n": 1000} and d.problems == []
    # negative: a write under a condition that is not a command-line value, and a compound one, stay run time
    for decl in ("int n = 4096; if (argc > 2) n = 2 * argc;", "int n = 64; n *= argc;"):
        d = written(tmp_path, decl)
        assert d.sizes == {"n": 1000} and d.notes[-1].startswith("n is decided at run time"), decl


def test_an_assignment_the_parser_dropped_is_said_in_the_note(tmp_path):
    # cfd: `std::ifstream file(...)` unknown to the headers at hand: `file >> nel; nelr = ...` are dropped by
    # clang, and "decided at run time" hid that the program rounds nelr to the block
    d = written(tmp_path, "int n; n = 192 * std::no_such_helper(argc);")
    assert d.sizes == {"n": 1000}
    assert d.notes == ["n: `n` is assigned at line 5 in a statement the parser could not read (no member named "
                       "'no_such_helper' in namespace 'std'): its value is not known: 1000 assumed (--sizes n=N)"]
    d = written(tmp_path, "int n; scanf(\"%d\", &n);")     # negative: read through a pointer, no error
    assert d.notes == ["n is decided at run time (line 5): 1000 assumed (--sizes n=N)"]


def test_a_product_over_a_constant_loop_keeps_the_relation(tmp_path):
    # tensorAccessor: `numel = 1; for (i < 2) numel *= sizes[i];` is nrow * ncol, not a third independent 1000
    decl = "int r = atoi(argv[1]), c = atoi(argv[2]); const int dims[2] = {r, c}; int n = 1; " \
           "for (int i = 0; i < 2; i++) n *= dims[i];"
    d = written(tmp_path, decl)
    assert d.signature.startswith("a: f32[(1 * r) * c] in") and d.sizes == {"r": 1000, "c": 1000}
    # a trip count the source does not fix: run time
    d = written(tmp_path, decl.replace("i < 2", "i < argc"))
    assert d.sizes == {"n": 1000}


def test_a_value_read_back_from_the_device_is_a_problem_naming_it(tmp_path):
    # marchingCubes: `cudaMemcpy(&countedBlockNumLv1, ...)` then `k<<<countedBlockNumLv1, ...>>>`; when the program
    # allocates its buffers for the count it read (here a and b, after the read), the count is one decided at
    # run time (s11-derive); a read-back value nothing is allocated for stays a problem naming it
    # (tests/test_derive_template_records.py)
    d = written(tmp_path, "unsigned *d_c; cudaMalloc(&d_c, 4); int n; "
                          "cudaMemcpy(&n, d_c, sizeof(int), cudaMemcpyDeviceToHost);")
    assert d.problems == [] and d.sizes == {"n": 1000}
    assert "`n` is read back from the device (`cudaMemcpy` at line 5) and the program allocates for it " \
           "(`cudaMalloc` at line 7): a count decided at run time" in d.notes
    # negative: a host value copied TO the device is not decided by it
    d = written(tmp_path, "unsigned *d_c; cudaMalloc(&d_c, 4); int n = atoi(argv[1]); "
                          "cudaMemcpy(d_c, &n, sizeof(int), cudaMemcpyHostToDevice);")
    assert d.problems == [] and d.sizes == {"n": 1000}


COMPUTED = """#include <cstdlib>
int helper(int n) {{ int d = 1; while ((n & d) == 0) d <<= 1; return d; }}
__global__ void k(float* b, int off, int n) {{
    int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) b[off + i] = 1; }}
int main(int argc, char** argv) {{
    int w = atoi(argv[1]);
    int off = {off};
    float *d_b;
    cudaMalloc(&d_b, 2 * w * sizeof(float));
    int blocks = helper(w);
    dim3 blk(blocks);
    k<<<(w + blocks - 1) / blocks, blk>>>(d_b, off, w);
    return 0;
}}
"""


def test_a_value_the_program_computes_from_sizes_is_a_problem_naming_it(tmp_path):
    # hogbom: `rx = idxToPos(peakPos, residualWidth).x` is a position inside the image, not a free 1000: with it
    # the kernel read past the PSF buffer
    d = derive_text(tmp_path, COMPUTED.format(off="helper(w) * 2"))["k"]
    assert [(p.what, p.message) for p in d.problems] == [
        ("off", "'off': `off` = `helper(w) * 2` (line 7) is computed by `helper` from `w`: not a size the source "
                "gives")]
    # negative: the block it computes the same way (cbsfil's `std::min(PowTwoDivider(height), 64)`) is a policy:
    # the run-time block stands for it; a command-line value is not computed from sizes either
    d = derive_text(tmp_path, COMPUTED.format(off="atoi(argv[2])"))["k"]
    assert d.problems == [] and d.block == "blocks" and d.sizes == {"blocks": 256, "off": 1000, "n": 1000}


CONSTANT = """
constexpr int N = 4096;
constexpr int M = 2048;
__global__ void k(float* b) {{ int i = blockIdx.x * blockDim.x + threadIdx.x; {body} }}
int main() {{
    float *d_b;
    cudaMalloc(&d_b, N * sizeof(float));
    k<<<N / 256, 256>>>(d_b);
    return 0;
}}
"""


def test_a_constant_the_kernel_reads_too_is_not_a_size_to_halve(tmp_path):
    # meanshift: the kernel loops over the same N the host sizes the buffers with: halved by cap_sizes, the
    # buffers shrank and the kernel still read N rows (out of bounds under Oclgrind)
    d = derive_text(tmp_path, CONSTANT.format(body="if (i < N) b[i] = 1.0f;"))["k"]
    assert (d.signature, d.grid, d.sizes) == ("b: f32[4096] out", "4096 // 256", {})
    # negative: a constant the kernel does not read (M) leaves the host's N a size
    d = derive_text(tmp_path, CONSTANT.format(body="if (i < M) b[2 * i] = 1.0f;"))["k"]
    assert (d.signature, d.grid, d.sizes) == ("b: f32[N] out", "N // 256", {"N": 4096})


GUARDED = """#include <cstdlib>
__global__ void k(float* b, int n) {{ int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) b[i] = 1.0f; }}
int main(int argc, char** argv) {{
    const int t = atoi(argv[1]), c = atoi(argv[2]);
    float *d_b;
    cudaMalloc(&d_b, 1024 * sizeof(float));
    int cur = 0;
    int last = {last};
    while (cur < last) {{
        int n = last - cur;
        k<<<{grid}, 256>>>(d_b, n);
        cur = cur + 1024;
    }}
    return 0;
}}
"""


def test_a_launch_the_derived_sizes_do_not_reach_is_a_problem(tmp_path):
    # ga: `while (current_position < max_searchable_length)` with max = tseq_size - coarse_match_length, both
    # 1000 at run time: the loop never runs, the grid came out 0 ("empty launch grid" when run)
    d = derive_text(tmp_path, GUARDED.format(last="t - c", grid="(n + 255) / 256"))["k"]
    assert [p.what for p in d.problems] == ["launch"]
    assert d.problems[0].message.startswith("the launch at line 11 runs only while `cur < last`, false at the "
                                            "derived sizes (cur = 0, t - c = 0;")
    # an empty grid without a loop to blame
    d = derive_text(tmp_path, GUARDED.format(last="t", grid="n / 2048"))["k"]
    assert [p.what for p in d.problems] == ["grid"] and "is empty at the derived sizes" in d.problems[0].message
    # negative: reached, and not empty
    d = derive_text(tmp_path, GUARDED.format(last="t", grid="(n + 255) / 256"))["k"]
    assert d.problems == [] and d.grid == "((t - cur) + 255) // 256"


LOOP = """#include <cuda_runtime.h>
__global__ void k(float *part, int nb, int t) {{
  if (threadIdx.x == 0) part[blockIdx.x + t * nb] = 1.0f;
}}
int main() {{
  const int nb = 64, iters = 10;
  float *d_p;
  cudaMalloc(&d_p, nb * iters * sizeof(float));
  {loop}
  return 0;
}}
"""


def test_a_loop_counter_argument_takes_its_first_value_not_the_run_time_fallback(tmp_path):
    # d2q9-bgk: `for (int tt = 0; tt < MaxIters; tt++) k<<<...>>>(..., tt)` with `part[... + tt * ...]` sized by
    # MaxIters: tt = 1000 (the run-time fallback) wrote past the end (PoCL aborted in free())
    d = derive_text(tmp_path, LOOP.format(loop="for (int t = 0; t < iters; t++) k<<<nb, 32>>>(d_p, nb, t);"))["k"]
    # (`iters` only sizes the buffer, the launch at t = 0 does not follow it: the program's 10 is kept)
    assert d.problems == [] and d.signature == "part: f32[nb * 10] out, nb: i32, t: i32 = 0"
    assert d.sizes == {"nb": 64} and any("counter of the loop" in n for n in d.notes)
    d = derive_text(tmp_path, LOOP.format(loop="for (int t = 2 * nb; t < iters; t++) k<<<nb, 32>>>(d_p, nb, t);"))
    assert d["k"].signature.endswith("t: i32 = 2 * nb")
    # a counter declared outside the loop and advanced after the launch: its initial value at the first launch
    d = derive_text(tmp_path, LOOP.format(loop="int t = 0; while (t < iters) { k<<<nb, 32>>>(d_p, nb, t); t++; }"))
    assert d["k"].sizes["t"] == 0 and any("changed after the launch" in n for n in d["k"].notes)
    # advanced before the launch: decided at run time
    d = derive_text(tmp_path, LOOP.format(loop="int t = 0; while (t < iters) { t++; k<<<nb, 32>>>(d_p, nb, t); }"))
    assert d["k"].sizes["t"] == 1000


def test_a_grid_written_as_a_dim3_cast_derives(tmp_path):
    # dispatch, sph: `k<<<dim3(NUM_GROUPS), dim3(256)>>>` and `dim3 g((n + 255) / 256); k<<<dim3(g), ...>>>`
    d = derive_text(tmp_path, LOOP.format(loop="dim3 g((nb + 255) / 256); k<<<dim3(g), dim3(32)>>>(d_p, nb, 0);"))
    assert (d["k"].grid, d["k"].block, d["k"].problems) == ("cdiv(nb, 256)", "32", [])
    d = derive_text(tmp_path, LOOP.format(loop="k<<<dim3(4), dim3(32)>>>(d_p, nb, 0);"))
    assert (d["k"].grid, d["k"].problems) == ("4", [])


WRAPPED = """#include <cuda_runtime.h>
__global__ void k(const float *a, float *b, int n) {{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) b[i] = a[i];
}}
void run(const float *d_a, float *d_b, int len, int threads) {{
  k<<<(len + threads - 1) / threads, threads>>>(d_a, d_b, len);
}}
void outer(const float *p, float *q, int m) {{ run(p, q, m, 64); }}
int main() {{
  const int n = 4096;
  float *d_a, *d_b;
  cudaMalloc(&d_a, n * sizeof(float));
  cudaMalloc(&d_b, 2 * n * sizeof(float));
  {calls}
  return 0;
}}
"""


def test_launches_inside_host_wrappers_derive_from_the_wrappers_call(tmp_path):
    # `void run(..., int len, int threads) { k<<<cdiv(len, threads), threads>>>(d_a, d_b, len); }`: the buffers,
    # the size and the block come from the call `run(d_a, d_b, n, 128)` (was: "no cudaMalloc of `d_a`")
    d = derive_text(tmp_path, WRAPPED.format(calls="run(d_a, d_b, n, 128);"))["k"]
    assert (d.signature, d.grid, d.block, d.sizes, d.problems) == \
        ("a: f32[n] in, b: f32[2 * n] out, n: i32", "cdiv(n, 128)", "128", {"n": 4096}, [])
    d = derive_text(tmp_path, WRAPPED.format(calls="outer(d_a, d_b, n);"))["k"]       # two wrappers deep
    assert (d.signature, d.grid, d.block, d.problems) == \
        ("a: f32[n] in, b: f32[2 * n] out, n: i32", "cdiv(n, 64)", "64", [])
    d = derive_text(tmp_path, WRAPPED.format(calls="run(d_a, d_b, n, 128); run(d_b, d_a, 8, 32);"))["k"]
    assert d.block == "128" and any("called 3 times: the call at line 15" in n for n in d.notes)  # outer too
    # the wrapper's block is decided at run time at its call: 256 assumed, a size of its own (the grid divides
    # by the same name), said in a note
    d = derive_text(tmp_path, WRAPPED.format(calls="int t = atoi(\"64\"); run(d_a, d_b, n, t);"))["k"]
    assert (d.grid, d.block, d.sizes, d.problems) == ("cdiv(n, t)", "t", {"t": 256, "n": 4096}, [])
    assert "t is decided at run time (line 15): 256 assumed (--sizes t=N)" in d.notes


def test_block_sizes_tried_in_a_loop_and_grids_through_helpers_derive(tmp_path):
    # silu: `for (int block_size : block_sizes) run(..., block_size)` with `int block_sizes[] = {64, 128}`; the
    # block is the first value, and the grid's `block_size` is that value too, not a size of its own
    calls = "int bs[] = {64, 128};\n  for (int block_size : bs) run(d_a, d_b, n, block_size);"
    d = derive_text(tmp_path, WRAPPED.format(calls=calls))["k"]
    assert (d.grid, d.block, d.sizes, d.problems) == ("cdiv(n, 64)", "64", {"n": 4096}, [])
    # softmax-online: `for (int j = 32; j <= 1024; j *= 2) { int block_size = j; run(..., block_size); }`
    calls = "for (int j = 32; j <= 1024; j *= 2) { int block_size = j; run(d_a, d_b, n, block_size); }"
    d = derive_text(tmp_path, WRAPPED.format(calls=calls))["k"]
    assert (d.grid, d.block, d.problems) == ("cdiv(n, 32)", "32", [])
    # a one-line helper and hypterm's ceil macro in the grid
    ks = derive_text(tmp_path, """#include <cstdlib>
#include <cuda_runtime.h>
#define ceil(a,b) ((a) % (b) == 0 ? (a) / (b) : ((a) / (b)) + 1)
#define floor_ish(a,b) ((a) % (b) == 0 ? (a) / (b) : ((a) / (b)) + 2)
int blocks_for(int len, int per) { return (len + per - 1) / per; }
__global__ void k(float *x, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] = 1.0f; }
__global__ void q(float *x, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] = 2.0f; }
__global__ void r(float *x, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] = 3.0f; }
int main(int argc, char **argv) {
  int n = atoi(argv[1]);
  float *d_x;
  cudaMalloc(&d_x, n * sizeof(float));
  k<<<ceil(n, 128), 128>>>(d_x, n);
  q<<<blocks_for(n, 64), 64>>>(d_x, n);
  r<<<floor_ish(n, 64), 64>>>(d_x, n);
  return 0;
}
""")
    assert (ks["k"].grid, ks["k"].problems) == ("cdiv(n, 128)", [])
    assert (ks["q"].grid, ks["q"].problems) == ("cdiv(n, 64)", [])
    assert [p.what for p in ks["r"].problems] == ["grid"]          # not the ceil pattern: not guessed


def test_written_pointers_templates_types_and_no_launch_site(tmp_path):
    ks = derive_text(tmp_path, """
struct P { float x; double y; };
union U { float f; int i; };
__global__ void one(float* out, float* acc, float* src, int n) { int i = threadIdx.x;
    if (i < n) { out[i] = src[i]; acc[i] += 1.0f; } }
__global__ void two(float* x, int n, int m) { x[threadIdx.x] = 0; }
__global__ void pts(P* p, int n) { p[threadIdx.x].x = 1; }
__global__ void uni(U* u, int n) { u[threadIdx.x].f = 1; }
template <int B> __global__ void tk(float* x, int n) { x[threadIdx.x] = B; }
""")
    one = ks["one"]
    assert one.signature == "out: f32[n] out, acc: f32[n] inout, src: f32[n] in, n: i32"
    assert one.problems == [] and one.notes[0].startswith("no launch site: assumed 1-D, grid cdiv(n, 256)")
    assert [p.what for p in ks["two"].problems] == ["launch"]               # which of n, m sizes x?
    # a struct of mixed types: a spec struct (was "points to `P`" refused); a union stays refused
    assert (ks["pts"].signature, ks["pts"].structs, ks["pts"].problems) == \
        ("p: P[n] out, n: i32", {"P": "x: f32, y: f64"}, [])
    assert ks["uni"].problems[0].message.startswith("'u' points to `U`: `U` is a union")
    assert [p.what for p in ks["tk"].problems][:1] == ["template"]          # never launched


# ------------------------------------------------------------------------------------------ differential

def _res(target, variant, status="pass"):
    return Result("k", "k", "/x/k.cu", target, variant, {"n": 4}, status)


def _judge(tmp_path, runs):
    """Runs of a one-output case, each (target, variant, values)."""
    from porter.verify.derive import case_from_dict
    case = case_from_dict({"path": "/x/k.cu", "kernel": "k", "signature": "y: f32[n] out, n: i32", "grid": "1",
                           "block": "4", "sizes": [{"n": 4}], "tol": {"f32": [1e-4, 1e-5]}})
    results = []
    for i, (t, v, values) in enumerate(runs):
        r = _res(t, v)
        path = tmp_path / f"{i}.npz"
        np.savez(path, y=np.array(values, dtype=np.float32))
        r.info["dump"] = str(path)
        results.append(r)
    return {differential.label(r): r for r in results}, differential.apply(results, [case])


def test_majority_minority_and_the_cuda_reference(tmp_path):
    good, bad = [1.0, 2.0, 3.0, 4.0], [1.0, 2.0, 7.5, 4.0]
    rows, pairs = _judge(tmp_path, [("vulkan", "sg4", bad), ("vulkan", "sg16", good), ("opencl", "-", good)])
    assert rows["vulkan/sg4"].status == "FAIL" and rows["vulkan/sg16"].status == rows["opencl"].status == "pass"
    assert rows["vulkan/sg4"].message == ("disagrees with the majority: y: 1 of 4 elements differ; first at [2]: "
                                          "vulkan/sg4 7.5, vulkan/sg16 3")
    assert {(p.a, p.b) for p in pairs if not p.ok} == {("vulkan/sg4", "vulkan/sg16"), ("vulkan/sg4", "opencl")}
    assert [p.first for p in pairs if not p.ok] == [[2], [2]] and pairs[0].values == [7.5, 3.0]
    # no majority: every run fails
    rows, _ = _judge(tmp_path, [("vulkan", "sg4", bad), ("opencl", "-", good)])
    assert {r.status for r in rows.values()} == {"FAIL"}
    # the CUDA original is the reference where it ran: the two translations that agree with each other still fail
    rows, pairs = _judge(tmp_path, [("cuda", "-", good), ("vulkan", "sg32", bad), ("hip-nvidia", "-", bad)])
    assert rows["cuda"].status == "pass" and rows["vulkan/sg32"].status == rows["hip-nvidia"].status == "FAIL"
    assert [(p.a, p.b) for p in pairs] == [("cuda", "vulkan/sg32"), ("cuda", "hip-nvidia")]
    assert rows["vulkan/sg32"].message.startswith("differs from the CUDA original: y: 1 of 4 elements differ")
    # within tolerance is agreement; a lone run has nothing to be compared with
    rows, _ = _judge(tmp_path, [("vulkan", "sg4", good), ("opencl", "-", [1.0, 2.0, 3.0000002, 4.0])])
    assert {r.status for r in rows.values()} == {"pass"}
    rows, pairs = _judge(tmp_path, [("opencl", "-", good)])
    assert rows["opencl"].status == "skipped" and pairs == []


# ------------------------------------------------------------------------------------------ end to end

@needs_cpu_targets
def test_warp_32_hazards_show_without_their_spec(tmp_path):
    files = copy(tmp_path, WARP / "warp_sum.cu", WARP / "warp_reduce.cu", WARP / "warp_reduce_fixed.cu")
    p = cuport(*files, "--targets", "vulkan,opencl", "--sizes", "n=1000", "--output-format", "json")
    assert p.returncode == 1, p.stderr
    doc = json.loads(p.stdout)
    rows = {(r["case"], r["target"], r["variant"]): r for r in doc["results"]}
    # warp_sum as written (lane = tid & 31, offsets from 16): needs 32-lane warps. It ran (and was wrong, each way)
    # on every subgroup narrower than 32; now GLSL's launch contract refuses those subgroups, and OpenCL, whose
    # one-lane warps cannot run the shuffle that reaches 16 lanes away, runs CUDA's 32-lane warps emulated in local
    # memory (warp32.py): one run, so nothing to compare
    for run in (("vulkan", "sg4"), ("vulkan", "sg8"), ("vulkan", "sg16")):
        r = rows[("warp_sum",) + run]
        assert r["status"] == "FAIL" and "launch refused: the translation needs subgroups of at least 32" in r["message"]
    r = rows[("warp_sum", "opencl", "-")]
    assert r["status"] == "skipped" and "no other target ran this case: nothing to compare" in r["message"]
    assert not [d for d in doc.get("differential", []) if d["case"] == "warp_sum"]
    # warp_reduce as written keeps partial[32] indexed by tid / 32: the GLSL and OpenCL translators refuse it
    for run in (("vulkan", "sg4"), ("opencl", "-")):
        r = rows[("warp_reduce",) + run]
        assert r["status"] == "FAIL" and "CP104" in r["message"]
    # the fixed version agrees at every subgroup size and with OpenCL
    fixed = [r for r in doc["results"] if r["case"] == "warp_reduce_fixed"]
    assert len(fixed) == 4 and {r["status"] for r in fixed} == {"pass"}
    assert all(d["ok"] for d in doc["differential"] if d["case"] == "warp_reduce_fixed")
    assert "no verify_spec.py: 1 kernel(s) verified from what the source says (the source as written)" in p.stderr
    # the table says why each run was refused
    t = cuport(files[0], "--targets", "vulkan,opencl", "--subgroup-sizes", "4", "--sizes", "n=1000")
    assert t.returncode == 1
    assert "launch refused: the translation needs subgroups of at least 32 lanes" in t.stdout


@needs_cpu_targets
def test_with_the_translators_portability_fixes_every_target_agrees(tmp_path):
    files = copy(tmp_path, WARP / "warp_sum.cu", WARP / "warp_reduce.cu")
    p = cuport(*files, "--portability-fixes", "--targets", "vulkan,opencl", "--subgroup-sizes", "4,16",
               "--sizes", "n=1000", "--output-format", "json")
    assert p.returncode == 0, p.stdout + p.stderr
    doc = json.loads(p.stdout)
    assert len(doc["results"]) == 6 and {r["status"] for r in doc["results"]} == {"pass"}
    assert len(doc["differential"]) == 6 and all(d["ok"] for d in doc["differential"])


@needs_cpu_targets
def test_saxpy_without_spec_passes_and_init_writes_a_spec_that_runs(tmp_path):
    (src,) = copy(tmp_path, ROOT / "examples/saxpy/saxpy.cu")
    quick = ("--targets", "vulkan,opencl", "--subgroup-sizes", "8", "--sizes", "n=1024")
    p = cuport(src, *quick)
    assert p.returncode == 0, p.stdout + p.stderr
    assert p.stdout.count(" pass ") == 4 and "agrees with opencl" in p.stdout
    init = cuport("--init", src)
    assert init.returncode == 0 and "wrote" in init.stderr and "2 case(s)" in init.stderr
    spec = tmp_path / "verify_spec.py"
    text = spec.read_text()
    assert 'signature="n: i32, a: f32 = 2, x: f32[n] in, y: f32[n] inout"' in text and "TODO" in text
    cases = load_spec(spec)
    assert [c.id for c in cases] == ["AddKernel", "saxpy"] and all(c.reference is None for c in cases)
    assert cases[1].sizes == [{"n": 1 << 20}] and cases[1].translate == {"portability_fixes": False}
    run = cuport(str(tmp_path), *quick)             # the directory's spec now, not a derivation
    assert run.returncode == 0, run.stdout + run.stderr
    assert "no verify_spec.py" not in run.stderr and run.stdout.count(" pass ") == 4
    # never overwritten
    again = cuport("--init", src)
    assert again.returncode == 2 and "exists: not overwritten" in again.stderr and spec.read_text() == text


def test_underivable_kernels_point_to_init_and_bad_init_paths(tmp_path):
    src = tmp_path / "twosizes.cu"
    src.write_text("__global__ void k(float *x, int n, int m) {\n"
                   "  int i = threadIdx.x; if (i < n && i < m) x[i] = 1.0f; }\n")
    src = str(src)
    p = cuport(src, "--targets", "opencl")
    assert p.returncode == 1 and p.stdout == ""
    assert "twosizes.cu:1: k: cannot derive a verify case: no launch site in this file, and not exactly one " \
        "integer parameter" in p.stderr and f"`cuport verify --init {src}`" in p.stderr and "Traceback" not in p.stderr
    init = cuport("--init", src)
    assert init.returncode == 0 and "1 TODO(s)" in init.stderr
    text = (tmp_path / "verify_spec.py").read_text()
    assert "# TODO: no launch site in this file" in text
    assert load_spec(tmp_path / "verify_spec.py")[0].sizes == [{"n": 1000, "m": 1000}]   # placeholders that load
    d = cuport("--init", str(tmp_path))
    assert d.returncode == 2 and "--init takes source files" in d.stderr
    missing = cuport("--init", str(tmp_path / "nope.cu"))
    assert missing.returncode == 2 and "no such file" in missing.stderr


@pytest.mark.skipif(not (opencl.available()[0] and oclgrind.available()[0]), reason="needs PoCL and Oclgrind")
def test_sanitize_without_spec_catches_addkernel_past_its_buffers(tmp_path):
    # AddKernel has no bounds check: at n=1000 the last block reads and writes past the 1000 elements
    (src,) = copy(tmp_path, ROOT / "examples/saxpy/saxpy.cu")
    p = cuport(src, "--targets", "opencl", "--sanitize", "--sizes", "n=1000", "--output-format", "json")
    assert p.returncode == 1
    rows = {(r["case"], r["target"], r["variant"]): r for r in json.loads(p.stdout)["results"]}
    bad = rows[("AddKernel", "oclgrind", "bounds+races")]
    assert bad["status"] == "FAIL" and bad["message"].startswith("oclgrind: Invalid read of size 4")
    assert rows[("saxpy", "opencl", "-")]["status"] == rows[("saxpy", "oclgrind", "bounds+races")]["status"] == "pass"


# ------------------------------------------------------------------------------------------ session 7: templates,
# kernels launched from another file, blocks decided at run time

TEMPLATED = """#include <cuda_runtime.h>
template <typename T, int B>
__global__ void scale(T *x, int n) {
  int i = blockIdx.x * B + threadIdx.x;
  if (i < n) x[i] = x[i] * (T)3;
}
template <typename T>
__global__ void bump(T *x, const T *y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] += y[i];
}
template <typename T>
void run(int n) {
  T *d_x, *d_y;
  cudaMalloc(&d_x, sizeof(T) * n);
  cudaMalloc(&d_y, sizeof(T) * 2 * n);
  bump<T><<<(n + 127) / 128, 128>>>(d_x, d_y, n);
}
template <typename T> __global__ void unused(T *x) { x[0] = 0; }
int main() {
  const int n = 4096;
  float *d_f;
  cudaMalloc(&d_f, n * sizeof(float));
  scale<float, 64><<<n / 64, 64>>>(d_f, n);
  run<double>(n);
  run<int>(n);
  return 0;
}
"""


def test_template_kernels_derive_one_case_per_launched_instance(tmp_path):
    # was: "`scale` is a template: its template arguments are needed" for every template kernel (24 of the
    # HeCBench samples' 130 kernels). A launch with its arguments gives one instance; a launch inside a
    # templated host function gives one per instantiation of that function, with its parameters bound
    # (`sizeof(T) * n` is 8 * n for double)
    ks = derive_text(tmp_path, TEMPLATED)
    assert sorted(ks) == ["bump<double>", "bump<int>", "scale<float, 64>", "unused"]
    s = ks["scale<float, 64>"]
    assert (s.signature, s.grid, s.block, s.sizes, s.problems) == \
        ("x: f32[n] inout, n: i32", "n // 64", "64", {"n": 4096}, [])
    d, i = ks["bump<double>"], ks["bump<int>"]
    assert (d.signature, d.grid, d.block, d.problems) == \
        ("x: f64[n] inout, y: f64[2 * n] in, n: i32", "cdiv(n, 128)", "128", [])
    assert i.signature == "x: i32[n] inout, y: i32[2 * n] in, n: i32" and i.problems == []
    # never launched: no instance to derive, said
    assert [p.what for p in ks["unused"].problems][:1] == ["template"]
    assert "no template arguments found" in ks["unused"].problems[0].message


@needs_cpu_targets
def test_a_template_instance_verifies_without_a_spec(tmp_path):
    (tmp_path / "t.cu").write_text(TEMPLATED)
    r = cuport(str(tmp_path / "t.cu"), "--kernels", "bump<int>", "--targets", "vulkan,opencl", "--sizes", "n=1000")
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.count("bump<int>") >= 4 and " FAIL" not in r.stdout
    # the one instance of `scale`: the translators key it by its bare name (bsearch's kernel_BS<float> was
    # "translator produced no Vulkan GLSL shader for 'kernel_BS<float>'")
    r = cuport(str(tmp_path / "t.cu"), "--kernels", "scale<float, 64>", "--targets", "vulkan,opencl")
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.count("scale<float, 64>") >= 4 and " FAIL" not in r.stdout


KERNEL_FILE = """#include <cuda_runtime.h>
__global__ void add(const float *a, float *b, int n, float s) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) b[i] += s * a[i];
}
"""
MAIN_FILE = """#include <cuda_runtime.h>
__global__ void add(const float *a, float *b, int n, float s);
int main() {
  const int n = 1 << 12;
  float *d_a, *d_b;
  cudaMalloc(&d_a, n * sizeof(float));
  cudaMalloc(&d_b, n * sizeof(float));
  add<<<n / 128, 128>>>(d_a, d_b, n, 0.5f);
  return 0;
}
"""


def test_a_kernel_launched_from_another_file_of_the_program_derives_from_that_launch(tmp_path):
    # HeCBench's kernel.cu launched from main.cu: was "no launch site in this file, and not exactly one integer
    # parameter" (16 kernels). The one sibling file that launches it gives grid, block, buffers and scalars
    (tmp_path / "main.cu").write_text(MAIN_FILE)
    d = derive_text(tmp_path, KERNEL_FILE, name="kernel.cu")["add"]
    assert (d.signature, d.grid, d.block, d.sizes, d.problems) == \
        ("a: f32[n] in, b: f32[n] inout, n: i32, s: f32 = 0.5", "n // 128", "128", {"n": 4096}, [])
    assert d.notes[0] == "launched in main.cu: its launch at line 8 gives the sizes"
    assert d.path.endswith("kernel.cu")              # the kernel's own file is what is translated
    # two other files launch it: which one? Not guessed: the no-launch fallback (n is the one integer)
    (tmp_path / "other.cu").write_text(MAIN_FILE.replace("0.5f", "2.0f"))
    d = derive_text(tmp_path, KERNEL_FILE, name="kernel.cu")["add"]
    assert d.notes[0].startswith("no launch site: assumed 1-D") and d.block == "256"


def test_blocks_decided_at_run_time_and_constant_arrays(tmp_path):
    # argv / a wrapper's parameter: 256 assumed as a size of its own, with a note (was a "block" problem: 15
    # kernels); `size_t lws[2] = {16, 16}; dim3 b(lws[0], lws[1])` folds; an element assigned later does not
    def base(body):
        return LOOP.format(loop=body)
    d = derive_text(tmp_path, base("int bs = atoi(\"7\"); k<<<(nb + bs - 1) / bs, bs>>>(d_p, nb, 0);"))
    assert (d["k"].grid, d["k"].block, d["k"].sizes["bs"], d["k"].problems) == ("cdiv(nb, bs)", "bs", 256, [])
    d = derive_text(tmp_path, base("size_t l[2] = {16, 4}; dim3 b(l[0], l[1]); k<<<nb, b>>>(d_p, nb, 0);"))
    assert (d["k"].block, d["k"].problems) == ("(16, 4)", [])
    # an element assigned later: test_values_assigned_after_the_declaration_are_read_where_they_reach_the_launch


GRIDS = """#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include <cmath>
__global__ void k(const __half *h, const char *c, unsigned char *u, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) u[i] = (unsigned char)(c[i] + (int)__half2float(h[i]));
}
template <int BLOCK>
void run(const __half *h, const char *c, unsigned char *u, int n) {
  k<<<(n + BLOCK - 1) / BLOCK, BLOCK>>>(h, c, u, n);
}
template <int B> __global__ void t(float *x, int n) { int i = blockIdx.x * B + threadIdx.x; if (i < n) x[i] = 1; }
template <int B> void run_t(float *x, int n) { t<B><<<(n + B - 1) / B, B>>>(x, n); }
int main() {
  const int n = 4096, W = 1000;
  __half *h; char *c; unsigned char *u; float *f;
  cudaMalloc(&h, n * sizeof(__half));
  cudaMalloc(&c, n);
  cudaMalloc(&u, n * sizeof(unsigned char));
  cudaMalloc(&f, n * sizeof(float));
  cudaDeviceProp prop;
  cudaGetDeviceProperties(&prop, 0);
  dim3 b(128);
  k<<<std::ceil(W / 16.0), 16>>>(h, c, u, n);
  k<<<(n + b.x - 1) / b.x, b>>>(h, c, u, n);
  k<<<4 * prop.multiProcessorCount, 256>>>(h, c, u, n);
  run_t<64>(f, n);
  return 0;
}
"""


def test_half_and_char_buffers_ceil_grids_dim3_members_and_device_properties(tmp_path):
    # hadamard/vadd's __half, ldpc/ga's char buffers (f16, i8, u8: was "only float, double and 32/64-bit
    # integers"); perlin's `std::ceil(W / 16.0)`, ga's `block.x`, blockAccess's `prop.multiProcessorCount`
    # (16 assumed, a size of its own); a host template's `run_t<64>` binds B = 64 as an int
    p = tmp_path / "k.cu"
    p.write_text(GRIDS)
    from porter.verify.derive import case_from_dict
    ks = derive_file(str(p))
    k = next(d for d in ks if d.kernel == "k")
    assert (k.signature, k.problems) == ("h: f16[n] in, c: i8[n] in, u: u8[n] out, n: i32", [])
    case = case_from_dict(k.as_dict())                  # i8 is a dtype of the spec notation now
    assert [str(p.dtype) for p in case.sig] == ["f16", "i8", "u8", "i32"]
    assert (k.grid, k.block, k.sizes) == ("cdiv(W, 16)", "16", {"W": 1000, "n": 4096})
    t = next(d for d in ks if d.kernel == "t<64>")
    assert (t.grid, t.block, t.problems) == ("cdiv(n, 64)", "64", [])
    # the other two launches, each alone in main
    only_bx = GRIDS.replace("  k<<<std::ceil", "  // k<<<std::ceil").replace("  k<<<4 *", "  // k<<<4 *")
    k = derive_text(tmp_path, only_bx)["k"]
    assert (k.grid, k.block, k.problems) == ("cdiv(n, 128)", "128", [])
    only_prop = GRIDS.replace("  k<<<std::ceil", "  // k<<<std::ceil").replace("  k<<<(n + b.x", "  // k<<<(")
    k = derive_text(tmp_path, only_prop)["k"]
    assert (k.grid, k.sizes["multiProcessorCount"], k.problems) == ("4 * multiProcessorCount", 16, [])
    assert "multiProcessorCount is the device's `prop.multiProcessorCount`: 16 assumed " \
           "(--sizes multiProcessorCount=N)" in k.notes


STRUCTS = """#include <cuda_runtime.h>
struct Float3 { float x, y, z; };
struct KV { unsigned int key, value; };
struct Mixed { double a; int b; };
__global__ void flux(const Float3 *v, float *out, KV *kv, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) { out[i] = v[i].x + 2.0f * v[i].y - v[i].z; kv[i].value = kv[i].key + 1u; }
}
__global__ void mixed(Mixed *m, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) m[i].a = m[i].b;
}
int main() {
  const int n = 2048;
  Float3 *v; float *out; KV *kv; Mixed *m;
  cudaMalloc(&v, n * sizeof(Float3));
  cudaMalloc(&out, n * sizeof(float));
  cudaMalloc(&kv, sizeof(KV) * n);
  cudaMalloc(&m, n * sizeof(Mixed));
  flux<<<n / 128, 128>>>(v, out, kv, n);
  mixed<<<n / 128, 128>>>(m, n);
  return 0;
}
"""


def test_buffers_of_structs_of_one_scalar_type_are_flat_buffers(tmp_path):
    # cfd's Float3, linearprobing's KeyValue, sph's doubles and double3s (was "points to `Float3`: only float,
    # double and 32/64-bit integers are generated"); a struct of mixed types (padding) is a spec struct with
    # C's layout (was refused: "structs of one of them"; tests/test_verify_structs.py)
    ks = derive_text(tmp_path, STRUCTS)
    f = ks["flux"]
    assert (f.signature, f.problems) == ("v: f32[n * 3] in, out: f32[n] out, kv: u32[n * 2] inout, n: i32", [])
    assert "'v' points to `const Float3`: 3 x f32 each, generated as a flat f32 buffer" in f.notes
    m = ks["mixed"]
    assert (m.signature, m.structs, m.problems) == ("m: Mixed[n] inout, n: i32", {"Mixed": "a: f64, b: i32"}, [])


@needs_cpu_targets
def test_a_mixed_struct_buffer_kernel_verifies_without_a_spec(tmp_path):
    (tmp_path / "s.cu").write_text(STRUCTS)
    r = cuport(str(tmp_path / "s.cu"), "--kernels", "mixed", "--targets", "vulkan,opencl")
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.count("mixed ") == 4 and " FAIL" not in r.stdout and "4 pass" in r.stdout, r.stdout


@needs_cpu_targets
def test_a_struct_buffer_kernel_verifies_without_a_spec(tmp_path):
    (tmp_path / "s.cu").write_text(STRUCTS)
    r = cuport(str(tmp_path / "s.cu"), "--kernels", "flux", "--targets", "vulkan,opencl")
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.count("flux") >= 4 and " FAIL" not in r.stdout


def test_a_kernel_file_included_by_the_launching_file_is_read_in_that_files_context(tmp_path):
    # ss: main.cu defines `typedef unsigned char uchar;` then includes kernels.cu, which uses uchar without
    # declaring it. Alone, kernels.cu reads `const uchar *` as `const int *` (clang's recovery): the buffer
    # was i32[n // 4] and the translation of kernels.cu alone fails (CP000). Read through main.cu it is u8[n],
    # and the case names main.cu, whose translation holds the kernel
    _included_program(tmp_path)
    d = {x.kernel: x for x in derive_file(str(tmp_path / "kernels.cu"))}["count"]
    assert (d.signature, d.grid, d.block, d.problems) == \
        ("text: u8[n] in, hits: u32[1] inout, n: i32", "n // 256", "256", [])
    assert d.path == str(tmp_path / "main.cu") and d.line == 2
    assert d.notes[0] == "kernels.cu is included by main.cu: verified through main.cu"


@needs_cpu_targets
def test_a_kernel_file_included_by_the_launching_file_verifies_through_it(tmp_path):
    _included_program(tmp_path)
    r = cuport(str(tmp_path / "kernels.cu"), "--targets", "vulkan,opencl")
    assert r.returncode == 0 and r.stdout.count("count ") == 4 and " FAIL" not in r.stdout, r.stdout + r.stderr


def _included_program(tmp_path):
    (tmp_path / "kernels.cu").write_text("""
__global__ void count(const uchar *text, unsigned int *hits, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n && text[i] == 'a') atomicAdd(hits, 1u);
}
""")
    (tmp_path / "main.cu").write_text("""#include <cuda_runtime.h>
typedef unsigned char uchar;
#include "kernels.cu"
int main() {
  const int n = 1 << 14;
  uchar *d_text; unsigned int *d_hits;
  cudaMalloc(&d_text, n);
  cudaMalloc(&d_hits, sizeof(unsigned int));
  count<<<n / 256, 256>>>(d_text, d_hits, n);
  return 0;
}
""")


BOOLS = """#include <cuda_runtime.h>
__global__ void k(float *x, int n, bool neg, const bool twice) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = (neg ? -x[i] : x[i]) * (twice ? 2.0f : 1.0f);
}
int main(int argc, char **argv) {
  const int n = 4096;
  float *d;
  cudaMalloc(&d, n * sizeof(float));
  const bool t = false;
  k<<<n / 256, 256>>>(d, n, true, t);
  return 0;
}
"""


def test_bool_scalars_derive_from_the_launch(tmp_path):
    # kalman's `intercept`, adjacent's `subtract_left`, tridiagonal's `reorder` (was "'intercept' is a `bool`:
    # only float, double and 32/64-bit integer scalars are generated"); a value not constant: true, with a note
    d = derive_text(tmp_path, BOOLS)["k"]
    assert (d.signature, d.problems) == ("x: f32[n] inout, n: i32, neg: bool = 1, twice: bool = 0", [])
    d = derive_text(tmp_path, BOOLS.replace("(d, n, true, t)", "(d, n, argc > 3, t)"))["k"]
    assert d.signature.endswith("neg: bool = 1, twice: bool = 0")
    assert "'neg' = `argc > 3` is not a constant: true assumed" in d.notes


@needs_cpu_targets
@pytest.mark.parametrize("neg, twice", [(1, 0), (0, 1)])
def test_bool_scalars_reach_the_translations_against_numpy(tmp_path, monkeypatch, neg, twice):
    # the translations take a bool as a uint (OpenCL kernels take no bool): the OpenCL host passes np.bool_
    # as uint32, Vulkan packs it into the push constant; checked against a NumPy reference, not each other
    (tmp_path / "b.cu").write_text(BOOLS)
    (tmp_path / "verify_spec.py").write_text(f'''
from porter.verify.spec import Case, Tol
def ref(x, n, neg, twice):
    return {{"x": (-x if neg else x) * (2.0 if twice else 1.0)}}
KERNELS = [Case(source="b.cu", kernel="k", signature="x: f32[n] inout, n: i32, neg: bool = {neg}, "
                "twice: bool = {twice}", grid="n // 256", block="256", reference=ref, sizes=[{{"n": 4096}}],
                tol=Tol(0, 0))]
''')
    from porter.verify.runner import Runner
    from porter.verify.spec import load_spec
    monkeypatch.setenv("VK_ICD_FILENAMES", LAVAPIPE_ICD)
    results = Runner(["vulkan", "opencl"], subgroups=[4, 8], jobs=1).run(load_spec(tmp_path / "verify_spec.py"))
    assert [(r.target, r.status) for r in results] == \
        [("vulkan", "pass"), ("vulkan", "pass"), ("opencl", "pass")], [r.message for r in results]


def test_a_buffer_the_host_zeroes_before_the_launch_starts_as_zeros(tmp_path):
    # filter's `nres` counter: `cudaMemset(d_nres, 0, sizeof(int))` then the launch; random inputs (-100..100)
    # sent its atomicAdd positions below 0 (Oclgrind: invalid writes). A reset after the launch is not the input
    text = """#include <cuda_runtime.h>
__global__ void k(const int *src, int *dst, int *nres, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n && src[i] > 0) dst[atomicAdd(nres, 1)] = src[i];
}
int main() {
  const int n = 4096;
  int *s, *d, *c;
  cudaMalloc(&s, n * sizeof(int)); cudaMalloc(&d, n * sizeof(int)); cudaMalloc(&c, sizeof(int));
  @BEFORE@
  k<<<n / 256, 256>>>(s, d, c, n);
  @AFTER@
  return 0;
}
"""
    memset = "cudaMemset(c, 0, sizeof(int));"
    d = derive_text(tmp_path, text.replace("@BEFORE@", memset).replace("@AFTER@", ""))["k"]
    inits = {p.name: p.init for p in d.params}
    assert inits["nres"] == ("full", (0,)) and inits["src"] == ("uniform", (-100, 100))
    assert "'nres' is set to 0 by `cudaMemset(c, 0, sizeof(int))` before the launch: its input is zeros" in d.notes
    d = derive_text(tmp_path, text.replace("@BEFORE@", "").replace("@AFTER@", memset))["k"]
    assert {p.name: p.init for p in d.params}["nres"] == ("uniform", (-100, 100))


def test_kernels_in_the_project_headers_a_file_includes_derive_with_it(tmp_path):
    # 26 valid kernels of the HeCBench samples live in kernel.h / *.cuh (pnpoly, laplace3d, f8cast): they were
    # never derived (the model of main.cu holds its own file only). Read as the translators read it, headers
    # inlined: the kernel's line is its header's, `line N` in notes is main.cu's own line
    (tmp_path / "kernel.h").write_text("""
// a header
__global__ void scale(float *x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= 2.0f;
}
""")
    d = derive_text(tmp_path, """#include <cuda_runtime.h>
#include <cstdlib>
#include "kernel.h"
int main(int argc, char **argv) {
  const int n = atoi(argv[1]);
  float *x;
  cudaMalloc(&x, n * sizeof(float));
  scale<<<(n + 255) / 256, 256>>>(x, n);
  return 0;
}
""", name="main.cu")["scale"]
    assert (d.signature, d.grid, d.problems) == ("x: f32[n] inout, n: i32", "cdiv(n, 256)", [])
    assert (d.defined_in, d.line, d.path) == (str(tmp_path / "kernel.h"), 3, str(tmp_path / "main.cu"))
    assert "n is decided at run time (line 5): 1000 assumed (--sizes n=N)" in d.notes


def test_dim3_members_assigned_after_the_declaration_struct_fields_and_container_sizes(tmp_path):
    # clenergy: `dim3 volsize, Gsz, Bsz; Bsz.x = 8; Bsz.y = 8; Gsz.x = volsize.x / Bsz.x` (was "`Bsz` is changed
    # after its declaration"); lut-gemm's `nqW.mSize` and quicksort's `blocks.size()`: run-time sizes of their own
    base = """#include <cuda_runtime.h>
#include <vector>
struct P { int m; };
__global__ void k(float *x, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] = 1; }
int main() {
  float *x;
  const int n = 1 << 16;
  cudaMalloc(&x, n * sizeof(float));
  @BODY@
  return 0;
}
"""
    d = derive_text(tmp_path, base.replace("@BODY@", "dim3 vol, g, b;\n  vol.x = 512; vol.y = 128;\n  b.x = 32; b.y = 4;"
                                          "\n  g.x = vol.x / b.x; g.y = vol.y / b.y;\n  k<<<g, b>>>(x, n);"))["k"]
    assert (d.grid, d.block, d.problems) == ("(512 // 32, 128 // 4)", "(32, 4)", [])
    # assigned twice, or after the launch: not one value
    d = derive_text(tmp_path, base.replace("@BODY@", "dim3 b; b.x = 32; b.x = 64;\n  k<<<n / 64, b>>>(x, n);"))["k"]
    assert [p.what for p in d.problems] == ["block"]
    d = derive_text(tmp_path, base.replace("@BODY@", "P p; std::vector<int> v(8); p.m = v.size();\n"
                                                     "  k<<<p.m / 256 + v.size(), 256>>>(x, n);"))["k"]
    assert (d.grid, d.problems) == ("(p_m // 256) + v_size", [])
    assert d.sizes["p_m"] == 1000 and d.sizes["v_size"] == 1000
    assert "p_m is `p.m`, decided at run time: 1000 assumed (--sizes p_m=N)" in d.notes
    # a field every write of which stores one constant (`n`) is that constant (tests/test_derive_bounds.py)
    d = derive_text(tmp_path, base.replace("@BODY@", "P p; p.m = n;\n  k<<<p.m / 256, 256>>>(x, n);"))["k"]
    assert (d.grid, d.problems, d.sizes["p_m"]) == ("p_m // 256", [], 1 << 16)


def test_a_pointer_cast_then_offset_is_a_use_that_may_write(tmp_path):
    # cbsfil: `float *line = (float *)((uchar *)image + y * pitch);` then writes through `line`: `image` was
    # "in" (the cast hid the arithmetic), so no output buffer, "nothing to compare"
    d = derive_text(tmp_path, """
__global__ void k(float *image, const float *src, unsigned pitch, int n) {
  int y = threadIdx.x;
  float *line = (float *)((unsigned char *)image + y * pitch);
  if (y < n) line[0] = src[y] + src[y + 1];
}
""")["k"]
    assert d.signature.startswith("image: f32[pitch] inout, src: f32[pitch] in")    # (no launch: sizes assumed)


def test_a_kernel_whose_device_function_loops_gets_no_special_inputs(tmp_path):
    # cbsfil's toCoef2DY: the recursive filter loops inside ConvertToInterpolationCoefficients, so inf and NaN
    # inputs ran through it and ended as NaN on lavapipe and inf on PoCL (a false disagreement)
    ks = derive_text(tmp_path, """
__device__ void filt(float *c, int n) { for (int i = 1; i < n; i++) c[i] += 0.5f * c[i - 1]; }
__device__ float twice(float v) { return 2.0f * v; }
__global__ void looped(float *x, int n) { if (threadIdx.x == 0) filt(x, n); }
__global__ void plain(float *x, int n) { int i = threadIdx.x; if (i < n) x[i] = twice(x[i]); }
""")
    assert ks["looped"].params[0].init == ("uniform", (-1.0, 1.0))
    assert ks["plain"].params[0].init == ("special", (0.02,))          # elementwise: inf, NaN, denormals


def test_indices_loaded_through_a_struct_assignment_are_index_inputs(tmp_path):
    # ldpc: `h_element h; h = compact[i]; ... R[h.y * ROW + ...]`: a struct's `=` is a call of operator=, which
    # the taint missed; random h.y read past R and PoCL died (SIGSEGV)
    ks = derive_text(tmp_path, """
typedef struct { char x, y, value, valid; } h_element;
__global__ void k(const h_element *compact, float *R, int n) {
  h_element h;
  for (int i = 0; i < n; i++) { h = compact[i]; R[h.y * 8 + i] = 1.0f; }
}
""")
    assert ks["k"].problems == [] and ks["k"].params[0].init == ("below", ("2",))


def test_a_buffer_of_a_table_of_buffers_is_sized_by_its_elements_cudamalloc(tmp_path):
    # metropolis: `int **mdlat = ...; cudaMalloc(&mdlat[k], sizeof(int) * N); k<<<...>>>(mdlat[k], ...)` (was
    # "'s' receives `mdlat[k]`, not a buffer variable": 5 kernels)
    d = derive_text(tmp_path, """#include <cuda_runtime.h>
#include <cstdlib>
__global__ void k(int *s, float *t, int n) { int i = threadIdx.x; if (i < n) { s[i] = 1; t[i] = 2.0f; } }
int main() {
  const int n = 4096, pool = 4;
  int **tab = (int **)malloc(sizeof(int *) * pool);
  float *other[4];
  for (int j = 0; j < pool; j++) { cudaMalloc(&tab[j], sizeof(int) * n); cudaMalloc(&other[j], n * sizeof(float)); }
  for (int j = 0; j < pool; j++) k<<<n / 256, 256>>>(tab[j], other[j], n);
  return 0;
}
""")["k"]
    assert (d.signature, d.problems) == ("s: i32[n] out, t: f32[n] out, n: i32", [])


def test_a_float_passed_to_an_integer_parameter_is_converted_as_c_does(tmp_path):
    # cobahh passes `0.001003` to a `const int` parameter: the default was the float text, which the spec
    # refused ("scalar '_lio_1' (i32) = 0.001003 is not an integer"); C converts it toward zero
    d = derive_text(tmp_path, """#include <cuda_runtime.h>
__global__ void k(float *x, const int n, const int q, const int r) { if (threadIdx.x < n) x[threadIdx.x] = q + r; }
int main() { const int n = 256; float *x; cudaMalloc(&x, n * sizeof(float)); k<<<1, 256>>>(x, n, 0.001003, -2.7); }
""")["k"]
    assert d.signature == "x: f32[n] out, n: i32, q: i32 = 0, r: i32 = -2"


@needs_cpu_targets
def test_by_value_parameters_past_the_push_constant_budget_reach_vulkan_in_a_uniform_block(tmp_path, monkeypatch):
    # cobahh's 25 scalars: the GLSL translation puts them in a uniform block, which the Vulkan verify host refused
    # ("uniform_block is not supported by the verify host yet"); checked against NumPy
    names = [f"p{i}" for i in range(40)]
    (tmp_path / "u.cu").write_text(
        "__global__ void many(float *out, int n, " + ", ".join(f"float {p}" for p in names) + ") {\n"
        "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "  if (i < n) out[i] = " + " + ".join(f"{k + 1} * {p}" for k, p in enumerate(names)) + " + i;\n}\n")
    sig = "out: f32[n] out, n: i32, " + ", ".join(f"{p}: f32 = {k / 8}" for k, p in enumerate(names))
    (tmp_path / "verify_spec.py").write_text(f'''
import numpy as np
from porter.verify.spec import Case, Tol
def ref(out, n, **p):
    return {{"out": sum((k + 1) * p[f"p{{k}}"] for k in range(40)) + np.arange(n, dtype=np.float64)}}
KERNELS = [Case(source="u.cu", kernel="many", signature="{sig}", grid="ceil(n / 64)", block="64",
                reference=ref, sizes=[{{"n": 1000}}], tol=Tol(1e-5, 1e-3))]
''')
    from porter.translate import api
    man = api.translate_file(str(tmp_path / "u.cu"), "glsl").manifests["many"]
    assert man["uniform_block"] is not None and man["push_constant_size"] == 0
    from porter.verify.runner import Runner
    from porter.verify.spec import load_spec
    monkeypatch.setenv("VK_ICD_FILENAMES", LAVAPIPE_ICD)
    results = Runner(["vulkan"], subgroups=[8], jobs=1).run(load_spec(tmp_path / "verify_spec.py"))
    assert [(r.target, r.status) for r in results] == [("vulkan", "pass")], [r.message for r in results]


def test_finite_inputs_replace_the_special_values_of_elementwise_kernels(tmp_path):
    from porter.verify.nospec import derived_cases
    (src,) = copy(tmp_path, ROOT / "examples/saxpy/saxpy.cu")
    ((_, cases),), refused = derived_cases(src, False)
    assert {c.kernel: c.init["x"].kind for c in cases if "x" in c.init} == {"saxpy": "special"}
    ((_, finite),), _ = derived_cases(src, False, finite=True)
    assert {c.kernel: (c.init["x"].kind, c.init["x"].args) for c in finite if "x" in c.init} == \
        {"saxpy": ("uniform", (-1.0, 1.0))}
    p = cuport(src, "--finite-inputs", "--kernels", "saxpy", "--targets", "opencl", "--sizes", "n=64")
    assert "unrecognized" not in p.stderr and "Traceback" not in p.stderr


def test_a_kernel_clang_could_not_parse_is_not_derived(tmp_path):
    # myocyte's kernel.cu uses `fp`, typedef'd in a header only its includer includes: clang reads `fp *` as
    # `int *`, and the case derived from that had i32 buffers
    ks = derive_text(tmp_path, "__global__ void k(int n, fp *x) { int i = threadIdx.x; if (i < n) x[i] = 1; }\n"
                               "__global__ void ok(int n, float *x) { int i = threadIdx.x; if (i < n) x[i] = 1; }\n")
    assert [(p.what, p.message) for p in ks["k"].problems] == [
        ("parse", "clang could not parse the kernel (line 1: unknown type name 'fp'): its parameter types are not "
                  "known")]
    assert ks["ok"].problems == []


def test_a_kernel_launched_from_a_file_that_only_a_common_includer_makes_parse(tmp_path):
    # myocyte: main.cu includes define.h (typedef float fp) and work.cu, which includes kernel.cu and master.cu,
    # the launching file; kernel.cu and master.cu do not parse alone (was "no output buffer": i32 buffers)
    (tmp_path / "define.h").write_text("typedef float fp;\n")
    (tmp_path / "kernel.cu").write_text("__global__ void kernel(int n, fp *x) {\n"
                                        "  int i = threadIdx.x; if (i < n) x[i] = 2 * x[i]; }\n")
    (tmp_path / "master.cu").write_text("void master(fp *d_x, int n) { kernel<<<1, 256>>>(n, d_x); }\n")
    (tmp_path / "work.cu").write_text('#include "kernel.cu"\n#include "master.cu"\n')
    (tmp_path / "main.cu").write_text('#include "define.h"\n#include "work.cu"\n'
                                      "int main() { const int n = 200; fp *d_x;\n"
                                      "  cudaMalloc(&d_x, n * sizeof(fp)); master(d_x, n); }\n")
    (d,) = derive_file(str(tmp_path / "kernel.cu"))
    assert d.problems == [] and d.signature == "n: i32, x: f32[n] inout" and d.sizes == {"n": 200}
    assert d.path == str(tmp_path / "main.cu") and d.notes[0] == "kernel.cu is included by main.cu: verified " \
        "through main.cu"
    # two files that include both: no single unit to read it through, and the parse problem stays
    (tmp_path / "other.cu").write_text('#include "define.h"\n#include "work.cu"\n')
    (d,) = derive_file(str(tmp_path / "kernel.cu"))
    assert [p.what for p in d.problems] == ["parse"]


def test_a_loop_counter_bounded_by_a_loaded_count_is_an_index_too(tmp_path):
    # ldpc: `int s = count[row]; for (i = 0; i < s; i++) h = compact[i * ROWS + row]`: random counts up to 100
    # read past compact (PoCL SIGSEGV); the count's values are kept small now
    ks = derive_text(tmp_path, """
__global__ void k(const char *count, const float *compact, float *out, int n) {
  int row = threadIdx.x; if (row >= n) return;
  float acc = 0.f; int s = count[row];
  for (int i = 0; i < s; i++) acc += compact[i * 4 + row];
  out[row] = acc;
}
__global__ void fixed_trip(const char *count, const float *compact, float *out, int n) {
  int row = threadIdx.x; if (row >= n) return;
  float acc = 0.f;
  for (int i = 0; i < 3; i++) acc += compact[i * 4 + row] * count[row];
  out[row] = acc;
}
""")
    assert ks["k"].problems == [] and ks["k"].params[0].init == ("below", ("2",))
    assert not any("indexes memory" in n for n in ks["fixed_trip"].notes)       # a constant trip: data only
    assert ks["fixed_trip"].params[0].init[0] == "uniform"


# ------------------------------------------------------------------------------------------ session 8: sizes 2

def test_values_assigned_after_the_declaration_are_read_where_they_reach_the_launch(tmp_path):
    # qrg: `localWorkSize[0] = szWorkgroup;` between two launches (was "cannot express `localWorkSize[0]`"), a
    # variable reassigned before the launch (was "decided at run time": 1000)
    def k(body):
        return derive_text(tmp_path, LOOP.format(loop=body))["k"]
    d = k("size_t l[2] = {16, 4}; l[0] = 8; dim3 b(l[0], l[1]); k<<<nb, b>>>(d_p, nb, 0);")
    assert (d.block, d.problems) == ("(8, 4)", [])
    d = k("size_t w = 64; size_t l[2] = {16, 4}; k<<<nb, dim3(l[0], l[1])>>>(d_p, nb, 0); w = 128; l[0] = w;"
          " dim3 b2(l[0]); k<<<nb, b2>>>(d_p, nb, 1);")
    assert d.block == "(16, 4)"            # the first launch: the later assignments do not reach it
    d = k("size_t g = 8; g = g * 2; k<<<g, 32>>>(d_p, nb, 0); g = 3;")
    assert (d.grid, d.sizes, d.problems) == ("8 * 2", {"nb": 64}, [])
    # assigned in a branch: not known there, a size decided at run time
    d = k("size_t l[2] = {16, 4}; if (nb > 3) l[0] = 32; dim3 b(l[0], l[1]); k<<<nb, b>>>(d_p, nb, 0);")
    assert (d.block, d.sizes["l_0"], d.problems) == ("(l_0, 4)", 256, [])
    assert "l_0 is `l[0]`, decided at run time (line 9): 256 assumed (--sizes l_0=N)" in d.notes
    # written later in a loop around the launch: the first turn launches with the initialiser (metropolis's
    # `&ar` handed to insert_temps after the launch; 1000 of its own wrote past dE)
    d = k("size_t g = 8; for (int r = 0; r < 2; r++) { k<<<g, 32>>>(d_p, nb, 0); g = 16; }")
    assert (d.grid, d.sizes["g"]) == ("g", 8)
    assert "`g` is changed after the launch (line 9) (and on each later turn of the loop around it): its value " \
           "at the first launch taken" in d.notes
    # negative: written under a condition in the loop before the launch: not known there
    d = k("size_t g = 8; for (int r = 0; r < 2; r++) { if (r > nb) g = 16; k<<<g, 32>>>(d_p, nb, 0); }")
    assert (d.grid, d.sizes["g"]) == ("g", 1000)
    d = k("size_t g = 8; if (nb > 3) g = 16; k<<<g, 32>>>(d_p, nb, 0);")
    assert (d.grid, d.sizes["g"]) == ("g", 1000)


OFFSETS = """#include <cuda_runtime.h>
struct KV {{ unsigned k, v; }};
__global__ void k(float *out, const KV *kv, int n) {{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = (float)kv[i].v;
}}
int main() {{
  const int n = 4096, reps = 4;
  float *d_o; KV *d_kv; {extra}
  cudaMalloc(&d_o, reps * n * sizeof(float));
  cudaMalloc(&d_kv, n * sizeof(KV));
  for (int r = 0; r < reps; r++)
    k<<<n / 256, 256>>>({args});
  return 0;
}}
"""


def test_buffers_passed_from_an_offset_are_the_allocation_less_the_offset(tmp_path):
    # metropolis's `dE + k`, concurrentKernels' `&d_a[i]`: was "receives `dE + k`, not a buffer variable"
    d = derive_text(tmp_path, OFFSETS.format(extra="", args="d_o + r * n, d_kv, n"))["k"]
    # (`reps` only sizes the buffer: the program's 4 is kept)
    assert (d.signature, d.problems) == ("out: f32[(4 * n) - (0 * n)] out, kv: u32[n * 2] in, n: i32", [])
    assert "`r` is the counter of the loop at line 12: its first value 0 taken" in d.notes
    d = derive_text(tmp_path, OFFSETS.format(extra="", args="&d_o[n], &d_kv[8], n - 8"))["k"]
    assert (d.signature, d.problems) == \
        ("out: f32[(4 * n_) - n_] out, kv: u32[(n_ * 2) - 8 * 2] in, n: i32 = n_ - 8", [])
    # an offset counted in elements of another type than the kernel's: not known
    d = derive_text(tmp_path, OFFSETS.format(extra="char *d_c = (char *)d_o;", args="(float *)(d_c + 4), d_kv, n"))
    assert [p.what for p in d["k"].problems] == ["out"]


CONV = """#include <cuda_runtime.h>
__global__ void scale(float *dst, const float *src, int w, int h) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < w * h) dst[i] = 2.0f * src[i];
}
void run(float *dst, const float *src, int w, int h) { scale<<<(w * h + 127) / 128, 128>>>(dst, src, w, h); }
"""
CONV_MAIN = """#include <cuda_runtime.h>
void run(float *dst, const float *src, int w, int h);
float *make(size_t count) { float *p; cudaMalloc(&p, count * sizeof(float)); return p; }
void make_at(float **q, size_t count) { cudaMalloc(q, count * sizeof(float)); }
int main() {
  const int w = 64, h = 32;
  float *d_in = make(w * h);
  float *d_out;
  make_at(&d_out, w * h);
  run(d_out, d_in, w, h);
  return 0;
}
"""


def test_buffers_of_a_wrapper_called_in_another_file_and_allocated_by_helpers(tmp_path):
    # convolutionSeparable: conv.cu's wrapper is called from main.cu, which allocates the buffers (was "no
    # cudaMalloc of `dst` in this file"); allreduce's `float *buffer = alloc(n)`: a helper that returns the
    # pointer it cudaMallocs, or one given its address
    (tmp_path / "main.cu").write_text(CONV_MAIN)
    d = derive_text(tmp_path, CONV, name="conv.cu")["scale"]
    assert (d.signature, d.grid, d.block, d.sizes, d.problems) == \
        ("dst: f32[w * h] out, src: f32[w * h] in, w: i32, h: i32", "((w * h) + 127) // 128", "128",
         {"w": 64, "h": 32}, [])
    assert d.notes == ["`run` is called in another file of the program: its call at main.cu:10 gives its parameters"]
    # a helper that returns another pointer than the one it allocates: not its size
    (tmp_path / "main.cu").write_text(CONV_MAIN.replace("return p;", "return (float *)0;"))
    d = derive_text(tmp_path, CONV, name="conv.cu")["scale"]
    assert [p.what for p in d.problems] == ["src"] and "no cudaMalloc of `d_in`" in d.problems[0].message
    # two files call the wrapper: which one is not guessed
    (tmp_path / "main.cu").write_text(CONV_MAIN)
    (tmp_path / "other.cu").write_text(CONV_MAIN.replace("w = 64", "w = 16"))
    d = derive_text(tmp_path, CONV, name="conv.cu")["scale"]
    assert [p.what for p in d.problems] == ["dst", "src"]


def test_sizeof_a_template_type_in_a_macros_arguments(tmp_path):
    # f8cast: `CUDA_CHECK(cudaMalloc((void**)&src, nelems * sizeof(Ts)))` in a host template: the nodes of a
    # macro's arguments have no text (was "size of 'dst': cannot express `` as a size")
    d = derive_text(tmp_path, """#include <cuda_runtime.h>
#define CHECK(x) do { if ((x) != cudaSuccess) return; } while (0)
template <typename Td, typename Ts> __global__ void cvt(Td *dst, const Ts *src, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) dst[i] = (Td)src[i];
}
template <typename Td, typename Ts> void convert(int n) {
  Ts *src; Td *dst;
  CHECK(cudaMalloc((void**)&src, n * sizeof(Ts)));
  CHECK(cudaMalloc((void**)&dst, n * sizeof(Td)));
  cvt<Td, Ts><<<(n + 255) / 256, 256>>>(dst, src, n);
}
int main() { convert<unsigned char, float>(4096); return 0; }
""")
    (c,) = d.values()
    assert (c.kernel, c.signature, c.sizes, c.problems) == \
        ("cvt<unsigned char, float>", "dst: u8[n_] out, src: f32[n_] in, n: i32 = n_", {"n_": 4096}, [])


def test_a_template_kernel_instantiated_by_the_file_that_includes_it(tmp_path):
    # sampling: kernels.cu's host template launches the kernel; main.cu includes kernels.cu and calls it with
    # its types (was "a template launched with no template arguments found")
    (tmp_path / "kernels.cu").write_text("""
template <typename T> __global__ void fill(T *x, int n) { int i = threadIdx.x; if (i < n) x[i] = (T)i; }
template <typename T> void run(T *x, int n) { fill<<<1, 128>>>(x, n); }
""")
    (tmp_path / "main.cu").write_text("""#include <cuda_runtime.h>
#include "kernels.cu"
int main() { const int n = 100; float *d; cudaMalloc(&d, n * sizeof(float)); run<float>(d, n); return 0; }
""")
    (d,) = derive_file(str(tmp_path / "kernels.cu"))
    assert (d.kernel, d.signature, d.problems, d.path) == \
        ("fill<float>", "x: f32[n] out, n: i32", [], str(tmp_path / "main.cu"))
    assert d.notes[0] == "kernels.cu is included by main.cu, which instantiates it: verified through main.cu"
    # nobody includes it: still the template problem
    (tmp_path / "main.cu").unlink()
    (d,) = derive_file(str(tmp_path / "kernels.cu"))
    assert [p.what for p in d.problems][0] == "template"


def test_std_min_in_a_block_and_a_containers_element_decided_at_run_time(tmp_path):
    # moe-sum: `dim3 block(std::min(hidden, 1024))` with only <random> included (libstdc++'s brings std::min in:
    # the light stub did not, and the block's initialiser was dropped: "`block` has no initial value")
    d = derive_text(tmp_path, """#include <random>
#include <vector>
#include <cuda_runtime.h>
__global__ void k(float *x, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] = 1; }
int main(int argc, char **argv) {
  const int hidden = atoi(argv[1]);
  std::vector<size_t> sizes(4);
  float *d; cudaMalloc(&d, sizes[0] * sizeof(float));
  dim3 block(std::min(hidden, 1024));
  k<<<1, block>>>(d, sizes[0]);
  return 0;
}
""")["k"]
    assert (d.block, d.signature, d.problems) == ("min(hidden, 1024)", "x: f32[sizes_0] out, n: i32 = sizes_0", [])
    assert d.sizes == {"hidden": 256, "sizes_0": 1000}


def test_a_launch_the_preprocessor_leaves_out_is_named_in_the_problem(tmp_path):
    # recursiveGaussian's SimpleRecursiveRGBA is launched under `#if USE_SIMPLE_FILTER` (0): no launch site
    src = """#include <cuda_runtime.h>
#define SIMPLE 0
__global__ void k(float *x, int w, int h) { int i = threadIdx.x; if (i < w * h) x[i] = 1; }
int main() {
  float *d; cudaMalloc(&d, 64 * sizeof(float));
#if SIMPLE
  k<<<1, 64>>>(d, 8, 8);
#endif
  return 0;
}
"""
    d = derive_text(tmp_path, src)["k"]
    assert [(p.what, p.message) for p in d.problems] == [(
        "launch", "no launch site in this file (its launch at line 7 is in code the preprocessor leaves out: "
                  "`#if SIMPLE` at line 6, SIMPLE defined as `0` at line 2), and "
                  "not exactly one integer parameter to take for the size: grid, block and sizes are needed")]
    d = derive_text(tmp_path, src.replace("  k<<<1, 64>>>(d, 8, 8);\n", ""))["k"]
    assert "preprocessor" not in d.problems[0].message


def test_a_constant_cast_to_unsigned_keeps_clangs_value(tmp_path):
    # qrg's `const unsigned int distance = ((unsigned int)-1) / (pathN + 1)` was `-1 // ...`: "scalar 'distance'
    # = -1 does not fit u32" on every target
    src = """#include <cuda_runtime.h>
__global__ void k(float *x, unsigned int n, unsigned int dist) { int i = threadIdx.x; if (i < n) x[i] = dist; }
int main() {
  const unsigned int n = 64;
  const unsigned int dist = ((unsigned int)-1) / (n + 1);
  float *d; cudaMalloc(&d, n * sizeof(float));
  k<<<1, 64>>>(d, n, dist);
  return 0;
}
"""
    d = derive_text(tmp_path, src)["k"]
    assert d.signature == "x: f32[n] out, n: u32, dist: u32 = 4294967295 // (n + 1)"
    d = derive_text(tmp_path, src.replace("((unsigned int)-1)", "((unsigned int)n - 2)"))["k"]
    assert d.signature == "x: f32[n] out, n: u32, dist: u32 = (n - 2) // (n + 1)"     # not a constant: the names


ROUND_UP = """size_t shrRoundUp(int group_size, int global_size)
{
  int r = global_size % group_size;
  if (r == 0) { return global_size; } else { return global_size + group_size - r; }
}
"""


def test_the_opencl_sdks_round_up_helper_is_round_up(tmp_path):
    # qrg / tridiagonal's `szGlobalWorkSize[0] = shrRoundUp(16, width) / 16` (was a size decided at run time:
    # 1000 x 1000 blocks of 16 x 16 for tridiagonal's transpose, past the time limit on PoCL)
    main = """#include <cuda_runtime.h>
__global__ void k(float *x, int w) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < w) x[i] = 1; }
{helper}
int main() {
  const int w = 1000;
  float *d; cudaMalloc(&d, w * sizeof(float));
  size_t g[1];
  g[0] = shrRoundUp(64, w) / 64;
  k<<<g[0], 64>>>(d, w);
  return 0;
}
"""
    d = derive_text(tmp_path, main.replace("{helper}", ROUND_UP))["k"]
    assert (d.grid, d.problems) == ("round_up(w, 64) // 64", [])
    # declared here, defined in another file of the program (tridiagonal's shrUtils.cu)
    (tmp_path / "shrUtils.cu").write_text(ROUND_UP)
    d = derive_text(tmp_path, main.replace("{helper}", "size_t shrRoundUp(int group_size, int global_size);"))
    assert d["k"].grid == "round_up(w, 64) // 64"
    # another body: not taken for a round-up (the element is a size decided at run time)
    d = derive_text(tmp_path, main.replace("{helper}", ROUND_UP.replace("- r;", "- r + 1;")), name="k2.cu")["k"]
    assert (d.grid, d.sizes["g_0"]) == ("g_0", 1000)


def test_struct_inputs_that_index_memory_take_the_index_range_in_every_field(tmp_path):
    # minibude: `local_forcefield[l_atom.type]` with `l_atom = ligand[i]` of a mixed struct buffer
    ks = derive_text(tmp_path, """
struct Atom { float x, y, z; int type; };
__global__ void k(const Atom *atoms, const float *ff, float *out, int n) {
  int i = threadIdx.x; if (i >= n) return;
  Atom a = atoms[i];
  out[i] = ff[a.type] * a.x;
}
int main() { const int n = 256, m = 8; Atom *d_a; float *d_ff, *d_out;
  cudaMalloc(&d_a, n * sizeof(Atom)); cudaMalloc(&d_ff, m * sizeof(float)); cudaMalloc(&d_out, n * 4);
  k<<<1, 256>>>(d_a, d_ff, d_out, n); }
""")
    d = ks["k"]
    assert d.problems == [] and d.params[0].init == ("below", ("2",)), (d.problems, d.params[0])
    atoms = case_from_dict(d.as_dict()).make_args(d.sizes)["atoms"]
    assert set(atoms["type"].tolist()) <= {0, 1} and atoms["x"].min() >= 0 and atoms["x"].max() < 2


def test_inputs_parse_into_initializers_and_numbers():
    from porter.verify.nospec import parse_inputs
    assert parse_inputs("b=uniform(4, 5),a=full(0),i=below(n / 2),dt=1e-4,k=3,x=arange(7),s=special(),z=zeros(),"
                        "o=ones()") == {
        "b": ("uniform", (4.0, 5.0)), "a": ("full", (0.0,)), "i": ("below", ("n / 2",)), "dt": 1e-4, "k": 3,
        "x": ("arange", (7,)), "s": ("special", ()), "z": ("full", (0.0,)), "o": ("full", (1.0,))}
    assert parse_inputs("m=0x1e,e=1e3,k=-4") == {"m": 30, "e": 1000.0, "k": -4}      # hex is an integer
    for bad, why in [("b", "expected NAME="), ("b=uniform(5, 4)", "empty range"), ("b=normal(0, 1)", "unknown"),
                     ("b=uniform(1)", "takes 2 argument"), ("b=full(x)", "takes numbers"), ("b=abc", "neither"),
                     ("1b=full(1)", "expected NAME=")]:
        with pytest.raises(ValueError, match=why):
            parse_inputs(bad)


SOLVE = """__global__ void solve(const float *a, const float *b, float *x, float scale, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = scale * a[i] / b[i];
}
int main() {
  const int n = 4096; float *a, *b, *x;
  cudaMalloc(&a, n * sizeof(float)); cudaMalloc(&b, n * sizeof(float)); cudaMalloc(&x, n * sizeof(float));
  solve<<<(n + 255) / 256, 256>>>(a, b, x, 2.0f, n);
}
"""


def test_inputs_set_the_derived_cases_arrays_and_scalars(tmp_path):
    # a kernel meaningful only on its program's data (a pivot near 0 under random diagonals) is verified on the
    # ranges its user names: arrays take the initializer, scalars the number; a name no kernel has is an error
    from porter.verify.nospec import derived_cases, parse_inputs
    from porter.verify.spec import SpecError
    (tmp_path / "k.cu").write_text(SOLVE)
    src = str(tmp_path / "k.cu")
    ((_, (case,)),), _ = derived_cases(src, False)
    assert case.init["b"].kind == "special"
    ((_, (case,)),), _ = derived_cases(src, False, inputs=parse_inputs("b=uniform(4,5),scale=0.5,a=zeros()"))
    assert (case.init["b"].kind, case.init["b"].args) == ("uniform", (4.0, 5.0))
    assert not case.make_args(case.sizes[0])["a"].any()
    args = case.make_args(case.sizes[0])
    assert args["b"].min() >= 4 and args["b"].max() <= 5 and args["scale"] == np.float32(0.5)
    ((_, (case,)),), _ = derived_cases(src, False, inputs=parse_inputs("b=uniform(4,5)"))
    assert case.init["a"].kind == "special"          # a parameter not named keeps its derived inputs
    with pytest.raises(SpecError, match="--inputs names zz: no input parameter"):
        derived_cases(src, False, inputs=parse_inputs("zz=full(1)"))
    with pytest.raises(SpecError, match="'scale' is a scalar: give it a number, not uniform"):
        derived_cases(src, False, inputs=parse_inputs("scale=uniform(0,1)"))


@needs_cpu_targets
def test_inputs_on_the_command_line_and_never_beside_a_spec(tmp_path):
    (tmp_path / "k.cu").write_text(SOLVE)
    src = str(tmp_path / "k.cu")
    p = cuport(src, "--targets", "vulkan,opencl", "--subgroup-sizes", "4", "--inputs", "b=uniform(4,5)",
               "--output-format", "json")
    assert p.returncode == 0, p.stderr
    assert [r["status"] for r in json.loads(p.stdout)["results"]] == ["pass", "pass"]
    p = cuport(src, "--targets", "opencl", "--inputs", "b=uniform(5,4)")
    assert p.returncode == 2 and "uniform(5, 4) is an empty range" in p.stderr
    p = cuport(src, "--targets", "opencl", "--inputs", "nothere=1")
    assert p.returncode != 0 and "--inputs names nothere" in p.stderr and "Traceback" not in p.stderr
    shutil.copytree(WARP, tmp_path / "w")          # a spec gives the inputs: the option is refused, not ignored
    p = cuport(str(tmp_path / "w"), "--targets", "opencl", "--inputs", "in=full(1)")
    assert p.returncode != 0 and "--inputs sets the inputs of derived cases" in p.stderr

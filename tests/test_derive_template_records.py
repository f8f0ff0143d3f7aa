"""Structs of a class template read through the kernel instance (porter/verify/derive_tmpl.py): quicksort's
`block_record<T>` in gqsort_kernel<uint>, allocated as `sizeof(block_record<T>) * blocks.size()` in a macro."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from porter.verify.backends import opencl, vulkan
from porter.verify.derive import case_from_dict, derive_file
from verify_fixtures.helpers import LAVAPIPE_ICD

ROOT = Path(__file__).resolve().parents[1]
needs_cpu_targets = pytest.mark.skipif(
    not (vulkan.available()[0] and os.path.exists(LAVAPIPE_ICD) and opencl.available()[0]),
    reason="needs Vulkan on lavapipe and OpenCL (PoCL)")

REC = """#define CHECK(x) x
template <class T> struct rec { unsigned int start, end; T pivot; };
template <class T> struct list { rec<T> *data_; int n_; int size() const { return n_; } };
template <class T>
__global__ void k(const rec<T> *r, T *out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = r[i].pivot * (T)2 + (T)(r[i].end - r[i].start);
}
template <class T>
void run(list<T> &v, int n) {
  rec<T> *d_r; T *d_out;
  CHECK(cudaMalloc((void **)&d_r, sizeof(rec<T>) * v.size()));
  CHECK(cudaMalloc((void **)&d_out, sizeof(T) * n));
  k<T><<<(n + 255) / 256, 256>>>(d_r, d_out, n);
}
int main() { list<float> a; list<double> b; run(a, 1000); run(b, 1000); }
"""


def test_a_template_struct_is_built_from_the_instances_arguments(tmp_path):
    src = tmp_path / "rec.cu"
    src.write_text(REC)
    ds = {d.kernel: d for d in derive_file(str(src))}
    f, d = ds["k<float>"], ds["k<double>"]
    assert f.problems == [] and d.problems == [], (f.problems, d.problems)
    assert f.params[0].text() == "r: rec_float[v_size] in" and d.params[0].text() == "r: rec_double[v_size] in"
    assert f.structs == {"rec_float": "start: u32, end: u32, pivot: f32"}
    assert d.structs == {"rec_double": "start: u32, end: u32, pivot: f64"}
    # C's layout: the double pivot at 8, 16 bytes each; `v.size()` in the macro is a run-time size
    args = case_from_dict(d.as_dict()).make_args(d.sizes)
    assert args["r"].dtype.itemsize == 16 and args["r"].dtype.fields["pivot"][1] == 8
    assert args["r"].shape == (1000,) and "v_size is `v.size()`, decided at run time" in " ".join(d.notes)


@pytest.mark.parametrize("decl,why", [
    ("template <class T, int N> struct rec { unsigned int start, end; T pivot; };", "only templates of type"),
    ("template <class T> struct rec { unsigned int start, end; T *pivot; };", "has a member `pivot` of type `T *`"),
    ("template <class T> struct __attribute__((packed)) rec { unsigned int start, end; T pivot; };",
     "sets its own layout"),
    ("struct base { int b; };\ntemplate <class T> struct rec : base { unsigned int start, end; T pivot; };",
     "has a base class"),
])
def test_a_template_struct_that_is_not_plain_stays_refused(tmp_path, decl, why):
    text = REC.replace("template <class T> struct rec { unsigned int start, end; T pivot; };", decl)
    if "int N" in decl:
        text = text.replace("rec<T>", "rec<T, 3>")
    if "T *pivot" in decl:
        text = text.replace("r[i].pivot * (T)2", "r[i].pivot[0] * (T)2")
    src = tmp_path / "rec.cu"
    src.write_text(text)
    d = next(d for d in derive_file(str(src)) if d.kernel == "k<float>")
    msgs = [p.message for p in d.problems if p.what == "r"]
    assert msgs and why in msgs[0] and "only buffers of float" in msgs[0], d.problems


@needs_cpu_targets
def test_a_template_struct_buffer_runs_and_agrees(tmp_path):
    src = tmp_path / "rec.cu"
    src.write_text(REC)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "VK_ICD_FILENAMES": LAVAPIPE_ICD}
    p = subprocess.run([sys.executable, "-m", "porter", "verify", str(src), "--targets", "vulkan,opencl",
                        "--subgroup-sizes", "4", "--output-format", "json", "--timeout", "60", "--sizes",
                        "v_size=512,n_=512"], capture_output=True, text=True, env=env, timeout=600)
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    assert [(r["case"].split("<")[1], r["status"]) for r in doc["results"]] == [
        ("float>", "pass"), ("float>", "pass"), ("double>", "pass"), ("double>", "pass")], doc["results"]


# ------------------------------------------------------------------------------------------------------------
# a count read back from the device that the program allocates for (marchingCubes' countedBlockNumLv1,
# nonzero's h_nzeros): a run-time count, its buffers following it

COUNT = """#include <cstdlib>
__global__ void count_pos(const float *x, unsigned *cnt, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n && x[i] > 0.0f) atomicAdd(cnt, 1u);
}
__global__ void fill(float *y, const float *x, unsigned m) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < m) y[i] = 2.0f * x[i % 7] + (float)i;
}
int main(int argc, char **argv) {
  const int n = 4096; float *x, *y; unsigned *d_cnt, m;
  cudaMalloc(&x, n * sizeof(float)); cudaMalloc(&d_cnt, sizeof(unsigned));
  count_pos<<<n / 256, 256>>>(x, d_cnt, n);
  cudaMemcpy(&m, d_cnt, sizeof(unsigned), cudaMemcpyDeviceToHost);
  {ALLOC}
  fill<<<(m + 255) / 256, 256>>>(y, x, m);
}
"""


def test_a_count_read_back_and_allocated_for_is_a_run_time_count(tmp_path):
    src = tmp_path / "count.cu"
    src.write_text(COUNT.replace("{ALLOC}", "size_t bytes = m * sizeof(float); cudaMalloc(&y, bytes);"))
    d = next(d for d in derive_file(str(src)) if d.kernel == "fill")
    assert d.problems == [] and d.signature == "y: f32[m] out, x: f32[4096] in, m: u32" and d.sizes == {"m": 1000}
    assert "`m` is read back from the device (`cudaMemcpy` at line 14) and the program allocates for it " \
           "(`cudaMalloc` at line 15): a count decided at run time" in d.notes


@pytest.mark.parametrize("alloc", [
    "cudaMalloc(&y, 1000 * sizeof(float));",                       # allocated, but not for the count
    "cudaMalloc(&y, n * sizeof(float));",
])
def test_a_value_read_back_that_nothing_is_allocated_for_stays_a_problem(tmp_path, alloc):
    src = tmp_path / "count.cu"
    src.write_text(COUNT.replace("{ALLOC}", alloc))
    d = next(d for d in derive_file(str(src)) if d.kernel == "fill")
    assert {p.what for p in d.problems} >= {"m", "grid"}
    assert all("`m` is read back from the device (`cudaMemcpy` at line 14)" in p.message
               for p in d.problems if p.what in ("m", "grid"))

"""CP701's safe fix: an early `if (cond) return;` before block barriers becomes a flag that predicates the work
between the barriers, so every thread arrives (HeCBench bsearch kernel_BS4 aborted PoCL, hangs AMD GPUs)."""
import subprocess
import sys
from pathlib import Path

import pytest

from porter.lint.checker import fix_source, lint_source
from porter.source import SourceFile

ROOT = Path(__file__).resolve().parents[1]

BS4 = """__global__ void bs4(const float *a, const float *z, unsigned *r, unsigned zSize, unsigned n) {
  __shared__ unsigned k;
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= zSize) return;
  unsigned lid = threadIdx.x;
  if (lid == 0) { unsigned nbits = 0; while (n >> nbits) nbits++; k = 1u << (nbits - 1); }
  __syncthreads();
  unsigned p = k;
  float zz = z[i];
  r[i] = (a[p] <= zz) ? p : 0;
}
"""

FIXED = """__global__ void bs4(const float *a, const float *z, unsigned *r, unsigned zSize, unsigned n) {
  __shared__ unsigned k;
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  bool cuport_live = true; if (i >= zSize) cuport_live = false;
  if (cuport_live) { unsigned lid = threadIdx.x;
  if (lid == 0) { unsigned nbits = 0; while (n >> nbits) nbits++; k = 1u << (nbits - 1); }
  } __syncthreads();
  if (cuport_live) { unsigned p = k;
  float zz = z[i];
  r[i] = (a[p] <= zz) ? p : 0;
} }
"""


def _codes(text):
    return [d.code for d in lint_source(SourceFile("x.cu", text), enabled={"CP701", "CP000"}).diagnostics]


def test_an_early_return_before_top_level_barriers_is_predicated():
    assert _codes(BS4) == ["CP701"]
    out = fix_source(SourceFile("x.cu", BS4), unsafe=False, enabled={"CP701", "CP000"})
    assert out.text == FIXED and out.fixed == {"CP701": 1}
    assert _codes(out.text) == []                 # every thread reaches the barrier now; the text parses


@pytest.mark.parametrize("kernel,why", [
    # `v` lives on past the barrier: wrapping its stretch would end its scope
    ("""__global__ void k(float *x, int n) {
  __shared__ float s[64];
  int i = threadIdx.x;
  if (i >= n) return;
  float v = x[i];
  s[i] = v;
  __syncthreads();
  x[i] = v + s[63 - i];
}
""", "declared before, used after"),
    # the barrier is inside a loop: not a top-level statement
    ("""__global__ void k(float *x, int n) {
  __shared__ float s[64];
  int i = threadIdx.x;
  if (i >= n) return;
  for (int r = 0; r < 4; r++) { s[i] = x[i]; __syncthreads(); x[i] = s[63 - i]; }
}
""", "nested barrier"),
    # the return is nested in a loop
    ("""__global__ void k(float *x, int n) {
  __shared__ float s[64];
  for (int j = 0; j < 2; j++) { if (threadIdx.x + j >= n) return; }
  s[threadIdx.x] = x[threadIdx.x];
  __syncthreads();
}
""", "nested return"),
])
def test_no_fix_where_predication_would_change_the_code(kernel, why):
    assert "CP701" in _codes(kernel), why
    out = fix_source(SourceFile("x.cu", kernel), unsafe=True, enabled={"CP701", "CP000"})
    assert out.text == kernel and not out.fixed, why


REV = """__global__ void rev(const float *x, float *y, int n) {
  __shared__ float s[256];
  int t = threadIdx.x;
  s[t] = t < n ? x[t] : 0.0f;
  if (t >= n) return;
  y[t] = 2.0f * x[t];
  __syncthreads();
  y[t] += s[n - 1 - t];
}
"""

SPEC = """from porter.verify.spec import Case
KERNELS = [Case(source="rev.cu", kernel="rev", signature="x: f32[n] in, y: f32[n] out, n: i32",
                grid="1", block="256", reference=lambda x, n: {"y": 2 * x + x[::-1]}, sizes=[{"n": 200}])]
"""


def test_the_translations_predicate_and_run_right(tmp_path):
    # 56 of the 256 threads return before the barrier; translated as written, PoCL's barrier waits for them
    from porter.verify.backends import opencl
    if not opencl.available()[0]:
        pytest.skip("PoCL not available")
    (tmp_path / "rev.cu").write_text(REV)
    (tmp_path / "verify_spec.py").write_text(SPEC)
    p = subprocess.run([sys.executable, "-m", "porter", "verify", str(tmp_path), "--targets", "opencl",
                        "--timeout", "60", "-j", "1"], capture_output=True, text=True, cwd=ROOT)
    assert p.returncode == 0 and " pass " in p.stdout, p.stdout + p.stderr
    out = subprocess.run([sys.executable, "-m", "porter", "translate", "--to", "glsl", str(tmp_path / "rev.cu"),
                          "-o", str(tmp_path / "glsl")], capture_output=True, text=True, cwd=ROOT)
    text = "".join(f.read_text() for f in (tmp_path / "glsl").iterdir())
    assert out.returncode == 0 and "cuport_live" in text and "return;" not in text


@pytest.mark.parametrize("target", ["glsl", "opencl"])
def test_a_barrier_the_fix_cannot_reach_is_reported_by_every_translator(tmp_path, target):
    # a barrier inside a thread-dependent branch has no safe fix: HIP reported it (exit 1), GLSL and OpenCL wrote
    # the translation and exited 0; the kernel is still written (the source's undefined behaviour, kept as is)
    (tmp_path / "k.cu").write_text(BS4.replace("bs4", "ok") + """__global__ void nested(float *x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) { if (x[i] > 0) return; __syncthreads(); }
  x[i] = 1;
}
""")
    p = subprocess.run([sys.executable, "-m", "porter", "translate", "--to", target, str(tmp_path / "k.cu"),
                        "-o", str(tmp_path / "out")], capture_output=True, text=True, cwd=ROOT)
    assert p.returncode == 1, p.stdout + p.stderr
    found = [ln for ln in (p.stdout + p.stderr).splitlines() if " CP701 " in ln]
    assert len(found) == 1 and "k.cu:14:38:" in found[0] and "`i < n`" in found[0]     # not the fixed `ok`
    text = "".join(f.read_text() for f in (tmp_path / "out").iterdir())
    assert "cuport_live" in text and "nested" in text

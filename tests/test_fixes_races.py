"""CP702's unsafe fix: a barrier between the two racing accesses, only where every thread reaches it."""
from porter.lint.checker import fix_source, lint_source
from porter.source import SourceFile

SHIFT = """__global__ void shift(float *out, const float *in) {
  __shared__ float s[257];
  int t = threadIdx.x;
  s[t] = in[t];
  out[t] = s[t + 1];
}

void run(float *o, const float *i) { shift<<<1, 256>>>(o, i); }
"""

FIXED = """__global__ void shift(float *out, const float *in) {
  __shared__ float s[257];
  int t = threadIdx.x;
  s[t] = in[t];
  __syncthreads();
  out[t] = s[t + 1];
}

void run(float *o, const float *i) { shift<<<1, 256>>>(o, i); }
"""


def _codes(text):
    res = lint_source(SourceFile("x.cu", text), enabled={"CP702", "CP701", "CP000"})
    return [d.code for d in res.diagnostics]


def test_barrier_inserted_before_the_second_access():
    out = fix_source(SourceFile("x.cu", SHIFT), unsafe=True, enabled={"CP702", "CP000"})
    assert out.text == FIXED
    assert out.fixed == {"CP702": 1}
    assert "CP702" not in _codes(out.text) and "CP000" not in _codes(out.text)


def test_fix_is_unsafe_only():
    out = fix_source(SourceFile("x.cu", SHIFT), unsafe=False, enabled={"CP702", "CP000"})
    assert out.text == SHIFT


def test_no_fix_under_a_thread_dependent_branch():
    src = SHIFT.replace("  s[t] = in[t];\n  out[t] = s[t + 1];\n",
                        "  if (t < 128) {\n    s[t] = in[t];\n    out[t] = s[t + 1];\n  }\n")
    res = lint_source(SourceFile("x.cu", src), enabled={"CP702"})
    races = [d for d in res.diagnostics if d.code == "CP702"]
    assert races and all(d.fix is None for d in races)


def test_no_fix_for_a_race_across_loop_iterations():
    src = """__global__ void tiled(float *c, const float *a, int n) {
  __shared__ float As[16][16];
  float sum = 0.f;
  for (int t = 0; t < n; t += 16) {
    As[threadIdx.y][threadIdx.x] = a[t + threadIdx.x];
    __syncthreads();
    for (int k = 0; k < 16; ++k) sum += As[threadIdx.y][k];
  }
  c[threadIdx.x] = sum;
}
void run(float *c, const float *a, int n) { tiled<<<1, dim3(16, 16)>>>(c, a, n); }
"""
    res = lint_source(SourceFile("x.cu", src), enabled={"CP702"})
    races = [d for d in res.diagnostics if d.code == "CP702"]
    assert len(races) == 1 and races[0].fix is None and "consecutive iterations" in races[0].message

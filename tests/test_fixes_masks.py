"""Fixes of the lane-mask and warp-synchronous families (CP201, CP202, CP301, CP302): exact fixed text, and the
fixed text re-lints clean for the rules and still parses."""
from porter.lint.checker import fix_source, lint_source
from porter.source import SourceFile


def _fix(text, codes, unsafe=False):
    codes = set(codes) if not isinstance(codes, str) else {codes}
    out = fix_source(SourceFile("t.cu", text), enabled=codes | {"CP000"}, unsafe=unsafe)
    assert out.refused is None
    again = lint_source(SourceFile("t.cu", out.text), enabled=codes | {"CP000"})
    got = [d.code for d in again.diagnostics]
    assert not set(got) & codes, again.diagnostics
    assert "CP000" not in got, again.diagnostics
    return out


# regression: pytorch/FBGEMM#5830: the ballot was stored in `unsigned` and counted with __popc; both had to change
FBGEMM = """#define FULL_MASK 0xffffffff
__device__ int fbgemm_count(bool pred) {
  unsigned mask = __ballot_sync(FULL_MASK, pred);
  return __popc(mask);
}
"""


def test_fbgemm_needs_both_fixes():
    out = _fix(FBGEMM, {"CP201", "CP202"})
    assert out.fixed == {"CP201": 1, "CP202": 2}
    assert out.text == """#define FULL_MASK 0xffffffffffffffffull
__device__ int fbgemm_count(bool pred) {
  unsigned long long mask = __ballot_sync(FULL_MASK, pred);
  return __popcll(mask);
}
"""


def test_fbgemm_cp201_alone_leaves_the_popc_to_cp202():
    out = _fix(FBGEMM, "CP201")
    assert out.text == FBGEMM.replace("unsigned mask", "unsigned long long mask")
    left = lint_source(SourceFile("t.cu", out.text), enabled={"CP202"}).diagnostics
    assert any("__popc(mask)" in d.message for d in left)


def test_cp201_widens_a_mask_loop_variable():
    src = """__device__ int leaders(int p, int *out) {
  uint32_t todo = __ballot_sync(0xffffffffu, p);
  int n = 0;
  while (todo != 0) {
    int l = __ffs(todo) - 1;
    out[n++] = l;
    todo &= todo - 1;
  }
  return n;
}
"""
    out = _fix(src, "CP201")
    assert out.fixed == {"CP201": 1}
    assert out.text == src.replace("uint32_t todo", "unsigned long long todo")


def test_cp201_other_uses_make_it_display_only():
    src = """__device__ int bump(int p) {
  unsigned m = __ballot_sync(~0ull, p);
  return ~m;
}
__device__ unsigned get(int p) { return __activemask(); }
"""
    out = fix_source(SourceFile("t.cu", src), enabled={"CP201"}, unsafe=True)
    assert out.text == src and not out.fixed
    diags = out.result.diagnostics
    assert [d.code for d in diags] == ["CP201", "CP201"]
    assert diags[0].fix is not None and diags[0].fix.applicability.value == "display-only"
    assert diags[1].fix is None


def test_cp202_literals_lanes_and_bit_intrinsics():
    src = """__device__ int f(float v, int p) {
  int lane = threadIdx.x % warpSize;
  unsigned long long m = __ballot_sync(0xffffffff, p);
  v += __shfl_xor_sync(~0u, v, 1);
  v += __shfl_xor_sync(0xFFFFFFFFU, v, 2);
  int below = __popc(m & ((1u << lane) - 1));
  int top = 31 - __clz(m);
  return below + top + __ffs(m) + (int)v;
}
"""
    out = _fix(src, "CP202")
    assert out.fixed == {"CP202": 7}
    assert out.text == """__device__ int f(float v, int p) {
  int lane = threadIdx.x % warpSize;
  unsigned long long m = __ballot_sync(0xffffffffffffffffull, p);
  v += __shfl_xor_sync(~0ull, v, 1);
  v += __shfl_xor_sync(0xFFFFFFFFFFFFFFFFULL, v, 2);
  int below = __popcll(m & ((1ull << lane) - 1));
  int top = 63 - __clzll(m);
  return below + top + __ffsll(m) + (int)v;
}
"""


def test_cp202_macro_rewritten_only_when_every_use_is_a_mask():
    src = """#define FULL 0xffffffffu
#define ONES (0xffffffffu)
__device__ float f(float v, unsigned x) {
  v += __shfl_down_sync(FULL, v, 1);
  v += __shfl_down_sync(ONES, v, 2);
  return v + (x & ONES);
}
"""
    out = fix_source(SourceFile("t.cu", src), enabled={"CP202", "CP000"})
    assert out.text == src.replace("#define FULL 0xffffffffu", "#define FULL 0xffffffffffffffffull")
    left = [d for d in out.result.diagnostics if d.code == "CP202"]
    assert len(left) == 1 and "ONES" in left[0].message and left[0].fix is None


def test_cp202_unsafe_fixes_need_unsafe():
    src = """__device__ unsigned f(int p) {
  int lane = threadIdx.x & 31;
  unsigned long long m = __ballot_sync(~0ull, p);
  unsigned r = __brev(m);
  return r + __clz(m) + (~(1u << lane) & 7u);
}
"""
    safe = fix_source(SourceFile("t.cu", src), enabled={"CP202"})
    assert safe.text == src and not safe.fixed
    out = _fix(src, "CP202", unsafe=True)
    assert out.text == src.replace("__brev(", "__brevll(").replace("__clz(", "__clzll(") \
        .replace("1u << lane", "1ull << lane")


SEED = """__global__ void hip_reduce(float* data, float* result, int n) {
  __shared__ float sdata[256];
  int tid = threadIdx.x;
  sdata[tid] = (tid < n) ? data[tid] : 0.0f;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 32; s >>= 1) {
    if (tid < s) sdata[tid] += sdata[tid + s];
    __syncthreads();
  }
  if (tid < 32) {
    volatile float* vsmem = sdata;
    vsmem[tid] += vsmem[tid + 32];
    vsmem[tid] += vsmem[tid + 16];
    vsmem[tid] += vsmem[tid + 8];
    vsmem[tid] += vsmem[tid + 4];
    vsmem[tid] += vsmem[tid + 2];
    vsmem[tid] += vsmem[tid + 1];
  }
}
"""


def test_cp301_seed_tail_gets_syncwarp_steps():
    safe = fix_source(SourceFile("t.cu", SEED), enabled={"CP301"})
    assert safe.text == SEED and not safe.fixed
    out = _fix(SEED, {"CP301", "CP302", "CP203"}, unsafe=True)
    assert out.fixed == {"CP301": 1}
    steps = "".join(f"    {{ float partner = vsmem[tid + {k}]; __syncwarp(); vsmem[tid] += partner; __syncwarp(); }}\n"
                    for k in (32, 16, 8, 4, 2, 1))
    head = SEED[:SEED.index("    vsmem[tid] += vsmem[tid + 32];")]
    assert out.text == head + steps + "  }\n}\n"


def test_cp301_template_helper_and_name_clash():
    src = """template <unsigned int blockSize>
__device__ void warpReduce(volatile int *sdata, unsigned int tid, int partner) {
  if (blockSize >= 64) sdata[tid] += sdata[tid + 32];
  if (blockSize >= 32) sdata[tid] = max(sdata[tid], sdata[tid + 16]);
}
"""
    out = _fix(src, "CP301", unsafe=True)
    assert out.text == """template <unsigned int blockSize>
__device__ void warpReduce(volatile int *sdata, unsigned int tid, int partner) {
  if (blockSize >= 64) { int partner1 = sdata[tid + 32]; __syncwarp(); sdata[tid] += partner1; __syncwarp(); }
  if (blockSize >= 32) { int partner1 = sdata[tid + 16]; __syncwarp(); sdata[tid] = max(sdata[tid], partner1); \
__syncwarp(); }
}
"""


def test_cp301_no_fix_under_a_partial_guard():
    src = """__global__ void k(float *out) {
  __shared__ float s[64];
  int t = threadIdx.x;
  s[t] = out[t];
  __syncthreads();
  if (t < 16) {
    s[t] += s[t + 16];
    s[t] += s[t + 8];
  }
}
"""
    out = fix_source(SourceFile("t.cu", src), enabled={"CP301"}, unsafe=True)
    assert out.text == src and [d.code for d in out.result.diagnostics] == ["CP301"]


def test_cp302_inserts_syncwarp_for_a_lane_exchange():
    src = """__global__ void k(float *out, float v) {
  __shared__ float x[256];
  int lane = threadIdx.x % 32;
  int warp = threadIdx.x / 32;
  x[warp * 32 + lane] = v;
  float r = x[warp * 32 + 31 - lane];
  out[threadIdx.x] = r;
}
"""
    assert fix_source(SourceFile("t.cu", src), enabled={"CP302"}).text == src
    out = _fix(src, "CP302", unsafe=True)
    assert out.text == src.replace("  float r =", "  __syncwarp();\n  float r =")

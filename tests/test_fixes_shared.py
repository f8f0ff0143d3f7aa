"""Fixes of the shared-memory family (CP40x) and the configured limits of CP502: exact fixed text, and the fixed
text re-lints clean for the rule."""
from porter.config import Settings
from porter.lint.checker import fix_source, lint_source
from porter.source import SourceFile


def _fix(text, code, unsafe=False):
    out = fix_source(SourceFile("t.cu", text), enabled={code, "CP000"}, unsafe=unsafe)
    again = lint_source(SourceFile("t.cu", out.text), enabled={code, "CP000"})
    codes = [d.code for d in again.diagnostics]
    assert code not in codes, again.diagnostics
    assert "CP000" not in codes, again.diagnostics
    return out


def _lint(text, codes, settings=None):
    return lint_source(SourceFile("t.cu", text), settings=settings, enabled=set(codes) | {"CP000"}).diagnostics


# the seed article's transpose tile
TRANSPOSE = """__global__ void transpose(float *out, const float *in, int n) {
  __shared__ float tile[32][32];
  int x = blockIdx.x * 32 + threadIdx.x;
  int y = blockIdx.y * 32 + threadIdx.y;
  tile[threadIdx.y][threadIdx.x] = in[y * n + x];
  __syncthreads();
  x = blockIdx.y * 32 + threadIdx.x;
  y = blockIdx.x * 32 + threadIdx.y;
  out[y * n + x] = tile[threadIdx.x][threadIdx.y];
}
"""


def test_cp401_pads_the_transpose_tile():
    d = _lint(TRANSPOSE, {"CP401"})
    assert [x.code for x in d] == ["CP401"] and "32-way" in d[0].message and d[0].row == 9
    out = _fix(TRANSPOSE, "CP401")
    assert out.fixed == {"CP401": 1}
    assert out.text == TRANSPOSE.replace("tile[32][32];", "tile[32][32 + 1];")


def test_cp401_pads_a_macro_extent_once_for_all_accesses():
    src = """#define TILE 32
__global__ void k(float *out) {
  __shared__ float tile[TILE][TILE];
  for (int k = 0; k < TILE; ++k) tile[threadIdx.x][k] = k;
  __syncthreads();
  out[threadIdx.x] = tile[threadIdx.x][3] + tile[threadIdx.x][threadIdx.x % 7];
}
"""
    out = _fix(src, "CP401")
    assert out.text == src.replace("tile[TILE][TILE];", "tile[TILE][TILE + 1];")


def test_cp401_no_fix_when_the_array_is_also_used_through_a_pointer():
    src = """__global__ void k(float *out) {
  __shared__ float tile[32][32];
  float *p = &tile[0][0];
  p[threadIdx.x] = 0.f;
  __syncthreads();
  out[threadIdx.x] = tile[threadIdx.x][0];
}
"""
    d = _lint(src, {"CP401"})
    assert len(d) == 1 and "32-way" in d[0].message and d[0].fix is None
    assert fix_source(SourceFile("t.cu", src), enabled={"CP401"}).text == src


def test_cp401_no_fix_when_padding_cannot_remove_the_conflict():
    # a column stride inside the row (sgemm_optimized's Bs reads): padding the row changes nothing
    src = """__global__ void k(float *out) {
  __shared__ float Bs[8][129];
  Bs[0][threadIdx.x] = 0.f;
  __syncthreads();
  out[threadIdx.x] = Bs[blockIdx.x % 8][threadIdx.x * 8];
}
"""
    d = _lint(src, {"CP401"})
    assert len(d) == 1 and "8-way" in d[0].message and d[0].fix is None


PADDED_POINTER = """#define TILE 32
__global__ void k(float *out, const float *in) {
  __shared__ float tile[TILE][TILE + 1];
  float *p = &tile[0][0];
  p[threadIdx.y * TILE + threadIdx.x] = in[threadIdx.x];
  __syncthreads();
  out[threadIdx.x] = p[threadIdx.x * TILE + threadIdx.y];
}
"""


def test_cp402_uses_the_padded_stride_everywhere():
    out = _fix(PADDED_POINTER, "CP402")
    assert out.fixed == {"CP402": 2}
    assert out.text == PADDED_POINTER.replace("* TILE +", "* (TILE + 1) +")
    # the padding now does its job: the transposed read is conflict-free
    assert [d.code for d in _lint(out.text, {"CP401"})] == []
    assert [d.code for d in _lint(PADDED_POINTER, {"CP401"})] == ["CP401"]


def test_cp402_literal_tile_and_row0_view():
    src = """__global__ void k(float *out, const float *in, int r) {
  __shared__ float tile[32][33];
  ((float *)tile)[threadIdx.y * 32 + threadIdx.x] = in[threadIdx.x];
  __syncthreads();
  out[threadIdx.x] = tile[threadIdx.x][threadIdx.y] + tile[0][r * 32 + threadIdx.x];
}
"""
    out = _fix(src, "CP402")
    assert out.text == src.replace("threadIdx.y * 32", "threadIdx.y * 33").replace("r * 32", "r * 33")


def test_cp402_no_fix_when_the_pointer_escapes():
    src = """#define TILE 32
__device__ void store(float *q, float v);
__global__ void k(float *out, const float *in) {
  __shared__ float tile[TILE][TILE + 1];
  float *p = &tile[0][0];
  p[threadIdx.y * TILE + threadIdx.x] = in[threadIdx.x];
  store(p, 1.f);
}
"""
    d = _lint(src, {"CP402"})
    assert len(d) == 1 and d[0].fix is None


BIG = """__global__ void k(float *out) {
  __shared__ float a[10240];
  out[threadIdx.x] = a[threadIdx.x];
}
void launch(float *o) { k<<<1, 256, 30 * 1024>>>(o); }
"""


def test_cp502_default_limits_without_settings():
    d = _lint(BIG, {"CP502"})
    assert len(d) == 2 and all("71680 B" in x.message for x in d)
    # the launch's dynamic size is what crosses 64 KiB: reported there; static alone exceeds 32 KiB: at the kernel
    assert any("> 65536 B" in x.message and "AMD LDS" in x.message and x.row == 5 for x in d)
    assert any("> 32768 B" in x.message and "Vulkan" in x.message and x.row == 1 for x in d)


def test_cp502_configured_targets_and_vulkan_limit():
    only_vk = Settings(target_arch=["sm_90", "vulkan"], vulkan_max_shared=65536)
    d = _lint(BIG, {"CP502"}, only_vk)
    assert len(d) == 1 and "Vulkan" in d[0].message and "65536 B" in d[0].message
    gfx950 = Settings(target_arch=["gfx950"])
    assert _lint(BIG, {"CP502"}, gfx950) == []
    assert [x.code for x in _lint(BIG, {"CP502"}, Settings(target_arch=["gfx942"]))] == ["CP502"]

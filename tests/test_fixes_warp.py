"""Fixes of the warp-size family (CP10x): exact fixed text, and the fixed text re-lints clean for the rule."""
from porter.lint.checker import fix_source, lint_source
from porter.source import SourceFile


def _fix(text, code, unsafe=False):
    out = fix_source(SourceFile("t.cu", text), enabled={code, "CP000"}, unsafe=unsafe)
    again = lint_source(SourceFile("t.cu", out.text), enabled={code, "CP000"})
    codes = [d.code for d in again.diagnostics]
    assert code not in codes, again.diagnostics
    assert "CP000" not in codes, again.diagnostics
    return out


# the classic CUDA warp reduction (seed kernels 000/001)
CLASSIC = """__device__ float warp_reduce(float val) {
  for (int offset = 16; offset > 0; offset /= 2)
    val += __shfl_down_sync(0xffffffff, val, offset);
  return val;
}
"""


def test_cp103_classic_reduction_starts_at_warpsize_half():
    out = _fix(CLASSIC, "CP103")
    assert out.fixed == {"CP103": 1}
    assert out.text == CLASSIC.replace("int offset = 16;", "int offset = warpSize / 2;")


def test_cp103_named_start_scan_bound_and_last_lane():
    src = """#define WARP_SIZE 32
__device__ float f(float v) {
  int lane = threadIdx.x % warpSize;
  for (int o = WARP_SIZE / 2; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffff, v, o);
  for (int d = 1; d < 32; d <<= 1) { float t = __shfl_up_sync(0xffffffff, v, d); if (lane >= d) v += t; }
  for (int m = 1; m <= 16; m *= 2) v += __shfl_xor_sync(0xffffffff, v, m);
  return __shfl_sync(0xffffffff, v, 31);
}
"""
    out = _fix(src, "CP103")
    assert out.fixed == {"CP103": 4}
    assert out.text == src.replace("int o = WARP_SIZE / 2;", "int o = warpSize / 2;") \
        .replace("d < 32;", "d < warpSize;").replace("m <= 16;", "m <= warpSize / 2;") \
        .replace("v, 31)", "v, warpSize - 1)")


def test_cp103_no_fix_for_derived_offsets_or_unrolled_steps():
    src = """__device__ float f(float v) {
  for (int i = 4; i >= 0; --i) v += __shfl_xor_sync(0xffffffff, v, 1 << i);
  v += __shfl_down_sync(0xffffffff, v, 16);
  v += __shfl_down_sync(0xffffffff, v, 8);
  return v;
}
"""
    out = fix_source(SourceFile("t.cu", src), enabled={"CP103"})
    assert out.text == src and not out.fixed
    assert [d.code for d in out.result.diagnostics] == ["CP103", "CP103"]


def test_cp101_fix_is_display_only():
    src = """#define WARP_SIZE 32
__device__ float f(float v) {
  for (int o = 1; o < WARP_SIZE; o *= 2) v += __shfl_xor_sync(0xffffffff, v, o);
  return v;
}
"""
    res = lint_source(SourceFile("t.cu", src), enabled={"CP101"})
    [d] = res.diagnostics
    assert d.code == "CP101" and d.row == 1 and "shuffle offset" in d.message
    assert d.fix is not None and d.fix.applicability.value == "display-only"
    assert [(e.content) for e in d.fix.edits] == ["warpSize"]
    out = fix_source(SourceFile("t.cu", src), enabled={"CP101"}, unsafe=True)
    assert out.text == src and not out.fixed

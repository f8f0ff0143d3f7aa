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


# unrolled warp reductions (HeCBench dpid's reduce(), issue 14 item 8): one loop over warpSize, same on 32 lanes
UNROLLED = """#define FULL 0xffffffffu
__device__ float down(float v) {
  v += __shfl_down_sync(FULL, v, 16);
  v += __shfl_down_sync(FULL, v, 8);
  v += __shfl_down_sync(FULL, v, 4);
  v += __shfl_down_sync(FULL, v, 2);
  v += __shfl_down_sync(FULL, v, 1);
  return v;
}
__device__ float up(float m) {
  m = fmaxf(m, __shfl_xor(m, 1));
  m = fmaxf(m, __shfl_xor(m, 2));
  m = fmaxf(m, __shfl_xor(m, 4));
  m = fmaxf(m, __shfl_xor(m, 8));
  m = fmaxf(m, __shfl_xor(m, 16));
  return m;
}
__device__ int xdown(int cuport_o, int s) {
  s = min(__shfl_xor_sync(0xffffffff, s, 16), s);
  s = min(__shfl_xor_sync(0xffffffff, s, 8), s);
  s = min(__shfl_xor_sync(0xffffffff, s, 4), s);
  s = min(__shfl_xor_sync(0xffffffff, s, 2), s);
  s = min(__shfl_xor_sync(0xffffffff, s, 1), s);
  return s + cuport_o;
}
"""


def _steps(var, fmt, offs):
    return "\n".join("  " + fmt.format(v=var, o=o) + ";" for o in offs)


def test_cp103_unrolled_steps_become_one_loop():
    from porter.frontend.build import build_model
    out = _fix(UNROLLED, "CP103")
    assert out.fixed == {"CP103": 3}
    exp = UNROLLED.replace(
        _steps("v", "{v} += __shfl_down_sync(FULL, {v}, {o})", [16, 8, 4, 2, 1]),
        "  for (int cuport_o2 = warpSize / 2; cuport_o2 > 0; cuport_o2 /= 2) "
        "v += __shfl_down_sync(FULL, v, cuport_o2);").replace(
        _steps("m", "{v} = fmaxf({v}, __shfl_xor({v}, {o}))", [1, 2, 4, 8, 16]),
        "  for (int cuport_o2 = 1; cuport_o2 < warpSize; cuport_o2 *= 2) m = fmaxf(m, __shfl_xor(m, cuport_o2));"
    ).replace(
        _steps("s", "{v} = min(__shfl_xor_sync(0xffffffff, {v}, {o}), {v})", [16, 8, 4, 2, 1]),
        "  for (int cuport_o2 = warpSize / 2; cuport_o2 > 0; cuport_o2 /= 2) "
        "s = min(__shfl_xor_sync(0xffffffff, s, cuport_o2), s);")
    assert exp != UNROLLED and out.text == exp      # `cuport_o` is taken (a parameter): the loop uses cuport_o2
    model = build_model(SourceFile("t.cu", out.text))
    assert not model.errors
    assert len([n for n in model.of_kind("FOR_STMT")]) == 3


_DOWN5 = [16, 8, 4, 2, 1]
_NO_FIX = {
    "missing step": _steps("v", "{v} += __shfl_down_sync(0xffffffff, {v}, {o})", [16, 8, 4, 1]),
    "other variable": _steps("v", "{v} += __shfl_down_sync(0xffffffff, {v}, {o})", [16, 8, 4, 2]) +
    "\n  w += __shfl_down_sync(0xffffffff, w, 1);",
    "width argument": _steps("v", "{v} += __shfl_down_sync(0xffffffff, {v}, {o}, 64)", [16]) + "\n" +
    _steps("v", "{v} += __shfl_down_sync(0xffffffff, {v}, {o})", [8, 4, 2, 1]),
    "statement between": _steps("v", "{v} += __shfl_down_sync(0xffffffff, {v}, {o})", [16, 8, 4]) +
    "\n  w += 1.f;\n" + _steps("v", "{v} += __shfl_down_sync(0xffffffff, {v}, {o})", [2, 1]),
    "comment between": _steps("v", "{v} += __shfl_down_sync(0xffffffff, {v}, {o})", [16, 8]) + " // half\n" +
    _steps("v", "{v} += __shfl_down_sync(0xffffffff, {v}, {o})", [4, 2, 1]),
    "other mask": _steps("v", "{v} += __shfl_down_sync(0xffffffff, {v}, {o})", [16, 8, 4, 2]) +
    "\n  v += __shfl_down_sync(0xffff, v, 1);",
    "other operand": _steps("v", "{v} += __shfl_down_sync(0xffffffff, {v}, {o})", [16, 8, 4, 2]) +
    "\n  v += __shfl_down_sync(0xffffffff, w, 1);",
    "sixth step": _steps("v", "{v} += __shfl_down_sync(0xffffffff, {v}, {o})", _DOWN5 + [1]),
    "macro": "  STEP(16); STEP(8); STEP(4); STEP(2); STEP(1);",
    "own __shfl_down": _steps("v", "{v} += __shfl_down({v}, {o})", _DOWN5),
    "up shuffle ascending": _steps("v", "{v} += __shfl_down_sync(0xffffffff, {v}, {o})", _DOWN5[:1]) + "\n" +
    _steps("v", "{v} = fmaxf({v}, __shfl_down_sync(0xffffffff, {v}, {o}))", _DOWN5[1:]),
}


import pytest  # noqa: E402


@pytest.mark.parametrize("case", sorted(_NO_FIX))
def test_cp103_unrolled_steps_without_fix(case):
    src = """#define STEP(o) v += __shfl_down_sync(0xffffffff, v, o)
__device__ float __shfl_down(float x, int d, int width = 32) { return __shfl_down_sync(0xffffffff, x, d, width); }
__device__ float f(float v, float w) {
""" + _NO_FIX[case] + "\n  return v + w;\n}\n"
    out = fix_source(SourceFile("t.cu", src), enabled={"CP103"})
    assert out.text == src and not out.fixed
    diags = [d for d in out.result.diagnostics if d.code == "CP103"]
    if case == "own __shfl_down":      # an in-file overload with width 32: 32-lane segments on purpose
        assert diags == []
    elif case not in ("missing step", "width argument", "macro"):
        assert [d.row for d in diags] == [4] and diags[0].fix is None, diags    # still reported, at the 16


# HeCBench dpid (issue 15): one 32-thread group per pixel; WSIZE is also in TSIZE, the pixels per block the host's
# grid is computed from. `PX`'s `TX / WSIZE` is a true CP102 (at 16 lanes threads 16..31 would name the next
# block's pixels while the grid still covers 4 per block): no fix through the macro, and the kernel is refused.
DPID = """#define THREADS 128
#define WSIZE 32
#define TSIZE (THREADS / WSIZE)
#define TX threadIdx.x
#define PX (blockIdx.x * TSIZE + (TX / WSIZE))
#define WTHREAD (TX % WSIZE)
__device__ float warp_sum(float v) {
  for (int o = 16; o > 0; o /= 2) v += __shfl_down_sync(0xffffffff, v, o);
  return v;
}
__global__ void guidance(const float *in, float *out, int w, int per) {
  if (PX >= w) return;
  float s = 0.f;
  for (int i = WTHREAD; i < per; i += WSIZE) s += in[PX * per + i];
  s = warp_sum(s);
  if (WTHREAD == 0) out[PX] = s;
}
void run(const float *in, float *out, int w, int per) {
  guidance<<<(w + TSIZE - 1) / TSIZE, THREADS>>>(in, out, w, per);
}
"""


def test_cp102_in_a_macro_that_also_sets_the_grid_is_true_and_refused(tmp_path):
    from porter.translate.api import translate_file
    ds = [d for d in lint_source(SourceFile("t.cu", DPID), enabled={"CP102"}).diagnostics if d.code == "CP102"]
    at12 = [d for d in ds if d.row == 12]
    assert len(at12) == 1 and at12[0].message.startswith("`PX` assumes a warp of 32 lanes when computing a warp id")
    out = fix_source(SourceFile("t.cu", DPID), enabled={"CP102"})
    assert "(TX / WSIZE)" in out.text                  # the macro is not rewritten (its 32 is the grid's too)
    p = tmp_path / "dpid.cu"
    p.write_text(DPID)
    res = translate_file(str(p), "glsl", validate=False)
    assert "guidance" in res.failed_kernels and not res.shaders
    d = [d for d in res.diagnostics if d.code == "CP102" and "kernel `guidance` not translated" in d.message]
    assert len(d) == 1 and "CP102 at line 12 is not fixed" in d[0].message


# a bitmap of 32-bit words next to warp code: `t % 32` kept in `bitLane`, only a shift count of the word read at
# `t / 32`, is a bit position (bmf-style bit matrices). The fix rewrote it to `% warpSize` (its name says lane):
# at 64 lanes it read bits 32..63 of a 32-bit word. The lane and warp ids of the same kernel are still fixed.
BITMAP = """__global__ void k(const unsigned *bits, float *out) {
  int t = blockIdx.x * blockDim.x + threadIdx.x;
  int lane = threadIdx.x % 32;
  int warp = threadIdx.x / 32;
  int word = t / 32;
  int bitLane = t % 32;
  float v = (float)((bits[word] >> bitLane) & 1u);
  v += __shfl_down_sync(0xffffffff, v, 1);
  if (lane == 0) out[warp] = v;
}
"""


def test_cp102_bitmap_pair_is_not_a_lane_and_true_lanes_are_still_fixed():
    ds = [d for d in lint_source(SourceFile("t.cu", BITMAP), enabled={"CP102"}).diagnostics if d.code == "CP102"]
    assert sorted((d.row, d.fix is not None and d.fix.applicability.name == "SAFE") for d in ds) == \
        [(3, True), (4, True)]
    out = _fix(BITMAP, "CP102")
    assert out.fixed == {"CP102": 2}
    assert out.text == BITMAP.replace("threadIdx.x % 32", "threadIdx.x % warpSize") \
        .replace("threadIdx.x / 32", "threadIdx.x / warpSize")
    assert "t / 32" in out.text and "t % 32" in out.text


def test_cp102_lane_used_as_a_shift_count_of_a_ballot_is_still_a_lane():
    src = BITMAP.replace("(bits[word] >> bitLane)", "(__ballot_sync(0xffffffff, t < 7) >> bitLane)")
    ds = [d for d in lint_source(SourceFile("t.cu", src), enabled={"CP102"}).diagnostics if d.code == "CP102"]
    assert sorted(d.row for d in ds) == [3, 4, 5, 6]

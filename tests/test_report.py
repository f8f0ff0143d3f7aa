"""`cuport report`: occupancy of the seed SGEMM and transposes on the four targets, against numbers computed by hand.

Register counts are fixed to what the compilers reported on this project's machines (nvcc 13.0 for sm_90:
sgemm_optimized 120, transpose_padded 26, transpose_naive_tile 25; hipcc (ROCm 5.2) without launch bounds:
sgemm 128 VGPRs on gfx90a (capped, 6 spilled) and 94 on gfx1030, transpose_padded 8 and 7), so the tests do not
depend on a compiler being installed. The sm_90 results were checked with cudaOccupancyMaxActiveBlocksPerMultiprocessor
on an H100: sgemm 2 blocks/SM (16 of 64 warps), both transposes 8 blocks/SM (64 of 64)."""
import json
import os
import shutil

import pytest

from porter import report
from porter.report import TARGETS, Registers, occupancy

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SGEMM = os.path.join(ROOT, "examples", "sgemm", "sgemm_optimized.cu")
PADDED = os.path.join(ROOT, "examples", "transpose", "transpose_padded.cu")
NAIVE = os.path.join(ROOT, "examples", "transpose", "transpose_naive_tile.cu")


def occ(target, threads, shared, regs, **kw):
    return occupancy(TARGETS[target], threads, shared, Registers(regs, "given", **kw))


# --- hand-computed occupancy ------------------------------------------------------------------------------------
# sgemm_optimized: 16 x 16 = 256 threads, As + Bs = 2 x 8 x 129 x 4 = 8256 B of static shared memory.

def test_sgemm_sm90():
    o = occ("sm_90", 256, 8256, 120)
    # warps: 64 / 8 = 8; shared: 233472 / roundup(8256 + 1024, 128) = 233472 / 9344 = 24;
    # registers: 120 * 32 = 3840 per warp; 16384 / 3840 = 4 warps per sub-partition, x 4 = 16 warps -> 2 blocks
    assert o.limits == {"waves": 8, "blocks": 32, "shared": 24, "registers": 2}
    assert (o.blocks, o.waves, o.max_waves) == (2, 16, 64) and o.percent == 25.0
    assert o.limited_by == ["registers"]


def test_sgemm_gfx90a():
    o = occ("gfx90a", 256, 8256, 128)
    # waves: 32 / 4 = 8; block slots 16; LDS: 65536 / roundup(8256, 512) = 65536 / 8704 = 7;
    # VGPRs: 512 / 128 = 4 waves per SIMD, x 4 SIMDs = 16 waves -> 4 blocks
    assert o.limits == {"waves": 8, "blocks": 16, "shared": 7, "registers": 4}
    assert (o.blocks, o.waves, o.max_waves) == (4, 16, 32) and o.percent == 50.0
    assert o.limited_by == ["registers"]


def test_sgemm_gfx1030():
    o = occ("gfx1030", 256, 8256, 94)
    # wave32: 8 waves per block; 64 / 8 = 8; LDS: 131072 / 8704 = 15;
    # VGPRs: roundup(94, 16) = 96, 1024 / 96 = 10 waves per SIMD, x 4 = 40 waves -> 5 blocks
    assert o.limits == {"waves": 8, "blocks": 32, "shared": 15, "registers": 5}
    assert (o.blocks, o.waves, o.max_waves) == (5, 40, 64) and o.percent == 62.5
    assert o.limited_by == ["registers"]


def test_sgemm_vulkan():
    o = occ("vulkan", 256, 8256, 120)
    assert o.limits == {"waves": 8, "blocks": 32, "shared": 24, "registers": 2}
    assert (o.blocks, o.percent, o.fits) == (2, 25.0, True)


# transpose_padded: 32 x 8 = 256 threads, tile[32][33] = 4224 B.

def test_transpose_padded_all_targets():
    o = occ("sm_90", 256, 4224, 26)
    # 26 * 32 = 832 -> 1024 per warp, 16 per sub-partition -> 64 warps -> 8 blocks; shared 233472 / 5248 = 44
    assert o.limits == {"waves": 8, "blocks": 32, "shared": 44, "registers": 8}
    assert (o.blocks, o.percent, o.limited_by) == (8, 100.0, ["waves", "registers"])
    o = occ("gfx90a", 256, 4224, 8)
    # LDS 65536 / 4608 = 14; VGPRs 512 / 8 = 64 -> capped at 8 waves per SIMD -> 32 waves -> 8 blocks
    assert o.limits == {"waves": 8, "blocks": 16, "shared": 14, "registers": 8}
    assert (o.blocks, o.percent) == (8, 100.0)
    o = occ("gfx1030", 256, 4224, 7)
    # 7 -> 16 VGPRs allocated, 1024 / 16 = 64 -> capped at 16 per SIMD -> 64 waves; LDS 131072 / 4608 = 28
    assert o.limits == {"waves": 8, "blocks": 32, "shared": 28, "registers": 8}
    assert (o.blocks, o.percent) == (8, 100.0)
    o = occ("vulkan", 256, 4224, 26)
    assert (o.blocks, o.percent) == (8, 100.0)


def test_transpose_naive_all_targets():
    # tile[32][32] = 4096 B: shared 233472 / roundup(4096 + 1024, 128) = 45 on the SM, 65536 / 4096 = 16 per CU
    assert occ("sm_90", 256, 4096, 25).limits["shared"] == 45
    assert occ("sm_90", 256, 4096, 25).percent == 100.0
    assert occ("gfx90a", 256, 4096, 8).limits["shared"] == 16
    assert occ("gfx1030", 256, 4096, 7).limits["shared"] == 32
    assert occ("vulkan", 256, 4096, 25).blocks == 8


def test_limits_that_do_not_fit():
    o = occ("gfx90a", 256, 70000, 32)                 # over 64 KiB of LDS per work-group
    assert not o.fits and o.blocks == 0 and "shared" in o.limited_by
    o = occ("vulkan", 256, 60000, 32)                 # over NVIDIA Vulkan's 48 KiB per work-group
    assert not o.fits and o.blocks == 0
    assert occ("sm_90", 256, 60000, 32).fits          # CUDA allows it with the opt-in
    assert occ("sm_90", 1024, 0, 255).blocks == 0     # 255 * 32 -> 8192 per warp x 32 warps > 65536


def test_single_wave_blocks_and_sgprs_on_gfx90a():
    o = occ("gfx90a", 64, 0, 16)                      # one wave per work-group: no barrier, 32 slots
    assert o.limits["blocks"] == 32 and o.blocks == 32
    o = occ("gfx90a", 256, 0, 16, sgprs=104)          # more than 100 SGPRs: 7 waves per SIMD
    assert o.limits["registers"] == 7


# --- the report on the example files ----------------------------------------------------------------------------

def test_report_sgemm_and_transpose_shapes_and_shared():
    rep = report.kernel_reports(SGEMM, ["sm_90", "gfx90a", "gfx1030", "vulkan"], registers="default")
    k = rep["kernels"][0]
    assert k["kernel"] == "sgemm_optimized"
    assert k["block"]["dims"] == [16, 16, 1] and k["block"]["source"] == "launch site" and k["block"]["line"] == 114
    assert k["shared"]["static"] == 8256
    assert set(k["targets"]) == {"sm_90", "gfx90a", "gfx1030", "vulkan"}
    assert all(e["registers"]["source"] == "default" for e in k["targets"].values())
    assert any("assumed 32 per thread" in a for a in rep["assumptions"])
    rep = report.kernel_reports(PADDED, ["sm_90", "gfx90a", "gfx1030", "vulkan"], registers="26")
    k = rep["kernels"][0]
    assert k["block"]["dims"] == [32, 8, 1] and k["shared"]["static"] == 4224
    assert k["targets"]["sm_90"]["blocks"] == 8 and k["targets"]["sm_90"]["occupancy"] == 100.0


def test_report_given_registers_match_hand_computation():
    rep = report.kernel_reports(SGEMM, ["sm_90", "vulkan"], registers="120")
    t = rep["kernels"][0]["targets"]
    assert (t["sm_90"]["blocks"], t["sm_90"]["occupancy"], t["sm_90"]["limited_by"]) == (2, 25.0, ["registers"])
    assert t["vulkan"]["blocks"] == 2


def test_cli_json_and_table(capsys):
    from porter.cli import main
    assert main(["report", "--no-compile", "--format", "json", "--arch", "sm_90,gfx90a", NAIVE]) == 0
    data = json.loads(capsys.readouterr().out)
    k = data["kernels"][0]
    assert k["kernel"] == "transpose_naive_tile" and set(k["targets"]) == {"sm_90", "gfx90a"}
    assert main(["report", "--no-compile", "--arch", "sm_90,gfx90a,gfx1030,vulkan", SGEMM]) == 0
    out = capsys.readouterr().out
    assert "block (16, 16) = 256 threads" in out and "8256 B static" in out
    assert "limited by" in out and "formula:" in out
    assert main(["report", "--arch", "sm_75", SGEMM]) == 2


def test_unknown_shape_is_assumed_and_said(tmp_path):
    f = tmp_path / "k.cu"
    f.write_text("__global__ void k(float *x) { __shared__ float s[64]; s[threadIdx.x] = x[0]; }\n")
    rep = report.kernel_reports(str(f), ["gfx90a"], registers="default")
    k = rep["kernels"][0]
    assert k["block"]["assumed"] and k["block"]["threads"] == report.ASSUMED_THREADS
    assert any("256 threads" in a for a in rep["assumptions"])


NVCC_OUT = """ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function '_Z15sgemm_optimizedPKfS0_Pfiii' for 'sm_90'
ptxas info    : Function properties for _Z15sgemm_optimizedPKfS0_Pfiii
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 120 registers, used 1 barriers, 8256 bytes smem
"""

HIPCC_OUT = """k.hip:24:1: remark: Function Name: _Z15sgemm_optimizedPKfS0_Pfiii [-Rpass-analysis=kernel-resource-usage]
k.hip:24:1: remark:     SGPRs: 30 [-Rpass-analysis=kernel-resource-usage]
k.hip:24:1: remark:     VGPRs: 128 [-Rpass-analysis=kernel-resource-usage]
k.hip:24:1: remark:     AGPRs: 0 [-Rpass-analysis=kernel-resource-usage]
k.hip:24:1: remark:     ScratchSize [bytes/lane]: 28 [-Rpass-analysis=kernel-resource-usage]
k.hip:24:1: remark:     Occupancy [waves/SIMD]: 4 [-Rpass-analysis=kernel-resource-usage]
k.hip:24:1: remark:     VGPRs Spill: 6 [-Rpass-analysis=kernel-resource-usage]
k.hip:24:1: remark:     LDS Size [bytes/block]: 8256 [-Rpass-analysis=kernel-resource-usage]
"""


def test_compiler_output_parsers():
    r = report.parse_nvcc(NVCC_OUT)["sgemm_optimized"]
    assert (r.count, r.source, r.spills) == (120, "nvcc", 0)
    r = report.parse_hipcc(HIPCC_OUT)["sgemm_optimized"]
    assert (r.count, r.sgprs, r.spills, r.compiler_occupancy, r.lds) == (128, 30, 6, 4, 8256)
    # the compiler's own waves/SIMD agrees with the formula for this register-limited case
    assert occupancy(TARGETS["gfx90a"], 256, 8256, r).waves // 4 == r.compiler_occupancy


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")
def test_registers_from_nvcc():
    rep = report.kernel_reports(SGEMM, ["sm_90", "vulkan"], registers="compile")
    t = rep["kernels"][0]["targets"]
    assert t["sm_90"]["registers"]["source"] == "nvcc" and t["sm_90"]["registers"]["count"] > 64
    assert t["vulkan"]["registers"]["source"] == "nvcc sm_90, proxy"

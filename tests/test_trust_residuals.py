"""Issue 10 residual trust bugs: each translation is right or refused with a named diagnostic.

1. wave64: a lane-indexed `s[32]` becomes `s[64]` in HIP (refused when a macro writes it), CP104 on the CUDA
   source; per-warp arrays indexed by `/ warpSize` stay as they are.
2. CP102 fixes a 32 automatically only with evidence it is the warp size; tile coordinates are left alone.
3. dynamic per-warp shared memory sized on the host for 32-lane warps: GLSL / OpenCL size it for their
   narrowest subgroup; HIP (fewer warps) keeps it, CP105 info.
4. kernels named like OpenCL built-ins are renamed (manifest entry_point); GLSL names never hold `__`.
5. `translate` exits 1 whenever a printed diagnostic is an error.
6. a literal inside a macro expansion is named after the macro only when it is the macro's whole body."""
import json
import os
import re
import subprocess
import sys

import pytest

from porter.lint.checker import fix_source, lint_source
from porter.source import SourceFile
from porter.translate.kernel import validate as V
from porter.translate.api import translate_file

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIX = os.path.join(ROOT, "tests", "fixtures", "trust")


def fixture(name):
    return os.path.join(FIX, name)


def read(name):
    with open(fixture(name), encoding="utf-8") as fh:
        return fh.read()


def cli(*args, cwd=ROOT):
    return subprocess.run([sys.executable, "-m", "porter", *args], capture_output=True, text=True, cwd=cwd,
                          timeout=600)


def rows(diags, code):
    return sorted((d.row, d.severity) for d in diags if d.code == code)


# --------------------------------------------------------------------------- 1. lane-indexed s[32] on wave64

def test_lint_flags_lane_indexed_32_slot_array_even_with_warpsize():
    res = lint_source(SourceFile("l.cu", read("lane_arrays.cu")), enabled={"CP104"})
    got = [(d.row, d.message) for d in res.diagnostics]
    assert [r for r, _ in got] == [2, 9, 15]
    assert "one slot per lane" in got[0][1] and "`lane` (`threadIdx.x % warpSize`)" in got[0][1]
    assert "lanes 32..63" in got[1][1]
    assert "per-warp shared array `part[256 / 32]`" in got[2][1]


def test_lint_leaves_warp_indexed_32_slot_array_alone():
    src = ("__global__ void k(const float *in, float *out) {\n"
           "  __shared__ float partial[32];\n"
           "  int wid = threadIdx.x / warpSize;\n"
           "  float v = __shfl_down_sync(__activemask(), in[threadIdx.x], 1);\n"
           "  if (threadIdx.x % warpSize == 0) partial[wid] = v;\n"
           "  __syncthreads();\n"
           "  out[0] = partial[0];\n}\n")
    assert [d.code for d in lint_source(SourceFile("n.cu", src), enabled={"CP104"}).diagnostics] == []


def test_hip_sizes_lane_arrays_for_wave64_and_keeps_per_warp_arrays():
    res = translate_file(fixture("lane_arrays.cu"), "hip")
    assert res.text.count("__shared__ float s[64];") == 2 and "float s[32]" not in res.text
    assert "__shared__ float part[256 / 32];" in res.text          # fewer warps on wave64: unchanged
    assert rows(res.diagnostics, "CP104") == [(2, "info"), (9, "info"), (15, "info")]
    assert not res.extra.get("refused")


def test_hip_cli_exit_0_for_the_sized_file(tmp_path):
    out = tmp_path / "o.hip"
    p = cli("translate", "--to", "hip", fixture("lane_arrays.cu"), "-o", str(out))
    assert p.returncode == 0, p.stderr
    assert "float s[64];" in out.read_text()


def test_hip_refuses_a_lane_array_a_macro_declares(tmp_path):
    res = translate_file(fixture("lane_macro_dim.cu"), "hip")
    assert "macro `LANE_SLOTS`" in res.extra["refused"]
    d = [d for d in res.diagnostics if d.code == "CP104" and d.severity == "error"]
    assert [(x.row, x.column) for x in d] == [(3, 5)]
    out = tmp_path / "o.hip"
    p = cli("translate", "--to", "hip", fixture("lane_macro_dim.cu"), "-o", str(out))
    assert p.returncode == 1 and "CP104" in p.stderr and not out.exists()


def test_plain_hip_translation_resizes_nothing():
    res = translate_file(fixture("lane_arrays.cu"), "hip", portability_fixes=False)
    assert "float s[64]" not in res.text and res.text.count("float s[32];") == 2


def test_glsl_sizes_lane_arrays_for_the_widest_subgroup_with_no_error():
    res = translate_file(fixture("lane_arrays.cu"), "glsl")
    assert "shared float s[128];" in res.shaders["k"] and "shared float s[128];" in res.shaders["k2"]
    assert all(sev == "info" for _r, sev in rows(res.diagnostics, "CP104")), res.diagnostics


# --------------------------------------------------------------------------- 2. CP102 needs warp evidence

def _cp102(text):
    return {(d.row, d.column): (d.fix.applicability.value if d.fix else None)
            for d in lint_source(SourceFile("t.cu", text), enabled={"CP102"}).diagnostics}


def test_cp102_tile_coordinates_without_warp_code_are_not_findings():
    got = _cp102(read("tile_vs_warp.cu"))
    assert not any(r < 17 for r, _c in got), got                   # transpose_tile and tile_rows
    assert got == {(21, 7): "safe", (21, 35): "safe", (27, 14): "safe", (32, 11): "unsafe"}


def test_cp102_fix_leaves_tiles_and_unproven_values_untouched():
    text = read("tile_vs_warp.cu")
    out = fix_source(SourceFile("t.cu", text), enabled={"CP102", "CP000"})
    lines = out.text.splitlines()
    assert lines[:16] == text.splitlines()[:16]                    # tile kernels: byte for byte
    assert lines[20] == "  if (threadIdx.x % warpSize == 0) part[threadIdx.x / warpSize] = v;"
    assert lines[26] == "  int lane = threadIdx.x % warpSize;"
    assert lines[31] == "  int q = threadIdx.x / 32;"                  # no evidence: unsafe, not applied
    assert out.fixed == {"CP102": 3}
    unsafe = fix_source(SourceFile("t.cu", text), enabled={"CP102", "CP000"}, unsafe=True)
    assert unsafe.text.splitlines()[31] == "  int q = threadIdx.x / warpSize;"
    assert unsafe.text.splitlines()[:16] == text.splitlines()[:16]


def test_cp102_tile_in_warp_code_is_reported_with_an_unsafe_fix():
    src = ("__global__ void k(const float *in, float *out) {\n"
           "  __shared__ float t[8][32];\n"
           "  t[threadIdx.x / 32][threadIdx.x % 32] = __shfl_xor_sync(~0u, in[threadIdx.x], 1);\n"
           "  out[threadIdx.x] = t[0][0];\n}\n")
    assert _cp102(src) == {(3, 5): "unsafe", (3, 23): "unsafe"}


def test_cp102_names_and_intrinsic_arguments_are_evidence():
    src = ("#define WARP_SIZE 32\n"
           "__device__ int laneId() { return threadIdx.x & 31; }\n"
           "__global__ void k(int *o) {\n"
           "  int a = threadIdx.x % WARP_SIZE;\n"
           "  int b = threadIdx.x / 32;\n"
           "  o[threadIdx.x] = a + b + laneId();\n}\n")
    assert _cp102(src) == {(2, 34): "safe", (4, 11): "safe", (5, 11): "unsafe"}


# --------------------------------------------------------------------------- 3. host-side warps per block

def test_lint_reports_the_host_warp_count_sizing_dynamic_shared_memory():
    res = lint_source(SourceFile("h.cu", read("host_warps.cu")), enabled={"CP105"})
    assert [(d.row, d.column) for d in res.diagnostics] == [(17, 27)]
    assert "dynamic shared memory size" in res.diagnostics[0].message


def test_glsl_sizes_dynamic_per_warp_memory_for_subgroups_of_4():
    res = translate_file(fixture("host_warps.cu"), "glsl")
    sh = res.shaders["block_sum"]
    # 256 threads / 4 lanes = 64 slots, whatever SHARED_BYTES the host passes
    assert "shared float part[(SHARED_BYTES / 4u > 64u ? SHARED_BYTES / 4u : 64u)];" in sh
    pw = res.manifests["block_sum"]["per_warp_arrays"]
    assert pw == [{"array": "part", "dimension": 0, "cuda_size": "launch", "min_size": 64, "indexed_by": "warp id",
                   "min_subgroup_size": 4, "max_block_threads": 256}]
    assert not res.failed_kernels


def test_opencl_gives_dynamic_per_warp_memory_a_slot_per_work_item():
    res = translate_file(fixture("host_warps.cu"), "opencl")
    assert "__local float* part_host)" in res.text and "__local float part[256];" in res.text
    assert not res.failed_kernels


def test_hip_keeps_the_host_warp_count_with_an_info(tmp_path):
    res = translate_file(fixture("host_warps.cu"), "hip")
    assert rows(res.diagnostics, "CP105") == [(17, "info")]
    p = cli("translate", "--to", "hip", fixture("host_warps.cu"), "-o", str(tmp_path / "h.hip"))
    assert p.returncode == 0, p.stderr


def test_hip_block_of_32_threads_stays_an_error(tmp_path):
    src = read("host_warps.cu").replace("int threads = 256;", "int threads = 32;") \
        .replace("<<<n / threads, threads,", "<<<n / 32, 32,")
    (tmp_path / "b.cu").write_text(src)
    p = cli("translate", "--to", "hip", str(tmp_path / "b.cu"), "-o", str(tmp_path / "b.hip"))
    assert p.returncode == 1 and "CP105" in p.stderr


# --------------------------------------------------------------------------- 4. built-in and reserved names

def test_opencl_renames_kernels_named_like_builtins():
    res = translate_file(fixture("builtin_names.cu"), "opencl")
    assert not res.failed_kernels, res.failed_kernels
    kernels = re.findall(r"__kernel void (\w+)\(", res.text)
    assert kernels == ["step_kernel", "clamp_kernel", "dot_kernel"]
    assert {k: m["entry_point"] for k, m in res.manifests.items()} == \
        {"step": "step_kernel", "clamp": "clamp_kernel", "dot": "dot_kernel"}
    assert [(d.row, d.severity) for d in res.diagnostics if "OpenCL C built-in" in d.message] == \
        [(2, "info"), (7, "info"), (8, "info")]
    # `a__b` mangled apart from the code's own `a_b_`
    assert "float a_b_2 = 2.0f;" in res.text and "float a_b_ = 1.0f;" in res.text


def test_opencl_keeps_ordinary_kernel_names():
    res = translate_file(fixture("host_warps.cu"), "opencl")
    assert re.findall(r"__kernel void (\w+)\(", res.text) == ["block_sum"]
    assert res.manifests["block_sum"]["entry_point"] == "block_sum"


@pytest.mark.skipif(V.opencl_context() is None, reason="no OpenCL device (PoCL)")
def test_renamed_opencl_kernels_build_and_are_found():
    import pyopencl as cl
    res = translate_file(fixture("builtin_names.cu"), "opencl")
    ctx = V.opencl_context()
    prg = cl.Program(ctx, res.text).build(options=["-cl-std=CL1.2"])
    for m in res.manifests.values():
        assert getattr(prg, m["entry_point"]) is not None


def test_glsl_names_hold_no_double_underscore():
    res = translate_file(fixture("builtin_names.cu"), "glsl")
    sh = res.shaders["step"]
    assert "buffer in_buf" in sh and "buffer out_buf" in sh
    assert not re.findall(r"\b\w*__\w*\b", re.sub(r"//.*", "", sh))
    assert "float a_b_2 = 2.0;" in sh and "float a_b_ = 1.0;" in sh
    assert not res.failed_kernels


# --------------------------------------------------------------------------- 5. exit codes follow severities

@pytest.mark.parametrize("target", ["hip", "glsl", "opencl"])
def test_translate_exits_1_when_an_error_is_printed(tmp_path, target):
    # the final-warp stage `if (threadIdx.x < 32)` with shuffles: translated, but CP104 stays an error
    p = cli("translate", "--to", target, "--no-validate", fixture("final_stage.cu"), "-o", str(tmp_path / "o"))
    assert p.returncode == 1, p.stderr
    assert re.search(r"final_stage\.cu:3:9: CP104 ", p.stderr)
    p = cli("translate", "--to", target, "--no-validate", "--exit-zero", fixture("final_stage.cu"),
            "-o", str(tmp_path / "o2"))
    assert p.returncode == 0


@pytest.mark.parametrize("target", ["glsl", "opencl"])
def test_translate_exits_0_with_only_info_and_warnings(tmp_path, target):
    p = cli("translate", "--to", target, "--no-validate", fixture("host_warps.cu"), "-o", str(tmp_path / "o"))
    assert p.returncode == 0, p.stderr
    assert "[error]" not in p.stderr


# --------------------------------------------------------------------------- 6. macro constants

def test_literal_inside_a_macro_expression_is_not_named_after_it():
    res = translate_file(fixture("macro_literals.cu"), "glsl", portability_fixes=False)
    sh = res.shaders["k"]
    assert "const int F" not in sh and "const uint F" not in sh and "const int G" not in sh
    assert "const int N = 32;" in sh and "const int P = 16;" in sh
    assert "(gl_LocalInvocationID.x / 32u) + 4u" in sh and "gl_LocalInvocationID.x * 3u + 5u" in sh
    assert "N * 2 + P" in sh


def _verify_backends():
    from porter.verify.backends import opencl, vulkan
    return vulkan.available()[0] and opencl.available()[0]


@pytest.mark.skipif(not _verify_backends(), reason="needs lavapipe and PoCL")
def test_dynamic_per_warp_memory_verifies_at_subgroups_4_8_16_and_opencl():
    p = cli("verify", "--targets", "vulkan,opencl", "--subgroup-sizes", "4,8,16", "--output-format", "json",
            os.path.join(FIX, "host_warps_verify"))
    assert p.returncode == 0, p.stdout + p.stderr
    res = json.loads(p.stdout)
    rows_ = res["results"] if isinstance(res, dict) else res
    got = sorted((r["target"], str(r.get("subgroup_size") or r.get("subgroup") or "-"), r["status"]) for r in rows_)
    assert [s for _t, _g, s in got] == ["pass"] * 4, got

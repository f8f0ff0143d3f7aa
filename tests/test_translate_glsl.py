"""`cuport translate --to glsl`: golden shaders per construct, glslangValidator + spirv-val on every output, the
seed examples, the CP9xx diagnostics of unsupported constructs, and the host manifest.

Golden files live in tests/fixtures/glsl/expected/<fixture>.<kernel>.comp; regenerate them with
CUPORT_UPDATE_GOLDEN=1 after an intended change (and read the diff)."""
import glob
import json
import os
import re
import shutil

import pytest

from porter.translate.api import translate_file
from porter.translate.kernel.validate import validate_glsl

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIX = os.path.join(ROOT, "tests", "fixtures", "glsl")
EXPECTED = os.path.join(FIX, "expected")
EXAMPLES = os.path.join(ROOT, "examples")
UPDATE = os.environ.get("CUPORT_UPDATE_GOLDEN") == "1"
CONSTRUCTS = sorted(f for f in glob.glob(os.path.join(FIX, "*.cu")) if not f.endswith("unsupported.cu"))
HAVE_GLSLANG = shutil.which("glslangValidator") is not None
needs_glslang = pytest.mark.skipif(not HAVE_GLSLANG, reason="glslangValidator not installed (glslang-tools)")

_cache = {}


def glsl(path, **opts):
    key = (path, tuple(sorted((k, tuple(v) if isinstance(v, list) else v) for k, v in opts.items())))
    if key not in _cache:
        _cache[key] = translate_file(path, "glsl", **opts)
    return _cache[key]


def safe(label):
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", label).strip("_")


def assert_valid(text, name):
    v = validate_glsl(text, name)
    assert v.ok, f"{name}: {v.reason}\n{v.log}\n{text}"


# --- golden output per construct, validated -------------------------------------------------------------------

@pytest.mark.parametrize("path", CONSTRUCTS, ids=[os.path.basename(p) for p in CONSTRUCTS])
def test_golden_and_valid(path):
    res = glsl(path)
    stem = os.path.splitext(os.path.basename(path))[0]
    assert not res.failed_kernels, res.failed_kernels
    assert res.shaders
    for label, text in res.shaders.items():
        golden = os.path.join(EXPECTED, f"{stem}.{safe(label)}.comp")
        if UPDATE:
            os.makedirs(EXPECTED, exist_ok=True)
            with open(golden, "w") as fh:
                fh.write(text)
        assert os.path.exists(golden), f"no golden file {golden} (CUPORT_UPDATE_GOLDEN=1 writes it)"
        with open(golden) as fh:
            assert text == fh.read(), f"{label}: output differs from {golden}"
        if HAVE_GLSLANG:
            assert_valid(text, label)


def test_no_stale_golden_files():
    produced = set()
    for path in CONSTRUCTS:
        stem = os.path.splitext(os.path.basename(path))[0]
        produced |= {f"{stem}.{safe(k)}.comp" for k in glsl(path).shaders}
    on_disk = {os.path.basename(f) for f in glob.glob(os.path.join(EXPECTED, "*.comp"))}
    assert on_disk <= produced, f"golden files nothing produces: {sorted(on_disk - produced)}"


# --- constructs, checked in the output ------------------------------------------------------------------------

def shader(path, kernel, **opts):
    res = glsl(os.path.join(FIX, path), **opts)
    assert kernel in res.shaders, res.failed_kernels
    return res.shaders[kernel]


def test_local_size_spec_constants_always_declared():
    for path in CONSTRUCTS:
        for text in glsl(path).shaders.values():
            assert "layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;" in text


def test_pointers_become_buffer_plus_offset():
    s = shader("pointers.cu", "rows")
    assert "int row_off = i * n;" in s
    assert "sums[i] = row_sum(row_off, n);" in s          # specialised on buffer A
    assert "s += A[row_off + j];" in s
    assert "out_[dst_off++] = A[row_off + j] * 2.0;" in s  # *dst++ = ...
    assert "void scale_inplace(int v_off, int n, float a)" in s and "tile[v_off + j] *= a;" in s
    assert "void scale_inplace_v2(inout float v[4], int v_off, int n, float a)" in s
    assert "inout float lo, inout float hi" in s and "lo = min(lo, v[v_off + j]);" in s
    # (block names never hold `__`, reserved in GLSL: `out_` gets `out_buf`)
    assert "readonly buffer A_buf" in s and "writeonly buffer out_buf" in s


def test_thread_indices_and_barriers():
    s = shader("dynamic_shared.cu", "block_sum")
    assert "gl_WorkGroupID.x * gl_WorkGroupSize.x + gl_LocalInvocationID.x" in s
    assert "    barrier();" in s and "memoryBarrierShared" not in s   # barrier() orders shared memory in Vulkan
    assert "layout(constant_id = 3) const uint SHARED_BYTES = 1024u;" in s
    assert "shared float buf[SHARED_BYTES / 4u];" in s


def test_templates_from_launch_explicit_and_define():
    res = glsl(os.path.join(FIX, "templates.cu"))
    assert set(res.shaders) == {"scale", "fill"}
    assert "const int BLOCK = 128;" in res.shaders["scale"] and "float clamp01(float v)" in res.shaders["scale"]
    assert res.manifests["scale"]["template_args"] == {"T": "float", "BLOCK": 128}
    assert "const int N = 64;" in res.shaders["fill"]             # explicit instantiation
    src = "template <int W> __global__ void k(int *o) { o[threadIdx.x] = W; }\n"
    res = translate_file("t.cu", "glsl", text=src, defines=["W=7"])
    assert "const int W = 7;" in res.shaders["k"]
    res = translate_file("t.cu", "glsl", text=src)
    assert "k" in res.failed_kernels and res.diagnostics[0].code == "CP907"


def test_constants_structs_vectors_widths():
    s = shader("constructs.cu", "stencil")
    assert "const int RADIUS = 3;" in s and "const float EPS = 1e-06;" in s
    assert "struct Params\n{\n    float scale;\n    int offset;\n};" in s
    assert "readonly buffer in_buf { vec4 in_[]; };" in s and "int64_t ids[]" in s
    assert "#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require" in s
    assert "float w[7] = float[7](0.05, 0.1, 0.2, 0.3, 0.2, 0.1, 0.05);" in s
    assert "[[unroll]] for (int k = -RADIUS; k <= RADIUS; ++k)" in s
    assert "uint bits = uint(id & 4294967295l);" in s
    assert "vec4 r = vec4(acc, float(c), p.scale, float(k));" in s
    assert "int cuport_rem_int(int a, int b)" in s        # C's % for possibly negative operands


def test_warp_intrinsics_to_subgroup_operations():
    s = shader("warp.cu", "warp_ops")
    for ext in ("basic", "vote", "ballot", "shuffle", "shuffle_relative", "arithmetic"):
        assert f"#extension GL_KHR_shader_subgroup_{ext} : require" in s
    assert "int lane = int(gl_SubgroupInvocationID);" in s and "int warp = int(gl_SubgroupID);" in s
    # the subgroup size is spec constant 4 (the host sets it from the device; 0 falls back to gl_SubgroupSize)
    assert "layout(constant_id = 4) const uint CUPORT_SUBGROUP_SIZE = 0u;" in s
    assert "#define cuport_subgroup_size (CUPORT_SUBGROUP_SIZE != 0u ? CUPORT_SUBGROUP_SIZE : gl_SubgroupSize)" in s
    assert "for (int o = int(cuport_subgroup_size) / 2; o > 0; o /= 2)" in s
    assert "subgroupShuffleXor(v, d)" in s and "((gl_SubgroupInvocationID ^ d) < cuport_subgroup_size) ? r : v" in s
    assert "uvec4 ballot = subgroupBallot(v > 0.5);" in s
    assert "int(subgroupBallotBitCount(ballot))" in s
    assert "subgroupAny(v > 0.99)" in s and "subgroupAll(v >= 0.0)" in s and "subgroupAdd(" in s
    assert "subgroupBarrier();" in s
    assert "32" not in re.sub(r"//.*", "", s)


def test_shuffle_width_wider_than_small_subgroups_runs_on_emulated_warps():
    # width 8 needs subgroups of 8 lanes (Vulkan's can be 4): the kernel runs CUDA's 32-lane warps emulated in
    # shared memory (warp32.py), exact at any subgroup size; no diagnostic, no subgroup contract
    res = glsl(os.path.join(FIX, "warp_width.cu"))
    s = res.shaders["pairs"]
    assert "cuport_w32_shfl_down_float(v, 1u, 2u, 1024u)" in s and "cuport_w32_shfl_xor_float(v, 4u, 8u, 1024u)" in s
    assert "subgroup" not in s.lower().replace("any subgroup", "")
    assert res.manifests["pairs"]["min_subgroup_size"] is None
    assert not [d for d in res.diagnostics if d.code == "CP907"]


def test_atomics():
    res = glsl(os.path.join(FIX, "atomics.cu"))
    s = res.shaders["histogram"]
    assert "atomicAdd(local_bins[cuport_rem_int(b, 64)], 1);" in s
    assert "atomicAdd(sum[0], x[i]);" in s and "#extension GL_EXT_shader_atomic_float : require" in s
    assert "atomicCompSwap(bins[nbins + 1], 0, i);" in s and "atomicAdd(bins[nbins + 2], -1);" in s
    assert "uint cuport_atomicInc_ticket(int i, uint limit)" in s
    assert "shaderBufferFloat32AtomicAdd" in res.manifests["histogram"]["features"]
    cas = translate_file(os.path.join(FIX, "atomics.cu"), "glsl", float_atomics="cas")
    c = cas.shaders["histogram"]
    assert "GL_EXT_shader_atomic_float" not in c and "cuport_atomicAdd_sum(0, x[i])" in c
    assert "buffer sum_u32_buf { uint sum_u32[]; };" in c
    assert cas.manifests["histogram"]["buffers"][3]["binding"] == 3
    if HAVE_GLSLANG:
        assert_valid(c, "histogram_cas")


def test_math_builtins():
    s = shader("math.cu", "math_ops")
    for frag in ("sqrt(abs(a))", "inversesqrt(a * a + 1.0)", "exp(-a)", "cuport_exp_float(a * 0.1)", "fma(a, 2.0, 1.0)", "min(a, 0.5)",
                 "pow(abs(a), 1.5)", "cuport_round_float(a)", "cuport_fmod_float(a, 0.75)", "cuport_atan2_float(a, 2.0)",
                 "a / 3.0", "clamp(a, 0.0, 1.0)", "intBitsToFloat(floatBitsToInt(a))", "int(roundEven(a))",
                 "bitCount(w)", "(31 - findMSB(uint(int(w))))", "(findLSB(int(w)) + 1)", "bitfieldReverse(w)",
                 "isnan(a)"):
        assert frag in s, frag


def test_register_tiled_sgemm_keeps_tiling_and_unrolling():
    res = glsl(os.path.join(EXAMPLES, "sgemm", "sgemm_fixed.cu"))
    s = res.shaders["sgemm_fixed"]
    assert "float accum[8][8];" in s and "float a_reg[8];" in s and "float b_reg[8];" in s
    assert s.count("[[unroll]] for") == 11
    assert "accum[m][n] += a_reg[m] * b_reg[n];" in s
    assert "shared float As[8][132];" in s and "shared float Bs[8][128];" in s
    assert "int c = idx & 7;" in s                        # non-negative over a power of two: a mask
    assert res.manifests["sgemm_fixed"]["local_size"] == [16, 16, 1]


# --- the seed examples -----------------------------------------------------------------------------------------

EXAMPLE_FILES = [("saxpy/saxpy.cu", ()), ("bad_branch/bad_branch.cu", ()), ("hip_reduce/hip_reduce.cu", ()),
                 ("warp_reduce/warp_reduce.cu", ()), ("warp_reduce/warp_reduce_fixed.cu", ()),
                 ("transpose/transpose_naive_tile.cu", ()), ("transpose/transpose_padded.cu", ()),
                 ("matmul_tiled/matmul_tiled.cu", ("TILE_SIZE=16",)),
                 ("matmul_tiled/matmul_tiled.cu", ("TILE_SIZE=32",)),
                 ("sgemm/sgemm_fixed.cu", ()), ("sgemm/sgemm_optimized.cu", ())]


@pytest.mark.parametrize("rel,defines", EXAMPLE_FILES, ids=[f"{r}{'-' + d[0] if d else ''}" for r, d in EXAMPLE_FILES])
def test_examples_translate_and_validate(rel, defines):
    path = os.path.join(EXAMPLES, rel)
    if not os.path.exists(path):
        pytest.skip(f"{rel} not in examples/")
    res = glsl(path, defines=list(defines))
    assert not res.failed_kernels, res.failed_kernels
    assert res.shaders
    for k, text in res.shaders.items():
        if HAVE_GLSLANG:
            assert_valid(text, k)
        json.dumps(res.manifests[k])


def test_hip_reduce_tail_flagged_and_lowered():
    res = glsl(os.path.join(EXAMPLES, "hip_reduce", "hip_reduce.cu"))
    s = res.shaders["hip_reduce"]
    assert "lowered to work-group barriers" in s
    assert "if (tid < 32) cuport_v1 = sdata[tid] + sdata[tid + 32];" in s
    assert "if (tid < 32) sdata[tid] = cuport_v1;" in s
    assert "vsmem" not in s.replace("// vsmem -> sdata", "")
    codes = {(d.code, d.severity) for d in res.diagnostics}
    assert ("CP301", "info") in codes


def test_warp_reduce_to_subgroup_ops_with_remaining_warning():
    res = glsl(os.path.join(EXAMPLES, "warp_reduce", "warp_reduce.cu"))
    s = res.shaders["warp_reduce"]
    assert "subgroupShuffleDown" in s and "int(cuport_subgroup_size) / 2" in s
    assert res.manifests["warp_reduce"]["spec_constants"] == [
        {"id": 4, "name": "CUPORT_SUBGROUP_SIZE", "type": "uint", "default": 0, "value": "subgroup_size"}]
    assert res.extra["fixes_applied"].get("CP103") == 2
    assert any(d.code == "CP104" and "partial[32]" in d.message for d in res.diagnostics)
    fixed = glsl(os.path.join(EXAMPLES, "warp_reduce", "warp_reduce_fixed.cu"))
    assert not [d for d in fixed.diagnostics if d.code.startswith("CP1")]


def test_subgroup_size_loops_are_marked_unroll():
    # The NVIDIA Vulkan driver kept `for (o = sg / 2; o > 0; o /= 2)` a loop (SASS: a back branch per shuffle)
    # where NVRTC unrolls the constant-32 original; [[unroll]] on exactly those loops (docs/performance.md).
    s = shader(os.path.join(EXAMPLES, "warp_reduce", "warp_reduce.cu"), "warp_reduce")
    loops = [ln.strip() for ln in s.splitlines() if re.search(r"\bfor \(", ln)]
    sg_loops = [ln for ln in loops if "int offset = int(cuport_subgroup_size) / 2" in ln]
    assert len(sg_loops) == 2 and all(ln.startswith("[[unroll]] for (") for ln in sg_loops)
    # the warp-fold loop starts at the lane id (not a constant): no hint
    fold = [ln for ln in loops if "cuport_w1" in ln]
    assert fold and not any("[[unroll]]" in ln for ln in fold)
    assert "#extension GL_EXT_control_flow_attributes : require" in s
    from porter.translate.kernel.glsl import GlslTarget
    t = GlslTarget.__new__(GlslTarget)
    sg = "cuport_subgroup_size"
    assert t.implicit_unroll(f"int o = int({sg}) / 2", "o > 0", "o /= 2") == "unroll"
    assert t.implicit_unroll(f"uint m = 1u", f"m < {sg}", "m <<= 1") is None       # no subgroup size at the start
    assert t.implicit_unroll(f"int o = int({sg}) / 2", "o > k", "o /= 2") is None  # bound is a variable
    assert t.implicit_unroll(f"int o = n / {sg}", "o > 0", "o /= 2") is None        # start is a variable
    assert t.implicit_unroll(f"int o = int({sg}) / 2", "o > 0", "o -= 1") is None   # not a halving/doubling step
    # no subgroup loop, no extension
    saxpy = shader(os.path.join(EXAMPLES, "saxpy", "saxpy.cu"), "saxpy")
    assert "[[unroll]]" not in saxpy and "GL_EXT_control_flow_attributes" not in saxpy


def test_transposes_keep_their_tiles():
    a = shader(os.path.join(EXAMPLES, "transpose", "transpose_naive_tile.cu"), "transpose_naive_tile")
    b = shader(os.path.join(EXAMPLES, "transpose", "transpose_padded.cu"), "transpose_padded")
    assert "shared float tile[32][32];" in a and "shared float tile[32][33];" in b


# --- unsupported constructs: a CP9xx diagnostic at the construct, no output for that kernel ---------------------

def _expectations(path):
    out = []
    for row, line in enumerate(open(path).read().splitlines(), 1):
        m = re.search(r'//\s*expect:\s*(CP\d{3})\s*"([^"]*)"', line)
        if m:
            out.append((row, m.group(1), m.group(2)))
    return out


def test_unsupported_constructs_are_diagnosed():
    path = os.path.join(FIX, "unsupported.cu")
    res = glsl(path)
    assert set(res.shaders) == {"k_child", "k_fine"}
    for row, code, frag in _expectations(path):
        hits = [d for d in res.diagnostics if d.row == row and d.code == code and frag in d.message]
        assert hits, f"line {row}: expected {code} '{frag}', got {[(d.row, d.code, d.message) for d in res.diagnostics]}"
        assert hits[0].severity == "error"
    assert len(res.failed_kernels) == len(_expectations(path))


# --- manifest ----------------------------------------------------------------------------------------------------

def test_manifest_saxpy():
    res = glsl(os.path.join(EXAMPLES, "saxpy", "saxpy.cu"))
    m = res.manifests["saxpy"]
    assert m["kernel"] == "saxpy" and m["target"] == "glsl" and m["entry_point"] == "main"
    assert m["params"] == [{"name": "n", "kind": "push", "offset": 0, "type": "int", "size": 4},
                           {"name": "a", "kind": "push", "offset": 4, "type": "float", "size": 4},
                           {"name": "x", "kind": "buffer", "binding": 0, "type": "float"},
                           {"name": "y", "kind": "buffer", "binding": 1, "type": "float"}]
    assert m["buffers"] == [
        {"name": "x", "set": 0, "binding": 0, "type": "float", "elem_size": 4, "access": "readonly", "restrict": False},
        {"name": "y", "set": 0, "binding": 1, "type": "float", "elem_size": 4, "access": "readwrite",
         "restrict": False}]
    assert m["push_constants"] == [{"name": "n", "offset": 0, "type": "int", "size": 4},
                                   {"name": "a", "offset": 4, "type": "float", "size": 4}]
    assert m["push_constant_size"] == 8 and m["uniform_block"] is None
    assert m["local_size"] == [256, 1, 1] and m["local_size_known"] is True
    assert m["local_size_spec_ids"] == [0, 1, 2] and m["spec_constants"] == []
    assert m["dispatch"].startswith("workgroups = CUDA grid")
    assert m["launch"]["grid"] == ["number_of_blocks", "1", "1"]
    assert res.manifests["AddKernel"]["buffers"][0]["access"] == "readwrite"
    assert res.manifests["AddKernel"]["buffers"][1]["access"] == "readonly"


def test_manifest_layouts():
    ds = glsl(os.path.join(FIX, "dynamic_shared.cu")).manifests["block_sum"]
    assert ds["spec_constants"] == [{"id": 3, "name": "SHARED_BYTES", "type": "uint", "default": 1024,
                                     "launch_expr": "256 * sizeof(float)"}]
    assert ds["buffers"][1]["access"] == "writeonly"
    mp = glsl(os.path.join(FIX, "many_params.cu")).manifests["poly"]
    assert mp["push_constants"] == [] and mp["push_constant_size"] == 0
    ub = mp["uniform_block"]
    assert ub["binding"] == 2 and ub["layout"] == "std140" and ub["size"] == 144
    assert [(x["name"], x["offset"]) for x in ub["members"]][-2:] == [("n", 128), ("scale", 136)]
    assert ub["members"][1]["fields"][1] == {"name": "c1", "offset": 20, "type": "float", "size": 4}
    assert "shaderFloat64" in mp["features"]
    cs = glsl(os.path.join(FIX, "constructs.cu")).manifests["stencil"]
    assert [(p["name"], p["offset"]) for p in cs["push_constants"]] == [("p", 0), ("n", 8), ("unused_d", 16)]
    assert cs["push_constants"][0]["fields"] == [{"name": "scale", "offset": 0, "type": "float", "size": 4},
                                                 {"name": "offset", "offset": 4, "type": "int", "size": 4}]
    assert {"shaderInt64", "shaderInt8", "shaderFloat64"} <= set(cs["features"])
    assert cs["buffers"][0]["type"] == "vec4" and cs["buffers"][0]["elem_size"] == 16
    w = glsl(os.path.join(FIX, "warp.cu")).manifests["warp_ops"]
    assert set(w["subgroup_operations"]) == {"basic", "shuffle", "ballot", "vote", "arithmetic", "shuffle_relative"}


def test_bool_and_small_params_are_widened():
    src = ("__global__ void k(float *o, bool flag, unsigned char c, short s) {\n"
           "  o[threadIdx.x] = flag ? (float)c : (float)s; }\n")
    res = translate_file("k.cu", "glsl", text=src)
    s, m = res.shaders["k"], res.manifests["k"]
    assert "const bool flag = pc.flag != 0u;" in s and "const uint8_t c = uint8_t(pc.c);" in s
    assert [(p["name"], p["type"], p["offset"]) for p in m["push_constants"]] == \
        [("flag", "uint", 0), ("c", "uint", 4), ("s", "int", 8)]
    if HAVE_GLSLANG:
        assert_valid(s, "k")


# --- the command line --------------------------------------------------------------------------------------------

def test_cli_writes_shaders_and_manifests(tmp_path, capsys):
    from porter.cli import main
    rc = main(["translate", "--to", "glsl", os.path.join(EXAMPLES, "saxpy", "saxpy.cu"), "-o", str(tmp_path),
               "--manifest", "--kernel", "saxpy"] + (["--validate"] if HAVE_GLSLANG else []))
    assert rc == 0
    assert sorted(os.listdir(tmp_path)) == ["saxpy.comp", "saxpy.json"]
    man = json.loads((tmp_path / "saxpy.json").read_text())
    assert man["kernel"] == "saxpy"
    rc = main(["translate", "--to", "glsl", os.path.join(FIX, "unsupported.cu"), "-q"])
    assert rc == 1
    out = capsys.readouterr().out
    assert "// ---- k_fine.comp ----" in out


def test_warp_sync_tails_lowered_both_forms():
    res = glsl(os.path.join(FIX, "warp_sync_tail.cu"))
    v, s = res.shaders["tail_volatile"], res.shaders["tail_syncwarp"]
    for text in (v, s):
        assert "lowered to work-group barriers" in text and "subgroupBarrier" not in text
    assert "if (tid < 32) cuport_v1 = s[tid] + s[tid + 32];" in v
    assert "if (tid < 32) {\n            p2 = s[tid + 32];\n        }" in s
    assert s.count("barrier();") == 2 + 12


# --- numbers on a Vulkan device (lavapipe on a CPU machine), through the verify stage's host ------------------

def _vulkan_backend():
    try:
        from porter.verify.backends import vulkan as V
    except Exception as exc:       # the verify stage or the `vulkan` package is not there
        pytest.skip(f"Vulkan host not available: {exc}")
    ok, why = V.available()
    if not ok:
        pytest.skip(why)
    try:
        V._context()
    except Exception as exc:
        pytest.skip(f"no Vulkan device: {exc}")
    return V


class _Case:
    def __init__(self, grid, block):
        self.grid, self.block, self.defines = grid, block, {}

    def launch(self, sizes):
        return self.grid, self.block

    def define_flags(self):
        return []


@pytest.mark.slow
def test_numbers_on_vulkan():
    import numpy as np
    V = _vulkan_backend()
    rng = np.random.default_rng(0)

    def run(path, kernel, grid, block, arrays, defines=()):
        res = glsl(path, defines=list(defines))
        return V.run(_Case(grid, block), res.shaders[kernel], res.manifests[kernel], {}, arrays).outputs

    x, y = rng.random(1000, dtype=np.float32), rng.random(1000, dtype=np.float32)
    o = run(os.path.join(EXAMPLES, "saxpy", "saxpy.cu"), "saxpy", (4, 1, 1), (256, 1, 1),
            {"n": np.int32(1000), "a": np.float32(2.0), "x": x, "y": y.copy()})
    np.testing.assert_allclose(o["y"], 2 * x + y, rtol=1e-6)
    x = rng.random(512, dtype=np.float32)
    for k in ("tail_volatile", "tail_syncwarp"):
        o = run(os.path.join(FIX, "warp_sync_tail.cu"), k, (4, 1, 1), (128, 1, 1),
                {"in": x, "out": np.zeros(4, np.float32)})
        np.testing.assert_allclose(o["out"], x.reshape(4, 128).sum(1), rtol=1e-5)
    o = run(os.path.join(EXAMPLES, "warp_reduce", "warp_reduce_fixed.cu"), "warp_reduce_fixed", (2, 1, 1),
            (256, 1, 1), {"in": x, "out": np.zeros(2, np.float32), "n": np.int32(512)})
    np.testing.assert_allclose(o["out"], x.reshape(2, 256).sum(1), rtol=1e-5)
    M, N, K = 130, 260, 70
    A, B = rng.random((M, K), dtype=np.float32), rng.random((K, N), dtype=np.float32)
    o = run(os.path.join(EXAMPLES, "sgemm", "sgemm_fixed.cu"), "sgemm_fixed", ((N + 127) // 128, (M + 127) // 128, 1),
            (16, 16, 1), {"A": A, "B": B, "C": np.zeros((M, N), np.float32), "M": np.int32(M), "N": np.int32(N),
                          "K": np.int32(K)})
    np.testing.assert_allclose(o["C"], A @ B, rtol=1e-4, atol=1e-4)


IF_STORES = r"""
__global__ void k(float *d, int *q, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    if (d[i] > 0.0f) { d[i] = sqrtf(d[i]); } else { d[i] = -1.0f; }   // converted
    if (i % 2) d[i] += 1.0f; else d[i] = 0.0f;                         // compound assignment: kept
    if (i % 3) { q[i] = 1; } else { q[i + 1] = 2; }                    // different elements: kept
    if (i % 5) { q[i] = 1; q[i] = 3; } else { q[i] = 2; }              // two statements: kept
    if (i % 7) q[i] = 1; else if (i % 11) q[i] = 2; else q[i] = 3;     // else-if chain: kept
    if (i % 13) q[i] = 4;                                              // no else: kept
}
"""


def test_if_else_stores_to_one_element_become_one_select(tmp_path):
    """GLSL: `if (c) x = a; else x = b;` -> `x = c ? a : b;` (NVIDIA's Vulkan compiler kept two predicated
    stores: bad_branch 0.94x CUDA before, docs/performance.md); only for one plain assignment per branch to the
    same side-effect-free lvalue."""
    p = tmp_path / "ifs.cu"
    p.write_text(IF_STORES)
    res = glsl(str(p))
    text = res.shaders["k"]
    assert_valid(text, "ifs")
    assert "d[i] = d[i] > 0.0 ? sqrt(d[i]) : -1.0;" in text
    assert text.count(" ? ") == 1
    assert "d[i] += 1.0;" in text and "q[i + 1] = 2;" in text and "q[i] = 3;" in text and "q[i] = 4;" in text
    assert res.shaders and translate_file(str(p), "opencl").text.count(" ? ") == 0    # OpenCL: as written


def test_nonnegative_pow2_division_is_a_shift():
    # the NVIDIA Vulkan driver emitted the signed-division fix-up for `idx / 8` and kept it in the SGEMM's k loop
    # (docs/performance.md, round 4); provably non-negative values get a shift / mask, the rest keep C's meaning
    s = shader("pow2_index.cu", "pow2_index")
    assert "int row = tid >> 3;" in s and "int col = tid & 7;" in s
    assert "int back = (tid - shift) / 4;" in s                      # may be negative: rounds toward zero
    assert "int wrap = cuport_rem_int(tid - shift, 4);" in s          # may be negative: C's remainder
    assert "int per = 256 / TILE;" in s                               # a constant expression stays as written
    ocl = translate_file(os.path.join(FIX, "pow2_index.cu"), "opencl").text
    assert "int row = tid >> 3;" in ocl and "int col = tid & 7;" in ocl and "int back = (tid - shift) / 4;" in ocl
    sgemm = shader(os.path.join(EXAMPLES, "sgemm", "sgemm_fixed.cu"), "sgemm_fixed")
    assert "int r = idx >> 3;" in sgemm and "int c = idx & 7;" in sgemm

"""`cuport translate --to opencl`: golden files per construct, a PoCL build of every output, numeric runs of
the seed examples on PoCL against NumPy, the CP9xx diagnostics, and the OpenCL manifest.

Golden files: tests/fixtures/glsl/expected/<fixture>.cl (CUPORT_UPDATE_GOLDEN=1 rewrites them)."""
import glob
import os
import re

import numpy as np
import pytest

from porter.translate.api import translate_file
from porter.translate.kernel.validate import opencl_context, validate_opencl

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIX = os.path.join(ROOT, "tests", "fixtures", "glsl")
EXPECTED = os.path.join(FIX, "expected")
EXAMPLES = os.path.join(ROOT, "examples")
UPDATE = os.environ.get("CUPORT_UPDATE_GOLDEN") == "1"
CONSTRUCTS = sorted(f for f in glob.glob(os.path.join(FIX, "*.cu")) if not f.endswith("unsupported.cu"))
# fixtures with a kernel OpenCL 1.2 cannot express without sub-groups (warp_width.cu's shuffles of a width run on
# CUDA's 32-lane warps emulated in local memory: warp32.py)
OPENCL_FAILS = {}

try:
    import pyopencl as cl
    HAVE_CL = opencl_context() is not None
except ImportError:
    cl = None
    HAVE_CL = False
needs_cl = pytest.mark.skipif(not HAVE_CL, reason="no OpenCL platform (pip install pyopencl pocl-binary-distribution)")

_cache = {}


def ocl(path, **opts):
    key = (path, tuple(sorted((k, tuple(v) if isinstance(v, list) else v) for k, v in opts.items())))
    if key not in _cache:
        _cache[key] = translate_file(path, "opencl", **opts)
    return _cache[key]


def assert_builds(text, name):
    v = validate_opencl(text)
    assert v.ok, f"{name}: {v.reason}\n{v.log}\n{text}"


@pytest.mark.parametrize("path", CONSTRUCTS, ids=[os.path.basename(p) for p in CONSTRUCTS])
def test_golden_and_builds(path):
    res = ocl(path)
    base = os.path.basename(path)
    assert set(res.failed_kernels) == OPENCL_FAILS.get(base, set()), res.failed_kernels
    if not res.manifests:
        assert res.text == ""
        return
    golden = os.path.join(EXPECTED, os.path.splitext(base)[0] + ".cl")
    if UPDATE:
        os.makedirs(EXPECTED, exist_ok=True)
        with open(golden, "w") as fh:
            fh.write(res.text)
    assert os.path.exists(golden), f"no golden file {golden} (CUPORT_UPDATE_GOLDEN=1 writes it)"
    with open(golden) as fh:
        assert res.text == fh.read(), f"output differs from {golden}"
    if HAVE_CL:
        assert_builds(res.text, base)


EXAMPLE_FILES = [("saxpy/saxpy.cu", ()), ("bad_branch/bad_branch.cu", ()), ("hip_reduce/hip_reduce.cu", ()),
                 ("warp_reduce/warp_reduce.cu", ()), ("warp_reduce/warp_reduce_fixed.cu", ()),
                 ("transpose/transpose_naive_tile.cu", ()), ("transpose/transpose_padded.cu", ()),
                 ("matmul_tiled/matmul_tiled.cu", ("TILE_SIZE=16",)),
                 ("matmul_tiled/matmul_tiled.cu", ("TILE_SIZE=32",)),
                 ("sgemm/sgemm_fixed.cu", ()), ("sgemm/sgemm_optimized.cu", ())]


@pytest.mark.parametrize("rel,defines", EXAMPLE_FILES, ids=[f"{r}{'-' + d[0] if d else ''}" for r, d in EXAMPLE_FILES])
def test_examples_translate_and_build(rel, defines):
    path = os.path.join(EXAMPLES, rel)
    if not os.path.exists(path):
        pytest.skip(f"{rel} not in examples/")
    res = ocl(path, defines=list(defines))
    assert not res.failed_kernels, res.failed_kernels
    assert res.text and res.manifests
    if HAVE_CL:
        assert_builds(res.text, rel)


def test_opencl_spelling():
    res = ocl(os.path.join(FIX, "pointers.cu"))
    t = res.text
    assert "__kernel void rows(" in t and "__global const float* A," in t
    assert "__local float tile[64];" in t
    assert "__global const float* row = A + i * n;" in t
    assert "void scale_inplace_l(__local float* v, int n, float a)" in t
    assert "void min_max_ppp(const float* v, int n, float* lo, float* hi)" in t
    assert "barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);" in t
    h = ocl(os.path.join(EXAMPLES, "hip_reduce", "hip_reduce.cu")).text
    assert "barrier(CLK_LOCAL_MEM_FENCE);" in h and "lowered to work-group barriers" in h
    w = ocl(os.path.join(EXAMPLES, "warp_reduce", "warp_reduce_fixed.cu"))
    assert "#define CUPORT_WARP_SIZE 1" in w.text
    assert any(d.code == "CP907" and "one-lane warps" in d.message and d.severity == "warning"
               for d in w.diagnostics)
    assert w.manifests["warp_reduce_fixed"]["warp_size"] == 1


def test_subgroups_khr_mode():
    res = translate_file(os.path.join(EXAMPLES, "warp_reduce", "warp_reduce_fixed.cu"), "opencl", subgroups="khr")
    t = res.text
    assert not res.failed_kernels
    assert "#pragma OPENCL EXTENSION cl_khr_subgroups : enable" in t
    assert "sub_group_shuffle_down(v, d)" in t and "get_sub_group_local_id()" in t
    assert res.manifests["warp_reduce_fixed"]["extensions"] == ["cl_khr_subgroups", "cl_khr_subgroup_shuffle_relative"]
    res = translate_file(os.path.join(FIX, "warp.cu"), "opencl", subgroups="khr")
    assert "uint4" in res.failed_kernels["warp_ops"]      # ballots need cl_khr_subgroup_ballot's masks


def _expectations(path):
    out = []
    for row, line in enumerate(open(path).read().splitlines(), 1):
        m = re.search(r'//\s*expect:\s*(CP\d{3})\s*"([^"]*)"', line)
        if m:
            out.append((row, m.group(1), m.group(2)))
    return out


def test_unsupported_constructs_are_diagnosed():
    path = os.path.join(FIX, "unsupported.cu")
    res = ocl(path)
    # a struct whose float3 member GLSL cannot place as CUDA does: OpenCL packs it (CUDA's offsets, opencl_vec3)
    assert set(res.manifests) == {"k_child", "k_fine", "k_float3_buffer"}
    assert "    cuport_packed_float3 b;\n    float4 c;\n} Mixed;" in res.text
    assert "k_recursion" not in res.text and "__kernel void k_fine(" in res.text
    for row, code, frag in _expectations(path):
        if frag == "Mixed":
            continue
        hits = [d for d in res.diagnostics if d.row == row and d.code == code and frag in d.message]
        assert hits, f"line {row}: expected {code} '{frag}'"
    if HAVE_CL:
        assert_builds(res.text, "unsupported.cu")


def test_manifest():
    m = ocl(os.path.join(EXAMPLES, "saxpy", "saxpy.cu")).manifests["saxpy"]
    assert m["target"] == "opencl" and m["entry_point"] == "saxpy"
    assert m["params"] == [{"name": "n", "kind": "scalar", "index": 0, "type": "int", "size": 4},
                           {"name": "a", "kind": "scalar", "index": 1, "type": "float", "size": 4},
                           {"name": "x", "kind": "buffer", "index": 2, "type": "float", "elem_size": 4,
                            "access": "readonly"},
                           {"name": "y", "kind": "buffer", "index": 3, "type": "float", "elem_size": 4,
                            "access": "readwrite"}]
    assert m["local_size"] == [256, 1, 1] and m["dispatch"].startswith("global size = CUDA grid * block")
    d = ocl(os.path.join(FIX, "dynamic_shared.cu")).manifests["block_sum"]
    assert d["local_args"] == [{"name": "buf", "index": 3, "elem_size": 4, "bytes": 1024,
                                "launch_expr": "256 * sizeof(float)"}]
    assert d["params"][-1] == {"name": "buf", "kind": "local", "index": 3, "type": "float"}


# --- numbers: PoCL against NumPy ----------------------------------------------------------------------------------

def run(path, kernel, grid, block, arrays, defines=()):
    res = ocl(path, defines=list(defines))
    assert kernel in res.manifests, res.failed_kernels
    m = res.manifests[kernel]
    ctx = opencl_context()
    queue = cl.CommandQueue(ctx)
    prg = cl.Program(ctx, res.text).build()
    k = getattr(prg, m["entry_point"])
    bufs, args = {}, []
    types = {"int": np.int32, "uint": np.uint32, "float": np.float32, "double": np.float64, "long": np.int64}
    for p in m["params"]:
        if p["kind"] == "buffer":
            b = cl.Buffer(ctx, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR, hostbuf=arrays[p["name"]])
            bufs[p["name"]] = b
            args.append(b)
        elif p["kind"] == "scalar":
            args.append(types[p["type"]](arrays[p["name"]]))
        else:
            la = next(x for x in m["local_args"] if x["name"] == p["name"])
            args.append(cl.LocalMemory(la["bytes"]))
    k(queue, tuple(g * b for g, b in zip(grid, block)), tuple(block), *args)
    out = {}
    for name, b in bufs.items():
        o = np.empty_like(arrays[name])
        cl.enqueue_copy(queue, o, b)
        out[name] = o
    return out


@needs_cl
def test_saxpy_on_pocl_matches_numpy():
    rng = np.random.default_rng(0)
    n = 1000
    x, y = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
    o = run(os.path.join(EXAMPLES, "saxpy", "saxpy.cu"), "saxpy", (4, 1, 1), (256, 1, 1),
            {"n": n, "a": 2.5, "x": x, "y": y.copy()})
    np.testing.assert_allclose(o["y"], 2.5 * x + y, rtol=1e-6)
    o = run(os.path.join(EXAMPLES, "saxpy", "saxpy.cu"), "AddKernel", (4, 1, 1), (256, 1, 1),
            {"a": y[:1024].copy() if n >= 1024 else np.resize(y, 1024), "b": np.resize(x, 1024)})
    np.testing.assert_allclose(o["a"], np.resize(y, 1024) + np.resize(x, 1024), rtol=1e-6)


@needs_cl
@pytest.mark.slow
def test_examples_on_pocl_match_numpy():
    rng = np.random.default_rng(1)
    M, N, K = 130, 260, 70
    A, B = rng.random((M, K), dtype=np.float32), rng.random((K, N), dtype=np.float32)
    o = run(os.path.join(EXAMPLES, "sgemm", "sgemm_fixed.cu"), "sgemm_fixed", ((N + 127) // 128, (M + 127) // 128, 1),
            (16, 16, 1), {"A": A, "B": B, "C": np.zeros((M, N), np.float32), "M": M, "N": N, "K": K})
    np.testing.assert_allclose(o["C"], A @ B, rtol=1e-4, atol=1e-4)
    for tile in (16, 32):
        M, N, K = 70, 50, 45
        A, B = rng.random((M, K), dtype=np.float32), rng.random((K, N), dtype=np.float32)
        o = run(os.path.join(EXAMPLES, "matmul_tiled", "matmul_tiled.cu"), "matmul_tiled",
                ((N + tile - 1) // tile, (M + tile - 1) // tile, 1), (tile, tile, 1),
                {"A": A, "B": B, "C": np.zeros((M, N), np.float32), "M": M, "N": N, "K": K}, [f"TILE_SIZE={tile}"])
        np.testing.assert_allclose(o["C"], A @ B, rtol=1e-4, atol=1e-4)
    x = rng.random(256, dtype=np.float32)
    o = run(os.path.join(EXAMPLES, "hip_reduce", "hip_reduce.cu"), "hip_reduce", (1, 1, 1), (256, 1, 1),
            {"data": x, "result": np.zeros(1, np.float32), "n": 256})
    np.testing.assert_allclose(o["result"][0], x.sum(), rtol=1e-5)
    x = rng.random(2048, dtype=np.float32)
    o = run(os.path.join(EXAMPLES, "warp_reduce", "warp_reduce_fixed.cu"), "warp_reduce_fixed", (8, 1, 1),
            (256, 1, 1), {"in": x, "out": np.zeros(8, np.float32), "n": 2048})
    np.testing.assert_allclose(o["out"], x.reshape(8, 256).sum(1), rtol=1e-5)
    w, h = 100, 70
    a = rng.random((h, w), dtype=np.float32)
    o = run(os.path.join(EXAMPLES, "transpose", "transpose_padded.cu"), "transpose_padded",
            ((w + 31) // 32, (h + 31) // 32, 1), (32, 8, 1),
            {"odata": np.zeros((w, h), np.float32), "idata": a, "width": w, "height": h})
    np.testing.assert_array_equal(o["odata"], a.T)
    x = rng.random(1000, dtype=np.float32)
    o = run(os.path.join(FIX, "dynamic_shared.cu"), "block_sum", (4, 1, 1), (256, 1, 1),
            {"in": x, "out": np.zeros(4, np.float32), "n": 1000})
    np.testing.assert_allclose(o["out"], np.resize(np.concatenate([x, np.zeros(24, np.float32)]), 1024)
                               .reshape(4, 256).sum(1), rtol=1e-5)


def test_cli_opencl(tmp_path):
    from porter.cli import main
    out = tmp_path / "saxpy.cl"
    rc = main(["translate", "--to", "opencl", os.path.join(EXAMPLES, "saxpy", "saxpy.cu"), "-o", str(out),
               "--manifest"] + (["--validate"] if HAVE_CL else []))
    assert rc == 0
    assert "__kernel void saxpy(" in out.read_text()
    assert (tmp_path / "saxpy.json").exists()

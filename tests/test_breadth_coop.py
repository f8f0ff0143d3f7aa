"""Issue 14 (cooperative groups, CUB): thread blocks, 32-thread tiles, cg::reduce, coalesced groups (OpenCL) and
cub::BlockReduce / WarpReduce are lowered (porter/translate/kernel/coop.py) and verified; what cannot be right at
every subgroup size is refused with CP907 at its line. Fixtures: tests/fixtures/breadth/coop/."""
import os

import pytest

from porter.translate.api import translate_file
from porter.translate.kernel.validate import tool
from kernel_helpers import expected_runs, failures, ran_keys, run_spec

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIX = os.path.join(ROOT, "tests", "fixtures", "breadth", "coop")
COOP = os.path.join(FIX, "coop.cu")
LIN = "(gl_LocalInvocationID.x + gl_LocalInvocationID.y * gl_WorkGroupSize.x + gl_LocalInvocationID.z * " \
      "gl_WorkGroupSize.x * gl_WorkGroupSize.y)"


def test_glsl_spellings():
    res = translate_file(COOP, "glsl", validate=tool("glslangValidator") is not None)
    assert set(res.shaders) == {"tile_tree", "row_stats", "block_cub", "warp_cub", "compact", "filter2"}, \
        res.failed_kernels
    t = res.shaders["tile_tree"]
    # a tile of 32 is a warp: its size is the subgroup size, its sync a subgroup barrier; the block's a barrier
    assert f"tmp[{LIN}] = v;" in t and "subgroupBarrier();" in t and "barrier();" in t
    assert "cuport_subgroup_size" in t and "32" not in t.split("void main")[1]
    r = res.shaders["row_stats"]
    assert "subgroupMax(m)" in r and "subgroupAdd(s)" in r and "cuport_shfl_down_float(t, uint(o))" in r
    b = res.shaders["block_cub"]
    assert "shared float cuport_cub_float_256[256];" in b
    assert "cuport_block_reduce_add_float_256(v, 256)" in b and "cuport_block_reduce_add_float_256(v, valid)" in b
    assert b.count("float cuport_block_reduce_max_float_256(float v, int nv)") == 1      # cub::Max and MaxOp
    assert "GL_KHR_shader_subgroup" not in b and "gl_Subgroup" not in b     # no subgroup op in the tree
    w = res.shaders["warp_cub"]
    assert "subgroupAdd(v)" in w and "subgroupMin(v)" in w and "cuport_cub" not in w
    # a coalesced group is one ballot, taken where coalesced_threads() runs; rank, size and shfl read that mask
    # (a ballot at each use sees only the threads active there: inside `if (rank == 0)` the size came out 1)
    for k in ("compact", "filter2"):
        c = res.shaders[k]
        assert c.count("subgroupBallot(true)") == 1, k
        assert "subgroupBallotBitCount(cuport_ballot_" in c and "subgroupBallotExclusiveBitCount(cuport_ballot_" in c
        assert "subgroupShuffle(warp_res, subgroupBallotFindLSB(cuport_ballot_g))" in res.shaders["compact"]
    f = res.shaders["filter2"]
    assert "subgroupShuffle(res, subgroupBallotFindLSB(cuport_ballot_active))" in f
    assert "subgroupShuffle(i, cuport_coalesced_lane(cuport_ballot_active, " in f      # rank k: the k-th member
    assert f.index("subgroupBallot(true)") < f.index("if (subgroupBallotExclusiveBitCount")
    assert not [d for d in res.diagnostics if d.code == "CP907" and "coalesced" in d.message]
    if res.extra.get("validation"):
        assert all(v["ok"] for v in res.extra["validation"].values())


def test_opencl_spellings():
    res = translate_file(COOP, "opencl", validate=False)
    assert not res.failed_kernels, res.failed_kernels
    text = res.text
    assert "__local float cuport_cub_float_256[256];" in text
    assert "cuport_block_reduce_max_float_256(v, 256, cuport_cub_float_256)" in text
    assert "barrier(CLK_LOCAL_MEM_FENCE);" in text
    # one-lane warps: a coalesced group is the thread alone (rank 0, size 1, shfl from any rank its own value)
    assert "atomic_add(&seen[" in text and "0u" in text
    assert "int j = i;" in text and "atomic_add(&next_hit[j], 1)" in text


REFUSED = {"grid_barrier": (9, "grid-wide barrier"), "small_tile": (15, "a tile of 16 threads"),
           "user_op": (25, "`cg::reduce` with a lambda"),
           "adjacent": (34, "SubtractLeftPartialTile` with 5 arguments"), "warp16": (41, "16 logical lanes"),
           # a coalesced group is kept only in the variable it is made in: passed on, synced, or never kept
           "coalesced_param": (50, "uses the group `g` (a coalesced group)"),
           "coalesced_sync": (57, "`sync` of a coalesced group"),
           "coalesced_inline": (61, "a coalesced group held in `cg::coalesced_threads()`"),
           # user operations cuport cannot copy or values it cannot shuffle
           "stateful_op": (68, "the functor `Scaled{2}`: cuport lowers stateless functors"),
           "array_field": (76, "a user operation of `Vec2` values")}


def test_user_reduce_and_adjacent_spellings():
    """cg::reduce with the user's operation is CUDA's butterfly over the subgroup calling the translated op (a
    struct shuffled field by field, a functor's operator() copied as a function); BlockAdjacentDifference is a
    shared array of each thread's edge item between barriers, its size the template's block."""
    src = os.path.join(FIX, "coopops.cu")
    res = translate_file(src, "glsl", validate=tool("glslangValidator") is not None)
    assert set(res.shaders) == {"row_softmax_stats", "warp_product", "adjacent"}, res.failed_kernels
    r = res.shaders["row_softmax_stats"]
    assert "for (int cuport_m = int(cuport_subgroup_size) / 2; cuport_m > 0; cuport_m >>= 1)" in r
    assert "cuport_o.maxval = cuport_shfl_xor_float(v.maxval, uint(cuport_m));" in r
    assert "cuport_o.sum = cuport_shfl_xor_float(v.sum, uint(cuport_m));" in r and "v = merge(v, cuport_o);" in r
    w = res.shaders["warp_product"]
    assert "= cuport_op_" in w and "(v, cuport_o);" in w and "return a * b;" in w
    a = res.shaders["adjacent"]
    assert a.count("shared int cuport_adjacent_") == 1 and "[128];" in a         # one array for the six calls
    assert a.count("barrier();") >= 14
    ocl = translate_file(src, "opencl", validate=False)
    assert not ocl.failed_kernels, ocl.failed_kernels
    # one-lane warps: warpSize is 1, the butterfly runs no step and each value is its own reduction
    assert "__local int cuport_adjacent_" in ocl.text and "barrier(CLK_LOCAL_MEM_FENCE);" in ocl.text


@pytest.mark.parametrize("target", ["glsl", "opencl"])
def test_refusals_at_the_construct(target):
    res = translate_file(os.path.join(FIX, "refused.cu"), target, validate=False)
    assert set(res.failed_kernels) == set(REFUSED)
    for k, (row, what) in REFUSED.items():
        d = next(d for d in res.diagnostics if d.code == "CP907" and f"`{k}`" in d.message)
        assert d.row == row and what in d.message, (k, d.row, d.message)
    assert not res.shaders and "void" not in (res.text or "")


def test_fixture_matches_numpy_on_lavapipe_and_pocl(monkeypatch):
    results = run_spec(monkeypatch, os.path.join(FIX, "verify_spec.py"))
    assert not failures(results), failures(results)
    assert ran_keys(results) == expected_runs(("tile_tree", "row_stats", "block_cub", "warp_cub", "compact", "filter2",
                                               "row_softmax_stats", "warp_product", "adjacent"))

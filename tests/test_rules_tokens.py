"""Rules that read tokens where the parser lacks declarations (CP902, CP903, CP904), and CP906's target gating."""
from porter.config import Settings
from porter.lint.checker import lint_source
from porter.source import SourceFile


def _lint(text, codes, settings=None):
    res = lint_source(SourceFile("t.cu", text), settings=settings, enabled=set(codes), ignore_noqa=True)
    return [(d.code, d.row, d.message) for d in res.diagnostics]


def test_wmma_and_tiles_through_namespace_aliases():
    # `namespace cg = cooperative_groups;` and `using namespace nvcuda;` do not parse without the CUDA headers
    # (CP000); the token-based rules still see the API
    text = ("#include <mma.h>\n#include <cooperative_groups.h>\nusing namespace nvcuda;\n"
            "namespace cg = cooperative_groups;\n"
            "__global__ void k(const half *a, float *out) {\n"
            "  wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> fa;\n"
            "  wmma::load_matrix_sync(fa, a, 16);\n"
            "  auto tile = cg::tiled_partition<64>(cg::this_thread_block());\n"
            "  out[threadIdx.x] = 0.f;\n}\n")
    got = _lint(text, {"CP902", "CP903"})
    assert [(c, r) for c, r, _ in got] == [("CP902", 6), ("CP902", 7), ("CP903", 8)]
    assert "rocwmma::load_matrix_sync" in got[1][2]


def test_bare_wmma_names_after_using_directive():
    text = ("using namespace nvcuda::wmma;\n"
            "__global__ void k(float *c) {\n  fragment<accumulator, 16, 16, 16, float> acc;\n"
            "  fill_fragment(acc, 0.0f);\n  store_matrix_sync(c, acc, 16, mem_row_major);\n}\n")
    assert [(c, r) for c, r, _ in _lint(text, {"CP902"})] == [("CP902", 3), ("CP902", 4), ("CP902", 5)]


def test_vulkan_optional_features_only_for_vulkan_targets():
    text = "__global__ void k(float *s, double *d) { atomicAdd(s, 1.0f); d[threadIdx.x] *= 0.5; }\n"
    assert {c for c, _, _ in _lint(text, {"CP906"})} == {"CP906"}                    # default: vulkan included
    cuda_amd = Settings(target_arch=["sm_90", "gfx90a"])
    assert _lint(text, {"CP906"}, cuda_amd) == []
    vk = Settings(target_arch=["vulkan"])
    assert len(_lint(text, {"CP906"}, vk)) == 2

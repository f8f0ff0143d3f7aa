"""Issue 14 item 7: `atomicAdd((half2*)&out[m], v)` into a buffer of halves (lut-gemm's _nqmv, half2_atomics.py),
with m proven even (induction.py for a loop counter, a launch contract for a kernel parameter). Fixture:
tests/fixtures/half/half2_atomic.cu, checked against NumPy on lavapipe (subgroups 4/8/16) and PoCL; an offset
not provably even, and every other half2 atomic, stay refused at their line."""
import json
import os

import pytest

from porter.translate.api import translate_file
from porter.verify.backends import CompileError, check_launch_contract
import kernel_helpers as helpers
from kernel_helpers import assert_fixture_valid, assert_spec_passes, outputs, refusal

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIX = os.path.join(ROOT, "tests", "fixtures", "half")
KERNELS = {"pair_add", "pair_old"}


def translate_text(tmp_path, target, code):
    return helpers.translate_text(tmp_path, target, "#include <cuda_fp16.h>\n" + code)


@pytest.mark.parametrize("target", ["glsl", "opencl"])
def test_fixture_translates_every_kernel_to_valid_output(target):
    assert_fixture_valid(os.path.join(FIX, "half2_atomic.cu"), target, KERNELS)


def test_fixture_matches_numpy_on_lavapipe_and_pocl(monkeypatch):
    assert_spec_passes(monkeypatch, os.path.join(FIX, "half2_atomic_spec.py"), KERNELS)


def test_fixture_has_no_race_or_out_of_bounds_access_under_oclgrind():
    # eight groups contend for each pair: the word's first read is atomic too (a plain `*p` races with the other
    # groups' compare-and-swap, which Oclgrind reports)
    from porter.verify.backends import oclgrind
    ok, why = oclgrind.available()
    if not ok:
        pytest.skip(why)
    from porter.verify.runner import Runner
    from porter.verify.spec import load_spec
    results = Runner(["oclgrind"], jobs=1).run([c for c in load_spec(os.path.join(FIX, "half2_atomic_spec.py"))
                                                if c.kernel == "pair_add"])
    ran = [r for r in results if r.status != "skipped"]
    assert ran and all(r.status == "pass" for r in ran), [(r.variant, r.status, r.message) for r in results]


def test_spellings():
    g = translate_file(os.path.join(FIX, "half2_atomic.cu"), "glsl", validate=False).shaders["pair_add"]
    # a uint view of the half buffer's binding; the word is the pair's half offset / 2
    assert "layout(std430, set = 0, binding = 0) buffer out_u32_buf { uint out__u32[]; };" in g
    assert "uint prev = atomicCompSwap(out__u32[w], old, packFloat2x16(f + v));" in g
    assert "uint old = atomicOr(out__u32[w], 0u);" in g
    assert "cuport_atomicAdd_h2_out_(m / 2, f16vec2(in_[m - off], in_[m - off + 1]));" in g
    o = translate_file(os.path.join(FIX, "half2_atomic.cu"), "opencl", validate=False).text
    assert "cuport_atomicAdd_h2_global((volatile __global uint*)(out + m), (float2)(vload_half(m - off, in), " \
           "vload_half(m - off + 1, in)));" in o
    assert "vstore_half2_rte(cuport_rh2(f + v), 0, (__private half *)&w);" in o
    assert "uint old = atomic_or(p, 0u);" in o


@pytest.mark.parametrize("target", ["glsl", "opencl"])
def test_the_parameter_that_makes_the_offset_even_is_a_launch_contract(target):
    res = translate_file(os.path.join(FIX, "half2_atomic.cu"), target, validate=False)
    man = res.manifests["pair_add"]
    man = json.loads(man) if isinstance(man, str) else man
    assert {"param": "off", "multiple_of": 2} in man["requires"]
    assert not (json.loads(res.manifests["pair_old"]) if isinstance(res.manifests["pair_old"], str)
                else res.manifests["pair_old"]).get("requires")
    check_launch_contract(man, (64, 1, 1), {"off": 6})
    with pytest.raises(CompileError, match="`off` to be a multiple of 2"):
        check_launch_contract(man, (64, 1, 1), {"off": 5})      # an odd one: the pairs straddle words


K = "__global__ void k(__half *out, int tile) {\n"
V = "__halves2half2(__float2half(1.f), __float2half(2.f))"
REFUSED = [
    # the offset not provably even: a thread index alone, an odd literal, a counter stepped by ++ or through a
    # reference, a counter whose step is odd
    (K + "  int m = blockIdx.x * tile + threadIdx.x;\n  atomicAdd((half2*)&out[m], " + V + ");\n}\n", 4, 13),
    (K + "  atomicAdd((half2*)&out[1], " + V + ");\n}\n", 3, 13),
    (K + "  for (int m = 0; m < tile; m++)\n    atomicAdd((half2*)&out[2 * m + m], " + V + ");\n}\n", 4, 15),
    (K + "  for (int m = 0; m < tile; m++)\n    atomicAdd((half2*)&out[m], " + V + ");\n}\n", 4, 15),
    ("__device__ void bump(int &x) { x += 1; }\n" + K +
     "  int m = 2 * threadIdx.x;\n  bump(m);\n  atomicAdd((half2*)&out[m], " + V + ");\n}\n", 6, 13),
    (K + "  for (int m = 2 * threadIdx.x; m < tile; m += 3)\n    atomicAdd((half2*)&out[m], " + V + ");\n}\n", 4, 15),
]


@pytest.mark.parametrize("target", ["glsl", "opencl"])
@pytest.mark.parametrize("code,line,col", REFUSED)
def test_offset_not_provably_even_is_refused_at_the_cast(tmp_path, target, code, line, col):
    res = translate_text(tmp_path, target, code)
    assert "k" not in outputs(res)
    d = refusal(res)
    assert (d.row, d.column) == (line, col), (d.row, d.column, d.message)
    assert "in `atomicAdd` (its offset into the half buffer is not provably even" in d.message, d.message


@pytest.mark.parametrize("target", ["glsl", "opencl"])
def test_other_half2_atomics_stay_refused(tmp_path, target):
    # a half2 pair in shared memory: no buffer word to compare-and-swap (the existing refusal)
    res = translate_text(tmp_path, target, "__global__ void k(__half *out) {\n  __shared__ __half s[64];\n"
                         "  s[threadIdx.x] = out[threadIdx.x];\n  __syncthreads();\n"
                         "  atomicAdd((half2*)&s[2 * threadIdx.x], " + V + ");\n"
                         "  out[threadIdx.x] = s[threadIdx.x];\n}\n")
    assert "k" not in outputs(res)
    assert refusal(res).row == 6, refusal(res).message


@pytest.mark.parametrize("target", ["glsl", "opencl"])
def test_a_counter_read_through_a_const_reference_is_still_proven_even(tmp_path, target):
    # `twice(m)` binds `const int &` to m: it cannot write it, so m keeps its even value (a plain `int &` cannot
    # be trusted: the REFUSED case with `bump(m)`)
    res = translate_text(tmp_path, target, "__device__ int twice(const int &x) { return 2 * x; }\n" + K +
                         "  int m = 2 * threadIdx.x;\n  out[1] = __float2half((float)twice(m));\n"
                         "  atomicAdd((half2*)&out[m], " + V + ");\n}\n")
    assert "k" in outputs(res), [d.message for d in res.diagnostics]

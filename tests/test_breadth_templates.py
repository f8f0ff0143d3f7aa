"""Issue 14, items 1 and 4: template kernels instantiated from what the program does (host-template tables,
dispatch-macro constants, enable_if overloads, deduction through host parameters, launches in another input),
and directory / multi-file runs where a header another input includes is translated with its includer.
Fixtures: tests/fixtures/breadth/templates/ (verify_spec.py runs on lavapipe 4/8/16 and PoCL)."""
import os
import re
import subprocess
import sys

import pytest

from porter.translate.api import translate_file
from porter.translate.kernel.validate import opencl_context, tool

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIX = os.path.join(ROOT, "tests", "fixtures", "breadth", "templates")
TARGETS = ("glsl", "opencl")
EXPORTS = {"keyed<1, 32>", "keyed<40, 64>"}
PROGRAM_KERNELS = {"tile_sum<2>", "tile_sum<4>", "gated<float, int, 2, 3>", "gated<float, int, 4, 3>",
                   "bump<real_t>", "bump<int>", "gather_rows"}


def fx(*parts):
    return os.path.join(FIX, *parts)


def cuport(*args):
    env = dict(os.environ, PYTHONPATH=ROOT)
    env.pop("CUPORT_TEST_REJECT", None)
    return subprocess.run([sys.executable, "-m", "porter", *args], env=env, capture_output=True, text=True,
                          timeout=300)


def can_validate(target):
    return tool("glslangValidator") is not None if target == "glsl" else opencl_context() is not None


@pytest.mark.parametrize("target", TARGETS)
def test_host_code_instantiates_template_kernels(target):
    res = translate_file(fx("programs.cu"), target, validate=can_validate(target))
    assert not res.failed_kernels, res.failed_kernels
    assert set(res.manifests) == PROGRAM_KERNELS
    if target == "glsl":
        assert set(res.shaders) == PROGRAM_KERNELS
    if can_validate(target):
        assert all(v["ok"] for v in res.extra["validation"].values()), res.extra["validation"]
    args = {k: m["template_args"] for k, m in res.manifests.items() if "template_args" in m}
    assert args["tile_sum<4>"] == {"TILE": 4}                      # `run_tile<2 * 2>` in the table
    assert args["gated<float, int, 4, 3>"] == {"scalar_t": "float", "acc_t": "int", "WIDTH": 4, "OFFSET": 3}
    assert args["gather_rows"] == {"DataT": "float", "IdxT": "int"}


@pytest.mark.parametrize("target", TARGETS)
def test_overload_chosen_by_enable_if(target):
    res = translate_file(fx("programs.cu"), target, validate=False)
    text = res.shaders["bump<real_t>"] if target == "glsl" else res.text
    if target == "opencl":
        text = text[text.index("bump_real_t("):text.index("bump_int(")]
    # real_t is float: the first overload (* 2 + 1), never the `+ 3` of the other one
    assert "2.0f" in text or "2.0" in text
    assert "+ 3" not in text and "+ (float)3" not in text


@pytest.mark.parametrize("target", TARGETS)
def test_never_guessed_template_arguments_are_refused(target):
    res = translate_file(fx("refused.cu"), target, validate=False)
    got = {(d.code, d.row, d.kernel if hasattr(d, "kernel") else None) for d in res.diagnostics
           if d.severity == "error"}
    rows = {(d.code, d.row) for d in res.diagnostics if d.severity == "error"}
    assert rows == {("CP907", 6), ("CP907", 15), ("CP907", 30)}, got
    assert set(res.failed_kernels) == {"twice", "unused_tile", "blocked"}
    assert "never instantiated" in res.failed_kernels["twice"]
    assert not res.manifests


def test_program_fixture_matches_numpy_on_lavapipe_and_pocl(monkeypatch):
    icd = "/usr/share/vulkan/icd.d/lvp_icd.x86_64.json"
    if not os.path.exists(icd) or opencl_context() is None or tool("glslangValidator") is None:
        pytest.skip("lavapipe / PoCL / glslang not available")
    monkeypatch.setenv("VK_ICD_FILENAMES", icd)
    from porter.verify.runner import Runner
    from porter.verify.spec import load_spec
    results = Runner(["vulkan", "opencl"], subgroups=[4, 8, 16], jobs=1).run(load_spec(fx("verify_spec.py")))
    ran = {(r.case, r.target, r.variant): r.status for r in results}
    assert set(ran.values()) == {"pass"}, [(r.case, r.target, r.variant, r.message) for r in results]
    cases = {c for c, _t, _v in ran}
    # + exports.cu, spread and unflatten (a struct by value) of struct_templates.cu, fp16_operators.cu
    assert cases == PROGRAM_KERNELS | EXPORTS | {"spread", "unflatten<long long>", "poly<float>", "poly<int>",
                                                 "row_sums<int>", "row_sums<float>"}
    for c in cases:
        assert {(c, "vulkan", "sg4"), (c, "vulkan", "sg8"), (c, "vulkan", "sg16"), (c, "opencl", "-")} <= set(ran)


@pytest.mark.parametrize("target", TARGETS)
def test_template_launched_from_another_input(target, tmp_path):
    r = cuport("translate", "--to", target, "--no-validate", fx("multi"), "-o", str(tmp_path))
    assert r.returncode == 0, r.stderr
    got = sorted(os.listdir(tmp_path))
    if target == "glsl":
        # shift<3> and shift<2 * 4>; `shift<K>` in the never-called `later` gives none
        assert got == ["kernels.shift_3.comp", "kernels.shift_8.comp"]
    else:
        assert got == ["kernels.cl"]
        text = (tmp_path / "kernels.cl").read_text()
        assert re.findall(r"__kernel void (\w+)\(", text) == ["shift_3", "shift_8"]
    # the file alone: no other input launches it, so it is refused (never guessed)
    r = cuport("translate", "--to", target, "--no-validate", fx("multi", "kernels.cu"), "-o", str(tmp_path / "x"))
    assert r.returncode == 1 and "kernels.cu:3:17: CP907 [error] template kernel `shift` is never instantiated" \
        in r.stderr, r.stderr


@pytest.mark.parametrize("target", TARGETS)
def test_included_input_is_translated_with_its_includer(target, tmp_path):
    r = cuport("translate", "--to", target, "--no-validate", fx("inc"), "-o", str(tmp_path))
    assert r.returncode == 0, r.stderr
    assert "sort_kernels.cuh is translated with" in r.stderr and "inc/main.cu, which includes it" in r.stderr
    assert sorted(os.listdir(tmp_path)) == (["clamp_to.comp"] if target == "glsl" else ["main.cl"])
    # alone (the header given by itself) it still fails: SENTINEL is main.cu's, and nothing instantiates it
    r = cuport("translate", "--to", target, "--no-validate", fx("inc", "sort_kernels.cuh"), "-o", str(tmp_path / "x"))
    assert r.returncode == 1


@pytest.mark.parametrize("target", TARGETS)
def test_conditionally_included_header_is_not_left_out(target, tmp_path):
    r = cuport("translate", "--to", target, "--no-validate", fx("inc_cond"), "-o", str(tmp_path / "a"))
    assert r.returncode == 0, r.stderr
    assert "gpu.cuh: kernels it holds are not in what includes it as compiled" in r.stderr
    assert sorted(os.listdir(tmp_path / "a")) == (["zero.comp"] if target == "glsl" else ["gpu.cl"])
    # with the macro the program is built with, main.cu sees the kernel: no second translation
    r = cuport("translate", "--to", target, "--no-validate", "-D", "USE_GPU", fx("inc_cond"), "-o", str(tmp_path / "b"))
    assert r.returncode == 0, r.stderr
    assert "translated on its own" not in r.stderr
    assert sorted(os.listdir(tmp_path / "b")) == (["zero.comp"] if target == "glsl" else ["main.cl"])


def test_included_inputs_graph(tmp_path):
    from porter.translate.kernel.units import included_inputs
    (tmp_path / "a.cu").write_text('#include "b.cuh"\n')
    (tmp_path / "b.cuh").write_text('#include "c.cuh"\n')
    (tmp_path / "c.cuh").write_text("\n")
    (tmp_path / "x.cuh").write_text('#include "y.cuh"\n')      # a cycle with no root stays as it is
    (tmp_path / "y.cuh").write_text('#include "x.cuh"\n')
    files = [str(tmp_path / n) for n in ("a.cu", "b.cuh", "c.cuh", "x.cuh", "y.cuh")]
    got = included_inputs(files)
    assert got == {files[1]: files[0], files[2]: files[0]}


def test_integer_constant_expressions():
    from porter.translate.templates import _int_expr
    assert _int_expr(None, "32 * 2") == 64
    assert _int_expr(None, "(7 + 31) / 32") == 1
    assert _int_expr(None, "-7 / 2") == -3 and _int_expr(None, "-7 % 2") == -1      # C truncates
    assert _int_expr(None, "1 << 4") == 16 and _int_expr(None, "0x10u") == 16
    assert _int_expr(None, "N * 2") is None and _int_expr(None, "2 ** 3") is None
    assert _int_expr(None, "1 / 0") is None and _int_expr(None, "sizeof(float)") is None


@pytest.mark.parametrize("target", TARGETS)
def test_plain_struct_templates_become_plain_structs(target):
    res = translate_file(fx("struct_templates.cu"), target, validate=can_validate(target))
    text = res.shaders["spread"] if target == "glsl" else res.text
    assert "Pair_f32" in text and "Dims_i32_2" in text
    if can_validate(target):
        assert all(v["ok"] for v in res.extra["validation"].values()), res.extra["validation"]
    # nonzero's shape: a struct template by value, `auto` locals of its dependent members
    assert set(res.manifests) == {"spread", "unflatten"} and not res.failed_kernels
    if target == "opencl":
        assert "Dims_i64_2 dims," in text and "long inner = dims.sizes[1];" in text
    else:
        # an array member keeps C's stride in std430 (was refused: arrays were never compared with C's layout)
        assert "layout(offset = 0) Dims_i64_2 dims;" in res.shaders["unflatten"]


@pytest.mark.parametrize("target", TARGETS)
def test_struct_templates_with_pointers(target):
    res = translate_file(fx("refused_structs.cu"), target, validate=False)
    # a struct template with a constructor is translated now (its default constructor runs: not uninitialised);
    # a kernel parameter of a struct template holding a pointer is flattened (struct_params.py)
    assert set(res.manifests) == {"use_rec", "fill_view"}, [d.message for d in res.diagnostics]
    text = res.shaders["use_rec"] if target == "glsl" else res.text
    assert ("Rec_f32 r = Rec_f32(0.0, 0u);" if target == "glsl" else "Rec_f32 r = (Rec_f32){0.0f, 0u};") in text
    assert not [d for d in res.diagnostics if d.severity == "error"]
    params = res.manifests["fill_view"]["params"]
    assert [(p["name"], p["kind"], p["type"]) for p in params][0] == ("v_data", "buffer", "float")
    assert params[1]["name"] == "v_n" and params[1]["field_of"] == {"param": "v", "field": "n"}


@pytest.mark.parametrize("target", TARGETS)
def test_macro_written_instantiations_and_host_computed_arguments(target):
    res = translate_file(fx("exports.cu"), target, validate=can_validate(target))
    assert not res.failed_kernels and set(res.manifests) == EXPORTS
    assert res.manifests["keyed<40, 64>"]["template_args"] == {"K": 40, "BS": 64}
    if can_validate(target):
        assert all(v["ok"] for v in res.extra["validation"].values()), res.extra["validation"]


@pytest.mark.parametrize("target", TARGETS)
def test_unresolved_operator_calls_on_scalar_instances(target):
    # with cuda_fp16.h's operator overloads visible, `beta * A[i] + alpha` and `-beta` on T are CALL_EXPRs of
    # unresolved operators in the template (ert's block_stride was refused as "`` declared outside this file")
    res = translate_file(fx("fp16_operators.cu"), target, validate=can_validate(target))
    assert not res.failed_kernels and set(res.manifests) == {"poly<float>", "poly<int>", "row_sums<float>",
                                                             "row_sums<int>"}
    text = res.shaders["poly<int>"] if target == "glsl" else res.text
    assert "((beta) = (beta) * (A[i]) + (alpha));" in text
    assert "A[i] = -beta;" in text and "if (!(beta < A[i]) && beta != 0)" in text
    # `x += ...` on a `const T*` (logprob's `logits += offset`; was "a call through the function pointer `logits`")
    # and `v += __shfl_xor_sync(...)` on T (was "... function pointer `val`")
    rows = res.shaders["row_sums<int>"] if target == "glsl" else res.text
    if target == "glsl":
        assert "int x_off = 0;" in rows and "x_off += int(gl_WorkGroupID.x * cols);" in rows
        assert "v += x[x_off + c];" in rows and "v += cuport_shfl_xor_int(v, uint(m));" in rows
    else:
        assert "x += (uint)get_group_id(0) * cols;" in rows and "v += x[c];" in rows
    if can_validate(target):
        assert all(v["ok"] for v in res.extra["validation"].values()), res.extra["validation"]


def test_header_of_two_includers_is_reported_once(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    (src / "k.cuh").write_text("__global__ void jumps(int *a) {\n  goto done;\ndone:\n  a[0] = 1;\n}\n")
    for name in ("a.cu", "b.cu"):
        (src / name).write_text('#include "k.cuh"\nint main() { int *a; jumps<<<1, 1>>>(a); return 0; }\n')
    r = cuport("translate", "--to", "opencl", "--no-validate", str(src), "-o", str(tmp_path / "o"))
    assert r.returncode == 1
    assert r.stderr.count("k.cuh:2:3: CP907 [error] kernel `jumps` not translated: `goto`") == 1, r.stderr
    assert "k.cuh is translated with" in r.stderr and "k.cuh: kernels it holds" not in r.stderr
    assert not os.path.exists(tmp_path / "o" / "k.cl")


def test_template_shuffle_reduction_of_a_width_runs_on_emulated_warps(tmp_path):
    # logprob's warpReduceSum<T>: `val += __shfl_xor_sync(FINAL_MASK, val, mask, 32)` was refused as "a call through
    # the function pointer `val`", then for the width-32 shuffle on OpenCL 1.2's one-lane warps; both targets now
    # run it on CUDA's 32-lane warps emulated in shared memory (warp32.py; values in tests/test_warp32.py)
    src = tmp_path / "k.cu"
    src.write_text("#include <cuda_fp16.h>\ntemplate <typename T>\n__device__ T wsum(T val) {\n"
                   "  for (int mask = 16; mask > 0; mask >>= 1)\n    val += __shfl_xor_sync(0xffffffff, val, mask, 32);\n"
                   "  return val;\n}\n__global__ void k(float *o) { o[threadIdx.x] = wsum<float>(o[threadIdx.x]); }\n")
    res = translate_file(str(src), "opencl", validate=False)
    assert not [d for d in res.diagnostics if d.severity == "error"], [d.message for d in res.diagnostics]
    assert "val += cuport_w32_shfl_xor_float(cuport_w32_float, val, mask, 32u, 1024u);" in res.text
    g = translate_file(str(src), "glsl", validate=False)
    assert "k" in g.manifests and g.manifests["k"]["min_subgroup_size"] is None
    assert "val += cuport_w32_shfl_xor_float(val, uint(mask), 32u, 1024u);" in g.shaders["k"]

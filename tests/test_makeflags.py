"""The -I / -D a program's Makefile gives its compiler (porter/frontend/makeflags.py), read without running make,
and `cuport translate DIR` using them (issue 15: HeCBench's warpexchange needs `-I../blockAccess-cuda`, bmf
includes its kernels under `#ifdef USE_GPU` that its Makefile defines)."""
import os
import subprocess
import sys

import pytest

from porter.frontend.makeflags import find_makefile, read_makefile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIX = os.path.join(ROOT, "tests", "fixtures", "makeflags")
PROG = os.path.join(FIX, "prog")


def cuport(*args):
    env = dict(os.environ, PYTHONPATH=ROOT)
    env.pop("CUPORT_TEST_REJECT", None)
    return subprocess.run([sys.executable, "-m", "porter", *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=300)


def test_flags_of_the_fixture_makefile():
    f = read_makefile(find_makefile(PROG))
    assert f.include_dirs == [os.path.join(FIX, "lib")]
    # GPU = yes takes the USE_GPU branch; DEBUG = no leaves SCALE_BY=100.0f out; $(shell ...) is never decided
    # (neither PLAN9 nor anything else from it); LDFLAGS and recipe lines are not compile flags
    assert f.defines == ["USE_GPU"]
    assert f.missing_dirs == ["../not-extracted"]
    assert "no such directory" in f.note() and f"-I{os.path.join(FIX, 'lib')}" in f.note()


def _flags(tmp_path, text):
    (tmp_path / "Makefile").write_text(text)
    return read_makefile(str(tmp_path / "Makefile"))


def test_conditionals_and_assignments(tmp_path):
    f = _flags(tmp_path, "MODE ?= fast\nMODE ?= slow\nifeq ($(MODE),fast)\nCFLAGS += -DFAST\nelse ifeq ($(MODE),slow)\n"
                         "CFLAGS += -DSLOW\nelse\nCFLAGS += -DOTHER\nendif\nifneq ($(MODE),fast)\nCFLAGS += -DNOTFAST\n"
                         "endif\nifdef MODE\nNVCCFLAGS = -D WITH_SPACE=2 -I .\nendif\nifndef MODE\nCFLAGS += -DUNDEF\n"
                         "endif\n")
    assert f.defines == ["FAST", "WITH_SPACE=2"]          # -I . (the Makefile's own directory) is no extra dir
    f = _flags(tmp_path, "MODE = slow\nifeq ($(MODE),fast)\nCFLAGS += -DFAST\nelse ifeq ($(MODE),slow)\n"
                         "CFLAGS += -DSLOW\nelse\nCFLAGS += -DOTHER\nendif\n")
    assert f.defines == ["SLOW"]
    f = _flags(tmp_path, "MODE = x\nifeq ($(MODE),fast)\nCFLAGS += -DFAST\nelse\nCFLAGS += -DOTHER\nendif\n")
    assert f.defines == ["OTHER"]


def test_what_make_would_have_to_run_is_never_guessed(tmp_path):
    f = _flags(tmp_path, "ARCH := $(shell uname -m)\nifeq ($(ARCH),x86_64)\nCFLAGS += -DX86\nelse\nCFLAGS += -DOTHER\n"
                         "endif\nifeq ($(shell nproc),4)\nCFLAGS += -DFOUR\nendif\nCFLAGS += -DKEPT\n")
    assert f.defines == ["KEPT"]                          # neither side of an undecidable condition
    f = _flags(tmp_path, "ifeq ($(shell true),)\nGPU = yes\nendif\nifdef GPU\nCFLAGS += -DG\nendif\n")
    assert f.defines == []                                # GPU set only on an undecided branch: unknown
    # a variable another makefile may set is unknown, not empty; define ... endef is no assignment
    f = _flags(tmp_path, "include ../common.mk\nifeq ($(GPU),yes)\nCFLAGS += -DG\nelse\nCFLAGS += -DCPU\nendif\n"
                         "define RULE\nCFLAGS += -DIN_DEFINE\nendef\nGPU2 = yes\nifeq ($(GPU2),yes)\nCFLAGS += -DG2\nendif\n")
    assert f.defines == ["G2"]


def test_no_makefile_no_flags(tmp_path):
    (tmp_path / "k.cu").write_text("\n")
    assert find_makefile(str(tmp_path)) is None
    assert find_makefile(str(tmp_path / "k.cu")) is None
    sub = tmp_path / "src"
    sub.mkdir()
    (sub / "k.cu").write_text("\n")
    (tmp_path / "Makefile").write_text("CFLAGS = -DX\n")
    assert find_makefile(str(sub / "k.cu")) == str(tmp_path / "Makefile")   # a file's dir, then the one above


@pytest.mark.parametrize("target", ("glsl", "opencl"))
def test_translate_uses_the_makefile(target, tmp_path):
    r = cuport("translate", "--to", target, PROG, "-o", str(tmp_path / "a"))
    assert r.returncode == 0, r.stderr
    assert "Makefile: using its -I" in r.stderr and "-DUSE_GPU" in r.stderr
    assert "-I../not-extracted: no such directory" in r.stderr
    assert "translated on its own" not in r.stderr          # main.cu saw the kernel under #ifdef USE_GPU
    got = sorted(os.listdir(tmp_path / "a"))
    assert got == (["scale.comp"] if target == "glsl" else ["main.cl"])
    text = (tmp_path / "a" / got[0]).read_text()
    assert "3.0" in text                                   # SCALE_BY from ../lib, not the DEBUG branch's 100
    assert "100.0" not in text
    # --isolated: no Makefile, so the header is compiled alone and SCALE_BY is unknown, at its line
    r = cuport("translate", "--isolated", "--to", target, PROG, "-o", str(tmp_path / "b"))
    assert r.returncode == 1
    assert "Makefile" not in r.stderr
    assert "gpu.cuh:2:17: CP000 [error] kernel `scale` not translated" in r.stderr
    assert "gpu.cuh:5:33: CP000 [error] unknown name `SCALE_BY`" in r.stderr


def test_verify_derives_and_translates_with_the_makefile(monkeypatch):
    """`cuport verify main.cu` reads the program as `cuport translate` does: the kernel main.cu includes under the
    Makefile's -DUSE_GPU derives, and its case carries the flags the translation needs (SCALE_BY via -I../lib)."""
    from porter.verify.derive import derive_file
    ds = derive_file(os.path.join(PROG, "main.cu"))
    assert [d.kernel for d in ds] == ["scale"]
    case = ds[0].as_dict(portability_fixes=True)
    assert case["translate"] == {"include_dirs": [os.path.join(FIX, "lib")], "defines": ["USE_GPU"]}
    icd = "/usr/share/vulkan/icd.d/lvp_icd.x86_64.json"
    from porter.translate.kernel.validate import opencl_context, tool
    if not os.path.exists(icd) or opencl_context() is None or tool("glslangValidator") is None:
        pytest.skip("lavapipe / PoCL / glslang not available")
    r = cuport("verify", os.path.join(PROG, "main.cu"), "--kernels", "scale", "--portability-fixes",
               "--targets", "vulkan,opencl", "-j", "1", "--output-format", "json")
    assert r.returncode == 0, r.stderr
    import json
    got = {(x["target"], x["variant"]): x["status"] for x in json.loads(r.stdout)["results"]}
    assert got == {("vulkan", "sg4"): "pass", ("vulkan", "sg8"): "pass", ("vulkan", "sg16"): "pass",
                   ("opencl", "-"): "pass"}, r.stdout[-2000:]


def test_verify_without_a_makefile_flag_finds_no_kernel(tmp_path):
    """the negative: the same program with no Makefile beside it has no kernel under `#ifdef USE_GPU`"""
    from porter.verify.derive import derive_file
    for f in ("main.cu", "gpu.cuh"):
        (tmp_path / f).write_text(open(os.path.join(PROG, f)).read())
    assert derive_file(str(tmp_path / "main.cu")) == []


def test_verify_derives_past_an_error_in_a_header_the_makefile_finds(tmp_path):
    """an error in a header found through the Makefile's -I has no offset in the kernel's file (recursiveGaussian's
    ../boxfilter-sycl/shrUtils.h): the kernel still derives"""
    from porter.verify.derive import derive_file
    (tmp_path / "lib").mkdir()
    (tmp_path / "prog").mkdir()
    (tmp_path / "lib" / "bad.h").write_text("#pragma once\ninline void pause() { no_such_function(); }\n")
    (tmp_path / "prog" / "Makefile").write_text("CFLAGS = -I../lib\n")
    (tmp_path / "prog" / "main.cu").write_text(
        '#include "bad.h"\n'
        "__global__ void twice(float *x, int n) {\n"
        "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "  if (i < n) x[i] *= 2.f;\n"
        "}\n"
        "int main() {\n  int n = 1000;\n  float *x;\n  cudaMalloc(&x, n * sizeof(float));\n"
        "  twice<<<(n + 255) / 256, 256>>>(x, n);\n  return 0;\n}\n")
    ds = derive_file(str(tmp_path / "prog" / "main.cu"))
    assert [d.kernel for d in ds] == ["twice"]
    assert not ds[0].problems, ds[0].problems
    assert ds[0].as_dict()["translate"]["include_dirs"] == [str(tmp_path / "lib")]

"""bench/hipify_conformance.py on synthetic HIPIFY-style lit files (the real suite is a bench, not a test)."""
import importlib.util
import io
import os

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_spec = importlib.util.spec_from_file_location("hipify_conformance", os.path.join(ROOT, "bench", "hipify_conformance.py"))
conf = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(conf)

FC = conf.find_filecheck(None)
needs_filecheck = pytest.mark.skipif(FC is None, reason="LLVM FileCheck not installed (llvm-*-tools)")
RUN = '// RUN: %run_test hipify "%s" "%t" %hipify_args 1 --skip-excluded-preprocessor-conditional-blocks %clang_args\n'

PASSING = RUN + """// CHECK: #include <hip/hip_runtime.h>
#include <cuda_runtime.h>
int main() {
  float *p;
  // CHECK: hipMalloc(&p, 4);
  cudaMalloc(&p, 4);
  // CHECK: hipFree(p);
  cudaFree(p);
}
"""
FAILING = RUN + """#include <cuda_runtime.h>
int main() {
  // CHECK: hipDeviceSynchronize();
  cudaDeviceSynchronize();
  // CHECK: hipNoSuchThing();
  cudaDeviceReset();
}
"""
LAYOUT = RUN.replace("1 --skip", "2 -roc --skip") + """// CHECK: #include "rocblas.h"
#include "cublas_v2.h"
// CHECK: rocblas_handle h;
cublasHandle_t h;
"""

# HIPIFY's own tests mix layouts in one file (`hipblas.h` next to `hiprand/hiprand.h`)
MIXED = RUN + """// CHECK: #include "hipblas.h"
#include "cublas_v2.h"
// CHECK: #include "hiprand/hiprand.h"
#include "curand.h"
cublasHandle_t h;
"""
# a wrong header in one of them still fails
MIXED_WRONG = MIXED.replace('CHECK: #include "hiprand/hiprand.h"', 'CHECK: #include "hipfft/hipfft.h"')


@pytest.fixture
def suite(tmp_path):
    base = tmp_path / "HIPIFY" / "tests" / "unit_tests"
    (base / "samples").mkdir(parents=True)
    (base / "libraries" / "cuBLAS").mkdir(parents=True)
    (base / "samples" / "good.cu").write_text(PASSING)
    (base / "samples" / "bad.cu").write_text(FAILING)
    (base / "libraries" / "cuBLAS" / "layout.cu").write_text(LAYOUT)
    (base / "libraries" / "cuBLAS" / "mixed.cu").write_text(MIXED)
    (base / "libraries" / "cuBLAS" / "mixed_wrong.cu").write_text(MIXED_WRONG)
    (base / "samples" / "inc.h").write_text("// excluded by lit.cfg\n")
    (base / "samples" / "headers_test_06.cu").write_text(FAILING)      # excluded for CUDA 12
    return tmp_path / "HIPIFY"


def test_run_options():
    o = conf.run_options('// RUN: %run_test hipify "%s" "%t" %hipify_args 3 --roc --miopen '
                         '--hip-kernel-execution-syntax %clang_args -DFOO=1\n')
    assert o == {"roc": True, "miopen": True, "launch_syntax": "hip", "defines": ["FOO=1"], "experimental": False}
    assert conf.run_options("int x;\n") is None


def test_lit_excludes_follow_cuda_version():
    ex12 = conf.lit_excludes((12, 3))
    assert "headers_test_06.cu" in ex12 and "headers_test_06_12000.cu" not in ex12 and "inc.h" in ex12
    ex11 = conf.lit_excludes((11, 8))
    assert "headers_test_06_12000.cu" in ex11 and "headers_test_06.cu" not in ex11
    assert "cub_01.cu" in conf.lit_excludes((12, 6)) and "cub_01.cu" not in ex12


def test_blank_comments_like_run_test():
    assert conf.blank_comments('a(); // CHECK: x\n"//s" b') == 'a(); // \n"// '


@needs_filecheck
def test_suite_pass_rates_and_first_failure(suite):
    out = io.StringIO()
    res = conf.run(str(suite), ["cuport"], (12, 3), FC, stream=out)["cuport"]
    assert res["samples/good.cu"] == ("pass", "")
    status, why = res["samples/bad.cu"]
    assert status == "fail" and why.startswith("line 6:") and "hipNoSuchThing" in why
    assert res["libraries/cuBLAS/layout.cu"] == ("pass", "flat header layout")
    assert res["libraries/cuBLAS/mixed.cu"] == ("pass", "flat header layout")
    status, why = res["libraries/cuBLAS/mixed_wrong.cu"]
    assert status == "fail" and why.startswith("line 4:") and "hipfft" in why
    assert "samples/headers_test_06.cu" not in res and "samples/inc.h" not in res
    text = out.getvalue()
    assert "== cuport: 3/5 files pass (60.0%)" in text
    assert "samples" in text and "1/2" in text and "FAIL samples/bad.cu: line 6:" in text


@needs_filecheck
def test_main_exit_codes(suite, tmp_path, capsys):
    assert conf.main([str(suite), "--only", "good"]) == 0
    assert "1/1 files pass" in capsys.readouterr().out
    assert conf.main([str(tmp_path / "missing")]) == 2
    assert "cuport: error:" in capsys.readouterr().err
    assert conf.main([str(suite), "--filecheck", str(tmp_path / "nope")]) == 2
    assert conf.main([str(suite), "--cuda-version", "x"]) == 2

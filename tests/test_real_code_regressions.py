"""Internal errors met linting real code (HeCBench, cuda-samples; docs/quality.md): each reduced to a fixture that
must lint with every rule and no rule exception."""
from __future__ import annotations

import os
import sys

import pytest

from porter.lint.checker import lint_source
from porter.lint.registry import RULES
from porter.source import SourceFile, read_source

HERE = os.path.join(os.path.dirname(__file__), "fixtures", "real_code")
ALL = set(RULES) - {"CP001", "CP002"}


@pytest.fixture
def strict(monkeypatch):
    """A rule exception fails the test instead of being printed as an internal error."""
    monkeypatch.setattr(sys, "_cuport_raise", True, raising=False)


def _lint_path(path, codes=ALL):
    return lint_source(read_source(path), enabled=set(codes), ignore_noqa=True)


KERNEL = """#include "defs.h"
__global__ void reduce(float *out, float val) {
  for (int offset = warpSize / 2; offset > 0; offset /= 2)
    val += __shfl_down_sync(0xFFFFFFFF, val, offset);
  if (threadIdx.x % warpSize == 0) out[threadIdx.x / warpSize] = val;
}
"""


def test_warpsize_macro_from_a_header(tmp_path, strict):
    # bm3d-cuda: indices.hpp has `#define warpSize 32`, so the literal comes from a macro with no body in this
    # file (CP101 KeyError 'warpSize'); it is reported, naming the shadowed built-in
    (tmp_path / "defs.h").write_text("#define warpSize 32\n")
    (tmp_path / "k.cu").write_text(KERNEL)
    res = _lint_path(str(tmp_path / "k.cu"))
    cp101 = [d for d in res.diagnostics if d.code == "CP101"]
    assert len(cp101) == 1 and cp101[0].row == 3
    assert "macro `warpSize` = 32 (defined outside this file" in cp101[0].message
    assert "shadowing the built-in `warpSize`" in cp101[0].message


def test_builtin_warpsize_is_not_reported(tmp_path, strict):
    (tmp_path / "defs.h").write_text("// nothing\n")
    (tmp_path / "k.cu").write_text(KERNEL)
    res = _lint_path(str(tmp_path / "k.cu"))
    assert [d for d in res.diagnostics if d.code == "CP101"] == []


def test_quicksort_work_stack_kernel_lints(strict):
    # quicksort-cuda lqsort_kernel: a barrier at the end of a macro, shared pointers swapped per iteration,
    # prefix sums through pointers to shared elements (CP702 IndexError reported on it)
    res = _lint_path(os.path.join(HERE, "quicksort_lqsort.cu"))
    assert not any(d.code == "CP000" and d.severity == "error" for d in res.diagnostics)
    assert any(d.code == "CP702" for d in res.diagnostics)


def test_every_real_code_fixture_lints_without_rule_errors(strict):
    for name in sorted(os.listdir(HERE)):
        if name.endswith((".cu", ".cuh")):
            _lint_path(os.path.join(HERE, name))

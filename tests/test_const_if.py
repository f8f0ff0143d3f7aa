"""Constant conditions (const_if.py): in a template instance `if (OP == ADD)` folds, and only the branch C++
runs is emitted: the others may hold what the instance cannot translate (scatter's atomics of other types).
Fixture: tests/fixtures/breadth/const_if/ (verify_spec.py checks it against NumPy on lavapipe and PoCL)."""
import os
import re

import pytest

from porter.translate.api import translate_file
from kernel_helpers import (assert_refused_at, can_validate, expected_runs, failures, outputs, ran_keys, run_spec,
                            translate_text)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIX = os.path.join(ROOT, "tests", "fixtures", "breadth", "const_if")
SRC = os.path.join(FIX, "const_if.cu")


@pytest.mark.parametrize("target", ["glsl", "opencl"])
def test_both_instances_translate_without_the_dead_printf(target):
    res = translate_file(SRC, target, validate=can_validate(target))
    assert outputs(res) == {"apply<0>", "apply<1>"}, [d.message for d in res.diagnostics]
    if res.extra.get("validation"):
        assert all(v["ok"] for v in res.extra["validation"].values()), res.extra["validation"]


def test_only_the_taken_branch_is_emitted():
    o = translate_file(SRC, "opencl", validate=False).text
    add, mul = o.split("__kernel void apply_1")
    assert "v = v + 1.0f;" in add and "v * 2.0f" not in add and "v = -v;" not in add
    assert "v = v * 2.0f;" in mul and "v + 1.0f" not in mul and "v = -v;" not in mul
    # `OP == ADD || i % 2 == 0`: true in apply<ADD> whatever i is; an ordinary condition in apply<MUL>
    assert "i % 2" not in add
    assert re.search(r"if \(.*\(i (%|&) [12]\) == 0\) \{", mul) or re.search(r"if \(.*i % 2 == 0\) \{", mul), mul


def test_fixture_matches_numpy_on_lavapipe_and_pocl(monkeypatch):
    results = run_spec(monkeypatch, os.path.join(FIX, "verify_spec.py"))
    assert not failures(results), failures(results)
    want = expected_runs({"apply<0>", "apply<1>"})
    assert want <= ran_keys(results), sorted(want - ran_keys(results))


NOT_CONSTANT = """#include <cstdio>
template <int N>
__global__ void k(float *out, int n) {
  if (N == 1 && n > 0)
    printf("%d\\n", n);
  out[0] = N;
}
void host(float *o, int n) { k<1><<<1, 1>>>(o, n); }
"""


@pytest.mark.parametrize("target", ["glsl", "opencl"])
def test_a_condition_with_a_runtime_part_is_not_folded(tmp_path, target):
    # `N == 1 && n > 0` depends on n: the branch stays, and its printf is refused at its line
    assert_refused_at(tmp_path, target, NOT_CONSTANT, 5, "a string literal", kernel="k")


@pytest.mark.parametrize("target", ["glsl", "opencl"])
def test_a_condition_with_a_call_is_not_folded(tmp_path, target):
    code = NOT_CONSTANT.replace("N == 1 && n > 0", "N == 1 && one() == 1").replace(
        "template <int N>", "__device__ int one() { return 1; }\ntemplate <int N>")
    assert_refused_at(tmp_path, target, code, 6, "a string literal", kernel="k")


@pytest.mark.parametrize("target", ["glsl", "opencl"])
def test_a_false_constant_drops_the_branch(tmp_path, target):
    res = translate_text(tmp_path, target, NOT_CONSTANT.replace("N == 1 && n > 0", "N - 1 != 0 || (N % 2) == 0"))
    text = res.text if target == "opencl" else res.shaders["k"]
    body = text.split("__kernel")[-1] if target == "opencl" else text.split("void main()")[-1]
    assert "if (" not in body and "printf" not in body, body
    assert re.search(r"out_?\[0\] = (1(\.0f?)?|N|float\(N\));", body), body

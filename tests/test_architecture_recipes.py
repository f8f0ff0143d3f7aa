"""The one-hop recipes of docs/architecture.md, done the documented way: a rule is a module with CODE and
check(ctx) plus a row in the codes table; a verify backend is a module with available() and run() plus a row in
porter.verify.backends.TARGETS. (Adding a mapping and a target: tests/test_translate_architecture.py.)"""
from __future__ import annotations

import sys
import types

import numpy as np

from porter.lint import registry
from porter.lint.checker import lint_source
from porter.source import SourceFile

KERNEL = """__global__ void k(float *p) {
    p[threadIdx.x] = 1.0f;
    __trap();
}
"""


def test_a_rule_is_a_module_and_a_row_in_the_codes_table(monkeypatch):
    rule = types.ModuleType("porter.lint.rules.toy_trap")
    rule.__doc__ = "`__trap()` in device code.\n\n## What it does\nFlags every call of `__trap()`."
    rule.CODE = "CP990"

    def check(ctx):
        for call in ctx.model.of_kind("CALL_EXPR"):
            if call.spelling == "__trap":
                ctx.report(rule.CODE, call, "`__trap()` stops the kernel")
    rule.check = check
    monkeypatch.setitem(sys.modules, "porter.lint.rules.toy_trap", rule)
    monkeypatch.setitem(registry.RULES, "CP990", registry.RuleInfo("CP990", "toy-trap", "B", "toy_trap"))
    res = lint_source(SourceFile("t.cu", KERNEL), enabled={"CP990"})
    assert [(d.code, d.row, d.column, d.severity, d.name) for d in res.diagnostics] == \
        [("CP990", 3, 5, "error", "toy-trap")]
    assert registry.RULES["CP990"].summary == "`__trap()` in device code."
    # a negative case: a kernel without the call has no finding
    clean = lint_source(SourceFile("c.cu", KERNEL.replace("    __trap();\n", "")), enabled={"CP990"})
    assert clean.diagnostics == []


def test_a_verify_backend_is_a_module_and_a_row_in_the_targets_table(monkeypatch):
    """A toy backend that "runs" saxpy on the host: registered by one row, the runner plans it for every case and
    size of the spec, and its outputs go through the spec's reference check like any device's."""
    import os
    from porter.verify import backends
    from porter.verify.runner import Runner
    from porter.verify.spec import load_spec

    toy = types.ModuleType("toy_backend")
    toy.available = lambda: (True, "")

    def run(case, source_text, manifest, sizes, arrays, *, variant=None, repeat=1):
        assert "__global__ void saxpy" in source_text          # the original .cu: translation target None
        a, x, y = arrays[1], arrays[2], arrays[3]
        return backends.RunOutput(outputs={"y": (a * x + y).astype(np.float32)}, kernel_ms=None)
    toy.run = run
    monkeypatch.setitem(sys.modules, "toy_backend", toy)
    monkeypatch.setitem(backends.TARGETS, "toy", ("toy_backend", None))

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    cases = [c for c in load_spec(os.path.join(root, "examples", "saxpy", "verify_spec.py")) if c.kernel == "saxpy"]
    jobs, skipped = Runner(["toy"]).plan(cases)
    assert skipped == [] and [(j.target, len(j.sizes)) for j in jobs] == [("toy", 3)]
    case = cases[0]
    sizes = case.sizes[0]
    args = case.make_args(sizes)
    out = backends.load("toy").run(case, case.source_path.read_text(), None, sizes, list(args.values()))
    want = case.expected(args, sizes)
    assert np.allclose(out.outputs["y"], want["y"])
    assert not np.allclose(out.outputs["y"] + 1, want["y"])      # the comparison can fail

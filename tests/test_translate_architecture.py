"""The translate layer's one-hop recipes (docs/architecture.md): add a mapping (a CSV row), add a target (a
Target subclass + a registry entry); the target registry is the one list of names; the intrinsics page is
generated from the table; the kernel translators parse each text once per fix round."""
from __future__ import annotations

import os
import shutil
import sys

import pytest

from porter.translate import api
from porter.translate.api import TargetInfo, translate_file
from porter.translate.kernel import intrinsics
from porter.translate.kernel.opencl import OpenclTarget
from porter.translate.kernel.target import Target

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLES = os.path.join(ROOT, "examples")

KERNEL = """
__global__ void k(float *out, const float *in, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        out[i] = erff(in[i]);
}
"""


# --- how to add a mapping --------------------------------------------------------------------------------------

@pytest.fixture
def table_copy(tmp_path, monkeypatch):
    """A temporary copy of rules/kernel/intrinsics.csv that the translators read instead of the real one."""
    path = tmp_path / "intrinsics.csv"
    shutil.copy(intrinsics.rules_path(), path)
    monkeypatch.setattr(intrinsics, "rules_path", lambda: path)
    intrinsics.table.cache_clear()
    yield path
    intrinsics.table.cache_clear()


def test_a_row_in_the_intrinsics_table_is_a_mapping(table_copy):
    before = translate_file("k.cu", "glsl", text=KERNEL)
    assert "erf" in before.failed_kernels["k"]            # GLSL has no erf: refused (the row's glsl is empty)
    rows = [r for r in table_copy.read_text(encoding="utf-8").splitlines(keepends=True) if not r.startswith("erf,")]
    rows.append("erf,math,cuport_erf,erf,no,,the test's spelling\n")
    table_copy.write_text("".join(rows), encoding="utf-8")
    intrinsics.table.cache_clear()
    glsl = translate_file("k.cu", "glsl", text=KERNEL)
    assert glsl.failed_kernels == {}
    assert "cuport_erf(" in glsl.shaders["k"]
    assert "erf(" in translate_file("k.cu", "opencl", text=KERNEL).text


def test_a_changed_spelling_changes_the_translation(table_copy):
    text = table_copy.read_text(encoding="utf-8").replace("\nsqrt,math,sqrt,sqrt,", "\nsqrt,math,sqrt,native_sqrt,")
    table_copy.write_text(text, encoding="utf-8")
    intrinsics.table.cache_clear()
    src = "__global__ void k(float *a) { a[threadIdx.x] = sqrtf(a[threadIdx.x]); }\n"
    assert "native_sqrt(" in translate_file("k.cu", "opencl", text=src).text


def test_intrinsics_page_is_up_to_date():
    path = intrinsics.default_output()
    assert path.exists(), "run: python -m porter.translate.kernel.intrinsics"
    assert path.read_text(encoding="utf-8") == intrinsics.render(), "run: python -m porter.translate.kernel.intrinsics"


def test_every_fast_intrinsic_names_a_math_row():
    t = intrinsics.table()
    for r in t.values():
        if r.kind == "fast":
            assert r.glsl in t and r.opencl in t, r
        elif not r.glsl:
            assert not r.glsl_f64 and r.precision, r      # refused by GLSL: the page says why


# --- how to add a target ---------------------------------------------------------------------------------------

class SignatureTarget(OpenclTarget):
    """A toy target: every hook is OpenCL's (the emitter runs as usual), the output only the kernels'
    signatures."""
    name = "signatures"

    def assemble(self, result, outputs, unit):
        result.text = "".join(f"{em.fn.name}({', '.join(p.name for p in em.fn.params)})\n"
                              for _label, em, _shape in outputs)


def translate_signatures(path, text=None, **options):
    from porter.translate.kernel.driver import translate_path
    return translate_path(path, "signatures", SignatureTarget(**options), text=text, **options)


def test_a_target_is_a_target_subclass_and_a_registry_entry(monkeypatch):
    info = TargetInfo("signatures", f"{__name__}:translate_signatures", "porter.translate.kernel.cli", "signatures")
    monkeypatch.setitem(api.TARGETS, "signatures", info)
    assert "signatures" in api.target_names()
    res = translate_file(os.path.join(EXAMPLES, "saxpy", "saxpy.cu"), "signatures")
    assert "saxpy(n, a, x, y)\n" in res.text
    assert "{" not in res.text


def test_a_target_missing_a_hook_cannot_be_built():
    class Half(Target):
        name = "half"

    with pytest.raises(TypeError) as e:
        Half()
    assert "thread_builtin" in str(e.value)
    hooks = Target.__abstractmethods__
    assert {"begin_kernel", "end_kernel", "assemble", "convert", "call", "deref"} <= hooks
    for h in hooks:
        assert getattr(Target, h).__doc__, f"hook {h} has no docstring"


# --- one registry ----------------------------------------------------------------------------------------------

def test_target_names_are_spelled_only_in_the_registry():
    for rel in ("porter/cli.py", "porter/demo.py", "porter/report_html.py", "porter/report.py",
                "porter/verify/worker.py"):
        with open(os.path.join(ROOT, rel), encoding="utf-8") as fh:
            text = fh.read()
        for quoted in ('"glsl"', "'glsl'", '"hip,glsl,opencl"', '("hip", "glsl", "opencl")'):
            assert quoted not in text, f"{rel} spells {quoted}: read porter.translate.api.TARGETS"


def test_the_cli_offers_the_registry_targets(capsys):
    from porter.cli import main
    try:
        main(["translate", "--help"])
    except SystemExit:
        pass
    out = capsys.readouterr().out
    assert "{" + ",".join(api.target_names()) + "}" in out


# --- one fix engine, one parse per round -----------------------------------------------------------------------

@pytest.mark.parametrize("target", ["hip", "glsl", "opencl"])
def test_each_text_is_parsed_once(monkeypatch, target):
    from porter.translate import portability
    seen = []
    real = portability.build_model

    def counting(source, opts):
        seen.append(source.text)
        return real(source, opts)
    monkeypatch.setattr(portability, "build_model", counting)
    import porter.frontend.build as fb
    monkeypatch.setattr(fb, "build_model", counting)
    res = translate_file(os.path.join(EXAMPLES, "warp_reduce", "warp_reduce.cu"), target)
    assert res.extra.get("fixes_applied") or res.extra.get("fixed")      # the loop ran rounds
    assert len(seen) >= 2
    assert len(seen) == len(set(seen)), "a text was parsed twice"


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))

"""The fix engine (porter/lint/fixer.py): fixes converge, never land on macro use sites, never break parsing.

Property tests over every example and test fixture, regression fixtures for macro sites (lint --fix and
translate --to hip/glsl/opencl), and the loop's non-convergence detection driven by a misbehaving fake rule."""
from __future__ import annotations

import glob
import os
import re
import shutil
import subprocess
import sys

import pytest

from porter.diagnostics import Applicability, Diagnostic, Edit, Fix
from porter.frontend.build import build_model
from porter.lint.checker import fix_source, lint_source
from porter.lint.fixer import Round, _Offsets, applicable, expansions, fix_loop, site_problem
from porter.source import SourceFile, read_source

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIX = os.path.join(ROOT, "tests", "fixtures", "fix_convergence")
FILES = sorted(os.path.relpath(p, ROOT) for p in
               glob.glob(os.path.join(ROOT, "examples", "**", "*.cu"), recursive=True) +
               glob.glob(os.path.join(ROOT, "tests", "fixtures", "**", "*.cu"), recursive=True))


def _errors(text: str, path: str) -> set:
    model = build_model(SourceFile(path, text))
    out = {(e.category, e.message) for e in model.errors}
    model.release()
    return out


# --- properties over every example and fixture ------------------------------------------------------------------

@pytest.mark.parametrize("unsafe", [False, True], ids=["safe", "unsafe"])
@pytest.mark.parametrize("path", FILES)
def test_fix_is_idempotent_complete_and_parses(path, unsafe):
    src = read_source(os.path.join(ROOT, path))
    once = fix_source(src, unsafe=unsafe)
    assert not once.unconverged, once.unconverged
    # --fix twice equals --fix once
    twice = fix_source(SourceFile(src.path, once.text), unsafe=unsafe)
    assert twice.text == once.text
    assert twice.fixed == {}
    # no finding whose fix --fix would apply remains
    left = [(d.code, d.row, d.fix.message) for d in lint_source(SourceFile(src.path, once.text)).diagnostics
            if applicable(d, unsafe)]
    assert left == []
    # the fixed file parses with no clang error the original did not have
    if once.text != src.text:
        assert _errors(once.text, src.path) <= _errors(src.text, src.path)


def test_the_properties_cover_examples_and_fixtures():
    assert any(p.startswith("examples") for p in FILES)
    assert "tests/fixtures/fix_convergence/macro_warp_index.cu" in FILES
    assert len(FILES) >= 100


# --- macro sites ------------------------------------------------------------------------------------------------

def _fixture(name):
    return read_source(os.path.join(FIX, name))


def test_lint_fix_edits_the_macro_definitions_once_never_the_use_sites():
    src = _fixture("macro_warp_index.cu")
    out = fix_source(src)
    assert out.fixed == {"CP102": 5}          # 4 expansions share 2 definition edits; 1 site written in the file
    assert "warpSize / warpSize" not in out.text and "% warpSize % warpSize" not in out.text
    assert "#define WID (threadIdx.x / warpSize)\n" in out.text
    assert "#define LANE (threadIdx.x % warpSize)\n" in out.text
    assert "    if (LANE == 0) part[WID] = v;\n" in out.text               # the use sites are unchanged
    assert "    int lane = threadIdx.x % warpSize;" in out.text
    assert "if (WID == 0) out[blockIdx.x * 32 + lane] = part[LANE];" in out.text   # a real 32 is left alone
    assert [d.code for d in out.result.diagnostics if d.code == "CP102"] == []


def test_macro_variants_args_nested_and_function_like():
    out = fix_source(_fixture("macro_variants.cu"))
    text = out.text
    assert "#define LANE_OF(t) ((t) % warpSize)\n" in text          # function-like
    assert "#define WARP_ID(t) ((t) / warpSize)\n" in text
    assert "#define WIDX (threadIdx.x / warpSize)\n" in text         # reached through MY_WARP (nested)
    assert "#define NWARPS (blockDim.x / warpSize)\n" in text
    assert "#define MY_WARP WIDX\n" in text
    assert "    int a = LANE_OF(threadIdx.x);\n" in text
    assert "    int d = WARP_ID(threadIdx.x) + MY_WARP + NWARPS;\n" in text
    assert "for (int o = warpSize / 2; o > 0; o /= 2)" in text        # HALF: a whole object-like use
    # a macro argument: spans of argument nodes are not the text the rule read: reported, never edited
    assert "    int b = ID(threadIdx.x % 32);\n" in text
    left = [d for d in out.result.diagnostics if d.code == "CP102"]
    assert [(d.row, d.fix) for d in left] == [(13, None)]
    assert fix_source(SourceFile("v.cu", text)).text == text


def test_no_definition_edit_when_the_macro_has_an_unflagged_expansion():
    text = ("#define WARP 32\n#define DIVW(x) ((x) / WARP)\n"
            "__global__ void k(int *o) { o[DIVW(threadIdx.x)] = 1; }\n"
            "int host_count(int n) { return DIVW(n); }\n")
    out = fix_source(SourceFile("h.cu", text))
    assert out.text == text
    d = next(d for d in out.result.diagnostics if d.code == "CP102")
    assert d.row == 3 and d.fix is None


def test_no_definition_edit_when_the_macro_is_named_in_a_directive():
    text = ("#define WARP 32\n#define LANE (threadIdx.x % WARP)\n#ifdef LANE\n#endif\n"
            "__global__ void k(int *o) { o[LANE] = 1; }\n")
    src = SourceFile("d.cu", text)
    assert fix_source(src).text == text
    model = build_model(src)
    # clang records `#ifdef LANE` as a use: more expansions than flagged findings, so no definition edit
    assert expansions(model, "LANE") == 2 and expansions(model, "WARP") == 2
    model.release()


def test_plain_lint_does_not_offer_a_fix_at_a_macro_use_site():
    text = ("#define WARP 32\n#define SW (threadIdx.x >> 5)\n"
            "__global__ void k(int *o) { o[SW] = 1; }\n")
    res = lint_source(SourceFile("s.cu", text))
    d = next(d for d in res.diagnostics if d.code == "CP102")
    assert d.row == 3 and not applicable(d, True)


# --- the one edit-site check ------------------------------------------------------------------------------------

@pytest.fixture
def lane_model():
    text = ("#define WARP 32\n#define LANE (threadIdx.x % WARP)\n"
            "__global__ void k(int *o) { o[LANE] = threadIdx.x % WARP; }\n")
    model = build_model(SourceFile("m.cu", text))
    yield model, text
    model.release()


def test_site_problem_refuses_edits_on_or_inside_an_expansion(lane_model):
    model, text = lane_model
    use = text.index("LANE]")
    # the use site replaced by something built from a node inside the expansion (the old bug)
    bad = Edit(use, use + 4, "LANE % warpSize", "\0code inside the expansion of macro LANE")
    assert "macro `LANE`" in site_problem(model, bad) and "line 2" in site_problem(model, bad)
    assert site_problem(model, Edit(use + 1, use + 2, "x")) is not None           # inside the use
    assert site_problem(model, Edit(use + 2, use + 2, "x")) is not None           # an insertion inside
    assert site_problem(model, Edit(use - 2, use + 2, "x")) is not None           # straddling it
    assert site_problem(model, Edit(len(text), len(text) + 1, "x")) == "the edit lies outside the file"


def test_site_problem_accepts_written_text_and_whole_uses(lane_model):
    model, text = lane_model
    at = text.index("threadIdx.x % WARP;")
    whole = Edit(at, at + len("threadIdx.x % WARP"), "threadIdx.x % warpSize", "threadIdx.x % WARP")
    assert site_problem(model, whole) is None                                     # contains the use of WARP
    w = text.index("WARP;")
    assert site_problem(model, Edit(w, w + 4, "warpSize", "WARP")) is None        # a whole object-like use
    use = text.index("LANE]")
    assert site_problem(model, Edit(use, use, "(")) is None                       # insertion before a use
    assert site_problem(model, Edit(use + 4, use + 4, ")")) is None               # and after it
    # the text at the range is not what the rule read
    assert site_problem(model, Edit(at, at + 4, "x", "blockIdx")) == \
        "the text at the edit is not the code the rule analysed"


# --- translators ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("target", ["hip", "glsl", "opencl"])
def test_translators_fix_macro_definitions_once(target):
    from porter.translate.api import translate_file
    path = os.path.join(FIX, "macro_warp_index.cu")
    res = translate_file(path, target)
    fixed_text = res.extra["fixed_text"] if target == "hip" else res.extra["fixed_source"]
    assert "warpSize / warpSize" not in fixed_text
    assert "#define WID (threadIdx.x / warpSize)" in fixed_text
    assert "if (LANE == 0) part[WID] = v;" in fixed_text
    fixed = res.extra["fixed"] if target == "hip" else res.extra["fixes_applied"]
    assert fixed.get("CP102") == 5
    if target == "hip":
        assert "#define LANE (threadIdx.x % warpSize)" in res.text
        assert "    if (LANE == 0) part[WID] = v;" in res.text
        assert "warpSize / warpSize" not in res.text


def test_translate_hip_cli_output_has_no_repeated_rewrites(tmp_path):
    src = tmp_path / "k.cu"
    shutil.copy(os.path.join(FIX, "macro_variants.cu"), src)
    r = subprocess.run([sys.executable, "-m", "porter", "translate", "--to", "hip", str(src), "-o",
                        str(tmp_path / "k.hip.cpp")], capture_output=True, text=True, cwd=ROOT)
    assert "Traceback" not in r.stderr
    out = (tmp_path / "k.hip.cpp").read_text()
    assert re.search(r"(warpSize\s*[/%]\s*){2}", out) is None
    assert "    int b = ID(threadIdx.x % 32);" in out
    assert src.read_text() == open(os.path.join(FIX, "macro_variants.cu")).read()     # input untouched


def test_lint_fix_cli_on_the_regression_fixture(tmp_path):
    src = tmp_path / "k.cu"
    shutil.copy(os.path.join(FIX, "macro_warp_index.cu"), src)
    r = subprocess.run([sys.executable, "-m", "porter", "lint", "--fix", "--no-cache", "--output-format",
                        "concise", str(src)], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 1 and "Traceback" not in r.stderr       # CP104 remains (per-warp array)
    first = src.read_text()
    assert "#define WID (threadIdx.x / warpSize)" in first and "part[WID]" in first
    r2 = subprocess.run([sys.executable, "-m", "porter", "lint", "--fix", "--no-cache", str(src)],
                        capture_output=True, text=True, cwd=ROOT)
    assert src.read_text() == first and "did not converge" not in r2.stderr


# --- the loop: non-convergence detected early, rolled back, reported --------------------------------------------

def _diag(src: SourceFile, code: str, start: int, end: int, content: str, title: str = "fix it",
          safe: bool = True) -> Diagnostic:
    d = Diagnostic(code=code, message="m", filename=src.path, start=start, end=end,
                   fix=Fix(Applicability.SAFE if safe else Applicability.UNSAFE, title,
                           (Edit(start, end, content),)))
    return src.locate(d)


def _rule(*findings):
    """A fake analysis: each finding is f(src) -> list of diagnostics; counts the analyses."""
    calls = []

    def analyze(src):
        calls.append(src.text)
        return Round(src, [d for f in findings for d in f(src)], 0)
    return analyze, calls


def test_a_repeated_edit_is_detected_in_the_next_round_and_rolled_back():
    # the old macro bug, simulated: `LANE` -> `LANE % warpSize` at the same place every round
    def lane(src):
        at = src.text.find("LANE")
        return [_diag(src, "CP102", at, at + 4, "LANE % warpSize")] if at >= 0 else []

    def mask(src):
        at = src.text.find("0xffffffff,")
        return [_diag(src, "CP202", at, at + 10, "~0ull")] if at >= 0 else []
    src = SourceFile("r.cu", "int a = LANE;\nint m = f(0xffffffff, a);\n")
    analyze, calls = _rule(lane, mask)
    out = fix_loop(src, analyze)
    assert out.text == "int a = LANE;\nint m = f(~0ull, a);\n"        # the other fix is kept
    assert out.fixed == {"CP202": 1}
    assert out.unconverged == ["fix did not converge for CP102 at line 1; left as is"]
    d = next(d for d in out.final.diagnostics if d.code == "CP102")
    assert d.fix.applicability == Applicability.DISPLAY_ONLY and "did not converge" in d.fix.message
    assert len(calls) <= 4                                               # not ruff's 100 rounds


def test_two_fixes_undoing_each_other_stop_at_the_cycle():
    def a_to_b(src):
        return [_diag(src, "CP101", i, i + 1, "B") for i in range(len(src.text)) if src.text[i] == "A"]

    def b_to_a(src):
        return [_diag(src, "CP103", i, i + 1, "A") for i in range(len(src.text)) if src.text[i] == "B"]
    analyze, calls = _rule(a_to_b, b_to_a)
    out = fix_loop(SourceFile("c.cu", "x A y\n"), analyze)
    assert out.text == "x B y\n"
    assert out.fixed == {"CP101": 1}
    assert out.unconverged == ["fix did not converge for CP103 at line 1; left as is"]


def test_a_finding_that_comes_back_after_its_fix_is_not_fixed():
    # the fix wraps the expression instead of fixing it: `X` -> `f(X)` -> `f(f(X))` ... (never the same edit)
    def wrap(src):
        at = src.text.index("= ") + 2
        end = src.text.index(";")
        return [_diag(src, "CP104", at, end, f"f({src.text[at:end]})", title="wrap it")]
    analyze, calls = _rule(wrap)
    out = fix_loop(SourceFile("w.cu", "int v = X;\n"), analyze)
    assert out.text == "int v = X;\n" and out.fixed == {}
    assert out.unconverged == ["fix did not converge for CP104 at line 1; left as is"]
    assert len(calls) <= 3


def test_a_progression_of_different_fixes_at_one_place_is_not_flagged():
    # nested `(t / 32) % 32`: the outer fix first, the inner one in the next round (the warp intrinsic makes the fixes
    # safe: CP102 fixes a 32 automatically only where warp code shows it is the warp size)
    text = "__global__ void k(int *o) { o[0] = (threadIdx.x / 32) % 32; __syncwarp(); }\n"
    out = fix_source(SourceFile("n.cu", text))
    assert "(threadIdx.x / warpSize) % warpSize" in out.text
    assert out.fixed == {"CP102": 2} and out.unconverged == []


def test_a_round_that_adds_clang_errors_is_not_applied():
    def breaks(src):
        at = src.text.find("ok")
        return [_diag(src, "CP101", at, at + 2, "((")] if at >= 0 else []

    def analyze(src):
        return Round(src, breaks(src), src.text.count("(("))
    out = fix_loop(SourceFile("e.cu", "int ok;\n"), analyze)
    assert out.text == "int ok;\n" and out.fixed == {}
    assert out.refused == "a fix produced code that no longer parses; it was not applied"


def test_unsafe_fixes_are_applied_only_when_asked():
    def f(src):
        at = src.text.find("old")
        return [_diag(src, "CP302", at, at + 3, "new", safe=False)] if at >= 0 else []
    analyze, _ = _rule(f)
    assert fix_loop(SourceFile("u.cu", "old\n"), analyze).text == "old\n"
    assert fix_loop(SourceFile("u.cu", "old\n"), analyze, unsafe=True).text == "new\n"


def test_offsets_follow_text_through_edits():
    m = _Offsets([Edit(2, 4, "abcd"), Edit(10, 10, "XY")])
    assert m.forward(0) == 0 and m.forward(3) == 2 and m.forward(5) == 7
    assert m.forward(10) == 14 and m.forward(10, end=True) == 12
    assert m.back(3) == 2 and m.back(7) == 5 and m.back(12) == 10 and m.back(14) == 10

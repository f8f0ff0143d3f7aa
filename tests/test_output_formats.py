"""Output formats: exact fields of every format, built from hand-made diagnostics (no libclang)."""
import io
import json

import pytest

import porter
from porter.diagnostics import Applicability, Diagnostic, Edit, Fix
from porter.lint import output, registry
from porter.lint.output import github, render, statistics, use_color
from porter.source import SourceFile

TEXT = "#define WARP 32\n__global__ void k() {\n    int lane = threadIdx.x % 32;\n}\n"


@pytest.fixture(autouse=True)
def rule_docs(monkeypatch):
    # Rule modules are written elsewhere; give every rule a known doc.
    monkeypatch.setattr(registry.RuleInfo, "doc", property(lambda r: f"Summary of {r.name}.\n\n## What it does\nBody."))


def diag(src, code, needle, fix=None, severity="error", nth=0):
    start = -1
    for _ in range(nth + 1):
        start = src.data.index(needle.encode(), start + 1)
    d = Diagnostic(code, f"message for {code}", src.path, start, start + len(needle.encode()), fix=fix,
                   severity=severity, name=registry.RULES[code].name, url=registry.RULES[code].url)
    return src.locate(d)


@pytest.fixture
def case():
    src = SourceFile("kernels/k.cu", TEXT)
    d1 = diag(src, "CP101", "32", Fix(Applicability.SAFE, "Replace with `warpSize`",
                                      (Edit(13, 15, "warpSize"),)))
    o = src.data.index(b"% 32")
    d2 = diag(src, "CP102", "% 32", Fix(Applicability.UNSAFE, "Use `% warpSize`", (Edit(o + 2, o + 4, "warpSize"),)))
    d3 = diag(src, "CP401", "lane", severity="warning")
    return [d1, d2, d3], {"kernels/k.cu": src}


def test_lazy_registry_of_formats():
    assert set(output.FORMATS) == {"full", "concise", "json", "json-lines", "github", "sarif"}
    with pytest.raises(ValueError, match="unknown output format 'xml'"):
        render("xml", [], {})


# -- full / concise ---------------------------------------------------------------------------------
def test_full(case):
    diags, sources = case
    out = render("full", diags, sources)
    assert out.startswith(
        "CP101 [*] message for CP101\n"
        " --> kernels/k.cu:1:14\n"
        "  |\n"
        "1 | #define WARP 32\n"
        "  |              ^^\n"
        "  |\n"
        "help: Replace with `warpSize`\n"
        "\n"
        "CP102 message for CP102\n"         # unsafe fix: no [*] unless --unsafe-fixes
        " --> kernels/k.cu:3:28\n")
    assert "3 |     int lane = threadIdx.x % 32;\n  |                            ^^^^\n" in out
    assert out.endswith("Found 3 errors.\n[*] 1 fixable with the --fix option.\n"
                        "(1 hidden fix can be enabled with the --unsafe-fixes option)\n")
    assert "\x1b[" not in out


def test_full_unsafe_fixes_and_fix_mode(case):
    diags, sources = case
    out = render("full", diags, sources, unsafe_fixes=True)
    assert "CP102 [*] message" in out
    assert out.endswith("Found 3 errors.\n[*] 2 fixable with the --fix option.\n")
    # After --fix ran, remaining diagnostics are not advertised as fixable.
    out = render("full", diags, sources, fix_available=False, fixed=2)
    assert "[*]" not in out and "hidden" not in out
    assert out.endswith("Found 5 errors (2 fixed, 3 remaining).\n")


def test_full_show_fixes_diff(case):
    diags, sources = case
    out = render("full", diags[:1], sources, show_fixes=True)
    assert "help: Replace with `warpSize`\n1 - #define WARP 32\n1 + #define WARP warpSize\n" in out


def test_full_multiline_span_and_wide_gutter():
    text = "\n" * 9 + "int a =\n    32;\n"
    src = SourceFile("m.cu", text)
    d = src.locate(Diagnostic("CP101", "m", "m.cu", text.index("int"), text.index(";"), name="warp-size-constant"))
    out = render("full", [d], {"m.cu": src})
    assert "  --> m.cu:10:1\n   |\n10 | int a =\n   | ^^^^^^^\n11 |     32;\n   | ^^^^^^\n   |\n" in out


def test_full_color(case):
    diags, sources = case
    out = render("full", diags, sources, color=True)
    assert "\x1b[1;31mCP101\x1b[0m \x1b[36m[*]\x1b[0m" in out
    assert "\x1b[1;33mCP401" in out  # warnings in yellow


def test_nothing_found():
    assert render("full", [], {}) == "All checks passed!\n"
    assert render("concise", [], {}) == "All checks passed!\n"
    assert render("full", [], {}, color=True) == "\x1b[1;32mAll checks passed!\x1b[0m\n"
    assert render("json", [], {}) == "[]\n"
    assert render("json-lines", [], {}) == ""
    assert render("github", [], {}) == ""


def test_concise(case):
    diags, sources = case
    assert render("concise", diags, sources) == (
        "kernels/k.cu:1:14: CP101 [*] message for CP101\n"
        "kernels/k.cu:3:28: CP102 message for CP102\n"
        "kernels/k.cu:3:9: CP401 message for CP401\n"
        "Found 3 errors.\n[*] 1 fixable with the --fix option.\n"
        "(1 hidden fix can be enabled with the --unsafe-fixes option)\n")


def test_singular_summary(case):
    diags, sources = case
    assert render("concise", diags[2:], sources).endswith("Found 1 error.\n")


def test_machine_formats_never_coloured(case):
    diags, sources = case
    for fmt in ("json", "json-lines", "github", "sarif"):
        assert "\x1b[" not in render(fmt, diags, sources, color=True)


# -- json -----------------------------------------------------------------------------------------
def test_json_fields(case):
    diags, sources = case
    data = json.loads(render("json", diags, sources))
    assert len(data) == 3
    assert data[0] == {
        "code": "CP101",
        "name": "warp-size-constant",
        "filename": "kernels/k.cu",
        "location": {"row": 1, "column": 14},
        "end_location": {"row": 1, "column": 16},
        "message": "message for CP101",
        "severity": "error",
        "fix": {"applicability": "safe", "message": "Replace with `warpSize`",
                "edits": [{"content": "warpSize", "location": {"row": 1, "column": 14},
                           "end_location": {"row": 1, "column": 16}}]},
        "url": "https://cuport.dev/rules/CP101",
        "noqa_row": 1,
    }
    assert data[1]["fix"]["applicability"] == "unsafe"
    assert data[1]["fix"]["edits"][0]["location"] == {"row": 3, "column": 30}
    assert data[2]["fix"] is None and data[2]["severity"] == "warning"


def test_json_lines(case):
    diags, sources = case
    lines = render("json-lines", diags, sources).splitlines()
    assert [json.loads(l)["code"] for l in lines] == ["CP101", "CP102", "CP401"]
    assert json.loads(lines[0]) == json.loads(render("json", diags, sources))[0]


def test_json_edit_positions_count_characters():
    text = 'const char* s = "é"; int w = 32;\n'
    src = SourceFile("u.cu", text)
    start = src.data.index(b"32")
    d = src.locate(Diagnostic("CP101", "m", "u.cu", start, start + 2,
                              fix=Fix(Applicability.SAFE, "t", (Edit(start, start + 2, "warpSize"),))))
    obj = json.loads(render("json", [d], {"u.cu": src}))[0]
    assert obj["location"] == {"row": 1, "column": text.index("32") + 1}
    assert obj["fix"]["edits"][0]["location"] == obj["location"]


# -- github ---------------------------------------------------------------------------------------
def test_github(case):
    diags, sources = case
    lines = render("github", diags, sources).splitlines()
    assert lines[0] == ("::error title=cuport (CP101),file=kernels/k.cu,line=1,col=14,endLine=1,endColumn=16"
                        "::CP101 message for CP101")
    assert lines[2].startswith("::warning title=cuport (CP401),file=kernels/k.cu,line=3,col=9,")


def test_github_escaping():
    src = SourceFile("a,b:c%.cu", "int x = 32;\n")
    d = src.locate(Diagnostic("CP101", "100% wrong\nsecond line\r", "a,b:c%.cu", 8, 10, name="warp-size-constant"))
    line = render("github", [d], {d.filename: src})
    assert line == ("::error title=cuport (CP101),file=a%2Cb%3Ac%25.cu,line=1,col=9,endLine=1,endColumn=11"
                    "::CP101 100%25 wrong%0Asecond line%0D\n")
    assert github.escape_data("a:b,c") == "a:b,c"  # data keeps `:` and `,`


# -- sarif ----------------------------------------------------------------------------------------
def test_sarif_structure(case, tmp_path, monkeypatch):
    diags, sources = case
    monkeypatch.chdir(tmp_path)
    doc = json.loads(render("sarif", diags, sources))
    assert doc["version"] == "2.1.0"
    assert doc["$schema"].endswith("sarif-2.1.0.json")
    run, = doc["runs"]
    driver = run["tool"]["driver"]
    assert driver["name"] == "cuport"
    assert driver["version"] == porter.__version__
    assert driver["informationUri"].startswith("https://")
    rule_ids = [r["id"] for r in driver["rules"]]
    assert rule_ids == ["CP101", "CP102", "CP401"]
    rule = driver["rules"][0]
    assert rule["name"] == "warp-size-constant"
    assert rule["shortDescription"]["text"] == "Summary of warp-size-constant."
    assert rule["fullDescription"]["text"].startswith("Summary of warp-size-constant.\n\n## What it does")
    assert rule["help"]["text"] == rule["help"]["markdown"] == rule["fullDescription"]["text"]
    assert rule["helpUri"] == "https://cuport.dev/rules/CP101"
    assert driver["rules"][2]["defaultConfiguration"]["level"] == "warning"
    assert run["originalUriBaseIds"]["%SRCROOT%"]["uri"] == tmp_path.as_uri() + "/"

    results = run["results"]
    assert len(results) == 3
    for r in results:
        assert r["ruleId"] in rule_ids
        assert rule_ids[r["ruleIndex"]] == r["ruleId"]
        assert r["level"] in ("error", "warning", "note")
        assert r["message"]["text"]
    r = results[1]
    assert r["ruleId"] == "CP102" and r["level"] == "error"
    loc = r["locations"][0]["physicalLocation"]
    assert loc["artifactLocation"] == {"uri": "kernels/k.cu", "uriBaseId": "%SRCROOT%"}
    assert loc["region"] == {"startLine": 3, "startColumn": 28, "endLine": 3, "endColumn": 32}
    assert results[2]["level"] == "warning"


def test_sarif_fixes_and_fingerprints(case, tmp_path, monkeypatch):
    diags, sources = case
    monkeypatch.chdir(tmp_path)
    results = json.loads(render("sarif", diags, sources))["runs"][0]["results"]
    fix, = results[0]["fixes"]
    assert fix["description"]["text"] == "Replace with `warpSize`"
    change, = fix["artifactChanges"]
    assert change["artifactLocation"]["uri"] == "kernels/k.cu"
    assert change["replacements"] == [{
        "deletedRegion": {"startLine": 1, "startColumn": 14, "endLine": 1, "endColumn": 16},
        "insertedContent": {"text": "warpSize"}}]
    assert "fixes" not in results[2]
    hashes = [r["partialFingerprints"]["primaryLocationLineHash"] for r in results]
    assert all(len(h.split(":")[0]) == 16 and h.split(":")[1] == "1" for h in hashes)
    # Stable: moving the line down or changing its indentation keeps the hash.
    moved = SourceFile("kernels/k.cu", "\n\n" + TEXT.replace("#define", "  #define"))
    d = diag(moved, "CP101", "32")
    again = json.loads(render("sarif", [d], {"kernels/k.cu": moved}))["runs"][0]["results"][0]
    assert again["partialFingerprints"]["primaryLocationLineHash"] == hashes[0]


def test_sarif_occurrence_index_for_identical_lines(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    src = SourceFile("d.cu", "x = 32;\nx = 32;\n")
    ds = [diag(src, "CP101", "32"), diag(src, "CP101", "32", nth=1)]
    results = json.loads(render("sarif", ds, {"d.cu": src}))["runs"][0]["results"]
    h1, h2 = (r["partialFingerprints"]["primaryLocationLineHash"] for r in results)
    assert h1.split(":")[0] == h2.split(":")[0]
    assert (h1.split(":")[1], h2.split(":")[1]) == ("1", "2")


def test_sarif_relative_uri_from_absolute_path(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    path = str(tmp_path / "sub dir" / "k.cu")
    src = SourceFile(path, "int x = 32;\n")
    d = src.locate(Diagnostic("CP101", "m", path, 8, 10))
    doc = json.loads(render("sarif", [d], {path: src}))
    art = doc["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]
    assert art == {"uri": "sub%20dir/k.cu", "uriBaseId": "%SRCROOT%"}
    # Outside the root: an absolute file URI, no base id.
    doc = json.loads(render("sarif", [d], {path: src}, root=str(tmp_path / "elsewhere")))
    art = doc["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]
    assert art == {"uri": (tmp_path / "sub dir" / "k.cu").as_uri()}


def test_sarif_rule_doc_missing_falls_back_to_name(monkeypatch, tmp_path):
    def boom(r):
        raise ImportError("not written yet")
    monkeypatch.setattr(registry.RuleInfo, "doc", property(boom))
    monkeypatch.setattr(registry.RuleInfo, "summary", property(boom))
    monkeypatch.chdir(tmp_path)
    src = SourceFile("k.cu", "int x = 32;\n")
    d = src.locate(Diagnostic("CP101", "m", "k.cu", 8, 10))
    rule = json.loads(render("sarif", [d], {"k.cu": src}))["runs"][0]["tool"]["driver"]["rules"][0]
    assert rule["shortDescription"]["text"] == rule["help"]["text"] == "warp-size-constant"


# -- statistics, colour ---------------------------------------------------------------------------
def test_statistics(case):
    diags, _ = case
    assert statistics(diags + diags[2:]) == (
        "2\tCP401\t[ ] shared-bank-conflict\n"
        "1\tCP101\t[*] warp-size-constant\n"
        "1\tCP102\t[ ] hardcoded-lane-arithmetic\n")
    assert statistics(diags[2:]) == "1\tCP401\tshared-bank-conflict\n"
    assert statistics([]) == ""


class Stream(io.StringIO):
    def __init__(self, tty):
        super().__init__()
        self.tty = tty

    def isatty(self):
        return self.tty


@pytest.mark.parametrize("choice, env, tty, expected", [
    ("always", {"NO_COLOR": "1"}, False, True),
    ("never", {"FORCE_COLOR": "1"}, True, False),
    ("auto", {}, True, True),
    ("auto", {}, False, False),
    ("auto", {"NO_COLOR": "1"}, True, False),
    ("auto", {"NO_COLOR": ""}, True, True),          # empty NO_COLOR does not count
    ("auto", {"FORCE_COLOR": "1"}, False, True),
    ("auto", {"FORCE_COLOR": "0"}, False, False),
    ("auto", {"NO_COLOR": "1", "FORCE_COLOR": "1"}, True, False),  # NO_COLOR first
    ("auto", {"TERM": "dumb"}, True, False),
    ("auto", {"TERM": "dumb", "FORCE_COLOR": "1"}, False, True),
])
def test_use_color(monkeypatch, choice, env, tty, expected):
    for var in ("NO_COLOR", "FORCE_COLOR", "TERM"):
        monkeypatch.delenv(var, raising=False)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    assert use_color(choice, Stream(tty)) is expected


def test_use_color_odd_streams(monkeypatch):
    for var in ("NO_COLOR", "FORCE_COLOR", "TERM"):
        monkeypatch.delenv(var, raising=False)
    assert use_color("auto", object()) is False
    closed = io.StringIO()
    closed.close()
    assert use_color("auto", closed) is False
    with pytest.raises(ValueError):
        use_color("sometimes", Stream(True))


def test_render_imports_only_the_chosen_format():
    import subprocess
    import sys
    code = ("import sys; from porter.lint.output import render; render('concise', [], {}); "
            "print(sorted(m for m in sys.modules if m.startswith('porter.lint.output.')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "['porter.lint.output.concise']"

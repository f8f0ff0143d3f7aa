"""Cache and configuration are untrusted input (issue 11.6): a corrupt or foreign cache entry is a miss that is
rewritten; a bad config is exit 2 naming the key and the file; any valid [tool.cuport] table works everywhere."""
import json
import os
import subprocess
import sys

import pytest

from porter.lint.cache import FORMAT, Cache

BAD = "__global__ void k(float *a) {\n  int lane = threadIdx.x % 32;\n  a[lane] = 1.0f;\n}\n"


def cuport(*args, cwd=None):
    r = subprocess.run([sys.executable, "-m", "porter", *args], cwd=cwd, capture_output=True, text=True,
                       env=dict(os.environ, NO_COLOR="1"), timeout=180)
    assert "Traceback" not in r.stderr and "internal error" not in r.stderr, r.stderr
    return r


# --- cache ----------------------------------------------------------------------------------------------------

def _entry(tmp_path):
    files = [os.path.join(d, f) for d, _, fs in os.walk(tmp_path / ".cuport_cache") for f in fs]
    assert len(files) == 1, files
    return files[0]


GOOD_DIAG = {"c": "CP102", "m": "m", "f": "k.cu", "s": 1, "e": 2, "r": 1, "col": 1, "er": 1, "ec": 2,
             "sev": "error", "n": "n", "u": "", "fix": None}


@pytest.mark.parametrize("content", [
    "not json at all {",
    "",
    json.dumps([GOOD_DIAG]),                                          # the old format (a bare list)
    json.dumps({"format": FORMAT, "key": "someone-else", "diagnostics": []}),      # a foreign entry
    json.dumps({"format": FORMAT, "key": None, "diagnostics": [{"c": "CP102"}]}),
    "KEY:" + json.dumps([{**GOOD_DIAG, "s": "one"}]),                 # well-formed JSON, wrong types
    "KEY:" + json.dumps([{**GOOD_DIAG, "fix": {"a": "bogus", "m": "", "e": []}}]),
    "KEY:" + json.dumps([{**GOOD_DIAG, "fix": {"a": "safe", "m": "", "e": [[5, 1, "x"]]}}]),
    "KEY:" + json.dumps({"c": 1}),
    "KEY:" + "[" * 100000 + "]" * 100000,
])
def test_a_corrupt_or_foreign_cache_entry_is_a_miss_that_is_rewritten(tmp_path, content):
    (tmp_path / "k.cu").write_text(BAD)
    cold = cuport("lint", "--output-format", "concise", "k.cu", cwd=tmp_path)
    assert cold.returncode == 1 and "k.cu:2:14: CP102" in cold.stdout
    entry = _entry(tmp_path)
    key = os.path.basename(entry)[:-5]
    if content.startswith("KEY:"):
        body = content[4:]
        content = '{"format": %d, "key": "%s", "diagnostics": %s}' % (FORMAT, key, body)
    with open(entry, "w") as fh:
        fh.write(content)
    warm = cuport("lint", "--output-format", "concise", "k.cu", cwd=tmp_path)
    assert (warm.returncode, warm.stdout, warm.stderr) == (cold.returncode, cold.stdout, cold.stderr)
    with open(entry) as fh:
        rewritten = json.load(fh)
    assert rewritten["format"] == FORMAT and rewritten["key"] == key
    assert [d["c"] for d in rewritten["diagnostics"]] == ["CP102"]


def test_a_cache_entry_that_is_a_directory_or_fifo_is_a_miss(tmp_path):
    cache = Cache(str(tmp_path), "h")
    os.makedirs(cache.dir)
    os.mkdir(os.path.join(cache.dir, "a.json"))
    os.mkfifo(os.path.join(cache.dir, "b.json"))
    assert cache.get("a") is None and cache.get("b") is None          # and get("b") did not block
    cache.put("a", [])                                                 # cannot replace a directory: no error
    assert cache.get("missing") is None


def test_a_valid_entry_round_trips_and_the_path_spelling_is_part_of_the_key(tmp_path):
    cache = Cache(str(tmp_path), "h")
    from porter.diagnostics import Applicability, Diagnostic, Edit, Fix
    d = Diagnostic("CP102", "m", "k.cu", 3, 5, 1, 4, 1, 6, Fix(Applicability.SAFE, "fx", (Edit(3, 5, "w"),)))
    key = cache.key("k.cu", b"data")
    cache.put(key, [d])
    got = cache.get(key)
    assert got == [d] and got[0].fix.edits == (Edit(3, 5, "w"),)
    assert cache.key("./k.cu", b"data") != key and cache.key("k.cu", b"datb") != key


def test_warm_run_from_another_spelling_reports_that_spelling(tmp_path):
    (tmp_path / "k.cu").write_text(BAD)
    assert "k.cu:2:14" in cuport("lint", "--output-format", "concise", "k.cu", cwd=tmp_path).stdout
    r = cuport("lint", "--output-format", "concise", "./k.cu", cwd=tmp_path)
    assert "./k.cu:2:14: CP102" in r.stdout


def test_a_changed_header_invalidates_its_includers_entry(tmp_path):
    # the key hashes the file itself: before, editing the header it includes left the old findings in the cache
    (tmp_path / "k.cu").write_text('#include "warp.cuh"\n#include <cstdio>\n'
                                   "__global__ void k(float *a) {\n  int lane = threadIdx.x % WARP;\n  a[lane] = 1.0f;\n}\n")
    (tmp_path / "warp.cuh").write_text("#define WARP warpSize\n")
    first = cuport("lint", "--output-format", "concise", "k.cu", cwd=tmp_path)
    assert first.returncode == 0, first.stdout
    deps = json.load(open(_entry(tmp_path)))["deps"]
    assert deps == [[str(tmp_path / "warp.cuh"), _sha(b"#define WARP warpSize\n")]], deps   # no stub, no <cstdio>
    (tmp_path / "warp.cuh").write_text("#define WARP 32\n")
    second = cuport("lint", "--output-format", "concise", "k.cu", cwd=tmp_path)
    assert second.returncode == 1 and "k.cu:4:14: CP102" in second.stdout, second.stdout
    assert cuport("lint", "--output-format", "concise", "k.cu", cwd=tmp_path).stdout == second.stdout   # a hit now


def test_a_quoted_include_that_appears_invalidates_the_entry(tmp_path):
    (tmp_path / "k.cu").write_text('#include "later.cuh"\n'
                                   "__global__ void k(float *a) {\n  int lane = threadIdx.x % WARP;\n  a[lane] = 1.0f;\n}\n")
    cuport("lint", "--output-format", "concise", "k.cu", cwd=tmp_path)
    deps = json.load(open(_entry(tmp_path)))["deps"]
    assert deps == [[str(tmp_path / "later.cuh"), None]], deps
    (tmp_path / "later.cuh").write_text("#define WARP 32\n")
    r = cuport("lint", "--output-format", "concise", "k.cu", cwd=tmp_path)
    assert "k.cu:3:14: CP102" in r.stdout, r.stdout


def _sha(data: bytes) -> str:
    import hashlib
    return hashlib.sha256(data).hexdigest()


# --- config -----------------------------------------------------------------------------------------------------

CONFIG_ERRORS = [
    ('bogus = 1', ["unknown key 'bogus'"]),
    ('selct = ["CP1"]', ["unknown key 'selct'", "did you mean 'select'"]),
    ('select = "CP1"', ["select: expected list"]),
    ('defines = 3', ["defines: expected list or dict, got int"]),
    ('exclude = ["[z-a]"]', ["exclude: bad glob '[z-a]'"]),
    ('per-file-ignores = { "[]" = ["CP1"] }', ["per-file-ignores: bad glob '[]'"]),
    ('extend-exclude = [""]', ["extend-exclude: empty glob"]),
    ('vulkan-max-shared = 0', ["vulkan-max-shared: expected a positive number"]),
    ('verify = 3', ["verify: expected dict"]),
]
OTHERS = [["report", "--no-compile"], ["translate", "--to", "hip"], ["translate", "--to", "opencl", "--no-validate"]]


@pytest.mark.parametrize("table,words,argv", [(t, w, ["lint", "--no-cache"]) for t, w in CONFIG_ERRORS] +
                         [(t, w, argv) for t, w in CONFIG_ERRORS[:1] + CONFIG_ERRORS[4:5] for argv in OTHERS])
def test_config_errors_are_exit_2_naming_the_key_and_the_file(tmp_path, table, words, argv):
    (tmp_path / "pyproject.toml").write_text(f"[tool.cuport]\n{table}\n")
    (tmp_path / "k.cu").write_text(BAD)
    r = cuport(*argv, "k.cu", cwd=tmp_path)
    assert r.returncode == 2 and r.stdout == ""
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and str(tmp_path / "pyproject.toml") in lines[0], r.stderr
    assert all(w in lines[0] for w in words), lines[0]
    assert (tmp_path / "k.cu").read_text() == BAD


VALID_TABLES = [
    'select = ["CP1"]',                                            # no defines (report crashed on this)
    'defines = { N = "4" }\ninclude-dirs = ["inc"]',
    'defines = ["N=4"]\nextra-args = ["-DM=1"]\ntarget-arch = ["gfx90a"]',
    'exclude = ["build"]\nper-file-ignores = { "*.cuh" = ["CP1"] }\ncache-dir = "c"\nvulkan-max-shared = 16384',
    '[tool.cuport.launch]\nk = { block = [64] }\n[tool.cuport.translate]\nx = 1',
]


@pytest.mark.parametrize("table", VALID_TABLES)
def test_every_subcommand_works_with_any_valid_table(tmp_path, table):
    (tmp_path / "pyproject.toml").write_text(f"[tool.cuport]\n{table}\n")
    (tmp_path / "k.cu").write_text(BAD)
    (tmp_path / "inc").mkdir()
    codes = {}
    for argv in (["lint", "--no-cache"], ["report", "--no-compile"], ["translate", "--to", "hip"],
                 ["translate", "--to", "glsl", "--no-validate"], ["translate", "--to", "opencl", "--no-validate"]):
        r = cuport(*argv, "k.cu", cwd=tmp_path)
        codes[" ".join(argv[:3])] = r.returncode
        assert r.returncode in (0, 1) and r.stdout, (argv, r.stderr)
    assert codes["lint --no-cache"] == 1


def test_the_cache_directory_changes_with_the_linters_own_code(tmp_path, monkeypatch):
    # pre-commit keeps one .cuport_cache per project across hook revs of one version number: an entry written by
    # other rule code must be another directory, never a stale hit
    import porter
    from porter.lint import cache as cache_mod
    pkg = tmp_path / "src" / "porter"
    (pkg / "lint").mkdir(parents=True)
    (tmp_path / "src" / "pyproject.toml").write_text("")
    rule = pkg / "lint" / "rule.py"
    rule.write_text("X = 32\n")
    (tmp_path / "src" / "rules").mkdir()
    table = tmp_path / "src" / "rules" / "t.csv"
    table.write_text("a,b\n")
    monkeypatch.setattr(cache_mod, "__file__", str(pkg / "lint" / "cache.py"))

    def fingerprint():
        cache_mod.code_fingerprint.cache_clear()
        return cache_mod.code_fingerprint()
    first = fingerprint()
    assert fingerprint() == first                                         # stable while nothing changes
    rule.write_text("X = 64\n")                                           # a rule edited (size)
    second = fingerprint()
    os.utime(table, ns=(1, 1))                                            # a data table touched (mtime)
    third = fingerprint()
    (pkg / "lint" / "__pycache__").mkdir()
    (pkg / "lint" / "__pycache__" / "rule.cpython-311.pyc").write_bytes(b"x")
    assert len({first, second, third}) == 3 and fingerprint() == third    # compiled files are not the code
    cache_mod.code_fingerprint.cache_clear()
    monkeypatch.undo()
    cache_mod.code_fingerprint.cache_clear()
    assert Cache(str(tmp_path), "h").dir == os.path.join(
        str(tmp_path), f"{porter.__version__}-{cache_mod.code_fingerprint()}", "h")

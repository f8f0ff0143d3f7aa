"""Exit codes, bad input and the command-line surface, run as a user would (a subprocess)."""
import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

GOOD = "__global__ void k(float *a) { a[threadIdx.x] = 1.0f; }\n"
BAD = "__global__ void k(float *a) {\n  int lane = threadIdx.x % 32;\n  a[lane] = 1.0f;\n}\n"


def cuport(*args, cwd=None, env=None):
    e = dict(os.environ, NO_COLOR="1")
    e.update(env or {})
    r = subprocess.run([sys.executable, "-m", "porter", *args], cwd=cwd, capture_output=True, text=True,
                       env=e, timeout=120)
    assert "Traceback" not in r.stderr, r.stderr   # bad input and exit paths print one line, never a traceback
    return r


@pytest.fixture
def tree(tmp_path):
    (tmp_path / "good.cu").write_text(GOOD)
    (tmp_path / "bad.cu").write_text(BAD)
    return tmp_path


def test_clean_file_exits_0(tree):
    r = cuport("lint", "--no-cache", "good.cu", cwd=tree)
    assert r.returncode == 0, r.stderr
    assert "All checks passed!" in r.stdout


def test_findings_exit_1_with_location(tree):
    r = cuport("lint", "--no-cache", "--output-format", "concise", "bad.cu", cwd=tree)
    assert r.returncode == 1
    assert "bad.cu:2:14: CP102" in r.stdout


def test_exit_zero(tree):
    assert cuport("lint", "--no-cache", "--exit-zero", "bad.cu", cwd=tree).returncode == 0


def test_missing_file_exit_2_one_line_others_still_linted(tree):
    r = cuport("lint", "--no-cache", "--output-format", "concise", "nope.cu", "bad.cu", cwd=tree)
    assert r.returncode == 2
    assert r.stderr.strip().splitlines() == ["cuport: error: nope.cu: No such file or directory"]
    assert "bad.cu:2:14: CP102" in r.stdout
    assert "Traceback" not in r.stderr


def test_directory_without_sources(tmp_path):
    (tmp_path / "readme.txt").write_text("x")
    r = cuport("lint", str(tmp_path))
    assert r.returncode == 2
    assert "no CUDA sources" in r.stderr and "Traceback" not in r.stderr


def test_binary_and_non_utf8_files(tree):
    (tree / "bin.cu").write_bytes(b"\x7fELF\x00\x01\x02")
    (tree / "latin.cu").write_bytes("// caf\xe9\n".encode("latin-1"))
    r = cuport("lint", "--no-cache", "--output-format", "concise", "bin.cu", "latin.cu", "bad.cu", cwd=tree)
    assert r.returncode == 2
    errs = r.stderr.strip().splitlines()
    assert len(errs) == 2 and "binary file" in errs[0] and "not valid UTF-8" in errs[1]
    assert "bad.cu:2:14: CP102" in r.stdout


def test_empty_file_is_clean(tree):
    (tree / "empty.cu").write_text("")
    assert cuport("lint", "--no-cache", "empty.cu", cwd=tree).returncode == 0


def test_large_file(tree):
    body = "".join(f"__global__ void k{i}(float *a) {{ a[threadIdx.x] += {i}.0f; }}\n" for i in range(20000))
    (tree / "big.cu").write_text(body)
    assert (tree / "big.cu").stat().st_size > 1_000_000
    r = cuport("lint", "--no-cache", "big.cu", cwd=tree)
    assert r.returncode == 0, r.stderr[-500:]


def test_parse_error_is_cp000_exit_1(tree):
    (tree / "broken.cu").write_text("__global__ void k(float *a) {\n  a[threadIdx.x] = 1.0f\n}\n")
    r = cuport("lint", "--no-cache", "--output-format", "json", "broken.cu", cwd=tree)
    assert r.returncode == 1 and "Traceback" not in r.stderr
    out = json.loads(r.stdout)
    assert out[0]["code"] == "CP000"
    assert out[0]["location"] == {"row": 2, "column": 24}
    assert "expected ';'" in out[0]["message"]


def test_unknown_code_names_closest(tree):
    r = cuport("lint", "--select", "CP1O2", "bad.cu", cwd=tree)
    assert r.returncode == 2
    assert "CP102" in r.stderr and "Traceback" not in r.stderr


def test_unknown_code_in_config(tree):
    (tree / "cuport.toml").write_text('ignore = ["CP4O1"]\n')
    r = cuport("lint", "bad.cu", cwd=tree)
    assert r.returncode == 2 and "CP401" in r.stderr


def test_fix_writes_and_reparses(tree):
    r = cuport("lint", "--no-cache", "--fix", "--select", "CP102", "bad.cu", cwd=tree)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "threadIdx.x % warpSize" in (tree / "bad.cu").read_text()
    assert cuport("lint", "--no-cache", "--select", "CP102", "bad.cu", cwd=tree).returncode == 0


def test_diff_writes_nothing(tree):
    r = cuport("lint", "--no-cache", "--diff", "--select", "CP102", "bad.cu", cwd=tree)
    assert "-  int lane = threadIdx.x % 32;" in r.stdout and "+  int lane = threadIdx.x % warpSize;" in r.stdout
    assert (tree / "bad.cu").read_text() == BAD


def test_cache_hit_gives_same_result(tree):
    a = cuport("lint", "--output-format", "json", "bad.cu", cwd=tree)
    assert (tree / ".cuport_cache").is_dir()
    b = cuport("lint", "--output-format", "json", "bad.cu", cwd=tree)
    assert json.loads(a.stdout) == json.loads(b.stdout) and b.returncode == 1


def test_statistics(tree):
    r = cuport("lint", "--no-cache", "--statistics", "bad.cu", cwd=tree)
    assert "CP102" in r.stdout and "hardcoded-lane-arithmetic" in r.stdout


def test_rule_docs():
    r = cuport("rule", "CP102")
    assert r.returncode == 0 and "## Why is this bad?" in r.stdout
    r = cuport("rule", "--all", "--output-format", "json")
    rules = json.loads(r.stdout)
    assert {x["code"] for x in rules} >= {"CP000", "CP101", "CP401", "CP502"}
    assert all(x["explanation"] for x in rules)
    assert cuport("rule", "CP999").returncode == 2


def test_directory_walk_and_many_files_parallel(tmp_path):
    for i in range(20):
        (tmp_path / f"k{i}.cu").write_text(BAD if i % 2 else GOOD)
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "h.cuh").write_text(BAD)
    r = cuport("lint", "--no-cache", "--output-format", "json", str(tmp_path))
    found = {os.path.basename(d["filename"]) for d in json.loads(r.stdout)}
    assert found == {f"k{i}.cu" for i in range(1, 20, 2)} | {"h.cuh"}


@pytest.mark.parametrize("target,suffix", [("glsl", ".comp"), ("opencl", ".cl"), ("hip", ".cu")])
def test_translate_a_directory_keeps_its_layout(tmp_path, target, suffix):
    src = tmp_path / "src"
    (src / "a").mkdir(parents=True)
    (src / "a" / "k.cu").write_text(GOOD)
    (src / "top.cu").write_text("__global__ void t(float *a, float s) { a[threadIdx.x] *= s; }\n")
    out = tmp_path / "out"
    r = cuport("translate", "--to", target, str(src), "--output-dir", str(out))
    assert r.returncode == 0, r.stderr
    produced = sorted(str(p.relative_to(out)) for p in out.rglob("*" + suffix))
    if target == "glsl":
        assert produced == ["a/k.k.comp", "top.t.comp"]
    elif target == "opencl":
        assert produced == ["a/k.cl", "top.cl"]
    else:
        assert produced == ["a/k.cu", "top.cu"]
        assert "hip/hip_runtime.h" in (out / "top.cu").read_text()


def test_rules_doc_is_generated_from_the_rule_modules():
    """docs/rules.md is `cuport rule --all`: regenerate it when a rule's documentation changes."""
    r = cuport("rule", "--all")
    with open(os.path.join(ROOT, "docs", "rules.md"), encoding="utf-8") as fh:
        assert r.stdout == fh.read(), "docs/rules.md is stale: run `cuport rule --all > docs/rules.md`"


STD_HOST = ("#include <vector>\n#include <string>\n#include <algorithm>\n#include <iostream>\n#include <chrono>\n"
            "__global__ void k(float *a) { a[threadIdx.x] = 1.0f; }\n"
            "int main() {\n  std::vector<float> h(64);\n  std::string s = \"x\";\n  std::sort(h.begin(), h.end());\n"
            "  auto t0 = std::chrono::high_resolution_clock::now();\n  std::cout << s << std::endl;\n"
            "  float *d; cudaMalloc(&d, 256); k<<<1, 64>>>(d);\n  return 0;\n}\n")


@pytest.mark.parametrize("mode", [[], ["--full-headers"]])
def test_host_code_with_the_standard_library_is_not_a_parse_error(tmp_path, mode):
    (tmp_path / "host.cu").write_text(STD_HOST)
    r = cuport("lint", "--no-cache", "--output-format", "json", *mode, "host.cu", cwd=tmp_path)
    assert [d["code"] for d in json.loads(r.stdout)] == [], r.stdout
    assert r.returncode == 0


@pytest.mark.parametrize("target", ["hip", "glsl", "opencl"])
def test_translate_never_overwrites_its_input(tmp_path, target):
    src = tmp_path / "k.cu"
    src.write_text(GOOD)
    out = [str(src)] if target != "glsl" else [str(tmp_path)]
    args = ["-o", *out] if target != "hip" else ["--output-dir", str(tmp_path)]
    r = cuport("translate", "--to", target, str(src), *args)
    if target == "glsl":           # shaders go to <dir>/<kernel>.comp: the source is untouched
        assert r.returncode == 0 and (tmp_path / "k.comp").exists()
    else:
        assert r.returncode == 2 and "input" in r.stderr
    assert src.read_text() == GOOD

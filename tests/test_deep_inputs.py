"""Deeply nested inputs (issue 11, item 3): 2,000 nested `if`s, 1,000 chained `?:`, an 8,000-term sum in a kernel
and in host code, deep parentheses and braces. Every command gives a result or a CP000 / CP907 at the place the
nesting passes the limit, never a RecursionError or an internal error. Run as a user would (subprocesses)."""
from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from porter.frontend.model import MAX_NESTING

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def cuport(*args, cwd):
    r = subprocess.run([sys.executable, "-m", "porter", *args], cwd=cwd, capture_output=True, text=True,
                       timeout=600)
    for bad in ("internal error", "Traceback", "RecursionError"):
        assert bad not in r.stderr and bad not in r.stdout, (args, r.stderr[-2000:])
    assert r.returncode in (0, 1), (args, r.returncode, r.stderr[-2000:])
    return r


def nested_ifs(n: int) -> str:
    # the shuffle reads warpSize: a fixed distance (1) in a kernel that never does is refused for OpenCL's one-lane
    # warps since session 6 (shuffle_reach.py), and this test is about nesting
    return ("__global__ void k(float *a, int n) {\n  __shared__ float s[256];\n  int i = threadIdx.x;\n"
            "  s[i] = a[i];\n" + "".join(f"if (i > {j})\n" for j in range(n)) +
            "  { __syncthreads(); s[i + 1] = s[i] + __shfl_down_sync(0xffffffff, s[i], warpSize / 2); }\n"
            "  a[i] = s[i ^ 1];\n}\n")


def ternaries(n: int) -> str:
    e = " : ".join(f"threadIdx.x > {j} ? s[threadIdx.x + {j}]" for j in range(n)) + " : 0"
    return ("__global__ void k(float *a) {\n  __shared__ float s[256];\n  s[threadIdx.x] = a[threadIdx.x];\n"
            "  __syncthreads();\n  a[threadIdx.x] = " + e + ";\n}\n")


def kernel_sum(n: int) -> str:
    t = " + ".join(f"s[threadIdx.x + {j}] * a[{j}]" for j in range(n))
    return ("__global__ void k(float *a) {\n  __shared__ float s[256];\n  s[threadIdx.x] = a[threadIdx.x];\n"
            "  __syncthreads();\n  float v = " + t + ";\n  a[threadIdx.x] = v;\n}\n")


def host_sum(n: int) -> str:
    # the launch makes cuport model this host function
    t = " + ".join(f"x * {j}" for j in range(n))
    return ("__global__ void k(int *a) { a[threadIdx.x] = threadIdx.x; }\n"
            "int main() {\n  int x = 3; int *a = 0;\n  k<<<1, 64>>>(a);\n  return " + t + ";\n}\n")


def parens(n: int) -> str:
    return ("__global__ void k(int *a) {\n  __shared__ int s[64];\n  s[threadIdx.x] = a[threadIdx.x];\n"
            "  __syncthreads();\n  a[threadIdx.x] = s[" + "(" * n + "threadIdx.x" + ")" * n + "];\n}\n")


def braces(n: int) -> str:
    return ("__global__ void k(int *a) {\n  __shared__ int s[64];\n  int i = threadIdx.x;\n  s[i] = a[i];\n"
            "  __syncthreads();\n  " + "{" * n + "a[i] = s[i];" + "}" * n + "\n}\n")


# (file text, line where the nesting passes MAX_NESTING)
DEEP = {
    "ifs2000.cu": (nested_ifs(2000), 2 + MAX_NESTING),    # the `i` of the if on that line is the first too deep
    "ternary1000.cu": (ternaries(1000), 5),
    "sum8000.cu": (kernel_sum(8000), 5),
    "hostsum8000.cu": (host_sum(8000), 5),
}


@pytest.fixture(scope="module")
def deep_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("deep")
    for name, (text, _line) in DEEP.items():
        (d / name).write_text(text)
    (d / "ok_ifs150.cu").write_text(nested_ifs(150))
    (d / "ok_ternary150.cu").write_text(ternaries(150))
    (d / "ok_sum190.cu").write_text(kernel_sum(190))
    (d / "parens250.cu").write_text(parens(250))       # clang's own bracket limit is 256
    (d / "parens1000.cu").write_text(parens(1000))
    (d / "braces250.cu").write_text(braces(250))
    (d / "braces1000.cu").write_text(braces(1000))
    return d


def cp000_lines(out: str, name: str, code: str = "CP000") -> list[int]:
    return [int(m.group(1)) for m in re.finditer(rf"{re.escape(name)}:(\d+):\d+: {code}\b[^\n]*nesting", out)]


@pytest.mark.parametrize("name", sorted(DEEP))
def test_lint_reports_cp000_where_nesting_passes_the_limit(deep_dir, name):
    r = cuport("lint", "--no-cache", "--output-format", "concise", name, cwd=deep_dir)
    assert r.returncode == 1
    assert f"nesting deeper than {MAX_NESTING} levels" in r.stdout
    assert cp000_lines(r.stdout, name) == [DEEP[name][1]], r.stdout


@pytest.mark.parametrize("name", sorted(DEEP))
def test_fix_diff_on_deep_input_gives_a_result(deep_dir, name):
    r = cuport("lint", "--no-cache", "--fix", "--diff", name, cwd=deep_dir)
    assert r.returncode in (0, 1)
    # the unanalysed body gets no fix: the file is left as it is
    assert (deep_dir / name).read_text() == DEEP[name][0]


@pytest.mark.parametrize("target", ["glsl", "opencl"])
@pytest.mark.parametrize("name", ["ifs2000.cu", "ternary1000.cu", "sum8000.cu"])
def test_emitters_refuse_too_deep_kernels_with_cp907(deep_dir, name, target, tmp_path):
    r = cuport("translate", "--to", target, name, "-o", str(tmp_path / "out"), cwd=deep_dir)
    assert r.returncode == 1
    msgs = [ln for ln in (r.stdout + r.stderr).splitlines() if "CP907" in ln and "nesting deeper" in ln]
    assert len(msgs) == 1, r.stderr
    assert f"{name}:{DEEP[name][1]}:" in msgs[0] and "kernel `k` not translated" in msgs[0]


def test_host_function_too_deep_does_not_stop_kernel_translation(deep_dir, tmp_path):
    # the 8,000-term sum is in main(): the kernel itself is translated
    r = cuport("translate", "--to", "opencl", "hostsum8000.cu", "-o", str(tmp_path / "k.cl"), cwd=deep_dir)
    assert r.returncode == 0, r.stderr
    assert "__kernel void k" in (tmp_path / "k.cl").read_text()


@pytest.mark.parametrize("name", ["ifs2000.cu", "sum8000.cu", "ternary1000.cu"])
def test_hip_translation_of_deep_input(deep_dir, name, tmp_path):
    out = tmp_path / "k.hip"
    r = cuport("translate", "--to", "hip", name, "-o", str(out), cwd=deep_dir)
    assert r.returncode == 1
    assert cp000_lines(r.stdout + r.stderr, name) == [DEEP[name][1]]
    assert "hip/hip_runtime.h" in out.read_text()


def test_nesting_under_the_limit_is_analysed(deep_dir, tmp_path):
    """The negative case: 150 nested ifs / ternaries and a 190-term sum are analysed, with findings and
    translations, and no CP000 about nesting."""
    r = cuport("lint", "--no-cache", "--output-format", "concise", "ok_ifs150.cu", "ok_ternary150.cu",
               "ok_sum190.cu", cwd=deep_dir)
    assert "nesting" not in r.stdout
    # the barrier under 150 thread-dependent branches is still found
    assert re.search(r"ok_ifs150\.cu:155:\d+: CP701", r.stdout), r.stdout
    for name in ("ok_ifs150.cu", "ok_ternary150.cu", "ok_sum190.cu"):
        for target in ("glsl", "opencl"):
            r = cuport("translate", "--to", target, name, "-o", str(tmp_path / f"{name}.{target}"), cwd=deep_dir)
            assert "nesting" not in r.stdout + r.stderr
            # the barrier under the branches has no safe fix: every translator reports it (exit 1), still written
            barrier = name == "ok_ifs150.cu"
            assert r.returncode == (1 if barrier else 0), (name, target, r.stderr[-1500:])
            assert ("ok_ifs150.cu:155:5: CP701" in r.stdout + r.stderr) == barrier
            assert (tmp_path / f"{name}.{target}").exists()


def test_deep_parentheses_and_braces(deep_dir, tmp_path):
    """250 levels parse and are analysed (parens: depth 250 of PAREN_EXPR passes MAX_NESTING: CP000); 1,000 hit
    clang's bracket limit: CP000 parse errors. Never an internal error."""
    for name in ("parens250.cu", "braces250.cu", "parens1000.cu", "braces1000.cu"):
        r = cuport("lint", "--no-cache", "--output-format", "concise", name, cwd=deep_dir)
        assert r.returncode == 1
        assert re.search(rf"{name}:\d+:\d+: CP000", r.stdout), r.stdout
        if name.endswith("1000.cu"):
            assert "bracket nesting level exceeded" in r.stdout
        for target in ("hip", "glsl", "opencl"):
            cuport("translate", "--to", target, name, "-o", str(tmp_path / f"{name}.{target}"), cwd=deep_dir)

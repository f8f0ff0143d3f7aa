"""Progress bar and closing summary: shown on a terminal (stderr is a pseudo-terminal here), silent when stderr
is a pipe, with -q, or under pre-commit (PRE_COMMIT=1); stdout never carries either."""
from __future__ import annotations

import io
import os
import pty
import re
import shutil
import subprocess
import sys

import pytest

from porter import progress

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EX = os.path.join(ROOT, "examples")
BAR = re.compile(r"\r(lint|translate) \[[#-]{20}\] (\d+)/(\d+)")


def _env(**extra):
    env = {k: v for k, v in os.environ.items() if k not in ("PRE_COMMIT", "CUPORT_NO_PROGRESS")}
    env.update(extra)
    return env


def shown(err: str) -> list[str]:
    """The lines a terminal ends up showing: what follows the last carriage return, erase codes dropped."""
    return [ln.split("\r")[-1].replace("\x1b[K", "") for ln in err.replace("\r\n", "\n").split("\n")]


def run_tty(args, env=None, cwd=ROOT):
    """cuport with stderr on a pseudo-terminal, stdout on a pipe: (exit code, stdout, stderr as the tty got it)."""
    master, slave = pty.openpty()
    p = subprocess.Popen([sys.executable, "-m", "porter", *args], stdout=subprocess.PIPE, stderr=slave,
                         stdin=subprocess.DEVNULL, env=env or _env(), cwd=cwd)
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:          # EIO: the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    out = p.stdout.read()
    p.wait(timeout=120)
    os.close(master)
    return p.returncode, out.decode(), b"".join(chunks).decode()


@pytest.fixture
def three(tmp_path):
    """Three files: two with known findings, one clean."""
    for name in ("saxpy/saxpy.cu", "warp_reduce/warp_sum.cu", "warp_reduce/warp_reduce_fixed.cu"):
        shutil.copy(os.path.join(EX, name), tmp_path / os.path.basename(name))
    return tmp_path


def test_lint_bar_and_summary_on_a_terminal(three):
    rc, out, err = run_tty(["lint", "--no-cache", str(three)])
    assert rc == 1
    bars = BAR.findall(err)
    assert bars and all(v == "lint" and t == "3" for v, _, t in bars)
    assert bars[-1][1] == "3"                                  # ends full
    summary = [ln for ln in shown(err) if ln.startswith("cuport lint:")]
    assert len(summary) == 1 and shown(err)[-2] == summary[0]   # the last line shown
    n = int(re.search(r"^Found (\d+) errors?\.", out, flags=re.M).group(1))     # what the report counted
    m = re.fullmatch(r"cuport lint: 3 files, (\d+) findings \((.*)\) in \d+\.\d s", summary[0])
    assert m, summary
    assert int(m.group(1)) == n > 0
    assert "CP202 x" in m.group(2)
    assert sum(int(x) for x in re.findall(r"x(\d+)", m.group(2))) == n
    assert "\r" not in out and "lint [" not in out                 # the bar never reaches stdout


def test_lint_clean_file_summary_says_no_findings(tmp_path):
    (tmp_path / "add.cu").write_text("__global__ void add(float *a, const float *b, int n) {\n"
                                     "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                                     "    if (i < n) a[i] += b[i];\n}\n")
    rc, out, err = run_tty(["lint", "--no-cache", str(tmp_path / "add.cu")])
    assert rc == 0
    assert "cuport lint: 1 file, no findings in" in err
    assert not BAR.search(err)                                  # one file: no bar


@pytest.mark.parametrize("how", ["quiet", "pre-commit", "pipe"])
def test_silent_off_a_terminal(three, how):
    if how == "pipe":
        p = subprocess.run([sys.executable, "-m", "porter", "lint", "--no-cache", str(three)], cwd=ROOT,
                           capture_output=True, text=True, env=_env())
        rc, err = p.returncode, p.stderr
    else:
        args = ["lint", "--no-cache", str(three)] + (["-q"] if how == "quiet" else [])
        rc, _, err = run_tty(args, env=_env(PRE_COMMIT="1") if how == "pre-commit" else None)
    assert rc == 1
    assert not BAR.search(err) and "cuport lint:" not in err


def test_translate_hip_many_files(three, tmp_path_factory):
    out_dir = tmp_path_factory.mktemp("hip")
    rc, out, err = run_tty(["translate", "--to", "hip", "--output-dir", str(out_dir), str(three)])
    assert rc == 0
    assert [b[0] for b in BAR.findall(err)] and BAR.findall(err)[-1][1:] == ("3", "3")
    assert "cuport translate --to hip: 3 files: 3 translated in" in err
    assert sorted(os.listdir(out_dir)) == ["saxpy.cu", "warp_reduce_fixed.cu", "warp_sum.cu"]


def test_translate_glsl_counts_refusals(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    shutil.copy(os.path.join(EX, "saxpy", "saxpy.cu"), src)
    (src / "ptx.cu").write_text('__global__ void k(int *p) { asm volatile("membar.gl;"); p[0] = 1; }\n')
    rc, out, err = run_tty(["translate", "--to", "glsl", "--no-validate", "-o", str(tmp_path / "o"), str(src)])
    assert rc == 1                                              # inline PTX cannot be translated
    assert "cuport translate --to glsl: 2 files: 1 translated, 1 refused in" in err
    rc, _, err = run_tty(["translate", "--to", "glsl", "-q", "--no-validate", "-o", str(tmp_path / "o2"),
                          str(src)])
    assert rc == 1 and "cuport translate" not in err and not BAR.search(err)


def test_progress_unit():
    buf = io.StringIO()
    bar = progress.Progress(4, "lint", stream=buf, enabled=True)
    with bar:
        bar.advance("a.cu")
        bar.advance("b.cu")
    text = buf.getvalue()
    assert text.startswith("\rlint [") and text.endswith("\r\x1b[K")
    assert bar.line(200).startswith("lint [##########----------] 2/4")
    assert bar.line(200).endswith("b.cu")
    assert len(bar.line(30)) == 29                              # cut to the terminal's width
    off = io.StringIO()
    with progress.Progress(4, "lint", stream=off) as quiet_bar:  # StringIO is no terminal
        quiet_bar.advance("a.cu")
        quiet_bar.summary("done")
    assert off.getvalue() == ""
    assert progress.findings_summary("lint", 2, ["CP102", "CP202", "CP102"], 1.25) == \
        "cuport lint: 2 files, 3 findings (CP102 x2, CP202 x1) in 1.2 s"
    assert progress.outcome_summary("translate", 1, {"translated": 1, "refused": 0}, 0.04) == \
        "cuport translate: 1 file: 1 translated in 0.0 s"

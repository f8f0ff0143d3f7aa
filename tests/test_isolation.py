"""Crash isolation and per-file limits (porter/isolate.py): a libclang crash, a hang or a memory blow-up costs
only that file (CP000 at line 1), every other file keeps its findings, the run finishes with exit 1."""
import json
import os
import signal
import subprocess
import sys
import time

import pytest

from porter import isolate

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PY = os.path.join(ROOT, ".venv", "bin", "python")

# threadIdx.x & 31: CP102 at line 2, column 11
# (__syncwarp: warp code, so the CP102 fix is safe and --fix applies it)
FINDING = "__global__ void lane(int *out) {\n  int l = threadIdx.x & 31;\n  out[threadIdx.x] = l; __syncwarp();\n}\n"


def macro_sum(levels: int) -> str:
    """A sum of 2**levels terms by macro doubling: at 15 levels (32,768 terms) libclang 18 overflows its
    parser's stack and dies with SIGSEGV; at 7 levels it parses."""
    lines = ["#define A0 x"] + [f"#define A{i} A{i - 1} + A{i - 1}" for i in range(1, levels + 1)]
    return "\n".join(lines) + f"\n__global__ void k(int *p) {{ int x = p[0]; p[1] = A{levels}; }}\n"


def cuport(*args, cwd=None, env=None, timeout=300):
    e = dict(os.environ, **(env or {}))
    e.pop("CUPORT_OUTPUT_FORMAT", None)
    return subprocess.run([PY, "-m", "porter", *args], cwd=cwd or ROOT, env=e, capture_output=True, text=True,
                          timeout=timeout)


def lint_json(*args, **kw):
    r = cuport("lint", "--no-cache", "--output-format", "json", *args, **kw)
    return r, json.loads(r.stdout or "[]")


def by_file(diags):
    out = {}
    for d in diags:
        out.setdefault(os.path.basename(d["filename"]), []).append(d)
    return out


def cp000(d):
    return d["code"] == "CP000" and d["location"]["row"] == 1 and d["location"]["column"] == 1


# --- lint over real crashes ---------------------------------------------------------------------------------

def test_real_libclang_crash_alone_is_cp000_naming_the_signal(tmp_path):
    (tmp_path / "crash.cu").write_text(macro_sum(15))
    r, diags = lint_json(str(tmp_path / "crash.cu"))
    assert r.returncode == 1, r.stderr
    assert len(diags) == 1 and cp000(diags[0])
    assert "clang crashed while parsing this file (signal 11" in diags[0]["message"]
    assert "Traceback" not in r.stderr


def test_same_shape_under_the_crash_depth_parses(tmp_path):
    (tmp_path / "ok.cu").write_text(macro_sum(7))
    r, diags = lint_json(str(tmp_path / "ok.cu"))
    assert r.returncode == 0, r.stderr
    assert diags == []


def test_directory_of_17_files_with_one_crasher(tmp_path):
    for i in range(16):
        (tmp_path / f"k{i:02d}.cu").write_text(FINDING)
    (tmp_path / "m_crash.cu").write_text(macro_sum(15))
    r, diags = lint_json("-j", "2", str(tmp_path), timeout=600)
    assert r.returncode == 1, r.stderr
    files = by_file(diags)
    assert len(files) == 17
    for i in range(16):
        [d] = files[f"k{i:02d}.cu"]
        assert (d["code"], d["location"]["row"], d["location"]["column"]) == ("CP102", 2, 11)
    [c] = files["m_crash.cu"]
    assert cp000(c) and "signal 11" in c["message"]


def test_crasher_next_to_one_other_file(tmp_path):
    (tmp_path / "a_crash.cu").write_text(macro_sum(15))
    (tmp_path / "b.cu").write_text(FINDING)
    r, diags = lint_json(str(tmp_path / "a_crash.cu"), str(tmp_path / "b.cu"))
    assert r.returncode == 1, r.stderr
    files = by_file(diags)
    assert [d["code"] for d in files["b.cu"]] == ["CP102"]
    assert cp000(files["a_crash.cu"][0]) and "signal 11" in files["a_crash.cu"][0]["message"]


def test_a_crash_is_not_cached(tmp_path):
    (tmp_path / "crash.cu").write_text(macro_sum(15))
    (tmp_path / "b.cu").write_text(FINDING)
    for _ in range(2):       # the second run: b.cu from the cache, the crasher parsed (and crashing) again
        r = cuport("lint", "--isolated", "--output-format", "concise", str(tmp_path / "crash.cu"),
                   str(tmp_path / "b.cu"), cwd=tmp_path)
        assert r.returncode == 1
        assert "crash.cu:1:1: CP000 clang crashed" in r.stdout and "b.cu:2:11: CP102" in r.stdout
    assert (tmp_path / ".cuport_cache").is_dir()


def test_fix_mode_keeps_going_past_a_crasher(tmp_path):
    (tmp_path / "a_crash.cu").write_text(macro_sum(15))
    (tmp_path / "b.cu").write_text(FINDING)
    r = cuport("lint", "--no-cache", "--fix", "--output-format", "concise", str(tmp_path))
    assert r.returncode == 1, r.stderr
    assert "a_crash.cu:1:1: CP000 clang crashed" in r.stdout
    assert (tmp_path / "a_crash.cu").read_text() == macro_sum(15)          # a crasher is never rewritten
    assert "& 31" not in (tmp_path / "b.cu").read_text()                   # the other file was fixed


def test_crash_on_stdin_names_the_stdin_file(tmp_path):
    e = dict(os.environ)
    e.pop("CUPORT_OUTPUT_FORMAT", None)
    r = subprocess.run([PY, "-m", "porter", "lint", "--no-cache", "--output-format", "concise", "--stdin-filename",
                        "k.cu", "-"], input=macro_sum(15), capture_output=True, text=True, cwd=tmp_path, env=e)
    assert r.returncode == 1
    assert r.stdout.startswith("k.cu:1:1: CP000 clang crashed while parsing this file (signal 11")


def test_add_noqa_does_not_suppress_a_crash(tmp_path):
    (tmp_path / "a_crash.cu").write_text(macro_sum(15))
    (tmp_path / "b.cu").write_text(FINDING)
    r = cuport("lint", "--no-cache", "--add-noqa", str(tmp_path))
    assert r.returncode == 1
    assert f"cuport: error: {tmp_path / 'a_crash.cu'}: clang crashed while parsing" in r.stderr
    assert "Added 1 noqa directive." in r.stderr
    assert (tmp_path / "a_crash.cu").read_text() == macro_sum(15)
    assert "noqa: CP102" in (tmp_path / "b.cu").read_text()


# --- limits -------------------------------------------------------------------------------------------------

def test_hang_gives_up_after_the_timeout(tmp_path):
    (tmp_path / "hang.cu").write_text(FINDING)
    (tmp_path / "b.cu").write_text(FINDING)
    r, diags = lint_json("--timeout", "3", str(tmp_path), env={"CUPORT_TEST_HANG": "hang.cu"})
    assert r.returncode == 1, r.stderr
    files = by_file(diags)
    assert [d["code"] for d in files["b.cu"]] == ["CP102"]
    [h] = files["hang.cu"]
    assert cp000(h) and h["message"].startswith("gave up after 3 s (--timeout)")
    # without the hook the same file lints normally under the same timeout
    r, diags = lint_json("--timeout", "3", str(tmp_path))
    assert [d["code"] for d in by_file(diags)["hang.cu"]] == ["CP102"]


def test_memory_limit_stops_a_big_file_only(tmp_path):
    # 32,768 literal statements: a model of ~200 MiB (no macros, so the pre-check does not apply)
    (tmp_path / "big.cu").write_text("__global__ void k(int *p) {\n" + "  p[0] += 1;\n" * (1 << 15) + "}\n")
    (tmp_path / "b.cu").write_text(FINDING)
    r, diags = lint_json("--memory-limit", "150", str(tmp_path))
    assert r.returncode == 1, r.stderr
    files = by_file(diags)
    assert [d["code"] for d in files["b.cu"]] == ["CP102"]
    [m] = files["big.cu"]
    assert cp000(m) and m["message"].startswith("gave up: exceeded 150 MiB (--memory-limit)")


def bomb(levels: int) -> str:
    """2**levels statements of 8 tokens each by macro doubling (20 levels: 8.4 M tokens, 5.6 GB and 77 s
    to lint without the pre-check)."""
    lines = ["#define S0 p[0] += 1;"] + [f"#define S{i} S{i - 1} S{i - 1}" for i in range(1, levels + 1)]
    return "\n".join(lines) + f"\n__global__ void k(int *p) {{ S{levels} }}\n"


def test_macro_bomb_is_refused_before_parsing(tmp_path):
    (tmp_path / "bomb.cu").write_text(bomb(20))
    (tmp_path / "b.cu").write_text(FINDING)
    r, diags = lint_json(str(tmp_path))
    assert r.returncode == 1, r.stderr
    files = by_file(diags)
    assert [d["code"] for d in files["b.cu"]] == ["CP102"]
    [m] = files["bomb.cu"]
    assert cp000(m)
    assert m["message"] == ("gave up: macros expand to about 8,388,607 tokens here (S20 alone to 8,388,608), "
                            "more than the 1,048,576 that --memory-limit 4096 MiB allows (256 per MiB)")


def test_macro_pre_check_follows_the_memory_limit(tmp_path):
    (tmp_path / "m.cu").write_text(bomb(12) + FINDING)        # 32,768 tokens of expansion
    r, diags = lint_json("--memory-limit", "100", str(tmp_path / "m.cu"))    # 25,600 allowed
    assert r.returncode == 1 and [d["code"] for d in diags] == ["CP000"]
    assert "S12 alone to 32,768" in diags[0]["message"] and "25,600" in diags[0]["message"]
    r, diags = lint_json("--memory-limit", "200", str(tmp_path / "m.cu"))    # 51,200 allowed: linted
    assert [d["code"] for d in diags] == ["CP102"]


def test_expansion_estimate():
    text = ("#define W 32\n#define A0 x\n" + "".join(f"#define A{i} A{i - 1} A{i - 1} \\\n  A{i - 1}\n"
                                                        for i in range(1, 8)) +
            "#define SELF SELF A7\n#define F(A0) A0 A7\n/* A7 in a comment */ int y = A7 + W; const char *s = \"A7\";\n")
    sizes = isolate.macro_sizes(text)
    assert sizes["A7"] == 3 ** 7 and sizes["W"] == 1
    assert sizes["SELF"] == 1 + 3 ** 7                   # a macro that reaches itself stops there
    assert sizes["F"] == 1 + 3 ** 7                      # a parameter counts one token, whatever its name
    total, top, size = isolate.expansion(text)
    assert (total, top, size) == (3 ** 7 - 1, "A7", 3 ** 7)   # only the use in code counts
    assert isolate.expansion("int x = 1;\n") == (0, None, 0)
    # a chain of 5,000 macros is sized without recursion
    chain = "#define C0 a b\n" + "".join(f"#define C{i} C{i - 1}\n" for i in range(1, 5000)) + "int v = C4999;\n"
    assert isolate.macro_sizes(chain)["C4999"] == 2
    assert isolate.check_expansion(bomb(20), 0) is None          # no memory limit: no pre-check
    assert isolate.check_expansion(bomb(10), 4096) is None


# --- configuration ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("line, message", [
    ('timeout = "60"', "timeout: expected int or float, got str"),
    ("timeout = -1", "timeout: expected seconds >= 0 (0: no limit), got -1"),
    ("timeout = true", "timeout: expected seconds >= 0 (0: no limit), got True"),
    ("memory-limit = 1.5", "memory-limit: expected int, got float"),
    ("memory-limit = -5", "memory-limit: expected MiB >= 0 (0: no limit), got -5"),
])
def test_bad_limit_in_config_is_exit_2(tmp_path, line, message):
    cfg = tmp_path / "cuport.toml"
    cfg.write_text(line + "\n")
    (tmp_path / "b.cu").write_text(FINDING)
    r = cuport("lint", "--no-cache", "b.cu", cwd=tmp_path)
    assert r.returncode == 2
    assert r.stderr.strip() == f"cuport: error: {cfg}: {message}"


def test_config_limits_apply_and_the_command_line_wins(tmp_path):
    (tmp_path / "cuport.toml").write_text("timeout = 2\nmemory-limit = 3000\n")
    (tmp_path / "hang.cu").write_text(FINDING)
    r = cuport("lint", "--no-cache", "--show-settings", cwd=tmp_path)
    assert "timeout            = 2.0" in r.stdout and "memory-limit       = 3000" in r.stdout
    r = cuport("lint", "--no-cache", "--output-format", "concise", "hang.cu", cwd=tmp_path,
               env={"CUPORT_TEST_HANG": "hang.cu"})
    assert r.returncode == 1 and "hang.cu:1:1: CP000 gave up after 2 s (--timeout)" in r.stdout
    r = cuport("lint", "--no-cache", "--output-format", "concise", "--timeout", "3", "hang.cu", cwd=tmp_path,
               env={"CUPORT_TEST_HANG": "hang.cu"})
    assert "gave up after 3 s (--timeout)" in r.stdout


@pytest.mark.parametrize("args, message", [
    (["--timeout", "-1"], "argument --timeout: expected a number of seconds >= 0 (0: no limit), got '-1'"),
    (["--timeout", "soon"], "argument --timeout: expected a number of seconds, got 'soon'"),
    (["--memory-limit", "1.5"], "argument --memory-limit: expected a whole number of MiB, got '1.5'"),
])
def test_bad_limit_on_the_command_line_is_exit_2(tmp_path, args, message):
    r = cuport("lint", *args, str(tmp_path))
    assert r.returncode == 2 and r.stderr.strip().endswith(message)


# --- the supervisor itself ----------------------------------------------------------------------------------

def _work(x):
    if x == "segv":
        os.kill(os.getpid(), signal.SIGSEGV)
    if x == "sleep":
        time.sleep(60)
    if x == "grow":
        blocks = []
        while True:
            blocks.append(bytearray(16 << 20))
    if x == "nap":
        time.sleep(0.5)                 # long enough for the supervisor to poll the worker's memory
        return "rested"
    if x == "raise":
        raise ValueError("from the child")
    if x == "exit":
        os._exit(3)
    if x == "term":
        os.kill(os.getpid(), signal.SIGTERM)
    return x * 2


def test_run_each_keeps_order_and_isolates_each_kind_of_failure():
    tasks = [1, "segv", 2, "sleep", 3, "grow", 4, "exit", 5]
    out = isolate.run_each(_work, tasks, isolate.Limits(timeout=2, memory_mib=300), jobs=2)
    assert [out[i] for i in (0, 2, 4, 6, 8)] == [2, 4, 6, 8, 10]
    kinds = {tasks[i]: out[i].kind for i in (1, 3, 5, 7)}
    assert kinds == {"segv": "crash", "sleep": "timeout", "grow": "memory", "exit": "exit"}
    assert "signal 11" in out[1].message and "SIGSEGV" in out[1].message
    assert out[3].message.startswith("gave up after 2 s")
    assert out[5].message.startswith("gave up: exceeded 300 MiB")


def test_one_worker_goes_on_after_a_death():
    out = isolate.run_each(_work, [1, "segv", 2, "exit", 3, "term"], isolate.Limits(timeout=30, memory_mib=0),
                           jobs=1)
    assert [out[0], out[2], out[4]] == [2, 4, 6]
    assert (out[1].kind, out[3].kind, out[5].kind) == ("crash", "exit", "killed")
    assert out[5].message == "the worker for this file was killed (signal 15, SIGTERM)"


def test_call_job_reuses_its_worker_and_replaces_a_dead_one():
    limits = isolate.Limits(timeout=30, memory_mib=0)
    first = isolate.call_job(os.getpid, (), {}, limits)
    assert first != os.getpid() and isolate.call_job(os.getpid, (), {}, limits) == first
    assert isolate.call_job(_work, ("segv",), {}, limits).kind == "crash"
    again = isolate.call_job(os.getpid, (), {}, limits)
    assert again not in (first, os.getpid())
    assert isolate.call_job(_work, (3,), {}, limits) == 6
    with pytest.raises(ValueError, match="from the child"):
        isolate.call_job(_work, ("raise",), {}, limits)
    assert isolate._SESSION == {}               # an exception closes the session; the next call starts anew
    assert isolate.call_job(_work, (4,), {}, limits) == 8
    assert isolate.call_job(lambda x: x + 1, (4,), {}, limits) == 5      # not picklable: a fork of its own
    isolate._close_session(wait=True)


def test_interrupt_stops_the_run_and_its_workers(tmp_path):
    for i in range(3):
        (tmp_path / f"k{i}.cu").write_text(FINDING)
    e = dict(os.environ, CUPORT_TEST_HANG="k1.cu")
    p = subprocess.Popen([PY, "-m", "porter", "lint", "--no-cache", str(tmp_path)], env=e, text=True,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    group = []
    for _ in range(600):                        # until the worker hangs on k1.cu (a parent and a worker)
        group = subprocess.run(["pgrep", "-g", str(p.pid)], capture_output=True, text=True).stdout.split()
        if len(group) >= 2:
            break
        time.sleep(0.1)
    assert len(group) >= 2
    time.sleep(0.5)
    os.killpg(p.pid, signal.SIGINT)
    out, err = p.communicate(timeout=60)
    assert p.returncode == 130 and err.strip() == "cuport: interrupted" and out == ""
    for pid in group:
        with pytest.raises(ProcessLookupError):
            os.kill(int(pid), 0)


def test_timeout_is_per_mib_of_source_beyond_the_first():
    limits = isolate.Limits(timeout=1, memory_mib=0)
    out = isolate.run_each(_work, ["sleep", "sleep"], limits, jobs=2, size=lambda t: 3 << 20)
    assert out[0].message == "gave up after 3 s (--timeout 1 s per MiB of source): this file took too long"
    assert isolate._allowed(limits, 1000) == 1 and isolate._allowed(limits, 1 << 20) == 1
    assert isolate._allowed(isolate.Limits(60, 0), 8 << 20) == 480


def test_run_each_raises_a_childs_exception_and_leaves_no_child(monkeypatch):
    pids, spawn = [], isolate._Pool._spawn

    def recorded(self):
        w = spawn(self)
        pids.append(w.pid)
        return w
    monkeypatch.setattr(isolate._Pool, "_spawn", recorded)
    with pytest.raises(ValueError, match="from the child"):
        isolate.run_each(_work, ["sleep", "raise"], isolate.Limits(timeout=30, memory_mib=0), jobs=2)
    assert len(pids) == 2
    for pid in pids:                            # the sleeping sibling too: killed and reaped
        with pytest.raises(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)


def test_run_each_without_limits():
    assert isolate.run_each(_work, [1, 2, 3], isolate.Limits(timeout=0, memory_mib=0), jobs=3) == [2, 4, 6]
    assert isolate.run_one(_work, "x") == "xx"
    assert isolate.run_each(_work, []) == []


def test_limits_from_settings_and_arguments():
    from porter.config import Settings
    s = Settings()
    assert isolate.Limits.of(s) == isolate.Limits(60.0, 4096)
    s.timeout, s.memory_limit = 5, 100
    assert isolate.Limits.of(s) == isolate.Limits(5.0, 100)
    assert isolate.Limits.of(s, timeout=1, memory_mib=0) == isolate.Limits(1.0, 0)
    assert isolate.Limits.of(None) == isolate.Limits()


# --- translators and report ---------------------------------------------------------------------------------

@pytest.mark.parametrize("target, written", [("hip", "b.cu"), ("glsl", "b.lane.comp"), ("opencl", "b.cl")])
def test_translators_refuse_the_crasher_and_translate_the_rest(tmp_path, target, written):
    src, out = tmp_path / "src", tmp_path / "out"
    src.mkdir()
    (src / "a_crash.cu").write_text(macro_sum(15))
    (src / "b.cu").write_text(FINDING)
    (src / "c_bomb.cu").write_text(bomb(20))
    opts = ["--output-dir", str(out)] if target == "hip" else ["-o", str(out), "--no-validate"]
    r = cuport("translate", "--to", target, *opts, str(src / "a_crash.cu"), str(src / "b.cu"),
               str(src / "c_bomb.cu"))
    assert r.returncode == 1, r.stderr
    assert "Traceback" not in r.stderr
    crash = [line for line in r.stderr.splitlines() if "a_crash.cu:1:1: CP000" in line]
    assert len(crash) == 1 and "clang crashed while parsing this file (signal 11" in crash[0]
    assert any("c_bomb.cu:1:1: CP000" in line and "S20 alone to 8,388,608" in line for line in r.stderr.splitlines())
    files = sorted(p.name for p in out.rglob("*") if p.is_file())
    assert files == [written]                   # nothing for the refused files


def test_translator_timeout_from_the_command_line(tmp_path):
    (tmp_path / "hang.cu").write_text(FINDING)
    r = cuport("translate", "--to", "opencl", "--no-validate", "--timeout", "2", str(tmp_path / "hang.cu"),
               env={"CUPORT_TEST_HANG": "hang.cu"})
    assert r.returncode == 1 and r.stdout == ""
    assert "hang.cu:1:1: CP000 [error] gave up after 2 s (--timeout)" in r.stderr
    r = cuport("translate", "--to", "opencl", "--no-validate", "--timeout", "2", str(tmp_path / "hang.cu"))
    assert r.returncode == 0 and "__kernel void lane" in r.stdout


def test_translator_reads_the_limits_from_the_config(tmp_path):
    (tmp_path / "cuport.toml").write_text("memory-limit = 100\n")
    (tmp_path / "m.cu").write_text(bomb(12) + FINDING)      # 32,768 tokens of expansion, 25,600 allowed
    r = cuport("translate", "--to", "glsl", "--no-validate", "m.cu", cwd=tmp_path)
    assert r.returncode == 1 and "m.cu:1:1: CP000 [error] gave up: macros expand" in r.stderr
    (tmp_path / "cuport.toml").write_text('memory-limit = "lots"\n')
    r = cuport("translate", "--to", "glsl", "--no-validate", "m.cu", cwd=tmp_path)
    assert r.returncode == 2
    assert r.stderr.strip().endswith("cuport.toml: memory-limit: expected int, got str")


def test_report_keeps_going_past_a_crasher(tmp_path):
    (tmp_path / "a_crash.cu").write_text(macro_sum(15))
    (tmp_path / "b.cu").write_text(FINDING)
    r = cuport("report", "--no-compile", "--format", "json", str(tmp_path / "a_crash.cu"), str(tmp_path / "b.cu"))
    assert r.returncode == 1
    assert f"{tmp_path / 'a_crash.cu'}:1:1: CP000 clang crashed while parsing this file (signal 11" in r.stderr
    crashed, rep = json.loads(r.stdout)          # the crashed file keeps its entry, with its CP000
    assert crashed["file"] == str(tmp_path / "a_crash.cu") and crashed["kernels"] == []
    assert "CP000 clang crashed while parsing this file (signal 11" in crashed["errors"][0]
    assert rep["file"] == str(tmp_path / "b.cu") and [k["kernel"] for k in rep["kernels"]] == ["lane"]
    r = cuport("report", "--no-compile", "--format", "json", str(tmp_path / "b.cu"))
    assert r.returncode == 0 and json.loads(r.stdout)["kernels"][0]["kernel"] == "lane"


def test_memory_limit_counts_what_the_file_costs_not_the_parents_pages():
    # a forked worker's RSS includes the pages it shares with its parent: in a long test run the parent held
    # 300+ MB and every worker "exceeded 300 MiB" (segv and sleep came back as memory failures)
    ballast = bytearray(350 << 20)
    ballast[::4096] = b"x" * len(ballast[::4096])        # touched: resident in the parent, shared by the fork
    out = isolate.run_each(_work, ["nap", "grow", 2], isolate.Limits(timeout=30, memory_mib=300), jobs=1)
    assert out[0] == "rested" and out[2] == 4, out
    assert out[1].kind == "memory"                         # what the file itself allocates still counts
    del ballast


def test_a_crash_under_a_big_parent_is_a_crash_not_memory():
    # a forked worker's peak RSS counts the pages it shares with its parent: under the full test suite's parent
    # (300+ MB) a segfault had been reported as "out of memory"; what the file cost is the peak less that base
    from types import SimpleNamespace
    status = signal.SIGSEGV                     # waitpid's status of a death by SIGSEGV (no core dump)
    usage = SimpleNamespace(ru_maxrss=450 * 1024)   # KiB
    limits = isolate.Limits(timeout=2, memory_mib=300)
    assert isolate._death(status, usage, limits, base=400.0).kind == "crash"
    assert isolate._death(status, usage, limits, base=100.0).kind == "memory"
    assert isolate._death(status, usage, limits).kind == "memory"

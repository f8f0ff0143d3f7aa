"""Run one input through every subcommand of the CLI, each in its own subprocess, and check the invariants.

Invariants (issue 11): no `internal error` / `Traceback`, no death by a signal, no hang (wall-clock guard),
exit status in {0, 1, 2} and meaning what it says, `lint --fix` output parses (no new CP000) and is idempotent,
`--diff` and `translate` never touch the input, every lint output format reports the same findings, and a warm
cache gives the same JSON as a cold run.
"""
from __future__ import annotations

import glob
import json
import os
import re
import resource
import shutil
import signal
import subprocess
import tempfile
import time
from collections import Counter
from dataclasses import asdict, dataclass, field

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
PYTHON = os.path.join(ROOT, ".venv", "bin", "python")

KINDS = ("internal error", "signal", "hang", "bad exit", "bad output", "fix breaks parse", "fix not idempotent",
         "input modified", "format mismatch", "cache mismatch")
GROUPS = ("lint", "fix", "hip", "glsl", "opencl", "report")
FORMATS = ("concise", "full", "json-lines", "github", "sarif")
NAME = "k.cu"


@dataclass
class Failure:
    kind: str
    group: str
    step: str
    detail: str
    argv: list = field(default_factory=list)

    def to_dict(self):
        return asdict(self)


@dataclass
class Result:
    argv: list
    rc: int | None          # None: killed by the guard
    out: str
    err: str
    wall: float


class Runner:
    """Runs `python -m porter ARGS` with a wall-clock guard and an address-space cap; counts invocations."""

    def __init__(self, timeout: float = 60.0, mem_mib: int = 4096, python: str = PYTHON, tree: str | None = None):
        self.timeout, self.mem_mib, self.python = timeout, mem_mib, python
        self.tree = tree    # a snapshot of porter/, rules/, templates/ to run instead of the working tree
        self.invocations = 0

    def _limits(self):
        lim = self.mem_mib * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (lim, lim))   # a memory bomb must not take the shared machine
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))

    def run(self, args, cwd, timeout=None) -> Result:
        self.invocations += 1
        argv = [self.python, "-m", "porter", *args]
        env = {k: v for k, v in os.environ.items() if k not in ("CUPORT_DEBUG", "FORCE_COLOR")}
        env["NO_COLOR"] = "1"
        if self.tree:
            env["PYTHONPATH"] = self.tree
        t0 = time.monotonic()
        p = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, start_new_session=True, preexec_fn=self._limits)
        try:
            out, err = p.communicate(timeout=timeout or self.timeout)
            rc = p.returncode
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)   # the whole group: validators and workers it started too
            out, err = p.communicate()
            rc = None
        return Result(args, rc, out.decode("utf-8", "replace"), err.decode("utf-8", "replace"),
                      time.monotonic() - t0)


def choose_opts(r) -> dict:
    """The per-input option choices (kept with a failure so that it replays exactly)."""
    return {"validate": r.randint(0, 1) == 1, "report_json": r.randint(0, 1) == 1, "diff": r.randint(0, 2) == 0,
            "hip_syntax": r.choice(["cuda", "hip"]), "unsafe": r.randint(0, 3) == 0,
            "corrupt_cache": r.choice([None, None, None, "truncate", "foreign", "garbage"])}


CORRUPT = {"truncate": lambda b: b[:len(b) // 2], "foreign": lambda b: b'{"c": [1, 2], "fix": 3}',
           "garbage": lambda b: b"\xff\x00not json"}


def check_input(runner: Runner, data: bytes, opts: dict | None = None, groups=GROUPS) -> list[Failure]:
    opts = opts or {}
    work = tempfile.mkdtemp(prefix="cuport-fuzz-")
    try:
        fails: list[Failure] = []
        for g in groups:
            fails += _GROUPS[g](runner, work, data, opts)
            if any(f.kind in ("hang", "signal") for f in fails):
                break   # one catastrophic failure per input is enough; the rest would repeat it, slowly
        return fails
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _basic(res: Result, group: str, step: str) -> list[Failure]:
    """The invariants every invocation keeps."""
    both = res.out + res.err
    f = lambda kind, detail: [Failure(kind, group, step, detail, res.argv)]  # noqa: E731
    if res.rc is None:
        return f("hang", f"no exit after {res.wall:.0f} s")
    if res.rc < 0:
        return f("signal", f"killed by signal {-res.rc} ({_signame(-res.rc)}); stderr: {_tail(res.err)}")
    if "Traceback (most recent call last)" in both or "internal error" in both:
        return f("internal error", _tail(res.err) or _tail(res.out))
    if res.rc not in (0, 1, 2):
        return f("bad exit", f"exit {res.rc}; stderr: {_tail(res.err)}")
    if res.rc == 2 and "error" not in res.err:
        return f("bad exit", f"exit 2 without an error message; stderr: {_tail(res.err)}")
    return []


def _signame(n):
    try:
        return signal.Signals(n).name
    except ValueError:
        return "?"


def _tail(s: str, n: int = 400) -> str:
    s = s.strip()
    return s if len(s) <= n else "..." + s[-n:]


def _fresh(work, sub, data) -> str:
    d = os.path.join(work, sub)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, NAME), "wb") as fh:
        fh.write(data)
    return d


def _read(path) -> bytes | None:
    try:
        with open(path, "rb") as fh:
            return fh.read()
    except OSError:
        return None


# --- findings as (code, row, col) multisets, one parser per format --------------------------------------------

def findings_json(text: str) -> Counter:
    return Counter((d["code"], d["location"]["row"], d["location"]["column"]) for d in json.loads(text or "[]"))


def findings_json_lines(text: str) -> Counter:
    out = Counter()
    for line in text.splitlines():
        if line.strip():
            d = json.loads(line)
            out[(d["code"], d["location"]["row"], d["location"]["column"])] += 1
    return out


_CONCISE = re.compile(r"^" + re.escape(NAME) + r":(\d+):(\d+): (CP\d{3})\b", re.M)
_FULL_HEAD = re.compile(r"^(CP\d{3})\b")
_FULL_LOC = re.compile(r"^ *--> " + re.escape(NAME) + r":(\d+):(\d+)$")
_GITHUB = re.compile(r"^::(?:error|warning|notice) title=cuport \((CP\d{3})\),file=" + re.escape(NAME)
                     + r",line=(\d+),col=(\d+),", re.M)


def findings_concise(text: str) -> Counter:
    return Counter((c, int(r), int(k)) for r, k, c in _CONCISE.findall(text))


def findings_full(text: str) -> Counter:
    out, code = Counter(), None
    for line in text.splitlines():
        m = _FULL_HEAD.match(line)
        if m:
            code = m.group(1)
            continue
        m = _FULL_LOC.match(line)
        if m and code:
            out[(code, int(m.group(1)), int(m.group(2)))] += 1
            code = None
    return out


def findings_github(text: str) -> Counter:
    return Counter((c, int(r), int(k)) for c, r, k in _GITHUB.findall(text))


def findings_sarif(text: str) -> Counter:
    out = Counter()
    for run in json.loads(text)["runs"]:
        for res in run["results"]:
            reg = res["locations"][0]["physicalLocation"]["region"]
            out[(res["ruleId"], reg["startLine"], reg["startColumn"])] += 1
    return out


PARSERS = {"json": findings_json, "json-lines": findings_json_lines, "concise": findings_concise,
           "full": findings_full, "github": findings_github, "sarif": findings_sarif}


def _lint_exit(res: Result, found: Counter, group, step) -> list[Failure]:
    """Lint's exit status means what it says: 1 with findings, 0 without, 2 only with an error line."""
    if res.rc == 0 and found:
        return [Failure("bad exit", group, step, f"exit 0 with {sum(found.values())} findings", res.argv)]
    if res.rc == 1 and not found:
        return [Failure("bad exit", group, step, "exit 1 without findings", res.argv)]
    return []


# --- the groups ------------------------------------------------------------------------------------------------

def _group_lint(runner, work, data, opts):
    d = _fresh(work, "lint", data)
    args = ["lint", "--isolated", "--output-format", "json", NAME]
    cold = runner.run(args, d)
    fails = _basic(cold, "lint", "lint json (cold cache)")
    if fails:
        return fails
    try:
        base = findings_json(cold.out)
    except (ValueError, KeyError, TypeError) as exc:
        return [Failure("bad output", "lint", "lint json", f"not the JSON findings list: {exc}", cold.argv)]
    fails += _lint_exit(cold, base, "lint", "lint json (cold cache)")
    warm = runner.run(args, d)
    fails += _basic(warm, "lint", "lint json (warm cache)")
    if not fails and (warm.out != cold.out or warm.rc != cold.rc):
        fails.append(Failure("cache mismatch", "lint", "lint json (warm cache)",
                             f"warm exit {warm.rc} / {len(warm.out)} bytes vs cold exit {cold.rc} / "
                             f"{len(cold.out)} bytes", warm.argv))
    for fmt in FORMATS:
        res = runner.run(["lint", "--isolated", "--output-format", fmt, NAME], d)
        bad = _basic(res, "lint", f"lint {fmt}")
        if bad:
            fails += bad
            continue
        try:
            got = PARSERS[fmt](res.out)
        except (ValueError, KeyError, TypeError, IndexError) as exc:
            fails.append(Failure("bad output", "lint", f"lint {fmt}", f"unparsable: {exc}", res.argv))
            continue
        if got != base or res.rc != cold.rc:
            fails.append(Failure("format mismatch", "lint", f"lint {fmt}",
                                 f"{fmt} (exit {res.rc}) vs json (exit {cold.rc}): only in {fmt}: "
                                 f"{sorted((got - base).elements())[:5]}, only in json: "
                                 f"{sorted((base - got).elements())[:5]}", res.argv))
    if _read(os.path.join(d, NAME)) != data:
        fails.append(Failure("input modified", "lint", "lint", "plain lint changed the file", args))
    how = opts.get("corrupt_cache")
    entries = glob.glob(os.path.join(d, ".cuport_cache", "**", "*.json"), recursive=True)
    if how and entries and not fails:
        # the cache is untrusted input: a damaged entry is a miss, never an error or a different answer
        for e in entries:
            with open(e, "r+b") as fh:
                bad = CORRUPT[how](fh.read())
                fh.seek(0)
                fh.truncate()
                fh.write(bad)
        res = runner.run(args, d)
        fails += _basic(res, "lint", f"lint json (cache entry {how})")
        if not fails and (res.out != cold.out or res.rc != cold.rc):
            fails.append(Failure("cache mismatch", "lint", f"lint json (cache entry {how})",
                                 f"exit {res.rc} / {len(res.out)} bytes vs cold exit {cold.rc} / {len(cold.out)} "
                                 f"bytes", res.argv))
    return fails


def _cp000(runner, d, group, step):
    res = runner.run(["lint", "--isolated", "--no-cache", "--output-format", "json", NAME], d)
    bad = _basic(res, group, step)
    if bad:
        return None, bad
    try:
        return sum(n for (c, _, _), n in findings_json(res.out).items() if c == "CP000"), []
    except (ValueError, KeyError, TypeError) as exc:
        return None, [Failure("bad output", group, step, f"not the JSON findings list: {exc}", res.argv)]


def _group_fix(runner, work, data, opts):
    fails = []
    unsafe = ["--unsafe-fixes"] if opts.get("unsafe") else []
    if opts.get("diff"):
        d = _fresh(work, "diff", data)
        res = runner.run(["lint", "--isolated", "--no-cache", "--diff", *unsafe, NAME], d)
        fails += _basic(res, "fix", "lint --diff")
        if _read(os.path.join(d, NAME)) != data:
            fails.append(Failure("input modified", "fix", "lint --diff", "--diff wrote the file", res.argv))
    d = _fresh(work, "fix", data)
    fix = ["lint", "--isolated", "--no-cache", "--fix", *unsafe, "--output-format", "concise", NAME]
    res = runner.run(fix, d)
    bad = _basic(res, "fix", "lint --fix")
    if bad:
        return fails + bad
    once = _read(os.path.join(d, NAME))
    if once == data:
        return fails
    before, bad = _cp000(runner, _fresh(work, "orig", data), "fix", "lint json (before fix)")
    after, bad2 = _cp000(runner, d, "fix", "lint json (after fix)")
    fails += bad + bad2
    if before is not None and after is not None and after > before:
        fails.append(Failure("fix breaks parse", "fix", "lint --fix", f"CP000 {before} -> {after} after the fix",
                             res.argv))
    res2 = runner.run(fix, d)
    bad = _basic(res2, "fix", "lint --fix (second)")
    fails += bad
    twice = _read(os.path.join(d, NAME))
    if not bad and twice != once:
        fails.append(Failure("fix not idempotent", "fix", "lint --fix (second)",
                             f"the second --fix changed the file again ({len(once)} -> {len(twice or b'')} "
                             f"bytes)", res2.argv))
    return fails


def _group_hip(runner, work, data, opts):
    d = _fresh(work, "hip", data)
    args = ["translate", "--isolated", "--to", "hip", "--launch-syntax", opts.get("hip_syntax", "cuda"), NAME,
            "-o", os.path.join("out", "k.hip")]
    os.makedirs(os.path.join(d, "out"))
    res = runner.run(args, d)
    fails = _basic(res, "hip", "translate --to hip")
    if not fails and res.rc == 0 and _read(os.path.join(d, "out", "k.hip")) is None:
        fails.append(Failure("bad exit", "hip", "translate --to hip", "exit 0 but no output written", args))
    if _read(os.path.join(d, NAME)) != data:
        fails.append(Failure("input modified", "hip", "translate --to hip", "the input changed", args))
    return fails


def _group_kernel(target):
    def group(runner, work, data, opts):
        d = _fresh(work, target, data)
        args = ["translate", "--isolated", "--to", target, NAME, "--output-dir", "out", "--manifest"]
        if not opts.get("validate"):
            args.append("--no-validate")
        res = runner.run(args, d)
        fails = _basic(res, target, f"translate --to {target}")
        if _read(os.path.join(d, NAME)) != data:
            fails.append(Failure("input modified", target, f"translate --to {target}", "the input changed", args))
        return fails
    return group


def _group_report(runner, work, data, opts):
    d = _fresh(work, "report", data)
    args = ["report", "--isolated", "--no-compile", NAME]
    if opts.get("report_json"):
        args += ["--format", "json"]
    res = runner.run(args, d)
    fails = _basic(res, "report", "report")
    if not fails and opts.get("report_json") and res.rc != 2:
        try:
            json.loads(res.out)
        except ValueError as exc:
            fails.append(Failure("bad output", "report", "report --format json", f"not JSON: {exc}", args))
    return fails


_GROUPS = {"lint": _group_lint, "fix": _group_fix, "hip": _group_hip, "glsl": _group_kernel("glsl"),
           "opencl": _group_kernel("opencl"), "report": _group_report}

"""The OpenCL translation under Oclgrind (Debian package `oclgrind`), an OpenCL device simulator that checks
every memory access: out-of-bounds reads and writes, data races (global and local memory), uses of
uninitialised values, barrier divergence, invalid API use. `cuport verify --sanitize` adds this target.

The worker runs inside `oclgrind --log FILE ...` (LD_PRELOAD of its runtime: only the simulator's platform is
visible). The translation carries `#line` directives, so each report names the CUDA source line. Any report
fails the case even when the numbers come out right. Only the smallest problem size runs: the simulator
interprets every work-item.
"""
from __future__ import annotations

import os
import re
import shutil
import tempfile

from . import RunOutput, Skip, Variant
from . import opencl

LOG_ENV = "CUPORT_OCLGRIND_LOG"
FLAGS_ENV = "CUPORT_OCLGRIND_FLAGS"
COMMON_FLAGS = ["--check-api", "--max-errors", "100"]
# Two runs per case: Oclgrind 21.10's uninitialised-value plugin stops at LLVM instructions it does not know
# (`freeze`, which clang emits for a `/` and `%` pair), and that must not take the bounds and race checks down.
CHECKS = {"bounds+races": ["--data-races"], "uninit": ["--uninitialized"]}
SMALLEST_SIZE_ONLY = True
EXPECT_AS = "opencl"                 # a spec's expectations for "opencl" hold here too
TRANSLATE_OPTIONS = {"line_directives": True}

# pyopencl asks for device facts this simulator does not know: not the kernel's fault
_IGNORED_API = re.compile(r"Function:\s*clGet\w*Info\b")
_AT = re.compile(r"At line (\d+) \(column (\d+)\) of ([^:\n]+):")


def available() -> tuple[bool, str]:
    if shutil.which("oclgrind") is None:
        return False, "oclgrind not installed (Debian package oclgrind)"
    try:
        import pyopencl  # noqa: F401
    except ImportError:
        return False, "pyopencl not installed"
    return True, ""


def variants(subgroups) -> list[Variant]:
    return [Variant(label, {FLAGS_ENV: " ".join(flags)}) for label, flags in CHECKS.items()]


def wrap_command(cmd: list[str], env: dict) -> list[str]:
    """The worker's command line and environment for one job: run it inside the simulator, logging to a
    fresh file the worker reads after each launch."""
    fd, log = tempfile.mkstemp(prefix="cuport-oclgrind-", suffix=".log")
    os.close(fd)
    env[LOG_ENV] = log
    flags = env.get(FLAGS_ENV, " ".join(sum(CHECKS.values(), []))).split()
    return ["oclgrind", "--log", log, *flags, *COMMON_FLAGS, *cmd]


def prepare(variant) -> dict:
    return {**opencl.prepare(variant), "sanitizer": "oclgrind"}


def run(case, source_text, manifest, sizes, arrays, *, variant=None, repeat=1) -> RunOutput:
    from . import CompileError
    log = os.environ.get(LOG_ENV)
    before = os.path.getsize(log) if log and os.path.exists(log) else 0
    try:
        out = opencl.run(case, source_text, manifest, sizes, arrays, variant=variant, repeat=1)
    except CompileError as e:
        # clang's optimizer turned a loop into an LLVM intrinsic the simulator does not link (bitpermute's
        # bit reversal: "Undefined external function: llvm.bitreverse.i32", said on stderr, and the built
        # program has no kernel): the same program built unoptimised
        if not _NO_KERNEL.match(str(e)):
            raise
        before = os.path.getsize(log) if log and os.path.exists(log) else 0
        out = opencl.run(case, source_text, manifest, sizes, arrays, variant=variant, repeat=1,
                         options=["-cl-opt-disable"])
        out.info["build_options"] = ["-cl-opt-disable"]
    text = _log_since(log, before)
    reports = parse_reports(text)
    fatal = next((r for r in reports if "FATAL ERROR" in r["kind"]), None)
    if fatal is not None:
        what = re.search(r"Unsupported instruction:\s*(\S+)", text)
        raise Skip(f"oclgrind cannot run this check on this kernel ({os.environ.get(FLAGS_ENV, '').strip()}): "
                   + (f"its interpreter does not support the LLVM instruction `{what.group(1)}`" if what
                      else fatal["text"].splitlines()[0].strip()))
    out.info["sanitizer"] = reports
    return out


_NO_KERNEL = re.compile(r"no kernel '[^']*' in the OpenCL program")


def _log_since(log, before: int) -> str:
    if not log or not os.path.exists(log):
        return ""
    with open(log, encoding="utf-8", errors="replace") as fh:
        fh.seek(before)
        return fh.read()


def parse_reports(text: str) -> list[dict]:
    """Oclgrind's log as a list of {kind, kernel, locations[(file, line, column)], text}; API complaints
    about pyopencl's device queries are dropped."""
    reports, block = [], []

    def close():
        if not block:
            return
        body = "\n".join(block)
        block.clear()
        if _IGNORED_API.search(body):
            return
        head = body.splitlines()[0].strip()
        if head.startswith("Oclgrind - OpenCL runtime error detected"):
            fn = re.search(r"Function:\s*(\S+)", body)
            err = re.search(r"Error:\s*(.+)", body)
            head = f"OpenCL API error in {fn.group(1) if fn else '?'}: {err.group(1).strip() if err else '?'}"
        kernel = re.search(r"Kernel:\s*(\S+)", body)
        reports.append({"kind": head, "kernel": kernel.group(1) if kernel else None,
                        "locations": [(f.strip(), int(ln), int(col)) for ln, col, f in _AT.findall(body)],
                        "text": body})

    for line in text.splitlines():
        if not line.strip():
            continue
        if not line[0].isspace():
            close()
        block.append(line)
    close()
    return reports


def summarize(reports: list[dict], source_path: str | None = None) -> str:
    """One line for the verify table: the first report at its CUDA source location, and how many more."""
    first = reports[0]
    lines = [loc for loc in first["locations"] if loc[1] > 0]
    if lines:
        f, ln, col = lines[0]
        name = _shown(source_path) if source_path and os.path.basename(source_path) == f else f
        where = f" at {name}:{ln}:{col}"
    else:       # a store merged from two branches keeps no line after the simulator's optimisation
        where = f" in kernel {first['kernel']} (source line not recorded)" if first["kernel"] else ""
    index = next((r["kind"] for r in reports if r["kind"].startswith("Index (")), None)
    detail = f" [{index}]" if index and index != first["kind"] else ""
    more = f" (+{len(reports) - 1} more report{'s' if len(reports) > 2 else ''})" if len(reports) > 1 else ""
    return f"oclgrind: {first['kind'].rstrip(':')}{where}{detail}{more}"


def _shown(path: str) -> str:
    rel = os.path.relpath(path)
    return path if rel.startswith("..") else rel

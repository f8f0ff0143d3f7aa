"""`make demo`: lint the bundled examples, translate them to HIP / GLSL / OpenCL, verify on the CPU backends."""
from __future__ import annotations

import os
import sys
import time

from porter.resources import data_dir


def _examples_dir(arg) -> str:
    if arg:
        return arg
    here = os.path.join(os.path.dirname(data_dir("templates")), "examples")
    return here if os.path.isdir(here) else "examples"


def _banner(title: str) -> None:
    print(f"\n=== {title} " + "=" * max(0, 72 - len(title)), flush=True)


def main(args) -> int:
    from porter.cli import main as cli
    ex = _examples_dir(getattr(args, "examples", None))
    if not os.path.isdir(ex):
        print(f"cuport: error: {ex}: examples directory not found", file=sys.stderr)
        return 2
    failures = 0

    _banner(f"cuport lint {ex}")
    t = time.perf_counter()
    rc = cli(["lint", "--no-cache", "--output-format", "full", ex])
    print(f"(lint exit status {rc}: 1 means findings, as expected for the seed kernels; "
          f"{time.perf_counter() - t:.2f} s)")
    if rc not in (0, 1):
        failures += 1
    cli(["lint", "--no-cache", "--statistics", "--exit-zero", ex])

    out = os.path.join("out", "demo")
    try:
        os.makedirs(out, exist_ok=True)
    except OSError as exc:
        print(f"cuport: error: {out}: cannot create the output directory: {exc.strerror or exc}", file=sys.stderr)
        return 2
    from porter.translate.api import target_names
    for target in target_names():
        _banner(f"cuport translate --to {target} {ex} -> {out}/{target}")
        argv = ["translate", "--to", target, ex, "--output-dir", os.path.join(out, target)]
        if target == "hip":
            argv.append("--print-stats")
        rc = cli(argv)
        print(f"(translate --to {target} exit status {rc})")
        if rc not in (0, 1):
            failures += 1

    _banner(f"cuport verify --sanitize {ex} (CPU backends: hip-amd compile, vulkan on lavapipe, opencl on "
            "PoCL and under Oclgrind)")
    rc = cli(["verify", ex, "--targets", "hip-amd,vulkan,opencl", "--subgroup-sizes", "4,8,16", "--sanitize"])
    print(f"(verify exit status {rc})")
    if rc not in (0, 1):
        failures += 1
    return 1 if failures else 0

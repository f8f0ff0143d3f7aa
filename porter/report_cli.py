"""`cuport report`: the command line of the per-kernel resource and occupancy report (porter/report.py) and of
the porting report page (porter/report_html.py)."""
from __future__ import annotations

import json
import os
import sys

from porter.report import COMPILE_TIMEOUT, DEFAULT_REGISTERS, FORMULA, TARGETS, kernel_reports, render_table


def add_arguments(p) -> None:
    from porter.translate.api import target_names
    p.add_argument("paths", nargs="+", help=".cu files")
    p.add_argument("--arch", action="append", help="targets, comma separated (default: target-arch from the "
                   "configuration: sm_90,gfx90a,gfx1030,vulkan)")
    p.add_argument("--registers", default="auto",
                   help="'compile' (nvcc / hipcc, the default when they are installed), 'default' "
                        f"({DEFAULT_REGISTERS} per thread) or a number")
    p.add_argument("--no-compile", action="store_true", help="do not run nvcc / hipcc (same as --registers default)")
    p.add_argument("--compile-timeout", type=int, default=COMPILE_TIMEOUT, help="seconds per compiler run")
    p.add_argument("--format", "--output-format", dest="format", choices=["table", "json", "html"], default="table",
                   help="html: the porting report page (porter/report_html.py) to -o FILE or standard output")
    p.add_argument("--html", metavar="DIR", help="write the porting report page to DIR/report.html: findings, "
                   "translation status per target, occupancy (and verify results with --verify)")
    p.add_argument("--translate-targets", action="append", metavar="T,T",
                   help=f"html: translation targets to try (default: {','.join(target_names())})")
    p.add_argument("--verify", action="store_true", help="html: also run cuport verify on the files' cases (slow)")
    p.add_argument("--verify-targets", default="cuda,hip-nvidia,hip-amd,vulkan,opencl",
                   help="html --verify: verify targets (missing backends are skipped with the reason)")
    p.add_argument("--subgroup-sizes", type=lambda t: [int(x) for x in t.split(",") if x.strip()], default=None,
                   metavar="N,N", help="html --verify: Vulkan subgroup sizes (lavapipe: 4,8,16)")
    p.add_argument("--bench", action="store_true", help="html: time the files' verify cases at their bench sizes; speed "
                   "relative to the original as a chart")
    p.add_argument("--repeat", type=int, default=5, help="html --bench: launches per case")
    from porter.verify.cli import _size_set
    p.add_argument("--bench-sizes", type=_size_set, action="append", metavar="n=1000,...",
                   help="html --bench: sizes replacing the specs' bench sizes (these are sized for a large GPU; "
                        "on CPU devices use smaller ones)")
    p.add_argument("-o", "--output-file", help="write the report to this file ('-': standard output)")
    p.add_argument("--stdin-filename", help="the name of the file read from standard input ('-')")
    p.add_argument("--config")
    p.add_argument("--isolated", action="store_true")
    p.add_argument("-I", dest="include_dirs", action="append", default=None)
    p.add_argument("-D", dest="defines", action="append", default=None)
    from porter.isolate import add_arguments as add_limits
    add_limits(p.add_argument)


def main(args) -> int:
    from porter.config import ConfigError, load_settings
    from porter.frontend.parse import ParseOptions
    from porter.source import STDIN, OutputError, SourceError, check_outputs, preload_stdin, write_output
    refusal = check_outputs(args.paths, [("-o", args.output_file), ("--html", os.path.join(args.html, "report.html")
                                                                     if args.html else None)])
    if refusal:
        print(f"cuport: error: {refusal}", file=sys.stderr)
        return 2
    stdin_filename = getattr(args, "stdin_filename", None)
    named = [(stdin_filename or ".") if p == STDIN else p for p in args.paths]
    first = next((p for p in named if os.path.exists(p)), ".")
    start = first if os.path.isdir(first) else (os.path.dirname(os.path.abspath(first)) or ".")
    try:
        settings = load_settings(start, args.config, args.isolated)
    except ConfigError as exc:
        print(f"cuport: error: {exc}", file=sys.stderr)
        return 2
    archs = [a.strip() for item in (args.arch or []) for a in item.split(",") if a.strip()] or \
        list(settings.target_arch)
    bad = [a for a in archs if a not in TARGETS]
    if bad:
        print(f"cuport: error: unknown target {', '.join(bad)} (known: {', '.join(TARGETS)})", file=sys.stderr)
        return 2
    registers = "default" if args.no_compile else args.registers
    if registers not in ("auto", "compile", "default") and not registers.isdigit():
        print("cuport: error: --registers takes compile, default or a number", file=sys.stderr)
        return 2
    popts = ParseOptions(include_dirs=list(args.include_dirs or settings.include_dirs),
                         defines=list(args.defines or settings.defines))
    if STDIN in args.paths:
        preload_stdin(stdin_filename)
    from porter import isolate
    limits = isolate.Limits.of(settings, args.timeout, args.memory_limit)
    if limits.timeout and registers in ("auto", "compile"):      # compilers run under their own --compile-timeout
        limits = isolate.Limits(limits.timeout + args.compile_timeout * len(archs), limits.memory_mib)
    if args.html or args.format == "html":           # the porting report page: porter/report_html.py
        from porter import report_html
        return report_html.main(args, archs, settings, registers, popts, limits)
    reports, status = [], 0
    for path in dict.fromkeys(args.paths):          # a bad input costs only itself
        try:
            # in a supervised child: a libclang crash or a limit costs only this file (CP000)
            rep = isolate.call(lambda: kernel_reports(path, archs, settings, registers, args.compile_timeout, popts),
                               path, limits)
            if isinstance(rep, isolate.Failure):
                line = f"{path}:1:1: CP000 {rep.message}"
                print(line, file=sys.stderr)
                status = max(status, 1)
                reports.append({"file": path, "kernels": [], "errors": [line], "notes": [], "assumptions": [],
                                "formula": FORMULA})
                continue
            for line in rep.get("errors", []):
                print(line, file=sys.stderr)
                status = max(status, 1)
            reports.append(rep)
        except SourceError as exc:
            print(f"cuport: error: {exc}", file=sys.stderr)
            status = 2
        except OSError as exc:
            print(f"cuport: error: {path}: {exc.strerror or exc}", file=sys.stderr)
            status = 2
    if not reports:
        return status or 2
    text = json.dumps(reports if len(reports) > 1 else reports[0], indent=2) + "\n" if args.format == "json" \
        else "\n".join(render_table(r) for r in reports)
    try:
        write_output(args.output_file or STDIN, text.encode("utf-8"))
    except OutputError as exc:
        print(f"cuport: error: {exc}", file=sys.stderr)
        return 2
    return status

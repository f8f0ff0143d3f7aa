"""cuport command line. Imports are lazy: `cuport lint one.cu` runs as a pre-commit hook, start-up time matters."""
from __future__ import annotations

import argparse
import os
import sys

from porter import __version__


def _rule_main(args) -> int:
    import json
    from porter.lint.registry import RULES, UnknownCode, resolve
    if args.all:
        codes = sorted(RULES)
    elif args.code:
        try:
            codes = sorted(resolve(args.code))
        except UnknownCode as exc:
            print(f"cuport: error: {exc}", file=sys.stderr)
            return 2
    else:
        print("cuport: error: give a rule code or --all", file=sys.stderr)
        return 2
    if args.output_format == "json":
        out = [{"code": c, "name": RULES[c].name, "severity": RULES[c].sev, "level": RULES[c].level,
                "summary": RULES[c].summary, "explanation": RULES[c].doc, "url": RULES[c].url,
                "fix": _fix_availability(RULES[c].doc)} for c in codes]
        print(json.dumps(out if args.all or len(out) > 1 else out[0], indent=2))
        return 0
    parts = []
    for c in codes:
        r = RULES[c]
        parts.append(f"# {r.name} ({c})\n\nSeverity: {r.sev} ({r.level})\n\n{r.doc}\n")
    sys.stdout.write("\n".join(parts))
    return 0


def _fix_availability(doc: str) -> str:
    text = doc.split("## Fix safety", 1)[-1].split("##", 1)[0].strip().lower()
    if text.startswith("no fix"):
        return "none"
    if text.startswith(("safe", "unsafe")):
        return "always" if "no fix when" not in text and "display" not in text else "sometimes"
    return "sometimes"


def _clean_main(args) -> int:
    import shutil
    if not os.path.isdir(args.path):
        print(f"cuport: error: {args.path}: not a directory", file=sys.stderr)
        return 2
    d = os.path.join(args.path, ".cuport_cache")
    try:
        if os.path.islink(d):
            os.unlink(d)                # the link, never what it points to
        elif os.path.isdir(d):
            shutil.rmtree(d)
        else:
            return 0
    except OSError as exc:
        print(f"cuport: error: {d}: cannot remove: {exc.strerror or exc}", file=sys.stderr)
        return 2
    print(f"Removed {d}")
    return 0


_COMMANDS = ("lint", "rule", "translate", "verify", "report", "clean", "demo", "server")


def _command_of(argv) -> str | None:
    """The subcommand `argv` runs (its first non-option word), None when that is not a known one (top-level
    help, version, errors: then every subcommand is built as before)."""
    for a in argv:
        if a.startswith("-"):
            if a in ("-h", "--help", "--version"):
                return None
            continue
        return a if a in _COMMANDS else None
    return None


class _Formatter(argparse.HelpFormatter):
    """argparse's formatter, but the terminal width without `import shutil` (with bz2, lzma, zlib, fnmatch:
    a few ms of every run, since argparse makes a formatter for each add_argument). Same width as shutil's
    get_terminal_size: $COLUMNS, else the terminal of standard output, else 80."""

    def __init__(self, prog, indent_increment=2, max_help_position=24, width=None):
        if width is None:
            width = _columns() - 2
        super().__init__(prog, indent_increment, max_help_position, width)


def _columns() -> int:
    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns
        except (AttributeError, ValueError, OSError):
            columns = 0
    return columns or 80


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The full parser; with `command`, only that subcommand's arguments are defined (the others keep their
    name and help), so `cuport lint one.cu` does not import the translators, the verifier and the report."""
    p = argparse.ArgumentParser(prog="cuport", description="Lint, translate and verify CUDA kernels for HIP "
                                "(wave64), Vulkan GLSL compute and OpenCL C.", formatter_class=_Formatter)
    p.add_argument("--version", action="version", version=f"cuport {__version__}")
    sub = _Subparsers(p.add_subparsers(dest="command", metavar="COMMAND"))

    def wanted(name):
        return command is None or command == name

    lint = sub.add_parser("lint", help="find portability hazards")
    if wanted("lint"):
        from porter.lint import run as lint_run
        lint_run.add_arguments(lint)
        lint.set_defaults(func=lambda a: lint_run.main(a))

    rule = sub.add_parser("rule", help="explain a rule")
    rule.add_argument("code", nargs="?")
    rule.add_argument("--all", action="store_true")
    rule.add_argument("--output-format", choices=["text", "json"], default="text")
    rule.set_defaults(func=_rule_main)

    tr = sub.add_parser("translate", help="translate CUDA to HIP, GLSL compute or OpenCL C")
    if wanted("translate"):
        _translate_args(tr)

    ver = sub.add_parser("verify", help="run the original and its translations against NumPy references")
    if wanted("verify"):
        _lazy(ver, "porter.verify.cli")

    rep = sub.add_parser("report", help="per-kernel resource and occupancy report per target")
    if wanted("report"):
        _lazy(rep, "porter.report_cli")

    server = sub.add_parser("server", help="language server (LSP over stdio) for editors: diagnostics, quick fixes, "
                            "rule documentation on hover")
    if wanted("server"):
        _lazy(server, "porter.server")

    clean = sub.add_parser("clean", help="remove the lint cache")
    clean.add_argument("path", nargs="?", default=".")
    clean.set_defaults(func=_clean_main)

    demo = sub.add_parser("demo", help="lint, translate and verify the bundled examples")
    demo.add_argument("--examples", default=None)
    demo.set_defaults(func=lambda a: __import__("porter.demo", fromlist=["main"]).main(a))
    return p


class _Subparsers:
    """add_subparsers' action, every subcommand's parser with _Formatter."""

    def __init__(self, action):
        self.action = action

    def add_parser(self, name, **kw):
        kw.setdefault("formatter_class", _Formatter)
        return self.action.add_parser(name, **kw)


def _lazy(parser, module: str) -> None:
    try:
        mod = __import__(module, fromlist=["add_arguments", "main"])
    except ImportError as exc:
        parser.set_defaults(func=lambda a, e=exc: _missing(module, e))
        parser.add_argument("rest", nargs=argparse.REMAINDER)
        return
    mod.add_arguments(parser)
    parser.set_defaults(func=mod.main)


def _missing(module, exc) -> int:
    print(f"cuport: error: {module} is not available: {exc}", file=sys.stderr)
    return 2


def _translate_args(parser) -> None:
    import importlib

    from porter.translate.api import TARGETS
    parser.add_argument("--to", choices=list(TARGETS), default="hip", help="target (default: hip)")
    clis = {}
    for name, info in TARGETS.items():
        try:
            clis[name] = importlib.import_module(info.cli)
        except ImportError:
            clis[name] = None
    # the front ends share one argument set; options that do not apply to a target are ignored by it
    seen = set()
    for mod in dict.fromkeys(m for m in clis.values() if m is not None):
        mod.add_arguments(_Dedup(parser, seen))

    def dispatch(args):
        mod = clis.get(args.to)
        if mod is None:
            return _missing(f"translate --to {args.to}", "not installed")
        return mod.main(args)
    parser.set_defaults(func=dispatch)


class _Dedup:
    """Lets two front ends declare the same option (-o, -D, -I) once."""

    def __init__(self, parser, seen):
        self.parser, self.seen = parser, seen

    def add_argument(self, *names, **kw):
        key = tuple(n for n in names if n.startswith("-")) or names
        if any(n in self.seen for n in key):
            return None
        self.seen.update(key)
        return self.parser.add_argument(*names, **kw)

    def add_mutually_exclusive_group(self, **kw):
        return _Dedup(self.parser.add_mutually_exclusive_group(**kw), self.seen)

    def add_argument_group(self, *a, **kw):
        return _Dedup(self.parser.add_argument_group(*a, **kw), self.seen)

    def __getattr__(self, name):
        return getattr(self.parser, name)


def _one_file_lint(argv) -> bool:
    """`cuport lint FILE` with one existing regular file (a pre-commit hook's call): worth a pre-forked worker."""
    files = [a for a in argv[1:] if not a.startswith("-") and os.path.isfile(a)]
    return len(files) == 1 and "-" not in argv and not any(a.startswith(("--show-", "-h", "--help")) for a in argv)


def _spare_core() -> bool:
    """A core the pre-forked worker can have to itself: with none, the two processes take turns on one and the
    run is ~10 ms slower than forking later (measured pinned to one core)."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    try:
        load = os.getloadavg()[0]
    except (AttributeError, OSError):
        return False
    return cores >= 2 and load < cores - 1


LINT_GC_THRESHOLD = (100_000, 50, 100)     # porter/lint/run.py _tune_gc


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    command = _command_of(argv)
    if command == "lint":
        import gc
        gc.set_threshold(*LINT_GC_THRESHOLD)     # lint's setting from the start: ~10 collections fewer in the imports
    if command == "lint" and _one_file_lint(argv[argv.index("lint"):]) and _spare_core():
        from porter import isolate
        isolate.prefork()           # imports the linter on another core while this process reads its settings
    try:
        return _main(argv, command)
    finally:
        if command == "lint":
            from porter import isolate
            isolate.discard_prefork()


def _main(argv, command) -> int:
    parser = build_parser(command)
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return int(exc.code or 0)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return args.func(args)
    except KeyboardInterrupt:
        print("cuport: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    except Exception as exc:  # an internal bug: one line, exit 2 (CUPORT_DEBUG=1 for the traceback)
        if os.environ.get("CUPORT_DEBUG"):
            raise
        print(f"cuport: internal error: {type(exc).__name__}: {exc} (set CUPORT_DEBUG=1 for details)",
              file=sys.stderr)
        return 2

"""`cuport translate --to hip`: the command line hipify-clang users expect.

stdout by default; `-o FILE`; `--output-dir DIR` for many files and directories (the tree under the common
root of the inputs is recreated, file names kept so `#include "x.cuh"` still resolves); `--inplace` (atomic
rename, `.prehip` backup unless `--no-backup`); `--examine` (translate, write nothing, print statistics);
`--print-stats[=text|csv|json]`; `-p compile_commands.json`, `-I`, `-D`, `--extra-arg`.
An input is never overwritten without `--inplace`, and every file is written through a temporary file and a
rename, so an interrupted run leaves no half-written output.

A file whose kernels (or what they use) hold a syntax error is not written at all (CP000).

Exit status: 0 translated; 1 some file had parse errors (CP000), was refused, used APIs HIP does not
support, or any diagnostic printed is an error (a portability finding the fixes left); 2 usage or I/O error."""
from __future__ import annotations

import argparse
import os
import re
import sys
import time

CUDA_EXTS = (".cu", ".cuh")
CXX_EXTS = (".c", ".cc", ".cpp", ".cxx", ".c++", ".h", ".hh", ".hpp", ".hxx", ".inl", ".inc", ".ipp", ".tcc")
# a C/C++ file found in a directory is translated only when it looks like CUDA
_LOOKS_CUDA = re.compile(rb"\bcuda[A-Z_]\w*|\bcu(?:blas|rand|fft|sparse|solver|dnn)\w*|\bcub::|__global__|__device__|"
                         rb"<<<|#\s*include\s*[<\"](?:cuda|cublas|curand|cufft|cusparse|cooperative_groups|cub/)")
_SYSTEM_PREFIXES = ("/usr/", "/opt/", "/Library/", "/System/")
BACKUP_SUFFIX = ".prehip"
STATS_FORMATS = ("text", "csv", "json")

# Other targets plug their command line in here ("module:function", called with the parsed args).
TARGET_MAINS = {
    "hip": "porter.translate.hip.cli:main_hip",
}


class UsageError(Exception):
    pass


class _StatsAction(argparse.Action):
    """`--print-stats[=text|csv|json]`; in `--print-stats x.cu` the path is a path, not a format."""

    def __call__(self, parser, namespace, value, option_string=None):
        if value is not None and value not in STATS_FORMATS:
            if value != "-" and not os.path.exists(value):
                parser.error(f"--print-stats: unknown format '{value}' (text, csv or json)")
            extra = list(getattr(namespace, "_stats_paths", None) or [])
            namespace._stats_paths = extra + [value]
            value = "text"
        setattr(namespace, self.dest, value or "text")


def _has(parser, opt: str) -> bool:
    return opt in getattr(parser, "_option_string_actions", {})


def add_arguments(parser) -> None:
    """Add the hip translator's options to an argparse parser (or anything with add_argument, such as
    cuport's shared `translate` parser); options the parser already has are left alone."""
    def add(group, *names, **kw):
        names = [n for n in names if not _has(parser, n)]
        if names:
            group.add_argument(*names, **kw)

    def group(title):
        return parser.add_argument_group(title) if hasattr(parser, "add_argument_group") else parser

    if not any(a.dest == "paths" for a in getattr(parser, "_actions", [])):
        parser.add_argument("paths", nargs="*", metavar="PATH",
                            help="CUDA files or directories to translate ('-' reads standard input)")
    out = group("output (hipify-clang's options)")
    add(out, "-o", "--output", dest="output", metavar="FILE",
        help="write the translation of the one input to FILE (a directory: DIR/NAME; '-': standard output)")
    add(out, "--stdin-filename", dest="stdin_filename", metavar="NAME",
        help="the name of the file read from standard input ('-'): for messages, includes and outputs")
    add(out, "--output-dir", "--o-dir", dest="output_dir", metavar="DIR",
        help="write translations under DIR, keeping the inputs' relative paths and names")
    add(out, "--inplace", action="store_true", help="replace each input by its translation (atomic rename)")
    add(out, "--no-backup", action="store_true", help=f"with --inplace, keep no {BACKUP_SUFFIX} copy")
    add(out, "--examine", action="store_true", help="translate and report, write no output (implies --print-stats)")
    add(out, "--print-stats", dest="print_stats", nargs="?", const="text", action=_StatsAction,
        metavar="FORMAT", help="print conversion statistics: text (default), csv or json")
    add(out, "--print-stats-csv", dest="print_stats", action="store_const", const="csv", help=argparse.SUPPRESS)
    add(out, "--o-stats", "--stats-file", dest="stats_file", metavar="FILE",
        help="write the statistics to FILE instead of the terminal")
    add(out, "-q", "--quiet", dest="quiet", action="store_true", help="do not print diagnostics")
    add(out, "--exit-zero", dest="exit_zero", action="store_true", help="exit 0 even when something was left")
    tr = group("translation")
    add(tr, "--launch-syntax", dest="launch_syntax", choices=("cuda", "hip"), default="cuda",
        help="keep kernel<<<...>>> (cuda, default) or emit hipLaunchKernelGGL(...) (hip)")
    add(tr, "--hip-kernel-execution-syntax", dest="launch_syntax", action="store_const", const="hip",
        help=argparse.SUPPRESS)
    add(tr, "--no-portability-fixes", dest="no_portability_fixes", action="store_true",
        help="do not apply the linter's safe warp-size fixes (CP1xx/CP2xx/CP3xx) nor leave `// cuport:` notes")
    add(tr, "--include-headers", dest="include_headers", action="store_true",
        help="also translate the project headers the inputs include")
    add(tr, "--roc", dest="roc", action="store_true", help="use rocBLAS/rocRAND/rocSPARSE/... instead of hip*")
    add(tr, "--miopen", dest="miopen", action="store_true", help="translate cuDNN to MIOpen instead of hipDNN")
    add(tr, "--cuda-version", dest="cuda_version", metavar="X.Y",
        help="the CUDA the source was written for: names it removed are reported instead of renamed")
    add(tr, "--hip-version", "--rocm-version", dest="hip_version", metavar="X.Y",
        help="the HIP/ROCm to target (default: the newest): names it lacks are reported instead of renamed, "
             "library headers follow its layout (hipblas.h before 5.2, hipblas/hipblas.h from 5.2 on)")
    fe = group("parsing")
    add(fe, "-p", dest="compile_commands", metavar="PATH", help="compile_commands.json or the directory holding it")
    add(fe, "-I", dest="include_dirs", action="append", default=[], metavar="DIR", help="add an include directory")
    add(fe, "-D", dest="defines", action="append", default=[], metavar="NAME[=VALUE]", help="define a macro")
    add(fe, "--extra-arg", dest="extra_args", action="append", default=[], metavar="ARG",
        help="pass ARG to the parser (clang)")
    add(fe, "--config", dest="config", metavar="FILE", help="cuport configuration (default: the closest "
        "pyproject.toml [tool.cuport] / cuport.toml): rule selection for the portability fixes, -I/-D")
    add(fe, "--isolated", dest="isolated", action="store_true", help="ignore configuration files")
    add(fe, "--header-mode", dest="header_mode", choices=("light", "full"), default="light",
        help="light: cuport's own C/C++ header stubs (fast); full: the system's headers")
    from porter.isolate import add_arguments as add_limits
    add_limits(lambda *names, **kw: add(fe, *names, **kw))


def main(args) -> int:
    """Entry point for `cuport translate`: dispatches on --to (other targets add themselves to TARGET_MAINS)."""
    import importlib
    target = getattr(args, "to", None) or "hip"
    spec = TARGET_MAINS.get(target)
    if spec is None:
        print(f"cuport translate: no command line for target '{target}'", file=sys.stderr)
        return 2
    mod, _, fn = spec.partition(":")
    return getattr(importlib.import_module(mod), fn)(args)


# --- hip ----------------------------------------------------------------------------------------------------

def _opt(args, name, default=None):
    v = getattr(args, name, default)
    return default if v is None else v


def main_hip(args) -> int:
    try:
        return _run(args)
    except UsageError as exc:
        print(f"cuport translate: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("cuport translate: interrupted (files written so far are complete; nothing is half-written)",
              file=sys.stderr)
        return 130


def _collect(paths, output_dir=None) -> tuple[list[tuple[str, str]], list[str]]:
    """[(file, root)] in a stable order and the errors; directories are searched recursively."""
    from porter.source import special_kind
    files, errors, seen = [], [], set()
    out_real = os.path.realpath(output_dir) if output_dir else None
    for p in paths:
        if p == "-":
            files.append(("-", os.getcwd()))
            continue
        if os.path.isdir(p):
            root = os.path.abspath(p)
            before = len(files)
            for dirpath, dirnames, filenames in os.walk(root):
                dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and
                                     (out_real is None or os.path.realpath(os.path.join(dirpath, d)) != out_real))
                for f in sorted(filenames):
                    full = os.path.join(dirpath, f)
                    low = f.lower()
                    if low.endswith(CUDA_EXTS):
                        pass
                    elif low.endswith(CXX_EXTS):
                        try:
                            with open(full, "rb") as fh:
                                if not _LOOKS_CUDA.search(fh.read()):
                                    continue
                        except OSError:
                            continue
                    else:
                        continue
                    real = os.path.realpath(full)
                    if real not in seen:
                        seen.add(real)
                        kind = special_kind(full)
                        if kind:
                            errors.append(f"{full}: {kind}, not a source file, skipped")
                            continue
                        files.append((full, root))
            if len(files) == before:
                errors.append(f"{p}: no CUDA sources found")
        elif special_kind(p):
            errors.append(f"{p}: {special_kind(p)}, not a source file, skipped")
        elif os.path.isfile(p):
            real = os.path.realpath(p)
            if real not in seen:
                seen.add(real)
                files.append((os.path.abspath(p), os.path.dirname(os.path.abspath(p))))
        else:
            errors.append(f"{p}: No such file or directory")
    return files, errors


def _project_header(path: str, roots: list[str]) -> bool:
    real = os.path.realpath(path)
    if any(real.startswith(os.path.realpath(r) + os.sep) for r in roots):
        return True
    return not real.startswith(_SYSTEM_PREFIXES)


def _run(args) -> int:
    from porter.source import OutputError, SourceError, check_outputs, read_source, write_output
    from porter.translate.hip import stats as S
    from porter.translate.hip.translator import translate

    paths = list(_opt(args, "_stats_paths", [])) + list(_opt(args, "paths", []))
    output = _opt(args, "output")
    output_dir = _opt(args, "output_dir")
    inplace = bool(_opt(args, "inplace", False))
    examine = bool(_opt(args, "examine", False))
    include_headers = bool(_opt(args, "include_headers", False))
    stats_fmt = _opt(args, "print_stats") or ("text" if examine else None)
    if not paths:
        raise UsageError("no input files")
    from porter.translate.hip.tables import version_key
    for flag, v in (("--cuda-version", _opt(args, "cuda_version")), ("--hip-version", _opt(args, "hip_version"))):
        try:
            if v is not None:
                version_key(v)
        except ValueError:
            raise UsageError(f"{flag}: not a version number: {v!r} (expected X.Y or X.Y.Z)")
    modes = [m for m, on in (("-o", output), ("--output-dir", output_dir), ("--inplace", inplace)) if on]
    if len(modes) > 1:
        raise UsageError(f"{' and '.join(modes)} cannot be combined")
    if examine and modes:
        raise UsageError(f"--examine writes nothing; it cannot be combined with {modes[0]}")
    files, errors = _collect(paths, output_dir)
    for e in errors:
        print(f"cuport translate: error: {e}", file=sys.stderr)
    if not files:
        if errors:
            return 2
        raise UsageError("no CUDA files found in the given paths")
    to_stdout = not modes and not examine
    if (to_stdout or output) and len(files) > 1:
        raise UsageError(f"{len(files)} inputs: use --output-dir DIR or --inplace for more than one file")
    if (to_stdout or output) and include_headers:
        raise UsageError("--include-headers writes several files: use --output-dir DIR or --inplace")
    if inplace and any(f == "-" for f, _ in files):
        raise UsageError("--inplace cannot rewrite standard input")
    stdin_filename = _opt(args, "stdin_filename")
    if output and output != "-" and os.path.isdir(output):      # -o DIR: DIR/NAME of the one input
        name = stdin_filename or "stdin.cu" if files[0][0] == "-" else files[0][0]
        output = os.path.join(output, os.path.basename(name))
    if output == "-":
        output, to_stdout = None, True
    inputs = [f for f, _ in files]
    targets = [("-o", output), ("--o-stats", _opt(args, "stats_file"))]
    if output_dir:
        base0 = _output_base([f for f in inputs if f != "-"], [r for _, r in files])
        targets += [("--output-dir", os.path.join(output_dir, _rel(f, base0, stdin_filename))) for f in inputs]
    refusal = check_outputs(inputs, targets)
    if refusal:
        raise UsageError(refusal + ("; use --inplace to replace it" if output else ""))

    settings = None
    try:
        from porter.config import ConfigError, load_settings
        first = next((f for f, _ in files if f != "-"), None)
        settings = load_settings(os.path.dirname(first) if first else ".", _opt(args, "config"),
                                 bool(_opt(args, "isolated", False)))
    except ImportError:
        pass
    except ConfigError as exc:
        raise UsageError(str(exc))
    options = dict(settings=settings, launch_syntax=_opt(args, "launch_syntax", "cuda"),
                   portability_fixes=not _opt(args, "no_portability_fixes", False),
                   roc=bool(_opt(args, "roc", False)), miopen=bool(_opt(args, "miopen", False)),
                   cuda_version=_opt(args, "cuda_version"), hip_version=_opt(args, "hip_version"),
                   include_dirs=list(_opt(args, "include_dirs", [])), defines=list(_opt(args, "defines", [])),
                   extra_args=list(_opt(args, "extra_args", [])), compile_commands=_opt(args, "compile_commands"),
                   header_mode=_opt(args, "header_mode", "light"))
    from porter import isolate
    from porter.translate.api import translate_isolated
    limits = isolate.Limits.of(settings, _opt(args, "timeout"), _opt(args, "memory_limit"))
    roots = sorted({r for _, r in files})
    results = []            # (path, root, TranslationResult)
    queue = list(files)
    done = {os.path.realpath(f) for f, _ in files if f != "-"}
    failed = bool(errors)
    sources = {}            # path -> SourceFile as read (encoding, digest)
    from porter.lint.run import _tune_gc
    _tune_gc()          # lint's collector settings, inherited by the forked worker (a large model: fewer scans)
    from porter.progress import Progress
    bar = Progress(len(queue), "translate", quiet=bool(_opt(args, "quiet", False)))
    while queue:
        path, root = queue.pop(0)
        try:
            src = read_source(path, stdin_filename=stdin_filename or "stdin.cu")
            # in a supervised child: a libclang crash or a limit refuses this file only (CP000)
            res = translate_isolated(translate, src.path, "hip", limits, (src.path, src.text), options, src.text)
        except SourceError as exc:
            bar.clear()
            print(f"cuport translate: error: {exc}", file=sys.stderr)
            failed = True
            continue
        finally:
            bar.advance(os.path.basename(path))
        if src.note:
            print(f"cuport translate: note: {src.note}", file=sys.stderr)
        sources[path] = src
        results.append((path, root, res))
        if include_headers:
            for h in res.includes:
                real = os.path.realpath(h)
                if real in done or not _project_header(h, roots):
                    continue
                done.add(real)
                queue.append((h, root))
                bar.total += 1
    bar.clear()

    # diagnostics
    if not _opt(args, "quiet", False):
        for path, _, res in results:
            shown = path if path != "-" else "<stdin>"
            for d in res.diagnostics:
                print(f"{shown}:{d.row}:{d.column}: {d.code} {d.message}", file=sys.stderr)

    # outputs (a file refused for a clang error in its kernels is not written: results keeps it for the stats)
    # every output in the input's own encoding (a BOM, Latin-1 comments stay as they were)
    written = [(p, r, res, sources[p].encode(res.text)) for p, r, res in results if not res.extra.get("refused")]
    try:
        if to_stdout:
            if written:
                write_output("-", written[0][3])
        elif output:
            if written:
                _ensure_dir(os.path.dirname(os.path.abspath(output)))
                write_output(output, written[0][3])
        elif output_dir:
            base = _output_base([p for p, _, _ in results if p != "-"], roots)
            inputs = [p for p, _, _ in results]
            for path, _, res, data in written:
                dest = os.path.join(output_dir, _rel(path, base, stdin_filename))
                refusal = check_outputs(inputs, [("--output-dir", dest)])
                if refusal:
                    raise UsageError(refusal + "; choose another --output-dir or use --inplace")
                _ensure_dir(os.path.dirname(os.path.abspath(dest)))
                write_output(dest, data)
        elif inplace:
            for path, _, res, new in written:
                if new == _read_bytes(path):
                    continue
                backup = None
                if not _opt(args, "no_backup", False):
                    if os.path.exists(path + BACKUP_SUFFIX):
                        print(f"cuport translate: keeping the existing backup {path + BACKUP_SUFFIX}",
                              file=sys.stderr)
                    else:
                        backup = BACKUP_SUFFIX
                try:
                    write_output(path, new, expected_original=sources[path].digest, backup_suffix=backup)
                except OutputError as exc:      # this file changed or is read-only: the others still go
                    print(f"cuport translate: error: {exc}", file=sys.stderr)
                    failed = True
    except OutputError as exc:
        print(f"cuport translate: error: {exc}", file=sys.stderr)
        return 2

    # statistics
    if stats_fmt:
        text = S.render([r.stats for _, _, r in results], stats_fmt)
        stats_file = _opt(args, "stats_file")
        if stats_file:
            try:
                write_output(stats_file, text.encode("utf-8"))
            except OutputError as exc:
                print(f"cuport translate: error: {exc}", file=sys.stderr)
                return 2
        else:
            stream = sys.stderr if to_stdout else sys.stdout
            stream.write(text)
            stream.flush()

    # an error left in what was printed (a CP104 the fixes could not remove...) is never exit 0
    incomplete = any(r.stats.parse_errors or r.stats.unconverted_refs or r.extra.get("refused")
                     or any(d.severity == "error" for d in r.diagnostics) for _, _, r in results)
    from porter.progress import outcome_summary
    refused = sum(1 for _, _, r in results if r.extra.get("refused"))
    manual = sum(1 for _, _, r in results if not r.extra.get("refused")
                 and (r.stats.parse_errors or r.stats.unconverted_refs))
    sys.stdout.flush()
    bar.summary(outcome_summary("translate --to hip", len(results), {
        "translated": len(results) - refused - manual, "need manual work": manual, "refused": refused}, bar.elapsed))
    if failed:
        return 2
    if incomplete and not _opt(args, "exit_zero", False):
        return 1
    return 0


def _ensure_dir(d: str) -> None:
    from porter.source import OutputError
    if d:
        try:
            os.makedirs(d, exist_ok=True)
        except OSError as exc:
            raise OutputError(f"{d}: cannot create the directory: {exc.strerror or exc}") from None


def _read_bytes(path: str) -> bytes | None:
    try:
        with open(path, "rb") as fh:
            return fh.read()
    except OSError:
        return None


def _output_base(paths, roots) -> str:
    """The directory --output-dir mirrors: the common root of the inputs (and of the directories given)."""
    dirs = [os.path.dirname(os.path.realpath(p)) for p in paths] + [os.path.realpath(r) for r in roots]
    return os.path.commonpath(dirs) if dirs else os.getcwd()


def _rel(path: str, base: str, stdin_filename: str | None) -> str:
    if path == "-":
        return os.path.basename(stdin_filename or "stdin.cu")
    return os.path.relpath(os.path.realpath(path), base)


def build_parser() -> argparse.ArgumentParser:
    """A standalone parser (tests and `python -m porter.translate.hip.cli`); cuport's CLI builds its own."""
    p = argparse.ArgumentParser(prog="cuport translate --to hip",
                                description="Translate CUDA to HIP, fixing warp-size assumptions on the way.")
    p.add_argument("--to", default="hip", choices=sorted(TARGET_MAINS))
    add_arguments(p)
    return p


if __name__ == "__main__":
    t0 = time.perf_counter()
    sys.exit(main(build_parser().parse_args()))

"""`cuport lint`: discover files, lint each (cached, in parallel when there are many), fix, report, exit code."""
from __future__ import annotations

import os
import sys
from collections import Counter

from porter.source import (STDIN, OutputError, SourceError, SourceFile, check_outputs, preload_stdin, read_source,
                            stdin_name, write_output)

PARALLEL_THRESHOLD = 16


def add_arguments(p) -> None:
    p.add_argument("paths", nargs="*", default=["."], help="files or directories (default: .)")
    p.add_argument("--output-format", default=os.environ.get("CUPORT_OUTPUT_FORMAT", "full"),
                   choices=["full", "concise", "json", "json-lines", "github", "sarif"])
    p.add_argument("-o", "--output-file", help="write the report to this file ('-': standard output)")
    p.add_argument("--stdin-filename", help="the name of the file read from standard input ('-'): for "
                   "messages, per-file-ignores and the configuration")
    p.add_argument("--select", action="append", help="codes, prefixes or names (comma separated)")
    p.add_argument("--ignore", action="append")
    p.add_argument("--extend-select", action="append")
    p.add_argument("--fix", action="store_true", help="apply safe fixes")
    p.add_argument("--unsafe-fixes", action="store_true", help="also apply (or show) unsafe fixes")
    p.add_argument("--diff", action="store_true", help="print the fixes as a unified diff, write nothing")
    p.add_argument("--show-fixes", action="store_true")
    p.add_argument("--statistics", action="store_true")
    p.add_argument("--exit-zero", action="store_true")
    p.add_argument("--exit-non-zero-on-fix", action="store_true")
    p.add_argument("--ignore-noqa", action="store_true")
    p.add_argument("--add-noqa", action="store_true")
    p.add_argument("--no-cache", action="store_true")
    p.add_argument("--config")
    p.add_argument("--isolated", action="store_true")
    p.add_argument("--show-settings", action="store_true")
    p.add_argument("--show-files", action="store_true")
    p.add_argument("--force-exclude", action="store_true")
    p.add_argument("--color", choices=["auto", "always", "never"], default="auto")
    p.add_argument("-I", dest="include_dirs", action="append", default=None)
    p.add_argument("-D", dest="defines", action="append", default=None)
    p.add_argument("--extra-arg", dest="extra_args", action="append", default=None)
    p.add_argument("-p", dest="compile_commands", help="compile_commands.json or its directory")
    p.add_argument("--full-headers", action="store_true", help="parse with the system C/C++ headers (slower)")
    p.add_argument("-j", "--jobs", type=int, default=0, help="worker processes (default: CPUs when many files)")
    from porter.isolate import add_arguments as add_limits
    add_limits(p.add_argument)
    p.add_argument("-q", "--quiet", action="store_true")


def _split(values):
    if not values:
        return None
    return [v.strip() for item in values for v in item.split(",") if v.strip()]


def load(args):
    from porter.config import load_settings
    named = [getattr(args, "stdin_filename", None) or "." if p == STDIN else p for p in args.paths]
    first = next((p for p in named if os.path.exists(p)), ".")
    start = first if os.path.isdir(first) else (os.path.dirname(os.path.abspath(first)) or ".")
    cli = {"select": _split(args.select), "ignore": _split(args.ignore), "extend_select": _split(args.extend_select),
           "include_dirs": args.include_dirs, "defines": args.defines, "extra_args": args.extra_args,
           "timeout": getattr(args, "timeout", None), "memory_limit": getattr(args, "memory_limit", None)}
    s = load_settings(start, args.config, args.isolated, {k: v for k, v in cli.items() if v is not None})
    s.compile_commands = args.compile_commands
    s.header_mode = "full" if args.full_headers else "light"
    return s


def _lint_one(task, probe=False):
    """Worker: (path, settings, mode, flags) -> (path, diagnostics, text, fixed, error, refused).
    probe: the supervisor's pass before forking: None where the file needs libclang (not in the cache)."""
    path, settings, mode, ignore_noqa, unsafe, use_cache = task
    try:
        src = read_source(path)
    except SourceError as exc:
        return path, [], None, {}, str(exc), None
    if not src.text.strip():
        return path, [], src.text, {}, None, None
    from porter.isolate import check_expansion, diagnostic
    bomb = check_expansion(src.text, settings.memory_limit)     # before the cache: a raised limit takes effect
    if bomb:
        return path, [diagnostic(path, bomb)], src.text, {}, None, None
    cache = None
    if use_cache and mode == "check":
        from porter.lint.cache import Cache
        cache = Cache(settings.cache_dir, settings.hash() + ("n" if ignore_noqa else ""))
        key = cache.key(path, src.data)
        hit = cache.get(key)
        if hit is not None:
            return path, hit, src.text, {}, None, None
    if probe:
        return None
    # imported after the cache lookup: a warm run never loads libclang or the rules
    from porter.lint.checker import fix_source, lint_source
    if mode == "fix":
        out = fix_source(src, settings, unsafe=unsafe)
        return path, out.result.diagnostics, out.text, out.fixed, None, out.refused
    res = lint_source(src, settings, ignore_noqa=ignore_noqa)
    if cache is not None:
        cache.put(key, res.diagnostics, res.dependencies)
    return path, res.diagnostics, src.text, {}, None, None


def main(args) -> int:
    from porter.config import ConfigError
    from porter.lint.files import discover
    from porter.lint.registry import UnknownCode
    try:
        settings = load(args)
    except (ConfigError, UnknownCode) as exc:
        print(f"cuport: error: {exc}", file=sys.stderr)
        return 2
    if args.show_settings:
        sys.stdout.write(settings.show())
        return 0
    status = 0
    paths = []
    for p, err in discover(args.paths, settings.is_excluded, force_exclude=args.force_exclude):
        if err:
            print(f"cuport: error: {err}", file=sys.stderr)
            status = 2
        else:
            paths.append(p)
    if args.show_files:
        print("\n".join(stdin_name(args.stdin_filename) if p == STDIN else p for p in paths))
        return status
    mode = "fix" if (args.fix or args.diff) else "check"
    refusal = check_outputs(paths, [("-o", args.output_file)])
    if refusal is None and args.add_noqa and STDIN in paths:
        refusal = "--add-noqa cannot rewrite standard input"
    if refusal:
        print(f"cuport: error: {refusal}", file=sys.stderr)
        return 2
    if STDIN in paths:
        preload_stdin(args.stdin_filename)       # before any worker forks
    # what each file to be rewritten held when it was read: a file edited meanwhile is not replaced
    originals = {p: _read_quiet(p) for p in paths if p != STDIN} if (mode == "fix" or args.add_noqa) else {}
    _tune_gc()
    tasks = [(p, settings, mode, args.ignore_noqa, args.unsafe_fixes, not args.no_cache) for p in paths]
    from porter.progress import Progress
    bar = Progress(len(tasks), "lint", quiet=args.quiet)     # stderr on a terminal only (porter/progress.py)
    with bar:
        results = _run(tasks, args.jobs, bar.advance)

    diagnostics, sources, fixed_all = [], {}, {}
    for path, diags, text, fixed, error, refused in results:
        if error:
            print(f"cuport: error: {error}", file=sys.stderr)
            status = 2
            continue
        shown = stdin_name(args.stdin_filename) if path == STDIN else path
        sources[shown] = SourceFile(shown, text)
        note = _encoding_note(path, text, originals)
        if note:
            print(f"cuport: note: {note}", file=sys.stderr)
        if refused:
            print(f"cuport: warning: {shown}: {refused}", file=sys.stderr)
        if mode == "fix" and path == STDIN and not args.diff:
            sys.stdout.write(text)           # ruff's way: the fixed source to stdout, the report to stderr
            fixed_all[shown] = Counter(fixed)
        elif mode == "fix" and fixed:
            if args.diff:
                original = read_source(path).text
                # difflib's own diff for ordinary files; anchored (near-linear) past a size where it is quadratic
                from porter.textdiff import unified_diff
                sys.stdout.write("".join(unified_diff(
                    original.splitlines(True), text.splitlines(True), f"a/{shown}", f"b/{shown}")))
            else:
                try:
                    _rewrite(path, text, originals.get(path))
                except OutputError as exc:
                    print(f"cuport: error: {exc}", file=sys.stderr)
                    status = 2
                    diagnostics.extend(diags)
                    continue
            fixed_all[shown] = Counter(fixed)
        diagnostics.extend(diags)
    if args.add_noqa:
        from porter.lint.suppress import add_noqa
        by_file = {}
        for d in diagnostics:
            if d.extra.get("gave_up"):           # a file cuport gave up on (porter.isolate): nothing to suppress
                print(f"cuport: error: {d.filename}: {d.message}", file=sys.stderr)
                status = max(status, 1)
            else:
                by_file.setdefault(d.filename, []).append(d)
        n = 0
        for path, ds in by_file.items():
            new = add_noqa(sources[path].text, ds)
            if new != sources[path].text:
                try:
                    _rewrite(path, new, originals.get(path))
                except OutputError as exc:
                    print(f"cuport: error: {exc}", file=sys.stderr)
                    status = 2
                    continue
                n += len(ds)
        print(f"Added {n} noqa directive{'s' if n != 1 else ''}.", file=sys.stderr)
        return status
    to_stderr = mode == "fix" and STDIN in paths and not args.diff and not args.output_file
    try:
        status = max(status, _report(args, diagnostics, sources, fixed_all, to_stderr))
    except OutputError as exc:
        print(f"cuport: error: {exc}", file=sys.stderr)
        return 2
    from porter.progress import findings_summary
    sys.stdout.flush()
    bar.summary(findings_summary("lint" if mode == "check" else "lint --fix", len(tasks),
                                 [d.code for d in diagnostics], bar.elapsed))
    return status


def _read_quiet(path):
    try:
        return read_source(path)
    except SourceError:
        return None


def _encoding_note(path, text, originals):
    """The Latin-1 fallback note of a file (read again only when its text is not ASCII)."""
    if path == STDIN or not text or text.isascii():
        return None
    src = originals.get(path) or _read_quiet(path)
    return src.note if src is not None else None


def _rewrite(path, text, original):
    """--fix / --add-noqa: write `text` over `path` in the file's encoding, unless it changed since it was read."""
    if original is None:
        raise OutputError(f"{path}: changed while processing, skipped")
    write_output(path, original.encode(text), expected_original=original.digest)


def _tune_gc() -> None:
    """Fewer cyclic garbage collections for this process: a file's model is freed by reference counting
    (FileModel.release), so there is little cyclic garbage, but with the default thresholds every few thousand
    allocations trigger a collection and every few dozen a scan of all live objects; on a 1 MB file that
    model is large and those scans were a quarter of the run."""
    import gc
    gc.freeze()                          # what the imports allocated is never scanned again
    gc.set_threshold(100_000, 50, 100)      # also set by cli.main (LINT_GC_THRESHOLD) before the imports


def _run(tasks, jobs, progress=None):
    """Cache hits, pre-check refusals and read errors here; every other file in a forked child (porter.isolate),
    in parallel when there are many, so that a libclang crash, a hang or a memory blow-up costs only that file.
    progress(name) is called once per file as it is done (the terminal's progress bar)."""
    from porter import isolate
    tick = progress or (lambda name: None)
    results = []
    for t in tasks:
        results.append(_lint_one(t, probe=True))
        if results[-1] is not None:
            tick(t[0])
    todo = [i for i, r in enumerate(results) if r is None]
    if not todo:
        return results
    if len(todo) > 1:
        isolate.preload()        # many files: import once here rather than in every child
    workers = jobs or (os.cpu_count() or 1)
    workers = min(workers, len(todo)) if len(todo) >= PARALLEL_THRESHOLD else 1
    limits = isolate.Limits.of(tasks[0][1])
    done = isolate.run_each(_lint_one, [tasks[i] for i in todo], limits, workers,
                            name=lambda t: os.path.basename(t[0]), size=lambda t: isolate.file_size(t[0]),
                            on_done=(lambda j: tick(tasks[todo[j]][0])) if progress else None)
    for i, r in zip(todo, done):
        if isinstance(r, isolate.Failure):
            path = tasks[i][0]
            try:
                src = read_source(path)
                text, name = src.text, src.path
            except SourceError:
                text, name = "", path
            r = path, [isolate.diagnostic(name, r.message)], text, {}, None, None
        results[i] = r
    return results


def _report(args, diagnostics, sources, fixed_all, to_stderr=False) -> int:
    import io
    from porter.lint import output
    from porter.lint.output import fixed_summary, statistics, use_color
    diagnostics.sort(key=lambda d: (d.filename, d.row, d.column, d.code))
    to_file = args.output_file not in (None, STDIN)
    stream = io.StringIO() if to_file else (sys.stderr if to_stderr else sys.stdout)
    color = use_color(args.color, stream)
    if args.statistics:
        stream.write(statistics(diagnostics, unsafe_fixes=args.unsafe_fixes))
    elif not (args.diff and args.output_format == "full"):
        text = output.render(args.output_format, diagnostics, sources, color=color, show_fixes=args.show_fixes,
                             fix_available=not args.fix, unsafe_fixes=args.unsafe_fixes)
        if not (args.quiet and not diagnostics):
            stream.write(text)
    if args.show_fixes and fixed_all and args.output_format in ("full", "concise"):
        stream.write(fixed_summary(fixed_all, color=color))
    if to_file:
        write_output(args.output_file, stream.getvalue().encode("utf-8"))
    if args.exit_zero:
        return 0
    if args.exit_non_zero_on_fix and fixed_all:
        return 1
    return 1 if diagnostics else 0

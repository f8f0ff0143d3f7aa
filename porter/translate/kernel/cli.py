"""`cuport translate --to glsl|opencl FILE... [-o DIR] [--manifest] [-D NAME=VALUE] [--kernel NAME] [--validate]`.

GLSL: one compute shader per kernel. Without -o they go to stdout (separated by `// ---- NAME.comp ----`
lines when there are several); with `-o DIR` each is written to DIR/NAME.comp and, with --manifest, its host
manifest to DIR/NAME.json. OpenCL: one .cl file per input (stdout, `-o FILE.cl`, or `-o DIR`), manifests to
DIR/STEM.json. Diagnostics go to stderr as `path:line:col: CODE message`.

Outputs are checked with glslangValidator + spirv-val (GLSL) or an OpenCL build (PoCL) whenever the tool is
installed (--no-validate skips it); an output the validator rejects is not written. A kernel whose code, or any
declaration it uses, holds a clang error is not translated (CP000).

Exit status: 0 every kernel translated (and validated); 1 a kernel was not translated, a clang error blocks a
kernel or the file, validation failed, or any diagnostic printed is an error; 2 usage or I/O error."""
from __future__ import annotations

import json
import os
import re
import sys


def _has(parser, opt: str) -> bool:
    return opt in getattr(parser, "_option_string_actions", {}) or \
        opt in getattr(getattr(parser, "parser", None), "_option_string_actions", {})


def add_arguments(parser) -> None:
    """Options of the kernel translators; options the parser already has (shared with --to hip) are kept."""
    def add(*names, **kw):
        names = [n for n in names if not _has(parser, n)]
        if names:
            parser.add_argument(*names, **kw)

    actions = getattr(parser, "_actions", None) or getattr(getattr(parser, "parser", None), "_actions", [])
    if not any(a.dest == "paths" for a in actions):
        parser.add_argument("paths", nargs="*", metavar="PATH", help="CUDA files to translate")
    add("-o", "--output", dest="output", metavar="PATH",
        help="glsl: directory for NAME.comp (and NAME.json); opencl: FILE.cl or a directory (default: stdout)")
    add("--output-dir", dest="output_dir", metavar="DIR", help="same as -o DIR")
    add("--manifest", dest="manifest", action="store_true",
        help="glsl / opencl: also write the host manifest (JSON) of every kernel")
    add("--kernel", dest="kernel", metavar="NAME", help="glsl / opencl: translate only this kernel")
    add("--validate", dest="validate", action="store_true",
        help="glsl: glslangValidator + spirv-val; opencl: build with the first OpenCL device (PoCL). On by "
             "default when the tool is installed; an output it rejects is not written (exit 1)")
    add("--no-validate", dest="no_validate", action="store_true",
        help="glsl / opencl: do not check the outputs with glslangValidator / an OpenCL build")
    add("--float-atomics", dest="float_atomics", choices=("ext", "cas"), default="ext",
        help="glsl: float atomicAdd through GL_EXT_shader_atomic_float (ext, default) or a compare-and-swap loop")
    add("--fast-math", dest="fast_math", action="store_true",
        help="glsl: GLSL's own exp, log, log2, asin, acos, atan, sinh, cosh, tanh... (one instruction, as loose as "
             "Vulkan allows: docs/intrinsics.md) instead of cuport's helpers within CUDA's ulp bounds, as nvcc's "
             "-use_fast_math trades accuracy for speed. CUDA's __expf & co. always take the builtin")
    add("--opencl-subgroups", dest="opencl_subgroups", choices=("none", "khr"), default="none",
        help="opencl: warps as single work-items (none, default; OpenCL 1.2) or cl_khr_subgroups (khr)")
    add("-D", dest="defines", action="append", default=[], metavar="NAME[=VALUE]",
        help="define a macro (also sets template parameters of kernels)")
    add("-I", dest="include_dirs", action="append", default=[], metavar="DIR", help="add an include directory")
    add("--extra-arg", dest="extra_args", action="append", default=[], metavar="ARG", help="pass ARG to clang")
    add("-p", dest="compile_commands", metavar="PATH", help="compile_commands.json or the directory holding it")
    add("--header-mode", dest="header_mode", choices=("light", "full"), default="light",
        help="light: cuport's header stubs (fast); full: the system's headers")
    add("--no-portability-fixes", dest="no_portability_fixes", action="store_true",
        help="do not apply the linter's safe warp-size fixes before translating")
    add("-q", "--quiet", dest="quiet", action="store_true", help="do not print diagnostics")
    add("--exit-zero", dest="exit_zero", action="store_true", help="exit 0 even when a kernel was not translated")
    from porter.isolate import add_arguments as add_limits
    add_limits(add)


def _opt(args, name, default=None):
    v = getattr(args, name, default)
    return default if v is None else v


def safe_name(label: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", label).strip("_") or "kernel"


_INPUTS: list = []     # this run's input files: never written
_WRITTEN: dict = {}    # real path of each output written in this run -> the input it came from


class WouldOverwriteInput(OSError):
    pass


def _write(path: str, text: str, origin: str | None = None) -> None:
    """Write one output: never over an input, never over another input's output of this run."""
    from porter.source import OutputError, check_outputs, write_output
    if path == "-":
        sys.stdout.write(text)
        return
    refusal = check_outputs(_INPUTS, [("output", path)])
    if refusal:
        raise OutputError(f"{refusal} (choose another -o / --output-dir)")
    real = os.path.realpath(path)
    if origin is not None and _WRITTEN.get(real, origin) != origin:
        raise OutputError(f"{path}: already written for {_WRITTEN[real]} in this run; not overwritten with the "
                          f"translation of {origin} (give the inputs different names or translate them apart)")
    write_output(path, text.encode("utf-8"))
    if origin is not None:
        _WRITTEN[real] = origin


def main(args) -> int:
    from porter.source import OutputError, SourceError, check_outputs, read_source
    from porter.translate.api import translate_file
    target = _opt(args, "to", "glsl")
    paths = list(_opt(args, "paths", []) or [])
    if not paths:
        print(f"cuport translate --to {target}: error: no input files", file=sys.stderr)
        return 2
    out = _opt(args, "output_dir") or _opt(args, "output")
    status = 0
    options = {"defines": _opt(args, "defines", []), "include_dirs": _opt(args, "include_dirs", []),
               "extra_args": _opt(args, "extra_args", []), "compile_commands": _opt(args, "compile_commands"),
               "header_mode": _opt(args, "header_mode", "light"), "kernel": _opt(args, "kernel"),
               "portability_fixes": not _opt(args, "no_portability_fixes", False),
               "validate": _validate_wanted(args, target)}
    try:                            # the configuration's -I / -D / clang arguments; a bad one is exit 2
        from porter.config import ConfigError, load_settings
        first = next((p for p in paths if p != "-" and os.path.exists(p)), ".")
        settings = load_settings(first if os.path.isdir(first) else os.path.dirname(os.path.abspath(first)),
                                 _opt(args, "config"), bool(_opt(args, "isolated", False)))
    except ConfigError as exc:
        print(f"cuport translate: error: {exc}", file=sys.stderr)
        return 2
    for key in ("include_dirs", "defines", "extra_args"):
        options[key] = list(options[key] or []) + list(getattr(settings, key, []) or [])
    if not _opt(args, "isolated", False) and not options["compile_commands"]:
        # the program's Makefile -I / -D (its headers' context); the command line's come after and win
        from porter.frontend.makeflags import find_makefile, read_makefile
        mk = find_makefile(first)
        if mk:
            flags = read_makefile(mk)
            options["include_dirs"] = options["include_dirs"] + [d for d in flags.include_dirs
                                                                 if d not in options["include_dirs"]]
            options["defines"] = [d for d in flags.defines if d not in options["defines"]] + options["defines"]
            if flags.note() and not _opt(args, "quiet", False):
                print(f"cuport translate: note: {flags.note()}", file=sys.stderr)
    if target == "glsl":
        options["float_atomics"] = _opt(args, "float_atomics", "ext")
        options["fast_math"] = _opt(args, "fast_math", False)
    else:
        options["subgroups"] = _opt(args, "opencl_subgroups", "none")
    if out == "-":
        out = None                  # standard output
    if out and target == "glsl" and os.path.exists(out) and not os.path.isdir(out):
        print(f"cuport translate --to glsl: error: -o {out}: not a directory (GLSL writes one shader per kernel)",
              file=sys.stderr)
        return 2
    files, errors = _expand(paths)
    for e in errors:
        print(f"cuport translate: error: {e}", file=sys.stderr)
        status = 2
    # an input another input includes is translated as part of its includer(s), not alone (units.py)
    from porter.translate.kernel.units import included_inputs, not_seen as units_fallback
    inside = included_inputs([f for f, _ in files])
    subs = dict(files)              # each input's output sub-directory (a skipped one may come back below)
    all_inputs = [f for f, _ in files]
    if inside:
        files = [(f, sub) for f, sub in files if f not in inside]
        if not _opt(args, "quiet", False):
            for f, by in inside.items():
                print(f"cuport translate: note: {f} is translated with {by}, which includes it", file=sys.stderr)
    options["program_files"] = [f for f, _ in files if f != "-"]
    _INPUTS[:] = all_inputs
    _WRITTEN.clear()
    refusal = check_outputs(_INPUTS, [("-o", out)]) if out and not os.path.isdir(out) else None
    if refusal:
        print(f"cuport translate: error: {refusal}", file=sys.stderr)
        return 2
    stdin_filename = _opt(args, "stdin_filename") or "stdin.cu"
    from porter import isolate
    from porter.translate.api import translate_isolated
    from porter.config import ConfigError
    try:
        limits = isolate.limits_for(args, paths)
    except ConfigError as exc:
        print(f"cuport translate: error: {exc}", file=sys.stderr)
        return 2
    from porter.lint.run import _tune_gc
    _tune_gc()          # lint's collector settings, inherited by the forked worker (a large model: fewer scans)
    from porter.progress import Progress
    bar = Progress(len(files), "translate", quiet=bool(_opt(args, "quiet", False)))
    outcomes = {"translated": 0, "partly translated": 0, "refused": 0, "without kernels": 0}
    results = []                    # every file's result: kernels launched in one and defined in none
    shown: set = set()              # diagnostics printed for headers (inlined into several inputs)

    def inputs():
        yield from files
        # a header whose kernels its includer did not see (an include under `#ifdef USE_GPU` not taken):
        # translated on its own after all, as before; never left out
        late = units_fallback(inside, results)
        if late:
            # through the outermost of the skipped headers that includes it (its context: macros, types)
            within = included_inputs(list(inside))
            for f in dict.fromkeys(within.get(f, f) for f in late):
                if not _opt(args, "quiet", False):
                    print(f"cuport translate: note: {f}: kernels it holds are not in what includes it as "
                          "compiled (a conditional include?): translated on its own", file=sys.stderr)
                yield f, subs.get(f, "")
    for path, sub in inputs():
        dest = os.path.join(out, sub) if out and sub else out
        try:
            src = read_source(path, stdin_filename=stdin_filename)
            # in a supervised child: a libclang crash or a limit refuses this file only (CP000)
            res = translate_isolated(translate_file, src.path, target, limits, (src.path, target),
                                    dict(options, text=src.text), src.text)
        except SourceError as exc:
            bar.clear()
            print(f"cuport translate: error: {exc}", file=sys.stderr)
            status = max(status, 2)
            continue
        finally:
            bar.advance(os.path.basename(path))
        bar.clear()                 # the diagnostics below print over a clean line
        outcomes[_outcome(res)] += 1
        results.append(res)
        if src.note:
            print(f"cuport translate: note: {src.note}", file=sys.stderr)
        if not _opt(args, "quiet", False):
            for d in res.diagnostics:
                line = f"{d.filename}:{d.row}:{d.column}: {d.code} [{d.severity}] {d.message}"
                if d.filename != res.path:
                    if line in shown:
                        continue        # a header two inputs include: its findings once
                    shown.add(line)
                print(line, file=sys.stderr)
        # any error printed (a CP000, a CP104 left in a translated kernel...) is never exit 0
        blocking = any(d.severity == "error" for d in res.diagnostics)
        if res.failed_kernels or res.extra.get("refused") or blocking:
            status = max(status, 1)
        try:
            if target == "glsl":
                _emit_glsl(res, dest, bool(_opt(args, "manifest", False)), len(files) > 1, path)
            else:
                _emit_opencl(res, dest, bool(_opt(args, "manifest", False)), path)
        except (OSError, OutputError) as exc:
            msg = exc if isinstance(exc, OutputError) else f"{getattr(exc, 'filename', '') or path}: " \
                f"{exc.strerror or exc}"
            print(f"cuport translate: error: {msg}", file=sys.stderr)
            status = 2
            continue
        validation = res.extra.get("validation") or {}
        for name, v in validation.items():
            if v["ok"] and not _opt(args, "validate", False):
                continue            # default validation speaks only when it rejects something
            state = "ok" if v["ok"] else ("skipped" if v["skipped"] else "FAILED")
            line = f"{path}: {name}: validation {state}"
            if v.get("steps"):
                line += f" ({', '.join(v['steps'])})"
            if v.get("reason"):
                line += f": {v['reason']}"
            print(line, file=sys.stderr)
            if not v["ok"]:
                if not v["skipped"]:
                    status = max(status, 1)
                    if v.get("log"):
                        print(v["log"].rstrip(), file=sys.stderr)
    from porter.translate.kernel.units import left_out
    for name, where in left_out(results):
        print(f"cuport translate: error: kernel `{name}` is launched in {where} but no input defines it: not "
              "translated (add the file that defines it to the inputs)", file=sys.stderr)
        status = max(status, 1)
    from porter.progress import outcome_summary
    sys.stdout.flush()
    bar.summary(outcome_summary(f"translate --to {target}", sum(outcomes.values()), outcomes, bar.elapsed))
    if _opt(args, "exit_zero", False) and status == 1:
        return 0
    return status


def _outcome(res) -> str:
    """One file's outcome for the closing summary."""
    out = bool(res.shaders or res.text)
    if res.extra.get("refused") or any(d.code == "CP000" and d.severity == "error" for d in res.diagnostics):
        return "refused"
    if res.failed_kernels:
        return "partly translated" if out else "refused"
    return "translated" if out else "without kernels"


def _validate_wanted(args, target: str) -> bool:
    """--validate asks for it (a missing tool is then reported); without it, on when the tool is installed."""
    if _opt(args, "no_validate", False):
        return False
    if _opt(args, "validate", False):
        return True
    from porter.translate.kernel import validate as V
    if target == "glsl":
        return V.tool("glslangValidator") is not None
    return V.opencl_context() is not None


def _expand(paths):
    """([(file, sub-directory its output goes to)], errors). A directory is walked for .cu/.cuh files; the
    outputs mirror the inputs' tree under the common directory of all inputs (as `--to hip` does), so
    inputs with one name in different directories never share an output. A missing or special input, or a
    directory without sources, is an error line; the other inputs still go."""
    from porter.lint.files import discover
    found, errors = [], []
    for p, err in discover(paths):
        if err:
            errors.append(err)
        else:
            found.append(p)
    dirs = [os.path.dirname(os.path.realpath(f)) for f in found if f != "-"] + \
        [os.path.realpath(p) for p in paths if p != "-" and os.path.isdir(p)]
    base = os.path.commonpath(dirs) if dirs else os.getcwd()
    files = []
    for f in found:
        sub = "" if f == "-" else os.path.relpath(os.path.dirname(os.path.realpath(f)), base)
        files.append((f, "" if sub == "." else sub))
    return files, errors


def _emit_glsl(res, out, manifest: bool, many: bool, origin: str | None = None) -> None:
    stem = os.path.splitext(os.path.basename(res.path))[0]
    names = {k: (f"{stem}.{safe_name(k)}" if many else safe_name(k)) for k in res.shaders}
    if out:
        os.makedirs(out, exist_ok=True)
        for k, text in res.shaders.items():
            _write(os.path.join(out, names[k] + ".comp"), text, origin)
            if manifest:
                _write(os.path.join(out, names[k] + ".json"), json.dumps(res.manifests[k], indent=2) + "\n",
                       origin)
        return
    parts = []
    for k, text in res.shaders.items():
        if len(res.shaders) > 1 or manifest:
            parts.append(f"// ---- {names[k]}.comp ----\n")
        parts.append(text)
    if manifest and res.manifests:
        parts.append("// ---- manifest.json ----\n" + json.dumps(res.manifests, indent=2) + "\n")
    sys.stdout.write("".join(parts))


def _emit_opencl(res, out, manifest: bool, origin: str | None = None) -> None:
    stem = os.path.splitext(os.path.basename(res.path))[0]
    if not res.text:
        return
    if out:
        if os.path.isdir(out) or out.endswith(os.sep) or not os.path.splitext(out)[1]:
            os.makedirs(out, exist_ok=True)
            cl_path = os.path.join(out, stem + ".cl")
        else:
            cl_path = out
        _write(cl_path, res.text, origin)
        if manifest:
            _write(os.path.splitext(cl_path)[0] + ".json", json.dumps(res.manifests, indent=2) + "\n", origin)
        return
    sys.stdout.write(res.text)
    if manifest:
        sys.stdout.write("// ---- manifest.json ----\n" + json.dumps(res.manifests, indent=2) + "\n")

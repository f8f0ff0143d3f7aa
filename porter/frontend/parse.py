"""libclang front door: flags, the CUDA shim, compile_commands.json, and error collection.

Two header modes: "light" (default) uses -nostdinc with our own stubs, which keeps a pre-commit run fast;
"full" uses the system's C/C++ headers (slower, exact)."""
from __future__ import annotations

import os
import sys

from porter.record import Record

# plain strings, not pathlib (its import, with urllib's, is a few ms of a one-file pre-commit run)
SHIM_DIR = os.path.join(os.path.dirname(os.path.realpath(__file__)), "shim")
SHIM_HEADER = os.path.join(SHIM_DIR, "cuda_shim.h")
STUB_INCLUDE = os.path.join(SHIM_DIR, "include")

_index = None
_CI = None


def _cindex():
    global _CI
    if _CI is None:
        import clang.cindex as ci
        conf = ci.Config
        if not conf.loaded and not conf.library_file and sys.platform.startswith("linux") and conf.library_path:
            # what the bindings' get_filename picks on Linux, without their `import platform` (~1 ms)
            lib = os.path.join(conf.library_path, "libclang.so")
            if os.path.isfile(lib):
                conf.library_file = lib
        if isinstance(getattr(ci, "BaseEnumeration", None), type) and \
                isinstance(ci.BaseEnumeration.__dict__.get("name"), property):
            ci.BaseEnumeration.name = property(_enum_name)
        _CI = ci
    return _CI


_ENUM_NAMES: dict = {}


def _enum_name(self) -> str:
    """CursorKind / TypeKind ... `.name` with one value -> name table per class. The bindings' own property
    builds its table on the instance, so every kind a file uses rescans the whole class (~270 entries):
    ~1.5 ms of a one-file run. Same result: the last class attribute bound to the value names it."""
    cls = type(self)
    name = _ENUM_NAMES.get(cls, {}).get(self.value)
    if name is None:                # first use, or a kind registered since
        names = _ENUM_NAMES[cls] = {v.value: k for k, v in cls.__dict__.items() if isinstance(v, cls)}
        name = names[self.value]
    return name


def index():
    global _index
    if _index is None:
        _index = _cindex().Index.create()
        import atexit
        atexit.register(_shutdown)
    return _index


def _shutdown():
    """Free translation units while the bindings still work. A TU still referenced at interpreter exit would
    otherwise be disposed after clang.cindex's globals are torn down, printing a traceback from __del__."""
    import gc
    gc.collect()
    ci = _cindex()
    ci.TranslationUnit.__del__ = lambda self: None
    ci.Index.__del__ = lambda self: None


class ParseOptions(Record):
    """How to parse: include dirs, defines, extra flags, header mode, recovery."""
    include_dirs: list[str]
    defines: list[str]
    extra_args: list[str]
    compile_commands: str | None             # path to compile_commands.json or its directory
    header_mode: str                         # light | full
    full_model: bool                         # also model host functions without launches (translators)
    language: str                            # cuda for .cu/.cuh/.h/.cpp when asked
    recover: bool                            # lint: declare unknown names and retry on syntax errors (recovery.py)
    # translators: when the light stubs leave clang errors, parse again with the system headers and keep the
    # parse with fewer errors (real declarations, unlike recovery's placeholders: safe to translate from)
    header_fallback: bool

    def __init__(self, include_dirs=None, defines=None, extra_args=None, compile_commands=None, header_mode="light",
                 full_model=False, language="cuda", recover=False, header_fallback=True):
        self.include_dirs = [] if include_dirs is None else include_dirs
        self.defines = [] if defines is None else defines
        self.extra_args = [] if extra_args is None else extra_args
        self.compile_commands = compile_commands
        self.header_mode = header_mode
        self.full_model = full_model
        self.language = language
        self.recover = recover
        self.header_fallback = header_fallback


class ClangError(Record):
    """One clang error or fatal diagnostic, with its offset in the main file when it lies there."""
    message: str
    offset: int | None
    line: int
    column: int
    category: str
    severity: int          # 3 error, 4 fatal
    file: str | None

    def __init__(self, message, offset, line, column, category, severity, file):
        self.message = message
        self.offset = offset
        self.line = line
        self.column = column
        self.category = category
        self.severity = severity
        self.file = file


# nvcc-only flags that clang rejects; dropped when reading compile_commands.json
_NVCC_WITH_ARG = {"-gencode", "--generate-code", "-arch", "--gpu-architecture", "-code", "--gpu-code",
                  "-ccbin", "--compiler-bindir", "-Xcompiler", "-Xptxas", "-Xlinker", "-Xcudafe", "--maxrregcount",
                  "-maxrregcount", "-rdc", "--relocatable-device-code", "-o", "--output-file", "-x", "-MF", "-MT"}
_NVCC_FLAGS = {"--use_fast_math", "-use_fast_math", "--expt-relaxed-constexpr", "--expt-extended-lambda",
               "--extended-lambda", "-lineinfo", "--ptxas-options", "-G", "-c", "--compile", "-dc", "-MD", "-MMD",
               "--keep", "-Wno-deprecated-gpu-targets", "--resource-usage"}


def _clean_flags(args: list[str]) -> list[str]:
    """Keep -I/-D/-U/-std/-include flags from a compile command; drop nvcc-specific ones."""
    out, skip = [], False
    for a in args:
        if skip:
            skip = False
            continue
        if a in _NVCC_WITH_ARG:
            skip = True
            continue
        if a in _NVCC_FLAGS or a.startswith(("-gencode=", "-arch=", "--gpu-architecture=", "-code=", "-Xcompiler=",
                                             "--ptxas-options=", "-maxrregcount=", "--maxrregcount=", "-ccbin=",
                                             "--std=", "-O", "-W", "-f", "-m", "-g")):
            continue
        if a.startswith(("-I", "-D", "-U", "-isystem", "-std=", "-include")):
            out.append(a)
    return out


def flags_from_compile_commands(path: str, source: str) -> list[str]:
    import json
    import shlex
    p = os.path.join(path, "compile_commands.json") if os.path.isdir(path) else path
    try:
        with open(p, encoding="utf-8") as fh:
            entries = json.loads(fh.read())
    except (OSError, ValueError):
        return []
    target = os.path.realpath(source)
    for e in entries:
        f = os.path.realpath(os.path.join(e.get("directory", "."), e.get("file", "")))
        if f != target:
            continue
        args = e.get("arguments") or shlex.split(e.get("command", ""))
        d = e.get("directory", ".")
        cleaned = []
        for a in _clean_flags(args[1:]):
            if a.startswith("-I") and len(a) > 2 and not os.path.isabs(a[2:]):
                a = "-I" + os.path.join(d, a[2:])
            cleaned.append(a)
        return cleaned
    return []


def clang_args(path: str, opts: ParseOptions, pch: bool = True) -> list[str]:
    args = _base_args(path, opts)
    shim = _shim_pch(args, opts.header_mode == "full" and opts.recover) if pch else None
    return args + (["-include-pch", shim] if shim else ["-include", str(SHIM_HEADER)])


# With the system headers (lint's recovery fallback), the C++ headers real code includes most are precompiled
# with the shim: a full parse took ~0.55 s, mostly re-reading libstdc++, and ~0.1 s with them in the PCH. A file
# that forgot one of these includes parses too, which is what its build (through other headers) did anyway.
_FULL_STD = ("cstdio", "cstdlib", "cstring", "cmath", "cassert", "climits", "cfloat", "cstdint", "vector",
             "algorithm", "iostream", "string", "chrono", "random", "numeric", "memory", "utility", "functional",
             "map", "iomanip", "fstream", "sstream", "limits", "type_traits")


_PCH_PATHS: dict[tuple, str | None] = {}     # flag set -> PCH path (or None), once per process
_SHIM_STAMP: bytes | None = None


def _shim_stamp() -> bytes:
    """Contents of the shim header plus size and mtime of it and of every stub header: the PCH records the
    headers it was built from and clang refuses it (the whole parse fails) once one of them has a different
    mtime, e.g. after a reinstall with the same contents; a new stamp builds a new PCH instead."""
    global _SHIM_STAMP
    if _SHIM_STAMP is None:
        with open(SHIM_HEADER, "rb") as fh:
            parts = [fh.read()]
        files = [SHIM_HEADER] + sorted(os.path.join(d, n) for d, _, names in os.walk(STUB_INCLUDE) for n in names)
        for f in files:
            try:
                st = os.stat(f)
                parts.append(f"{f}:{st.st_size}:{st.st_mtime_ns}".encode())
            except OSError:
                parts.append(str(f).encode())
        _SHIM_STAMP = b"\0".join(parts)
    return _SHIM_STAMP


def _shim_pch(args: list[str], std: bool = False) -> str | None:
    """The shim precompiled once per flag set (parse time 6 ms -> 2.5 ms a file, and its declarations are not
    walked again); with `std`, the C++ headers of _FULL_STD too. Cached in the user's cache directory; any
    failure falls back to a plain -include."""
    key_args = (std,) + tuple(args)
    if key_args in _PCH_PATHS:
        return _PCH_PATHS[key_args]
    path = _make_shim_pch(args, std)
    _PCH_PATHS[key_args] = path
    return path


def _make_shim_pch(args: list[str], std: bool = False) -> str | None:
    from porter.source import sha256
    key = sha256(_shim_stamp() + "\0".join(args).encode() + " ".join(_FULL_STD if std else ()).encode() +
                 str(_cindex().conf.lib._name if hasattr(_cindex().conf.lib, "_name") else "").encode())
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    d = os.path.join(base, "cuport", "pch")
    path = os.path.join(d, f"{'full' if std else 'shim'}-{key.hexdigest()[:20]}.pch")
    if os.path.exists(path):
        return path
    try:
        os.makedirs(d, exist_ok=True)
        ci = _cindex()
        src = str(SHIM_HEADER)
        if std:
            src = path[:-4] + ".h"
            with open(src, "w", encoding="utf-8") as fh:
                fh.write(f'#include "{SHIM_HEADER}"\n' + "".join(f"#include <{h}>\n" for h in _FULL_STD))
        tu = index().parse(src, args=args, options=ci.TranslationUnit.PARSE_INCOMPLETE)
        # the shim's C declarations differ from glibc's in details (clang's semantic errors, which every parse
        # with the system headers has anyway); a syntax or fatal error means a header that did not parse
        if any(diag.severity >= 3 and (not std or diag.severity >= 4 or diag.category_name == "Parse Issue")
               for diag in tu.diagnostics):
            return None
        tmp = f"{path}.{os.getpid()}.tmp"
        tu.save(tmp)
        os.replace(tmp, path)
        return path
    except Exception:
        return None


def _gcc_include_dirs() -> list[str]:
    import glob
    found = sorted(glob.glob("/usr/lib/gcc/*/*/include"), key=lambda d: [int(x) if x.isdigit() else 0
                                                                         for x in d.split("/")[-2].split(".")])
    return found[-1:]


def _base_args(path: str, opts: ParseOptions) -> list[str]:
    # no error limit: past clang's default of 20 (or any limit) later errors are not reported, and a kernel whose
    # AST lost operands there would look clean to the translators
    args = ["-x", "cuda", "--cuda-gpu-arch=sm_80", "-nocudainc", "-nocudalib", "--cuda-path=/nonexistent-cuda",
            "-std=c++17", "-Wno-unknown-cuda-version", "-Wno-everything", "-ferror-limit=0"]
    if opts.header_mode == "light":
        # no system headers, so the driver need not look for a GCC installation (it stats dozens of directories
        # on every parse: about 0.2 ms of the 2 ms a small file takes)
        args += ["-nostdinc", "-nostdinc++", "--gcc-toolchain=/nonexistent-gcc", "-isystem", str(STUB_INCLUDE),
                 "-isystem", os.path.join(STUB_INCLUDE, "cuda_only")]
    else:
        # the libclang wheel has no clang resource headers (stddef.h, stdarg.h...): GCC's are the closest
        args += ["-isystem", os.path.join(STUB_INCLUDE, "cuda_only")]
        args += [a for d in _gcc_include_dirs() for a in ("-isystem", d)]
    if opts.compile_commands:
        args += flags_from_compile_commands(opts.compile_commands, path)
    args += [f"-I{d}" for d in opts.include_dirs]
    args += [f"-D{d}" for d in opts.defines]
    args += list(opts.extra_args)
    return args


def parse(path: str, data: bytes, opts: ParseOptions | None = None):
    """Parse `data` as the contents of `path`. Returns (tu, errors). Never raises for bad source."""
    opts = opts or ParseOptions()
    tu, errors = _parse_once(path, data, opts)
    if opts.recover and errors and _recovery().needed(errors):     # no error: recovery is not even imported
        tu, errors = _recover(path, data, opts, tu, errors)
    elif errors and not opts.recover and opts.header_fallback and opts.header_mode == "light" \
            and _gcc_include_dirs():
        full = ParseOptions(**{**opts.__dict__, "header_mode": "full"})
        tu2, errors2 = _parse_once(path, data, full)
        # kept only when it helps and the system headers themselves parsed (a clash between them and the CUDA
        # stubs is an error no declaration of the file owns: the whole file would be refused)
        if len(errors2) < len(errors) and not any(_in_system_header(e) for e in errors2):
            name = os.path.abspath(path)
            if name not in _NOTED:
                import sys
                _NOTED.add(name)
                print(f"cuport: note: {path}: parsed with the system headers (the light stubs lack some of its "
                      f"declarations: {len(errors)} clang errors with them, {len(errors2)} without)", file=sys.stderr)
            return tu2, errors2
    return tu, errors


def _in_system_header(e) -> bool:
    f = e.file or ""
    return f.startswith(("/usr/", "/lib/")) or f.startswith(str(STUB_INCLUDE))


def _recovery():
    from porter.frontend import recovery
    return recovery


_NOTED: set = set()


def _recover(path: str, data: bytes, opts: ParseOptions, tu, errors):
    """Syntax errors: declare the unknown names clang reported as placeholders and parse again (up to three
    rounds: each parse gets further and meets new names), then, in light mode, the same with the system headers;
    keep the parse with the fewest syntax errors and say on stderr (once per file) that findings may be
    incomplete."""
    import sys
    rec = _recovery()
    name = os.path.abspath(path)
    texts = {name: data.decode("utf-8", "replace") if isinstance(data, bytes) else data}
    best = (rec.syntax_count(errors), tu, errors, None, opts.header_mode)
    modes = [opts.header_mode] + (["full"] if opts.header_mode == "light" and _gcc_include_dirs() else [])
    for mode in modes:
        mopts = opts if mode == opts.header_mode else ParseOptions(**{**opts.__dict__, "header_mode": mode})
        u = rec.Unknowns()
        cur_tu, cur_errors = (tu, errors) if mode == opts.header_mode else _parse_once(path, data, mopts)
        if rec.syntax_count(cur_errors) < best[0]:
            best = (rec.syntax_count(cur_errors), cur_tu, cur_errors, None, mode)
        for _round in range(3):
            _read_error_files(cur_errors, texts)
            before = u.names()
            found = rec.find_unknowns(cur_errors, texts, name)
            _merge(u, found)
            if not u or u.names() == before:
                break
            cur_tu, cur_errors = _parse_once(path, data, mopts, rec.prelude(u))
            if any(e.file == rec.PRELUDE_NAME for e in cur_errors):
                break
            n = rec.syntax_count(cur_errors)
            if n < best[0]:
                best = (n, cur_tu, cur_errors, u.names(), mode)
            if n == 0:
                break
        if best[0] == 0:
            break
    _, tu, errors, names, mode = best
    if (names or mode != opts.header_mode) and name not in _NOTED:
        _NOTED.add(name)
        headers = rec.missing_headers(errors)
        parts = []
        if headers:
            parts.append(f"{', '.join(headers[:4])}{' ...' if len(headers) > 4 else ''} not found")
        if names:
            parts.append(f"{len(names)} unknown name{'s' if len(names) != 1 else ''} parsed as placeholders "
                         f"({', '.join(names[:4])}{' ...' if len(names) > 4 else ''})")
        if mode != opts.header_mode:
            parts.append("parsed with the system headers (the light stubs lack some of its declarations)")
        print(f"cuport: note: {path}: {'; '.join(parts)}: findings in code that uses them may be incomplete "
              f"(-I DIR, --define NAME=VALUE or -p compile_commands.json supply them)", file=sys.stderr)
    return tu, errors


def _merge(u, found):
    def walk(node, prefix):
        for n, (k, sub) in node.items():
            if k == "ns":
                u.add(prefix + [n], "ns")
                walk(sub, prefix + [n])
            else:
                u.add(prefix + [n], k)
    walk(found.tree, [])


def _read_error_files(errors, texts: dict) -> None:
    for e in errors:
        if e.file and e.file not in texts and not e.file.startswith("/__cuport"):
            try:
                with open(e.file, "rb") as fh:
                    texts[e.file] = fh.read().decode("utf-8", "replace")
            except OSError:
                texts[e.file] = ""


def _parse_once(path: str, data: bytes, opts: ParseOptions, prelude: str | None = None):
    ci = _cindex()
    flags = (ci.TranslationUnit.PARSE_DETAILED_PROCESSING_RECORD |
             ci.TranslationUnit.PARSE_INCOMPLETE |
             getattr(ci.TranslationUnit, "PARSE_KEEP_GOING", 0x200))
    name = os.path.abspath(path)
    args = clang_args(path, opts)
    unsaved = [(name, data)]
    if prelude is not None:
        pname = _recovery().PRELUDE_NAME
        args = args + ["-include", pname]
        unsaved.append((pname, prelude))
    try:
        tu = index().parse(name, args=args, unsaved_files=unsaved, options=flags)
    except ci.TranslationUnitLoadError:
        if "-include-pch" not in args:
            raise
        # a precompiled shim clang will not load (written by another clang, or damaged): parse without it
        _PCH_PATHS[(opts.header_mode == "full" and opts.recover,) + tuple(_base_args(path, opts))] = None
        args = clang_args(path, opts) + (args[-2:] if prelude is not None else [])
        tu = index().parse(name, args=args, unsaved_files=unsaved, options=flags)
    errors = []
    for d in tu.diagnostics:
        if d.severity < 3:
            continue
        loc = d.location
        f = loc.file.name if loc.file else None
        errors.append(ClangError(d.spelling, loc.offset if f == name else None, loc.line, loc.column,
                                 d.category_name or "", d.severity, f))
    return tu, errors

"""Whole translation units for the kernel translators: the project headers an input includes (`#include
"kernel.h"`, `*.cuh`, `*.hpp` found from the including file's directory; never `<system>` headers or
headers found only through -I) are
inlined into the text the translators model, so kernels, device functions, structs and `__constant__` data
defined there are translated with the file that includes them. The model of a file only holds what lies in
its main file; a kernel in a header used to be invisible (cuport exited 0 having written nothing).

Diagnostics found in the inlined text are mapped back to the header's own path and line (LineMap.remap)."""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

from porter.source import SourceFile

_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*"([^"\n]+)"[^\n]*$')
_ONCE = re.compile(r"^[ \t]*#[ \t]*pragma[ \t]+once\b")
MAX_DEPTH = 16
MAX_BYTES = 4 * 1024 * 1024          # a whole unit larger than this is not inlined (the file goes alone)


@dataclass
class LineMap:
    """origin[i] = (path, row) of line i+1 of the combined text."""
    main: str
    origin: list = field(default_factory=list)
    headers: list = field(default_factory=list)      # inlined headers, in order

    def where(self, row: int):
        if 1 <= row <= len(self.origin):
            return self.origin[row - 1]
        return self.main, row

    def remap(self, diagnostics) -> None:
        """Point each diagnostic at the file and line its text came from (start/end stay offsets into the
        combined text only for diagnostics of the main file; a header's get offsets into the header)."""
        cache: dict = {}
        for d in diagnostics:
            d.message = _LINE_REF.sub(lambda m: self._line_ref(m, d), d.message)
            if getattr(d, "row", 0) <= 0:
                continue
            path, row = self.where(d.row)
            end_path, end_row = self.where(getattr(d, "end_row", d.row) or d.row)
            if path == self.main and end_path == self.main and row == d.row:
                continue
            d.filename = path
            d.row = row
            d.end_row = end_row if end_path == path else row
            if path != self.main:
                src = cache.get(path)
                if src is None:
                    src = cache[path] = _read(path)
                if src is not None:
                    try:
                        d.start = src.offset(d.row, d.column)
                        d.end = max(d.start, src.offset(d.end_row, d.end_column))
                    except (IndexError, AttributeError):
                        d.end = d.start
                d.fix = None             # a fix computed on the combined text does not apply to the header


    def _line_ref(self, m, d) -> str:
        """`line N` in a message names a line of the combined text: the line of the file it came from."""
        path, row = self.where(int(m.group(1)))
        if path == self.main:
            return f"line {row}"
        return f"{os.path.basename(path)} line {row}"


_LINE_REF = re.compile(r"\bline (\d+)\b")


def _read(path):
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return SourceFile(path, fh.read())
    except OSError:
        return None


def _resolve(name: str, here: str, include_dirs) -> str | None:
    for d in [here] + [str(x) for x in include_dirs or ()]:
        p = os.path.normpath(os.path.join(d, name))
        if os.path.isfile(p):
            return p
    return None


def _project_dir(path: str, root: str) -> bool:
    """A header of the project: under the input's directory tree or an -I directory given, not a system one."""
    real = os.path.realpath(path)
    return not real.startswith(("/usr/", "/opt/", "/lib/")) or real.startswith(root)


def inline_headers(source: SourceFile, include_dirs=(), through=()) -> tuple[SourceFile, LineMap | None]:
    """(the source with its project headers inlined, its LineMap) or (source, None) when it includes none.
    `through`: -I directories whose headers count as the project's too (the Makefile's sibling folders, for the
    CUDA original that NVRTC compiles without any include path: debayer's `INLINE` in ../debayer-sycl/util.h)."""
    if source.path in ("-", "") or not re.search(r'#[ \t]*include[ \t]*"', source.text):
        return source, None
    main = source.path
    root = os.path.dirname(os.path.realpath(main)) + os.sep
    lm = LineMap(main)
    out: list[str] = []
    done: set = set()
    size = [0]

    def expand(path: str, text: str, depth: int) -> None:
        here = os.path.dirname(path) or "."          # relative inputs keep relative header paths in messages
        lines = text.splitlines(keepends=True)
        for i, line in enumerate(lines):
            row = i + 1
            m = _INCLUDE.match(line.rstrip("\r\n"))
            if depth > 0 and _ONCE.match(line):
                line = "\n"                           # inlined once anyway
            elif m:
                # a quoted include found from the including file's own directory: the project's; one found
                # only through -I (a library's, a vendor's) stays an include
                hdr = _resolve(m.group(1), here, through)
                if hdr is not None and _project_dir(hdr, root) and depth < MAX_DEPTH:
                    key = os.path.realpath(hdr)
                    if key in done:
                        out.append(f"// cuport: {m.group(1)} inlined above\n")
                        lm.origin.append((path, row))
                        continue
                    try:
                        with open(hdr, encoding="utf-8", errors="replace") as fh:
                            htext = fh.read()
                    except OSError:
                        htext = None
                    if htext is not None and "\0" not in htext[:8192]:
                        size[0] += len(htext)
                        done.add(key)
                        lm.headers.append(hdr)
                        out.append(f"// cuport: begin {m.group(1)}\n")
                        lm.origin.append((path, row))
                        expand(hdr, htext, depth + 1)
                        out.append(f"// cuport: end {m.group(1)}\n")
                        lm.origin.append((path, row))
                        continue
                elif hdr is not None and depth > 0:
                    line = f'#include "{hdr}"\n'      # a header's own include, resolved from the header's place
            if not line.endswith("\n"):
                line += "\n"
            out.append(line)
            lm.origin.append((path, row))

    expand(main, source.text, 0)
    if not lm.headers or size[0] > MAX_BYTES:
        return source, None
    text = "".join(out)
    if not source.text.endswith("\n") and text.endswith("\n"):
        text = text[:-1]
    return SourceFile(main, text, encoding=source.encoding, note=source.note), lm


def included_inputs(files) -> dict:
    """{input: an input that includes it} for the inputs of a run that another input includes as a project
    header (directly or through other headers): they are translated inlined into that includer, not alone
    (a `.cuh` of kernels needs what its includer declares first, and its templates are instantiated there).
    Inputs no other input includes are the roots; what a root reaches is inside it (a cycle with no root
    stays as it is)."""
    if len(files) < 2:
        return {}
    real = {os.path.realpath(f): f for f in files}
    edges: dict = {}

    def includes(path: str) -> list:
        if path not in edges:
            edges[path] = []
            root = os.path.dirname(path) + os.sep
            try:
                with open(path, encoding="utf-8", errors="replace") as fh:
                    text = fh.read()
            except OSError:
                return edges[path]
            for line in text.splitlines():
                m = _INCLUDE.match(line)
                hdr = _resolve(m.group(1), os.path.dirname(path), ()) if m else None
                if hdr is not None and _project_dir(hdr, root):
                    edges[path].append(os.path.realpath(hdr))
        return edges[path]

    reached: dict = {}
    for r in real:
        seen, stack = {r}, [r]
        while stack:
            for h in includes(stack.pop()):
                if h not in seen and len(seen) < 4096:
                    seen.add(h)
                    stack.append(h)
                    if h in real:
                        reached.setdefault(h, set()).add(r)
    roots = [r for r in real if r not in reached]
    out = {}
    for h, by in reached.items():
        ok = [r for r in roots if r in by]
        if ok:
            out[real[h]] = real[sorted(ok)[0]]
    return out


def kernel_names(text: str) -> set:
    """The names of the `__global__` functions a CUDA text defines or declares (a light scan)."""
    text = re.sub(r"/\*.*?\*/|//[^\n]*", " ", text, flags=re.S)
    out = set()
    for m in re.finditer(r"\b__global__\b", text):
        head = re.split(r"[{;]", text[m.end():m.end() + 2000], maxsplit=1)[0]
        head = re.sub(r"__launch_bounds__\s*\([^()]*\)", " ", head)
        n = re.match(r"[^(]*?(\w+)\s*\(", head)
        if n:
            out.add(n.group(1))
    return out


def not_seen(inside: dict, results) -> list:
    """The inputs translated inside an includer (included_inputs) with a kernel no result of the run has
    (translated, refused or never instantiated): the includer did not see it as compiled."""
    done = set()
    for r in results:
        done |= {str(k).split("<")[0] for k in list(r.shaders) + list(r.manifests) + list(r.failed_kernels)}
    out = []
    for f in inside:
        try:
            with open(f, encoding="utf-8", errors="replace") as fh:
                names = kernel_names(fh.read())
        except OSError:
            continue
        if names - done:
            out.append(f)
    return out


def other_inputs(path: str, program_files, linemap) -> list:
    """The texts of the run's other inputs (not this file, not a header inlined into it): a template kernel
    defined here may be launched there (a multi-file program)."""
    mine = {os.path.realpath(path)} | {os.path.realpath(h) for h in (linemap.headers if linemap else ())}
    out = []
    for f in program_files or ():
        if os.path.realpath(f) in mine:
            continue
        try:
            if os.path.getsize(f) > MAX_BYTES:
                continue
            with open(f, encoding="utf-8", errors="replace") as fh:
                out.append(fh.read())
        except OSError:
            continue
    return out


def launched_elsewhere(model, fsrc, result, only: str | None = None) -> list:
    """A diagnostic for each kernel launched in this file whose definition is neither in it nor in the
    project headers it includes (another input of the program defines it, or nobody does): a launched
    kernel left out is never silent."""
    from porter.lint.registry import diagnostic
    defined = {f.name for f in model.kernels if f.body is not None}
    out, seen = [], set()
    result.extra.setdefault("launched_elsewhere", [])
    for ls in model.launches:
        name = (ls.kernel or "").split("<")[0].split("::")[-1].strip()
        if not name or name in defined or name in seen or (only is not None and only.split("<")[0] != name):
            continue
        seen.add(name)
        result.extra["launched_elsewhere"].append(name)
        out.append(diagnostic(
            "CP907", f"kernel `{name}` is launched here but not defined in this file or the project headers it "
            "includes: it is not translated with this file (translate the file that defines it)",
            fsrc.path, ls.node.start, ls.node.end, severity="warning", source=fsrc, kernel=name))
    return out


def left_out(results) -> list:
    """[(kernel, file launching it)] for kernels launched in one input of a run and translated by none: the
    run must not exit 0 with them (multi-file programs: a kernel in kernels.cu launched from main.cu is fine
    when kernels.cu is an input too)."""
    done = set()
    for r in results:
        done |= {str(k).split("<")[0] for k in list(r.shaders) + list(r.manifests)}
        done |= {str(k).split("<")[0] for k in r.failed_kernels}     # refused there, with its own diagnostic
    out = []
    for r in results:
        for name in r.extra.get("launched_elsewhere", ()):
            if name not in done:
                out.append((name, r.path))
                done.add(name)
    return out

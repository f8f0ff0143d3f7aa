"""The files a kernel is derived through (derive.py): a file with its project headers inlined, as the
translators read it (translate/kernel/units.py), and the sibling file that launches a kernel whose own
file does not."""
from __future__ import annotations

import re
from pathlib import Path


def program_flags(path: str) -> tuple[list, list]:
    """(include dirs, defines) of the program's Makefile (frontend/makeflags.py), as `cuport translate` reads
    them: bmf's main.cu includes its kernels under the Makefile's `-DUSE_GPU`."""
    from porter.frontend.makeflags import find_makefile, read_makefile
    mk = find_makefile(path)
    if not mk:
        return [], []
    flags = read_makefile(mk)
    return list(flags.include_dirs), list(flags.defines)


def _unit_model(path: str):
    """(model, LineMap or None) of a file with the project headers it includes inlined, as the translators read
    it (translate/kernel/units.py): kernels defined in `kernel.h` / `*.cuh` derive with the file that
    includes them (26 valid kernels of the HeCBench samples live in headers)."""
    from porter.frontend.build import build_model
    from porter.frontend.parse import ParseOptions
    from porter.source import read_source
    from porter.translate.kernel.units import inline_headers
    dirs, defines = program_flags(path)
    src, lines = inline_headers(read_source(path), dirs)
    return build_model(src, ParseOptions(full_model=True, include_dirs=dirs, defines=defines)), lines


def _remapped_line(lines, row: int) -> int:
    return lines.where(row)[1] if lines is not None else row


def _remapped(d, lines):
    """Lines of the combined text (a file with its headers inlined) as lines of the file they came from: the
    kernel's own line (with `defined_in` set for a kernel of a header), and `line N` in notes and problems."""
    if lines is None:
        return d
    where, row = lines.where(d.line)
    d.line = row
    if where != lines.main:
        d.defined_in = where
    fix = re.compile(r"\bline (\d+)\b")
    d.notes = [fix.sub(lambda m: lines._line_ref(m, None), n) for n in d.notes]
    for p in d.problems:
        p.message = fix.sub(lambda m: lines._line_ref(m, None), p.message)
    return d


_HOST_SUFFIXES = (".cu", ".cpp", ".cc", ".cxx", ".h", ".hpp", ".cuh")


class _Hosts:
    """The other source files beside a kernel's file, parsed when a kernel launched in none of its own file's
    code is looked for (HeCBench's kernel.cu launched from main.cu; a header of host wrappers)."""

    def __init__(self, path: str):
        self.path = Path(path).resolve()
        self.models: dict = {}
        self.lines: dict = {}

    def _launcher(self, name: str) -> Path | None:
        """The one sibling file whose text launches kernel `name`, or None (none, or several)."""
        pat = re.compile(r"(?<![\w.])" + re.escape(name) + r"\s*(?:<[^;{}]*?>)?\s*<<<")
        files = []
        for f in sorted(self.path.parent.iterdir()):
            if f == self.path or f.suffix not in _HOST_SUFFIXES or not f.is_file():
                continue
            try:
                if pat.search(f.read_text(errors="replace")):
                    files.append(f)
            except OSError:
                continue
        return files[0] if len(files) == 1 else None

    def launching(self, name: str):
        """The model of the one sibling file with a launch of kernel `name`, or None (none, or several)."""
        from porter.analysis.launch import site_kernel
        f = self._launcher(name)
        if f is None:
            return None
        model = self._model(f)
        if model is None or not any(site_kernel(s) == name and s.block is not None for s in model.launches):
            return None
        return model

    def calls(self, name: str, nargs: int, model) -> list:
        """The calls of host function `name` with `nargs` arguments in the one other file of the program that
        calls it (convolutionSeparable: conv.cu's wrapper `convolutionRows(...)` is called in main.cu, where its
        buffers are allocated); [] when none or several files do."""
        pat = re.compile(r"(?<![\w.>:])" + re.escape(name) + r"\s*(?:<[^;{}]*?>)?\s*\(")
        found = []
        for m in self._mentioning(pat, skip=str(Path(model.path).resolve())):
            calls = [c for c in m.of_kind("CALL_EXPR") if c.spelling == name and len(c.args()) == nargs and
                     (m.function_of(c) is None or m.function_of(c).name != name)]
            if calls:
                found.append(calls)
        return found[0] if len(found) == 1 else []

    def _mentioning(self, pat, skip: str | None = None):
        """The parsed models of the sibling files whose text matches `pat` (none that does not parse)."""
        for f in self._siblings():
            if str(f) == skip:
                continue
            try:
                if not pat.search(f.read_text(errors="replace")):
                    continue
            except OSError:
                continue
            m = self._model(f)
            if m is not None:
                yield m

    def defining(self, name: str) -> list:
        """The host functions `name` with a body in the one other file of the program that defines it ([] when
        none or several do): a helper declared in a header and defined beside (tridiagonal's shrUtils.cu)."""
        pat = re.compile(r"(?<![\w.])" + re.escape(name) + r"\s*\([^;{}]*\)\s*\{")
        found = []
        for m in self._mentioning(pat):
            fns = [fn for fn in m.functions if fn.name == name and fn.body is not None
                   and not fn.is_kernel]
            if fns:
                found.append(fns)
        return found[0] if len(found) == 1 else []

    def including(self, path: str):
        """The model of the one other file of the program that `#include`s `path`, or None."""
        pat = re.compile(r'^\s*#\s*include\s*"(?:[^"]*/)?' + re.escape(Path(path).name) + '"', re.M)
        files = []
        for f in self._siblings():
            try:
                if pat.search(f.read_text(errors="replace")):
                    files.append(f)
            except OSError:
                continue
        return self._model(files[0]) if len(files) == 1 else None

    def _siblings(self) -> list:
        return [f for f in sorted(self.path.parent.iterdir())
                if f != self.path and f.suffix in _HOST_SUFFIXES and f.is_file()]

    def unit(self, host, path: str, name: str):
        """(model, kernel, LineMap) of `name` in the host file with the project files it includes inlined (the
        translators' view: units.py), when the host includes `path`; None otherwise."""
        pat = r'^\s*#\s*include\s*"(?:[^"]*/)?' + re.escape(Path(path).name) + '"'
        top = host.path
        if re.search(pat, host.source.text, re.M) is None:
            top = self._includer(Path(path).name, Path(host.path).name)
            if top is None:
                return None
        key = ("unit", top)
        if key not in self.models:
            try:
                self.models[key], self.lines[key] = _unit_model(top)
            except Exception:            # the unit does not parse: the kernel is read from its own file
                self.models[key] = None
        m = self.models[key]
        fn = next((f for f in m.kernels if f.name == name and f.body is not None), None) if m else None
        return (m, fn, self.lines.get(key)) if fn is not None else None

    def through_includer(self, path: str, name: str):
        """(model, kernel, LineMap) of `name` read through the file that includes both its file and the one
        launching it, when that launching file does not parse alone (myocyte's master.cu launches `kernel`, which
        only work.cu, included by main.cu, declares before it); None otherwise."""
        from porter.analysis.launch import site_kernel
        f = self._launcher(name)
        top = self._includer(Path(path).name, f.name) if f is not None else None
        if top is None:
            return None
        key = ("unit", top)
        if key not in self.models:
            try:
                self.models[key], self.lines[key] = _unit_model(top)
            except Exception:            # the unit does not parse either
                self.models[key] = None
        m = self.models[key]
        fn = next((k for k in m.kernels if k.name == name and k.body is not None), None) if m else None
        if fn is None or not any(site_kernel(s) == name and s.block is not None for s in m.launches):
            return None
        return m, fn, self.lines.get(key), top

    def _includer(self, *names: str) -> str | None:
        """The one sibling file that includes every one of `names`, directly or through other siblings, and that
        no sibling includes (myocyte: main.cu includes work.cu, which includes kernel.cu and master.cu, the
        launching file; only main.cu has the typedefs both need); None when there is not exactly one."""
        inc = re.compile(r'^\s*#\s*include\s*"(?:[^"]*/)?([^"/]+)"', re.M)
        direct: dict[str, set] = {}
        for f in self.path.parent.iterdir():
            if f.suffix in _HOST_SUFFIXES and f.is_file():
                try:
                    direct[f.name] = set(inc.findall(f.read_text(errors="replace")))
                except OSError:
                    continue

        def closure(name: str) -> set:
            seen, todo = set(), [name]
            while todo:
                for d in direct.get(todo.pop(), ()):
                    if d not in seen:
                        seen.add(d)
                        todo.append(d)
            return seen
        reach = {f: closure(f) for f in direct}
        having = [f for f, r in reach.items() if all(n in r for n in names)]
        roots = [f for f in having if not any(f in reach[g] for g in having if g != f)]
        return str(self.path.parent / roots[0]) if len(roots) == 1 else None

    def _model(self, f: Path):
        if f not in self.models:
            from porter.frontend.build import build_model
            from porter.frontend.parse import ParseOptions
            from porter.source import read_source
            try:
                dirs, defines = program_flags(str(f))
                self.models[f] = build_model(read_source(str(f)), ParseOptions(full_model=True, include_dirs=dirs,
                                                                               defines=defines))
            except Exception:            # the other file does not parse: no launch from it
                self.models[f] = None
        return self.models[f]

    def release(self) -> None:
        for m in self.models.values():
            if m is not None:
                m.release()

"""The -I / -D flags a program's Makefile gives its compiler, read without running make (issue 15).

A program translated as a directory is compiled by its Makefile, and a header that needs `-I../other` or a
`-DUSE_GPU` the Makefile sets fails to parse without them (HeCBench's warpexchange includes `utils.h` from
`../blockAccess-cuda`; bmf includes its kernels under `#ifdef USE_GPU`). Make is never run (a `$(shell ...)`
would run the project's commands): simple assignments and `ifeq`/`ifneq`/`ifdef`/`ifndef` on them are
evaluated; a condition that cannot be decided takes neither branch, so its flags are never guessed."""
from __future__ import annotations

import os
import re
import shlex
from dataclasses import dataclass, field

NAMES = ("GNUmakefile", "makefile", "Makefile")
MAX_BYTES = 256 * 1024
_ASSIGN = re.compile(r"^(?:override\s+|export\s+)?([A-Za-z_][A-Za-z0-9_.]*)\s*(\?=|:=|::=|\+=|=)\s*(.*)$")
_REF = re.compile(r"\$[({]([A-Za-z_][A-Za-z0-9_.]*)[)}]")
_FLAG_VARS = re.compile(r"(^|_)(C|CXX|CPP|NVCC|CUDA|CU)?FLAGS$|^(INC|INCLUDES?|DEFINES?|DEFS)$")


@dataclass
class MakeFlags:
    path: str | None = None                          # the Makefile read
    include_dirs: list = field(default_factory=list)  # absolute, existing
    defines: list = field(default_factory=list)       # NAME or NAME=VALUE
    missing_dirs: list = field(default_factory=list)  # -I directories named but not present (as written)

    def note(self) -> str | None:
        if not self.path:
            return None
        parts = [f"-I{d}" for d in self.include_dirs] + [f"-D{d}" for d in self.defines]
        msg = f"{self.path}: using its {' '.join(parts)}" if parts else ""
        if self.missing_dirs:
            miss = ", ".join(f"-I{d}" for d in self.missing_dirs)
            msg += ("; " if msg else f"{self.path}: ") + f"{miss}: no such directory (the headers the program " \
                "finds there are missing)"
        return msg or None


def find_makefile(path: str) -> str | None:
    """The Makefile of an input: in the directory given, or (a file) in its directory or the one above."""
    d = path if os.path.isdir(path) else os.path.dirname(os.path.abspath(path))
    for cand in (d,) if os.path.isdir(path) else (d, os.path.dirname(d)):
        for n in NAMES:
            p = os.path.join(cand, n)
            if os.path.isfile(p):
                return p
    return None


def _lines(text: str):
    """Logical lines: continuations joined, comments dropped, recipe lines (a leading tab) skipped."""
    buf = ""
    for raw in text.splitlines():
        if not buf and raw.startswith("\t"):
            continue
        line = raw.split("#", 1)[0] if "#" in raw and "\\#" not in raw else raw
        if line.endswith("\\"):
            buf += line[:-1] + " "
            continue
        yield (buf + line).strip()
        buf = ""
    if buf:
        yield buf.strip()


class _Env(dict):
    """Variable values; `undecided` names what cannot be known here (set on an undecidable branch, or from
    $(shell ...)); with an `include` of another makefile any variable this one does not set is unknown too."""

    def __init__(self):
        super().__init__()
        self.undecided: set = set()
        self.includes = False

    def unknown(self, name: str) -> bool:
        return name in self.undecided or (self.includes and name not in self)


def _expand(value: str, env: _Env, depth: int = 0) -> str | None:
    """$(VAR) of known variables (an unset one is empty, as in make); None when a function ($(shell ...),
    $(wildcard ...)), an automatic variable or an unknown variable is used: not decidable here."""
    if depth > 8:
        return None
    if re.search(r"\$\([a-z]+\s", value) or re.search(r"\$[@<^*?%]", value):
        return None
    out = _REF.sub(lambda m: "\0" if env.unknown(m.group(1))
                   else (_expand(env.get(m.group(1), ""), env, depth + 1) or ""), value)
    return None if "\0" in out or "$" in out else out


def _condition(line: str, env: _Env) -> bool | None:
    m = re.match(r"^(ifn?eq)\s*\((.*)\)\s*$", line)
    if m:
        parts = m.group(2).split(",")
        if len(parts) != 2:
            return None                  # `ifeq "a" "b"`, a comma inside: not decided
        a, b = (_expand(p.strip(), env) for p in parts)
        if a is None or b is None:
            return None
        return (a.strip() == b.strip()) == (m.group(1) == "ifeq")
    m = re.match(r"^(ifn?def)\s+([A-Za-z_][A-Za-z0-9_.]*)\s*$", line)
    if m:
        if env.unknown(m.group(2)):
            return None
        return bool(env.get(m.group(2))) == (m.group(1) == "ifdef")
    return None


def read_makefile(path: str) -> MakeFlags:
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            text = fh.read(MAX_BYTES)
    except OSError:
        return MakeFlags()
    env = _Env()
    stack: list = []                 # per open conditional: [taken: True/False/None (undecided), any branch taken]
    in_define = False

    def live() -> bool:
        return all(c[0] is True for c in stack)

    for line in _lines(text):
        if not line:
            continue
        head = line.split(None, 1)[0]
        if in_define:
            in_define = head != "endef"
            continue
        if head == "define" or line.split()[:2] == ["override", "define"]:
            in_define = True             # a multi-line variable (recipes, canned sequences): not flags
            continue
        if head in ("include", "-include", "sinclude"):
            env.includes = True
            continue
        if head in ("ifeq", "ifneq", "ifdef", "ifndef") or re.match(r"^ifn?eq\(", line):
            c = _condition(line, env) if live() else False
            stack.append([c, c is True])
            continue
        if head == "else" and stack:
            c = stack.pop()
            rest = line[4:].strip()
            if not live():
                now = False
            elif c[0] is None:
                now = None                        # the other side of an undecided condition: undecided
            elif c[1]:
                now = False
            else:
                now = _condition(rest, env) if rest else True
            stack.append([now, c[1] or now is True])
            continue
        if head == "endif" and stack:
            stack.pop()
            continue
        m = _ASSIGN.match(line)
        if not m:
            continue
        name, op, value = m.groups()
        if not live():
            if any(c[0] is None for c in stack):
                env.undecided.add(name)           # set on a branch we cannot decide: its value is unknown
            continue
        if op == "?=" and name in env:
            continue
        if op in (":=", "::="):
            value = _expand(value, env)
            if value is None:
                env.undecided.add(name)
                env.pop(name, None)
                continue
        env[name] = (env.get(name, "") + " " + value).strip() if op == "+=" else value
    return _flags(path, env)


def _flags(path: str, env: dict) -> MakeFlags:
    here = os.path.dirname(os.path.abspath(path))
    res = MakeFlags(path=path)
    for name in env:
        if name == "LDFLAGS" or not _FLAG_VARS.search(name):
            continue
        value = _expand(env[name], env)
        if value is None:
            continue
        try:
            toks = shlex.split(value)
        except ValueError:
            continue
        i = 0
        while i < len(toks):
            t = toks[i]
            if t in ("-I", "-D") and i + 1 < len(toks):
                t, i = t + toks[i + 1], i + 1
            if t.startswith("-I") and len(t) > 2:
                d = os.path.normpath(os.path.join(here, t[2:]))
                if not os.path.isdir(d):
                    if not os.path.isabs(t[2:]) and t[2:] not in res.missing_dirs:   # a sibling program's
                        res.missing_dirs.append(t[2:])
                elif d not in res.include_dirs and d != here:
                    res.include_dirs.append(d)
            elif t.startswith("-D") and len(t) > 2 and re.match(r"[A-Za-z_]\w*(=|$)", t[2:]):
                if t[2:] not in res.defines:
                    res.defines.append(t[2:])
            i += 1
    return res


@dataclass
class RunLine:
    """The command a Makefile's `run:` target runs the program with: `args` (argv[1..]) and the line; or `why`
    there is none to read (no Makefile, no `run:` target, no `./program` command, make variables in the
    arguments)."""
    path: str | None = None
    line: str | None = None
    args: list | None = None
    why: str | None = None


_SHELL_END = {";", "&&", "||", "|", ">", ">>", "<", "2>", "2>&1", "&"}


def run_line(path: str, target: str = "run") -> RunLine:
    """The arguments the Makefile of `path` (a program directory or one of its files; find_makefile) runs the
    program with: the first recipe line of `target` that runs `./NAME` (`$(LAUNCHER) ./$(program) 1000000 1000
    11 1` gives ["1000000", "1000", "11", "1"]); make is never run. Arguments that name make variables are not
    guessed (why says so)."""
    mk = find_makefile(path)
    if mk is None:
        return RunLine(why="no Makefile")
    try:
        with open(mk, encoding="utf-8", errors="replace") as fh:
            text = fh.read(MAX_BYTES)
    except OSError as e:
        return RunLine(path=mk, why=f"cannot read it: {e.strerror or e}")
    head = re.compile(rf"^{re.escape(target)}\s*:(?!=)")
    lines = text.splitlines()
    for i, raw in enumerate(lines):
        if not head.match(raw):
            continue
        j = i + 1
        while j < len(lines) and (lines[j].startswith("\t") or not lines[j].strip()):
            cmd = lines[j].strip()
            j += 1
            while cmd.endswith("\\") and j < len(lines):
                cmd, j = cmd[:-1] + " " + lines[j].strip(), j + 1
            if not cmd or cmd.startswith("#"):
                continue
            try:
                toks = shlex.split(cmd, comments=True)
            except ValueError:
                continue
            at = next((k for k, t in enumerate(toks) if t.startswith("./")), None)
            if at is None:
                continue
            args = []
            for t in toks[at + 1:]:
                if t in _SHELL_END or t.startswith((">", "<", "2>")):
                    break
                args.append(t)
            if any("$" in a for a in args):
                return RunLine(path=mk, line=cmd, why=f"its `{target}:` arguments name make variables: not read")
            return RunLine(path=mk, line=cmd, args=args)
        return RunLine(path=mk, why=f"its `{target}:` target runs no `./PROGRAM` command")
    return RunLine(path=mk, why=f"no `{target}:` target")

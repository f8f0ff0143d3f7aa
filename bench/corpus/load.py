"""The real-code corpus (sources.txt) read from local checkouts, which stay outside the repository.

    git clone https://github.com/NVIDIA/cuda-samples /src/cuda-samples && git -C /src/cuda-samples checkout REV
    python bench/corpus/load.py --root cuda-samples=/src/cuda-samples files cuda-samples
    python bench/corpus/load.py --root hecbench=/src/HeCBench flags hecbench src/adv-cuda/main.cu

A checkout at another revision still loads (with a warning on stderr): labels are keyed by path and line, so
numbers from it are not comparable. `flags` reads the -I/-D a file's Makefile gives it (top level of the
Makefile only, not inside ifeq blocks): what a compile_commands.json would supply."""
from __future__ import annotations

import argparse
import glob
import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCES = os.path.join(HERE, "sources.txt")


@dataclass
class Corpus:
    name: str
    url: str
    revision: str
    globs: list[str]


def corpora(path: str = SOURCES) -> dict[str, Corpus]:
    out = {}
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            line = line.split("#", 1)[0].strip()
            if line:
                name, url, rev, *globs = line.split()
                out[name] = Corpus(name, url, rev, globs)
    return out


def check_revision(root: str, corpus: Corpus) -> None:
    try:
        head = subprocess.run(["git", "-C", root, "rev-parse", "HEAD"], capture_output=True, text=True,
                              timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        head = ""
    if head and head != corpus.revision:
        print(f"load.py: warning: {root} is at {head[:12]}, sources.txt names {corpus.revision[:12]}",
              file=sys.stderr)


def files(root: str, corpus: Corpus) -> list[str]:
    """Paths relative to the checkout's root, sorted."""
    found = set()
    for g in corpus.globs:
        for p in glob.glob(os.path.join(root, g), recursive=True):
            if os.path.isfile(p):
                found.add(os.path.relpath(p, root))
    return sorted(found)


_FLAG = re.compile(r"(?<!\S)(-D[A-Za-z_]\w*(?:=[^\s$'\"]*)?|-I\s*[^\s$]+)")


def makefile_flags(makefile: str) -> list[str]:
    """-D and -I flags written at the top level of a Makefile (not under ifeq/ifdef), -I made absolute."""
    out, depth = [], 0
    try:
        text = open(makefile, encoding="utf-8", errors="replace").read().replace("\\\n", " ")
    except OSError:
        return out
    base = os.path.dirname(os.path.abspath(makefile))
    for line in text.split("\n"):
        s = line.strip()
        if re.match(r"(ifeq|ifneq|ifdef|ifndef)\b", s):
            depth += 1
            continue
        if s.startswith("endif"):
            depth = max(0, depth - 1)
            continue
        if depth or s.startswith("#"):
            continue
        for m in _FLAG.finditer(s):
            f = m.group(1)
            if f.startswith("-I"):
                d = f[2:].strip()
                if "<" in d or not d:
                    continue
                f = "-I" + os.path.normpath(os.path.join(base, d))
            if f not in out:
                out.append(f)
    return out


def flags_for(root: str, rel: str) -> list[str]:
    """The flags of the nearest Makefile at or above the file's directory (inside the checkout)."""
    d = os.path.dirname(os.path.join(root, rel))
    root = os.path.abspath(root)
    while os.path.abspath(d).startswith(root):
        mk = os.path.join(d, "Makefile")
        if os.path.isfile(mk):
            return makefile_flags(mk)
        if os.path.abspath(d) == root:
            break
        d = os.path.dirname(d)
    return []


def parse_roots(items: list[str]) -> dict[str, str]:
    roots = {}
    for item in items or []:
        name, _, path = item.partition("=")
        roots[name] = path
    return roots


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--root", action="append", default=[], help="NAME=DIR: the local checkout of a corpus")
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("list", help="the corpora of sources.txt")
    f = sub.add_parser("files", help="a corpus's files, absolute")
    f.add_argument("corpus")
    g = sub.add_parser("flags", help="a file's Makefile flags")
    g.add_argument("corpus")
    g.add_argument("file")
    args = ap.parse_args(argv)
    cs, roots = corpora(), parse_roots(args.root)
    if args.cmd == "list":
        for c in cs.values():
            print(c.name, c.url, c.revision, " ".join(c.globs))
        return 0
    if args.corpus not in cs or args.corpus not in roots:
        print(f"load.py: error: corpus {args.corpus!r} needs --root {args.corpus}=DIR", file=sys.stderr)
        return 2
    root = roots[args.corpus]
    check_revision(root, cs[args.corpus])
    if args.cmd == "files":
        for rel in files(root, cs[args.corpus]):
            print(os.path.join(root, rel))
    else:
        print(shlex.join(flags_for(root, args.file)))
    return 0


if __name__ == "__main__":
    sys.exit(main())

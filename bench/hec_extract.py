"""Extract HeCBench programs for bench/breadth.py, with the sibling directories their Makefiles' -I flags name.

    .venv/bin/python bench/hec_extract.py GIT_DIR DEST LIST [LIST ...] [--rev REV]

GIT_DIR is a HeCBench git directory (a bare mirror works), DEST the folder that becomes breadth.py's
HECBENCH_PATH (programs land in DEST/src/<prog>), LIST a breadth list (bench/breadth_programs*.txt: one
program per line, `#` comments). Each program is extracted with `git archive REV src/<prog> | tar -x`, then
its Makefile is read with porter/frontend/makeflags.py (the parser `cuport translate` uses) and every -I
directory it names that is missing and lies inside src/ (`-I../debayer-sycl`) is extracted the same way.
One directory per `git archive`: a mirror with some objects missing fails only for the directories that
need them. Such a directory is then extracted file by file (`git archive REV PATH` per file whose blob is
present), and the files left out are listed at the end (recursiveGaussian-cuda's StoneRGB.ppm in the stored
mirror of revision f27000a5); a directory of which nothing can be read is listed as failed (exit 1)."""
from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from porter.frontend import makeflags  # noqa: E402

# -I tokens of any line (also ones under a condition the parser leaves undecided): extracting one too many
# directory costs nothing, one too few leaves the program's headers missing
_ANY_I = re.compile(r"(?:^|\s)-I\s*([^\s$()'\"]+)")


def read_list(path: str) -> list:
    with open(path, encoding="utf-8") as fh:
        return [ln.strip() for ln in fh if ln.strip() and not ln.startswith("#")]


def archive(git_dir: str, rev: str, rel: str, dest: str) -> str | None:
    """`git archive REV REL | tar -x -C DEST`; None when done, else why not."""
    os.makedirs(dest, exist_ok=True)
    git = subprocess.Popen(["git", "--git-dir", git_dir, "archive", rev, rel], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE)
    tar = subprocess.run(["tar", "-x", "-C", dest], stdin=git.stdout, capture_output=True)
    git.stdout.close()
    err = git.stderr.read().decode(errors="replace").strip()
    git.wait()
    if git.returncode or tar.returncode:
        return (err or tar.stderr.decode(errors="replace").strip() or f"exit {git.returncode}").splitlines()[-1]
    return None


def archive_by_file(git_dir: str, rev: str, rel: str, dest: str) -> tuple:
    """The files of REL whose blobs the mirror holds, one `git archive` each: (extracted, {path: why})."""
    ls = subprocess.run(["git", "--git-dir", git_dir, "ls-tree", "-r", rev, rel], capture_output=True, text=True)
    done, missing = [], {}
    if ls.returncode:
        return done, {rel: (ls.stderr.strip() or "ls-tree failed").splitlines()[-1]}
    for line in ls.stdout.splitlines():
        meta, path = line.split("\t", 1)
        kind, sha = meta.split()[1:3]
        if kind != "blob":
            missing[path] = f"a {kind} (submodule?): not extracted"
            continue
        if subprocess.run(["git", "--git-dir", git_dir, "cat-file", "-e", sha], capture_output=True).returncode:
            missing[path] = f"object {sha} missing from the mirror"
            continue
        why = archive(git_dir, rev, path, dest)
        if why:
            missing[path] = why
        else:
            done.append(path)
    return done, missing


def sibling_dirs(prog_dir: str, src_dir: str) -> list:
    """The directories under src_dir that prog_dir's Makefile names with -I (relative to prog_dir), sorted."""
    mk = makeflags.find_makefile(prog_dir)
    if not mk:
        return []
    named = set(makeflags.read_makefile(mk).missing_dirs)
    try:
        with open(mk, encoding="utf-8", errors="replace") as fh:
            named |= set(_ANY_I.findall(fh.read(makeflags.MAX_BYTES)))
    except OSError:
        pass
    out = set()
    for d in named:
        if os.path.isabs(d):
            continue
        full = os.path.normpath(os.path.join(prog_dir, d))
        rel = os.path.relpath(full, src_dir)
        if rel != "." and not rel.startswith("..") and full != os.path.normpath(prog_dir):
            out.add(rel)
    return sorted(out)


def extract(git_dir: str, dest: str, programs: list, rev: str = "HEAD", log=print) -> dict:
    """{'extracted': [src/... dirs], 'siblings': {prog: [dirs]}, 'failed': {src/dir: why},
    'missing_files': {path: why}} (a directory with missing files is extracted without them)."""
    src_dir = os.path.join(dest, "src")
    res = {"extracted": [], "siblings": {}, "failed": {}, "missing_files": {}}

    def one(rel: str) -> bool:
        if os.path.isdir(os.path.join(dest, rel)):
            return True
        why = archive(git_dir, rev, rel, dest)
        if not why:
            res["extracted"].append(rel)
            return True
        shutil.rmtree(os.path.join(dest, rel), ignore_errors=True)     # what tar wrote before the error
        done, missing = archive_by_file(git_dir, rev, rel, dest)
        res["missing_files"].update(missing)
        for path, w in missing.items():
            log(f"MISSING {path}: {w}")
        if not done:
            res["failed"][rel] = why
            log(f"FAILED {rel}: {why}")
            return False
        res["extracted"].append(rel)
        return True

    for prog in programs:
        if not one(f"src/{prog}"):
            continue
        sibs = sibling_dirs(os.path.join(src_dir, prog), src_dir)
        if sibs:
            res["siblings"][prog] = sibs
            log(f"{prog}: -I " + " ".join(sibs))
        for s in sibs:
            one(f"src/{s}")
    return res


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("git_dir")
    ap.add_argument("dest")
    ap.add_argument("lists", nargs="+")
    ap.add_argument("--rev", default="HEAD", help="the HeCBench revision (default HEAD)")
    args = ap.parse_args(argv)
    programs = []
    for lst in args.lists:
        for p in read_list(lst):
            if p not in programs:
                programs.append(p)
    res = extract(args.git_dir, args.dest, programs, args.rev)
    print(f"{len(programs)} programs, {len(res['extracted'])} directories extracted now, "
          f"{sum(len(v) for v in res['siblings'].values())} -I siblings, {len(res['failed'])} failed, "
          f"{len(res['missing_files'])} files missing")
    for path, why in sorted(res["missing_files"].items()):
        print(f"  missing {path}: {why}")
    for rel, why in sorted(res["failed"].items()):
        print(f"  failed {rel}: {why}")
    return 1 if res["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())

"""Which files to lint: explicit paths, directories walked for CUDA sources, excludes."""
from __future__ import annotations

import os
from collections.abc import Callable

from porter.source import STDIN, special_kind

CUDA_SUFFIXES = (".cu", ".cuh")
ASKED_SUFFIXES = (".h", ".hpp", ".cpp", ".cc", ".cxx")


def _never(_path: str) -> bool:
    return False


def discover(paths: list[str], is_excluded: Callable[[str], bool] = _never, extensions=CUDA_SUFFIXES,
             force_exclude=False):
    """Yield (path, error). `is_excluded`: the settings' matcher (Settings.is_excluded: the same glob semantics
    as per-file-ignores, relative to the configuration's root). Explicit files are taken whatever their suffix (unless --force-exclude matches);
    directories are walked for `extensions`; "-" (standard input) is passed through. A missing path, a FIFO,
    a device or a socket yields an error line (opening a FIFO would block)."""
    seen = set()
    for p in paths:
        if p == STDIN:
            if p not in seen:
                seen.add(p)
                yield p, None
            continue
        if not os.path.lexists(p):
            yield p, f"{p}: No such file or directory"
            continue
        if not os.path.exists(p):
            yield p, f"{p}: broken symbolic link"
            continue
        if os.path.isdir(p):
            found = False
            for root, dirs, files in os.walk(p):
                dirs[:] = sorted(d for d in dirs if not is_excluded(os.path.join(root, d)))
                for f in sorted(files):
                    fp = os.path.join(root, f)
                    if f.endswith(tuple(extensions)) and not is_excluded(fp) and fp not in seen:
                        seen.add(fp)
                        kind = special_kind(fp)
                        if kind:
                            yield fp, f"{fp}: {kind}, not a source file, skipped"
                            continue
                        found = True
                        yield fp, None
            if not found:
                yield p, f"{p}: no CUDA sources ({', '.join(extensions)}) found"
            continue
        if force_exclude and is_excluded(p):
            continue
        if p not in seen:
            seen.add(p)
            kind = special_kind(p)
            yield p, (f"{p}: {kind}, not a source file, skipped" if kind else None)

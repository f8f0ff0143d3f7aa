"""Content-hash cache: .cuport_cache/<version>-<code fingerprint>/<settings-hash>/<sha256(path+content)>.json.

An entry also lists the files the parse read (project headers, with the sha256 of their content) and the quoted
includes it did not find: a hit needs every one of them unchanged (a header that now defines `WARP` as 32
changes the includer's findings; its content is not part of the key).

The cache directory is untrusted input (another version, a truncated write, a hand edit, a file copied from
elsewhere): an entry that is not exactly what `put` writes for this key is a miss, and the next `put`
rewrites it. `get` never raises."""
from __future__ import annotations

import functools
import json
import os
import stat

from porter import __version__
from porter.diagnostics import Applicability, Diagnostic, Edit, Fix

FORMAT = 3
_SEVERITIES = {"error", "warning", "info"}


@functools.lru_cache(maxsize=None)
def code_fingerprint() -> str:
    """The linter's own code and data tables (porter/, and the repository's rules/ beside it in a checkout): each
    pre-commit rev, editable install or patched install gets its own directory, so a cache written by other code
    under the same version number (pre-commit keeps one .cuport_cache per project across hook revs) is never a
    stale hit. Sizes and mtimes, not contents: a stat per file, about a millisecond."""
    import hashlib
    pkg = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    h = hashlib.sha256()
    checkout = os.path.isfile(os.path.join(os.path.dirname(pkg), "pyproject.toml"))  # a wheel has porter/rules
    for root in (pkg, os.path.join(os.path.dirname(pkg), "rules")) if checkout else (pkg,):
        for dirpath, dirnames, files in os.walk(root):
            dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
            for name in sorted(files):
                if name.endswith((".pyc", ".pyo")):
                    continue
                try:
                    st = os.stat(os.path.join(dirpath, name))
                except OSError:
                    continue
                rel = os.path.relpath(os.path.join(dirpath, name), root)
                h.update(f"{rel}\0{st.st_size}\0{st.st_mtime_ns}\n".encode("utf-8", "surrogateescape"))
    return h.hexdigest()[:16]


class Cache:
    def __init__(self, root: str, settings_hash: str):
        self.dir = os.path.join(root, f"{__version__}-{code_fingerprint()}", settings_hash)

    @staticmethod
    def key(path: str, data: bytes) -> str:
        # the path as given is part of the key: diagnostics carry it as their file name
        from porter.source import sha256
        h = sha256(os.path.abspath(path).encode("utf-8", "surrogateescape"))
        h.update(b"\0")
        h.update(path.encode("utf-8", "surrogateescape"))
        h.update(b"\0")
        h.update(data)
        return h.hexdigest()

    def get(self, key: str):
        """The cached diagnostics, or None (miss) when the entry is absent, unreadable or not ours."""
        entry = os.path.join(self.dir, key + ".json")
        try:
            if not stat.S_ISREG(os.stat(entry).st_mode):
                return None             # a FIFO here would block open()
            with open(entry, encoding="utf-8") as fh:
                raw = json.load(fh)
            if not isinstance(raw, dict) or raw.get("format") != FORMAT or raw.get("key") != key:
                return None
            diags = raw.get("diagnostics")
            if not isinstance(diags, list) or not _unchanged(raw.get("deps")):
                return None
            return [_load(d) for d in diags]
        except (OSError, ValueError, KeyError, TypeError, AttributeError, RecursionError):
            return None

    def put(self, key: str, diags, dependencies=()) -> None:
        tmp = os.path.join(self.dir, f".{key}.{os.getpid()}.tmp")
        try:
            deps = [[p, _digest(p)] for p in dependencies]
            os.makedirs(self.dir, exist_ok=True)
            with open(tmp, "w", encoding="utf-8") as fh:
                json.dump({"format": FORMAT, "key": key, "deps": deps,
                           "diagnostics": [_dump(d) for d in diags]}, fh)
            os.replace(tmp, os.path.join(self.dir, key + ".json"))
        except OSError:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            # a read-only tree just means no cache


def _digest(path: str) -> str | None:
    """sha256 of the file's content; None when it does not exist (or cannot be read)."""
    from porter.source import sha256
    try:
        with open(path, "rb") as fh:
            return sha256(fh.read()).hexdigest()
    except OSError:
        return None


def _unchanged(deps) -> bool:
    if not isinstance(deps, list):
        return False
    for d in deps:
        if not isinstance(d, list) or len(d) != 2 or not isinstance(d[0], str) or \
                (d[1] is not None and not isinstance(d[1], str)):
            return False
        if _digest(d[0]) != d[1]:
            return False
    return True


def _dump(d: Diagnostic) -> dict:
    fix = None
    if d.fix is not None:
        fix = {"a": d.fix.applicability.value, "m": d.fix.message,
               "e": [[e.start, e.end, e.content] for e in d.fix.edits]}
    return {"c": d.code, "m": d.message, "f": d.filename, "s": d.start, "e": d.end, "r": d.row, "col": d.column,
            "er": d.end_row, "ec": d.end_column, "sev": d.severity, "n": d.name, "u": d.url, "fix": fix}


def _int(v) -> int:
    if not isinstance(v, int) or isinstance(v, bool) or v < 0:
        raise TypeError("cache: expected a non-negative integer")
    return v


def _str(v) -> str:
    if not isinstance(v, str):
        raise TypeError("cache: expected a string")
    return v


def _load(r: dict) -> Diagnostic:
    """One diagnostic, every field checked (TypeError / KeyError / ValueError otherwise: a miss)."""
    fix = None
    if r["fix"] is not None:
        f = r["fix"]
        edits = []
        for e in f["e"]:
            if not isinstance(e, list) or len(e) != 3:
                raise TypeError("cache: bad edit")
            start, end = _int(e[0]), _int(e[1])
            if end < start:
                raise ValueError("cache: bad edit span")
            edits.append(Edit(start, end, _str(e[2])))
        fix = Fix(Applicability(_str(f["a"])), _str(f["m"]), tuple(edits))
    if _str(r["sev"]) not in _SEVERITIES:
        raise ValueError("cache: bad severity")
    d = Diagnostic(code=_str(r["c"]), message=_str(r["m"]), filename=_str(r["f"]), start=_int(r["s"]),
                   end=_int(r["e"]), row=_int(r["r"]), column=_int(r["col"]), end_row=_int(r["er"]),
                   end_column=_int(r["ec"]), fix=fix, severity=r["sev"], name=_str(r["n"]), url=_str(r["u"]))
    if d.end < d.start:
        raise ValueError("cache: bad span")
    return d
